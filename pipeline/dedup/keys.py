"""Dedup keys of a batch of runs: an exact hash of the messages and a MinHash of the actions.

``exact_hash`` is the sha256 of the converted messages WITHOUT the system prompt, so the same
run re-exported under a new rollout id (or rendered with a newer system template) hashes the
same. ``minhash`` is a 128-slot signature over word shingles of the normalised action stream:
the run's commands (edit payloads live inside them as heredocs) with paths made relative to
/testbed and hex ids, numbers and temp names masked, so two exports of one run that differ only
in a temp dir or a line number still match. Observations are left out on purpose: two different
runs on the same task print mostly the same outputs.

Two implementations of the same normalisation live here:

* :func:`action_stream` + :data:`TOKEN_PATTERN` is the readable reference (polars regexes);
* the fast path (:func:`_premask` in polars, then :func:`token_hashes_flat`, a compiled (numba)
  pass over the raw UTF-8 bytes) applies the number/hex mask and splits and hashes tokens in one
  byte pass.
  It replaced a regex ``extract_all`` + polars ``hash`` that cost ~60% of the dedup step, and
  its token hashes no longer depend on the polars version. A test proves both paths agree.

Everything per token runs in polars, numba or numpy; Python touches each run once (sha256 of a string).
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Generic, Protocol, TypeVar

import numba
import numpy as np
import numpy.typing as npt
import polars as pl

from pipeline.core.config import DedupParams
from pipeline.dedup.hashing import GOLDEN64, MURMUR64_C1, MURMUR64_C2, XXH_PRIME64_2, XXH_PRIME64_3, fmix64
from pipeline.dedup.minhash import permutations, sign_block
from pipeline.text.bytes import utf8_buffers, utf8_views
from schemas.miniswe import ACTION_REGEX_POLARS

# mini-swe-agent's action regex: the command is the body of the one ```bash fence.
BASH_FENCE = ACTION_REGEX_POLARS

# A stored signature must be recomputed (not compared) when this scheme string differs.
# v3: tokens are hashed from their UTF-8 bytes (polynomial + fmix64), not by polars' hash.
SIGNATURE_SCHEME = "affine32-fmix32/word{shingle}/bytepoly64/v3"

_SHINGLE_MUL = GOLDEN64  # odd: multiplying by its powers is a bijection mod 2^64
_TOKEN_MUL = XXH_PRIME64_2  # folds the 8-byte words of a long token
_LEN_MUL = XXH_PRIME64_3
_M64 = (1 << 64) - 1

# Masks, one regex pass each. ASCII word boundaries (?-u:\b) keep the regex engine on its fast
# DFA path (Unicode \b forces the slow one: ~10x here).
_TEMP = r"/(?:var/)?tmp/[\w.\-]+|(?-u:\b)tmp\w{4,}"
_UUID = r"(?i)(?-u:\b)[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}(?-u:\b)"
# hex ids (an ASCII word of hex digits holding at least one decimal digit) and any run of digits
# (line numbers in `sed -n '120,180p'`, counters in names)
_HEXNUM = r"(?i)(?-u:\b)[0-9a-f]*[0-9][0-9a-f]*(?-u:\b)|[0-9]+"
# A token is a maximal run of ASCII word characters or non-ASCII characters: punctuation carries
# little beyond the words around it and doubles the token count.
TOKEN_PATTERN = r"[0-9A-Za-z_\x{80}-\x{10FFFF}]+"

# Bytes of runs per tokeniser work unit (what one thread takes at a time).
_BYTE_CHUNK = 1 << 19


def commands_from_messages(messages: pl.Expr) -> pl.Expr:
    """The bash command of every assistant message (published-schema runs have no ``commands``)."""
    return messages.list.eval(
        pl.element()
        .filter(pl.element().struct.field("role") == "assistant")
        .struct.field("content")
        .str.extract(BASH_FENCE, 1)
        .drop_nulls()
    )


def _premask(commands: pl.Expr) -> pl.Expr:
    """The masks the fast tokeniser does not do itself: roots, temp names, UUIDs."""
    return (
        commands.list.join("\n")
        .str.replace_all("/testbed", "", literal=True)
        .str.replace_all(_TEMP, " TMP ")
        .str.replace_all(_UUID, " HEX ")
    )


def action_stream(commands: pl.Expr) -> pl.Expr:
    """The normalised action text of a run (one string per run): the reference normalisation.

    ``/testbed`` is removed outright: tokens are words, so ``/testbed/src/a.py`` and ``src/a.py``
    (and ``cd /testbed``'s leftover ``cd``) tokenise the same as the relative path.
    """
    return _premask(commands).str.replace_all(_HEXNUM, " NUM ")


def token_hash(token: bytes) -> int:
    """The 64-bit hash of one token, in plain Python (the specification of the compiled path).

    The token's bytes as little-endian 8-byte words ``w_0..w_m`` (the last zero-padded; tokens
    never hold a NUL byte), folded as ``acc = acc * P + w_j`` mod 2^64 from ``acc = w_0``, then
    ``fmix64(acc + len * L)``.
    """
    acc = 0
    for j in range(0, len(token), 8):
        word = int.from_bytes(token[j : j + 8].ljust(8, b"\0"), "little")
        acc = ((acc * _TOKEN_MUL) + word) & _M64 if j else word
    acc = (acc + len(token) * _LEN_MUL) & _M64
    return int(fmix64(np.array([acc], dtype=np.uint64))[0])


_NUM_HASH = np.uint64(token_hash(b"NUM"))


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


class _Workspace:
    """Reusable per-thread buffers for :func:`_tokenise_bytes` (byte kinds, token hashes): fresh
    multi-MB buffers per work unit cost more in page faults than the tokenising itself on this VM."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.kind = np.empty(cap, dtype=np.uint8)
        self.hashes = np.empty(cap, dtype=np.uint64)


