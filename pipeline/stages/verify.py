"""Verify: every converted run checked against its own record, fail-closed (``pipeline/verify/``).

A run that breaks a rule is dropped as ``verify/<rule>`` and never reaches the later steps; a
kept run keeps its row of the WORK frame convert built for the batch.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, ClassVar

import polars as pl

from pipeline.core.episode import PipelineDrop
from pipeline.stages.base import RunStep, StageOutput, paused_gc
from pipeline.stages.convert import ConvertedBatch, Converting, work_frame
from pipeline.stages.rows import dataset_of
from pipeline.verify import REASONS, verify
from pipeline.verify.decoration import decoration_suspects
from schemas.run import WORK, empty


class Verify(RunStep[Converting, pl.DataFrame]):
    name = "verify"
    reasons: ClassVar[tuple[str, ...]] = REASONS
    namespaces = ("dialect_drops",)
    _suspects: list[set[int]]
    _batch: dict[int, int]
    _frame: pl.DataFrame

    def process(self, batch: list[Converting]) -> StageOutput[pl.DataFrame]:
        # convert built the batch's frame (row i is run i): the runs that pass keep their rows
        self._frame = (
            batch.frame if isinstance(batch, ConvertedBatch) else work_frame([item.row for item in batch])
        )
        # which outputs may hold harness decoration: one search of the batch's outputs (polars'
        # regex engine), so the per-pattern checks run only on those
        self._suspects = decoration_suspects([item.conv.outputs for item in batch])
        self._batch = {id(item): i for i, item in enumerate(batch)}
        # the collector stays paused until the batch's rows are in the frame and freed: resumed
        # before the frame is built, it scans every message of the batch at least once more
        with paused_gc():
            return super().process(batch)

    def one(self, item: Converting, counters: Counter[str]) -> int:
        i = self._batch[id(item)]
        violation = verify(item.parsed.episode, item.conv, suspects=self._suspects[i])
        if violation is not None:
            raise PipelineDrop(self.name, violation.rule, violation.detail)
        return i

    def collect(self, kept: list[Any]) -> pl.DataFrame:
        if not kept:
            return empty(WORK)
        return self._frame if len(kept) == self._frame.height else self._frame[kept]

    def where(self, item: Converting) -> tuple[str, int | None, str]:
        raw = item.parsed.raw
        return raw.source_uid, raw.epoch, dataset_of(raw)

    def on_drop(self, item: Converting, reason: str, counters: Counter[str]) -> None:
        counters[f"dialect_drops/{item.parsed.episode.meta.dialect}/{self.name}/{reason}"] += 1
