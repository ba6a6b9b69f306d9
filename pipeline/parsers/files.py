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

from pipeline.episode import Quarantined, RawRun

# format name (= origin) -> RawRun.kind
FORMATS: dict[str, str] = {
    "SWE-agent": "sweagent",
    "OpenHands": "openhands",
    "SWE-smith": "swesmith",
    "mini-swe-agent": "miniswe",
    "Affine corpus": "view",
    "Affine trace": "trace",
}


def _is_message_list(x: Any) -> bool:
    return isinstance(x, list) and bool(x) and all(isinstance(m, dict) and "role" in m for m in x[:5])


def _is_event_list(x: Any) -> bool:
    return (isinstance(x, list) and bool(x) and all(isinstance(e, dict) for e in x[:5])
            and any("action" in e or "observation" in e for e in x[:20])
            and all("role" not in e for e in x[:5]))


def _is_openhands_record(obj: dict[str, Any]) -> bool:
    """An OpenHands evaluation ``output.jsonl`` line (``instruction``, ``history``, ``test_result``)
    or resolver output (``history``, ``git_patch``): its history holds events, ``[action,
    observation]`` pairs or bare action/observation dicts, never chat messages."""
    history = obj.get("history")
    if not isinstance(history, list) or not ("instruction" in obj or "test_result" in obj or "git_patch" in obj):
        return False
    head = [x for h in history[:20] for x in (h if isinstance(h, list) else [h])]
    return any(isinstance(x, dict) and ("action" in x or "observation" in x) for x in head) and not any(
        isinstance(x, dict) and "role" in x for x in head[:5])


def detect_format(obj: Any) -> str | None:
    """The trajectory format of one decoded JSON value (a run), or None when it is not one."""
    if _is_message_list(obj):
        return "mini-swe-agent"  # a bare mini-swe message list (its test fixtures)
    if _is_event_list(obj):
        return "OpenHands"
    if not isinstance(obj, dict):
        return None
    if isinstance(obj.get("nodes"), list) and ("view" in obj or "instance_id" in obj):
        return "Affine corpus"
    if isinstance(obj.get("trace"), dict) and isinstance(obj.get("task"), dict):
        return "Affine trace"
    if _is_openhands_record(obj):
        return "OpenHands"
    if isinstance(obj.get("history"), list) and ("trajectory" in obj or "info" in obj
                                                 or "environment" in obj or "replay_config" in obj
                                                 or _is_message_list(obj["history"])):
        return "SWE-agent"
    if isinstance(obj.get("events"), list) and _is_event_list(obj["events"]):
        return "OpenHands"
    msgs = obj.get("messages")
    if isinstance(msgs, list | str) and msgs:
        fmt = obj.get("trajectory_format")
        info = obj.get("info")
        if (isinstance(fmt, str) and fmt.startswith("mini-swe-agent")) or (
                isinstance(info, dict) and ("mini_version" in info or "config" in info)):
            return "mini-swe-agent"
        if "instance_id" in obj:
            return "SWE-smith"
        if isinstance(msgs, list) and _is_message_list(msgs):
            return "mini-swe-agent"
    return None


def _runs_in_document(doc: Any) -> list[Any]:
    """A JSON document holds one run, or a list of runs (each a dict with messages/history)."""
    if (isinstance(doc, list) and doc and not _is_message_list(doc) and not _is_event_list(doc)
            and all(isinstance(r, dict) and detect_format(r) for r in doc)):
        return doc
    return [doc]


def _raw(obj: Any, fmt: str, uid: str, name: str, nbytes: int) -> RawRun:
    if isinstance(obj, list):
        payload: dict[str, Any] = {"events": obj} if fmt == "OpenHands" else {"messages": obj}
    else:
        payload = dict(obj)
    payload.setdefault("__file__", name)
    kind = FORMATS[fmt]
    origin = "Affine corpus" if kind == "trace" else fmt
    return RawRun(source_uid=uid, origin=origin, kind=kind, epoch=None, payload=payload,
                  raw_bytes=nbytes)


def _not_a_run(obj: Any) -> str:
    if isinstance(obj, dict) and "patch" in obj and ("FAIL_TO_PASS" in obj or "problem_statement" in obj):
        return "a task record (instance_id, patch, tests), not a trajectory"
    if isinstance(obj, dict):
        return f"unrecognised object with keys {sorted(obj)[:8]}"
    return f"unrecognised {type(obj).__name__}"


def iter_trajectory_file(path: Path, max_bytes: int = 1 << 30, *, name: str | None = None
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
        yield from _iter_lines(lines, name)
        return
    for n, obj in enumerate(_runs_in_document(doc)):
        uid = f"{name}#row={n}"
        fmt = detect_format(obj)
        if fmt is None:
            yield Quarantined(uid, None, "unknown_format", _not_a_run(obj))
            continue
        yield _raw(obj, fmt, uid, name, len(data))


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
