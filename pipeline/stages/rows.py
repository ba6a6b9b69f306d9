"""From a parsed and converted run to one row of the work table (schemas/run.py WORK)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pipeline.core.episode import Episode, RawRun
from pipeline.parsers import harness_of, machine_of
from pipeline.text.ids import family_of, id_base_commit, normalise_repo
from schemas.datasets import dataset_name

if TYPE_CHECKING:
    from pipeline.convert import Converted


def dataset_of(raw: RawRun) -> str:
    return dataset_name(raw.origin, machine_of(harness_of(raw)))


def work_row(raw: RawRun, ep: Episode, conv: Converted) -> dict[str, Any]:
    task, meta = ep.task, ep.meta
    commit = task.base_commit or id_base_commit(task.instance_id) or ""
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
