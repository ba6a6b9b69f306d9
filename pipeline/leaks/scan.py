"""One compiled pass over a batch's run texts for the benchmark-leak detectors (numba).

Per run, the bytes of task, actions and outputs (each part's lines in order, as in
:class:`pipeline.leaks.benchmark` where a run's text is ``task + "\\n" + actions + "\\n" + outputs``)
are walked once. :func:`scan_batch` reads them from the batch's list columns as they are (the end of
each message, command or output ends a line, as the joining line break would), so the outputs are
never joined and copied into one text per run first:

* **statement n-grams**: each word token (:mod:`pipeline.leaks.ngrams`) is hashed and rolled into
  the hash of the run's last ``n`` tokens, which is probed in the n-gram bitmap and, when its bit is
  set (~1%), checked exactly against the sorted n-gram hashes. Hits are (run, n-gram).
* **candidate lines** for the line rules, so the regex work downstream sees a few lines, not all:
  ``ID_LINE`` lines hold ``__`` (every benchmark id does); ``GOLD_LINE`` lines (every line of the
  actions, the ``+`` lines of task and outputs) can normalise to a gold patch line: each maximal
  ASCII ``[A-Za-z0-9_]`` run of a normalised gold line is also a maximal run of any raw line
  normalising to it (compared case-insensitively, as tokens) (normalising only cuts a prefix ending in ``:``/``-``/tab/space/``+``/``-``/a
  quote, a suffix starting with a quote, and collapses whitespace, none of which holds a word byte), so
  the raw line's last run is also the gold line's last run. A line is a candidate when one of its runs
  is a gold line's key run (its longest) and the pair (key run, the line's last run) is that of a gold
  line (``pair_set``: one key run alone let half of all action lines through), or (when some gold line
  has no such run) when >= 12 bytes follow its last run. ``PLUS_LINE`` marks the ``+`` lines of task
  and outputs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np
import numpy.typing as npt
import polars as pl
import pyarrow as pa

from pipeline.dedup.hashing import MIN_DISTINCTIVE_CHARS
from pipeline.leaks.ngrams import (
    _BASIS,
    _S8,
    GRAM_BASE,
    LOWER,
    U64,
    _bloom_has,
    _finish,
    _mix,
    _set_has,
    _word_char,
    gram_power,
    pair_hash,
    shift_of,
)
from pipeline.text.bytes import list_buffers, utf8_buffers

TASK, ACTIONS, OUTPUTS = 0, 1, 2  # parts of a run's text, in the order they are concatenated
PARTS = ("task", "actions", "outputs")
# The scan reads four sources per run, in order: the task, the assistant's messages and the commands
# (the actions: ``run_texts`` joins them), the outputs; each a list of texts per run.
SOURCE_PART = np.array([TASK, ACTIONS, ACTIONS, OUTPUTS], dtype=np.int64)
GOLD_LINE, PLUS_LINE, ID_LINE = 1, 2, 4  # candidate line flags
NEVER = np.int64(1) << np.int64(62)
# Bloom filter sizes (log2 of 64-bit words): the n-grams (~250k, probed per token) in 512 kB, ~1.5% false
# positives (1 MB: ~0.4%, but a probe per token out of the per-core cache cost ~10% more of the scan), the
# gold lines' key runs (~10k, probed per token of an action line) in 128 kB, ~0.5%
STMT_WORDS, KEY_WORDS = 16, 14
_RING = 16  # tokens kept for the rolling n-gram hash (n <= _RING, a power of two)
_RMASK = _RING - 1
_KEYS = 16  # key runs kept per line for the pair check; a line with more is a candidate (4: 1.5x the lines)
# byte classes: a lowercased word byte (>= 48), or one of these
_NL, _SPECIAL, _OTHER = 10, 1, 0
_CLS = LOWER.copy()
_CLS[10] = _NL
_CLS[0xE2] = _CLS[0xC4] = _SPECIAL  # lead bytes of KELVIN SIGN and DOTTED I
_CLS.setflags(write=False)


@dataclass
class ScanIndex:
    """What the scan probes: the statement n-grams (bitmap, exact set) and the gold lines' key runs."""

    n: int  # n-gram length (<= 16)
    stmt_bloom: U64  # blocked Bloom filter of the statement n-gram hashes (ngrams.bloom)
    stmt_set: U64  # the same hashes, exactly (ngrams.hash_set)
    key_bloom: U64  # blocked Bloom filter of the gold lines' key runs (token hashes)
    key_set: U64  # the same, exactly
    pair_set: U64  # pair_hash(key run, last run) of every gold line holding a run (ngrams.hash_set)
    tail_min: int  # a line with >= this many bytes after its last run is a gold candidate (NEVER: none)


