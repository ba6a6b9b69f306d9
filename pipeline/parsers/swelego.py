"""SWE-Lego rows: OpenHands non-function-calling text."""

from __future__ import annotations

from pipeline.core.episode import Episode, RawRun
from pipeline.parsers.assembly import language_hint, messages_episode
from pipeline.parsers.fields import opt_str
from pipeline.parsers.format import Format
from pipeline.parsers.messages import first_user_text, row_task_messages
from pipeline.parsers.openhands import MACHINES as OPENHANDS_MACHINES


def _label(dialect: str) -> str:
    # `<function=…>` actions with `EXECUTION RESULT of [tool]:` results are OpenHands' own text mode.
    return "openhands" if dialect in ("xml", "tool_call_xml") else dialect


def parse_swelego(raw: RawRun) -> Episode:
    row = raw.payload
    instance_id, msgs = row_task_messages(row)
    user = first_user_text(msgs)
    lang = language_hint(user)
    return messages_episode(
        msgs,
        dialect=_label,
        instance_id=instance_id,
        repo=opt_str(row.get("repo")) or "",
        pool="SWE-Lego",
        language=lang if lang != "unknown" else "python",
        base_commit=opt_str(row.get("base_commit")),
        patch=opt_str(row.get("patch")),
        origin=raw.origin,
        harness="openhands",
        model=opt_str(row.get("model")) or "unknown",
        source_uid=raw.source_uid,
        resolved=raw.resolved_hint if raw.resolved_hint in ("resolved", "not resolved") else "unknown",
        fold_group=None,
        epoch=raw.epoch,
    )


# SWE-Lego files are read by sources/swelego.py, never detected in a user's file
FORMAT = Format(
    kind="swelego",
    parse=parse_swelego,
    harness="openhands",
    machines=OPENHANDS_MACHINES,
    sources=("swelego",),
)
