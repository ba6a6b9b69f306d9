"""Parsers: one module per input format, each turning a :class:`RawRun` into an :class:`Episode`.

``parse_raw`` dispatches on ``raw.kind`` and guarantees that hostile input (wrong types, missing
fields, cycles, huge strings) surfaces only as :class:`ParseError` with a short reason.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from pipeline.core.episode import Episode, ParseError, RawRun
from pipeline.parsers import (
    affine_trace,
    affine_view,
    claude_code,
    codex,
    kimi,
    miniswe,
    openhands,
    openhands_v1,
    pi,
    sweagent,
    swelego,
    swesmith,
)
from pipeline.parsers.format import Format

# Every input format, one line each. The order is `trajpipe convert`'s detection order: the
# first format whose ``detect`` accepts a decoded JSON value names it.
FORMATS: tuple[Format, ...] = (
    affine_view.FORMAT,
    affine_trace.FORMAT,
    openhands_v1.FORMAT,  # before V0 OpenHands: its events also have `action`/`observation`
    openhands.FORMAT,  # before SWE-agent: an OpenHands eval record also has a `history` list
    sweagent.FORMAT,
    swesmith.FORMAT,
    miniswe.FORMAT,
    swelego.FORMAT,
    claude_code.FORMAT,  # session transcripts: detected from a whole file's lines
    codex.FORMAT,
    pi.FORMAT,
    kimi.FORMAT,
)

FORMAT_OF: dict[str, Format] = {f.kind: f for f in FORMATS}
PARSERS: dict[str, Callable[[RawRun], Episode]] = {f.kind: f.parse for f in FORMATS}
MACHINES: dict[str, tuple[str, str]] = {h: m for f in FORMATS for h, m in f.machines.items()}


def harness_of(raw: RawRun) -> str:
    """The harness a raw run was recorded in, read without parsing the run."""
    fmt = FORMAT_OF.get(raw.kind)
    return fmt.harness_of(raw.payload) if fmt is not None else raw.kind


def machine_of(harness: str) -> str:
    """Machine slug for a harness id; unknown harnesses keep their own (slugified) name."""
    if harness in MACHINES:
        return MACHINES[harness][0]
    # any other value becomes a safe name part: [a-z0-9.-], starting alphanumeric, bounded
    slug = re.sub(r"[^a-z0-9.]+", "-", harness.lower()).strip("-.")[:48].strip("-.")
    return slug or "unknown"


def machine_text(harness: str) -> str:
    """The card's Machine sentence for a harness id."""
    return MACHINES.get(harness, (harness, f"the `{harness}` harness"))[1]


__all__ = ["FORMATS", "PARSERS", "ParseError", "harness_of", "machine_of", "machine_text", "parse_raw"]


# What reading a malformed payload raises (a wrong type, a missing key, a bad value): the
# record's shape, not the parser, is at fault. Anything else escaping a parser is a parser bug:
# it reaches the parse step's boundary and is recorded as ``parse/crash`` with its traceback.
SHAPE_ERRORS: tuple[type[Exception], ...] = (
    TypeError,
    KeyError,
    IndexError,
    AttributeError,
    ValueError,
    OverflowError,
)


def parse_raw(raw: RawRun) -> Episode:
    """The Episode of one raw run; a malformed record raises ``ParseError(reason, detail)``."""
    parser = PARSERS.get(raw.kind) if isinstance(raw.kind, str) else None
    if parser is None:
        raise ParseError("unknown_kind", f"{raw.source_uid}: kind {raw.kind!r}")
    if not isinstance(raw.payload, dict):
        raise ParseError("bad_shape", f"{raw.source_uid}: payload is {type(raw.payload).__name__}")
    try:
        return parser(raw)
    except ParseError:
        raise
    except RecursionError:
        raise ParseError("bad_shape", f"{raw.source_uid}: structure nested too deeply") from None
    except MemoryError:
        raise ParseError("record_too_large", f"{raw.source_uid}: out of memory while parsing") from None
    except SHAPE_ERRORS as e:
        raise ParseError("bad_shape", f"{raw.source_uid}: {type(e).__name__}: {str(e)[:200]}") from None
