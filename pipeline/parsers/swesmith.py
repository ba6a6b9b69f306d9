"""SWE-smith trajectory rows (HF ``SWE-bench/SWE-smith-trajectories``, ``ft_xml`` files).

One row: ``{"messages": [...] | "<json>", "instance_id", "model"?, "resolved"?, "patch"?}``.
The style is read from the messages: ``tool`` (structured ``tool_calls``), ``xml``
(``<function=…>`` text) or ``ticks`` (a bare ```` ``` ```` fence).
"""

from __future__ import annotations

from typing import Any

from pipeline.core.episode import Episode, RawRun
from pipeline.parsers.assembly import language_hint, messages_episode, resolved_from
from pipeline.parsers.fields import opt_str
from pipeline.parsers.format import Format
from pipeline.parsers.messages import first_user_text, row_task_messages
from pipeline.parsers.miniswe import has_mini_marker
from pipeline.parsers.observations import restore_pty_newlines
from pipeline.parsers.sweagent import settle_submits
from pipeline.parsers.sweagent_outputs import mark_timeouts, restore_final_newlines, terminal_ls
from pipeline.parsers.sweagent_tools import declared_tools, tool_actions

_STYLE = {"tool_calls": "tool", "xml": "xml", "tool_call_xml": "xml", "ticks": "ticks"}


def parse_swesmith(raw: RawRun) -> Episode:
    row = raw.payload
    instance_id, msgs = row_task_messages(row)
    user = first_user_text(msgs)
    # SWE-smith runs were recorded by SWE-agent through a pty
    ep = messages_episode(
        msgs,
        bare_fence=True,
        dialect=lambda d: _STYLE.get(d, d),
        instance_id=instance_id,
        repo=opt_str(row.get("repo")) or "",
        pool="swesmith",
        language=language_hint(user),
        base_commit=opt_str(row.get("base_commit")),
        patch=opt_str(row.get("patch")),
        origin=raw.origin,
        harness="swe-smith",
        model=opt_str(row.get("model")) or "unknown",
        source_uid=raw.source_uid,
        resolved=resolved_from(row.get("resolved")),
        fold_group=None,
        epoch=raw.epoch,
    )
    tool_actions(ep, declared_tools(next((m.text for m in msgs if m.role == "system"), "")))
    mark_timeouts(ep)
    settle_submits(ep)  # SWE-agent's review-on-submit: the run ends at its last submit
    restore_final_newlines(ep)  # recorded by SWE-agent 1.x (swe-rex), which stripped them
    terminal_ls(ep)
    return restore_pty_newlines(ep)


def _detect(obj: Any) -> bool:
    """A message list (or its JSON text) with the task's ``instance_id``, without mini-swe-agent's marks."""
    if not isinstance(obj, dict):
        return False
    msgs = obj.get("messages")
    return isinstance(msgs, list | str) and bool(msgs) and "instance_id" in obj and not has_mini_marker(obj)


FORMAT = Format(
    kind="swesmith",
    parse=parse_swesmith,
    harness="swe-smith",
    machines={"swe-smith": ("swe-smith", "SWE-agent as used by SWE-smith (bash and `str_replace_editor`)")},
    name="SWE-smith",
    detect=_detect,
)
