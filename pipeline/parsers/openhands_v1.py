"""OpenHands V1 runs: the event records of the OpenHands agent SDK (``openhands-sdk``, the
"agent-sdk"; OpenHands/benchmarks' evaluations since late 2025).

A run is a list of events, each a dict with a ``kind``: a bare list (the SDK's conversation
events, ``traj_*.json``) or an evaluation ``output.jsonl`` line (``instance_id``, ``instruction``,
``history``: the events, ``test_result``, ``metadata``). The V0 parser (``openhands.py``) reads
the older records, whose events have an ``action``/``observation`` *string*; here both are
objects with their own ``kind``:

=========================  =============================================================
``MessageEvent``           ``llm_message {role, content}``: the first user message is the
                           task (else the record's ``instruction``); the agent's text is
                           carried into the next step's thought
``ActionEvent``            one tool call: ``action {kind, …}``, ``tool_name``, ``tool_call_id``,
                           ``thought`` (text parts the model wrote with the call)
``ObservationEvent``       its result: ``observation {kind, …}``, ``action_id``
``AgentErrorEvent``        a call the SDK could not run (unknown tool, invalid arguments):
                           it has no ``ActionEvent``, nothing ran; skipped
``UserRejectObservation``  a call the user refused to run: its step is removed
others                     ``SystemPromptEvent``, condensation, state updates, tokens: skipped
=========================  =============================================================

Actions become the tool calls the converters know (the V0 names): ``ExecuteBashAction`` /
``TerminalAction`` → ``execute_bash`` (``command``, ``is_input``), ``FileEditorAction`` /
``StrReplaceEditorAction`` → ``str_replace_editor`` (its editor arguments), ``FinishAction`` →
``finish`` (``message``), ``ThinkAction`` → ``think``, ``TaskTrackerAction`` → ``task_tracker``;
any other action is its ``tool_name`` with the action's fields (the browser tools: convert
drops them as ``convert/unknown_tool``). ``reasoning_content`` (the provider's hidden
reasoning) is not the thought the model wrote and is not kept.

Observations:

- **Commands.** The SDK's PTY terminal (``SubprocessTerminal``: ``bash -i`` on a pseudo-terminal)
  records what the shell wrote between two prompts. Bash's readline switches bracketed-paste
  mode off when it accepts the command line (``ESC[?2004l``) and on again when it draws the next
  prompt (``ESC[?2004h``); the SDK removes the echoed command line and the prompts but not those
  two switches, so a command's output is recorded as ``ESC[?2004l`` + what it printed +
  ``ESC[?2004h``. That frame is the terminal's, not the command's, and is removed
  (``parse/openhands_v1_terminal_frame_removed``); what lies between is byte for byte what the
  command printed (the frame also shields its ends from the SDK's ``strip``). An output without
  the closing switch (tmux terminal, a command still running) lost its trailing whitespace: its
  final newline is put back where the command prints one (``prints_final_newline``, SWE-agent
  1.x's rule; ``parse/openhands_v1_newline_restored``); leading whitespace it lost is unknown. An
  output with a switch left inside, text the shell printed after its next prompt (a background
  job's), is not what a one-shot command prints: the run drops as ``parse/terminal_interleaved``.
  The SDK's notes around the output (``metadata.prefix``/``suffix``: ``[The command completed
  with exit code N.]``, the wait notes; the ``[Current working directory: …]`` lines) are added
  when the output is shown to the model, not recorded in it.
- **Return codes** come from the observation's ``exit_code``, else ``metadata.exit_code`` (read
  from the shell's prompt). ``-1`` is a command still running when the SDK stopped waiting
  (``Step.timed_out``, no code). Never a default.
- **Refused commands.** The terminal refuses some calls before running anything (several
  commands at once, input or an empty command with nothing running, a new command while the
  previous one runs): like V0's refused editor calls, the exchange is removed
  (``parse/rejected_call_removed``) and the reply after it repaired by the format-error policy.
- **Editor.** The model was shown the ``error`` text when there is one, else the ``output``;
  that text is the observation and the error decides the step's outcome (code 1, else 0) for
  the converter, which synthesises the command and its own code.

The submission follows the V0 rule (``has_recorded_patch`` / ``_submission``): a run whose last
call is ``finish`` submitted the record's ``test_result.git_patch``; without that field the
record does not say (None).
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from pipeline.core.episode import Episode, ParseError, RawRun, Step, ToolCall
from pipeline.parsers.dialects import join_thought, strip_think
from pipeline.parsers.fields import as_dict, as_list, opt_str, sub_dict, text_of
from pipeline.parsers.format import Format, Machines
from pipeline.parsers.openhands import (
    _EDITOR_KEYS,
    _root,
    is_rejected_call,
    record_episode,
    recorded_patch,
    without_refused_calls,
)
from pipeline.parsers.sweagent_outputs import prints_final_newline

# the events that carry the run: one of them marks a V1 record
_V1_STEP_KINDS = frozenset({"ActionEvent", "ObservationEvent"})
_BASH_ACTIONS = frozenset({"ExecuteBashAction", "TerminalAction"})
_BASH_OBSERVATIONS = frozenset({"ExecuteBashObservation", "TerminalObservation"})
_EDITOR_ACTIONS = frozenset({"FileEditorAction", "StrReplaceEditorAction"})
_EDITOR_OBSERVATIONS = frozenset({"FileEditorObservation", "StrReplaceEditorObservation"})

# bash's readline: bracketed paste off once the command line is read, on at the next prompt
_PASTE_OFF, _PASTE_ON = "\x1b[?2004l", "\x1b[?2004h"

# the terminal's refusals of a call it did not run (openhands-tools' TerminalSession.execute)
_REFUSED_COMMAND_RE = re.compile(
    r"\A(?:ERROR: )?(?:Cannot execute multiple commands at once\."
    r"|No previous running command to (?:retrieve logs from|interact with)\.)"
)
_NOT_EXECUTED_RE = re.compile(r'\[Your command "[^\n]*" is NOT executed\.')


def _events(payload: dict[str, Any]) -> list[Any]:
    """The run's events: an evaluation line's ``history``, else a bare list (``events``)."""
    return as_list(payload.get("history") if "history" in payload else payload.get("events"), "events")


def _action_call(ev: dict[str, Any], where: str) -> ToolCall:
    """The tool call an ``ActionEvent`` stands for, under the name the converters know."""
    action = as_dict(ev.get("action"), f"{where}.action")
    kind = opt_str(action.get("kind")) or ""
    call_id = opt_str(ev.get("tool_call_id"))
    if kind in _BASH_ACTIONS:
        args: dict[str, Any] = {"command": opt_str(action.get("command")) or ""}
        if action.get("is_input") is True:
            args["is_input"] = True
        return ToolCall("execute_bash", args, call_id)
    if kind in _EDITOR_ACTIONS:
        edit = {k: action[k] for k in _EDITOR_KEYS if action.get(k) is not None}
        return ToolCall("str_replace_editor", edit, call_id)
    if kind == "FinishAction":
        return ToolCall("finish", {"message": opt_str(action.get("message")) or ""}, call_id)
    if kind == "ThinkAction":
        return ToolCall("think", {"thought": opt_str(action.get("thought")) or ""}, call_id)
    if kind == "TaskTrackerAction":
        plan: dict[str, Any] = {k: action[k] for k in ("command", "task_list") if k in action}
        return ToolCall("task_tracker", plan, call_id)
    name = opt_str(ev.get("tool_name")) or kind.removesuffix("Action") or "unknown"
    return ToolCall(name, {k: v for k, v in action.items() if k != "kind"}, call_id)


def _shown_text(obs: dict[str, Any], where: str) -> str:
    """An observation's text: ``output`` (SDK 1.0) or its ``content`` parts (later versions)."""
    out = obs.get("output")
    return out if isinstance(out, str) else text_of(obs.get("content"), f"{where}.content")