_POOL: Pool[_Workspace] = Pool(_Workspace)


_TOKEN_MUL64, _LEN_MUL64 = np.uint64(_TOKEN_MUL), np.uint64(_LEN_MUL)
_FMIX_C1, _FMIX_C2 = np.uint64(MURMUR64_C1), np.uint64(MURMUR64_C2)


@numba.njit(nogil=True, cache=True, boundscheck=False)
def _is_word(c: int) -> bool:
    """An ASCII word byte (what ``(?-u:\\b)`` sees): a letter, a digit or ``_``."""
    return (97 <= (c | 0x20) <= 122) or (48 <= c <= 57) or c == 95


@numba.njit(nogil=True, cache=True, boundscheck=False)
def _hash_bytes(data: npt.NDArray[np.uint8], start: int, end: int) -> np.uint64:
    """:func:`token_hash` of ``data[start:end]``."""
    acc = np.uint64(0)
    for j in range(start, end, 8):
        word = np.uint64(0)
        for b in range(min(8, end - j)):
            word |= np.uint64(data[j + b]) << np.uint64(8 * b)
        acc = acc * _TOKEN_MUL64 + word if j > start else word
    h = acc + np.uint64(end - start) * _LEN_MUL64
    h ^= h >> np.uint64(33)
    h *= _FMIX_C1
    h ^= h >> np.uint64(33)
    h *= _FMIX_C2
    return h ^ (h >> np.uint64(33))


