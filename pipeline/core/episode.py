"""The one intermediate model: raw runs in, Episodes through, rows out.

Sources yield :class:`RawRun` (or :class:`Quarantined` for unreadable input); parsers turn a
RawRun into an :class:`Episode`; converters turn every ``ToolCall`` into a :class:`Bash`; the
renderer turns the Episode into mini-swe-agent v1 messages.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Literal, cast, get_args

# RawRun.kind: which parser reads the run (pipeline.parsers.FORMATS)
RunKind = Literal[
    "view",
    "trace",
    "swelego",
    "sweagent",
    "openhands",
    "openhands_v1",
    "swesmith",
    "miniswe",
    "claude_code",
    "codex",
    "pi",
    "kimi",
]
# the run's verdict on its task, as its source gave it
Resolved = Literal["resolved", "not resolved", "unknown"]
# why input was quarantined (docs/ARCHITECTURE.md, ledger vocabulary)
QuarantineReason = Literal[
    "bad_sha256",
    "bad_gzip",
    "chunk_too_large",
    "unreadable",  # a whole shard
    "bad_json",
    "not_object",
    "missing_field",
    "record_too_large",  # one line or row
    "unsafe_key",
    "bad_manifest_entry",  # manifest entries refused
    "unknown_format",  # trajpipe convert: not a run of a known format
]


@dataclass(slots=True)
class RawRun:
    """One record exactly as a source read it, before any interpretation."""

    source_uid: str
    origin: str  # "Affine corpus" | "SWE-Lego" | a community format name
    kind: RunKind
    epoch: int | None
    payload: dict[str, Any]
    raw_bytes: int
    resolved_hint: str | None = None  # e.g. SWE-Lego's split from the file name


def quarantine_reason_named(text: str) -> QuarantineReason:
    """The quarantine reason a reader's problem text starts with (``"bad_json: ..."``)."""
    reason = text.split(":", 1)[0]
    if reason not in get_args(QuarantineReason):
        raise ValueError(f"not a quarantine reason: {reason!r}")
    return cast(QuarantineReason, reason)


@dataclass(slots=True)
class Quarantined:
    """Bad input: counted in the ledger with where it came from, never silently lost."""

    source_uid: str
    epoch: int | None
    reason: QuarantineReason
    detail: str


@dataclass(slots=True)
class ToolCall:
    """A structured tool call as the harness recorded it (name and decoded arguments)."""

    name: str
    args: dict[str, Any]
    call_id: str | None = None


@dataclass(slots=True)
class Bash:
    """A shell command in its final form: what mini-swe-agent would run."""

    command: str


@dataclass(slots=True)
class Step:
    """One action and what it printed. ``returncode`` is None when the source did not say.

    ``timed_out``: the command never finished (OpenHands ``exit_code: -1``, SWE-agent's
    "EXECUTION TIMED OUT"); ``observation`` is then what it printed before it was killed, and the
    turn is rendered with mini-swe-agent's timeout message, which carries no return code.
    """

    thought: str
    call: ToolCall | Bash
    observation: str
    returncode: int | None = None
    timed_out: bool = False


@dataclass(slots=True)
class Task:
    instance_id: str
    repo: str
    problem_statement: str
    pool: str
    language: str
    base_commit: str | None = None
    patch: str | None = None


@dataclass(slots=True)
class Meta:
    origin: str
    harness: str
    model: str
    source_uid: str
    dialect: str
    resolved: Resolved = "unknown"
    submitted: bool = False
    fold_group: str | None = None
    epoch: int | None = None
    repo_root: str | None = None  # the root the harness used, when the parser saw it
    # the patch the record says the run submitted ("" a submit with no patch); None: the record
    # does not say. The verify step holds a submitted run's final message to it.
    submission: str | None = None


@dataclass(slots=True)
class Episode:
    task: Task
    meta: Meta
    steps: list[Step]
    # parser/converter counters (e.g. "problem_statement_fallback", "returncode_inferred")
    counters: Counter[str] = field(default_factory=Counter)


class PipelineDrop(Exception):
    """Raised by a parser or converter to drop one run with a ledger reason."""

    def __init__(self, stage: str, reason: str, detail: str = "") -> None:
        super().__init__(f"{stage}/{reason}: {detail}")
        self.stage = stage
        self.reason = reason
        self.detail = detail


class ParseError(PipelineDrop):
    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__("parse", reason, detail)


class ConvertError(PipelineDrop):
    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__("convert", reason, detail)
