"""Verify: every converted run checked against its own record, fail-closed (``pipeline/verify/``).

A run that breaks a rule is dropped as ``verify/<rule>`` and never reaches the later steps; a
kept run becomes its WORK row (messages rendered from the checked turns).
"""

from __future__ import annotations

from collections import Counter
from typing import Any, ClassVar

import polars as pl

from pipeline.convert.render import render_contents
from pipeline.core.episode import PipelineDrop
from pipeline.core.rows import dataset_of, work_row
from pipeline.stages.base import RunStep, StageOutput, paused_gc
from pipeline.stages.convert import Converting, work_frame
from pipeline.verify import REASONS, verify


class Verify(RunStep[Converting, pl.DataFrame]):
    name = "verify"
    reasons: ClassVar[tuple[str, ...]] = (*REASONS, "too_deep", "crash")
    namespaces = ("dialect_drops",)

    def process(self, batch: list[Converting]) -> StageOutput[pl.DataFrame]:
        # the collector stays paused until the batch's rows are in the frame and freed: resumed
        # before the frame is built, it scans every message of the batch at least once more
        with paused_gc():
            return super().process(batch)

    def one(self, item: Converting, counters: Counter[str]) -> dict[str, Any]:
        raw, episode = item.parsed.raw, item.parsed.episode
        violation = verify(episode, item.conv)
        if violation is not None:
            raise PipelineDrop(self.name, violation.rule, violation.detail)
        row = work_row(raw, episode, item.conv)
        row["messages"] = render_contents(*item.conv.rendering())
        return row

    def collect(self, kept: list[Any]) -> pl.DataFrame:
        return work_frame(kept)

    def where(self, item: Converting) -> tuple[str, int | None, str]:
        raw = item.parsed.raw
        return raw.source_uid, raw.epoch, dataset_of(raw)

    def on_drop(self, item: Converting, reason: str, counters: Counter[str]) -> None:
        counters[f"dialect_drops/{item.parsed.episode.meta.dialect}/{self.name}/{reason}"] += 1
