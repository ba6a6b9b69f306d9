"""OpenHands runs: event streams (``trajs/*.json``, a list of action and observation events),
evaluation ``output.jsonl`` lines (``instance_id``, ``instruction``, ``history``, ``metadata``,
``test_result``) and the older resolver output (``history`` of bare action/observation dicts,
``git_patch``).

A ``history`` is read as events in any of its three shapes: event dicts with ids and ``cause``;
``[action, observation]`` pairs (evaluation outputs before 2025); bare dicts without ids, fields
at the top level instead of under ``args`` (the resolver), each observation answering the action
before it. The patch a run recorded (``test_result.git_patch``, ``git_patch``) is its finish
step's submission; it gets back the final newline ``git diff`` prints when the record stripped it.

The checkout root is the task's ``<uploaded_files>`` line, else the shell's directory at the first
command (``metadata.working_dir``), else the first ``cd``, else the first editor path's folder.
A command with a negative exit code never finished (``Step.timed_out``); OpenHands' wait notes
around its output (``[The command has no new output after …]``) are removed.

Agent actions become Steps; the tool call is taken from ``tool_call_metadata`` (the model's own
``tool_calls``, so names and arguments are as the model sent them), else rebuilt from the
action type. Observations are matched to their action by ``cause``; return codes come from
``extras.metadata.exit_code``. Editor results use ``extras.formatted_output_and_error``, the
text the model was shown, rather than OpenHands' internal diff.

OpenHands' tools and what convert makes of them (by what each call does):

=======================  ===============================================================
``execute_bash``         the command (its pty echo and prompt removed, ``strip_pty_frame``)
``str_replace_editor``   ``cat -n``/``find`` views, python3 heredoc edits; a refused call
                         (bad arguments) is removed here; ``undo_edit`` drops the run
``think``                no effect: its thought is folded into the next turn's THOUGHT
``task_tracker``         no effect (the agent's own plan): removed, its thought carried
``request_condensation`` no effect on the repository or the shell: removed
``delegate``             the hand-over to a sub-agent, whose own actions are events of the
                         stream: removed, its task folded into the thought
``finish``               mini's submit; its output is the recorded patch
``execute_ipython_cell`` effects in a live kernel no one-shot command keeps: drops
``browser``/``web_read`` a network read (what it fetched could hold the fix, which the leak
                         step must see): drops as ``convert/unknown_tool``
``edit_file``            the LLM-based editor: no exact replacement is recorded: drops
=======================  ===============================================================

``recall``, ``condensation`` and the other bookkeeping actions are skipped (``_SKIP_ACTIONS``).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from typing import Any, cast

from pipeline.core.episode import Episode, ParseError, RawRun, Resolved, Step, ToolCall
from pipeline.parsers.assembly import detect_root, make_episode, resolved_from
from pipeline.parsers.dialects import join_thought, strip_think
from pipeline.parsers.fields import as_dict, as_list, decode_args, opt_str, sub_dict, text_of
from pipeline.parsers.format import Format, Machines, is_event_list
from pipeline.parsers.observations import clean_observation
from pipeline.parsers.sweagent_outputs import prints_final_newline
from pipeline.parsers.walker import repair_after_format_errors

_SKIP_ACTIONS = frozenset(
    {
        "system",
        "recall",
        "condensation",
        "condensation_request",
        "change_agent_state",
        "null",
        "pause",
        "resume",
    }
)
_EDITOR_KEYS = ("command", "path", "file_text", "old_str", "new_str", "insert_line", "view_range")


def _metadata_call(ev: dict[str, Any]) -> ToolCall | None:
    meta = ev.get("tool_call_metadata")
    if not isinstance(meta, dict):
        return None
    name = opt_str(meta.get("function_name"))
    call_id = opt_str(meta.get("tool_call_id"))
    if not name:
        return None
    resp = meta.get("model_response")
    choices = resp.get("choices") if isinstance(resp, dict) else None
    msg = (
        choices[0].get("message")
        if isinstance(choices, list) and choices and isinstance(choices[0], dict)
        else None
    )
    calls = msg.get("tool_calls") if isinstance(msg, dict) else None
    if isinstance(calls, list):
        for i, tc in enumerate(calls):
            if isinstance(tc, dict) and opt_str(tc.get("id")) == call_id:
                fn = sub_dict(tc, "function") if isinstance(tc.get("function"), dict) else tc
                return ToolCall(
                    name=name,
                    args=decode_args(fn.get("arguments"), f"tool_call_metadata.tool_calls[{i}]"),
                    call_id=call_id,
                )
    return None


def _action_call(action: str, args: dict[str, Any]) -> ToolCall:
    """The tool call an action stands for, when the event kept no model response."""
    if action == "run":
        return ToolCall("execute_bash", {"command": opt_str(args.get("command")) or ""})
    if action == "run_ipython":
        return ToolCall("execute_ipython_cell", {"code": opt_str(args.get("code")) or ""})
    if action == "read":
        out: dict[str, Any] = {"command": "view", "path": opt_str(args.get("path")) or ""}
        if isinstance(args.get("view_range"), list):
            out["view_range"] = args["view_range"]
        return ToolCall("str_replace_editor", out)
    if action == "edit":
        return ToolCall("str_replace_editor", {k: args[k] for k in _EDITOR_KEYS if args.get(k) is not None})
    if action == "finish":
        return ToolCall("finish", {"message": opt_str(args.get("final_thought")) or ""})
    if action == "think":
        return ToolCall("think", {"thought": opt_str(args.get("thought")) or ""})
    return ToolCall(action, {k: v for k, v in args.items() if k != "thought"})


# What OpenHands adds around the output of a command it stopped waiting for (metadata.prefix /
# metadata.suffix, also baked into ``content`` by some versions): harness notes, not output.
_WAIT_PREFIX_RE = re.compile(r"\A\[Below is the output of the previous command\.\]\n")
_WAIT_SUFFIX_RE = re.compile(
    r"\n*\[(?:The command has no new output after|The command timed out after|Command timed out after)"
    r"[^\n]*\]\s*\Z"
)


def strip_wait_notes(obs: str, md: dict[str, Any]) -> str:
    """The output of a command OpenHands stopped waiting for, without its wait notes."""
    for key in ("suffix", "prefix"):
        note = md.get(key)
        if isinstance(note, str) and note.strip():
            obs = obs.removesuffix(note) if key == "suffix" else obs.removeprefix(note)
    obs = _WAIT_PREFIX_RE.sub("", obs, count=1)
    m = _WAIT_SUFFIX_RE.search(obs, max(obs.rfind("\n["), 0)) if obs.rstrip().endswith("]") else None
    if m:
        obs = obs[: m.start()] + ("\n" if m.start() and not obs[: m.start()].endswith("\n") else "")
    return obs


# OpenHands' bash session of late 2024 (pexpect on a pty) recorded the terminal around the
# output: the command line it typed, echoed first, and its prompt, ``[Python Interpreter: …]``
# then ``user@host:cwd # ``, last. The prompt took the place of the output's final newline.
_PTY_PROMPT_RE = re.compile(r"\[Python Interpreter: [^\]\n]*\]\n[^\n]*@[^\n]*:[^\n]* ?[#$] ?\Z")


def _command(call: ToolCall) -> str:
    cmd = call.args.get("command")
    return cmd if isinstance(cmd, str) else ""


def strip_pty_frame(obs: str, command: str) -> tuple[str, bool]:
    """The output of ``command`` without the terminal's echo of it and the prompt after it
    (None of it is printed by the command); the final newline the prompt replaced is put back
    where the command prints one (``prints_final_newline``). Returns (output, framed)."""
    m = _PTY_PROMPT_RE.search(obs)
    if m is None:
        return obs, False
    out = obs[: m.start()]
    for echo in (command, command.strip()):
        if echo and out.startswith(echo) and out[len(echo) : len(echo) + 1] in ("", "\n"):
            out = out[len(echo) + 1 :]
            break
    if out and not out.endswith("\n") and prints_final_newline(command):
        out += "\n"
    return out, True


_EVENT_KEYS = frozenset(
    {
        "id",
        "timestamp",
        "source",
        "message",
        "action",
        "observation",
        "cause",
        "args",
        "extras",
        "tool_call_metadata",
        "llm_metrics",
        "timeout",
    }
)


def _as_event(ev: Any, where: str, n: int, pending: list[str]) -> dict[str, Any]:
    """One history item as an event with an id (and a cause, for an observation: the action
    just before it)."""
    ev = dict(as_dict(ev, where))
    if ev.get("id") is None:
        ev["id"] = f"h{n}"
    if ev.get("action") is not None:
        if not isinstance(ev.get("args"), dict):  # resolver: the arguments are the item's fields
            ev["args"] = {k: v for k, v in ev.items() if k not in _EVENT_KEYS}
        if ev.get("source") is None:
            ev["source"] = "user" if n == 0 and ev.get("action") == "message" else "agent"
        pending[:] = [str(ev["id"])]
    elif ev.get("observation") is not None:
        if ev.get("cause") is None and pending:
            ev["cause"] = pending[0]
        if not isinstance(ev.get("extras"), dict):
            code = ev.get("exit_code")
            ev["extras"] = {"metadata": {"exit_code": code}} if isinstance(code, int) else {}
        pending.clear()
    return cast(dict[str, Any], ev)


def _events(payload: dict[str, Any]) -> list[Any]:
    """The run's events: ``events``, or a ``history`` in any of its shapes."""
    if "events" in payload or "history" not in payload:
        return as_list(payload.get("events"), "events")
    history = as_list(payload.get("history"), "history")
    flat: list[Any] = []
    for i, item in enumerate(history):
        if isinstance(item, list):  # an [action, observation] pair
            flat += [x for x in item if isinstance(x, dict) and x]
        else:
            flat.append(as_dict(item, f"history[{i}]"))
    if all(ev.get("id") is not None for ev in flat[:5]) and any(ev.get("cause") is not None for ev in flat):
        return flat
    pending: list[str] = []
    return [_as_event(ev, f"history[{n}]", n, pending) for n, ev in enumerate(flat)]


