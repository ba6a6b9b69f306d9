"""The held store's files read back: the index columns every later epoch is deduplicated against,
and a held file's row groups (either format), each with its dataset and source_uid range."""

from __future__ import annotations

import abc
import functools
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.store.rowbytes import ROW_BYTES
from schemas.run import PUBLISHED_NAMES

# The held store's index: what the card, the stats and dedup read, without the big columns.
# ``__bytes`` is the row's publishing size (pipeline.store.rowbytes.row_bytes_expr), computed by
# the worker; ``__file`` the state-relative file holding the full row.
ROW_FILE = "__file"
INDEX_COLUMNS: list[str] = [
    *(n for n in PUBLISHED_NAMES if n not in ("messages", "patch")),
    "dataset",
    "epoch",
    "exact_hash",
    "minhash",
    ROW_BYTES,
]


# per part of a held file: its one dataset, its first and last source_uid (None: unknown)
RowGroupKeys = tuple[str | None, str | None, str | None]


class HeldFile(abc.ABC):
    """A file of kept rows (a unit cache or its held copy) as its readers see it: its parts (the
    record batches of an Arrow IPC file, or the row groups of the Parquet file of the format
    before), what each part may hold (``groups``) and a read of some parts' columns. The format
    follows the file name (:func:`held_file`)."""

    path: Path
    names: list[str]
    num_parts: int

    @property
    @abc.abstractmethod
    def groups(self) -> list[RowGroupKeys]: ...

    @abc.abstractmethod
    def read(self, parts: list[int], columns: list[str] | None = None) -> pa.Table: ...

    def read_all(self, columns: list[str] | None = None) -> pa.Table:
        return self.read(list(range(self.num_parts)), columns)


class _ParquetHeld(HeldFile):
    """A held file of the format before: row groups pruned by their footer's statistics."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.meta = pq.read_metadata(path)
        self.names = self.meta.schema.to_arrow_schema().names
        self.num_parts = self.meta.num_row_groups

    @functools.cached_property
    def groups(self) -> list[RowGroupKeys]:
        paths = [self.meta.schema.column(i).path for i in range(self.meta.num_columns)]  # leaf columns
        uid_at = paths.index("source_uid")
        ds_at = paths.index("dataset") if "dataset" in paths else None
        groups: list[RowGroupKeys] = []
        for g in range(self.meta.num_row_groups):
            rg = self.meta.row_group(g)
            su = rg.column(uid_at).statistics
            sd = rg.column(ds_at).statistics if ds_at is not None else None
            one = sd is not None and sd.has_min_max and sd.null_count == 0 and sd.min == sd.max
            known = su is not None and su.has_min_max
            groups.append(
                (
                    str(sd.min) if one and sd is not None else None,
                    str(su.min) if known and su is not None else None,
                    str(su.max) if known and su is not None else None,
                )
            )
        return groups

    def read(self, parts: list[int], columns: list[str] | None = None) -> pa.Table:
        return pq.ParquetFile(self.path, metadata=self.meta).read_row_groups(
            parts, columns=columns, use_threads=False
        )


class _IpcHeld(HeldFile):
    """An Arrow IPC file of kept rows: only the wanted columns of the wanted record batches are
    decompressed. What each batch holds is read once from its own source_uid and dataset columns
    (IPC keeps no statistics; the two columns are small)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        with pa.OSFile(str(path)) as f:
            reader = pa.ipc.open_file(f)
            self.names = reader.schema.names
            self.num_parts = reader.num_record_batches

    @functools.cached_property
    def groups(self) -> list[RowGroupKeys]:
        import pyarrow.compute as pc

        fields = [self.names.index(c) for c in ("source_uid", "dataset") if c in self.names]
        options = pa.ipc.IpcReadOptions(included_fields=fields, use_threads=False)
        groups: list[RowGroupKeys] = []
        with pa.OSFile(str(self.path)) as f:
            reader = pa.ipc.open_file(f, options=options)
            for g in range(self.num_parts):
                batch = reader.get_batch(g)
                uid = pc.min_max(batch.column("source_uid"))
                one = None  # the part's one dataset
                if "dataset" in batch.schema.names:
                    ds = batch.column("dataset")
                    bounds = pc.min_max(ds)
                    if ds.null_count == 0 and bounds["min"].is_valid and bounds["min"] == bounds["max"]:
                        one = str(bounds["min"])
                known = uid["min"].is_valid
                groups.append((one, str(uid["min"]) if known else None, str(uid["max"]) if known else None))
        return groups

    def read(self, parts: list[int], columns: list[str] | None = None) -> pa.Table:
        wanted = self.names if columns is None else columns
        missing = [c for c in wanted if c not in self.names]
        if missing:
            raise KeyError(f"no column {missing[0]!r}")
        fields = sorted(self.names.index(c) for c in wanted)
        options = pa.ipc.IpcReadOptions(included_fields=fields, use_threads=False)
        with pa.OSFile(str(self.path)) as f:
            reader = pa.ipc.open_file(f, options=options)
            table = pa.Table.from_batches([reader.get_batch(g) for g in parts], schema=reader.schema)
        return table.select(wanted)


def held_file(path: Path) -> HeldFile:
    """The reader of a file of kept rows: Arrow IPC, or Parquet for a ``.parquet`` file (unit
    caches and held copies written before, and a commit's own index part)."""
    return _ParquetHeld(path) if path.suffix == ".parquet" else _IpcHeld(path)


def read_held(held: HeldFile | Path, columns: list[str] | None = None) -> pl.DataFrame:
    """Every row of a file of kept rows (only ``columns``), as polars."""
    frame = pl.from_arrow((held if isinstance(held, HeldFile) else held_file(held)).read_all(columns))
    assert isinstance(frame, pl.DataFrame)
    return frame
