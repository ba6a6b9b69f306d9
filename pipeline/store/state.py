"""The work dir's durable state: cached unit outputs, the held store, commits.

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

import re
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import cast

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.io.faults import crashpoint
from pipeline.io.fileio import (
    CopyMismatch,
    atomic_path,
    atomic_write_json,
    copy_verified,
    file_sha256,
)
from pipeline.store.held import ROW_FILE, HeldFile, held_file
from pipeline.store.records import (
    REBUILD_HINT,
    STATE_FORMAT,
    CommitMeta,
    CommitRecord,
    StateDamaged,
    UnitMeta,
    read_sealed,
    seal_record,
)
from pipeline.store.unitfiles import (
    KEPT_NAME,
    KEPT_NAMES,
    UnitWriter,
    _by_dataset,
    _gather,
    atomic_write_parquet_stream,
)

COMMIT_NAME = re.compile(r"^(\d{6})\.json$")


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