@numba.njit(cache=True, nogil=True, boundscheck=False)
def _scan_part(
    data: npt.NDArray[np.uint8],
    off: npt.NDArray[np.int64],
    e: int,
    doc: int,
    src: int,
    part: int,
    n: int,
    bn: np.uint64,
    sbloom: U64,
    sset: U64,
    kbloom: U64,
    kset: U64,
    pset: U64,
    shifts: U64,
    tail_min: int,
    ring: U64,
    kh: U64,
    st: npt.NDArray[np.int64],
    hit_doc: npt.NDArray[np.uint32],
    hit_g: U64,
    ln: npt.NDArray[np.int64],
) -> None:  # pragma: no cover - compiled
    """Scan text ``e`` of ``data``/``off`` (one text of source ``src``, part ``part`` of run ``doc``);
    ``st`` = [tokens of the run so far, hits, lines]; ``ring`` holds the last tokens and, at
    ``ring[_RING]``, the rolling hash of the last ``n``.

    Over ASCII, tokens are exactly the ``[A-Za-z0-9_]`` runs, so a token's hash (lowercased bytes) is
    also the run's key; a line of the gold rules holding a non-ASCII word character (KELVIN SIGN,
    DOTTED I: tokens that are no runs) is kept as a candidate."""
    run, n_hits, n_lines = st[0], st[1], st[2]
    g = ring[_RING]
    i, end = off[e], off[e + 1]
    start = i
    plus = i < end and data[i] == 43 and not (i + 2 < end and data[i + 1] == 43 and data[i + 2] == 43)
    want_gold = part == ACTIONS or plus
    key_hit = False  # the line is a candidate by its runs
    n_keys = 0  # key runs of the line (the first _KEYS in ``kh``)
    last_t = np.uint64(0)  # the line's last token
    tok_end = start  # end of the line's last token
    uu = False
    prev_us = False
    h, w, k = _BASIS, np.uint64(0), 0
    in_tok = False
    while True:
        c = _CLS[data[i]] if i < end else _NL
        i += 1
        stop = False
        if c == _SPECIAL:  # the first byte of KELVIN SIGN or DOTTED I, maybe: a word character
            c, step, stop = _word_char(data, i - 1, end)
            i += step - 1
            key_hit = key_hit or (want_gold and c != 0)  # a token that is no run: keep the line
        if c >= 48:  # a word byte (lowercased): the hot path, the token's bytes read in one inner loop
            in_tok = True
            while True:
                w = (w << _S8) | np.uint64(c)
                k += 1
                if k == 8:
                    h, w, k = _mix(h, w), np.uint64(0), 0
                if c == 95:
                    uu = uu or prev_us
                    prev_us = True
                else:
                    prev_us = False
                if stop or i >= end:
                    break
                nxt = _CLS[data[i]]
                if nxt < 48:  # not read: the outer loop reads it again (a special byte, the token's end)
                    break
                c = nxt
                i += 1
            if not stop:
                continue
        else:
            prev_us = False
        if in_tok:  # the token ended
            t = _finish(h, w)
            h, w, k = _BASIS, np.uint64(0), 0
            in_tok = False
            tok_end = i if stop else i - 1
            last_t = t
            g = g * GRAM_BASE + t  # roll the n-gram hash: shift t in, the token n back out
            if run >= n:
                g -= ring[(run - n) & _RMASK] * bn
            ring[run & _RMASK] = t
            run += 1
            if run >= n and _bloom_has(sbloom, g, shifts[0]) and _set_has(sset, g, shifts[1]):
                if n_hits < hit_doc.shape[0]:
                    hit_doc[n_hits] = doc
                    hit_g[n_hits] = g
                n_hits += 1
            if (
                want_gold
                and not key_hit
                and _bloom_has(kbloom, t, shifts[2])
                and _set_has(kset, t, shifts[3])
            ):
                if n_keys < _KEYS:
                    kh[n_keys] = t
                    n_keys += 1
                else:
                    key_hit = True
        if c != _NL:
            while i < end and _CLS[data[i]] == _OTHER:  # the separators that follow change nothing
                i += 1
            continue
        # the line ended before byte i - 1 (its line break, or the end of the part)
        stop_at = i - 1
        flag = 0
        long = want_gold and stop_at - start >= MIN_DISTINCTIVE_CHARS
        if long and not key_hit:
            for j in range(n_keys):  # a gold line's key run and last run: the line's last run too
                if _set_has(pset, pair_hash(kh[j], last_t), shifts[4]):
                    key_hit = True
                    break
        if long and (key_hit or stop_at - tok_end >= tail_min):
            flag = GOLD_LINE | (PLUS_LINE if plus and part != ACTIONS else 0)
        if uu:
            flag |= ID_LINE
        if flag:
            if n_lines < ln.shape[0]:
                ln[n_lines, 0] = doc
                ln[n_lines, 1] = part
                ln[n_lines, 2] = start
                ln[n_lines, 3] = stop_at
                ln[n_lines, 4] = flag
                ln[n_lines, 5] = src
            n_lines += 1
        if i > end:
            break
        start = i
        plus = i < end and data[i] == 43 and not (i + 2 < end and data[i + 1] == 43 and data[i + 2] == 43)
        want_gold = part == ACTIONS or plus
        key_hit = False
        n_keys = 0
        tok_end = start
        uu = False
    st[0], st[1], st[2] = run, n_hits, n_lines
    ring[_RING] = g


