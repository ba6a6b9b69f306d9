"""Stage framework (datatrove-style): a stage is a small class with one job.

A stage is constructed once per worker with the :class:`~pipeline.context.Context` (so it can
build its indexes once) and then called on batches. A call is pure: it returns the kept rows,
the dropped rows with ``(stage, reason, detail)`` and counters; it does no I/O and knows nothing
about executors. Counters merge by addition across shards and workers.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

import polars as pl

from schemas.run import DROPS, empty

if TYPE_CHECKING:
    from pipeline.context import Context


@dataclass
class StageOutput:
    kept: pl.DataFrame
    dropped: pl.DataFrame  # DROPS schema
    counters: Counter[str] = field(default_factory=Counter)


def drops_frame(rows: list[dict[str, object]]) -> pl.DataFrame:
    """Build a DROPS-schema frame from dicts with source_uid, epoch, dataset, stage, reason, detail."""
    if not rows:
        return empty(DROPS)
    return pl.DataFrame(rows, schema=empty(DROPS).schema)


def drops_from(batch: pl.DataFrame, stage: str, reason: pl.Expr | str,
               detail: pl.Expr | str = "") -> pl.DataFrame:
    """Ledger rows for every row of ``batch`` (which must carry source_uid, epoch, dataset)."""
    r = pl.lit(reason) if isinstance(reason, str) else reason
    d = pl.lit(detail) if isinstance(detail, str) else detail
    return batch.select(
        pl.col("source_uid"),
        pl.col("epoch").cast(pl.Int32),
        pl.col("dataset"),
        pl.lit(stage).alias("stage"),
        r.cast(pl.Utf8).alias("reason"),
        d.cast(pl.Utf8).alias("detail"),
    )


class Stage:
    """Base class: subclasses set ``name`` and implement :meth:`__call__`."""

    name: ClassVar[str] = "stage"

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    def __call__(self, batch: pl.DataFrame) -> StageOutput:  # pragma: no cover - interface
        raise NotImplementedError

    def split(self, batch: pl.DataFrame, drop_mask: pl.Series, reason: pl.Series | str,
              detail: pl.Series | str = "") -> StageOutput:
        """Helper: drop the rows where ``drop_mask`` is true with per-row reason/detail."""
        tmp = batch.with_columns(
            (reason if isinstance(reason, pl.Series) else pl.Series([reason] * batch.height))
            .alias("__reason"),
            (detail if isinstance(detail, pl.Series) else pl.Series([detail] * batch.height))
            .alias("__detail"),
            drop_mask.alias("__drop"),
        )
        gone = tmp.filter(pl.col("__drop"))
        dropped = drops_from(gone, self.name, pl.col("__reason"), pl.col("__detail"))
        kept = batch.filter(~drop_mask)
        counters: Counter[str] = Counter()
        for reason_value, n in gone.group_by("__reason").len().iter_rows():
            counters[f"{self.name}/{reason_value}"] += n
        return StageOutput(kept, dropped, counters)
