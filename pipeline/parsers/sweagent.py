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

from pipeline.core.episode import Bash, Episode, ParseError, RawRun, Step, ToolCall
from pipeline.parsers.assembly import language_hint, make_episode, messages_episode
from pipeline.parsers.dialects import strip_think
from pipeline.parsers.fields import as_list, opt_str, sub_dict, text_of
from pipeline.parsers.format import Format, is_message_list
from pipeline.parsers.messages import Msg, first_user_index, normalize_message
from pipeline.parsers.observations import clean_observation, restore_pty_newlines
from pipeline.parsers.sweagent_outputs import mark_timeouts, restore_final_newlines, terminal_ls
from pipeline.parsers.sweagent_tools import (
    CURDIR_RE,
    REVIEW_TOOL,
    declared_tools,
    handoff_tools,
    text_action,
    tool_actions,
)
from pipeline.text.ids import swesmith_commit


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
        obs, rc = clean_observation(text_of(st.get("observation"), f"trajectory[{i}].observation"), counters)
        steps.append(
            Step(
                thought=strip_think(thought if isinstance(thought, str) else ""),
                call=text_action(action),
                observation=obs,
                returncode=rc,
            )
        )
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
    instance_id = (
        opt_str(ps.get("id"))
        or (environment if environment and "__" in environment else None)
        or file_stem
        or raw.source_uid
    )
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
    info = rec.get("info") if isinstance(rec.get("info"), dict) else {}
    systems = [m.text for m in hist if m.role == "system"]
    tools = declared_tools("\n\n\n".join(systems)) | handoff_tools(rec)
    if any(m.tool_calls for m in hist):
        ep = messages_episode(hist, root_hint=root, **common)
        _trajectory_submit(ep, traj)
        mark_timeouts(ep)
        tool_actions(ep, tools)  # before the newlines: a tool run from the shell prints as the tool
        restore_final_newlines(ep)  # 1.x (function calling, swe-rex) stripped them
        terminal_ls(ep)
    else:
        counters: Counter[str] = Counter()
        # Without a trajectory, each history assistant message carries ``action`` and ``thought``.
        steps = _trajectory_steps(traj, counters) if traj else _history_text_steps(rec, counters)
        ep = make_episode(
            task_text=task_text,
            steps=steps,
            dialect="sweagent_text",
            counters=counters,
            root_hint=root,
            **common,
        )
        tool_actions(ep, tools)
    mark_timeouts(ep)
    info = info if isinstance(info, dict) else {}
    status = opt_str(info.get("exit_status"))
    settle_exits(ep, status, opt_str(info.get("submission")))
    settle_submits(ep, opt_str(info.get("submission")))
    ep.meta.submission = recorded_submission(ep, status, info.get("submission"))
    return restore_pty_newlines(ep)


def submit_argument(call: ToolCall | Bash) -> str | None:
    """None when ``call`` is not SWE-agent's ``submit``; else its argument text, "" for the patch
    submit (``submit`` takes no argument in the SWE bundles; CTF bundles submit a flag)."""
    if isinstance(call, Bash):
        return "" if call.command.strip() == "submit" else None
    if call.name != "submit":
        return None
    if set(call.args) <= {"args", "body"}:
        return (str(call.args.get("args") or "") + str(call.args.get("body") or "")).strip()
    return orjson.dumps(call.args).decode() if call.args else ""


def settle_submits(ep: Episode, submission: str | None = None) -> None:
    """The run ends at its last real submit (SWE-agent ends a run when a submit submits).

    A patch submit followed by more steps was a review stage: its call becomes ``REVIEW_TOOL``
    (``parse/sweagent_review_submit``). The final submit's observation is the submitted patch:
    the recorded one, else the record's ``info.submission`` (``parse/submission_from_info``)
    when the step printed something else (``Exited (autosubmitted)``) or nothing.
    """
    steps = ep.steps
    for st in steps[:-1]:
        if submit_argument(st.call) == "":
            st.call = ToolCall(REVIEW_TOOL, {}, st.call.call_id if isinstance(st.call, ToolCall) else None)
            ep.counters["parse/sweagent_review_submit"] += 1
    last = steps[-1] if steps else None
    ep.meta.submitted = last is not None and submit_argument(last.call) == ""
    if last is None or not ep.meta.submitted or not submission or not submission.strip():
        return
    if not last.observation.lstrip("\r\n").startswith("diff "):
        last.observation = submission
        ep.counters["parse/submission_from_info"] += 1


# SWE-agent's exits on an error or a limit (``exit_cost``, ``exit_context``, …): 0.x records them as
# the step's action, 1.x as the step's exit status. Neither is a command: the harness stopped the
# run, then tried an autosubmission (``git add -A && git diff --cached``, mini's submit command),
# recorded as ``info.exit_status == "submitted (<exit>)"`` when it produced the patch.
EXIT_ACTIONS = frozenset(
    {"exit_cost", "exit_context", "exit_api", "exit_format", "exit_error", "exit_forfeit", "exit_early"}
)


