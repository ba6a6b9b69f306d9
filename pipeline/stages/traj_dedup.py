"""Trajectory-level dedup (global, in the driver): exact and MinHash near-duplicates.

Candidates (this epoch's runs that passed every per-shard stage, with ``exact_hash`` and
``minhash`` from :func:`pipeline.dedup.keys.add_dedup_keys`) are clustered together with the held
runs (already published or in the catalog). Edges are (a) equal ``exact_hash`` and (b) an LSH
candidate pair whose estimated Jaccard is >= ``params.threshold``; clusters come from union-find.
Each cluster keeps one representative by a total order: held beats new, then
``resolved == "resolved"``, then earliest epoch, then lowest ``source_uid``. Held runs are never
dropped, so a new epoch can never displace a published run. Every other candidate in a cluster
is dropped as ``traj_dedup/exact`` (same messages as the kept run) or ``traj_dedup/near``.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import numpy.typing as npt
import polars as pl

from pipeline.core.config import DedupParams
from pipeline.dedup.lsh import candidate_pairs, union_find, verify
from pipeline.stages.base import Stage, StageOutput, drops_from

STAGE = "traj_dedup"


class TrajDedup(Stage):
    """The global step: the new runs' dedup keys (every unit's kept runs, sorted by
    ``source_uid``) against ``ctx.held``, the keys of every run already published or in the catalog.
    ``duplicate_uid`` (a uid already taken) is recorded under this stage by the driver, which
    decides it before the step, as it places each unit's rows."""

    name = "traj_dedup"
    reasons = ("exact", "near", "duplicate_uid")
    is_global = True
    corpus_level = True

    def process(self, batch: pl.DataFrame) -> StageOutput[pl.DataFrame]:
        held = self.ctx.held if self.ctx.held is not None else pl.DataFrame()
        return traj_dedup(batch, held, self.ctx.config.dedup)


def signature_matrix(minhash: pl.Series, num_perm: int) -> npt.NDArray[np.uint32]:
    """The ``minhash`` list column as an (n, num_perm) uint32 matrix."""
    lens = minhash.list.len().fill_null(0)
    if minhash.len() and not (lens == num_perm).all():
        bad = int((lens != num_perm).sum())
        raise ValueError(f"{bad} minhash value(s) do not have {num_perm} slots")
    flat = minhash.explode().to_numpy()
    return np.ascontiguousarray(flat, dtype=np.uint32).reshape(minhash.len(), num_perm)


def _order_frame(frame: pl.DataFrame, held: bool) -> pl.DataFrame:
    """The representative sort keys of ``frame`` (missing columns count as worst)."""
    cols = frame.columns
    return frame.select(
        pl.lit(not held).alias("is_new"),
        (pl.col("resolved").fill_null("") != "resolved" if "resolved" in cols else pl.lit(True)).alias(
            "unresolved"
        ),
        (
            pl.col("epoch").cast(pl.Int64).fill_null(2**62) if "epoch" in cols else pl.lit(2**62, pl.Int64)
        ).alias("epoch"),
        pl.col("source_uid").cast(pl.Utf8),
        pl.col("exact_hash").cast(pl.Utf8).fill_null(""),
    )


def traj_dedup(
    candidates: pl.DataFrame, held: pl.DataFrame, params: DedupParams
) -> StageOutput[pl.DataFrame]:
    """Drop candidates that duplicate a held run or a better candidate; see the module doc."""
    if held.height == 0:
        held = pl.DataFrame(
            schema={"source_uid": pl.Utf8, "exact_hash": pl.Utf8, "minhash": pl.List(pl.UInt32)}
        )
    nh, nc = held.height, candidates.height
    n = nh + nc
    if nc == 0:
        return StageOutput(candidates, drops_from(candidates, STAGE, "exact"), Counter())
    nodes = pl.concat([_order_frame(held, True), _order_frame(candidates, False)], how="vertical")
    nodes = nodes.with_row_index("pos").with_columns(pl.col("pos").cast(pl.Int64))
    rank = np.empty(n, dtype=np.int64)
    order = nodes.sort(["is_new", "unresolved", "epoch", "source_uid", "pos"]).get_column("pos").to_numpy()
    rank[order] = np.arange(n)
    nodes = nodes.with_columns(pl.Series("rank", rank))

    # Exact edges: every member of an exact_hash group to the group's best-ranked member.
    leader = nodes.group_by("exact_hash").agg(pl.col("pos").sort_by("rank").first().alias("lead"))
    nodes = nodes.join(leader, on="exact_hash", how="left", maintain_order="left")
    lead = nodes.get_column("lead").to_numpy().astype(np.int64)
    pos = np.arange(n, dtype=np.int64)
    exact_edges = np.stack([pos[lead != pos], lead[lead != pos]], axis=1)

    # Near edges among exact-group leaders only (duplicates share the leader's signature);
    # held leaders are compared with new ones, never with each other.
    sig = np.concatenate(
        [
            signature_matrix(held.get_column("minhash"), params.num_perm),
            signature_matrix(candidates.get_column("minhash"), params.num_perm),
        ]
    )
    leaders = np.flatnonzero(lead == pos)
    probe = leaders >= nh
    pairs = candidate_pairs(sig[leaders], params.bands, params.rows, probe)
    near, _ = verify(sig[leaders], pairs, params.threshold)
    near_edges = leaders[near] if near.size else np.zeros((0, 2), dtype=np.int64)

    label = union_find(n, np.concatenate([exact_edges, near_edges]))
    # Representative of each cluster: its best-ranked member.
    best_rank = np.full(n, n, dtype=np.int64)
    np.minimum.at(best_rank, label, rank)
    rep = order[best_rank[label]]

    cand = np.arange(nh, n)
    rep_c = rep[cand]
    drop = rep_c != cand
    hashes = nodes.get_column("exact_hash").to_numpy()
    is_exact = hashes[cand] == hashes[rep_c]
    jac = np.count_nonzero(sig[cand] == sig[rep_c], axis=1) / params.num_perm
    jac = np.where(is_exact, 1.0, jac)
    uids = nodes.get_column("source_uid").to_numpy()
    reason = np.where(is_exact, "exact", "near")
    detail = np.array(
        [f"kept={u} jaccard={j:.3f}" for u, j in zip(uids[rep_c[drop]], jac[drop], strict=True)], dtype=object
    )
    gone = candidates.filter(pl.Series(drop)).with_columns(
        pl.Series("__reason", reason[drop], dtype=pl.Utf8),
        pl.Series("__detail", detail, dtype=pl.Utf8),
    )
    dropped = drops_from(gone, STAGE, pl.col("__reason"), pl.col("__detail"))
    counters: Counter[str] = Counter()
    for r in ("exact", "near"):
        k = int(np.count_nonzero(drop & (reason == r)))
        if k:
            counters[f"{STAGE}/{r}"] = k
    return StageOutput(candidates.filter(pl.Series(~drop)), dropped, counters)