@numba.njit(cache=True, nogil=True, boundscheck=False)
def _scan_source(
    data: npt.NDArray[np.uint8],
    voff: npt.NDArray[np.int64],
    doff: npt.NDArray[np.int64],
    doc: int,
    src: int,
    n: int,
    bn: np.uint64,
    sbloom: U64,
    sset: U64,
    kbloom: U64,
    kset: U64,
    pset: U64,
    shifts: U64,
    tail_min: int,
    ring: U64,
    kh: U64,
    st: npt.NDArray[np.int64],
    hit_doc: npt.NDArray[np.uint32],
    hit_g: U64,
    ln: npt.NDArray[np.int64],
) -> None:  # pragma: no cover - compiled
    """Scan the texts ``doff[doc]:doff[doc + 1]`` of source ``src`` as one text joined by line breaks
    (the end of a text ends its line and a token, as a line break does)."""
    for e in range(doff[doc], doff[doc + 1]):
        _scan_part(
            data,
            voff,
            e,
            doc,
            src,
            SOURCE_PART[src],
            n,
            bn,
            sbloom,
            sset,
            kbloom,
            kset,
            pset,
            shifts,
            tail_min,
            ring,
            kh,
            st,
            hit_doc,
            hit_g,
            ln,
        )


@numba.njit(cache=True, nogil=True, boundscheck=False)
def _scan(
    d0: npt.NDArray[np.uint8],
    v0: npt.NDArray[np.int64],
    f0: npt.NDArray[np.int64],
    d1: npt.NDArray[np.uint8],
    v1: npt.NDArray[np.int64],
    f1: npt.NDArray[np.int64],
    d2: npt.NDArray[np.uint8],
    v2: npt.NDArray[np.int64],
    f2: npt.NDArray[np.int64],
    d3: npt.NDArray[np.uint8],
    v3: npt.NDArray[np.int64],
    f3: npt.NDArray[np.int64],
    n: int,
    bn: np.uint64,
    sbloom: U64,
    sset: U64,
    kbloom: U64,
    kset: U64,
    pset: U64,
    shifts: U64,
    tail_min: int,
    hit_doc: npt.NDArray[np.uint32],
    hit_g: U64,
    ln: npt.NDArray[np.int64],
) -> tuple[int, int]:  # pragma: no cover - compiled
    ring = np.zeros(_RING + 1, dtype=np.uint64)
    st = np.zeros(3, dtype=np.int64)
    kh = np.zeros(_KEYS, dtype=np.uint64)
    p = (n, bn, sbloom, sset, kbloom, kset, pset, shifts, tail_min, ring, kh, st, hit_doc, hit_g, ln)
    for doc in range(f0.shape[0] - 1):
        st[0] = 0  # n-grams never cross runs; they do cross lines and parts
        ring[_RING] = 0
        # four calls, not a loop: the sources' arrays may differ in type (read-only or not)
        _scan_source(d0, v0, f0, doc, 0, *p)
        _scan_source(d1, v1, f1, doc, 1, *p)
        _scan_source(d2, v2, f2, doc, 2, *p)
        _scan_source(d3, v3, f3, doc, 3, *p)
    return st[1], st[2]


@numba.njit(cache=True, nogil=True, boundscheck=False)
def _gather(
    data: npt.NDArray[np.uint8],
    start: npt.NDArray[np.int64],
    end: npt.NDArray[np.int64],
    out: npt.NDArray[np.uint8],
    at: npt.NDArray[np.int64],
) -> None:  # pragma: no cover - compiled
    """Copy ``data[start[j]:end[j]]`` to ``out[at[j]:]`` for each line ``j``."""
    for j in range(start.shape[0]):
        k = at[j]
        for i in range(start[j], end[j]):
            out[k] = data[i]
            k += 1


@dataclass
class ScanResult:
    stmt: pl.DataFrame  # doc (u32), g (u64): statement n-grams found, one row per occurrence
    lines: pl.DataFrame  # doc (u32), part (i8), flag (u8), x (str): candidate lines in text order per part


