"""The chat-message model every message-list parser reads: one ``Msg`` per message, roles
normalised, the task message found."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from pipeline.core.episode import ParseError, ToolCall
from pipeline.parsers.fields import as_dict, as_list, opt_str, structured_call, text_of


@dataclass(slots=True)
class Msg:
    role: str
    text: str
    tool_calls: list[ToolCall] = field(default_factory=list)
    tool_call_id: str | None = None
    returncode: int | None = None  # from a structured field (mini-swe v2 ``extra.returncode``)
    format_error: bool = False  # mini-swe v2 marks its nudge ``extra.interrupt_type: FormatError``


def _int_or_none(x: Any) -> int | None:
    if isinstance(x, bool):
        return None
    if isinstance(x, int):
        return x
    if isinstance(x, str) and re.fullmatch(r"-?\d{1,9}", x.strip()):
        return int(x)
    return None


_ROLE_ALIASES = {"ai": "assistant", "human": "user", "function": "tool"}


def normalize_message(m: Any, where: str) -> Msg:
    m = as_dict(m, where)
    role = m.get("role")
    if not isinstance(role, str):
        raise ParseError("bad_shape", f"{where}.role: {type(role).__name__}")
    role = _ROLE_ALIASES.get(role, role)
    content = m.get("content")
    # plain text (the usual case) needs no location string for text_of's errors
    text = content if isinstance(content, str) else text_of(content, f"{where}.content")
    calls: list[ToolCall] = []
    raw_calls = m.get("tool_calls")
    if raw_calls:
        for j, tc in enumerate(as_list(raw_calls, f"{where}.tool_calls")):
            calls.append(structured_call(tc, f"{where}.tool_calls[{j}]"))
    tcid = opt_str(m.get("tool_call_id"))
    ids = m.get("tool_call_ids")
    if tcid is None and isinstance(ids, list) and ids:
        tcid = opt_str(ids[0])
    extra = m.get("extra")
    rc = _int_or_none(extra.get("returncode")) if isinstance(extra, dict) else None
    nudge = isinstance(extra, dict) and extra.get("interrupt_type") == "FormatError"
    return Msg(role=role, text=text, tool_calls=calls, tool_call_id=tcid, returncode=rc, format_error=nudge)


def normalize_messages(raw: Any, where: str) -> list[Msg]:
    return [normalize_message(m, f"{where}[{i}]") for i, m in enumerate(as_list(raw, where))]


def first_user_index(msgs: list[Msg]) -> int:
    for i, m in enumerate(msgs):
        if m.role == "user":
            return i
    raise ParseError("no_task", "no user message")


def first_user_text(msgs: list[Msg]) -> str:
    """The task message: the first user message's text ("" when there is none)."""
    return next((m.text for m in msgs if m.role == "user"), "")


def row_task_messages(row: dict[str, Any]) -> tuple[str, list[Msg]]:
    """``instance_id`` and the normalised ``messages`` of a row-shaped record (SWE-Lego, SWE-smith)."""
    instance_id = opt_str(row.get("instance_id")) or ""
    if not instance_id:
        raise ParseError("missing_field", "instance_id")
    return instance_id, normalize_messages(row.get("messages"), "messages")
