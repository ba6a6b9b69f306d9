"""pi coding agent sessions (``~/.pi/agent/sessions/--<path>--/<time>_<id>.jsonl``).

The first line is the header ``{"type": "session", "id", "cwd", ...}``; then entries:
``message`` (``user``, ``assistant`` with ``toolCall`` blocks, ``toolResult`` by ``toolCallId``,
``bashExecution`` for a command the person ran), and entries that are not messages
(``model_change``, ``thinking_level_change``, ``session_info``, ``label``, ``custom``). Since
version 2 the entries form a tree by ``id``/``parentId`` (a session branched in place keeps the
abandoned branch): the run is the chain from the last entry back to the header; version 1 is
linear.

* The task is the first human message; a lone slash command (``/mode``) is the TUI's, not a
  prompt (``parse/pi_command_skipped``); a reply the person aborted before it said anything is
  skipped too; a command the person ran themselves (``bashExecution``) is their turn.
* A second human turn ends the run (``parse/second_prompt_cut``, ``pipeline.parsers.sessions``).
* A ``compaction`` entry on the chain: ``parse/compacted``. A tool result pi shortened for the
  model (``N more lines``, ``Use offset=… to continue``, ``[Output truncated``) is
  ``parse/elided_output``.
* The tools (``read``, ``bash``, ``edit``, ``write``, ...) keep pi's names and arguments for the
  converters shared with Affine's pi harness; pi notes a failed command's code in its result
  (``Command exited with code N``).
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from pipeline.core.episode import Episode, ParseError, RawRun, ToolCall
from pipeline.parsers.affine_view import AFFINE_MACHINES
from pipeline.parsers.fields import opt_str
from pipeline.parsers.format import Format
from pipeline.parsers.messages import Msg
from pipeline.parsers.sessions import (
    cut_at_second_prompt,
    never_a_record,
    require_task,
    session_episode,
    session_events,
)

_SLASH_COMMAND = re.compile(r"\A/[\w:-]+(?: \S+)?\Z")
_ELIDED = re.compile(r"\d+ more lines (?:not shown|in file)|Use offset=\d+ to continue|\[Output truncated")


def _chain(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The live branch's entries in order (every entry when they carry no ids: version 1)."""
    by_id = {e["id"]: e for e in entries if isinstance(e.get("id"), str)}
    if not by_id:
        return entries
    seen: set[str] = set()
    chain: list[dict[str, Any]] = []
    cur: dict[str, Any] | None = next((e for e in reversed(entries) if isinstance(e.get("id"), str)), None)
    while cur is not None:
        eid = cur["id"]
        if eid in seen:
            break
        seen.add(eid)
        chain.append(cur)
        parent = cur.get("parentId")
        cur = by_id.get(parent) if isinstance(parent, str) else None
    chain.reverse()
    return chain


def _texts(content: Any) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    if any(isinstance(b, dict) and b.get("type") == "image" for b in content):
        raise ParseError("bad_shape", "an image in a message (no command prints one)")
    return "".join(str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text")


def parse_pi(raw: RawRun) -> Episode:
    events = session_events(raw)
    header = next((e for e in events if e.get("type") == "session"), {})
    cwd = opt_str(header.get("cwd"))
    entries = [e for e in events if e.get("type") != "session"]
    counters: Counter[str] = Counter()
    msgs: list[Msg] = []
    humans: list[str] = []
    model = opt_str(header.get("modelId")) or ""
    for e in _chain(entries):
        kind = e.get("type")
        if kind == "compaction":
            raise ParseError("compacted", f"{raw.source_uid}: the session was compacted")
        if kind == "model_change":
            model = model or opt_str(e.get("modelId")) or ""
        if kind != "message" or not isinstance(e.get("message"), dict):
            continue
        m = e["message"]
        role = m.get("role")
        if role == "assistant":
            blocks = [b for b in m.get("content") or [] if isinstance(b, dict)]
            text = "\n\n".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text").strip()
            calls = [
                ToolCall(str(b.get("name")), dict(b.get("arguments") or {}), opt_str(b.get("id")))
                for b in blocks
                if b.get("type") == "toolCall"
            ]
            if not text and not calls and m.get("stopReason") in ("aborted", "error"):
                counters["parse/pi_aborted_reply_skipped"] += 1
                continue
            model = model or opt_str(m.get("model")) or ""
            msgs.append(Msg("assistant", text, calls))
        elif role == "toolResult":
            out = _texts(m.get("content"))
            if _ELIDED.search(out):
                raise ParseError(
                    "elided_output", f"{raw.source_uid}: pi shortened a {m.get('toolName')} result"
                )
            msgs.append(Msg("tool", out, tool_call_id=opt_str(m.get("toolCallId"))))
        elif role in ("user", "bashExecution"):
            text = _texts(m.get("content")).strip() if role == "user" else f"!{m.get('command', '')}"
            if role == "user" and _SLASH_COMMAND.match(text):
                counters["parse/pi_command_skipped"] += 1
                continue
            if not text:
                continue
            humans.append(text)
            if len(humans) > 1:
                cut_at_second_prompt(msgs, counters)
                break
            msgs.append(Msg("user", text))
    require_task(humans, raw.source_uid)
    session_id = opt_str(header.get("id")) or ""
    return session_episode(
        raw, msgs, session_id=session_id, cwd=cwd, harness="pi", model=model, counters=counters
    )


def _is_pi_session(head: list[Any]) -> bool:
    """A pi session: its first line the ``session`` header with a ``cwd``."""
    first = next((e for e in head if isinstance(e, dict)), None)
    return first is not None and first.get("type") == "session" and isinstance(first.get("cwd"), str)


FORMAT = Format(
    kind="pi",
    parse=parse_pi,
    harness="pi",
    machines={"pi": AFFINE_MACHINES["pi"]},
    name="pi session",
    detect=never_a_record,
    session=_is_pi_session,
)