@numba.njit(nogil=True, cache=True, boundscheck=False)
def _token_kernel(
    data: npt.NDArray[np.uint8],
    bounds: npt.NDArray[np.int64],
    kind: npt.NDArray[np.uint8],
    hashes: npt.NDArray[np.uint64],
    counts: npt.NDArray[np.int64],
) -> int:
    """Token hashes of every run into ``hashes`` (their number is returned), token counts into
    ``counts``. A byte's kind is 0 separator, 1 text (non-ASCII, or a letter or ``_`` of an ASCII
    word) or 2 NUM (a digit, or any byte of an ASCII word of hex digits holding a decimal one);
    a token is a maximal run of one kind other than 0 within a run."""
    t = 0
    for r in range(bounds.shape[0] - 1):
        lo, hi = bounds[r], bounds[r + 1]
        i = lo
        while i < hi:
            c = data[i]
            if c >= 0x80:
                kind[i] = 1
                i += 1
            elif _is_word(c):
                j, hexish, digit = i, True, False
                while j < hi and data[j] < 0x80 and _is_word(data[j]):
                    cj = data[j]
                    if 48 <= cj <= 57:
                        digit = True
                    elif not (97 <= (cj | 0x20) <= 102):
                        hexish = False
                    j += 1
                for k in range(i, j):
                    kind[k] = 2 if (hexish and digit) or 48 <= data[k] <= 57 else 1
                i = j
            else:
                kind[i] = 0
                i += 1
        first = t
        i = lo
        while i < hi:
            k = kind[i]
            j = i + 1
            while j < hi and kind[j] == k:
                j += 1
            if k == 2:
                hashes[t] = _NUM_HASH
                t += 1
            elif k == 1:
                hashes[t] = _hash_bytes(data, i, j)
                t += 1
            i = j
        counts[r] = t - first
    return t


def _tokenise_bytes(
    data: npt.NDArray[np.uint8], bounds: npt.NDArray[np.int64], ws_: _Workspace
) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.int64]]:
    """Token hashes of the runs laid out back to back in ``data`` (run k is
    ``data[bounds[k]:bounds[k+1]]``), with the token count of every run, in one compiled pass.

    Same tokens as ``TOKEN_PATTERN`` over ``_HEXNUM``-masked text: an ASCII word of hex
    characters with a decimal digit becomes one ``NUM`` token, every other run of digits
    becomes its own ``NUM`` token, and maximal runs of the remaining word/non-ASCII bytes are
    text tokens. Tokens never cross a run boundary.
    """
    counts = np.zeros(bounds.shape[0] - 1, dtype=np.int64)
    n = data.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.uint64), counts
    t = _token_kernel(data, bounds.astype(np.int64), ws_.kind[:n], ws_.hashes[:n], counts)
    return ws_.hashes[:t].copy(), counts


def _streams_bytes(streams: pl.Series) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64]]:
    """The UTF-8 bytes of all streams back to back and the run offsets (nulls are empty)."""
    return utf8_buffers(streams)


