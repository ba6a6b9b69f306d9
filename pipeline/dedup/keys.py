"""Dedup keys of a batch of runs: an exact hash of the messages and a MinHash of the actions.

``exact_hash`` is the sha256 of the converted messages WITHOUT the system prompt, so the same
run re-exported under a new rollout id (or rendered with a newer system template) hashes the
same. ``minhash`` is a 128-slot signature over word shingles of the normalised action stream:
the run's commands (edit payloads live inside them as heredocs) with paths made relative to
/testbed and hex ids, numbers and temp names masked, so two exports of one run that differ only
in a temp dir or a line number still match. Observations are left out on purpose: two different
runs on the same task print mostly the same outputs (research/dedup.md §5.1).

Everything per token runs in polars/numpy; Python touches each run once (sha256 of a string).
"""

from __future__ import annotations

import hashlib
import os

import numpy as np
import numpy.typing as npt
import polars as pl

from pipeline.config import DedupParams
from pipeline.dedup.minhash import signatures

# mini-swe-agent's action regex: the command is the body of the one ```bash fence.
BASH_FENCE = r"```bash\s*\n(?s:(.*?))\n```"

# Token hashes come from polars' hash, which is only stable within one polars version; a stored
# signature must be recomputed (not compared) when this scheme string differs.
SIGNATURE_SCHEME = f"affine32-fmix32/word{{shingle}}/polars-{pl.__version__}/v2"

_TOKEN_SEED = 0x5EED_D0D0
_SHINGLE_MUL = 0x9E3779B97F4A7C15  # odd: multiplying by its powers is a bijection mod 2^64

# Masks, one regex pass each. ASCII word boundaries (?-u:\b) keep the regex engine on its fast
# DFA path (Unicode \b forces the slow one: ~10x here).
_TEMP = r"/(?:var/)?tmp/[\w.\-]+|(?-u:\b)tmp\w{4,}"
_UUID = r"(?i)(?-u:\b)[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}(?-u:\b)"
# hex ids (a word of hex digits holding at least one decimal digit) and any run of digits
# (line numbers in `sed -n '120,180p'`, counters in names)
_HEXNUM = r"(?i)(?-u:\b)[0-9a-f]*[0-9][0-9a-f]*(?-u:\b)|[0-9]+"
# Word tokens: punctuation carries little beyond the words around it and doubles the token count.
_TOKEN = r"\w+"


def commands_from_messages(messages: pl.Expr) -> pl.Expr:
    """The bash command of every assistant message (published-schema runs have no ``commands``)."""
    return messages.list.eval(
        pl.element().filter(pl.element().struct.field("role") == "assistant")
        .struct.field("content").str.extract(BASH_FENCE, 1).drop_nulls()
    )


def action_stream(commands: pl.Expr) -> pl.Expr:
    """The normalised action text of a run (one string per run).

    ``/testbed`` is removed outright: tokens are words, so ``/testbed/src/a.py`` and ``src/a.py``
    (and ``cd /testbed``'s leftover ``cd``) tokenise the same as the relative path.
    """
    return (
        commands.list.join("\n")
        .str.replace_all("/testbed", "", literal=True)
        .str.replace_all(_TEMP, " TMP ")
        .str.replace_all(_UUID, " HEX ")
        .str.replace_all(_HEXNUM, " NUM ")
    )


def token_hashes(commands: pl.Expr) -> pl.Expr:
    """Per run, the 64-bit hashes of its normalised action tokens, in order."""
    return action_stream(commands).str.extract_all(_TOKEN).list.eval(pl.element().hash(seed=_TOKEN_SEED))


