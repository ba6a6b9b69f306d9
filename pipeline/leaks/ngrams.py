"""Word tokens and their n-grams for problem-statement containment, compiled with numba.

A token is a lowercased ``[a-z0-9_]+`` run (:func:`token_hashes_regex` is the specification: polars'
Unicode lowercasing, then the regex): statements are matched as prose, case-insensitively, numbers
kept. The compiled tokeniser reads the UTF-8 bytes directly: Unicode lowercasing yields ASCII for two
characters only, KELVIN SIGN (-> ``k``) and LATIN CAPITAL LETTER I WITH DOT ABOVE (-> ``i`` + a
combining dot, which ends the token); every other non-ASCII byte is no word byte (a test checks every
code point against polars). The dedup keys (:mod:`pipeline.dedup.keys`) tokenise differently on
purpose (numbers and hex ids masked, non-ASCII kept); both read bytes through
:func:`pipeline.text.bytes.utf8_buffers`.

Hashes are built for a byte loop: a token's bytes are packed 8 to a 64-bit word and each word is
mixed in with one multiply (:func:`_mix`, :func:`_finish`); an n-gram's hash is the polynomial
``sum(t_k * B^(n-1-k))`` mod 2^64 of its token hashes, so the scan rolls it in O(1) per token.
Bitmaps are indexed by a hash's top bits (the well-mixed ones of a product).
"""

from __future__ import annotations

import numba
import numpy as np
import numpy.typing as npt
import polars as pl

from pipeline.dedup.hashing import GOLDEN64, XXH_PRIME64_2
from pipeline.text.bytes import utf8_buffers

U64 = npt.NDArray[np.uint64]
_WORD = r"[a-z0-9_]+"
_BASIS = np.uint64(XXH_PRIME64_2)
_PRIME = np.uint64(GOLDEN64)  # odd: multiplying is a bijection mod 2^64
GRAM_BASE = np.uint64(GOLDEN64)  # the n-gram polynomial's base B
_S8 = np.uint64(8)
_S32 = np.uint64(32)

# LOWER[b] is the lowercased byte of an ASCII word byte ([A-Za-z0-9_]), 0 for any other byte.
LOWER = np.zeros(256, dtype=np.uint8)
for _c in b"abcdefghijklmnopqrstuvwxyz0123456789_":
    LOWER[_c] = _c
for _c in b"ABCDEFGHIJKLMNOPQRSTUVWXYZ":
    LOWER[_c] = _c + 32
LOWER.setflags(write=False)


@numba.njit(cache=True, nogil=True)
def _word_char(data: npt.NDArray[np.uint8], i: int, end: int) -> tuple[int, int, bool]:  # pragma: no cover
    """(lowercased word byte or 0, bytes consumed, token ends after it) of the non-ASCII character
    whose byte is at ``i`` (the callers read ASCII bytes through ``LOWER`` inline: the hot path)."""
    b = data[i]
    if b == 0xE2 and i + 2 < end and data[i + 1] == 0x84 and data[i + 2] == 0xAA:
        return 107, 3, False  # KELVIN SIGN (e2 84 aa) -> "k"
    if b == 0xC4 and i + 1 < end and data[i + 1] == 0xB0:
        return 105, 2, True  # DOTTED I (c4 b0) -> "i", then U+0307 (no word character)
    return 0, 1, False  # any other byte of a non-ASCII character (continuation bytes included)


@numba.njit(cache=True, nogil=True)
def _mix(h: np.uint64, w: np.uint64) -> np.uint64:  # pragma: no cover - compiled
    """Mix a word of 8 packed token bytes into the running hash."""
    return (h ^ w) * _PRIME


@numba.njit(cache=True, nogil=True)
def _finish(h: np.uint64, w: np.uint64) -> np.uint64:  # pragma: no cover - compiled
    """The token hash from the running hash and the last (partial, maybe empty) word; a token byte is
    never 0, so the packing is unambiguous."""
    f = (h ^ w) * _PRIME
    return f ^ (f >> _S32)


