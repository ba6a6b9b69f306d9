"""Parquet shards for one dataset: the published schema, a stable row order, byte-identical rebuilds.

Layout follows ``datasets.push_to_hub``: ``data/train-00000-of-0000N.parquet``. Shards and row
groups are sized by the *uncompressed* Arrow bytes of their rows (the convention of ``datasets``'
``MAX_SHARD_SIZE``/``MAX_ROW_GROUP_SIZE``), so a shard file can never exceed the limit: zstd does
not grow text, and the footer is small. Sizing depends only on the sorted rows, so the same input
always gives the same shard boundaries and the same bytes.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.io.fileio import atomic_write_bytes
from pipeline.store.rowbytes import ROW_BYTES, row_bytes_expr
from schemas.run import PUBLISHED, PUBLISHED_NAMES

# The publishing order: source_uid is unique per run; the other keys only make the order total
# if it ever is not.
ORDER = ["source_uid", "instance_id", "model"]
# Given the index of a dataset's runs (``source_uid``, ``dataset``, ``__file`` of a row group)
# and the columns to read, the rows of those runs sorted by ORDER (a stable sort): how a store
# that keeps rows where they were first written (pipeline.store.state) hands them to the writer.
RowReader = Callable[[pl.DataFrame, list[str]], pa.Table]
MAX_SHARD_BYTES = 500 * 2**20
# ≤ 100 MB as the Hub convention allows; 32 MB bounds what the publisher holds at once (one row
# group uncompressed, in polars and Arrow form) so its memory does not grow with a dataset
ROW_GROUP_BYTES = 32 * 2**20
SHARD_RE = re.compile(r"^train-(\d{5})-of-(\d{5})\.parquet$")
# Content-defined chunking (datasets' defaults) keeps pages stable when rows are added, so a
# re-upload to the Hub's Xet storage sends only the changed chunks. It is deterministic.
CDC_OPTIONS = {"min_chunk_size": 256 * 1024, "max_chunk_size": 1024 * 1024, "norm_level": 0}


def shard_name(index: int, count: int) -> str:
    return f"train-{index:05d}-of-{count:05d}.parquet"


def published_table(frame: pl.DataFrame) -> pa.Table:
    """The frame's 17 published columns in order, sorted by source_uid, cast to the Arrow schema."""
    return sorted_rows(frame).to_arrow().cast(PUBLISHED)


def sorted_rows(frame: pl.DataFrame) -> pl.DataFrame:
    """The published columns in the stable publishing order."""
    missing = [n for n in PUBLISHED_NAMES if n not in frame.columns]
    if missing:
        raise ValueError(f"frame lacks published columns: {missing}")
    return frame.select(PUBLISHED_NAMES).sort(ORDER, maintain_order=True)


def split_by_bytes(sizes: np.ndarray, limit: int) -> list[tuple[int, int]]:
    """Consecutive [start, end) ranges whose byte sum stays within ``limit`` (a lone bigger row
    gets its own range). One searchsorted per range, not a Python step per row."""
    n = len(sizes)
    if n == 0:
        return []
    cum = np.cumsum(sizes, dtype=np.int64)
    ranges: list[tuple[int, int]] = []
    start = 0
    while start < n:
        base = cum[start - 1] if start else 0
        end = int(np.searchsorted(cum, base + limit, side="right"))
        end = max(end, start + 1)
        ranges.append((start, end))
        start = end
    return ranges


def write_bytes_if_changed(dest: Path, data: bytes) -> bool:
    """Atomic write of ``data`` to ``dest`` (temp + rename), skipped when the bytes are the same."""
    return atomic_write_bytes(dest, data)


def _shard_bytes(tables: Iterable[pa.Table]) -> bytes:
    """One shard in memory, compressed (≤ max_shard_bytes), so an unchanged shard is never touched
    on disk; each table is one row group and only one is uncompressed at a time."""
    sink = pa.BufferOutputStream()
    with pq.ParquetWriter(
        sink, PUBLISHED, compression="zstd", write_page_index=True, use_content_defined_chunking=CDC_OPTIONS
    ) as writer:
        for table in tables:
            writer.write_table(table, row_group_size=max(1, table.num_rows))
    data: bytes = sink.getvalue().to_pybytes()
    return data


@dataclass
class ShardPlan:
    """Where every row goes, decided from a narrow scan (keys and sizes), before any row is read."""

    uids: list[str]  # sorted publishing order
    sizes: np.ndarray
    groups: list[tuple[int, int]]  # row groups as [start, end) over ``uids``
    shards: list[tuple[int, int]]  # shards as [first, last) over ``groups``
    keys: pl.DataFrame | None = None  # the index rows in ``uids`` order, for a RowReader

    @property
    def num_bytes(self) -> int:
        return int(self.sizes.sum())


