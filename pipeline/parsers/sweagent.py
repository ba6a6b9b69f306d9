"""SWE-agent ``.traj`` files: 0.x text actions and 1.x ``history`` with OpenAI ``tool_calls``.

Text actions (0.x, and the windowed-editor demos that put the action in ``<command>``) come from
``trajectory[i].action``: a SWE-agent special command (``open``, ``edit N:M … end_of_edit``, …)
becomes ``ToolCall(<command>, {"args": <rest of first line>, "body": <lines up to end_of_edit>})``,
anything else is a plain shell ``Bash``. Files whose history carries ``tool_calls`` are read
from the history so the calls keep their structured arguments.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

import orjson

from pipeline.episode import Bash, Episode, ParseError, RawRun, Step, ToolCall
from pipeline.parsers.common import (
    Msg,
    as_list,
    clean_observation,
    first_user_index,
    language_hint,
    make_episode,
    messages_episode,
    normalize_message,
    opt_str,
    restore_pty_newlines,
    strip_think,
    sub_dict,
    swesmith_commit,
    text_of,
)
from pipeline.parsers.format import Format, is_message_list

# SWE-agent's tool bundles (windowed editor, search, submit): everything else is a shell command.
SPECIAL_COMMANDS = frozenset({
    "open", "goto", "scroll_up", "scroll_down", "create", "edit", "insert", "append",
    "find_file", "search_dir", "search_file", "submit", "get_symbols", "filemap",
    "exit_forfeit", "exit_cost", "exit_context", "exit_api", "exit_format",
})
CURDIR_RE = re.compile(r"\(Current directory: (/[^)\n]*)\)")


def text_action(action: str) -> ToolCall | Bash:
    """One SWE-agent text action as a call: special commands keep their raw argument text."""
    a = action.strip()
    first, _, rest = a.partition("\n")
    word, _, args = first.strip().partition(" ")
    if word not in SPECIAL_COMMANDS:
        return Bash(a)
    body = rest
    if body == "end_of_edit":
        body = ""
    elif body.endswith("\nend_of_edit"):
        body = body[: -len("\nend_of_edit")]
    return ToolCall(name=word, args={"args": args.strip(), "body": body})


def _json_field(x: Any) -> dict[str, Any]:
    if isinstance(x, dict):
        return x
    if isinstance(x, str) and x.strip().startswith("{"):
        try:
            v = orjson.loads(x)
        except orjson.JSONDecodeError:
            return {}
        return v if isinstance(v, dict) else {}
    return {}


def _history(rec: dict[str, Any]) -> list[Msg]:
    raw = rec.get("history")
    if raw is None:
        return []
    out: list[Msg] = []
    for i, m in enumerate(as_list(raw, "history")):
        if isinstance(m, dict) and m.get("is_demo"):
            continue  # in-context demonstrations are not this run
        out.append(normalize_message(m, f"history[{i}]"))
    return out


def _trajectory_steps(traj: list[Any], counters: Counter[str]) -> list[Step]:
    steps: list[Step] = []
    for i, st in enumerate(traj):
        if not isinstance(st, dict):
            raise ParseError("bad_shape", f"trajectory[{i}]: {type(st).__name__}")
        action = st.get("action")
        if not isinstance(action, str):
            raise ParseError("bad_shape", f"trajectory[{i}].action: {type(action).__name__}")
        if not action.strip():
            counters["parse/empty_action"] += 1
            continue
        thought = st.get("thought")
        obs, rc = clean_observation(text_of(st.get("observation"), f"trajectory[{i}].observation"),
                                    counters)
        steps.append(Step(thought=strip_think(thought if isinstance(thought, str) else ""),
                          call=text_action(action), observation=obs, returncode=rc))
    return steps


def parse_sweagent(raw: RawRun) -> Episode:
    rec = raw.payload
    replay = _json_field(rec.get("replay_config"))
    agent = sub_dict(replay, "agent")
    model_cfg = sub_dict(agent, "model")
    ps = sub_dict(replay, "problem_statement")
    env = sub_dict(replay, "env")
    repo_cfg = sub_dict(env, "repo")
    environment = opt_str(rec.get("environment"))
    file_stem = (opt_str(rec.get("__file__")) or "").removesuffix(".traj")
    instance_id = (opt_str(ps.get("id")) or (environment if environment and "__" in environment else None)
                   or file_stem or raw.source_uid)
    hist = _history(rec)
    traj_raw = rec.get("trajectory")
    traj = as_list(traj_raw, "trajectory") if traj_raw is not None else []
    if not hist:
        raise ParseError("no_task", "SWE-agent trajectory without a history")
    task_text = hist[first_user_index(hist)].text
    common: dict[str, Any] = dict(
        instance_id=instance_id,
        repo="",
        pool="swesmith" if swesmith_commit(instance_id) else "swe-agent",
        language=language_hint(task_text) if language_hint(task_text) != "unknown" else "python",
        base_commit=opt_str(repo_cfg.get("base_commit")),
        patch=None,
        origin=raw.origin,
        harness="swe-agent",
        model=opt_str(model_cfg.get("name")) or opt_str(rec.get("model")) or "unknown",
        source_uid=raw.source_uid,
        resolved="unknown",
        fold_group=None,
        epoch=raw.epoch,
    )
    root = None
    for st in traj:
        wd = _json_field(st.get("state")).get("working_dir") if isinstance(st, dict) else None
        if isinstance(wd, str) and wd.startswith("/"):
            root = wd.rstrip("/") or "/"
            break
    if root is None:
        for m in hist:
            cm = CURDIR_RE.search(m.text)
            if cm:
                root = cm.group(1).rstrip("/")
                break
    if any(m.tool_calls for m in hist):
        return restore_pty_newlines(messages_episode(hist, root_hint=root, **common))
    counters: Counter[str] = Counter()
    # Without a trajectory, each history assistant message carries ``action`` and ``thought``.
    steps = _trajectory_steps(traj, counters) if traj else _history_text_steps(rec, counters)
    return restore_pty_newlines(make_episode(task_text=task_text, steps=steps, dialect="sweagent_text",
                                             counters=counters, root_hint=root, **common))


def _history_text_steps(rec: dict[str, Any], counters: Counter[str]) -> list[Step]:
    steps: list[Step] = []
    raw = [m for m in as_list(rec.get("history"), "history") if isinstance(m, dict) and not m.get("is_demo")]
    for i, m in enumerate(raw):
        if m.get("role") != "assistant" or not isinstance(m.get("action"), str):
            continue
        nxt = raw[i + 1] if i + 1 < len(raw) else None
        obs_text = text_of(nxt.get("content"), f"history[{i + 1}].content") if nxt and nxt.get(
            "role") in ("user", "tool") else ""
        obs, rc = clean_observation(obs_text, counters)
        thought = m.get("thought")
        steps.append(Step(thought=strip_think(thought if isinstance(thought, str) else ""),
                          call=text_action(m["action"]), observation=obs, returncode=rc))
    return steps


def _detect(obj: Any) -> bool:
    return isinstance(obj, dict) and isinstance(obj.get("history"), list) and (
        "trajectory" in obj or "info" in obj or "environment" in obj or "replay_config" in obj
        or is_message_list(obj["history"]))


FORMAT = Format(kind="sweagent", parse=parse_sweagent, harness="swe-agent",
                machines={"swe-agent": ("swe-agent", "SWE-agent (windowed file viewer and editor, bash)")},
                name="SWE-agent", detect=_detect)
