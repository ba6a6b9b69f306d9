"""MinHash signatures, bit-identical to ``datasketch.MinHash`` (scheme ``affine32``), compiled with numba.

datasketch 2.x hashes every value with ``hashfunc`` (we feed 32-bit shingle hashes and use the
identity), pre-mixes it with the MurmurHash3 32-bit finalizer, then applies ``a_k * h + b_k``
modulo 2^32 for 128 odd ``a_k``: plain uint32 wrapping arithmetic (the Mersenne-prime ``% p``
belongs to datasketch's ``legacy`` scheme, which we do not use). The kernel walks each document
once and keeps the 128 running minima in a small array: the loop over permutations compiles to
8-lane AVX2 multiply/add/min, so one value costs ~16 vector instructions and nothing touches
memory but the input. numpy needed one pass over memory per permutation (8x datasketch at best,
bench/dedup.py); this is ~10x that. ``cache=True`` keeps the compiled kernel on disk, so worker
processes do not pay the compile again.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache

import numba
import numpy as np
import numpy.typing as npt

from pipeline.dedup.hashing import MURMUR32_C1, MURMUR32_C2

MAX_HASH = np.uint32(0xFFFFFFFF)  # datasketch's "empty" value (no shingle seen)

# Shingles per thread block: blocks of whole documents of about this many values.
_CHUNK = 1 << 16
_M32 = np.uint64(0xFFFFFFFF)


@lru_cache(maxsize=8)
def permutations(num_perm: int, seed: int) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.uint32]]:
    """The ``(a, b)`` parameters datasketch draws for ``MinHash(num_perm, seed)`` (affine32)."""
    gen = np.random.RandomState(seed)
    a = gen.randint(0, 1 << 31, num_perm, dtype=np.uint32) * np.uint32(2) + np.uint32(1)
    b = gen.randint(0, 1 << 32, num_perm, dtype=np.uint32)
    a.setflags(write=False)
    b.setflags(write=False)
    return a, b


@numba.njit(nogil=True, cache=True, boundscheck=False)
def _sign_kernel(
    h: npt.NDArray[np.uint32],
    off: npt.NDArray[np.int64],
    a: npt.NDArray[np.uint32],
    b: npt.NDArray[np.uint32],
    out: npt.NDArray[np.uint32],
) -> None:  # pragma: no cover - compiled
    n_perm = a.shape[0]
    mins = np.empty(n_perm, np.uint32)
    for d in range(off.shape[0] - 1):
        for k in range(n_perm):
            mins[k] = np.uint32(0xFFFFFFFF)
        for i in range(off[d], off[d + 1]):
            # fmix32 in 64-bit registers, masked: numba widens uint32 products.
            x = np.uint64(h[i])
            x = x ^ (x >> np.uint64(16))
            x = (x * np.uint64(MURMUR32_C1)) & _M32
            x = x ^ (x >> np.uint64(13))
            x = (x * np.uint64(MURMUR32_C2)) & _M32
            x32 = np.uint32(x ^ (x >> np.uint64(16)))
            for k in range(n_perm):
                t = np.uint32(a[k] * x32 + b[k])
                # a select, not an if: the branch-free form is what LLVM vectorises
                mins[k] = t if t < mins[k] else mins[k]
        for k in range(n_perm):
            out[d, k] = mins[k]


def sign_block(
    hashes: npt.NDArray[np.uint32],
    lens: npt.NDArray[np.int64],
    a: npt.NDArray[np.uint32],
    b: npt.NDArray[np.uint32],
    out: npt.NDArray[np.uint32],
) -> None:
    """Fill ``out`` (docs x perms) for consecutive documents of ``lens`` raw hashes each, in the
    calling thread (the kernel releases the GIL); empty documents get ``MAX_HASH``."""
    off = np.zeros(lens.shape[0] + 1, dtype=np.int64)
    np.cumsum(lens, out=off[1:])
    _sign_kernel(np.ascontiguousarray(hashes, dtype=np.uint32), off, a, b, out)


def signatures(
    hashes: npt.ArrayLike,
    offsets: npt.ArrayLike,
    num_perm: int = 128,
    seed: int = 1,
    threads: int | None = None,
) -> npt.NDArray[np.uint32]:
    """MinHash signatures of many documents at once.

    ``hashes`` holds the 32-bit shingle hashes of all documents back to back; document ``i`` owns
    ``hashes[offsets[i]:offsets[i + 1]]`` (``len(offsets) == n_docs + 1``). Row ``i`` of the
    result equals ``datasketch.MinHash(num_perm, seed, hashfunc=int)`` after
    ``update_batch(hashes[offsets[i]:offsets[i+1]])``; an empty document stays all ``0xFFFFFFFF``.
    Blocks of whole documents (~``_CHUNK`` hashes) run on ``threads`` threads (the compiled kernel
    releases the GIL, so blocks really run in parallel).
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
    cuts = np.unique(
        np.concatenate(
            [[0], np.searchsorted(off, np.arange(0, h.shape[0], _CHUNK), side="right") - 1, [n_docs]]
        )
    )
    blocks = [(int(cuts[i]), int(cuts[i + 1])) for i in range(cuts.shape[0] - 1) if cuts[i + 1] > cuts[i]]
    n_threads = max(1, min(threads if threads is not None else min(2, os.cpu_count() or 1), len(blocks)))

    def run(group: int) -> None:
        # Blocks dealt round-robin (they are about equal in size); the kernel releases the GIL.
        for d0, d1 in blocks[group::n_threads]:
            _sign_kernel(h, off[d0 : d1 + 1], a, b, out[d0:d1])

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