def record_says_submitted(status: str | None) -> bool | None:
    """What ``info.exit_status`` says of the submission: None when there is no status."""
    if not status:
        return None
    return status.strip().startswith("submitted")


def settle_exits(ep: Episode, status: str | None, submission: str | None) -> None:
    """Harness exits are no turns (``parse/sweagent_exit_removed``); a run its record says was
    submitted (autosubmitted after the exit, or a submit the saved history lost) ends with the
    submit, whose reply is the record's patch (``parse/sweagent_autosubmission``); a final submit
    of a run its record says did not submit is removed (``parse/sweagent_unsubmitted_submit_removed``)."""
    kept = [st for st in ep.steps if not (isinstance(st.call, ToolCall) and st.call.name in EXIT_ACTIONS)]
    if len(kept) < len(ep.steps):
        ep.counters["parse/sweagent_exit_removed"] += len(ep.steps) - len(kept)
        ep.steps = kept
    says = record_says_submitted(status)
    if says is False and ep.steps and submit_argument(ep.steps[-1].call) == "":
        # a submit the record says did not submit (the harness failed on it): no submit turn
        ep.steps.pop()
        ep.counters["parse/sweagent_unsubmitted_submit_removed"] += 1
    # (a run ending with a CTF flag submit was "submitted" too: its flag, not a patch)
    if ep.steps and says is True and submit_argument(ep.steps[-1].call) is None:
        ep.steps.append(Step(thought="", call=ToolCall("submit", {}), observation=submission or ""))
        ep.counters["parse/sweagent_autosubmission"] += 1


def normal_patch(patch: str) -> str:
    """A recorded patch as the run's final message shows it: the pty's ``\r\n`` line ends undone
    (as in its observations) and the newline SWE-agent puts before it dropped."""
    if "\r\n" in patch and not re.search(r"(?<!\r)\n", patch):
        patch = patch.replace("\r\n", "\n")
    return patch.lstrip("\r\n")


def recorded_submission(ep: Episode, status: str | None, submission: Any) -> str | None:
    """``Meta.submission`` of a run that ends with its submit (``settle_submits``): the patch the
    record says it submitted ("" for a submit with no patch); None for a run that does not submit
    or whose submit the record says nothing about (no status, no patch in ``info``, no diff shown)."""
    says = record_says_submitted(status)
    if says is False or not ep.meta.submitted:
        return None
    if isinstance(submission, str) and submission.strip():
        return normal_patch(submission)
    # no patch in ``info``: the diff the final submit printed, if it printed one
    last = ep.steps[-1] if ep.steps else None
    shown = last.observation.lstrip("\r\n") if last and submit_argument(last.call) == "" else ""
    if shown.startswith("diff "):
        return normal_patch(shown)
    if says is None and not isinstance(submission, str):
        return None  # a submit step, and no record of what it submitted
    return ""


def _trajectory_submit(ep: Episode, traj: list[Any]) -> None:
    """A submit present only in ``trajectory`` (the saved history was cut before it) is kept:
    appended when the history's last step is not a submit and the trajectory's last step is."""
    if not traj or not ep.steps or submit_argument(ep.steps[-1].call) == "":
        return
    st = traj[-1]
    if not isinstance(st, dict) or not isinstance(st.get("action"), str) or st["action"].strip() != "submit":
        return
    obs, rc = clean_observation(text_of(st.get("observation"), "trajectory[-1].observation"), ep.counters)
    thought = st.get("thought")
    ep.steps.append(
        Step(
            thought=strip_think(thought if isinstance(thought, str) else ""),
            call=ToolCall("submit", {}),
            observation=obs,
            returncode=rc,
        )
    )
    ep.counters["parse/trajectory_submit_recovered"] += 1


def _history_text_steps(rec: dict[str, Any], counters: Counter[str]) -> list[Step]:
    steps: list[Step] = []
    raw = [m for m in as_list(rec.get("history"), "history") if isinstance(m, dict) and not m.get("is_demo")]
    for i, m in enumerate(raw):
        if m.get("role") != "assistant" or not isinstance(m.get("action"), str):
            continue
        nxt = raw[i + 1] if i + 1 < len(raw) else None
        obs_text = (
            text_of(nxt.get("content"), f"history[{i + 1}].content")
            if nxt and nxt.get("role") in ("user", "tool")
            else ""
        )
        obs, rc = clean_observation(obs_text, counters)
        thought = m.get("thought")
        steps.append(
            Step(
                thought=strip_think(thought if isinstance(thought, str) else ""),
                call=text_action(m["action"]),
                observation=obs,
                returncode=rc,
            )
        )
    return steps


def _detect(obj: Any) -> bool:
    return (
        isinstance(obj, dict)
        and isinstance(obj.get("history"), list)
        and (
            "trajectory" in obj
            or "info" in obj
            or "environment" in obj
            or "replay_config" in obj
            or is_message_list(obj["history"])
        )
    )


FORMAT = Format(
    kind="sweagent",
    parse=parse_sweagent,
    harness="swe-agent",
    machines={"swe-agent": ("swe-agent", "SWE-agent (windowed file viewer and editor, bash)")},
    name="SWE-agent",
    detect=_detect,
)
