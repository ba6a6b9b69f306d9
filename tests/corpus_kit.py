"""Build small Affine corpora by hand for tests: manifests, chunks and broken variants."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pipeline.devkit.synth import affine_writer

VIEW_DIR = "views/duel_turns@v4/chunks"


def view_record(
    rollout: str,
    *,
    instance_id: str = "pallets__flask.a1b2c3d4.func_pm_remove_cond__x1",
    harness: str = "mini_swe_textbased",
    commands: list[tuple[str, str]] | None = None,
    repo: str = "pallets/flask",
    stratum: str = "coding:0042",
) -> dict[str, Any]:
    """A bash-dialect view record: system, task, then (```bash command, observation) pairs."""
    commands = commands or [
        ("ls /testbed", "README.md\nsrc\n"),
        ("cat /testbed/src/app.py", "def f():\n    return 1\n"),
    ]
    nodes: list[dict[str, Any]] = [
        {
            "parent": None,
            "role": "system",
            "content": "You are a helpful assistant that can interact with a computer.\n"
            "Your response must contain exactly ONE bash code block.",
        },
        {
            "parent": 0,
            "role": "user",
            "content": "<pr_description>\nConsider the following PR description:\n"
            f"Fix the bug in {instance_id}\n</pr_description>",
        },
    ]
    for cmd, out in commands:
        nodes.append(
            {
                "parent": len(nodes) - 1,
                "role": "assistant",
                "content": f"THOUGHT: look around.\n\n```bash\n{cmd}\n```",
            }
        )
        nodes.append(
            {
                "parent": len(nodes) - 1,
                "role": "user",
                "content": f"<returncode>0</returncode>\n<output>\n{out}</output>",
            }
        )
    nodes.append(
        {
            "parent": len(nodes) - 1,
            "role": "assistant",
            "content": "THOUGHT: done.\n\n```bash\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached\n```",
        }
    )
    return {
        "view": "duel_turns@v4",
        "rollout_id": rollout,
        "traj_id": f"{rollout}-t",
        "instance_id": instance_id,
        "repo": repo,
        "model": "engy/qwen3.8-27b",
        "policy": {"id": "teacher_textbased", "harness": harness, "action_kind": "bash"},
        "source": "swesmith",
        "language": "python",
        "stratum": stratum,
        "action_kind": "bash",
        "generated_at": "2026-08-11T12:00:00+00:00",
        "nodes": nodes,
        "turns": [],
    }


def jsonl(records: list[Any]) -> bytes:
    return affine_writer.jsonl(records)


def write_chunk(root: Path, key: str, raw: bytes) -> str:
    """Write gzip(raw) at key; returns the sha256 of the uncompressed bytes."""
    return affine_writer.write_chunk(root, key, raw, level=9)


def write_epoch(root: Path, epoch: int, shards: list[dict[str, Any]]) -> str:
    """Publish a manifest revision listing ``shards`` (key, sha256, n_trajectories, active)."""
    manifest = {
        "corpus_epoch": epoch,
        "schema_version": 3,
        "view_spec": "duel_turns@v4",
        "created_at": f"2026-09-{epoch:02d}T00:00:00Z",
        "shards": [{"format": "view_v4", "active": True, **s} for s in shards],
        "prev_manifest": affine_writer.current_manifest_sha(root),
    }
    return affine_writer.write_manifest(root, manifest)


def add_epoch(
    root: Path, epoch: int, records_per_chunk: list[list[Any]], keep: list[dict[str, Any]] | None = None
) -> list[dict[str, Any]]:
    """Write new chunks for ``epoch`` and a manifest listing them plus ``keep`` (earlier shards)."""
    shards = list(keep or [])
    for i, recs in enumerate(records_per_chunk):
        key = f"{VIEW_DIR}/view_{epoch:04d}_{i:04d}.jsonl.gz"
        sha = write_chunk(root, key, jsonl(recs))
        shards.append({"key": key, "sha256": sha, "n_trajectories": len(recs)})
    write_epoch(root, epoch, shards)
    return shards