# One source: UTF-8 bytes, text offsets into them, and per run the range of its texts (run k holds
# texts doff[k]:doff[k + 1], read as one text joined by line breaks).
Source = tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64], npt.NDArray[np.int64]]


def _one_per_run(texts: pl.Series) -> Source:
    data, off = utf8_buffers(texts)
    return data, off, np.arange(len(off), dtype=np.int64)


_NO_TEXTS: Source = (np.zeros(0, dtype=np.uint8), np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int64))


def scan(texts: pl.DataFrame, index: ScanIndex) -> ScanResult:
    """Scan a batch's run texts (columns task, actions, outputs; null = empty) in one compiled pass."""
    runs = texts.height
    task, actions, outputs = (_one_per_run(texts.get_column(p)) for p in PARTS)
    nothing = (_NO_TEXTS[0], _NO_TEXTS[1], np.zeros(runs + 1, dtype=np.int64))
    return _scan_sources((task, actions, nothing, outputs), index)


def scan_batch(batch: pl.DataFrame, index: ScanIndex) -> ScanResult:
    """:func:`scan` of ``run_texts(batch)``, read from the batch's list columns as they are: the
    messages and outputs are never joined into one text per run (nor copied again to be read)."""
    role = pl.element().struct.field("role")
    content = pl.element().struct.field("content")
    cols = batch.select(
        task=pl.col("messages").list.eval(content.filter(role != "system")).list.first().fill_null(""),
        thoughts=pl.col("messages").list.eval(content.filter(role == "assistant")),
        commands=pl.col("commands"),
        outputs=pl.col("outputs"),
    )
    sources = (
        _one_per_run(cols.get_column("task")),
        *(list_buffers(cols.get_column(c)) for c in ("thoughts", "commands", "outputs")),
    )
    return _scan_sources(sources, index)  # type: ignore[arg-type]


def _scan_sources(sources: tuple[Source, Source, Source, Source], index: ScanIndex) -> ScanResult:
    cap_h, cap_l = 1 << 12, 1 << 14
    while True:
        hit_doc = np.empty(cap_h, dtype=np.uint32)
        hit_g = np.empty(cap_h, dtype=np.uint64)
        ln = np.empty((cap_l, 6), dtype=np.int64)
        n_hits, n_lines = _scan(
            *sources[0],
            *sources[1],
            *sources[2],
            *sources[3],
            index.n,
            gram_power(index.n),
            index.stmt_bloom,
            index.stmt_set,
            index.key_bloom,
            index.key_set,
            index.pair_set,
            np.array(
                [
                    shift_of(len(index.stmt_bloom)),
                    shift_of(len(index.stmt_set) - 1),
                    shift_of(len(index.key_bloom)),
                    shift_of(len(index.key_set) - 1),
                    shift_of(len(index.pair_set) - 1),
                ],
                dtype=np.uint64,
            ),
            index.tail_min,
            hit_doc,
            hit_g,
            ln,
        )
        if n_hits <= cap_h and n_lines <= cap_l:
            break
        cap_h, cap_l = max(cap_h, n_hits), max(cap_l, n_lines)
    stmt = pl.DataFrame(
        {"doc": hit_doc[:n_hits], "g": hit_g[:n_hits]}, schema={"doc": pl.UInt32, "g": pl.UInt64}
    )
    ln = ln[:n_lines]
    frames = [_part_lines(ln[ln[:, 1] == p], sources) for p in range(len(PARTS))]
    return ScanResult(stmt, pl.concat(frames))


def _part_lines(sel: npt.NDArray[np.int64], sources: tuple[Source, ...]) -> pl.DataFrame:
    """The candidate lines ``sel`` (rows of the scan's line table) of one part, their text gathered
    from each line's source."""
    start, end = sel[:, 2], sel[:, 3]
    off = np.zeros(len(sel) + 1, dtype=np.int64)
    np.cumsum(end - start, out=off[1:])
    out = np.empty(int(off[-1]), dtype=np.uint8)
    for src in np.unique(sel[:, 5]).tolist():
        mine = sel[:, 5] == src
        _gather(sources[src][0], start[mine], end[mine], out, off[:-1][mine])
    x = pa.LargeStringArray.from_buffers(len(sel), pa.py_buffer(off), pa.py_buffer(out))
    return pl.DataFrame(
        {
            "doc": sel[:, 0].astype(np.uint32),
            "part": sel[:, 1].astype(np.int8),
            "flag": sel[:, 4].astype(np.uint8),
            "x": pl.Series(x, dtype=pl.Utf8),
        }
    )