def _work_groups(off: npt.NDArray[np.int64], n_threads: int) -> list[list[tuple[int, int]]]:
    """Runs cut into ~_BYTE_CHUNK-byte units (a longer run is its own unit), dealt into
    ``n_threads`` groups of consecutive units with about equal bytes."""
    n_runs = off.shape[0] - 1
    cuts = np.unique(
        np.concatenate(
            [[0], np.searchsorted(off, np.arange(off[0], off[-1], _BYTE_CHUNK), side="right") - 1, [n_runs]]
        )
    )
    units = [(int(cuts[i]), int(cuts[i + 1])) for i in range(cuts.shape[0] - 1) if cuts[i + 1] > cuts[i]]
    ends = np.array([off[u[1]] - off[0] for u in units], dtype=np.float64)
    total = max(float(off[-1] - off[0]), 1.0)
    # group of a unit = which n_threads-th of the bytes it ends in; monotone, so groups stay in order
    which = np.clip((ends - 1e-9) * n_threads // total, 0, n_threads - 1).astype(int)
    groups: list[list[tuple[int, int]]] = [[] for _ in range(n_threads)]
    for u, g in zip(units, which, strict=True):
        groups[int(g)].append(u)
    return [g for g in groups if g]


_T = TypeVar("_T")
_UnitFn = Callable[[npt.NDArray[np.uint8], npt.NDArray[np.int64], "_Workspace", int, int], _T]


def _map_units(streams: pl.Series, threads: int | None, fn: _UnitFn[_T]) -> list[_T]:
    """Run ``fn(data, bounds, workspace, r0, r1)`` over every work unit, one thread per
    group; the compiled kernels release the GIL, so groups really run in parallel."""
    data, off = _streams_bytes(streams)
    n_threads = threads if threads is not None else min(2, os.cpu_count() or 1)
    groups = _work_groups(off, max(1, n_threads))

    def work(group: list[tuple[int, int]]) -> list[_T]:
        with _POOL.borrow(max(_BYTE_CHUNK * 2, *(int(off[r1] - off[r0]) for r0, r1 in group))) as space:
            out = []
            for r0, r1 in group:
                lo = int(off[r0])
                out.append(fn(data[lo : int(off[r1])], off[r0 : r1 + 1] - lo, space, r0, r1))
        return out

    if len(groups) > 1:
        with ThreadPoolExecutor(len(groups)) as pool:
            return [r for part in pool.map(work, groups) for r in part]
    return [r for g in groups for r in work(g)]


def token_hashes_flat(
    streams: pl.Series, threads: int | None = None
) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.int64]]:
    """Token hashes of ``_premask``-ed streams (nulls count as empty), flat, with per-run counts."""
    if streams.len() == 0:
        return np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=np.int64)
    parts = _map_units(streams, threads, lambda d, bounds, space, _r0, _r1: _tokenise_bytes(d, bounds, space))
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


def minhash_signatures(
    streams: pl.Series, params: DedupParams, threads: int | None = None
) -> npt.NDArray[np.uint32]:
    """(n_runs, num_perm) MinHash signatures of ``_premask``-ed streams, fused per work unit:
    bytes -> tokens -> shingles -> signature rows stay in cache, and no batch-sized token or
    shingle array is ever allocated. Equal to ``signatures(*shingle_hashes(streams))``."""
    a, b = permutations(params.num_perm, params.seed)
    out = np.empty((streams.len(), params.num_perm), dtype=np.uint32)
    if streams.len() == 0:
        return out

    def unit(
        d: npt.NDArray[np.uint8], bounds: npt.NDArray[np.int64], space: _Workspace, r0: int, r1: int
    ) -> None:
        th, counts = _tokenise_bytes(d, bounds, space)
        hashes, sh_off = shingles_from_flat(th, counts, params.shingle)
        sign_block(hashes, np.diff(sh_off), a, b, out[r0:r1])

    _map_units(streams, threads, unit)
    return out


