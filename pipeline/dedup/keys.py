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

import numpy as np
import numpy.typing as npt
import polars as pl

from pipeline.config import DedupParams
from pipeline.dedup.minhash import signatures

# mini-swe-agent's action regex: the command is the body of the one ```bash fence.
BASH_FENCE = r"```bash\s*\n(?s:(.*?))\n```"

# Token hashes come from polars' hash, which is only stable within one polars version; a stored
# signature must be recomputed (not compared) when this scheme string differs.
SIGNATURE_SCHEME = f"affine32-fmix32/word-shingles/polars-{pl.__version__}/v1"

_TOKEN_SEED = 0x5EED_D0D0
_SHINGLE_MUL = np.uint64(0x9E3779B97F4A7C15)  # odd: the rolling combine stays a bijection per slot

# Masks, applied in this order to the joined action stream (one regex pass each).
_TEMP = r"/(?:var/)?tmp/[\w.\-]+|\btmp[\w]{4,}"
_UUID = r"(?i)\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"
# hex ids and plain numbers alike: a word of hex digits holding at least one decimal digit
_HEXNUM = r"(?i)\b[0-9a-f]*[0-9][0-9a-f]*\b"
_TOKEN = r"\w+|[^\w\s]+"


def commands_from_messages(messages: pl.Expr) -> pl.Expr:
    """The bash command of every assistant message (published-schema runs have no ``commands``)."""
    return messages.list.eval(
        pl.element().filter(pl.element().struct.field("role") == "assistant")
        .struct.field("content").str.extract(BASH_FENCE, 1).drop_nulls()
    )


def action_stream(commands: pl.Expr) -> pl.Expr:
    """The normalised action text of a run (one string per run)."""
    return (
        commands.list.join("\n")
        .str.replace_all("/testbed/", "", literal=True)
        .str.replace_all("/testbed", ".", literal=True)
        .str.replace_all(_TEMP, " TMP ")
        .str.replace_all(_UUID, " HEX ")
        .str.replace_all(_HEXNUM, " NUM ")
    )


def shingle_hashes(streams: pl.Series, shingle: int) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.int64]]:
    """32-bit hashes of the word ``shingle``-grams of every stream, flat, with per-run offsets.

    A run with fewer tokens than ``shingle`` contributes one shingle of all its tokens (so a short
    run still has a signature); a run with no token contributes none.
    """
    toks = streams.str.extract_all(_TOKEN)
    counts = toks.list.len().fill_null(0).to_numpy().astype(np.int64)
    flat = toks.explode().drop_nulls()
    th = flat.hash(seed=_TOKEN_SEED).to_numpy()
    n = th.shape[0]
    tok_off = np.zeros(counts.shape[0] + 1, dtype=np.int64)
    np.cumsum(counts, out=tok_off[1:])
    # Rolling combine over the flat token array: g[i] = sum_k th[i+k] * M^k (mod 2^64).
    w = shingle
    # Tokens past the end of their own run never join a shingle (masked out of the sum).
    tok_end = np.repeat(tok_off[1:], counts)
    idx = np.arange(n, dtype=np.int64)
    g = th.copy()
    for k in range(1, w):
        mul = np.uint64(pow(int(_SHINGLE_MUL), k, 1 << 64))
        inside = idx[: n - k] + k < tok_end[: n - k]
        g[: n - k] += np.where(inside, th[k:] * mul, np.uint64(0))
    # Shingle starts: i with i + w <= end of its run; a short run keeps its first position,
    # whose masked sum then covers exactly its own tokens.
    n_sh = np.where(counts >= w, counts - w + 1, np.minimum(counts, 1))
    sh_off = np.zeros_like(tok_off)
    np.cumsum(n_sh, out=sh_off[1:])
    run_of = np.repeat(np.arange(counts.shape[0]), n_sh)
    pos = np.arange(sh_off[-1], dtype=np.int64) - sh_off[:-1][run_of] + tok_off[:-1][run_of]
    vals = g[pos]
    folded = ((vals >> np.uint64(32)) ^ vals).astype(np.uint32)
    return folded, sh_off


def exact_hashes(messages: pl.Series) -> pl.Series:
    """sha256 of the canonical non-system messages: ``role \\x1f len \\x1f content`` per message."""
    role = pl.element().struct.field("role")
    content = pl.element().struct.field("content").fill_null("")
    canon = messages.to_frame("m").select(
        pl.col("m").list.eval(
            pl.concat_str([role, content.str.len_bytes().cast(pl.Utf8), content], separator="\x1f")
            .filter(role != "system")
        ).list.join("\x1e")
    ).to_series()
    return pl.Series(
        "exact_hash",
        [hashlib.sha256(s.encode()).hexdigest() for s in canon.fill_null("").to_list()],
        dtype=pl.Utf8,
    )


def add_dedup_keys(batch: pl.DataFrame, params: DedupParams) -> pl.DataFrame:
    """``batch`` plus ``exact_hash`` (Utf8) and ``minhash`` (List[UInt32], ``params.num_perm``)."""
    if "commands" in batch.columns:
        cmds = batch.get_column("commands")
    else:
        cmds = batch.select(commands_from_messages(pl.col("messages")).alias("commands")).to_series()
    streams = cmds.to_frame("c").select(action_stream(pl.col("c"))).to_series()
    hashes, offsets = shingle_hashes(streams, params.shingle)
    sig = signatures(hashes, offsets, params.num_perm, params.seed)
    minhash = pl.Series("minhash", sig.ravel()).reshape((batch.height, params.num_perm)).arr.to_list()
    return batch.with_columns(exact_hashes(batch.get_column("messages")), minhash.alias("minhash"))