@numba.njit(cache=True, nogil=True, boundscheck=False)
def _tokenise(
    data: npt.NDArray[np.uint8], off: npt.NDArray[np.int64], out: U64, counts: npt.NDArray[np.int64]
) -> int:  # pragma: no cover - compiled
    n = 0
    for t in range(off.shape[0] - 1):
        first = n
        i, end = off[t], off[t + 1]
        h, w, k = _BASIS, np.uint64(0), 0
        in_tok = False
        while i < end:
            b = data[i]
            stop = False
            if b < 128:
                c = LOWER[b]
                i += 1
            else:
                c, step, stop = _word_char(data, i, end)
                i += step
            if c:
                w = (w << _S8) | np.uint64(c)
                k += 1
                if k == 8:
                    h, w, k = _mix(h, w), np.uint64(0), 0
                in_tok = True
            if in_tok and (stop or not c):
                out[n] = _finish(h, w)
                n += 1
                h, w, k = _BASIS, np.uint64(0), 0
                in_tok = False
        if in_tok:
            out[n] = _finish(h, w)
            n += 1
        counts[t] = n - first
    return n


@numba.njit(cache=True, nogil=True, boundscheck=False)
def _hash_strings(
    data: npt.NDArray[np.uint8], off: npt.NDArray[np.int64], out: U64
) -> None:  # pragma: no cover
    for t in range(off.shape[0] - 1):
        h, w, k = _BASIS, np.uint64(0), 0
        for i in range(off[t], off[t + 1]):
            w = (w << _S8) | np.uint64(data[i])
            k += 1
            if k == 8:
                h, w, k = _mix(h, w), np.uint64(0), 0
        out[t] = _finish(h, w)


@numba.njit(cache=True, nogil=True)
def pair_hash(a: np.uint64, b: np.uint64) -> np.uint64:  # pragma: no cover - compiled
    """The hash of the ordered pair of token hashes (``a``, ``b``): top bits well mixed, for a
    :func:`hash_set`."""
    return _finish(_mix(_BASIS, a), b)


@numba.njit(cache=True, nogil=True)
def _pair_hashes(a: U64, b: U64, out: U64) -> None:  # pragma: no cover - compiled
    for j in range(a.shape[0]):
        out[j] = pair_hash(a[j], b[j])


def pair_hashes(a: U64, b: U64) -> U64:
    """:func:`pair_hash` of each (``a[j]``, ``b[j]``)."""
    out = np.empty(a.shape[0], dtype=np.uint64)
    _pair_hashes(np.ascontiguousarray(a, dtype=np.uint64), np.ascontiguousarray(b, dtype=np.uint64), out)
    return out


def hash_strings(strings: pl.Series) -> U64:
    """The token hash of each string's bytes as they are (a lowercase ``[a-z0-9_]+`` string hashes like
    the tokeniser's token)."""
    data, off = utf8_buffers(strings)
    out = np.empty(len(off) - 1, dtype=np.uint64)
    _hash_strings(data, off, out)
    return out


def token_hashes_regex(texts: pl.Series) -> tuple[U64, npt.NDArray[np.int64]]:
    """(hashes of all word tokens in order, token count per text): lowercase ``[a-z0-9_]+`` runs.

    The specification of :func:`token_hashes` (polars' Unicode lowercasing and regex)."""
    toks = texts.fill_null("").str.to_lowercase().str.extract_all(_WORD)
    counts = toks.list.len().fill_null(0).to_numpy().astype(np.int64)
    flat = toks.explode().drop_nulls()  # an empty list explodes to one null: not a token
    return hash_strings(flat), counts


def token_hashes(texts: pl.Series) -> tuple[U64, npt.NDArray[np.int64]]:
    """Same result as :func:`token_hashes_regex`, one compiled pass over the UTF-8 bytes."""
    data, off = utf8_buffers(texts)
    counts = np.zeros(len(off) - 1, dtype=np.int64)
    out = np.empty(len(data) + 1, dtype=np.uint64)  # a token holds >= 1 byte
    n = _tokenise(data, off, out, counts)
    return out[:n].copy(), counts


def gram_power(n: int) -> np.uint64:
    """``B^n`` mod 2^64: what an n-gram's oldest token is weighted by once a token is shifted in."""
    return np.uint64(pow(int(GRAM_BASE), n, 1 << 64))


