"""The work dir's durable state (DESIGN §5): atomic files, a lock, cached unit outputs, commits.

Layout under ``<workdir>/state``::

    cache/<unit>-<config>/kept.arrow, drops.parquet, meta.json   per-unit stage outputs (meta last)
    commits/<seq>.json                                       units decided by run <seq> (last)
    published/<seq>.parquet                                  index of the runs admitted by run <seq>
    published/<seq>/<unit>-<config>.arrow                    their rows: copies of the units' kept files
    ledger/<seq>.parquet                                     drops decided by run <seq>

A run's rows are encoded once, by the worker that made them, into its unit's ``kept.arrow`` (an
Arrow IPC file, one record batch per dataset part, rows by source_uid; work dirs written before
hold ``kept.parquet`` and ``.parquet`` copies, read alike). A commit copies the kept files holding its admitted
runs byte for byte into ``published/<seq>/`` and writes ``published/<seq>.parquet``, an index:
the narrow columns of every admitted run and ``__file``, the state file holding its full row.
The commit names each file with its sha256, so a damaged one is refused with the rebuild hint.
A commit file is written only after its parquet files, so a run killed at any point leaves
either a whole commit or none; the next run redoes the missing work from the caches.
"""

from __future__ import annotations

import abc
import contextlib
import fcntl
import functools
import hashlib
import os
import re
import shutil
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, TypedDict, cast

import numpy as np
import orjson
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.io.faults import crashpoint
from pipeline.io.fileio import (
    CopyMismatch,
    atomic_path,
    atomic_write_bytes,
    atomic_write_json,
    copy_verified,
    file_sha256,
    fsync_replace,
)
from pipeline.store.rowbytes import ROW_BYTES, row_bytes_expr
from schemas.run import PUBLISHED_NAMES

# (dataset, epoch) an ingested run is counted under: dataset "" for quarantined input, epoch
# "none" for runs without one (pipeline.orchestration.process.epoch_key)
IngestKey = tuple[str, str]


class UnitMeta(TypedDict):
    """``cache/<unit>-<config>/meta.json``: what one unit read and decided (written last)."""

    unit: str
    source: str
    key: str
    url: str
    epoch: int | None
    verdict: str  # "ok" or the quarantine reason of a shard that failed verification
    ingested: dict[str, int]  # encode_ingested form
    counters: dict[str, int]
    raw_bytes: int


class UnitSummary(UnitMeta):
    """What ``process_unit`` returns: the meta and this call's wall and CPU seconds per step (not
    cached)."""

    seconds: dict[str, float]
    cpu_seconds: dict[str, float]


class CommitMeta(TypedDict, total=False):
    """What a run records about its decisions besides its number and units."""

    ingested: dict[str, int]  # encode_ingested form
    counters: dict[str, int]
    signature_scheme: str  # how the admitted runs' MinHash signatures were made
    raw_bytes: int
    files: dict[str, str]  # sha256 of every state file the record names (verified on read)
    state_format: int
    check: str  # the record's own seal


class CommitRecord(CommitMeta):
    """``commits/<seq>.json``: the units run ``seq`` decided, what they read, and how it signed."""

    seq: int
    units: list[str]


def encode_ingested(counts: Counter[IngestKey]) -> dict[str, int]:
    """The JSON form of ingested counts: ``"<dataset>|<epoch>"`` keys, sorted (the on-disk format
    of meta.json and commit records, so work dirs written before stay readable)."""
    return dict(sorted((f"{ds}|{ep}", n) for (ds, ep), n in counts.items()))


def decode_ingested(counts: dict[str, int]) -> Counter[IngestKey]:
    out: Counter[IngestKey] = Counter()
    for key, n in counts.items():
        ds, ep = key.rsplit("|", 1)  # the epoch never holds "|"
        out[ds, ep] += n
    return out


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


def parquet_bytes(table: pa.Table) -> bytes:
    """Deterministic Parquet bytes (same table → same bytes)."""
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression="zstd", write_statistics=True)
    data: bytes = sink.getvalue().to_pybytes()
    return data


def atomic_write_parquet(path: Path, frame: pl.DataFrame) -> bool:
    return atomic_write_bytes(path, parquet_bytes(frame.to_arrow()))


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


class WorkdirLocked(RuntimeError):
    pass


class StateDamaged(RuntimeError):
    """A state file is missing, truncated or altered: the message names it and the recovery."""


REBUILD_HINT = "run `trajpipe run --rebuild` with the same inputs to rebuild the state from the sources"


