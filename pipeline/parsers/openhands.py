"""OpenHands event streams (``trajs/*.json``): a list of action and observation events.

Agent actions become Steps; the tool call is taken from ``tool_call_metadata`` (the model's own
``tool_calls``, so names and arguments are as the model sent them), else rebuilt from the
action type. Observations are matched to their action by ``cause``; return codes come from
``extras.metadata.exit_code``. Editor results use ``extras.formatted_output_and_error``, the
text the model was shown, rather than OpenHands' internal diff.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from pipeline.episode import Episode, ParseError, RawRun, Step, ToolCall
from pipeline.parsers.common import (
    as_dict,
    as_list,
    clean_observation,
    decode_args,
    join_thought,
    make_episode,
    opt_str,
    strip_think,
    sub_dict,
    text_of,
)
from pipeline.parsers.format import Format, Machines, is_event_list

_SKIP_ACTIONS = frozenset({"system", "recall", "condensation", "condensation_request",
                           "change_agent_state", "null", "pause", "resume"})
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
    msg = choices[0].get("message") if isinstance(choices, list) and choices and isinstance(
        choices[0], dict) else None
    calls = msg.get("tool_calls") if isinstance(msg, dict) else None
    if isinstance(calls, list):
        for i, tc in enumerate(calls):
            if isinstance(tc, dict) and opt_str(tc.get("id")) == call_id:
                fn = sub_dict(tc, "function") if isinstance(tc.get("function"), dict) else tc
                return ToolCall(name=name, args=decode_args(fn.get("arguments"),
                                                            f"tool_call_metadata.tool_calls[{i}]"),
                                call_id=call_id)
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
        return ToolCall("str_replace_editor",
                        {k: args[k] for k in _EDITOR_KEYS if args.get(k) is not None})
    if action == "finish":
        return ToolCall("finish", {"message": opt_str(args.get("final_thought")) or ""})
    if action == "think":
        return ToolCall("think", {"thought": opt_str(args.get("thought")) or ""})
    return ToolCall(action, {k: v for k, v in args.items() if k != "thought"})


def parse_openhands(raw: RawRun) -> Episode:
    events = as_list(raw.payload.get("events"), "events")
    counters: Counter[str] = Counter()
    steps: list[Step] = []
    by_id: dict[str, int] = {}
    task_text: str | None = None
    carry = ""
    model = "unknown"
    for i, item in enumerate(events):
        ev = as_dict(item, f"events[{i}]")
        args = sub_dict(ev, "args")
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
        text = shown if isinstance(shown, str) and shown else text_of(ev.get("content"),
                                                                     f"events[{i}].content")
        obs, rc = clean_observation(text, counters)
        md = sub_dict(extras, "metadata")
        code = md.get("exit_code")
        step = steps[by_id[cause]]
        step.observation = obs
        step.returncode = code if isinstance(code, int) and not isinstance(code, bool) and code >= 0 else rc
    if task_text is None:
        raise ParseError("no_task", "no user message event")
    # OpenHands mounts the repo under /workspace; the tool paths show which folder.
    root = None
    for s in steps:
        path = s.call.args.get("path") if isinstance(s.call, ToolCall) else None
        if isinstance(path, str) and path.startswith("/workspace/"):
            parts = path.split("/")
            root = "/".join(parts[:3]) if len(parts) > 3 else "/workspace"
            break
    return make_episode(
        task_text=task_text, steps=steps, dialect="events", counters=counters,
        instance_id=opt_str(raw.payload.get("instance_id"))
        or (opt_str(raw.payload.get("__file__")) or "").removesuffix(".json") or raw.source_uid,
        repo=opt_str(raw.payload.get("repo")) or "", pool="openhands", language="unknown",
        base_commit=None, patch=None, origin=raw.origin, harness="openhands", model=model,
        source_uid=raw.source_uid, resolved="unknown", fold_group=None, epoch=raw.epoch,
        root_hint=root)


MACHINES: Machines = {
    "openhands": ("openhands", "OpenHands CodeAct in non-function-calling mode (`execute_bash`, `str_replace_editor`, `think`, `finish`)"),
}


def _detect(obj: Any) -> bool:
    return is_event_list(obj) or (isinstance(obj, dict) and is_event_list(obj.get("events")))


FORMAT = Format(kind="openhands", parse=parse_openhands, harness="openhands", machines=MACHINES,
                name="OpenHands", detect=_detect, list_key="events")
