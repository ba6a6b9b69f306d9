"""Parse: every raw run → one :class:`~pipeline.core.episode.Episode` (``pipeline/parsers/``)."""

from __future__ import annotations

from collections import Counter
from typing import ClassVar, NamedTuple

from pipeline.core.episode import Episode, RawRun
from pipeline.stages.base import RunStep
from pipeline.stages.rows import dataset_of


class Parsed(NamedTuple):
    raw: RawRun
    episode: Episode


class Parse(RunStep[RawRun, list[Parsed]]):
    name = "parse"
    reasons: ClassVar[tuple[str, ...]] = (
        "bad_shape",
        "bad_tool_call",
        "bad_arguments",
        "bad_json",
        "missing_field",
        "no_task",
        "no_steps",
        "unknown_kind",
        "record_too_large",
        "bad_graph",
        "split_streams",
        "terminal_interleaved",
        "elided_output",
        "timeout_output_unknown",
        "format_error_reference",
        # session transcripts (pipeline/parsers/sessions.py and its readers)
        "compacted",
        "unanswered_call",
        "background_process",
        "interactive_input",
        "unsupported_tool",
        "foreign_shell",
        "unknown_returncode",
    )
    namespaces = ("dialect_drops",)

    def one(self, item: RawRun, counters: Counter[str]) -> Parsed:
        from pipeline.parsers import parse_raw

        ep = parse_raw(item)
        counters.update(ep.counters)
        return Parsed(item, ep)

    def where(self, item: RawRun) -> tuple[str, int | None, str]:
        return item.source_uid, item.epoch, dataset_of(item)

    def on_drop(self, item: RawRun, reason: str, counters: Counter[str]) -> None:
        counters[f"dialect_drops/unparsed/{self.name}/{reason}"] += 1