@contextlib.contextmanager
def workdir_lock(workdir: Path, *, shared: bool = False) -> Iterator[None]:
    """One run per work dir (exclusive), or a reader that no run may change underneath (shared).

    ``fcntl.flock`` on an open file: the kernel releases it when the holder exits, however it
    dies, so there is no stale lock to take over and no window between creating and claiming it.
    The file itself is never removed (removing it would let two processes lock two inodes)."""
    workdir.mkdir(parents=True, exist_ok=True)
    lock = workdir / ".lock"
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "another process"
            what = "a run" if shared else "another run or a publish"
            raise WorkdirLocked(
                f"work dir {workdir} is in use by {what} (process {holder}, lock file {lock}); "
                "wait for it to finish or stop it"
            ) from None
        if not shared:
            os.ftruncate(fd, 0)
            os.pwrite(fd, str(os.getpid()).encode(), 0)
        yield
    finally:
        os.close(fd)  # releases the lock


def seal_record(record: dict[str, Any]) -> dict[str, Any]:
    """``record`` with a ``check`` field: the sha256 of its canonical JSON without that field."""
    body = {k: v for k, v in record.items() if k != "check"}
    return {**body, "check": hashlib.sha256(orjson.dumps(body, option=orjson.OPT_SORT_KEYS)).hexdigest()}


def read_sealed(path: Path) -> dict[str, Any]:
    """A JSON record written with :func:`seal_record`; raises :class:`StateDamaged` unless it is whole."""
    try:
        record = orjson.loads(path.read_bytes())
    except FileNotFoundError:
        raise StateDamaged(f"state file {path} is missing; {REBUILD_HINT}") from None
    except (OSError, orjson.JSONDecodeError) as exc:
        raise StateDamaged(f"state file {path} is damaged ({exc}); {REBUILD_HINT}") from None
    if not isinstance(record, dict) or seal_record(record).get("check") != record.get("check"):
        raise StateDamaged(f"state file {path} is damaged (its checksum does not match); {REBUILD_HINT}")
    return record


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

STATE_FORMAT = 3  # 2: sha256s of named files; 3: the held store is an index into the unit caches
COMMIT_NAME = re.compile(r"^(\d{6})\.json$")


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


