"""SWE-Lego rows: OpenHands non-function-calling text (DESIGN §2.2)."""

from __future__ import annotations

from pipeline.episode import Episode, ParseError, RawRun
from pipeline.parsers.common import language_hint, messages_episode, normalize_messages, opt_str


def _label(dialect: str) -> str:
    # `<function=…>` actions with `EXECUTION RESULT of [tool]:` results are OpenHands' own text mode.
    return "openhands" if dialect in ("xml", "tool_call_xml") else dialect


def parse_swelego(raw: RawRun) -> Episode:
    row = raw.payload
    instance_id = opt_str(row.get("instance_id")) or ""
    if not instance_id:
        raise ParseError("missing_field", "instance_id")
    msgs = normalize_messages(row.get("messages"), "messages")
    user = next((m.text for m in msgs if m.role == "user"), "")
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