def has_recorded_patch(payload: dict[str, Any]) -> bool:
    """Whether the record kept a patch field (``test_result.git_patch``, resolver ``git_patch``)."""
    result = payload.get("test_result")
    patch = result.get("git_patch") if isinstance(result, dict) else payload.get("git_patch")
    return isinstance(patch, str)


def recorded_patch(payload: dict[str, Any]) -> str:
    """The patch an evaluation or resolver record kept, with git diff's final newline."""
    result = payload.get("test_result")
    patch = result.get("git_patch") if isinstance(result, dict) else payload.get("git_patch")
    if not isinstance(patch, str) or not patch.strip():
        return ""
    if "\r\n" in patch and "\n" not in patch.replace("\r\n", ""):
        patch = patch.replace("\r\n", "\n")  # recorded through a pty, as the resolver's is
    return patch if patch.endswith("\n") else patch + "\n"


def parse_openhands(raw: RawRun) -> Episode:
    events = _events(raw.payload)
    counters: Counter[str] = Counter()
    steps: list[Step] = []
    by_id: dict[str, int] = {}
    task_text: str | None = None
    carry = ""
    model = "unknown"
    working_dir: str | None = None  # the shell's directory when the first command ran
    for i, item in enumerate(events):
        ev = as_dict(item, f"events[{i}]")
        args: dict[str, Any] = ev["args"] if isinstance(ev.get("args"), dict) else {}
        action = opt_str(ev.get("action"))
        source = opt_str(ev.get("source"))
        if action is not None:
            if action in _SKIP_ACTIONS:
                continue
            if action == "message":
                text = text_of(args.get("content", ev.get("message")), f"events[{i}].args.content")
                if source == "user":
                    if task_text is None:
                        task_text = text
                    else:
                        counters["parse/extra_user_message"] += 1
                else:
                    carry = join_thought(carry, strip_think(text))
                continue
            if source != "agent":
                continue
            call = _metadata_call(ev) or _action_call(action, args)
            meta = ev.get("tool_call_metadata")
            if isinstance(meta, dict) and isinstance(meta.get("model_response"), dict):
                model = opt_str(meta["model_response"].get("model")) or model
            thought = join_thought(carry, strip_think(opt_str(args.get("thought")) or ""))
            carry = ""
            steps.append(Step(thought=thought, call=call, observation="", returncode=None))
            if ev.get("id") is not None:
                by_id[str(ev["id"])] = len(steps) - 1
            continue
        if ev.get("observation") is None:
            continue
        cause = opt_str(ev.get("cause"))
        if cause is None or cause not in by_id:
            counters["parse/orphan_observation"] += 1
            continue
        extras = sub_dict(ev, "extras")
        shown = extras.get("formatted_output_and_error")
        text = (
            shown if isinstance(shown, str) and shown else text_of(ev.get("content"), f"events[{i}].content")
        )
        obs, rc = clean_observation(text, counters)
        md = sub_dict(extras, "metadata")
        code = md.get("exit_code")
        if (
            working_dir is None
            and isinstance(md.get("working_dir"), str)
            and md["working_dir"].startswith("/")
        ):
            working_dir = md["working_dir"]
        step = steps[by_id[cause]]
        if isinstance(step.call, ToolCall) and step.call.name == "execute_bash":
            # a pty's line ends, when every one is (restore_pty_newlines' rule)
            pty = "\r\n" in obs and "\n" not in obs.replace("\r\n", "")
            out, framed = strip_pty_frame(obs.replace("\r\n", "\n") if pty else obs, _command(step.call))
            if framed:
                obs = out
                counters["parse/openhands_pty_frame_removed"] += 1
        negative = isinstance(code, int) and not isinstance(code, bool) and code < 0
        # a record without the code still says it with the wait note OpenHands appended
        if negative or (rc is None and not isinstance(code, int) and _WAIT_SUFFIX_RE.search(obs)):
            # -1: still running when OpenHands stopped waiting (no new output, or its timeout);
            # -2: moved to a background session. Either way the command never finished.
            obs = strip_wait_notes(obs, md)
            step.timed_out = True
            counters["parse/timed_out"] += 1
        step.observation = obs
        step.returncode = code if isinstance(code, int) and not isinstance(code, bool) and code >= 0 else rc
    if task_text is None:
        raise ParseError("no_task", "no user message event")
    steps = without_refused_calls(steps, counters, lambda _n, st: is_rejected_call(st))
    payload = raw.payload
    patch = recorded_patch(payload)
    if patch and steps and isinstance(steps[-1].call, ToolCall) and steps[-1].call.name == "finish":
        steps[-1].observation = patch  # the run's submission, as the record kept it
    llm = payload.get("metadata", {}).get("llm_config") if isinstance(payload.get("metadata"), dict) else None
    if model == "unknown" and isinstance(llm, dict):
        model = opt_str(llm.get("model")) or model
    return record_episode(
        raw, payload, task_text, steps, counters, dialect="events", harness="openhands", model=model,
        root=_root(task_text, steps, working_dir),
    )  # fmt: skip