def _partitioned(frame: pl.LazyFrame, height: int, exprs: list[pl.Expr]) -> pl.DataFrame:
    """Evaluate ``exprs`` over row slices in parallel (polars runs a lazy concat's inputs on its
    thread pool; one string kernel over one Series would use a single core)."""
    parts = max(1, min(os.cpu_count() or 1, height // 2000))
    step = -(-height // parts) if height else 1
    lazies = [frame.slice(i, step).select(exprs) for i in range(0, max(height, 1), step)]
    return pl.concat(lazies, how="vertical", parallel=True).collect()


def shingles_from_flat(
    th: npt.NDArray[np.uint64], counts: npt.NDArray[np.int64], shingle: int
) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.int64]]:
    """32-bit hashes of the ``shingle``-token windows of every run, flat, with per-run offsets.

    ``th`` holds the token hashes of all runs back to back, run ``i`` owning ``counts[i]``.
    A window is ``sum_k h[i+k] * M^k mod 2^64`` folded to 32 bits. A run with fewer tokens than
    ``shingle`` contributes one window of all its tokens (a short run still has a signature); a
    run with no token contributes none. No Python per token: numpy over the flat token array.
    """
    th = np.ascontiguousarray(th, dtype=np.uint64)
    counts = np.asarray(counts, dtype=np.int64)
    n, w = th.shape[0], shingle
    tok_off = np.zeros(counts.shape[0] + 1, dtype=np.int64)
    np.cumsum(counts, out=tok_off[1:])
    g = th.copy()
    tmp = np.empty_like(th)
    for k in range(1, min(w, n)):
        mul = np.uint64(pow(_SHINGLE_MUL, k, 1 << 64))
        np.multiply(th[k:], mul, out=tmp[: n - k])
        np.add(g[: n - k], tmp[: n - k], out=g[: n - k])
    # Windows that run past the end of their run are the last w-1 starts of every run (all of a
    # short run's): mark them invalid, then give each short run its first start back with the
    # sum over exactly its own tokens.
    keep = np.ones(n, dtype=bool)
    ends = tok_off[1:]
    for k in range(1, w):
        keep[ends[counts >= k] - k] = False
    short = np.flatnonzero((counts > 0) & (counts < w))
    if short.size:
        s_idx = np.repeat(tok_off[:-1][short], counts[short])
        within = np.arange(s_idx.shape[0]) - np.repeat(
            np.cumsum(counts[short]) - counts[short], counts[short]
        )
        powers = np.array([pow(_SHINGLE_MUL, k, 1 << 64) for k in range(w)], dtype=np.uint64)
        terms = th[s_idx + within] * powers[within]
        g[tok_off[:-1][short]] = np.add.reduceat(terms, np.cumsum(counts[short]) - counts[short])
        keep[tok_off[:-1][short]] = True
    vals = np.compress(keep, g)
    n_sh = np.where(counts >= w, counts - w + 1, np.minimum(counts, 1))
    sh_off = np.zeros_like(tok_off)
    np.cumsum(n_sh, out=sh_off[1:])
    folded = ((vals >> np.uint64(32)) ^ vals).astype(np.uint32)
    return folded, sh_off


def shingle_hashes(streams: pl.Series, shingle: int) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.int64]]:
    """Shingle hashes of action streams (raw ``_premask``-ed or fully normalised: the number
    mask is idempotent, so ``action_stream`` output gives the same hashes)."""
    th, counts = token_hashes_flat(streams)
    return shingles_from_flat(th, counts, shingle)


def canonical_messages(messages: pl.Expr) -> pl.Expr:
    """The non-system messages as one string: ``role \\x1f len(content) \\x1f content`` joined by
    ``\\x1e`` (the byte length makes the encoding unambiguous whatever the content holds)."""
    role = pl.element().struct.field("role")
    content = pl.element().struct.field("content").fill_null("")
    return messages.list.eval(
        pl.concat_str([role, content.str.len_bytes().cast(pl.Utf8), content], separator="\x1f").filter(
            role != "system"
        )
    ).list.join("\x1e")


def _sha256_hex(canon: pl.Series) -> pl.Series:
    """The sha256 (hex) of each string's UTF-8 bytes (null: of ""), hashed where polars holds
    them: no Python string is built, and the column is not copied."""
    return pl.Series("exact_hash", [hashlib.sha256(b).hexdigest() for b in utf8_views(canon)], dtype=pl.Utf8)


def add_dedup_keys(batch: pl.DataFrame, params: DedupParams) -> pl.DataFrame:
    """``batch`` plus ``exact_hash`` (Utf8) and ``minhash`` (List[UInt32], ``params.num_perm``)."""
    cmds = pl.col("commands") if "commands" in batch.columns else commands_from_messages(pl.col("messages"))
    keys = _partitioned(
        batch.lazy(),
        batch.height,
        [
            _premask(cmds).alias("pre"),
            canonical_messages(pl.col("messages")).alias("canon"),
        ],
    )
    sig = minhash_signatures(keys.get_column("pre"), params)
    minhash = pl.Series("minhash", sig.ravel()).reshape((batch.height, params.num_perm)).arr.to_list()
    return batch.with_columns(_sha256_hex(keys.get_column("canon")), minhash.alias("minhash"))
