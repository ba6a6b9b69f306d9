"""Parsers: one module per input format, each turning a :class:`RawRun` into an :class:`Episode`.

``parse_raw`` dispatches on ``raw.kind`` and guarantees that hostile input (wrong types, missing
fields, cycles, huge strings) surfaces only as :class:`ParseError` with a short reason.
"""

from __future__ import annotations

from collections.abc import Callable

from pipeline.episode import Episode, ParseError, RawRun
from pipeline.parsers.affine_trace import parse_trace
from pipeline.parsers.affine_view import parse_view
from pipeline.parsers.miniswe import parse_miniswe
from pipeline.parsers.openhands import parse_openhands
from pipeline.parsers.sweagent import parse_sweagent
from pipeline.parsers.swelego import parse_swelego
from pipeline.parsers.swesmith import parse_swesmith

PARSERS: dict[str, Callable[[RawRun], Episode]] = {
    "view": parse_view,
    "trace": parse_trace,
    "swelego": parse_swelego,
    "sweagent": parse_sweagent,
    "openhands": parse_openhands,
    "swesmith": parse_swesmith,
    "miniswe": parse_miniswe,
}

__all__ = ["PARSERS", "ParseError", "parse_raw"]


# What reading a malformed payload raises (a wrong type, a missing key, a bad value): the
# record's shape, not the parser, is at fault. Anything else escaping a parser is a parser bug:
# it reaches the parse step's boundary and is recorded as ``parse/crash`` with its traceback.
SHAPE_ERRORS: tuple[type[Exception], ...] = (TypeError, KeyError, IndexError, AttributeError, ValueError,
                                            OverflowError)


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