def record_episode(
    raw: RawRun,
    payload: dict[str, Any],
    task_text: str,
    steps: list[Step],
    counters: Counter[str],
    *,
    dialect: str,
    harness: str,
    model: str,
    root: str | None,
) -> Episode:
    """The Episode of an OpenHands record (V0 or V1 events): its task ids from the record and
    its ``instance``, its submission by :func:`_submission`."""
    instance: dict[str, Any] = payload["instance"] if isinstance(payload.get("instance"), dict) else {}
    ep = make_episode(
        task_text=task_text,
        steps=steps,
        dialect=dialect,
        counters=counters,
        instance_id=opt_str(payload.get("instance_id"))
        or (opt_str(payload.get("__file__")) or "").removesuffix(".json")
        or raw.source_uid,
        repo=opt_str(payload.get("repo")) or opt_str(instance.get("repo")) or "",
        pool="openhands",
        language="unknown",
        base_commit=opt_str(instance.get("base_commit") or payload.get("base_commit")),
        patch=None,
        origin=raw.origin,
        harness=harness,
        model=model,
        source_uid=raw.source_uid,
        resolved=_resolved(payload),
        fold_group=None,
        epoch=raw.epoch,
        root_hint=root,
    )
    ep.meta.submission = _submission(payload, steps)
    return ep


