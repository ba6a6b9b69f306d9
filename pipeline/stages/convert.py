"""Convert: every parsed run → its converted turns (``pipeline/convert/``), for the verify step."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from itertools import chain
from typing import TYPE_CHECKING, Any, ClassVar, cast

import numpy as np
import polars as pl
import pyarrow as pa

from pipeline.convert.render import message_roles, render_contents
from pipeline.stages.base import RunStep, StageOutput, paused_gc
from pipeline.stages.parse import Parsed
from pipeline.stages.rows import dataset_of, work_row
from schemas.run import WORK, empty, polars_schema

if TYPE_CHECKING:
    from pipeline.convert import Converted


@dataclass(slots=True)
class Converting:
    """A converted run on its way to the verify step, with the record it is checked against."""

    parsed: Parsed
    conv: Converted
    row: dict[str, Any]  # its WORK row, ``messages`` only their contents (``work_frame``)


class ConvertedBatch(list[Converting]):
    """A batch's converted runs, in order, and their WORK frame (row ``i`` is run ``i``): the
    verify step keeps the frame's rows of the runs it passes."""

    def __init__(self, items: list[Converting], frame: pl.DataFrame) -> None:
        super().__init__(items)
        self.frame = frame


class Convert(RunStep[Parsed, list[Converting]]):
    name = "convert"
    reasons: ClassVar[tuple[str, ...]] = (
        "unknown_tool",
        "bad_tool_args",
        "bad_step",
        "empty_command",
        "no_turns",
        "no_actions",
        "fence_in_command",
        "interactive_input",
        "undo_edit",
        "failed_create",
        "sweagent_window",
        "sweagent_search_overflow",
        "unverifiable_listing",
        "unverifiable_search",
        "unverifiable_view",
        "clipped_view",
        "apply_patch_format",
        "apply_patch_failed",
        "subagent_effect",
        "unverifiable_edit",
        "background_process",
        "timeout_output_unknown",
    )
    namespaces = ("dialect_drops", "dialect_turns")

    def process(self, batch: list[Parsed]) -> StageOutput[list[Converting]]:
        # the collector stays paused until the batch's rows are in the frame and freed: resumed
        # before the frame is built (as the base does), it scans every message dict of the batch
        # at least once more before they are dropped
        with paused_gc():
            return super().process(batch)

    def one(self, item: Parsed, counters: Counter[str]) -> Converting:
        from pipeline.convert import convert_turns

        conv = convert_turns(item.episode, step_limit=self.ctx.config.limits.step_limit)
        counters.update(conv.counters)
        counters[f"dialect_turns/{item.episode.meta.dialect}"] += len(conv.commands)
        row = work_row(item.raw, item.episode, conv)
        row["messages"] = render_contents(*conv.rendering())
        return Converting(item, conv, row)

    def collect(self, kept: list[Any]) -> ConvertedBatch:
        frame = work_frame([item.row for item in kept])
        for item in kept:
            item.row = {}  # its values are in the frame now
        return ConvertedBatch(kept, frame)

    def where(self, item: Parsed) -> tuple[str, int | None, str]:
        return item.raw.source_uid, item.raw.epoch, dataset_of(item.raw)

    def on_drop(self, item: Parsed, reason: str, counters: Counter[str]) -> None:
        counters[f"dialect_drops/{item.episode.meta.dialect}/{self.name}/{reason}"] += 1


def work_frame(kept: list[dict[str, Any]]) -> pl.DataFrame:
    """The WORK frame of converted rows whose ``messages`` are only their contents (their roles
    follow from the turn count, ``message_roles``)."""
    if not kept:
        return empty(WORK)
    try:
        return _frame(kept)
    except Exception:  # a value the fast path will not take: the plain conversion decides
        pass
    kept = [{**row, "messages": _messages(row)} for row in kept]
    # column by column through Arrow: twice as fast as polars reading a list of row dicts
    try:
        table = pa.Table.from_arrays(
            [pa.array([row[f.name] for row in kept], type=f.type) for f in WORK], schema=WORK
        )
    except (pa.ArrowException, OverflowError, TypeError, ValueError):
        # a value Arrow will not take as it is: polars' own conversion decides (and says why)
        return pl.DataFrame(kept, schema=empty(WORK).schema)
    return cast(pl.DataFrame, pl.from_arrow(table))


def _messages(row: dict[str, Any]) -> list[dict[str, str]]:
    """A kept row's messages as ``render_messages`` gives them (from their contents)."""
    roles = message_roles(len(row["commands"]))
    return [{"role": role, "content": text} for role, text in zip(roles, row["messages"], strict=True)]


# The kept rows as the WORK frame, built without pa.array over Python objects (which imports
# pandas, ~0.6 CPU-s per worker, and is slower than polars at copying strings): every string goes
# through polars once, and the nested columns are put together from those strings and their
# offsets as Arrow views, which polars takes back without a copy.
_LIST_OF_STRINGS = ("commands", "outputs")


def _strings(values: list[str]) -> pa.Array:
    """``values`` as an Arrow string_view array (polars' own buffers, not copied)."""
    return pl.Series(values, dtype=pl.String).to_arrow(compat_level=pl.CompatLevel.newest())


def _offsets(lists: list[list[Any]]) -> pa.Array:
    ends = np.zeros(len(lists) + 1, dtype=np.int64)
    np.cumsum([len(x) for x in lists], out=ends[1:])
    return pa.Array.from_buffers(pa.int64(), len(ends), [None, pa.py_buffer(ends)])


def _frame(kept: list[dict[str, Any]]) -> pl.DataFrame:
    columns: list[pl.Series] = []
    for name, dtype in polars_schema(WORK).items():
        values = [row[name] for row in kept]
        if name == "messages":  # each row's contents; their roles from its turn count
            roles = chain.from_iterable(message_roles(len(row["commands"])) for row in kept)
            inner = pa.StructArray.from_arrays(
                [_strings(list(roles)), _strings(list(chain.from_iterable(values)))],
                names=["role", "content"],
            )
        elif name in _LIST_OF_STRINGS:
            inner = _strings(list(chain.from_iterable(values)))
        elif name == "returncodes":
            # one Series for all runs' codes, not one per run (polars builds a list column row by row)
            flat = list(chain.from_iterable(values))
            inner = pl.Series(flat, dtype=pl.Int32).to_arrow()
        else:
            columns.append(pl.Series(name, values, dtype=dtype))
            continue
        nested = cast(pl.Series, pl.from_arrow(pa.LargeListArray.from_arrays(_offsets(values), inner)))
        columns.append(nested.alias(name))
    frame = pl.DataFrame(columns)
    if frame.schema != polars_schema(WORK):
        raise TypeError(f"convert: built {frame.schema}, not the WORK schema")
    return frame