def strip_terminal_frame(out: str, counters: Counter[str]) -> tuple[str, bool]:
    """A command's output without the PTY terminal's bracketed-paste switches around it (see the
    module docstring), and whether the closing switch was there (the output's end is then whole);
    a switch left inside means text from after the next prompt."""
    framed = out.startswith(_PASTE_OFF)
    if framed:
        out = out[len(_PASTE_OFF) :]
    closed = out.endswith(_PASTE_ON)
    if closed:
        out, framed = out[: -len(_PASTE_ON)], True
    if _PASTE_OFF in out or _PASTE_ON in out:
        raise ParseError("terminal_interleaved", f"output after the next prompt: {out[:80]!r}")
    if framed:
        counters["parse/openhands_v1_terminal_frame_removed"] += 1
    return out, closed


def _exit_code(obs: dict[str, Any]) -> int | None:
    """The recorded exit code: the observation's, else the prompt's (``metadata.exit_code``)."""
    for code in (obs.get("exit_code"), sub_dict(obs, "metadata").get("exit_code")):
        if isinstance(code, int) and not isinstance(code, bool):
            return code
    return None


def _refused(obs: dict[str, Any], text: str) -> bool:
    """Whether the terminal refused the call without running anything."""
    suffix = sub_dict(obs, "metadata").get("suffix")
    return bool(_REFUSED_COMMAND_RE.match(text)) or (
        isinstance(suffix, str) and _NOT_EXECUTED_RE.search(suffix) is not None
    )


