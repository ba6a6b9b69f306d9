"""mini-swe-agent ``*.traj.json``: v1 (```` ```bash ````) and v2 (```` ```mswea_bash_command ````,
or native ``bash`` tool calls with ``role: "tool"`` results and ``extra.returncode``), as a bare
message list or ``{info, messages, trajectory_format}``; and its pre-1.0 form (micro-swe-agent).

Pre-1.0 runs recorded ``<returncode>\nN\n</returncode>\n<stderr>…</stderr>\n<stdout>…</stdout>``:
the observation becomes the one stream that printed (both printed: ``parse/split_streams``, as
mini >= 1.0 merges them in an order the record does not keep). Their sentinels
``MICRO_SWE_AGENT_FINAL_OUTPUT`` and ``NANO_SWE_AGENT_FINAL_OUTPUT`` are a submit, and the submission they recorded lost its final
newline (``"\n".join(lines[1:])``), which ``git diff`` always prints: it is put back.

``info.exit_status == "Submitted"`` with ``info.submission`` is the record saying what the run
submitted (``Meta.submission``, held against the final message by the verify step).
"""

from __future__ import annotations

from typing import Any

from pipeline.core.episode import Bash, Episode, RawRun, Step
from pipeline.parsers.assembly import SUBMIT_MARKERS, language_hint, messages_episode
from pipeline.parsers.dialects import action_regex
from pipeline.parsers.fields import opt_str, sub_dict
from pipeline.parsers.format import Format, is_message_list
from pipeline.parsers.messages import first_user_text, normalize_messages

PRE1_SENTINELS = ("MICRO_SWE_AGENT_FINAL_OUTPUT", "NANO_SWE_AGENT_FINAL_OUTPUT")


def _dig(d: Any, *keys: str) -> Any:
    for k in keys:
        if not isinstance(d, dict):
            return None
        d = d.get(k)
    return d


def parse_miniswe(raw: RawRun) -> Episode:
    rec = raw.payload
    msgs = normalize_messages(rec.get("messages"), "messages")
    info = sub_dict(rec, "info")
    file_name = opt_str(rec.get("__file__")) or ""
    instance_id = (
        opt_str(rec.get("instance_id"))
        or opt_str(info.get("instance_id"))
        or file_name.removesuffix(".json").removesuffix(".traj")
        or raw.source_uid
    )
    user = first_user_text(msgs)
    ep = messages_episode(
        msgs,
        instance_id=instance_id,
        repo=opt_str(rec.get("repo")) or "",
        pool=opt_str(rec.get("source")) or "mini-swe-agent",
        language=language_hint(user),
        base_commit=opt_str(rec.get("base_commit")),
        patch=None,  # info.submission is the run's own diff, not the task's patch
        origin=raw.origin,
        harness="mini-swe-agent",
        model=opt_str(_dig(info, "config", "model", "model_name")) or opt_str(rec.get("model")) or "unknown",
        source_uid=raw.source_uid,
        resolved="unknown",
        fold_group=None,
        epoch=raw.epoch,
        # the harness's own action regex where its config records one (a fork may accept an
        # indented closing fence that mini's default does not): the commands it ran
        fence_re=action_regex(_dig(info, "config", "agent", "action_regex")),
    )
    last = ep.steps[-1]
    if (
        isinstance(last.call, Bash)
        and any(k in last.call.command for k in PRE1_SENTINELS)
        and last.observation.lstrip("\n").startswith("diff --git")
        and not last.observation.endswith("\n")
    ):
        last.observation += "\n"
        ep.counters["parse/submission_newline_restored"] += 1
    ep.meta.submission = _submission(info, last)
    return ep


# pre-1.0 mini-swe-agent's final message for an empty submission
_EMPTY_SUBMISSION = "EMPTY_OUTPUT"


def _submission(info: dict[str, Any], last: Step) -> str | None:
    """The patch the record says the run submitted, or None when it does not say it submitted.

    A bare message list has no ``info``: there the final user message after a submit command is
    mini's own record of the submission (everything its submit printed after the sentinel)."""
    final = last.observation
    if not info:
        submits = isinstance(last.call, Bash) and any(k in last.call.command for k in SUBMIT_MARKERS)
        return ("" if final == _EMPTY_SUBMISSION else final) if submits else None
    sub = info.get("submission")
    if info.get("exit_status") != "Submitted" or not isinstance(sub, str):
        return None
    # a pre-1.0 record lost the final newline that the observation got back above
    return final if final == sub + "\n" and sub.lstrip("\n").startswith("diff --git") else sub


def has_mini_marker(obj: dict[str, Any]) -> bool:
    """A mini-swe-agent trajectory file says so (``trajectory_format``) or carries its ``info``."""
    fmt, info = obj.get("trajectory_format"), obj.get("info")
    return (isinstance(fmt, str) and fmt.startswith("mini-swe-agent")) or (
        isinstance(info, dict) and ("mini_version" in info or "config" in info)
    )


def _detect(obj: Any) -> bool:
    if is_message_list(obj):
        return True  # a bare mini-swe message list (its test fixtures)
    if not isinstance(obj, dict):
        return False
    msgs = obj.get("messages")
    if not (isinstance(msgs, list | str) and msgs):
        return False
    return has_mini_marker(obj) or is_message_list(msgs)


FORMAT = Format(
    kind="miniswe",
    parse=parse_miniswe,
    harness="mini-swe-agent",
    machines={"mini-swe-agent": ("mini-swe-agent", "mini-swe-agent (one ```bash block per turn)")},
    name="mini-swe-agent",
    detect=_detect,
)
