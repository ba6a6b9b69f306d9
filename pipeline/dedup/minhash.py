"""Vectorised MinHash signatures, bit-identical to ``datasketch.MinHash`` (scheme ``affine32``).

datasketch 2.x hashes every value with ``hashfunc`` (we feed 32-bit shingle hashes and use the
identity), pre-mixes it with the MurmurHash3 32-bit finalizer, then applies ``a_k * h + b_k``
modulo 2^32 for 128 odd ``a_k``. Here the same arithmetic runs over a flat array of the shingle
hashes of MANY documents at once: one multiply-add over the whole batch per permutation, then a
segmented minimum (``np.minimum.reduceat``). A 1-D pass per permutation keeps memory linear and
stays in cache, which measured ~30x faster than the ``(n_shingles, 128)`` broadcast datasketch
uses (research/dedup.md §2.3, lesson 4).
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache

import numpy as np
import numpy.typing as npt

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


def fmix32(h: npt.NDArray[np.uint32]) -> npt.NDArray[np.uint32]:
    """MurmurHash3 finalizer on uint32 (wrapping arithmetic is the intended mod 2^32)."""
    h = h ^ (h >> np.uint32(16))
    h = h * np.uint32(0x85EBCA6B)
    h = h ^ (h >> np.uint32(13))
    h = h * np.uint32(0xC2B2AE35)
    return h ^ (h >> np.uint32(16))


def _sign_chunk(mixed: npt.NDArray[np.uint32], starts: npt.NDArray[np.intp],
                a: npt.NDArray[np.uint32], b: npt.NDArray[np.uint32],
                out: npt.NDArray[np.uint32]) -> None:
    """Fill ``out`` (docs x perms) for documents whose non-empty segments begin at ``starts``."""
    buf = np.empty_like(mixed)
    for k in range(a.shape[0]):
        np.multiply(mixed, a[k], out=buf)
        np.add(buf, b[k], out=buf)
        out[:, k] = np.minimum.reduceat(buf, starts)


def signatures(hashes: npt.ArrayLike, offsets: npt.ArrayLike, num_perm: int = 128, seed: int = 1,
               threads: int | None = None) -> npt.NDArray[np.uint32]:
    """MinHash signatures of many documents at once.

    ``hashes`` holds the 32-bit shingle hashes of all documents back to back; document ``i`` owns
    ``hashes[offsets[i]:offsets[i + 1]]`` (``len(offsets) == n_docs + 1``). Row ``i`` of the
    result equals ``datasketch.MinHash(num_perm, seed, hashfunc=int)`` after
    ``update_batch(hashes[offsets[i]:offsets[i+1]])``; an empty document stays all ``0xFFFFFFFF``.
    """
    h = np.ascontiguousarray(hashes, dtype=np.uint32)
    off = np.asarray(offsets, dtype=np.int64)
    n_docs = off.shape[0] - 1
    if n_docs < 0 or off[0] != 0 or off[-1] != h.shape[0] or np.any(np.diff(off) < 0):
        raise ValueError("offsets must start at 0, end at len(hashes) and never decrease")
    a, b = permutations(num_perm, seed)
    out = np.full((n_docs, num_perm), MAX_HASH, dtype=np.uint32)
    nonempty = np.flatnonzero(off[1:] > off[:-1])
    if nonempty.size == 0:
        return out
    mixed = fmix32(h)
    # Chunks of whole documents (~_CHUNK shingles each) so the per-permutation temporaries stay
    # in cache; reduceat needs only the start of every non-empty document.
    starts = off[:-1][nonempty]
    bounds = np.searchsorted(starts, np.arange(0, h.shape[0], _CHUNK), side="left")
    bounds = np.unique(np.append(bounds, nonempty.size))
    if bounds[0] != 0:
        bounds = np.insert(bounds, 0, 0)
    tasks: list[tuple[int, int]] = [(int(bounds[i]), int(bounds[i + 1])) for i in range(len(bounds) - 1)
                                    if bounds[i + 1] > bounds[i]]
    sub = np.empty((nonempty.size, num_perm), dtype=np.uint32)

    def run(task: tuple[int, int]) -> None:
        d0, d1 = task
        lo = int(starts[d0])
        hi = int(off[nonempty[d1 - 1] + 1])
        _sign_chunk(mixed[lo:hi], (starts[d0:d1] - lo).astype(np.intp), a, b, sub[d0:d1])

    n_threads = threads if threads is not None else min(2, os.cpu_count() or 1)
    if n_threads > 1 and len(tasks) > 1:
        # numpy releases the GIL inside ufuncs, so chunks run truly in parallel.
        with ThreadPoolExecutor(n_threads) as pool:
            list(pool.map(run, tasks))
    else:
        for t in tasks:
            run(t)
    out[nonempty] = sub
    return out


def jaccard(sig_a: npt.NDArray[np.uint32], sig_b: npt.NDArray[np.uint32]) -> npt.NDArray[np.float64]:
    """Estimated Jaccard of row pairs (fraction of equal slots), as ``MinHash.jaccard``."""
    return np.count_nonzero(sig_a == sig_b, axis=-1) / sig_a.shape[-1]


def is_empty(sig: npt.NDArray[np.uint32]) -> npt.NDArray[np.bool_]:
    """Rows that saw no shingle at all (never near-duplicates of each other)."""
    return np.all(sig == MAX_HASH, axis=-1)