def _fill_command(step: Step, obs: dict[str, Any], where: str, counters: Counter[str]) -> bool:
    """A command's observation and code; False when the terminal refused the call."""
    text = _shown_text(obs, where)
    if _refused(obs, text):
        return False
    code = _exit_code(obs)
    out, closed = strip_terminal_frame(text, counters)
    command = step.call.args.get("command") if isinstance(step.call, ToolCall) else None
    if (
        not closed
        and out
        and not out.endswith("\n")
        and isinstance(command, str)
        and prints_final_newline(command)
    ):
        # the SDK strips the output's trailing whitespace; nothing shields it without the closing
        # switch (another terminal, a command still running): the newline goes back where the
        # command prints one (SWE-agent 1.x's rule)
        out += "\n"
        counters["parse/openhands_v1_newline_restored"] += 1
    step.observation = out
    if code is not None and code < 0:
        # still running when the SDK stopped waiting (no new output, or its timeout)
        step.timed_out = True
        counters["parse/timed_out"] += 1
    else:
        step.returncode = code
    return True


def _fill_editor(step: Step, obs: dict[str, Any], where: str) -> None:
    """An editor call's result as the model was shown it, its outcome as the step's code."""
    error = obs.get("error")
    if isinstance(error, str) and error:
        step.observation, step.returncode = error, 1
        return
    step.observation = _shown_text(obs, where)
    step.returncode = 1 if obs.get("is_error") is True else 0