def _submission(payload: dict[str, Any], steps: list[Step]) -> str | None:
    """The patch the run submitted: the recorded patch ("" when it is empty) of a run whose
    agent called ``finish``. OpenHands records a ``git_patch`` of the workspace for every
    evaluated run, finished or stopped at its iteration limit; a run without a finish did not
    submit, and a record without the field does not say (both None)."""
    finished = bool(steps) and isinstance(steps[-1].call, ToolCall) and steps[-1].call.name == "finish"
    return recorded_patch(payload) if finished and has_recorded_patch(payload) else None


# the editor refusing a call's arguments before doing anything (openhands-aci's validation)
_REJECTED_CALL_RE = re.compile(
    r"\A(?:ERROR:\n)?Parameter [`'][\w-]+[`'] (?:is required for command: \w+"
    r"|is expected to be one of )"
)


def is_rejected_call(step: Step) -> bool:
    """A tool call the editor refused for its arguments before doing anything."""
    return isinstance(step.call, ToolCall) and _REJECTED_CALL_RE.match(step.observation) is not None


def without_refused_calls(
    steps: list[Step], counters: Counter[str], refused: Callable[[int, Step], bool]
) -> list[Step]:
    """The steps without the calls the harness refused (``refused(index, step)``): a refused call
    ran nothing, so like mini-swe-agent's format error the exchange is removed
    (``parse/rejected_call_removed``), with the same policy for the reply after it
    (``pipeline/parsers/format_errors.py``: its sentences about the refused call removed, the run
    dropped when what is left still refers to it)."""
    kept: list[Step] = []
    repair: list[int] = []
    after = False
    for n, st in enumerate(steps):
        if refused(n, st):
            counters["parse/rejected_call_removed"] += 1
            after = True
            continue
        if after:
            repair.append(len(kept))
        after = False
        kept.append(st)
    repair_after_format_errors(kept, repair, counters)
    return kept


