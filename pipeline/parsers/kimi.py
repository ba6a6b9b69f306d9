"""Kimi CLI session context files (``~/.kimi/sessions/<work dir hash>/<session>/context.jsonl``).

Each line is one record of the model's context: ``user``, ``assistant`` (``content`` parts
``think``/``text``, OpenAI-shaped ``tool_calls``), ``tool`` (by ``tool_call_id``; its first part
Kimi's ``<system>…</system>`` status), and Kimi's own markers ``_system_prompt``,
``_checkpoint``, ``_usage``. The file names no working directory; the system prompt does ("The
current working directory is `…`"), and that is the root (``pipeline.parsers.workdir``); a
context without it is ``parse/missing_field``.

* ``think`` parts are not the visible thought; ``<system>CHECKPOINT N</system>`` and
  ``<system-reminder>`` user messages are Kimi's, not a person's (``parse/kimi_marker_skipped``).
* The task is the first human message; the second ends the run (``parse/second_prompt_cut``).
* A ``ReadFile`` result whose status says Kimi stopped short (``Max N lines reached``,
  ``Max N bytes reached``, ``Lines [...] were truncated``) and any output Kimi cut to fit the
  message (``Output is truncated``) showed less than the command prints: ``parse/elided_output``.
* Tool names stay Kimi's (``Shell``, ``ReadFile``, ``WriteFile``, ``StrReplaceFile``, ...), read
  by the converters shared with Affine's ``kimi_code`` envelopes; its ``Glob`` and ``Grep``
  print in forms of their own: named ``kimi.Glob``/``kimi.Grep``, unknown tools (counted drops).
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from pipeline.core.episode import Episode, ParseError, RawRun, ToolCall
from pipeline.parsers.affine_view import AFFINE_MACHINES
from pipeline.parsers.fields import decode_args, opt_str
from pipeline.parsers.format import Format
from pipeline.parsers.messages import Msg
from pipeline.parsers.sessions import (
    cut_at_second_prompt,
    never_a_record,
    require_task,
    session_episode,
    session_events,
)
from pipeline.parsers.workdir import declared_workdir

_MARKERS = frozenset({"_checkpoint", "_usage", "_system_prompt"})
_KIMI_USER_TEXT = re.compile(r"\A\s*(?:<system>CHECKPOINT \d+</system>|<system-reminder>)")
_SHORTENED = re.compile(
    r"<system>[^<]*(?:Max \d+ (?:lines|bytes) reached|were truncated|Output is truncated)[^<]*</system>"
)
_OWN_FORMS = frozenset({"Glob", "Grep"})


def _text(content: Any, kinds: tuple[str, ...] = ("text",)) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    if any(isinstance(p, dict) and p.get("type") in ("image_url", "video_url", "audio_url") for p in content):
        raise ParseError("bad_shape", "a media part in a message (no command prints one)")
    return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") in kinds)


def _calls(raw: Any, where: str) -> list[ToolCall]:
    calls: list[ToolCall] = []
    for j, tc in enumerate(raw if isinstance(raw, list) else []):
        fn = tc.get("function") if isinstance(tc, dict) else None
        if not isinstance(fn, dict):
            raise ParseError("bad_tool_call", f"{where}.tool_calls[{j}]: no function")
        name = str(fn.get("name"))
        args = decode_args(fn.get("arguments"), f"{where}.tool_calls[{j}].arguments")
        calls.append(ToolCall(f"kimi.{name}" if name in _OWN_FORMS else name, args, opt_str(tc.get("id"))))
    return calls


def parse_kimi(raw: RawRun) -> Episode:
    counters: Counter[str] = Counter()
    msgs: list[Msg] = []
    humans: list[str] = []
    for i, rec in enumerate(session_events(raw)):
        role = rec.get("role")
        if role == "_system_prompt":
            msgs.append(Msg("system", _text(rec.get("content"))))
        elif role == "assistant":
            msgs.append(
                Msg(
                    "assistant", _text(rec.get("content")).strip(), _calls(rec.get("tool_calls"), f"L{i + 1}")
                )
            )
        elif role == "tool":
            out = _text(rec.get("content"))
            if _SHORTENED.search(out[:2000]):
                raise ParseError("elided_output", f"{raw.source_uid}: Kimi showed part of a result")
            msgs.append(Msg("tool", out, tool_call_id=opt_str(rec.get("tool_call_id"))))
        elif role == "user":
            text = _text(rec.get("content")).strip()
            if not text or _KIMI_USER_TEXT.match(text):
                counters["parse/kimi_marker_skipped"] += 1
                continue
            humans.append(text)
            if len(humans) > 1:
                cut_at_second_prompt(msgs, counters)
                break
            msgs.append(Msg("user", text))
    require_task(humans, raw.source_uid)
    return session_episode(
        raw, msgs, session_id="", cwd=declared_workdir(msgs), harness="kimi_code", model="", counters=counters
    )


def _is_kimi_context(head: list[Any]) -> bool:
    """Context records: role-keyed lines, with at least one of Kimi's own markers."""
    records = [e for e in head if isinstance(e, dict)]
    return (
        bool(records)
        and all("role" in e for e in records)
        and any(e.get("role") in _MARKERS for e in records)
    )


FORMAT = Format(
    kind="kimi",
    parse=parse_kimi,
    harness="kimi_code",
    machines={"kimi_code": AFFINE_MACHINES["kimi_code"]},
    name="Kimi CLI context",
    detect=never_a_record,
    session=_is_kimi_context,
)
