"""The work dir's durable state (DESIGN §5): atomic files, a lock, cached unit outputs, commits.

Layout under ``<workdir>/state``::

    cache/<unit>-<config>/{kept,drops}.parquet + meta.json   per-unit stage outputs (meta last)
    commits/<seq>.json                                       units decided by run <seq> (last)
    published/<seq>.parquet                                  runs admitted by run <seq>
    ledger/<seq>.parquet                                     drops decided by run <seq>

A commit file is written only after its parquet files, so a run killed at any point leaves
either a whole commit or none; the next run redoes the missing work from the caches.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TypedDict, cast

import orjson
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.faults import crashpoint
from pipeline.fileio import atomic_path, atomic_write_bytes, atomic_write_json, fsync_replace

# (dataset, epoch) an ingested run is counted under: dataset "" for quarantined input, epoch
# "none" for runs without one (pipeline.process.epoch_key)
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
    """What ``process_unit`` returns: the meta and this call's wall time per step (not cached)."""

    seconds: dict[str, float]


class CommitMeta(TypedDict, total=False):
    """What a run records about its decisions besides its number and units."""

    ingested: dict[str, int]  # encode_ingested form
    counters: dict[str, int]
    signature_scheme: str  # how the admitted runs' MinHash signatures were made
    raw_bytes: int


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


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError as exc:
        return exc.errno == errno.EPERM
    return True


@contextlib.contextmanager
def workdir_lock(workdir: Path) -> Iterator[None]:
    """One run per work dir. A lock left by a dead process is taken over."""
    workdir.mkdir(parents=True, exist_ok=True)
    lock = workdir / ".lock"
    for _ in range(2):
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            try:
                pid = int(lock.read_text().strip() or "0")
            except (OSError, ValueError):
                pid = 0
            if pid and _pid_alive(pid) and pid != os.getpid():
                raise WorkdirLocked(
                    f"work dir {workdir} is in use by process {pid} (lock file {lock}); "
                    "wait for it to finish or stop it") from None
            lock.unlink(missing_ok=True)  # stale: its process is gone
            continue
        with os.fdopen(fd, "w") as fh:
            fh.write(str(os.getpid()))
        break
    else:  # pragma: no cover - lost a race twice
        raise WorkdirLocked(f"could not take the lock {lock}")
    try:
        yield
    finally:
        lock.unlink(missing_ok=True)


class UnitWriter:
    """Streams one unit's kept rows into its cache, batch by batch; ``finish`` writes the drops
    and then the meta (the completion marker). Until then nothing counts as cached."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        directory.mkdir(parents=True, exist_ok=True)
        self._tmp = directory / f".kept.parquet.{os.getpid()}.tmp"
        self._writer: pq.ParquetWriter | None = None

    def write(self, frame: pl.DataFrame) -> None:
        table = frame.to_arrow()
        if self._writer is None:
            self._writer = pq.ParquetWriter(self._tmp, table.schema, compression="zstd")
        self._writer.write_table(table.cast(self._writer.schema))

    def discard(self) -> None:
        """Forget the rows written so far (a shard that failed verification)."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        self._tmp.unlink(missing_ok=True)

    def finish(self, empty_kept: pl.DataFrame, drops: pl.DataFrame, meta: UnitMeta) -> None:
        if self._writer is None:
            self.write(empty_kept)
        assert self._writer is not None
        self._writer.close()
        fsync_replace(self._tmp, self.dir / "kept.parquet")
        crashpoint("unit_write")
        atomic_write_parquet(self.dir / "drops.parquet", drops)
        atomic_write_json(self.dir / "meta.json", meta)  # completion marker: last


class State:
    """Typed access to ``<workdir>/state``. No global state: everything hangs off the path."""

    def __init__(self, workdir: Path) -> None:
        self.root = Path(workdir) / "state"
        for sub in ("cache", "commits", "published", "ledger"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)

    # -- per-unit cache -------------------------------------------------------------------
    def cache_dir(self, unit_key: str, config_hash: str) -> Path:
        return self.root / "cache" / f"{unit_key}-{config_hash}"

    def cached(self, unit_key: str, config_hash: str) -> bool:
        return (self.cache_dir(unit_key, config_hash) / "meta.json").exists()

    def unit_writer(self, unit_key: str, config_hash: str) -> UnitWriter:
        return UnitWriter(self.cache_dir(unit_key, config_hash))

    def commits(self) -> list[CommitRecord]:
        return [cast(CommitRecord, orjson.loads(p.read_bytes())) for p in sorted((self.root / "commits").glob("*.json"))]

    def committed_units(self) -> set[str]:
        return {u for c in self.commits() for u in c["units"]}

    def next_seq(self) -> int:
        return len(list((self.root / "commits").glob("*.json")))

    def read_unit_meta(self, unit_key: str, config_hash: str) -> UnitMeta:
        return cast(UnitMeta, orjson.loads((self.cache_dir(unit_key, config_hash) / "meta.json").read_bytes()))

    def commit(self, seq: int, units: list[str], published: Iterable[pl.DataFrame], drops: pl.DataFrame,
               meta: CommitMeta) -> None:
        """Record run ``seq``'s decisions: admitted rows (streamed), its drops, then the record."""
        name = f"{seq:06d}"
        atomic_write_parquet_stream(self.root / "published" / f"{name}.parquet", published)
        crashpoint("commit_parts")
        atomic_write_parquet(self.root / "ledger" / f"{name}.parquet", drops)
        crashpoint("commit_record")
        record: CommitRecord = {"seq": seq, "units": sorted(units), **meta}
        atomic_write_json(self.root / "commits" / f"{name}.json", record)

    def _committed_parts(self, sub: str) -> list[Path]:
        seqs = {f"{c['seq']:06d}" for c in self.commits()}
        return [p for p in sorted((self.root / sub).glob("*.parquet")) if p.stem in seqs]

    def published(self, columns: list[str] | None = None) -> pl.DataFrame | None:
        """The held-run store (only ``columns`` are read, to keep memory small)."""
        parts = self._committed_parts("published")
        if not parts:
            return None
        frames = [pl.read_parquet(p, columns=columns) for p in parts if pq.read_schema(p).names]
        return pl.concat(frames, how="vertical_relaxed") if frames else None

    def scan_published(self, columns: list[str]) -> pl.LazyFrame:
        """A lazy scan of the store's ``columns`` (nothing is read until collected)."""
        parts = [p for p in self._committed_parts("published") if pq.read_schema(p).names]
        if not parts:
            from schemas.run import WORK, empty

            return empty(WORK).select(columns).lazy()
        return pl.scan_parquet(parts).select(columns)

    def ledger(self) -> pl.DataFrame | None:
        parts = self._committed_parts("ledger")
        return pl.concat([pl.read_parquet(p) for p in parts], how="vertical") if parts else None

    def reset(self) -> None:
        """Forget every decision (a full rebuild); cached unit outputs stay valid and are kept."""
        for sub in ("commits", "published", "ledger"):
            shutil.rmtree(self.root / sub, ignore_errors=True)
            (self.root / sub).mkdir(parents=True, exist_ok=True)
