"""Convert: every parsed run → mini-swe-agent v1 messages and one WORK row (``pipeline/convert/``)."""

from __future__ import annotations

from collections import Counter
from typing import Any, ClassVar, cast

import polars as pl
import pyarrow as pa

from pipeline.core.rows import dataset_of, work_row
from pipeline.stages.base import RunStep
from pipeline.stages.parse import Parsed
from schemas.run import WORK, empty


class Convert(RunStep[Parsed, pl.DataFrame]):
    name = "convert"
    reasons: ClassVar[tuple[str, ...]] = (
        "unknown_tool",
        "bad_tool_args",
        "bad_step",
        "empty_command",
        "no_turns",
        "fence_in_command",
        "interactive_input",
        "undo_edit",
        "failed_create",
        "sweagent_window",
        "sweagent_search_overflow",
        "unverifiable_listing",
        "unverifiable_search",
        "apply_patch_format",
        "apply_patch_failed",
        "too_deep",
        "crash",
    )
    namespaces = ("dialect_drops", "dialect_turns")

    def one(self, item: Parsed, counters: Counter[str]) -> dict[str, Any]:
        from pipeline.convert import convert_episode

        conv = convert_episode(item.episode, step_limit=self.ctx.config.limits.step_limit)
        counters.update(conv.counters)
        counters[f"dialect_turns/{item.episode.meta.dialect}"] += len(conv.commands)
        return work_row(item.raw, item.episode, conv)

    def collect(self, kept: list[Any]) -> pl.DataFrame:
        if not kept:
            return empty(WORK)
        # column by column through Arrow: twice as fast as polars reading a list of row dicts
        try:
            table = pa.Table.from_arrays(
                [pa.array([row[f.name] for row in kept], type=f.type) for f in WORK], schema=WORK
            )
        except (pa.ArrowException, OverflowError, TypeError, ValueError):
            # a value Arrow will not take as it is: polars' own conversion decides (and says why)
            return pl.DataFrame(kept, schema=empty(WORK).schema)
        return cast(pl.DataFrame, pl.from_arrow(table))

    def where(self, item: Parsed) -> tuple[str, int | None, str]:
        return item.raw.source_uid, item.raw.epoch, dataset_of(item.raw)

    def on_drop(self, item: Parsed, reason: str, counters: Counter[str]) -> None:
        counters[f"dialect_drops/{item.episode.meta.dialect}/{self.name}/{reason}"] += 1
