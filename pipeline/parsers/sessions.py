"""What the readers of agent session transcripts share (Claude Code, Codex CLI).

A session file is one run: its lines are the events of one conversation between a person and
an agent. The readers turn it into the message list every parser walks (``Msg``: the task, the
agent's replies with their tool calls, the tool results by call id) and hand it to
:func:`messages_episode`, so the tool calls reach the same converters as the Affine envelopes
of the same harnesses.

Rules common to every session format:

* the task is the session's first human message;
* a second human message (a new request, a correction, an interruption) ends the run there:
  what came before is the agent's whole answer to the first task, in the order it happened, and
  the run ends unsubmitted (``parse/second_prompt_cut``); what comes after is not published (its
  context is the first part's conversation and the checkout as that part left it, which a
  mini-swe-agent run, one task from a clean checkout, cannot hold). The calls the person
  interrupted go (``parse/interrupted_call_removed``);
* the checkout root is the session's recorded working directory, whatever its form
  (``/Users/<user>/…``, ``C:\\…`` aside, ``/tmp/tmpXXXX``): ``Meta.repo_root`` for the root rewrite;
* an output holding zsh's own diagnostics (``(eval):1: no matches found``, ``zsh: command not
  found``) was printed by zsh, the shell of the author's machine, where bash prints another
  message or none: ``parse/foreign_shell``;
* a session that was compacted (the agent's context replaced by a summary) is dropped,
  ``parse/compacted``: what the agent saw is no longer the message list.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from pipeline.core.episode import Episode, ParseError, RawRun
from pipeline.parsers.assembly import messages_episode
from pipeline.parsers.fields import as_list
from pipeline.parsers.messages import Msg

# zsh's own diagnostics (``(eval):1: no matches found: …``, ``zsh: command not found: x``)
_ZSH = re.compile(r"^(?:\(eval\):\d+: |zsh:\d*:? )", re.M)


def never_a_record(obj: Any) -> bool:
    """A session format's ``detect``: a session is a whole file, never one JSON record of a
    file of runs (its ``session`` detector reads the file's first lines instead)."""
    return False


def session_events(raw: RawRun) -> list[dict[str, Any]]:
    """The session's events (decoded lines that are objects; others are counted, not read)."""
    events = as_list(raw.payload.get("events"), "events")
    return [e for e in events if isinstance(e, dict)]


def require_task(humans: list[str], source_uid: str) -> None:
    if not humans:
        raise ParseError("no_task", f"{source_uid}: no human message")


def cut_at_second_prompt(msgs: list[Msg], counters: Counter[str]) -> None:
    """The run ends where the person spoke again (see the module's rules): the calls of the
    reply their message interrupted have no result and were not run to the end; they go
    (``parse/interrupted_call_removed``)."""
    counters["parse/second_prompt_cut"] += 1
    answered = {m.tool_call_id for m in msgs if m.role == "tool"}
    for m in reversed(msgs):
        if m.role == "tool":
            break
        if m.role == "assistant" and m.tool_calls:
            kept = [c for c in m.tool_calls if c.call_id in answered]
            counters["parse/interrupted_call_removed"] += len(m.tool_calls) - len(kept)
            m.tool_calls = kept


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
    for m in msgs:
        if m.role == "tool" and _ZSH.search(m.text):
            # the command ran in zsh (macOS's login shell): bash prints another error, or none
            raise ParseError("foreign_shell", f"{raw.source_uid}: zsh's own message in an output")
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
        structured=True,  # the agents call tools only as structured calls
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
