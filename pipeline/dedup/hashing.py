"""Hashing constants and mixers shared by dedup keys, LSH bands and the leak n-gram index.

One home for the odd 64-bit multipliers, the MurmurHash3 finalizers, the polars hash seeds and
the shortest line that can identify a patch. Changing any value changes the dedup keys (bump
``pipeline.dedup.keys.SIGNATURE_SCHEME``) or the leak index.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

# Well-known odd 64-bit constants (multiplying by an odd number is a bijection mod 2^64).
GOLDEN64 = 0x9E3779B97F4A7C15  # 2^64 / golden ratio (Fibonacci hashing, splitmix64's increment)
XXH_PRIME64_2 = 0xC2B2AE3D27D4EB4F
XXH_PRIME64_3 = 0x165667B19E3779F9
XXH_PRIME64_4 = 0x85EBCA77C2B2AE63
XXH_PRIME64_5 = 0x27D4EB2F165667C5
WYHASH_P0 = 0xD6E8FEB86659FD93  # a wyhash-style mixing constant
MURMUR64_C1 = 0xFF51AFD7ED558CCD  # fmix64's multipliers
MURMUR64_C2 = 0xC4CEB9FE1A85EC53
MURMUR32_C1 = 0x85EBCA6B  # fmix32's multipliers
MURMUR32_C2 = 0xC2B2AE35

# per-row multipliers of the LSH band keys
BAND_MIX = np.array(
    [
        GOLDEN64,
        XXH_PRIME64_2,
        XXH_PRIME64_3,
        XXH_PRIME64_5,
        MURMUR64_C1,
        MURMUR64_C2,
        XXH_PRIME64_4,
        WYHASH_P0,
    ],
    dtype=np.uint64,
)
# polars ``Series.hash`` seed of normalised patch lines
LINE_SEED = 11

# a patch line shorter than this (after normalising) cannot identify a patch
MIN_DISTINCTIVE_CHARS = 12


def fmix64(h: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    """MurmurHash3's 64-bit finalizer (wrapping arithmetic is the intended mod 2^64)."""
    h = h ^ (h >> np.uint64(33))
    h = h * np.uint64(MURMUR64_C1)
    h = h ^ (h >> np.uint64(33))
    h = h * np.uint64(MURMUR64_C2)
    return h ^ (h >> np.uint64(33))


def fmix32(h: npt.NDArray[np.uint32]) -> npt.NDArray[np.uint32]:
    """MurmurHash3 finalizer on uint32 (wrapping arithmetic is the intended mod 2^32)."""
    h = h ^ (h >> np.uint32(16))
    h = h * np.uint32(MURMUR32_C1)
    h = h ^ (h >> np.uint32(13))
    h = h * np.uint32(MURMUR32_C2)
    return h ^ (h >> np.uint32(16))
