"""From a parsed and converted run to one row of the work table (schemas/run.py WORK)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from pipeline.core.episode import Episode, RawRun
from pipeline.parsers import harness_of, machine_of
from schemas.datasets import dataset_name

if TYPE_CHECKING:
    from pipeline.convert import Converted

# SWE-smith ids: owner__repo.<commit8>.<method>__<hash> or owner__repo.<commit8>.pr_<N>
_SWESMITH = re.compile(r"^[\w.-]+__[\w.-]+?\.([0-9a-f]{7,40})\.(\w+?)(?:__\w+)?$")
_PR_SUFFIX = re.compile(r"\.pr_\d+$")
_MECHANICAL = (
    "func_pm",
    "func_basic",
    "class_pm",
    "class_basic",
    "pm_",
    "ctrl_",
    "op_",
    "remove_",
    "replace_",
    "shuffle_",
    "swap_",
)


def family_of(instance_id: str) -> str:
    """``pr`` for real pull requests, else SWE-smith's method class (lm, combine, mechanical)."""
    if _PR_SUFFIX.search(instance_id):
        return "pr"
    m = _SWESMITH.match(instance_id)
    if not m:
        return "pr"  # SWE-bench-style ids and other pools are real PRs
    method = m.group(2)
    if method.startswith(("lm_rewrite", "lm_modify", "lm_")):
        return "lm"
    if method.startswith("combine"):
        return "combine"
    if method.startswith("pr_"):
        return "pr"
    return "mechanical"


def swesmith_commit(instance_id: str) -> str | None:
    m = _SWESMITH.match(instance_id)
    return m.group(1) if m else None


def normalise_repo(repo: str) -> str:
    """``owner/repo`` and URL forms → ``owner__repo`` (the catalog's and seed 002's spelling)."""
    r = repo.strip().removesuffix(".git")
    for prefix in ("https://github.com/", "http://github.com/", "github.com/"):
        if r.startswith(prefix):
            r = r[len(prefix) :]
    return r.replace("/", "__") if "__" not in r else r


def dataset_of(raw: RawRun) -> str:
    return dataset_name(raw.origin, machine_of(harness_of(raw)))


def work_row(raw: RawRun, ep: Episode, conv: Converted) -> dict[str, Any]:
    task, meta = ep.task, ep.meta
    commit = task.base_commit or swesmith_commit(task.instance_id) or ""
    return {
        "instance_id": task.instance_id,
        "messages": conv.messages,
        "family": family_of(task.instance_id),
        "repo": normalise_repo(task.repo),
        "language": task.language or "unknown",
        "verified": meta.resolved == "resolved",
        "resolved": meta.resolved,
        "patch": task.patch or "",
        "model": meta.model or "unknown",
        "harness": meta.harness or harness_of(raw),
        "id_kind": "pool",
        "upstream_id": task.instance_id,
        "affine_source": task.pool or ("SWE-Lego" if raw.kind == "swelego" else ""),
        "origin": raw.origin,
        "source_uid": raw.source_uid,
        "submitted": conv.submitted,
        "affine_fold_group": meta.fold_group,
        "epoch": raw.epoch,
        "dialect": meta.dialect,
        "dataset": dataset_of(raw),
        "base_commit": commit,
        "problem_statement": conv.problem_statement or task.problem_statement,
        "commands": conv.commands,
        "outputs": conv.outputs,
        "returncodes": conv.returncodes,
        "raw_bytes": raw.raw_bytes,
    }
