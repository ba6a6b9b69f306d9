"""Vectorised MinHash signatures, bit-identical to ``datasketch.MinHash`` (scheme ``affine32``).

datasketch 2.x hashes every value with ``hashfunc`` (we feed 32-bit shingle hashes and use the
identity), pre-mixes it with the MurmurHash3 32-bit finalizer, then applies ``a_k * h + b_k``
modulo 2^32 for 128 odd ``a_k``: plain uint32 wrapping arithmetic, so there is no modular
reduction to make cheaper (the Mersenne-prime ``% p`` belongs to datasketch's ``legacy`` scheme,
which we do not use). Here the same arithmetic runs over blocks of whole documents (~64k values,
so the temporaries stay in L2): repeated values inside a document are dropped first (MinHash is a
function of the set; action streams repeat about half their shingles), then per permutation one
multiply, one add and one segmented minimum (``np.minimum.reduceat``) over the block. A 1-D pass per
permutation measured ~30x faster than the ``(n_shingles, 128)`` broadcast datasketch uses
(research/dedup.md §2.3, lesson 4). Buffers are reused across blocks and calls: fresh temporaries
cost more in page faults than the arithmetic on the test VM.
"""
from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from functools import lru_cache
from typing import Generic, Protocol, TypeVar

import numpy as np
import numpy.typing as npt

from pipeline.hashing import MURMUR32_C1, MURMUR32_C2

MAX_HASH = np.uint32(0xFFFFFFFF)  # datasketch's "empty" value (no shingle seen)

# Shingles per work chunk: uint32 temporaries of this size stay inside L2.
_CHUNK = 1 << 16


@lru_cache(maxsize=8)
def permutations(num_perm: int, seed: int) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.uint32]]:
    """The ``(a, b)`` parameters datasketch draws for ``MinHash(num_perm, seed)`` (affine32)."""
    gen = np.random.RandomState(seed)
    a = gen.randint(0, 1 << 31, num_perm, dtype=np.uint32) * np.uint32(2) + np.uint32(1)
    b = gen.randint(0, 1 << 32, num_perm, dtype=np.uint32)
    a.setflags(write=False)
    b.setflags(write=False)
    return a, b


