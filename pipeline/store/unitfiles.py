"""A unit's files as a worker writes them: its kept rows (``kept.arrow``: an Arrow IPC file, one
record batch per dataset part, rows by source_uid, LZ4 buffers; ``kept.parquet`` in work dirs
written before), its drops, and its meta, written last."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.io.faults import crashpoint
from pipeline.io.fileio import (
    atomic_path,
    atomic_write_json,
    file_sha256,
    fsync_replace,
)
from pipeline.store.records import STATE_FORMAT, UnitMeta, seal_record
from pipeline.store.rowbytes import ROW_BYTES, row_bytes_expr
from schemas.run import PUBLISHED_NAMES


def parquet_bytes(table: pa.Table) -> bytes:
    """Deterministic Parquet bytes (same table → same bytes)."""
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression="zstd", write_statistics=True)
    data: bytes = sink.getvalue().to_pybytes()
    return data


def atomic_write_parquet_stream(path: Path, frames: Iterable[pl.DataFrame]) -> None:
    """Write frames one after another into one Parquet file (temp + rename), never holding
    more than one frame. An empty stream writes a file with no columns."""
    with atomic_path(path) as tmp:
        writer: pq.ParquetWriter | None = None
        for frame in frames:
            table = frame.to_arrow()
            if writer is None:
                writer = pq.ParquetWriter(tmp, table.schema, compression="zstd")
            writer.write_table(table.cast(writer.schema))
        if writer is None:
            pq.write_table(pa.table({}), tmp)
        else:
            writer.close()


# A unit's kept rows (its cache and their held copies) are read only by this package: the driver
# reads their index columns, and the publisher decodes them once more to write the zstd Parquet
# shards. They are an Arrow IPC file, one record batch per dataset part, its buffers LZ4-compressed:
# encoded in 0.74-0.79x and read back by the driver in 0.39-0.58x the CPU of the LZ4 Parquet they
# replaced, at 1.02x its bytes (bench/held_format.py; zstd buffers halve the bytes but cost the CPU saved).
# Work dirs written before hold ``kept.parquet`` files: they are read by the same code (the format
# follows the file name, which the sealed records name).
KEPT_NAME = "kept.arrow"
KEPT_PARQUET_NAME = "kept.parquet"  # the format before; read, and written only by tests of old work dirs
KEPT_NAMES = (KEPT_NAME, KEPT_PARQUET_NAME)
KEPT_IPC = pa.ipc.IpcWriteOptions(compression="lz4", use_threads=False)
# how the Parquet unit caches were written (LZ4, dictionaries only on small categorical columns,
# statistics only on the two columns reads are pruned by)
KEPT_PARQUET: dict[str, Any] = {
    "compression": "lz4",
    "use_dictionary": [
        "family",
        "language",
        "resolved",
        "model",
        "harness",
        "id_kind",
        "affine_source",
        "origin",
        "affine_fold_group",
        "dialect",
        "dataset",
        "messages.list.element.role",
    ],
    "write_statistics": ["source_uid", "dataset"],
}
KEPT_BUFFER_BYTES = 32 * 2**20


class KeptWriter:
    """One file of kept rows, written a table at a time in one schema (the first table's): an
    Arrow IPC file with LZ4 buffers, one record batch per table, or (``parquet``) the LZ4 Parquet
    file of the format before, one row group per table."""

    def __init__(self, path: Path, schema: pa.Schema, *, parquet: bool = False) -> None:
        self.schema = schema
        self._parquet = pq.ParquetWriter(path, schema, **KEPT_PARQUET) if parquet else None
        self._sink = None if parquet else pa.OSFile(str(path), "wb")
        self._ipc = None if self._sink is None else pa.ipc.new_file(self._sink, schema, options=KEPT_IPC)

    def write(self, table: pa.Table) -> None:
        table = table.cast(self.schema)
        if self._parquet is not None:
            self._parquet.write_table(table)
        elif self._ipc is not None:
            self._ipc.write_table(table)

    def close(self) -> None:
        if self._parquet is not None:
            self._parquet.close()
        if self._ipc is not None:
            self._ipc.close()
        if self._sink is not None:
            self._sink.close()


class UnitWriter:
    """Streams one unit's kept rows into its cache, batch by batch; ``finish`` writes the drops
    and then the meta (the completion marker, holding both files' sha256). Until then nothing
    counts as cached."""

    def __init__(self, directory: Path, kept_name: str | None = None) -> None:
        self.dir = directory
        directory.mkdir(parents=True, exist_ok=True)
        for stale in [*directory.glob(".kept.*.tmp"), *directory.glob(".drops-*.tmp")]:  # left by a
            # killed worker (the run holds the lock)
            stale.unlink(missing_ok=True)
        # one of KEPT_NAMES (the format before is written only by tests of old work dirs)
        self.kept_name = kept_name or KEPT_NAME
        self._tmp = directory / f".{self.kept_name}.{os.getpid()}.tmp"
        self._writer: KeptWriter | None = None
        # kept rows wait here (up to KEPT_BUFFER_BYTES) so each dataset's rows of a unit are
        # written as one sorted row group, not one small group per batch and dataset
        self._buffer: list[pl.DataFrame] = []
        self._buffered = 0
        # drops stream to disk as they come (a chunk of a million bad lines holds none of them):
        # "q" line-level quarantine entries (always kept), "d" stage drops (discarded with the rows)
        self._drops: dict[str, tuple[Path, pq.ParquetWriter]] = {}
        self.drop_counts: dict[str, int] = {"q": 0, "d": 0}

    def write_drops(self, kind: str, frame: pl.DataFrame) -> None:
        if not frame.height:
            return
        table = frame.to_arrow()
        if kind not in self._drops:
            path = self.dir / f".drops-{kind}.parquet.{os.getpid()}.tmp"
            self._drops[kind] = (path, pq.ParquetWriter(path, table.schema, compression="zstd"))
        _, writer = self._drops[kind]
        writer.write_table(table.cast(writer.schema))
        self.drop_counts[kind] += frame.height

    def discard_drops(self, kind: str) -> None:
        if kind in self._drops:
            path, writer = self._drops.pop(kind)
            writer.close()
            path.unlink(missing_ok=True)
        self.drop_counts[kind] = 0

    def _finish_drops(self, empty_drops: pl.DataFrame) -> None:
        """drops.parquet: the "q" entries then the "d" ones, copied a row group at a time; when
        only one kind was written (the usual unit), its file already is drops.parquet and is
        renamed into place instead of being read and written again."""
        for _, writer in self._drops.values():
            writer.close()
        schema = empty_drops.to_arrow().schema
        if len(self._drops) == 1:
            ((path, _),) = self._drops.values()
            if pq.read_schema(path).remove_metadata().equals(schema.remove_metadata()):
                fsync_replace(path, self.dir / "drops.parquet")
                self._drops.clear()
                return
        with (
            atomic_path(self.dir / "drops.parquet") as tmp,
            pq.ParquetWriter(tmp, schema, compression="zstd") as out,
        ):
            for kind in ("q", "d"):
                if kind in self._drops:
                    src = pq.ParquetFile(self._drops[kind][0])
                    for g in range(src.num_row_groups):
                        out.write_table(src.read_row_group(g).cast(schema))
            if not any(k in self._drops for k in ("q", "d")):
                out.write_table(schema.empty_table())
        for path, _ in self._drops.values():
            path.unlink(missing_ok=True)
        self._drops.clear()

    def write(self, frame: pl.DataFrame) -> None:
        """Append run rows. They are held until :data:`KEPT_BUFFER_BYTES` have come (or the unit
        ends), then written a part (record batch) per dataset, rows by source_uid, with each
        row's publishing size, so the publisher reads only the parts holding one dataset's runs."""
        self._buffer.append(frame)
        self._buffered += int(frame.estimated_size())
        if self._buffered >= KEPT_BUFFER_BYTES:
            self._flush()

    def _flush(self) -> None:
        if not self._buffer:
            return
        frame = self._buffer[0] if len(self._buffer) == 1 else pl.concat(self._buffer, how="vertical_relaxed")
        self._buffer.clear()
        self._buffered = 0
        for part in _by_dataset(frame):
            table = arrow_table(part)
            if self._writer is None:
                self._writer = KeptWriter(
                    self._tmp, table.schema, parquet=self.kept_name == KEPT_PARQUET_NAME
                )
            self._writer.write(table)

    def discard(self) -> None:
        """Forget the rows and stage drops written so far (a shard that failed verification)."""
        self._buffer.clear()
        self._buffered = 0
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        self._tmp.unlink(missing_ok=True)
        self.discard_drops("d")

    def finish(self, empty_kept: pl.DataFrame, empty_drops: pl.DataFrame, meta: UnitMeta) -> None:
        try:
            self._flush()
            if self._writer is None:
                self.write(empty_kept)
                self._flush()
            assert self._writer is not None
            self._writer.close()
            for old in KEPT_NAMES:  # a cache of this unit written before in the other format
                if old != self.kept_name:
                    (self.dir / old).unlink(missing_ok=True)
            fsync_replace(self._tmp, self.dir / self.kept_name)
            crashpoint("unit_write")
            self._finish_drops(empty_drops)
            files = {n: file_sha256(self.dir / n) for n in (self.kept_name, "drops.parquet")}
            atomic_write_json(
                self.dir / "meta.json", seal_record({**meta, "files": files, "state_format": STATE_FORMAT})
            )  # last
        except BaseException:
            self._tmp.unlink(missing_ok=True)
            for path, _ in self._drops.values():
                path.unlink(missing_ok=True)
            raise


def arrow_table(frame: pl.DataFrame) -> pa.Table:
    """``frame.to_arrow()``, the same table (large strings), converted by Arrow's cast from the
    string views polars exports without a copy: about half the CPU of polars' own conversion on
    kept rows. (An empty frame is converted by polars: its columns keep their one empty chunk.)"""
    empty = frame.head(0).to_arrow()
    if not frame.height:
        return empty
    return frame.to_arrow(compat_level=pl.CompatLevel.newest()).cast(empty.schema)


def _gather(table: pa.Table, rows: np.ndarray) -> pa.Table:
    """``table.take(rows)`` as one chunk per column. Rows read from sorted files mostly come in
    long ascending stretches: those are sliced (no copy) and joined with one copy, instead of a
    gather that first concatenates every chunk and then copies each value again."""
    if not len(rows):
        return table.slice(0, 0).combine_chunks()
    breaks = np.flatnonzero(np.diff(rows) != 1) + 1
    if len(breaks) >= 64:  # scattered rows: a gather is cheaper than many slices
        return table.take(pa.array(rows)).combine_chunks()
    starts = np.concatenate(([0], breaks))
    ends = np.concatenate((breaks, [len(rows)]))
    parts = [table.slice(int(rows[a]), int(b - a)) for a, b in zip(starts, ends, strict=True)]
    return pa.concat_tables(parts).combine_chunks()


def _by_dataset(frame: pl.DataFrame) -> list[pl.DataFrame]:
    if not {"dataset", "source_uid", *PUBLISHED_NAMES} <= set(frame.columns):
        return [frame]  # not run rows
    if ROW_BYTES not in frame.columns:
        frame = frame.with_columns(row_bytes_expr().alias(ROW_BYTES))
    if frame.height == 0:
        return [frame]
    ordered = frame.sort(["dataset", "source_uid"], maintain_order=True, nulls_last=True)
    return ordered.partition_by("dataset", maintain_order=True)