def parse_openhands_v1(raw: RawRun) -> Episode:
    payload = raw.payload
    counters: Counter[str] = Counter()
    steps: list[Step] = []
    by_id: dict[str, int] = {}  # action event id / tool call id -> step index
    refused: set[int] = set()
    task_text: str | None = None
    carry = ""
    working_dir: str | None = None  # the shell's directory after the first command
    for i, item in enumerate(_events(payload)):
        where = f"events[{i}]"
        ev = as_dict(item, where)
        kind = opt_str(ev.get("kind"))
        source = opt_str(ev.get("source"))
        if kind == "MessageEvent":
            msg = sub_dict(ev, "llm_message")
            text = text_of(msg.get("content"), f"{where}.llm_message.content")
            if source == "user" or msg.get("role") == "user":
                if task_text is None:
                    task_text = text
                else:
                    counters["parse/extra_user_message"] += 1
            else:
                carry = join_thought(carry, strip_think(text))
            continue
        if kind == "ActionEvent" and source in (None, "agent"):
            if not isinstance(ev.get("action"), dict):
                counters["parse/openhands_v1_action_missing"] += 1
                continue
            thought = strip_think(text_of(ev.get("thought"), f"{where}.thought"))
            steps.append(
                Step(thought=join_thought(carry, thought), call=_action_call(ev, where), observation="")
            )
            carry = ""
            for key in ("id", "tool_call_id"):
                if opt_str(ev.get(key)) is not None:
                    by_id.setdefault(str(ev[key]), len(steps) - 1)
            continue
        if kind not in ("ObservationEvent", "UserRejectObservation"):
            if kind == "AgentErrorEvent":
                counters["parse/openhands_v1_agent_error_skipped"] += 1
            continue
        cause = opt_str(ev.get("action_id")) or opt_str(ev.get("tool_call_id"))
        if cause is None or cause not in by_id:
            counters["parse/orphan_observation"] += 1
            continue
        n = by_id[cause]
        if kind == "UserRejectObservation":
            refused.add(n)  # the user refused to run it: nothing ran
            continue
        obs = as_dict(ev.get("observation"), f"{where}.observation")
        obs_kind = opt_str(obs.get("kind"))
        step = steps[n]
        if obs_kind in _BASH_OBSERVATIONS:
            if not _fill_command(step, obs, f"{where}.observation", counters):
                refused.add(n)
            wd = sub_dict(obs, "metadata").get("working_dir")
            if working_dir is None and isinstance(wd, str) and wd.startswith("/"):
                working_dir = wd
        elif obs_kind in _EDITOR_OBSERVATIONS:
            _fill_editor(step, obs, f"{where}.observation")
        elif obs_kind not in ("FinishObservation", "ThinkObservation"):
            step.observation = _shown_text(obs, f"{where}.observation")
    task_text = task_text if task_text is not None else opt_str(payload.get("instruction"))
    if task_text is None:
        raise ParseError("no_task", "no user message event and no instruction")
    # the terminal's refusals, and V0's editor argument refusals
    steps = without_refused_calls(
        steps,
        counters,
        lambda n, st: n in refused or (_is_editor(st) and is_rejected_call(st)),
    )
    if steps and isinstance(steps[-1].call, ToolCall) and steps[-1].call.name == "finish":
        steps[-1].observation = recorded_patch(payload)  # the run's submission, as recorded
    llm = sub_dict(payload["metadata"], "llm") if isinstance(payload.get("metadata"), dict) else {}
    return record_episode(
        raw, payload, task_text, steps, counters, dialect="events_v1", harness="openhands-sdk",
        model=opt_str(llm.get("model")) or "unknown", root=_root(task_text, steps, working_dir),
    )  # fmt: skip


def _is_editor(step: Step) -> bool:
    return isinstance(step.call, ToolCall) and step.call.name == "str_replace_editor"


def is_v1_event_list(x: Any) -> bool:
    """A list of SDK events: dicts with a ``kind``, one of them an action or observation event."""
    return isinstance(x, list) and any(isinstance(e, dict) and e.get("kind") in _V1_STEP_KINDS for e in x)


def _detect(obj: Any) -> bool:
    return is_v1_event_list(obj) or (
        isinstance(obj, dict)
        and (is_v1_event_list(obj.get("history")) or is_v1_event_list(obj.get("events")))
    )


MACHINES: Machines = {
    "openhands-sdk": (
        "openhands-sdk",
        "OpenHands agent SDK (V1) with function calling (`execute_bash`/`terminal`, "
        "`str_replace_editor`/`file_editor`, `think`, `task_tracker`, `finish`)",
    ),
}

FORMAT = Format(
    kind="openhands_v1",
    parse=parse_openhands_v1,
    harness="openhands-sdk",
    machines=MACHINES,
    name="OpenHands V1",
    detect=_detect,
    origin="OpenHands",
    list_key="events",
)