class Workspace:
    """Reusable buffers for :func:`sign_block` (one per thread). Allocating fresh temporaries for
    every block cost more in page faults than the permutations themselves on the test VM."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.u32a = np.empty(cap, dtype=np.uint32)
        self.u32b = np.empty(cap, dtype=np.uint32)
        self.u32c = np.empty(cap, dtype=np.uint32)
        self.slot = np.empty(cap, dtype=np.intp)
        self.win = np.empty(cap, dtype=np.intp)
        self.k1 = np.empty(cap, dtype=bool)
        self.k2 = np.empty(cap, dtype=bool)
        self.idx = np.arange(cap, dtype=np.intp)
        self.table = np.empty(2 * cap + 2, dtype=np.intp)

    def fit(self, n: int) -> Workspace:
        return self if n <= self.cap else Workspace(max(n, 2 * self.cap))


class _Sized(Protocol):
    cap: int


_W = TypeVar("_W", bound=_Sized)


class Pool(Generic[_W]):
    """A few workspaces kept between calls (one per thread in flight), so repeated calls on
    small batches do not pay for fresh buffers and their page faults every time."""

    def __init__(self, make: Callable[[int], _W], keep: int = 2) -> None:
        self._make, self._keep = make, keep
        self._free: list[_W] = []
        self._lock = threading.Lock()

    @contextmanager
    def borrow(self, cap: int) -> Iterator[_W]:
        with self._lock:
            ws = next((w for w in self._free if w.cap >= cap), None)
            if ws is not None:
                self._free.remove(ws)
        ws = ws if ws is not None else self._make(cap)
        try:
            yield ws
        finally:
            with self._lock:
                self._free.append(ws)
                del self._free[: -self._keep]


_POOL: Pool[Workspace] = Pool(Workspace)


def _fmix32_into(h: npt.NDArray[np.uint32], out: npt.NDArray[np.uint32], tmp: npt.NDArray[np.uint32]) -> None:
    """:func:`fmix32` without temporaries."""
    np.right_shift(h, 16, out=tmp)
    np.bitwise_xor(h, tmp, out=out)
    np.multiply(out, np.uint32(MURMUR32_C1), out=out)
    np.right_shift(out, 13, out=tmp)
    np.bitwise_xor(out, tmp, out=out)
    np.multiply(out, np.uint32(MURMUR32_C2), out=out)
    np.right_shift(out, 16, out=tmp)
    np.bitwise_xor(out, tmp, out=out)


def _distinct_in_docs(x: npt.NDArray[np.uint32], lens: npt.NDArray[np.int64], ws: Workspace
                      ) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.int64]]:
    """Drop repeated values inside each document (``lens[i]`` values each, all > 0).

    MinHash is a function of the SET of values, so this changes no signature and roughly halves
    the permutation work on real action streams (commands repeat). Every document gets a private
    power-of-two hash table; each value writes its index into its slot and an element is
    dropped only when the slot's winner holds the same value (same slot implies same document).
    Slot collisions keep both values, so the result is a subset of the duplicates, never more.
    """
    n = x.shape[0]
    ws = ws.fit(n)
    cap = np.left_shift(1, np.ceil(np.log2(lens)).astype(np.int64))  # >= len, power of two
    base = np.cumsum(cap) - cap
    slot, win, idx = ws.slot[:n], ws.win[:n], ws.idx[:n]
    masked = ws.u32c[:n]
    np.bitwise_and(x, np.repeat((cap - 1).astype(np.uint32), lens), out=masked)
    np.add(masked, np.repeat(base, lens), out=slot)
    table = ws.table if ws.table.shape[0] >= int(cap.sum()) else np.empty(int(cap.sum()), dtype=np.intp)
    table[slot] = idx
    np.take(table, slot, out=win, mode="clip")
    keep, differs = ws.k1[:n], ws.k2[:n]
    np.equal(win, idx, out=keep)
    np.take(x, win, out=masked, mode="clip")
    np.not_equal(masked, x, out=differs)
    np.logical_or(keep, differs, out=keep)
    new_lens = np.add.reduceat(keep, np.cumsum(lens) - lens, dtype=np.int64)
    return np.compress(keep, x), new_lens  # compress: far faster than boolean indexing here


def sign_block(hashes: npt.NDArray[np.uint32], lens: npt.NDArray[np.int64], a: npt.NDArray[np.uint32],
               b: npt.NDArray[np.uint32], out: npt.NDArray[np.uint32], ws: Workspace | None = None) -> None:
    """Fill ``out`` (docs x perms) for consecutive documents of ``lens`` raw hashes each.

    Single-threaded kernel over one cache-sized block; empty documents get ``MAX_HASH``.
    Per permutation: one multiply, one add and one segmented minimum over the block's distinct
    values, each a single SIMD pass over memory that stays in L2.
    """
    out[lens == 0] = MAX_HASH
    ne = lens > 0
    if not ne.any():
        return
    n = hashes.shape[0]
    ws = (ws or Workspace(n)).fit(n)
    mixed = ws.u32a[:n]
    _fmix32_into(hashes, mixed, ws.u32b[:n])
    vals, dl = _distinct_in_docs(mixed, lens[ne], ws)
    starts = (np.cumsum(dl) - dl).astype(np.intp)
    buf = ws.u32b[: vals.shape[0]]
    col = np.empty(starts.shape[0], dtype=np.uint32)
    dst = out if ne.all() else np.empty((starts.shape[0], out.shape[1]), dtype=np.uint32)
    for k in range(a.shape[0]):
        np.multiply(vals, a[k], out=buf)
        np.add(buf, b[k], out=buf)
        np.minimum.reduceat(buf, starts, out=col)
        dst[:, k] = col
    if dst is not out:
        out[ne] = dst


def signatures(hashes: npt.ArrayLike, offsets: npt.ArrayLike, num_perm: int = 128, seed: int = 1,
               threads: int | None = None) -> npt.NDArray[np.uint32]:
    """MinHash signatures of many documents at once.

    ``hashes`` holds the 32-bit shingle hashes of all documents back to back; document ``i`` owns
    ``hashes[offsets[i]:offsets[i + 1]]`` (``len(offsets) == n_docs + 1``). Row ``i`` of the
    result equals ``datasketch.MinHash(num_perm, seed, hashfunc=int)`` after
    ``update_batch(hashes[offsets[i]:offsets[i+1]])``; an empty document stays all ``0xFFFFFFFF``.
    Blocks of whole documents (~``_CHUNK`` hashes) run on ``threads`` threads (numpy releases
    the GIL inside ufuncs, so blocks really run in parallel).
    """
    h = np.ascontiguousarray(hashes, dtype=np.uint32)
    off = np.asarray(offsets, dtype=np.int64)
    n_docs = off.shape[0] - 1
    if n_docs < 0 or off[0] != 0 or off[-1] != h.shape[0] or np.any(np.diff(off) < 0):
        raise ValueError("offsets must start at 0, end at len(hashes) and never decrease")
    a, b = permutations(num_perm, seed)
    out = np.empty((n_docs, num_perm), dtype=np.uint32)
    if n_docs == 0:
        return out
    cuts = np.unique(np.concatenate([[0], np.searchsorted(off, np.arange(0, h.shape[0], _CHUNK), side="right") - 1,
                                     [n_docs]]))
    blocks = [(int(cuts[i]), int(cuts[i + 1])) for i in range(cuts.shape[0] - 1) if cuts[i + 1] > cuts[i]]
    lens = np.diff(off)

    n_threads = max(1, min(threads if threads is not None else min(2, os.cpu_count() or 1), len(blocks)))

    def run(group: int) -> None:
        # One workspace per thread; blocks dealt round-robin (they are about equal in size).
        with _POOL.borrow(_CHUNK * 2) as ws:
            for d0, d1 in blocks[group::n_threads]:
                sign_block(h[off[d0]: off[d1]], lens[d0:d1], a, b, out[d0:d1], ws)

    if n_threads > 1:
        with ThreadPoolExecutor(n_threads) as pool:
            list(pool.map(run, range(n_threads)))
    else:
        run(0)
    return out


def is_empty(sig: npt.NDArray[np.uint32]) -> npt.NDArray[np.bool_]:
    """Rows that saw no shingle at all (never near-duplicates of each other)."""
    empty: npt.NDArray[np.bool_] = np.all(sig == MAX_HASH, axis=-1)
    return empty
