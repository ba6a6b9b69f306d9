"""Defensive field access for every parser: a record is hostile input, so a wrong type is
``ParseError("bad_shape", ...)`` with its location, never a ``KeyError``/``TypeError``."""

from __future__ import annotations

from typing import Any

import orjson

from pipeline.core.episode import ParseError, ToolCall


def as_dict(x: Any, where: str) -> dict[str, Any]:
    if not isinstance(x, dict):
        raise ParseError("bad_shape", f"{where}: expected object, got {type(x).__name__}")
    return x


def sub_dict(d: dict[str, Any], key: str) -> dict[str, Any]:
    """``d[key]`` when it is an object, else an empty one (an optional nested object)."""
    v = d.get(key)
    return v if isinstance(v, dict) else {}


def as_list(x: Any, where: str) -> list[Any]:
    if isinstance(x, str):
        # Several datasets (SWE-smith trajectories, SWE-Lego mirrors) store lists as JSON text.
        try:
            x = orjson.loads(x)
        except orjson.JSONDecodeError as e:
            raise ParseError("bad_json", f"{where}: {e}") from None
    if not isinstance(x, list):
        raise ParseError("bad_shape", f"{where}: expected list, got {type(x).__name__}")
    return x


def opt_str(x: Any) -> str | None:
    """A scalar as text (ids may be ints); None for missing or structured values."""
    if x is None or isinstance(x, dict | list):
        return None
    if isinstance(x, bool):
        return str(x).lower()
    return str(x)


def text_of(content: Any, where: str) -> str:
    """Message content as text: a string, or a list of ``{type: "text", text}`` parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts: list[str] = []
        for i, p in enumerate(content):
            if isinstance(p, str):
                parts.append(p)
            elif isinstance(p, dict):
                t = p.get("text")
                if isinstance(t, str):
                    parts.append(t)
                elif p.get("type") not in (None, "text") or t is None:
                    continue  # images and other non-text parts carry no shell output
                else:
                    raise ParseError("bad_shape", f"{where}[{i}].text: {type(t).__name__}")
            else:
                raise ParseError("bad_shape", f"{where}[{i}]: {type(p).__name__}")
        return "".join(parts)
    raise ParseError("bad_shape", f"{where}: content is {type(content).__name__}")


def decode_args(raw: Any, where: str) -> dict[str, Any]:
    """Tool-call arguments: an object, a JSON string of one, or empty."""
    if raw is None or raw == "":
        return {}
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str):
        try:
            val = orjson.loads(raw)
        except orjson.JSONDecodeError:
            raise ParseError("bad_arguments", f"{where}: arguments are not JSON") from None
        if isinstance(val, dict):
            return val
        raise ParseError("bad_arguments", f"{where}: arguments decode to {type(val).__name__}")
    raise ParseError("bad_arguments", f"{where}: arguments are {type(raw).__name__}")


def structured_call(tc: Any, where: str) -> ToolCall:
    """One OpenAI-style tool call: ``{name, arguments}`` or ``{function: {name, arguments}}``."""
    tc = as_dict(tc, where)
    fn = tc.get("function")
    src = fn if isinstance(fn, dict) else tc
    name = src.get("name")
    if not isinstance(name, str) or not name:
        raise ParseError("bad_shape", f"{where}: tool call without a name")
    args_raw = src.get("arguments", src.get("args", src.get("input")))
    return ToolCall(
        name=name, args=decode_args(args_raw, f"{where}.arguments"), call_id=opt_str(tc.get("id"))
    )
