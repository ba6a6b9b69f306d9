"""An Episode assembled from what a parser read: its submit, its repo root, its language, its
verdict, its task."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from pipeline.core.episode import Bash, Episode, Meta, ParseError, Resolved, Step, Task, ToolCall
from pipeline.parsers.messages import Msg, first_user_index
from pipeline.parsers.walker import walk_messages
from pipeline.text.ids import HEX_RE, repo_from_id, swesmith_commit
from schemas.miniswe import INPUT_SENTINELS

SUBMIT_MARKERS = INPUT_SENTINELS
# Affine completion.py's finish-tool names (case-insensitive).
FINISH_RE = re.compile(
    r"^(submit|finish|done|complete|task_complete|complete_task|attempt_completion|final_answer"
    r"|submit_answer|finish_task)$",
    re.IGNORECASE,
)


def is_submit(call: ToolCall | Bash) -> bool:
    if isinstance(call, Bash):
        return any(k in call.command for k in SUBMIT_MARKERS) or call.command.strip() == "submit"
    return bool(FINISH_RE.match(call.name))


ROOT_UPLOADED_RE = re.compile(r"<uploaded_files>\s*\n?\s*(/[^\s<]+)\s*\n?\s*</uploaded_files>")
ROOT_CD_RE = re.compile(
    r"(?:^|&&|;|\n)\s*cd\s+(/(?:testbed|repo|app|workspace/[\w.-]+|home/[\w.-]+/[\w.-]+"
    r"|tmp/[\w./-]+|[\w-]+__[\w.-]+))/?\s*(?:&&|;|$)",
    re.MULTILINE,
)
ROOT_DIR_RE = re.compile(r"in the directory (/[^\s.,]+(?:\.[^\s.,]+)*)")


def detect_root(task_text: str, steps: list[Step]) -> str | None:
    """The repo root the harness used, when the run shows it."""
    m = ROOT_UPLOADED_RE.search(task_text) or ROOT_DIR_RE.search(task_text)
    if m:
        return m.group(1).rstrip("/")
    for s in steps[:20]:
        cmd = (
            s.call.command
            if isinstance(s.call, Bash)
            else str(s.call.args.get("command", ""))
            if isinstance(s.call.args.get("command"), str)
            else ""
        )
        cm = ROOT_CD_RE.search(cmd) if "cd" in cmd else None  # a cd needs its letters
        if cm:
            return cm.group(1).rstrip("/")
    return None


LANG_RE = re.compile(r"uploaded an? ([A-Za-z+#]+) code repository")


def language_hint(task_text: str) -> str:
    m = LANG_RE.search(task_text)
    return m.group(1).lower() if m else "unknown"


def resolved_from(value: Any) -> Resolved:
    """A record's own verdict: bools, 0/1, or "resolved" / "not resolved" / "unknown"; anything else is unknown."""
    if isinstance(value, bool):
        return "resolved" if value else "not resolved"
    if isinstance(value, int | float):
        return "resolved" if value > 0 else "not resolved"
    if isinstance(value, str):
        v = value.strip().lower()
        if v == "resolved":
            return "resolved"
        if v in ("not resolved", "unresolved", "not_resolved"):
            return "not resolved"
    return "unknown"


def make_episode(
    *,
    task_text: str,
    steps: list[Step],
    dialect: str,
    counters: Counter[str],
    instance_id: str,
    repo: str,
    pool: str,
    language: str,
    base_commit: str | None,
    patch: str | None,
    origin: str,
    harness: str,
    model: str,
    source_uid: str,
    resolved: Resolved,
    fold_group: str | None,
    epoch: int | None,
    root_hint: str | None = None,
) -> Episode:
    from pipeline.parsers.problem import extract_problem

    if not steps:
        raise ParseError("no_steps", f"{source_uid}: no tool call or command found")
    statement, fallback = extract_problem(task_text)
    if fallback:
        counters["parse/problem_statement_fallback"] += 1
    if not statement.strip():
        raise ParseError("no_task", f"{source_uid}: empty first user message")
    counters[f"parse/dialect/{dialect}"] += 1
    # SWE-smith configs put the branch name (= instance id) in base_commit; only a hash is a checkout.
    if base_commit is not None and not HEX_RE.match(base_commit):
        counters["parse/base_commit_not_hash"] += 1
        base_commit = None
    commit = base_commit or swesmith_commit(instance_id)
    task = Task(
        instance_id=instance_id,
        repo=repo or repo_from_id(instance_id),
        problem_statement=statement,
        pool=pool,
        language=language,
        base_commit=commit,
        patch=patch or None,
    )
    meta = Meta(
        origin=origin,
        harness=harness,
        model=model,
        source_uid=source_uid,
        dialect=dialect,
        resolved=resolved,
        submitted=is_submit(steps[-1].call),
        fold_group=fold_group,
        epoch=epoch,
        repo_root=root_hint or detect_root(task_text, steps),
    )
    return Episode(task=task, meta=meta, steps=steps, counters=counters)


def messages_episode(msgs: list[Msg], **kw: Any) -> Episode:
    """Walk a message list and assemble the Episode (task text = first user message)."""
    counters: Counter[str] = Counter()
    bare = kw.pop("bare_fence", False)
    structured = kw.pop("structured", False)
    fence_re = kw.pop("fence_re", None)
    dialect_override = kw.pop("dialect", None)
    steps, dialect = walk_messages(msgs, counters, bare_fence=bare, structured=structured, fence_re=fence_re)
    task_text = msgs[first_user_index(msgs)].text
    return make_episode(
        task_text=task_text,
        steps=steps,
        counters=counters,
        dialect=dialect_override(dialect) if callable(dialect_override) else dialect,
        **kw,
    )