class State:
    """Typed access to ``<workdir>/state``. No global state: everything hangs off the path.

    Every file a commit or a unit meta names is recorded with its sha256 and verified before it
    is read (once per process and file version), so a damaged file is an error naming it, never
    a silently different build."""

    def __init__(self, workdir: Path) -> None:
        self.root = Path(workdir) / "state"
        for sub in ("cache", "commits", "published", "ledger"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        self._verified: dict[Path, tuple[int, int, str]] = {}
        # readers of held files already opened (by size and mtime; :meth:`_held_file`)
        self._footers: dict[Path, tuple[tuple[int, int], HeldFile]] = {}

    # -- verification ---------------------------------------------------------------------
    def _verify(self, path: Path, sha: str) -> bool:
        try:
            st = path.stat()
        except OSError:
            return False
        if self._verified.get(path) == (st.st_size, st.st_mtime_ns, sha):
            return True
        try:
            ok = file_sha256(path) == sha
        except OSError:
            return False
        if ok:
            self._verified[path] = (st.st_size, st.st_mtime_ns, sha)
        return ok

    def _trust(self, path: Path, sha: str) -> None:
        """Record ``path`` as verified: its bytes, as this process just wrote them, hash to ``sha``."""
        st = path.stat()
        self._verified[path] = (st.st_size, st.st_mtime_ns, sha)

    def _verify_named(self, owner: Path, base: Path, files: dict[str, str]) -> None:
        for rel, sha in files.items():
            path = base / rel
            if not path.exists():
                raise StateDamaged(f"state file {path} (named by {owner}) is missing; {REBUILD_HINT}")
            if not self._verify(path, sha):
                raise StateDamaged(
                    f"state file {path} (named by {owner}) is damaged: its sha256 differs "
                    f"from the one recorded; {REBUILD_HINT}"
                )

    # -- per-unit cache -------------------------------------------------------------------
    def cache_dir(self, unit_key: str, config_hash: str) -> Path:
        if not re.fullmatch(r"[A-Za-z0-9._-]+", unit_key) or unit_key.startswith("."):
            raise ValueError(f"unsafe unit key {unit_key!r}")  # built from verified fields only
        return self.root / "cache" / f"{unit_key}-{config_hash}"

    def cached(self, unit_key: str, config_hash: str) -> bool:
        """Whether the unit's cache is whole: its meta is intact and names files with their sha256.
        A damaged cache is simply not a cache (the unit is redone)."""
        d = self.cache_dir(unit_key, config_hash)
        if not (d / "meta.json").exists():
            return False
        try:
            meta = read_sealed(d / "meta.json")
        except StateDamaged:
            return False
        files = meta.get("files")
        return (
            meta.get("state_format") == STATE_FORMAT
            and isinstance(files, dict)
            and all(self._verify(d / n, sha) for n, sha in files.items())
        )

    def unit_writer(self, unit_key: str, config_hash: str, kept_name: str | None = None) -> UnitWriter:
        return UnitWriter(self.cache_dir(unit_key, config_hash), kept_name)

    def read_unit_meta(
        self, unit_key: str, config_hash: str, *, unverified: tuple[str, ...] = ()
    ) -> UnitMeta:
        """A cached unit's meta, with every file it names verified but those in ``unverified``
        (left to a caller that hashes them anyway, e.g. :meth:`hold_unit_rows`)."""
        path = self.cache_dir(unit_key, config_hash) / "meta.json"
        meta = read_sealed(path)
        files = {n: sha for n, sha in (meta.get("files") or {}).items() if n not in unverified}
        self._verify_named(path, path.parent, files)
        return cast(UnitMeta, {k: v for k, v in meta.items() if k not in ("check", "files", "state_format")})

    def unit_file(self, unit_key: str, config_hash: str, name: str) -> Path:
        """A verified file of a cached unit (one of :data:`KEPT_NAMES` or ``drops.parquet``)."""
        path = self.cache_dir(unit_key, config_hash) / "meta.json"
        meta = read_sealed(path)
        files = meta.get("files") or {}
        if name not in files:
            raise StateDamaged(f"state file {path} names no {name}; {REBUILD_HINT}")
        self._verify_named(path, path.parent, {name: files[name]})
        return path.parent / name

    # -- commits --------------------------------------------------------------------------
    def commits(self) -> list[CommitRecord]:
        """Every commit record, in order, verified: each whole, numbered 0..n-1 without a gap, and
        every file it names present with its recorded sha256."""
        out: list[CommitRecord] = []
        for p in sorted((self.root / "commits").iterdir()):
            m = COMMIT_NAME.match(p.name)
            if not m:
                continue
            record = read_sealed(p)
            if record.get("state_format") != STATE_FORMAT:
                raise StateDamaged(
                    f"state file {p} was written by another trajpipe state format; {REBUILD_HINT}"
                )
            if record.get("seq") != int(m.group(1)) or record.get("seq") != len(out):
                raise StateDamaged(
                    f"state file {self.root / 'commits' / f'{len(out):06d}.json'} is missing "
                    f"(found {p.name} next); {REBUILD_HINT}"
                )
            self._verify_named(p, self.root, record.get("files") or {})
            out.append(cast(CommitRecord, record))
        return out

    def committed_units(self) -> set[str]:
        return {u for c in self.commits() for u in c["units"]}

    def next_seq(self) -> int:
        """One past the highest commit (``commits`` has already refused a gap)."""
        commits = self.commits()
        return commits[-1]["seq"] + 1 if commits else 0

    def hold_unit_rows(self, seq: int, unit_key: str, config_hash: str) -> tuple[str, str]:
        """Copy a cached unit's verified kept file (:data:`KEPT_NAMES`), byte for byte, into run
        ``seq``'s part of the held store (the rows are never encoded again; the cache stays a cache
        that may be damaged or deleted). Returns the copy's state-relative path and sha256; the
        copy keeps its source's suffix, which tells its format.

        The source is hashed once, as it is copied: a copy whose bytes differ from the recorded
        sha256 is never placed, and the cache file is reported as damaged."""
        meta_path = self.cache_dir(unit_key, config_hash) / "meta.json"
        files = read_sealed(meta_path).get("files") or {}
        name = next((n for n in KEPT_NAMES if n in files), None)
        if name is None:
            raise StateDamaged(f"state file {meta_path} names no {KEPT_NAME}; {REBUILD_HINT}")
        src, sha = meta_path.parent / name, str(files[name])
        rel = f"published/{seq:06d}/{src.parent.name}{src.suffix}"
        if not src.exists():
            raise StateDamaged(f"state file {src} (named by {meta_path}) is missing; {REBUILD_HINT}")
        try:
            copy_verified(src, self.root / rel, sha)
        except CopyMismatch:
            raise StateDamaged(
                f"state file {src} (named by {meta_path}) is damaged: its sha256 differs "
                f"from the one recorded; {REBUILD_HINT}"
            ) from None
        self._trust(self.root / rel, sha)  # its bytes were hashed as they were written
        return rel, sha

    def discard_uncommitted_rows(self, seq: int) -> None:
        """Remove run ``seq``'s copies of held rows left by a run that stopped before its record
        (no commit names them: ``seq`` is the next one)."""
        shutil.rmtree(self.root / "published" / f"{seq:06d}", ignore_errors=True)

    def write_parts(
        self,
        seq: int,
        index: Iterable[pl.DataFrame],
        drops: pl.DataFrame,
        rows: dict[str, str] | None = None,
    ) -> dict[str, str]:
        """Write run ``seq``'s index of admitted runs (streamed) and its drops; returns their sha256
        by state path, with ``rows`` (:meth:`hold_unit_rows`' copies, by their sha256).
        They count for nothing until :meth:`write_record` names them."""
        name = f"{seq:06d}"
        atomic_write_parquet_stream(self.root / "published" / f"{name}.parquet", index)
        crashpoint("commit_parts")
        with atomic_path(self.root / "ledger" / f"{name}.parquet") as tmp:  # no second copy in memory
            pq.write_table(drops.to_arrow(), tmp, compression="zstd", write_statistics=True)
        own = {
            rel: file_sha256(self.root / rel)
            for rel in (f"published/{name}.parquet", f"ledger/{name}.parquet")
        }
        return {**(rows or {}), **own}

    def write_record(self, seq: int, units: list[str], files: dict[str, str], meta: CommitMeta) -> None:
        """The commit record, last: from here on run ``seq``'s decisions count."""
        crashpoint("commit_record")
        atomic_write_json(
            self.root / "commits" / f"{seq:06d}.json",
            seal_record(
                {"seq": seq, "units": sorted(units), **meta, "files": files, "state_format": STATE_FORMAT}
            ),
        )

    def commit(
        self,
        seq: int,
        units: list[str],
        published: Iterable[pl.DataFrame],
        drops: pl.DataFrame,
        meta: CommitMeta,
    ) -> None:
        """Record run ``seq``'s decisions with its admitted rows held in its own part (whole rows,
        streamed; the part is its own ``__file``), its drops, then the record."""
        rel = f"published/{seq:06d}.parquet"
        frames = (
            part.with_columns(pl.lit(rel).alias(ROW_FILE))
            for frame in published
            for part in _by_dataset(frame)
        )
        self.write_record(seq, units, self.write_parts(seq, frames, drops), meta)

    def _committed_parts(self, sub: str, pending: dict[str, str] | None = None) -> list[Path]:
        """The verified parts of ``sub`` named by the commits (and by a pending commit's files)."""
        names = {rel for c in self.commits() for rel in (c.get("files") or {})}
        if pending:
            self._verify_named(self.root / "(pending commit)", self.root, pending)
            names |= set(pending)
        # the parts themselves, not the files of held rows under ``published/<seq>/``
        return [self.root / rel for rel in sorted(names) if rel.startswith(f"{sub}/") and rel.count("/") == 1]

    def held_files(self) -> dict[str, str]:
        """sha256 of every file the commits name, by state path."""
        return {rel: sha for c in self.commits() for rel, sha in (c.get("files") or {}).items()}

    def published(
        self, columns: list[str] | None = None, pending: dict[str, str] | None = None
    ) -> pl.DataFrame | None:
        """The held store's index (only ``columns`` are read, to keep memory small): one row per
        published run, in commit order. Full rows are read with :meth:`held_rows`."""
        parts = self._committed_parts("published", pending)
        frames = [pl.read_parquet(p, columns=columns) for p in parts if pq.read_schema(p).names]
        return pl.concat(frames, how="vertical_relaxed") if frames else None

    def held_rows(
        self, index: pl.DataFrame, columns: list[str], pending: dict[str, str] | None = None
    ) -> pl.DataFrame:
        """The ``columns`` of the runs in ``index`` (rows of :meth:`published` with ``source_uid``,
        ``dataset`` and ``__file``), read from the committed files that hold them, one read per
        file, pruned by the files' statistics. The order is by file, then by row in the file."""
        if not index.height:
            return pl.DataFrame()
        frame = pl.from_arrow(self.held_table(index, columns, pending))
        assert isinstance(frame, pl.DataFrame)
        return frame

    def held_table(
        self,
        index: pl.DataFrame,
        columns: list[str],
        pending: dict[str, str] | None = None,
        *,
        order: list[str] | None = None,
        carry: dict[tuple[str, int], pa.Table] | None = None,
    ) -> pa.Table:
        """:meth:`held_rows` as one Arrow table, with ``order``: sorted by those columns (a stable
        sort, so equal keys keep the file order). Only the parts of a file (record batches, or
        row groups of a Parquet file) that may hold the runs are decoded, and the big columns are
        copied once (:func:`_gather`).

        ``carry``: for a caller reading consecutive source_uid ranges (the publisher, one row
        group of a shard at a time), the decoded parts that may also hold runs past this range
        are kept there and taken from it by the next call, so a unit's part that straddles two
        shard row groups is decoded once, not twice."""
        import pyarrow.compute as pc

        named = {rel for c in self.commits() for rel in (c.get("files") or {})} | set(pending or {})
        tables: list[pa.Table] = []
        masks: list[pa.ChunkedArray] = []
        by_file = [(str(rel), keys) for (rel,), keys in index.group_by(ROW_FILE)]
        # by file; for a sorted read, by each file's first run (files whose runs do not interleave
        # then come out in order, and need no reordering)
        by_file.sort(key=lambda fk: (str(fk[1].get_column("source_uid").min()), fk[0]) if order else fk[0])
        kept: dict[tuple[str, int], pa.Table] = {}  # what is carried to the next call
        for rel, keys in by_file:
            path = self.root / rel
            if rel not in named:
                raise StateDamaged(f"the held store names {path}, which no commit holds; {REBUILD_HINT}")
            uids = keys.get_column("source_uid")
            datasets = set(keys.get_column("dataset").unique().to_list())
            lo, hi = str(uids.min()), str(uids.max())
            try:
                held = self._held_file(path)
                want = [
                    g
                    for g, (ds, first, last) in enumerate(held.groups)
                    if (ds is None or ds in datasets)
                    and (first is None or first <= hi)
                    and (last is None or last >= lo)
                ]
                table = self._read_groups(held, want, columns, hi, carry, kept)
                masks.append(pc.is_in(table.column("source_uid"), value_set=uids.to_arrow()))
            except (OSError, pa.ArrowException, KeyError, ValueError) as exc:
                raise StateDamaged(f"state file {path} is damaged ({exc}); {REBUILD_HINT}") from None
            tables.append(table)
        if carry is not None:
            carry.clear()
            carry.update(kept)
        if not tables:
            return pa.table({})
        table = pa.concat_tables(tables, promote_options="permissive")
        mask = pa.chunked_array([c for m in masks for c in m.chunks], type=pa.bool_())
        rows = pc.indices_nonzero(mask)
        if order:
            keyed = table.select(order).take(rows)
            rows = rows.take(pc.sort_indices(keyed, sort_keys=[(k, "ascending") for k in order]))
        return _gather(table, rows.to_numpy())

    @staticmethod
    def _read_groups(
        held: HeldFile,
        want: list[int],
        columns: list[str],
        hi: str,
        carry: dict[tuple[str, int], pa.Table] | None,
        kept: dict[tuple[str, int], pa.Table],
    ) -> pa.Table:
        """Parts ``want`` of a held file; with ``carry``, those decoded by the call before are
        taken from it, and those that may hold runs past ``hi`` are put in ``kept``."""
        if carry is None or not want:
            return held.read(want, columns)
        parts: list[pa.Table] = []
        for g in want:
            key = (str(held.path), g)
            part = carry.get(key)
            if part is None or part.column_names != columns:
                part = held.read([g], columns)
            last = held.groups[g][2]
            if last is None or last > hi:
                kept[key] = part
            parts.append(part)
        return pa.concat_tables(parts)

    def _held_file(self, path: Path) -> HeldFile:
        """A held file's reader, kept while the file is unchanged (by size and mtime): the
        publisher reads each file once per row group it writes, and what each part holds
        decides which parts to decode."""
        st = path.stat()
        cached = self._footers.get(path)
        if cached is not None and cached[0] == (st.st_size, st.st_mtime_ns):
            return cached[1]
        held = held_file(path)
        self._footers[path] = ((st.st_size, st.st_mtime_ns), held)
        return held

    def ledger(self, pending: dict[str, str] | None = None) -> pl.DataFrame | None:
        parts = self._committed_parts("ledger", pending)
        return pl.concat([pl.read_parquet(p) for p in parts], how="vertical") if parts else None

    def reset(self) -> None:
        """Forget every decision (a full rebuild); cached unit outputs stay valid and are kept."""
        for sub in ("commits", "published", "ledger"):
            shutil.rmtree(self.root / sub, ignore_errors=True)
            (self.root / sub).mkdir(parents=True, exist_ok=True)
