"""Shards: published schema and order, byte-sized row groups and shards, byte-identical rebuilds.

Also home of the hand-built sample (WORK rows, ledger, stats) the publish and audit tests share.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.publish.shards import shard_name, split_by_bytes, write_shards
from schemas.run import PUBLISHED, PUBLISHED_NAMES
from tests.builders import published_row as work_row
from tests.builders import sample_rows, work_frame

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
    again = write_shards(
        frame.sample(fraction=1.0, shuffle=True, seed=3), tmp_path / "b", max_shard_bytes=30_000
    )
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
@given(
    st.lists(st.integers(min_value=0, max_value=500), max_size=60), st.integers(min_value=1, max_value=800)
)
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
            assert sum(sizes[a : b + 1]) > limit
