"""What the readers of agent session transcripts share (Claude Code, Codex CLI).

A session file is one run: its lines are the events of one conversation between a person and
an agent. The readers turn it into the message list every parser walks (``Msg``: the task, the
agent's replies with their tool calls, the tool results by call id) and hand it to
:func:`messages_episode`, so the tool calls reach the same converters as the Affine envelopes
of the same harnesses.

Rules common to every session format:

* the task is the session's first human message;
* a second human message during the run (a new request, a correction, an interruption) makes
  the rest of the run an answer to two tasks: the session is dropped, ``parse/second_prompt``,
  rather than split (the second part's context would be the first part's conversation, which
  a mini-swe-agent run, one task from a clean checkout, cannot hold);
* the checkout root is the session's recorded working directory, whatever its form
  (``/Users/<user>/…``, ``C:\\…`` aside, ``/tmp/tmpXXXX``): ``Meta.repo_root`` for the root rewrite;
* a session that was compacted (the agent's context replaced by a summary) is dropped,
  ``parse/compacted``: what the agent saw is no longer the message list.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from pipeline.core.episode import Episode, ParseError, RawRun
from pipeline.parsers.common import Msg, as_list, messages_episode


def session_events(raw: RawRun) -> list[dict[str, Any]]:
    """The session's events (decoded lines that are objects; others are counted, not read)."""
    events = as_list(raw.payload.get("events"), "events")
    return [e for e in events if isinstance(e, dict)]


def one_human_prompt(humans: list[str], source_uid: str) -> None:
    """Refuse a session with a second human message (see the module's rules)."""
    if not humans:
        raise ParseError("no_task", f"{source_uid}: no human message")
    if len(humans) > 1:
        raise ParseError(
            "second_prompt", f"{source_uid}: {len(humans)} human messages; the second: {humans[1][:80]!r}"
        )


def session_episode(
    raw: RawRun,
    msgs: list[Msg],
    *,
    session_id: str,
    cwd: str | None,
    harness: str,
    model: str,
    counters: Counter[str],
) -> Episode:
    """The Episode of a session's messages: the task its first human message, the root its cwd."""
    if not cwd or not cwd.startswith("/") or not cwd.rstrip("/"):
        # a root of "/" would make every absolute path the checkout's
        raise ParseError("missing_field", f"{raw.source_uid}: no checkout directory recorded (cwd {cwd!r})")
    answered = {m.tool_call_id for m in msgs if m.role == "tool"}
    for m in msgs:
        for c in m.tool_calls:
            if c.call_id not in answered:
                # a call with no result: interrupted, or its result lost; an empty output is no stand-in
                raise ParseError(
                    "unanswered_call", f"{raw.source_uid}: {c.name} call {c.call_id} has no result"
                )
    ep = messages_episode(
        msgs,
        instance_id=session_id or raw.source_uid,
        repo="",
        pool="sessions",
        language="unknown",
        base_commit=None,
        patch=None,
        origin=raw.origin,
        harness=harness,
        model=model or "unknown",
        source_uid=raw.source_uid,
        resolved="unknown",
        fold_group=None,
        epoch=raw.epoch,
        root_hint=cwd.rstrip("/"),
    )
    ep.counters.update(counters)
    return ep
