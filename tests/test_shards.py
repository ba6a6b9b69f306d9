"""Shards: published schema and order, byte-sized row groups and shards, byte-identical rebuilds.

Also home of the hand-built sample (WORK rows, ledger, stats) the publish and audit tests share.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.publish.shards import shard_name, split_by_bytes, write_shards
from schemas.run import DROPS, PUBLISHED, PUBLISHED_NAMES, WORK, polars_schema

SYSTEM = "You are a helpful assistant that can interact with a computer."
AFFINE = "https://data.affine.io"


def messages(task: str, commands: list[str], outputs: list[str], submitted: bool) -> list[dict[str, str]]:
    """A mini-swe-agent v1 trajectory: system, task, (assistant, observation)*, optional submit."""
    msgs = [{"role": "system", "content": SYSTEM},
            {"role": "user", "content": f"<pr_description>\n{task}\n</pr_description>"}]
    for cmd, out in zip(commands, outputs, strict=True):
        msgs.append({"role": "assistant", "content": f"THOUGHT: run it.\n\n```bash\n{cmd}\n```"})
        msgs.append({"role": "user", "content": f"<returncode>0</returncode>\n<output>\n{out}</output>"})
    if submitted:
        msgs.append({"role": "assistant", "content": "THOUGHT: done.\n\n```bash\necho COMPLETE_TASK_AND_SUBMIT_"
                     "FINAL_OUTPUT && git add -A && git diff --cached\n```"})
    return msgs


def work_row(i: int, *, dataset: str = "mini-coder-affine-bash", epoch: int = 84, resolved: str = "unknown",
             language: str = "python", pool: str = "swesmith", harness: str = "bash", id_kind: str = "pool",
             pad: int = 0) -> dict[str, Any]:
    affine = dataset.startswith("mini-coder-affine")
    uid = (f"{AFFINE}/views/duel_turns@v4/chunks/view_{epoch:04d}_0000.jsonl.gz#L{i + 1}" if affine
           else f"swelego:resolved-00000-of-00003.parquet#row={i}")
    iid = f"owner__repo{i % 5}.abcdef12.func_pm_op_swap__{i:04x}"
    commands = ["ls", "cat setup.py"]
    outputs = ["setup.py\n", "x" * pad + "\n"]
    return {
        "instance_id": iid, "messages": messages(f"Fix bug {i}", commands, outputs, submitted=i % 4 != 3),
        "family": "mechanical", "repo": f"owner__repo{i % 5}", "language": language,
        "verified": resolved == "resolved", "resolved": resolved, "patch": "", "model": "m-1",
        "harness": harness, "id_kind": id_kind, "upstream_id": iid, "affine_source": pool,
        "origin": "Affine corpus" if affine else "SWE-Lego", "source_uid": uid, "submitted": i % 4 != 3,
        "affine_fold_group": "completion" if affine else "",
        "epoch": epoch, "dialect": "bash", "dataset": dataset, "base_commit": "", "problem_statement": f"Fix bug {i}",
        "commands": commands, "outputs": outputs, "returncodes": [0, 0], "raw_bytes": 1000 + pad,
    }


def work_frame(rows: list[dict[str, Any]]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=polars_schema(WORK))


def sample_rows() -> list[dict[str, Any]]:
    """Two datasets over two epochs, with varied resolved/language/pool/id_kind values."""
    langs = ["python"] * 5 + ["java"] * 2 + ["rust"]
    affine = [work_row(i, epoch=84 if i < 6 else 85, language=langs[i],
                       resolved=["unknown", "unknown", "resolved", "not resolved"][i % 4],
                       id_kind="albedo" if i in (1, 2) else "pool") for i in range(8)]
    lego = [work_row(100 + i, dataset="mini-coder-swe-lego-openhands", epoch=0, harness="openhands",
                     pool="SWE-Lego", resolved="resolved") for i in range(3)]
    return affine + lego


def sample_drops() -> pl.DataFrame:
    def d(uid: str, epoch: int, dataset: str, stage: str, reason: str, detail: str) -> dict[str, Any]:
        return {"source_uid": uid, "epoch": epoch, "dataset": dataset, "stage": stage, "reason": reason,
                "detail": detail}

    view = f"{AFFINE}/views/duel_turns@v4/chunks/view_0084_0001.jsonl.gz"
    bash = "mini-coder-affine-bash"
    rows = [
        d(f"{view}#L1", 84, "", "quarantine", "bad_json", "line 1: unexpected character"),
        d(f"{view}#L2", 84, bash, "parse", "no_steps", "no assistant turn"),
        d(f"{view}#L3", 84, bash, "convert", "unknown_tool", "tool `browser`"),
        d(f"{view}#L4", 84, bash, "task_dedup", "benchmark_task", "swebench_lite django__django-11099"),
        d(f"{view}#L5", 84, bash, "solution_leak", "git_history", "git log --all shows the fix commit"),
        d(f"{view}#L6", 85, bash, "solution_leak", "git_history", "git log --all shows the fix commit"),
        d(f"{view}#L7", 85, bash, "solution_leak", "network_fetch", "curl github.com/owner/repo/pull/3.diff"),
        d(f"{view}#L8", 85, bash, "benchmark_leak", "gold_patch", "patch of swebench_lite astropy__astropy-12907"),
        d(f"{view}#L9", 85, bash, "validate", "submit", "submit command not last"),
        d(f"{view}#L10", 85, bash, "traj_dedup", "near", f"kept={AFFINE}/views/x#L1 jaccard=0.912"),
        d(f"{view}#L11", 85, bash, "traj_dedup", "exact", f"kept={AFFINE}/views/x#L2 jaccard=1.000"),
        d("swelego:resolved-00001-of-00003.parquet#row=5", 0, "mini-coder-swe-lego-openhands", "solution_leak",
          "package_fetch", "pip download requests==2.31"),
    ]
    return pl.DataFrame(rows, schema=polars_schema(DROPS))


def sample_stats(frame: pl.DataFrame, drops: pl.DataFrame, *, checked: bool = True) -> dict[str, Any]:
    """stats.json as the ledger would write it for this frame + drops (ARCHITECTURE.md format)."""
    quarantined = drops.filter(pl.col("stage") == "quarantine")
    dropped = drops.filter(pl.col("stage") != "quarantine")

    def by(df: pl.DataFrame, col: str) -> dict[str, int]:
        return {str(k): int(n) for k, n in df.group_by(col).len().sort(col).iter_rows() if k != ""}

    every = pl.concat([frame.select("epoch", "dataset"), drops.select("epoch", "dataset")])
    n_in, n_pub, n_drop, n_q = every.height, frame.height, dropped.height, quarantined.height
    reasons = Counter(f"{s}/{r}" for s, r in dropped.select("stage", "reason").iter_rows())
    return {
        "ingested": {"total": n_in, "by_epoch": by(every, "epoch"), "by_dataset": by(every, "dataset")},
        "published": {"total": n_pub, "by_epoch": by(frame, "epoch"), "by_dataset": by(frame, "dataset")},
        "dropped": {"total": n_drop, "by_epoch": by(dropped, "epoch"), "by_dataset": by(dropped, "dataset")},
        "quarantined": {"total": n_q, "by_epoch": by(quarantined, "epoch"), "by_dataset": {}},
        "drops": dict(sorted(reasons.items())),
        "counters": {"parse/dialect/bash": 9, "parse/dialect/openhands": 4, "convert/tool/bash": 20,
                     "convert/tool/str_replace_editor": 3, "scrub/github_token": 2, "scrub/aws_access_key": 1,
                     "convert/turns": 40},
        "benchmarks": {"checked": checked, "tables": ["swebench_lite", "swebench_verified"] if checked else []},
        "invariant": {"ok": n_in == n_pub + n_drop + n_q, "ingested": n_in, "published": n_pub,
                      "dropped": n_drop, "quarantined": n_q},
    }


# ------------------------------------------------------------------------------------------ tests


def test_shard_has_published_columns_in_order_sorted_by_source_uid(tmp_path: Path) -> None:
    rows = sample_rows()[:8]
    frame = work_frame(list(reversed(rows)))  # WORK columns, unsorted
    paths = write_shards(frame, tmp_path / "data")
    assert [p.name for p in paths] == ["train-00000-of-00001.parquet"]
    table = pq.read_table(paths[0])
    assert table.schema.equals(PUBLISHED, check_metadata=False)
    assert table.column_names == PUBLISHED_NAMES
    uids = table["source_uid"].to_pylist()
    assert uids == sorted(r["source_uid"] for r in rows)
    meta = pq.ParquetFile(paths[0]).metadata
    assert meta.row_group(0).column(0).compression == "ZSTD"
    # the page index (column and offset indexes) is written for every column chunk
    assert meta.row_group(0).column(1).has_offset_index
    back = pl.read_parquet(paths[0])
    first = min(rows, key=lambda r: r["source_uid"])
    assert back.row(0, named=True)["messages"] == first["messages"]


def test_row_groups_and_shards_sized_by_bytes(tmp_path: Path) -> None:
    # 30 rows of ~20 KB each; row groups <= 64 KB and shards <= 150 KB of uncompressed data
    frame = work_frame([work_row(i, pad=20_000) for i in range(30)])
    paths = write_shards(frame, tmp_path / "data", max_shard_bytes=150_000, row_group_bytes=64_000)
    n = len(paths)
    assert n > 1
    assert [p.name for p in paths] == [shard_name(i, n) for i in range(n)]
    total = 0
    for p in paths:
        meta = pq.ParquetFile(p).metadata
        assert p.stat().st_size <= 150_000
        groups = [meta.row_group(g) for g in range(meta.num_rows and meta.num_row_groups)]
        assert all(g.num_rows <= 3 for g in groups)  # 3 × ~20 KB fit in 64 KB, 4 do not
        total += meta.num_rows
    assert total == 30
    # rows stay in source_uid order across shard boundaries
    uids = pl.concat([pl.read_parquet(p) for p in paths])["source_uid"].to_list()
    assert uids == sorted(uids)


def test_rebuild_is_byte_identical_and_leaves_mtime(tmp_path: Path) -> None:
    frame = work_frame([work_row(i, pad=5_000) for i in range(12)])
    first = write_shards(frame, tmp_path / "a", max_shard_bytes=30_000)
    again = write_shards(frame.sample(fraction=1.0, shuffle=True, seed=3), tmp_path / "b", max_shard_bytes=30_000)
    assert [p.read_bytes() for p in first] == [p.read_bytes() for p in again]
    # nothing time-dependent in the file metadata
    meta = pq.ParquetFile(first[0]).metadata
    assert meta.created_by.startswith("parquet-cpp-arrow")
    assert set((meta.metadata or {}).keys()) <= {b"ARROW:schema"}
    mtimes = [p.stat().st_mtime_ns for p in first]
    write_shards(frame, tmp_path / "a", max_shard_bytes=30_000)
    assert [p.stat().st_mtime_ns for p in first] == mtimes


def test_stale_shards_removed_when_shard_count_changes(tmp_path: Path) -> None:
    data = tmp_path / "data"
    many = write_shards(work_frame([work_row(i, pad=5_000) for i in range(12)]), data, max_shard_bytes=20_000)
    assert len(many) > 2
    (data / "notes.txt").write_text("kept")
    one = write_shards(work_frame([work_row(0)]), data)
    assert sorted(p.name for p in data.iterdir()) == ["notes.txt", "train-00000-of-00001.parquet"]
    assert pq.read_metadata(one[0]).num_rows == 1


def test_empty_frame_writes_one_loadable_empty_shard(tmp_path: Path) -> None:
    paths = write_shards(work_frame([]), tmp_path / "data")
    assert pq.read_table(paths[0]).num_rows == 0
    assert pq.read_schema(paths[0]).equals(PUBLISHED, check_metadata=False)


def test_frame_missing_a_published_column_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="patch"):
        write_shards(work_frame([work_row(0)]).drop("patch"), tmp_path)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=500), max_size=60), st.integers(min_value=1, max_value=800))
def test_split_by_bytes_covers_rows_within_limit(sizes: list[int], limit: int) -> None:
    import numpy as np

    ranges = split_by_bytes(np.array(sizes, dtype=np.int64), limit)
    # contiguous cover of every row, in order
    assert [i for a, b in ranges for i in range(a, b)] == list(range(len(sizes)))
    for a, b in ranges:
        assert b > a
        # within the limit unless a single row is bigger than it
        assert sum(sizes[a:b]) <= limit or b - a == 1
        # greedy: the next row would not have fitted
        if b < len(sizes):
            assert sum(sizes[a:b + 1]) > limit
