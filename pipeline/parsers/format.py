"""The ``Format`` record: everything the pipeline knows about one input format, in one place.

A parser module ends with its ``FORMAT``; ``pipeline.parsers.FORMATS`` lists them (one line per
format). From that list come the parser dispatch (``RawRun.kind`` → parse function), the
content detection of ``trajpipe convert``, the harness a raw run was recorded in and the
machine (dataset name part and card sentence) of its dataset.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pipeline.core.episode import Episode, RawRun, RunKind

# harness id -> (machine slug of the dataset name, the card's Machine sentence)
Machines = Mapping[str, tuple[str, str]]


def is_message_list(x: Any) -> bool:
    return isinstance(x, list) and bool(x) and all(isinstance(m, dict) and "role" in m for m in x[:5])


def is_event_list(x: Any) -> bool:
    return (
        isinstance(x, list)
        and bool(x)
        and all(isinstance(e, dict) for e in x[:5])
        and any("action" in e or "observation" in e for e in x[:20])
        and all("role" not in e for e in x[:5])
    )


@dataclass(frozen=True)
class Format:
    """One input format."""

    kind: RunKind  # RawRun.kind: the parser's key
    parse: Callable[[RawRun], Episode]
    # the harness a run was recorded in: fixed for a file format, read from the payload for Affine
    harness: str | Callable[[dict[str, Any]], str]
    machines: Machines  # the machines of the harnesses this format's runs come from
    # `trajpipe convert`: the format's name (the runs' origin) and whether a decoded JSON value is
    # a run of it (None: not a file format users bring)
    name: str | None = None
    detect: Callable[[Any], bool] | None = None
    origin: str | None = None  # the origin of its runs read from a file, when not ``name``
    list_key: str = "messages"  # a bare JSON list of this format is the payload's ``list_key``
    sources: tuple[str, ...] = field(default=())  # corpus readers producing it (sources/*.py)
    # a JSON Lines file whose lines are the events of ONE run (an agent's session transcript):
    # whether its first decoded lines are this format's; the run's payload is ``{"events": lines}``
    session: Callable[[list[Any]], bool] | None = None

    def harness_of(self, payload: dict[str, Any]) -> str:
        return self.harness if isinstance(self.harness, str) else self.harness(payload)
