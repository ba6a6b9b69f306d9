"""Dedup keys of a batch of runs: an exact hash of the messages and a MinHash of the actions.

``exact_hash`` is the sha256 of the converted messages WITHOUT the system prompt, so the same
run re-exported under a new rollout id (or rendered with a newer system template) hashes the
same. ``minhash`` is a 128-slot signature over word shingles of the normalised action stream:
the run's commands (edit payloads live inside them as heredocs) with paths made relative to
/testbed and hex ids, numbers and temp names masked, so two exports of one run that differ only
in a temp dir or a line number still match. Observations are left out on purpose: two different
runs on the same task print mostly the same outputs (research/dedup.md §5.1).

Two implementations of the same normalisation live here:

* :func:`action_stream` + :data:`TOKEN_PATTERN` is the readable reference (polars regexes);
* the fast path (:func:`_premask` in polars, then :func:`token_hashes_flat` in numpy over the
  raw UTF-8 bytes) applies the number/hex mask and splits and hashes tokens in one byte pass.
  It replaced a regex ``extract_all`` + polars ``hash`` that cost ~60% of the dedup step, and
  its token hashes no longer depend on the polars version. A test proves both paths agree.

Everything per token runs in polars/numpy; Python touches each run once (sha256 of a string).
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Generic, Protocol, TypeVar

import numpy as np
import numpy.typing as npt
import polars as pl
import pyarrow as pa

from pipeline.core.config import DedupParams
from pipeline.dedup.hashing import GOLDEN64, XXH_PRIME64_2, XXH_PRIME64_3, fmix64
from pipeline.dedup.minhash import permutations, sign_block
from pipeline.textbytes import utf8_buffers
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

# Byte classes of the fast tokeniser.
_SEP, _WORD, _HEXL, _DIGIT, _HIGH = 0, 1, 2, 3, 4
_CLASS = np.zeros(256, dtype=np.uint8)
_CLASS[0x80:] = _HIGH
for _c in b"ghijklmnopqrstuvwxyzGHIJKLMNOPQRSTUVWXYZ_":
    _CLASS[_c] = _WORD
for _c in b"abcdefABCDEF":
    _CLASS[_c] = _HEXL
_CLASS[ord("0") : ord("9") + 1] = _DIGIT
_CLASS.setflags(write=False)

# Bytes of runs per tokeniser work unit: its ~35 B/byte of temporaries stay in L3.
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
    """The 64-bit hash of one token, in plain Python (the specification of the numpy path).

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


# Mask of the low k bytes of a word, k = 0..8.
_BYTE_MASKS = np.array([(1 << (8 * k)) - 1 for k in range(8)] + [_M64], dtype=np.uint64)


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
    """Reusable per-thread buffers for :func:`_tokenise_bytes`. Fresh multi-MB temporaries per
    work unit cost more in page faults than the arithmetic itself (measured ~2x on this VM)."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.u8a = np.empty(cap, dtype=np.uint8)
        self.u8b = np.empty(cap, dtype=np.uint8)
        self.pad = np.zeros((cap // 8 + 3) * 8, dtype=np.uint8)  # the unit's bytes, then >= 8 zero bytes
        self.b = [np.empty(cap, dtype=bool) for _ in range(5)]
        self.i32a = np.empty(cap + 1, dtype=np.int32)
        self.i32b = np.empty(cap + 1, dtype=np.int32)


_POOL: Pool[_Workspace] = Pool(_Workspace)


def _segments(
    values: npt.NDArray[np.uint8] | npt.NDArray[np.bool_],
    inner: npt.NDArray[np.int64],
    edge: npt.NDArray[np.bool_],
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Maximal runs of equal ``values`` that never cross a run boundary: (starts, ends)."""
    n = values.shape[0]
    edge[:1] = True
    np.not_equal(values[1:], values[:-1], out=edge[1:])
    edge[inner] = True
    starts = np.flatnonzero(edge)
    ends = np.empty_like(starts)
    ends[:-1] = starts[1:]
    ends[-1:] = n
    return starts, ends


def _word_at(words: npt.NDArray[np.uint64], pos: npt.NDArray[np.int64]) -> npt.NDArray[np.uint64]:
    """The little-endian 8 bytes starting at each byte offset ``pos``, from two aligned words
    (gathers from an unaligned strided view measured several times slower in place)."""
    shift = (pos & 7).astype(np.uint64) << np.uint64(3)
    q = pos >> 3
    # numpy defines a shift by >= 64 as 0, so shift == 0 takes the low word alone
    low: npt.NDArray[np.uint64] = np.take(words, q) >> shift
    high: npt.NDArray[np.uint64] = np.take(words, q + 1) << (np.uint64(64) - shift)
    return low | high


