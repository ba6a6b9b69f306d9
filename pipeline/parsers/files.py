"""Trajectory files users bring (``trajpipe convert``): format detected from CONTENT, not name.

A file is one JSON document (one run, or a list of runs) or JSON Lines (one run a line), plain or
gzip. Each run becomes a :class:`RawRun` with ``origin`` = the format's name; what cannot be read
becomes a :class:`Quarantined` with its reason, never a silent skip.
"""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from pipeline.core.episode import Quarantined, RawRun
from pipeline.parsers.format import Format, is_event_list, is_message_list


def _file_formats() -> tuple[Format, ...]:
    from pipeline.parsers import FORMATS

    return tuple(f for f in FORMATS if f.name is not None and f.detect is not None)


def format_named(name: str) -> Format:
    return next(f for f in _file_formats() if f.name == name)


def detect_format(obj: Any) -> str | None:
    """The trajectory format of one decoded JSON value (a run), or None when it is not one."""
    for fmt in _file_formats():
        assert fmt.detect is not None
        if fmt.detect(obj):
            return fmt.name
    return None


def _runs_in_document(doc: Any) -> list[Any]:
    """A JSON document holds one run, or a list of runs (each a dict with messages/history)."""
    if (
        isinstance(doc, list)
        and doc
        and not is_message_list(doc)
        and not is_event_list(doc)
        and all(isinstance(r, dict) and detect_format(r) for r in doc)
    ):
        return doc
    return [doc]


def _raw(obj: Any, fmt: str, uid: str, name: str, nbytes: int) -> RawRun:
    f = format_named(fmt)
    payload: dict[str, Any] = {f.list_key: obj} if isinstance(obj, list) else dict(obj)
    payload.setdefault("__file__", name)
    return RawRun(
        source_uid=uid, origin=f.origin or fmt, kind=f.kind, epoch=None, payload=payload, raw_bytes=nbytes
    )


def _not_a_run(obj: Any) -> str:
    if isinstance(obj, dict) and "patch" in obj and ("FAIL_TO_PASS" in obj or "problem_statement" in obj):
        return "a task record (instance_id, patch, tests), not a trajectory"
    if isinstance(obj, dict):
        return f"unrecognised object with keys {sorted(obj)[:8]}"
    return f"unrecognised {type(obj).__name__}"


def iter_trajectory_file(
    path: Path, max_bytes: int = 1 << 30, *, name: str | None = None
) -> Iterator[RawRun | Quarantined]:
    """One RawRun per run in ``path`` (``#row=<n>`` for JSON documents, ``#L<line>`` for JSONL);
    source_uids start with ``name`` (default: the file name)."""
    path = Path(path)
    name = name or path.name
    try:
        data = path.read_bytes()
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
    except (OSError, EOFError, gzip.BadGzipFile) as e:
        yield Quarantined(f"{name}#row=0", None, "unreadable", f"{path}: {e}")
        return
    if len(data) > max_bytes:
        yield Quarantined(f"{name}#row=0", None, "record_too_large", f"{path}: {len(data)} bytes")
        return
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError:
        doc = None
        lines = data.split(b"\n")
        if sum(1 for ln in lines if ln.strip()) <= 1:
            yield Quarantined(f"{name}#row=0", None, "bad_json", f"{path}: neither JSON nor JSON Lines")
            return
        session = _session_run(lines, name, len(data))
        if session is not None:
            yield session
            return
        yield from _iter_lines(lines, name)
        return
    for n, obj in enumerate(_runs_in_document(doc)):
        uid = f"{name}#row={n}"
        fmt = detect_format(obj)
        if fmt is None:
            yield Quarantined(uid, None, "unknown_format", _not_a_run(obj))
            continue
        yield _raw(obj, fmt, uid, name, len(data))


# how many of a file's first decodable lines a session format's detector is shown
_SESSION_HEAD = 20


def _session_run(lines: list[bytes], name: str, nbytes: int) -> RawRun | Quarantined | None:
    """The one run of a session transcript (every line an event of the same run), or None when
    the file is not one. A session with a line that is not JSON is not a run that can be read
    whole: quarantined as one (``bad_json``), never cut short silently."""
    head: list[Any] = []
    for ln in lines:
        if len(head) >= _SESSION_HEAD:
            break
        if ln.strip():
            try:
                head.append(orjson.loads(ln))
            except orjson.JSONDecodeError:
                continue
    fmt = next((f for f in _file_formats() if f.session is not None and f.session(head)), None)
    if fmt is None:
        return None
    uid = f"{name}#session"
    events: list[Any] = []
    for i, ln in enumerate(lines, start=1):
        if not ln.strip():
            continue
        try:
            events.append(orjson.loads(ln))
        except orjson.JSONDecodeError as e:
            return Quarantined(uid, None, "bad_json", f"line {i}: {str(e)[:160]}")
    payload: dict[str, Any] = {"events": events, "__file__": name}
    return RawRun(
        source_uid=uid,
        origin=fmt.origin or fmt.name or fmt.kind,
        kind=fmt.kind,
        epoch=None,
        payload=payload,
        raw_bytes=nbytes,
    )


def _iter_lines(lines: list[bytes], name: str) -> Iterator[RawRun | Quarantined]:
    for i, ln in enumerate(lines, start=1):
        if not ln.strip():
            continue
        uid = f"{name}#L{i}"
        try:
            obj = orjson.loads(ln)
        except orjson.JSONDecodeError as e:
            yield Quarantined(uid, None, "bad_json", str(e)[:200])
            continue
        if not isinstance(obj, dict | list):
            yield Quarantined(uid, None, "not_object", type(obj).__name__)
            continue
        fmt = detect_format(obj)
        if fmt is None:
            yield Quarantined(uid, None, "unknown_format", _not_a_run(obj))
            continue
        yield _raw(obj, fmt, uid, name, len(ln))