def _resolved(payload: dict[str, Any]) -> Resolved:
    result = payload.get("test_result")
    report = result.get("report") if isinstance(result, dict) else None
    if isinstance(report, dict) and "resolved" in report:
        return resolved_from(report["resolved"])
    return resolved_from(payload["success"]) if "success" in payload else "unknown"


def _root(task_text: str, steps: list[Step], working_dir: str | None) -> str | None:
    """The run's checkout: the task's ``<uploaded_files>`` line or "in the directory …"; else
    the shell's directory when the first command ran (OpenHands starts in the workspace it
    mounted); else the first ``cd`` into a checkout; else the folder of the first editor path."""
    return (
        detect_root(task_text, [])
        or (working_dir.rstrip("/") or None if working_dir else None)
        or detect_root("", steps)
        or _tool_root(steps)
    )


def _tool_root(steps: list[Step]) -> str | None:
    """OpenHands mounts the repo under /workspace: the folder the first editor path is in
    (``/workspace`` itself for a file written there)."""
    for s in steps:
        path = s.call.args.get("path") if isinstance(s.call, ToolCall) else None
        if isinstance(path, str) and path.startswith("/workspace/"):
            parts = path.split("/")
            return "/".join(parts[:3]) if len(parts) > 3 else "/workspace"
    return None


MACHINES: Machines = {
    "openhands": (
        "openhands",
        "OpenHands CodeAct in non-function-calling mode (`execute_bash`, `str_replace_editor`, `think`, `finish`)",
    ),
}


def is_openhands_record(obj: dict[str, Any]) -> bool:
    """An OpenHands evaluation ``output.jsonl`` line (``instruction``, ``history``, ``test_result``)
    or resolver output (``history``, ``git_patch``): its history holds events, ``[action,
    observation]`` pairs or bare action/observation dicts, never chat messages."""
    history = obj.get("history")
    if not isinstance(history, list) or not (
        "instruction" in obj or "test_result" in obj or "git_patch" in obj
    ):
        return False
    head = [x for h in history[:20] for x in (h if isinstance(h, list) else [h])]
    return any(isinstance(x, dict) and ("action" in x or "observation" in x) for x in head) and not any(
        isinstance(x, dict) and "role" in x for x in head[:5]
    )


def _detect(obj: Any) -> bool:
    return is_event_list(obj) or (
        isinstance(obj, dict) and (is_openhands_record(obj) or is_event_list(obj.get("events")))
    )


FORMAT = Format(
    kind="openhands",
    parse=parse_openhands,
    harness="openhands",
    machines=MACHINES,
    name="OpenHands",
    detect=_detect,
    list_key="events",
)
