"""The ledger: every drop and quarantine, and the numbers the card and ``audit`` render.

``stats.json`` is derived from three independent records — what the sources read (ingested
counts per unit), what was published (the run store) and what was dropped (the ledger) — so
the invariant ``ingested = published + dropped + quarantined`` is a real check, not a sum.
"""

from __future__ import annotations

from collections import Counter
from typing import NotRequired, TypedDict

import polars as pl

from pipeline.core.stages import STAGE_ORDER
from pipeline.store.records import IngestKey
from schemas.run import DROPS, empty


class InvariantError(RuntimeError):
    pass


class Block(TypedDict):
    total: int
    by_epoch: dict[str, int]
    by_dataset: dict[str, int]


class Invariant(TypedDict):
    ok: bool
    ingested: int
    published: int
    dropped: int
    quarantined: int
    datasets_off: dict[str, dict[str, int]]  # datasets whose books do not balance
    epochs_off: dict[str, dict[str, int]]


class Benchmarks(TypedDict):
    checked: bool
    tables: list[str]


class Validation(TypedDict):
    ok: bool
    datasets: int
    problems: list[str]


class Stats(TypedDict):
    """``ledger/stats.json`` (docs/ARCHITECTURE.md)."""

    ingested: Block
    converted: int
    published: Block
    dropped: Block
    quarantined: Block
    drops: dict[str, int]  # "<stage>/<reason>" -> runs
    counters: dict[str, int]
    benchmarks: Benchmarks
    invariant: Invariant
    raw_bytes: NotRequired[int]
    epochs: NotRequired[list[int]]
    validation: NotRequired[Validation]  # set once the trees are written and checked


def _by(frame: pl.DataFrame, col: str) -> dict[str, int]:
    if frame.height == 0:
        return {}
    keyed = frame.select(pl.col(col).cast(pl.Utf8).fill_null("none").alias("k"))
    return {k: int(n) for k, n in keyed.group_by("k").len().sort("k").iter_rows()}


def _block(frame: pl.DataFrame) -> Block:
    return {"total": frame.height, "by_epoch": _by(frame, "epoch"), "by_dataset": _by(frame, "dataset")}


def compute_stats(
    ingested: Counter[IngestKey],
    published: pl.DataFrame,
    drops: pl.DataFrame,
    counters: Counter[str],
    *,
    benchmarks_checked: bool,
    benchmark_tables: list[str],
) -> Stats:
    """Totals by epoch and dataset, drop counts by stage/reason, counters and the invariant.

    ``ingested`` is keyed ``(dataset, epoch)`` (dataset empty for quarantined input)."""
    q = drops.filter(pl.col("stage") == "quarantine")
    d = drops.filter(pl.col("stage") != "quarantine")
    ing_epoch: Counter[str] = Counter()
    ing_dataset: Counter[str] = Counter()
    for (ds, ep), n in ingested.items():
        ing_epoch[ep] += n
        if ds:
            ing_dataset[ds] += n
    total_in = sum(ingested.values())
    per_stage = {
        f"{s}/{r}": int(n)
        for s, r, n in drops.group_by("stage", "reason").len().sort("stage", "reason").iter_rows()
    }
    # a run the verify step refused was not converted faithfully: it is not counted as converted
    early = drops.filter(pl.col("stage").is_in(["quarantine", "parse", "convert", "verify"])).height
    ok_total = total_in == published.height + d.height + q.height
    # per dataset: quarantined input has no dataset, so it is checked in the totals only
    pub_ds, drop_ds = _by(published, "dataset"), _by(d, "dataset")
    bad = {
        ds: {"ingested": n, "published": pub_ds.get(ds, 0), "dropped": drop_ds.get(ds, 0)}
        for ds, n in ing_dataset.items()
        if n != pub_ds.get(ds, 0) + drop_ds.get(ds, 0)
    }
    q_ds = q.filter(pl.col("dataset") != "").height
    pub_ep, drop_ep, q_ep = _by(published, "epoch"), _by(d, "epoch"), _by(q, "epoch")
    bad_epochs = {
        ep: {
            "ingested": ing_epoch.get(ep, 0),
            "published": pub_ep.get(ep, 0),
            "dropped": drop_ep.get(ep, 0),
            "quarantined": q_ep.get(ep, 0),
        }
        for ep in sorted(set(ing_epoch) | set(pub_ep) | set(drop_ep) | set(q_ep))
        if ing_epoch.get(ep, 0) != pub_ep.get(ep, 0) + drop_ep.get(ep, 0) + q_ep.get(ep, 0)
    }
    return {
        "ingested": {
            "total": total_in,
            "by_epoch": dict(sorted(ing_epoch.items())),
            "by_dataset": dict(sorted(ing_dataset.items())),
        },
        "converted": total_in - early,
        "published": _block(published),
        "dropped": _block(d),
        "quarantined": _block(q),
        "drops": per_stage,
        "counters": dict(sorted(counters.items())),
        "benchmarks": {"checked": benchmarks_checked, "tables": sorted(benchmark_tables)},
        "invariant": {
            "ok": ok_total and not bad and not bad_epochs and q_ds == 0,
            "ingested": total_in,
            "published": published.height,
            "dropped": d.height,
            "quarantined": q.height,
            "datasets_off": bad,
            "epochs_off": bad_epochs,
        },
    }


def check_invariant(stats: Stats) -> None:
    inv = stats["invariant"]
    if not inv["ok"]:
        raise InvariantError(
            f"accounting broken: ingested {inv['ingested']} != published {inv['published']} + "
            f"dropped {inv['dropped']} + quarantined {inv['quarantined']} "
            f"(datasets off: {inv['datasets_off']}, epochs off: {inv['epochs_off']}); nothing was published"
        )


def sorted_drops(drops: pl.DataFrame | None) -> pl.DataFrame:
    """The ledger in a stable order (so the same input gives the same bytes)."""
    if drops is None or drops.height == 0:
        return empty(DROPS)
    order = {s: i for i, s in enumerate(STAGE_ORDER)}
    return (
        drops.with_columns(pl.col("stage").replace_strict(order, default=len(order)).alias("__o"))
        .sort("__o", "source_uid", "reason")
        .drop("__o")
    )