def _partitioned(frame: pl.LazyFrame, height: int, exprs: list[pl.Expr]) -> pl.DataFrame:
    """Evaluate ``exprs`` over row slices in parallel (polars runs a lazy concat's inputs on its
    thread pool; one string kernel over one Series would use a single core)."""
    parts = max(1, min(os.cpu_count() or 1, height // 2000))
    step = -(-height // parts) if height else 1
    lazies = [frame.slice(i, step).select(exprs) for i in range(0, max(height, 1), step)]
    return pl.concat(lazies, how="vertical", parallel=True).collect()


def shingles_from_tokens(token_lists: pl.Series, shingle: int) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.int64]]:
    """32-bit hashes of the ``shingle``-token windows of every run, flat, with per-run offsets.

    A window is ``sum_k h[i+k] * M^k mod 2^64`` folded to 32 bits. A run with fewer tokens than
    ``shingle`` contributes one window of all its tokens (a short run still has a signature); a
    run with no token contributes none. No Python per token: numpy over the flat token array.
    """
    counts = token_lists.list.len().fill_null(0).to_numpy().astype(np.int64)
    th = token_lists.explode().drop_nulls().to_numpy().astype(np.uint64, copy=False)
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
        within = np.arange(s_idx.shape[0]) - np.repeat(np.cumsum(counts[short]) - counts[short], counts[short])
        powers = np.array([pow(_SHINGLE_MUL, k, 1 << 64) for k in range(w)], dtype=np.uint64)
        terms = th[s_idx + within] * powers[within]
        g[tok_off[:-1][short]] = np.add.reduceat(terms, np.cumsum(counts[short]) - counts[short])
        keep[tok_off[:-1][short]] = True
    vals = g[keep]
    n_sh = np.where(counts >= w, counts - w + 1, np.minimum(counts, 1))
    sh_off = np.zeros_like(tok_off)
    np.cumsum(n_sh, out=sh_off[1:])
    folded = ((vals >> np.uint64(32)) ^ vals).astype(np.uint32)
    return folded, sh_off


def shingle_hashes(streams: pl.Series, shingle: int) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.int64]]:
    """:func:`shingles_from_tokens` of already-normalised action streams."""
    toks = streams.str.extract_all(_TOKEN).list.eval(pl.element().hash(seed=_TOKEN_SEED))
    return shingles_from_tokens(toks, shingle)


def canonical_messages(messages: pl.Expr) -> pl.Expr:
    """The non-system messages as one string: ``role \\x1f len(content) \\x1f content`` joined by
    ``\\x1e`` (the byte length makes the encoding unambiguous whatever the content holds)."""
    role = pl.element().struct.field("role")
    content = pl.element().struct.field("content").fill_null("")
    return messages.list.eval(
        pl.concat_str([role, content.str.len_bytes().cast(pl.Utf8), content], separator="\x1f")
        .filter(role != "system")
    ).list.join("\x1e")


def exact_hashes(messages: pl.Series) -> pl.Series:
    """sha256 of :func:`canonical_messages` per run."""
    canon = messages.to_frame("m").select(canonical_messages(pl.col("m"))).to_series()
    return pl.Series("exact_hash", [hashlib.sha256(c.encode()).hexdigest() for c in canon.fill_null("").to_list()],
                     dtype=pl.Utf8)


def add_dedup_keys(batch: pl.DataFrame, params: DedupParams) -> pl.DataFrame:
    """``batch`` plus ``exact_hash`` (Utf8) and ``minhash`` (List[UInt32], ``params.num_perm``)."""
    cmds = pl.col("commands") if "commands" in batch.columns else commands_from_messages(pl.col("messages"))
    keys = _partitioned(batch.lazy(), batch.height, [
        token_hashes(cmds).alias("tok"),
        canonical_messages(pl.col("messages")).alias("canon"),
    ])
    hashes, offsets = shingles_from_tokens(keys.get_column("tok"), params.shingle)
    sig = signatures(hashes, offsets, params.num_perm, params.seed)
    minhash = pl.Series("minhash", sig.ravel()).reshape((batch.height, params.num_perm)).arr.to_list()
    exact = pl.Series("exact_hash", [hashlib.sha256(c.encode()).hexdigest()
                                     for c in keys.get_column("canon").fill_null("").to_list()], dtype=pl.Utf8)
    return batch.with_columns(exact, minhash.alias("minhash"))
