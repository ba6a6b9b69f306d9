"""Affine trace envelopes: verifiers trace v1 with structured OpenAI tool calls."""

from __future__ import annotations

from typing import Any

from pipeline.core.episode import Episode, ParseError, RawRun
from pipeline.parsers.affine_view import AFFINE_MACHINES, graph_messages, policy_harness
from pipeline.parsers.assembly import messages_episode, resolved_from
from pipeline.parsers.fields import as_dict, as_list, opt_str, sub_dict
from pipeline.parsers.format import Format
from pipeline.parsers.workdir import declared_workdir

# harnesses whose every call is a structured tool call: a reply's text is narration, and a
# fenced block in it an example, never a command (``walk_messages(structured=True)``)
STRUCTURED_HARNESSES = frozenset({"claude_code", "pi", "kimi_code", "hermes_agent"})


def _trace_resolved(trace: dict[str, Any]) -> str:
    rewards = trace.get("rewards")
    solved = rewards.get("solved") if isinstance(rewards, dict) else None
    score = solved.get("score") if isinstance(solved, dict) else solved
    if isinstance(score, bool) or not isinstance(score, int | float):
        return "unknown"
    return resolved_from(score)


def parse_trace(raw: RawRun) -> Episode:
    env = raw.payload
    trace = as_dict(env.get("trace"), "trace")
    task = sub_dict(env, "task")
    policy = sub_dict(env, "policy")
    nodes = as_list(trace.get("nodes"), "trace.nodes")
    if not nodes:
        raise ParseError("no_steps", "trace.nodes is empty")
    msgs, counters = graph_messages(nodes, "trace.nodes", linear_default=True, message_key="message")
    instance_id = opt_str(task.get("sid")) or opt_str(task.get("uid")) or ""
    if not instance_id:
        raise ParseError("missing_field", "task.sid")
    ep = messages_episode(
        msgs,
        instance_id=instance_id,
        repo=opt_str(task.get("repo")) or "",
        pool=opt_str(env.get("source")) or "unknown",
        language=opt_str(task.get("language")) or "unknown",
        base_commit=opt_str(task.get("base_commit")),
        patch=opt_str(task.get("patch")),
        origin=raw.origin,
        harness=opt_str(policy.get("harness")) or "unknown",
        model=opt_str(policy.get("model")) or "unknown",
        source_uid=raw.source_uid,
        resolved=_trace_resolved(trace),
        fold_group=None,
        epoch=raw.epoch,
        # an interactive harness's declared working directory is the checkout, whatever its form
        root_hint=declared_workdir(msgs),
        structured=opt_str(policy.get("harness")) in STRUCTURED_HARNESSES,
    )
    ep.counters.update(counters)
    return ep


def _detect(obj: Any) -> bool:
    return isinstance(obj, dict) and isinstance(obj.get("trace"), dict) and isinstance(obj.get("task"), dict)


FORMAT = Format(
    kind="trace",
    parse=parse_trace,
    harness=policy_harness,
    machines=AFFINE_MACHINES,
    name="Affine trace",
    detect=_detect,
    origin="Affine corpus",
    sources=("affine-trace",),
)
