"""Quarantine: bad input (an unreadable record or shard, a refused manifest entry) leaves here.

The readers yield :class:`RawRun` for every record they could read and :class:`Quarantined`
(with its reason) for every one they could not; this first step keeps the runs and writes the
others to the ledger, so bad input is counted where it was found and never lost.
"""

from __future__ import annotations

from collections import Counter
from typing import ClassVar, get_args

import polars as pl

from pipeline.core.episode import Quarantined, QuarantineReason, RawRun
from pipeline.stages.base import StageOutput, Step, drop_row, drops_frame

SourceItem = RawRun | Quarantined


def quarantine_rows(items: list[Quarantined]) -> pl.DataFrame:
    """Ledger rows for quarantined input (no dataset: it was never parsed)."""
    return drops_frame(
        [drop_row(q.source_uid, q.epoch, "", Quarantine.name, q.reason, q.detail) for q in items]
    )


class Quarantine(Step[list[SourceItem], list[RawRun]]):
    name = "quarantine"
    reasons: ClassVar[tuple[str, ...]] = get_args(QuarantineReason)

    def process(self, batch: list[SourceItem]) -> StageOutput[list[RawRun]]:
        runs = [x for x in batch if isinstance(x, RawRun)]
        bad = [x for x in batch if isinstance(x, Quarantined)]
        return StageOutput(runs, quarantine_rows(bad), Counter())

    def drop_all(self, batch: list[SourceItem], reason: str, detail: str) -> pl.DataFrame:
        return drops_frame([drop_row(x.source_uid, x.epoch, "", self.name, reason, detail) for x in batch])