def plan_shards(
    frame: pl.DataFrame | pl.LazyFrame,
    *,
    max_shard_bytes: int = MAX_SHARD_BYTES,
    row_group_bytes: int = ROW_GROUP_BYTES,
) -> ShardPlan:
    """Plan from the rows (their sizes computed here), or from an index with ``__bytes`` (then
    the plan also keeps the index rows a :data:`RowReader` needs)."""
    lazy = frame.lazy()
    names = lazy.collect_schema().names()
    indexed = ROW_BYTES in names
    missing = [n for n in PUBLISHED_NAMES if n not in names]
    if missing and not indexed:
        raise ValueError(f"frame lacks published columns: {missing}")
    extra = [c for c in ("dataset", "__file") if indexed and c in names]
    keys = (
        lazy.select(
            "source_uid",
            "instance_id",
            "model",
            *extra,
            (pl.col(ROW_BYTES) if indexed else row_bytes_expr()).alias("__size"),
        )
        .sort(ORDER, maintain_order=True)
        .collect(engine="streaming")
    )
    sizes = keys["__size"].to_numpy() if keys.height else np.zeros(0, dtype=np.int64)
    groups = split_by_bytes(sizes, min(row_group_bytes, max_shard_bytes))
    starts = np.array([a for a, _ in groups], dtype=np.int64)
    group_sizes = np.add.reduceat(sizes, starts) if len(starts) else np.zeros(0, dtype=np.int64)
    # Shards hold whole row groups; an empty dataset still gets one (empty) shard so it loads.
    shards = split_by_bytes(group_sizes, max_shard_bytes) or [(0, 0)]
    index = keys.select("source_uid", *extra) if extra else None
    return ShardPlan(keys["source_uid"].to_list(), sizes, groups, shards, index)


def _row_group(
    lazy: pl.LazyFrame, plan: ShardPlan, a: int, b: int, rows_of: RowReader | None = None
) -> pa.Table:
    """Rows ``a..b`` of the plan, read by their source_uid range (Parquet statistics prune the
    rest of the store, so only the row groups holding them are read), or by ``rows_of``."""
    lo, hi = plan.uids[a], plan.uids[b - 1]
    if rows_of is not None and plan.keys is not None:
        table = rows_of(plan.keys.slice(a, b - a), PUBLISHED_NAMES).select(PUBLISHED_NAMES)
    else:
        rows = sorted_rows(lazy.filter(pl.col("source_uid").is_between(pl.lit(lo), pl.lit(hi))).collect())
        table = rows.to_arrow()
    if table.num_rows != b - a:
        raise ValueError(
            f"source_uid is not unique between {lo!r} and {hi!r}: {table.num_rows} rows, want {b - a}"
        )
    return table.cast(PUBLISHED)


def write_shards(
    frame: pl.DataFrame | pl.LazyFrame,
    data_dir: Path,
    *,
    max_shard_bytes: int = MAX_SHARD_BYTES,
    row_group_bytes: int = ROW_GROUP_BYTES,
    plan: ShardPlan | None = None,
    rows_of: RowReader | None = None,
    hashes: dict[Path, str] | None = None,
) -> list[Path]:
    """Write ``frame`` (PUBLISHED or WORK columns; eager or a lazy scan of the run store) as
    ``data_dir/train-0000i-of-0000N.parquet``, holding one row group of rows at a time.

    Returns the shard paths in order. Shards of an earlier build that are not part of this one
    (another shard count) are removed; unchanged shards are left untouched (same mtime).
    ``hashes``: the sha256 of each shard's bytes is put there (hashed from memory, in the
    writing thread, so the build's manifest need not read the shards back).
    """
    data_dir.mkdir(parents=True, exist_ok=True)
    lazy = frame.lazy()
    plan = plan or plan_shards(lazy, max_shard_bytes=max_shard_bytes, row_group_bytes=row_group_bytes)
    count = len(plan.shards)
    paths: list[Path] = []
    for index, (g0, g1) in enumerate(plan.shards):
        dest = data_dir / shard_name(index, count)
        tables: Iterator[pa.Table] = (_row_group(lazy, plan, a, b, rows_of) for a, b in plan.groups[g0:g1])
        if g0 == g1:  # the empty dataset's one shard
            tables = iter([PUBLISHED.empty_table()])
        data = _shard_bytes(tables)
        write_bytes_if_changed(dest, data)
        if hashes is not None:
            hashes[dest] = hashlib.sha256(data).hexdigest()
        del data
        paths.append(dest)
    keep = {p.name for p in paths}
    for old in data_dir.iterdir():
        stale_shard = SHARD_RE.match(old.name) and old.name not in keep
        leftover_tmp = old.name.startswith(".train-") and ".tmp-" in old.name
        if old.is_file() and (stale_shard or leftover_tmp):
            old.unlink()
    return paths