def gram_hashes(h: U64, pos: npt.NDArray[np.int64], n: int) -> U64:
    """Hash of the word n-gram starting at each token position ``pos`` (token hashes ``h``):
    ``sum(h[pos + k] * B^(n-1-k))`` mod 2^64, what the scan (:mod:`pipeline.leaks.scan`) rolls."""
    g = np.zeros(len(pos), dtype=np.uint64)
    with np.errstate(over="ignore"):
        for k in range(n):
            g = g * GRAM_BASE + h[pos + k]
    return g


def gram_starts(doc: np.ndarray, n: int) -> npt.NDArray[np.int64]:
    """Token positions starting an n-gram inside one document (``doc`` sorted, one per token)."""
    m = len(doc) - n + 1
    if m <= 0:
        return np.zeros(0, dtype=np.int64)
    return np.flatnonzero(doc[:m] == doc[n - 1 :])


def bloom(hashes: U64, word_bits: int) -> U64:
    """A blocked Bloom filter of 64-bit hashes: ``2^word_bits`` words of 64 bits; a hash sets two bits
    of one word (one memory access per probe), chosen by its top bits. No false negatives; ~0.5% false
    positives at 30 bits per member."""
    words = np.zeros(1 << word_bits, dtype=np.uint64)
    idx = (hashes >> np.uint64(64 - word_bits)).astype(np.int64)
    b1 = (hashes >> np.uint64(58 - word_bits)) & np.uint64(63)
    b2 = (hashes >> np.uint64(52 - word_bits)) & np.uint64(63)
    np.bitwise_or.at(words, idx, (np.uint64(1) << b1) | (np.uint64(1) << b2))
    return words


@numba.njit(cache=True, nogil=True)
def _bloom_has(words: U64, h: np.uint64, shift: np.uint64) -> bool:  # pragma: no cover - compiled
    """Is ``h`` maybe in the :func:`bloom` ``words`` (``shift = 64 - word_bits``)?"""
    m = (np.uint64(1) << ((h >> (shift - np.uint64(6))) & np.uint64(63))) | (
        np.uint64(1) << ((h >> (shift - np.uint64(12))) & np.uint64(63))
    )
    return bool((words[h >> shift] & m) == m)


def sorted_unique(hashes: U64) -> U64:
    """``np.unique(hashes)``: sort, then drop repeats (numpy 2.4's ``unique`` of integers takes a hash
    table path ~40x slower than this on 250k values)."""
    s = np.sort(np.asarray(hashes, dtype=np.uint64))
    keep = np.empty(s.shape[0], dtype=bool)
    keep[:1] = True
    np.not_equal(s[1:], s[:-1], out=keep[1:])
    return s[keep]


def hash_set(hashes: U64) -> U64:
    """An open-addressing (linear probing) set of 64-bit hashes, at most half full: slot ``h``'s top
    bits; 0 marks an empty slot, so 0 itself is a member when the extra last slot is 1."""
    uniq = sorted_unique(hashes)
    bits = max(4, int(np.ceil(np.log2(max(1, len(uniq)) * 2))))
    table = np.zeros((1 << bits) + 1, dtype=np.uint64)
    _fill(table, uniq[uniq != 0], np.uint64(64 - bits))
    table[-1] = np.uint64(bool((uniq == 0).any()))
    return table


@numba.njit(cache=True, nogil=True)
def _fill(table: U64, hashes: U64, shift: np.uint64) -> None:  # pragma: no cover - compiled
    mask = np.int64(table.shape[0] - 2)
    for h in hashes:
        i = np.int64(h >> shift)
        while table[i] != 0:
            i = (i + 1) & mask
        table[i] = h


def shift_of(size: int) -> np.uint64:
    """``64 - log2(size)``: the shift that takes a hash's top bits as an index into ``size`` entries."""
    return np.uint64(64 - (int(size).bit_length() - 1))


@numba.njit(cache=True, nogil=True)
def _set_has(table: U64, h: np.uint64, shift: np.uint64) -> bool:  # pragma: no cover - compiled
    """Is ``h`` in the :func:`hash_set` ``table`` (``shift = shift_of(len(table) - 1)``)?"""
    if h == 0:
        return bool(table[table.shape[0] - 1] == 1)
    mask = np.int64(table.shape[0] - 2)
    i = np.int64(h >> shift)
    while table[i] != 0:
        if table[i] == h:
            return True
        i = (i + 1) & mask
    return False