def _tokenise_bytes(
    data: npt.NDArray[np.uint8], bounds: npt.NDArray[np.int64], ws_: _Workspace
) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.int64]]:
    """Token hashes of the runs laid out back to back in ``data`` (run k is
    ``data[bounds[k]:bounds[k+1]]``), with the token count of every run.

    Same tokens as ``TOKEN_PATTERN`` over ``_HEXNUM``-masked text: an ASCII word of hex
    characters with a decimal digit becomes one ``NUM`` token, every other run of digits
    becomes its own ``NUM`` token, and maximal runs of the remaining word/non-ASCII bytes are
    text tokens. Tokens never cross a run boundary. Per-byte work writes into ``ws_``.
    """
    n = data.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.uint64), np.zeros(bounds.shape[0] - 1, dtype=np.int64)
    inner = bounds[(bounds > 0) & (bounds < n)]
    t8, kind = ws_.u8a[:n], ws_.u8b[:n]
    isw, bad, dig, edge, tmp = (b[:n] for b in ws_.b)
    # Byte classes by arithmetic (a few SIMD passes beat one table gather).
    np.bitwise_or(data, 0x20, out=t8)
    np.subtract(t8, ord("a"), out=t8)  # letters -> 0..25, everything else >= 26 (uint8 wrap)
    np.less(t8, 26, out=isw)
    np.less(t8, 6, out=tmp)  # a-f / A-F
    np.greater(isw, tmp, out=bad)  # a letter that is not a hex digit ...
    np.equal(data, ord("_"), out=tmp)
    np.logical_or(bad, tmp, out=bad)  # ... or an underscore: a word holding one is not hex
    np.logical_or(isw, tmp, out=isw)
    np.subtract(data, ord("0"), out=t8)
    np.less(t8, 10, out=dig)
    np.logical_or(isw, dig, out=isw)  # ASCII word byte (what (?-u:\b) sees)
    # ASCII words, and the hex ones among them (no non-hex letter, at least one digit).
    seg_s, seg_e = _segments(isw, inner, edge)
    # np.compress, not boolean indexing: ~5x faster on these unpredictable masks
    is_word = np.take(isw, seg_s)
    wst, wen = np.compress(is_word, seg_s), np.compress(is_word, seg_e)
    cbad, cdig = ws_.i32a[: n + 1], ws_.i32b[: n + 1]
    cbad[0] = 0
    np.cumsum(bad, dtype=np.int32, out=cbad[1:])
    cdig[0] = 0
    np.cumsum(dig, dtype=np.int32, out=cdig[1:])
    hexw = (np.take(cbad, wen) == np.take(cbad, wst)) & (np.take(cdig, wen) > np.take(cdig, wst))
    # Token kind per byte: 0 separator, 1 text, 2 NUM (a digit or a byte of a hex word).
    np.greater_equal(data, 0x80, out=tmp)
    np.logical_or(isw, tmp, out=tmp)  # token byte: ASCII word or non-ASCII
    np.add(tmp.view(np.uint8), dig.view(np.uint8), out=kind)
    if hexw.any():
        hs, hl = wst[hexw], wen[hexw] - wst[hexw]
        kind[np.repeat(hs - (np.cumsum(hl) - hl), hl) + np.arange(int(hl.sum()))] = 2
    seg_s, seg_e = _segments(kind, inner, edge)
    k = np.take(kind, seg_s)
    live = k != 0
    ts, te, k = np.compress(live, seg_s), np.compress(live, seg_e), np.compress(live, k)
    # Hash every token from the 8-byte words of the zero-padded bytes (see token_hash).
    ws_.pad[:n] = data
    ws_.pad[n : n + 16] = 0
    words = ws_.pad.view("<u8")
    ln = te - ts
    acc = _word_at(words, ts) & np.take(_BYTE_MASKS, np.minimum(ln, 8))
    more = np.flatnonzero(ln > 8)
    j = 8
    while more.size:
        word = _word_at(words, np.take(ts, more) + j) & np.take(
            _BYTE_MASKS, np.minimum(np.take(ln, more) - j, 8)
        )
        acc[more] = np.take(acc, more) * np.uint64(_TOKEN_MUL) + word
        j += 8
        more = np.compress(np.take(ln, more) > j, more)
    h = fmix64(acc + ln.astype(np.uint64) * np.uint64(_LEN_MUL))
    h[k == 2] = _NUM_HASH
    counts = np.diff(np.searchsorted(ts, bounds)).astype(np.int64)
    return h, counts


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
    group; numpy releases the GIL in its kernels, so groups really run in parallel."""
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


def _string_bytes(texts: pl.Series) -> list[memoryview]:
    """The UTF-8 bytes of each string (null: empty) where polars holds them: its string views,
    exported to Arrow without a copy (a value of up to 12 bytes is inside its view, a longer one in
    one of the data buffers), so the column is never copied into one contiguous buffer."""
    arr = texts.cast(pl.Utf8).rechunk().to_arrow(compat_level=pl.CompatLevel.newest())
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    bufs = arr.buffers()
    raw = memoryview(bufs[1])[arr.offset * 16 : (arr.offset + len(arr)) * 16]
    views = np.frombuffer(raw, dtype=np.int32).reshape(-1, 4)  # length, then inline bytes or
    # (prefix, buffer index, offset)
    data = [memoryview(b) for b in bufs[2:]]
    valid = [True] * len(arr) if arr.null_count == 0 else arr.is_valid().to_pylist()
    out = []
    for i, (n, _, buf, at) in enumerate(views.tolist()):
        if not valid[i] or n == 0:
            out.append(raw[0:0])
        elif n <= 12:
            out.append(raw[i * 16 + 4 : i * 16 + 4 + n])
        else:
            out.append(data[buf][at : at + n])
    return out


def _sha256_hex(canon: pl.Series) -> pl.Series:
    """The sha256 (hex) of each string's UTF-8 bytes (null: of ""), hashed where polars holds
    them: no Python string is built, and the column is not copied."""
    return pl.Series(
        "exact_hash", [hashlib.sha256(b).hexdigest() for b in _string_bytes(canon)], dtype=pl.Utf8
    )


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
