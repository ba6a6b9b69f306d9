"""The driver: list units, map the per-unit work, run the global steps, commit, publish.

The driver does the only global work (trajectory dedup against everything held, the ledger,
the publish tree) over compact data. Every step is restartable: unit outputs are cached, a
run's decisions are committed atomically, and the publish tree is re-rendered from the state.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import shutil
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import orjson
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.core.config import Config
from pipeline.core.episode import Quarantined
from pipeline.executors import make_executor
from pipeline.io.faults import crashpoint
from pipeline.io.fileio import atomic_write_bytes, atomic_write_json, file_sha256
from pipeline.orchestration.process import QUARANTINE, epoch_key, process_unit
from pipeline.orchestration.progress import Reporter
from pipeline.sources import SOURCES as CORPUS_SOURCES
from pipeline.sources.base import Unit
from pipeline.stages.base import drops_from
from pipeline.store.ledger import (
    InvariantError,
    Stats,
    Validation,
    check_invariant,
    compute_stats,
    sorted_drops,
)
from pipeline.store.rowbytes import ROW_BYTES
from pipeline.store.state import (
    INDEX_COLUMNS,
    KEPT_NAMES,
    ROW_FILE,
    CommitMeta,
    IngestKey,
    State,
    UnitMeta,
    UnitSummary,
    decode_ingested,
    encode_ingested,
    held_file,
    parquet_bytes,
    read_held,
    workdir_lock,
)
from schemas.run import DROPS, PUBLISHED, WORK, empty

if TYPE_CHECKING:  # the publisher is imported after the map (start-up)
    from pipeline.publish.shards import RowReader

R = TypeVar("R")


class NoBenchmarks(RuntimeError):
    pass


@dataclass
class RunSummary:
    units_total: int = 0
    units_new: int = 0
    units_processed: int = 0  # not served from the cache
    stats: Stats | None = None
    datasets: list[str] = field(default_factory=list)
    deferred: list[str] = field(default_factory=list)  # units not fetched this run (retried next run)
    # wall seconds of the driver's phases, and of each unit/<step> summed over units
    seconds: dict[str, float] = field(default_factory=dict)
    cpu_seconds: dict[str, float] = field(default_factory=dict)  # the same keys, CPU seconds


def list_all_units(config: Config) -> tuple[list[Unit], pl.DataFrame]:
    """Every unit of every configured source, and ledger rows for refused manifest entries."""
    units: list[Unit] = []
    refused: list[Quarantined] = []
    for source in CORPUS_SOURCES:
        found, bad = source.list_units(config)
        units += found
        refused += bad
    seen: set[str] = set()
    unique: list[Unit] = []
    for u in units:  # the same content listed twice is one unit
        if u.state_key not in seen:
            seen.add(u.state_key)
            unique.append(u)
    rows = [
        {
            "source_uid": q.source_uid,
            "epoch": q.epoch,
            "dataset": "",
            "stage": QUARANTINE,
            "reason": q.reason,
            "detail": q.detail,
        }
        for q in refused
    ]
    frame = pl.DataFrame(rows, schema=empty(DROPS).schema) if rows else empty(DROPS)
    return unique, frame


def unit_cost(unit: Unit) -> int:
    """A unit's work, estimated as its raw bytes from the local file size (compressed files about 4x
    their size); 0 for a remote unit, which keeps its listed place (the sort is stable)."""
    loc = unit.location
    if not loc or "://" in loc:
        return 0
    try:
        size = Path(loc).stat().st_size
    except OSError:
        return 0
    return size * 4 if loc.endswith((".gz", ".parquet")) else size


def signature_scheme(config: Config) -> str:
    from pipeline.dedup.keys import SIGNATURE_SCHEME

    return (
        SIGNATURE_SCHEME.format(shingle=config.dedup.shingle)
        + f"/perm{config.dedup.num_perm}-seed{config.dedup.seed}"
    )


def held_runs(state: State, config: Config) -> pl.DataFrame:
    """Dedup keys of every run already published or already in the catalog.

    Stored signatures are reused only when they were made with today's signature scheme;
    otherwise they are recomputed from the stored messages, so a library upgrade that changes
    token hashing can never let an old duplicate back in."""
    from pipeline.dedup.keys import add_dedup_keys

    scheme = signature_scheme(config)
    parts = []
    for commit in state.commits():
        path = state.root / "published" / f"{commit['seq']:06d}.parquet"
        if not path.exists() or not pq.read_schema(path).names:
            continue
        if commit.get("signature_scheme") == scheme:
            parts.append(pl.read_parquet(path, columns=["source_uid", "exact_hash", "minhash"]))
        else:
            index = pl.read_parquet(path, columns=["source_uid", "dataset", ROW_FILE])
            old = state.held_rows(index, ["source_uid", "messages"]) if index.height else index
            if old.height:
                parts.append(add_dedup_keys(old, config.dedup).select("source_uid", "exact_hash", "minhash"))
    if config.catalog:
        parts.append(catalog_keys(config, scheme))
    parts = [p for p in parts if p.height]
    if not parts:
        return pl.DataFrame(
            schema={"source_uid": pl.Utf8, "exact_hash": pl.Utf8, "minhash": pl.List(pl.UInt32)}
        )
    return pl.concat(parts, how="vertical_relaxed")


def catalog_keys(config: Config, scheme: str) -> pl.DataFrame:
    """Dedup keys of the catalog's runs, computed once per catalog content and signature scheme
    (a catalog of earlier datasets can be large; its keys are kept in the user-level reference
    cache, shared by every work dir, and computed in memory when that cannot be written)."""
    from pipeline.dedup.keys import add_dedup_keys
    from pipeline.reference.cache import cached_dir
    from pipeline.stages.context import reference_cache

    runs_dir = Path(config.catalog or "") / "runs"
    files = sorted(runs_dir.rglob("*.parquet")) if runs_dir.exists() else []
    empty_keys = pl.DataFrame(
        schema={"source_uid": pl.Utf8, "exact_hash": pl.Utf8, "minhash": pl.List(pl.UInt32)}
    )
    if not files:
        return empty_keys

    def compute() -> pl.DataFrame:
        cat = pl.concat([pl.read_parquet(f) for f in files], how="diagonal_relaxed")
        if not cat.height:
            return empty_keys
        return add_dedup_keys(cat, config.dedup).select(
            ("catalog:" + pl.col("source_uid").cast(pl.Utf8)).alias("source_uid"), "exact_hash", "minhash"
        )

    def build(tmp: Path) -> None:
        (tmp / "keys.parquet").write_bytes(parquet_bytes(compute().to_arrow()))

    fingerprint = hashlib.sha256(
        "\n".join([scheme, *(f"{f.relative_to(runs_dir)}:{file_sha256(f)}" for f in files)]).encode()
    ).hexdigest()[:24]
    cache = reference_cache(config)
    if cache is None:
        return compute()
    try:
        return pl.read_parquet(cached_dir(cache, f"catalog-keys-{fingerprint}", build) / "keys.parquet")
    except OSError:  # a cache that cannot be written
        return compute()


def run_pipeline(config: Config, *, rebuild: bool = False, reporter: Reporter | None = None) -> RunSummary:
    """Ingest what is new, decide every run, and write the ledger, stats and publish tree."""
    rep = reporter or Reporter(quiet=True)
    if not config.no_benchmarks and not config.benchmarks:
        raise NoBenchmarks(
            "no benchmark tables given: pass --benchmarks DIR (see `trajpipe benchmarks "
            "pull`) or --no-benchmarks to skip the benchmark checks (the card will say so)"
        )
    config = config.with_references()
    workdir = Path(config.workdir)
    summary = RunSummary()
    with workdir_lock(workdir), _no_temp_files_left(workdir):
        state = State(workdir)
        if rebuild:
            state.reset()
        t0, c0 = time.perf_counter(), time.process_time()
        units, refused = list_all_units(config)
        committed = state.committed_units()
        new = [u for u in units if u.state_key not in committed]
        earlier = state.ledger()
        if earlier is not None and refused.height:
            refused = refused.filter(~pl.col("source_uid").is_in(earlier.get_column("source_uid")))
        summary.units_total, summary.units_new = len(units), len(new)
        chash = config.stage_hash()
        # largest first (LPT): a big unit started last would leave the other workers idle at the end
        todo = sorted((u for u in new if not state.cached(u.state_key, chash)), key=unit_cost, reverse=True)
        summary.units_processed = len(todo)
        summary.seconds["list"] = time.perf_counter() - t0
        summary.cpu_seconds["list"] = time.process_time() - c0

        t0, c0 = time.perf_counter(), time.process_time()
        seq = state.next_seq()
        state.discard_uncommitted_rows(seq)
        loaded: dict[str, LoadedUnit] = {}
        held: _Background[pl.DataFrame] | None = None
        names: _Background[list[str]] | None = None
        try:
            if todo:
                # the keys held before this run do not depend on its units: gathered while they run
                held = _Background(held_runs, state, config)
                names = _Background(benchmark_tables, config)
                executor = make_executor(config.executor, config.workers, config.ray_address)
                warm = threading.Thread(target=_import_tail_modules, name="trajpipe-warm", daemon=True)
                warm.start()
                with rep.stage("ingest → convert → filter", total=len(todo)) as advance:

                    def on_done(i: int, r: UnitSummary) -> None:
                        # the driver's share of a finished unit (verify, copy its rows, read its keys)
                        # is done while the other units run; decisions are still made after the map
                        if not r.get("deferred"):
                            loaded[todo[i].state_key] = _load_unit(state, seq, todo[i].state_key, chash)
                        advance(sum(r.get("ingested", {}).values()))

                    metas = executor.map(
                        process_unit,
                        todo,
                        config,
                        str(workdir),
                        chash,
                        on_done=on_done,
                    )
                warm.join()
                for m in metas:  # seconds per step, summed over units (workers run in parallel)
                    for step, secs in m.get("seconds", {}).items():
                        summary.seconds[f"unit/{step}"] = summary.seconds.get(f"unit/{step}", 0.0) + secs
                    for step, secs in m.get("cpu_seconds", {}).items():
                        summary.cpu_seconds[f"unit/{step}"] = (
                            summary.cpu_seconds.get(f"unit/{step}", 0.0) + secs
                        )
                deferred = {m["unit"]: m["deferred"] for m in metas if m.get("deferred")}
                if deferred:  # could not be fetched: left undecided, retried by the next run
                    summary.deferred = sorted(
                        f"{m['url']}: {m['deferred']}" for m in metas if m.get("deferred")
                    )
                    new = [u for u in new if u.state_key not in deferred]
            summary.seconds["units"] = time.perf_counter() - t0
            summary.cpu_seconds["units"] = time.process_time() - c0
            crashpoint("after_units")

            t0, c0 = time.perf_counter(), time.process_time()
            pending = (
                _decide(state, config, new, refused, chash, rep, seq, loaded, held)
                if new or refused.height
                else None
            )
        finally:  # nothing of this run is left writing after it (a catalog key cache: its temp file)
            for bg in (held, names):
                if bg is not None:
                    bg.join()
        summary.seconds["dedup"] = time.perf_counter() - t0
        summary.cpu_seconds["dedup"] = time.process_time() - c0

        t0, c0 = time.perf_counter(), time.process_time()
        summary.stats, summary.datasets = _materialise(state, config, workdir, rep, pending, names)
        summary.seconds["publish"] = time.perf_counter() - t0
        summary.cpu_seconds["publish"] = time.process_time() - c0
    return summary


class _Background(Generic[R]):
    """``fn(*args)`` run in a daemon thread; :meth:`result` waits for it and returns its value or
    raises its exception in the caller (a result never asked for is simply dropped)."""

    def __init__(self, fn: Callable[..., R], *args: Any) -> None:
        self._out: list[R] = []
        self._err: list[BaseException] = []
        self._thread = threading.Thread(target=self._run, args=(fn, args), name="trajpipe-bg", daemon=True)
        self._thread.start()

    def _run(self, fn: Callable[..., R], args: tuple[Any, ...]) -> None:
        try:
            self._out.append(fn(*args))
        except BaseException as exc:  # re-raised by result(), in the driver's thread
            self._err.append(exc)

    def join(self) -> None:
        self._thread.join()

    def result(self) -> R:
        self._thread.join()
        if self._err:
            raise self._err[0]
        return self._out[0]


def _import_tail_modules() -> None:
    """Import what the driver needs after the map (trajectory dedup, the ledger's scrub, the
    publisher, and pandas, which pyarrow's ``to_numpy`` imports when it is installed) while the
    workers run, instead of in the serial tail after them. A failure here is met again, and
    reported, where the module is used."""
    with contextlib.suppress(Exception):
        from pipeline.stages import GLOBAL_STEPS  # noqa: F401
    with contextlib.suppress(Exception):
        importlib.import_module("pandas")


@contextlib.contextmanager
def _no_temp_files_left(workdir: Path) -> Iterator[None]:
    """A run that fails (disk full, a damaged file) leaves no temp file behind: the state stays as
    the last whole run left it, and the next run starts clean. Only called under the lock."""
    try:
        yield
    except BaseException:
        for pattern in (
            "state/cache/*/.*.tmp",
            "state/*/.*.tmp",
            "state/published/*/.*.tmp",
            "ledger/.*.tmp",
            ".publish.tmp-*",
        ):
            for tmp in workdir.glob(pattern):
                tmp.unlink(missing_ok=True)
        for stage in (workdir / "builds").glob(".staging-*"):
            shutil.rmtree(stage, ignore_errors=True)
        raise


KEY_COLUMNS = ["source_uid", "epoch", "dataset", "resolved", "exact_hash", "minhash"]


@dataclass
class PendingCommit:
    """A run's decisions written to the store but not yet recorded: they count only once the
    build they make has been written and verified (then the record is written, then the switch)."""

    seq: int
    units: list[str]
    files: dict[str, str]
    meta: CommitMeta


@dataclass
class LoadedUnit:
    """What the driver reads of a processed unit: its meta, its drops, and the index columns of
    its kept runs, read from the copy of its rows already placed in the commit's part of the
    held store (``rel``, with its ``sha``; removed again if none of its runs is admitted)."""

    meta: UnitMeta
    drops: pl.DataFrame
    index: pl.DataFrame
    rel: str
    sha: str


def _load_unit(state: State, seq: int, unit_key: str, chash: str) -> LoadedUnit:
    """Verify a processed unit and copy its kept rows into run ``seq``'s part of the held store.

    The kept file is hashed once, as it is copied (a damaged cache file is refused there); its
    index is read from the copy, whose bytes are the ones hashed."""
    meta = state.read_unit_meta(unit_key, chash, unverified=KEPT_NAMES)
    rel, sha = state.hold_unit_rows(seq, unit_key, chash)
    drops = pl.read_parquet(state.unit_file(unit_key, chash, "drops.parquet"))
    return LoadedUnit(meta, drops, _index_of(state.root / rel), rel, sha)


def _decide(
    state: State,
    config: Config,
    new: list[Unit],
    refused: pl.DataFrame,
    chash: str,
    rep: Reporter,
    seq: int,
    loaded: dict[str, LoadedUnit] | None = None,
    held: _Background[pl.DataFrame] | None = None,
) -> PendingCommit:
    """The global step: trajectory dedup of the new runs against everything held; one commit.

    Only the dedup keys of the new runs are in memory at once; each unit's rows are copied as
    they are into the commit's part of the store (``loaded``: units already read while the map
    ran; the others are read here). The decisions are made in ``new``'s order. ``held``: the
    keys of the runs held before, when they were gathered while the map ran."""
    from pipeline.stages import GLOBAL_STEPS
    from pipeline.stages.context import Context
    from pipeline.stages.scrub import scrub_counter_names, scrub_ledger

    have = loaded or {}
    # taken out of ``loaded``: a unit's drops must not outlive the ledger made of them
    units = [
        have.pop(u.state_key) if u.state_key in have else _load_unit(state, seq, u.state_key, chash)
        for u in new
    ]
    metas = [lu.meta for lu in units]
    ingested: Counter[IngestKey] = Counter()
    counters: Counter[str] = Counter()
    for m in metas:
        ingested.update(decode_ingested(m["ingested"]))
        counters.update(m["counters"])
    for ep in refused.get_column("epoch").to_list():
        ingested["", epoch_key(ep)] += 1
    drops = [lu.drops for lu in units]
    drops.append(refused)
    # the index columns of every new run (rows stay where the workers wrote them)
    keys = (
        pl.concat(
            [lu.index.with_columns(pl.lit(i, pl.UInt32).alias("__part")) for i, lu in enumerate(units)],
            how="vertical_relaxed",
        )
        if units
        else None
    )
    admitted: pl.Series | None = None
    if keys is not None and keys.height:
        keys, taken = _taken_uids(state, keys)
        drops.append(taken)
    with rep.stage("traj_dedup", total=1) as advance:
        if keys is not None and keys.height:
            ctx = Context(
                config,
                benchmarks=None,
                catalog_tasks=None,
                held=held.result() if held is not None else held_runs(state, config),
            )
            batch = keys.select(KEY_COLUMNS).sort("source_uid")
            for step in GLOBAL_STEPS:
                res = step(ctx)(batch)
                batch = res.kept
                drops.append(res.dropped)
                counters.update(res.counters)
            admitted = batch.get_column("source_uid")
        advance()
    ledger = sorted_drops(
        scrub_ledger(pl.concat([d.select(DROPS.names) for d in drops], how="vertical_relaxed"))
    )
    # the ledger holds them now: a chunk of a million bad lines must not be held twice
    drops.clear()
    for lu in units:
        lu.drops = lu.drops.clear()

    # the commit's index: admitted runs unit by unit, by source_uid, each naming its unit's file
    index: list[pl.DataFrame] = []
    rows: dict[str, str] = {}
    if keys is not None and admitted is not None:
        keys = keys.filter(pl.col("source_uid").is_in(admitted))
        for (i,), part in sorted(keys.group_by("__part"), key=lambda kv: int(str(kv[0][0]))):
            lu = units[int(str(i))]
            rows[lu.rel] = lu.sha
            index.append(part.sort("source_uid").select(*INDEX_COLUMNS, pl.lit(lu.rel).alias(ROW_FILE)))
    del keys
    for lu in units:  # a unit none of whose runs is admitted holds no rows
        if lu.rel not in rows:
            (state.root / lu.rel).unlink(missing_ok=True)

    files = state.write_parts(seq, index, ledger, rows)
    counters = scrub_counter_names(counters)  # a tool or dialect name comes from the input
    return PendingCommit(
        seq,
        [u.state_key for u in new],
        files,
        {
            "ingested": encode_ingested(ingested),
            "counters": dict(sorted(counters.items())),
            "signature_scheme": signature_scheme(config),
            "raw_bytes": sum(m.get("raw_bytes", 0) for m in metas),
        },
    )


def _index_of(kept: Path) -> pl.DataFrame:
    """The index columns of a unit's kept runs (the narrow read; the publishing size is computed
    here only for a cache written without it)."""
    held = held_file(kept)
    if ROW_BYTES in held.names:
        return read_held(held, INDEX_COLUMNS)
    from pipeline.store.rowbytes import row_bytes_expr

    full = read_held(held)
    return full.with_columns(row_bytes_expr().alias(ROW_BYTES)).select(INDEX_COLUMNS)


def _empty_index() -> pl.DataFrame:
    return (
        empty(WORK)
        .with_columns(
            pl.lit(None, pl.Utf8).alias("exact_hash"),
            pl.lit(None, pl.List(pl.UInt32)).alias("minhash"),
            pl.lit(None, pl.Int64).alias(ROW_BYTES),
            pl.lit(None, pl.Utf8).alias(ROW_FILE),
        )
        .select(*INDEX_COLUMNS, ROW_FILE)
    )


def _taken_uids(state: State, keys: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Split new runs whose ``source_uid`` is already taken (published by an earlier run, or carried
    by an earlier input of this run: a shard re-published under its key with new content, two
    inputs with one name) from the rest. They are dropped as ``traj_dedup/duplicate_uid``, so a uid names
    exactly one published run."""
    held = state.published(columns=["source_uid"])
    earlier = pl.col("source_uid").is_in(held.get_column("source_uid") if held is not None else [])
    repeat = pl.int_range(pl.len()).over("source_uid") > 0
    marked = keys.with_columns(earlier.alias("__earlier"), repeat.alias("__repeat"))
    bad = pl.col("__earlier") | pl.col("__repeat")
    taken = drops_from(
        marked.filter(bad),
        "traj_dedup",
        "duplicate_uid",
        pl.when(pl.col("__earlier"))
        .then(pl.lit("source_uid already published by an earlier run"))
        .otherwise(pl.lit("source_uid carried by another input of this run")),
    )
    return marked.filter(~bad).drop("__earlier", "__repeat"), taken


def _materialise(
    state: State,
    config: Config,
    workdir: Path,
    rep: Reporter,
    pending: PendingCommit | None = None,
    names: _Background[list[str]] | None = None,
) -> tuple[Stats, list[str]]:
    """Ledger, stats and publish tree, rendered from the committed state plus ``pending``.

    The new build is written beside the published one, verified and sealed with its manifest;
    only then is ``pending`` recorded, and ``<workdir>/publish`` switched to it with one rename.
    A run that fails before the record leaves the state as it was; one killed after it
    re-renders the same build next time. ``names``: :func:`benchmark_tables`, when it was read
    while the map ran."""
    from pipeline.publish.publisher import publish_tree, stage_build, switch_build, write_manifest

    files = pending.files if pending else None
    commits = state.commits() + ([pending.meta] if pending else [])
    ingested: Counter[IngestKey] = Counter()
    counters: Counter[str] = Counter()
    for c in commits:
        ingested.update(decode_ingested(c.get("ingested", {})))
        counters.update(c.get("counters", {}))
    # stats need three narrow columns; the trees are written from a lazy scan, one dataset at a time
    published = state.published(columns=["source_uid", "dataset", "epoch"], pending=files)
    if published is None:
        published = empty(WORK).select("source_uid", "dataset", "epoch")
    drops = sorted_drops(state.ledger(pending=files))
    tables = names.result() if names is not None else benchmark_tables(config)
    stats = compute_stats(
        ingested,
        published,
        drops,
        counters,
        benchmarks_checked=not config.no_benchmarks,
        benchmark_tables=tables,
    )
    stats["raw_bytes"] = sum(c.get("raw_bytes", 0) for c in commits)
    stats["epochs"] = sorted({e for e in published.get_column("epoch").to_list() if e is not None})
    ledger_dir = workdir / "ledger"
    atomic_write_bytes(ledger_dir / "drops.parquet", parquet_bytes(drops.to_arrow()))
    if not stats["invariant"]["ok"]:
        write_stats(ledger_dir, stats)  # for `audit`: the books that did not balance
    check_invariant(stats)  # before anything is published
    crashpoint("before_publish")
    stage, current_intact = stage_build(workdir)
    written: dict[str, str] = {}  # sha256 of the files publish_tree wrote, hashed from their bytes
    try:
        with rep.stage("publish", total=1) as advance:
            index = state.published(columns=[*INDEX_COLUMNS, ROW_FILE], pending=files)
            sources = dataset_sources(index, {**state.held_files(), **(files or {})})
            datasets = publish_tree(
                index if index is not None else _empty_index(),
                drops,
                stats,
                stage,
                benchmarks_checked=not config.no_benchmarks,
                rows=_held_reader(state, files),
                threads=config.workers,
                reuse=reusable_shards(workdir / "publish", stage, state.root / SOURCES, sources),
                hashes=written,
            )
            advance()
        stats["validation"] = verify_trees(stage, datasets, stats)
        if not stats["validation"]["ok"]:
            write_stats(ledger_dir, stats)
            raise InvariantError(f"published trees failed verification: {stats['validation']['problems']}")
        manifest = write_manifest(stage, stats, known=written)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    if pending is not None:
        state.write_record(pending.seq, pending.units, pending.files, pending.meta)
    switch_build(workdir, stage, manifest, current_intact=current_intact)
    # after the switch: a run killed before this line only loses the reuse, never trusts a stale one
    atomic_write_json(state.root / SOURCES, {"build": manifest["build"], "sources": sources})
    write_stats(ledger_dir, stats)
    atomic_write_json(ledger_dir / "datasets.json", datasets)
    return stats, datasets


def _held_reader(state: State, pending: dict[str, str] | None) -> RowReader:
    """The publisher's reader of held rows. It reads each dataset's runs in consecutive
    source_uid ranges (one thread per dataset), so each dataset has its own ``carry`` of decoded
    row groups that straddle two ranges (:meth:`State.held_table`)."""
    from pipeline.publish.shards import ORDER

    carries: dict[str, dict[tuple[str, int], pa.Table]] = {}

    def read(keys: pl.DataFrame, columns: list[str]) -> pa.Table:
        datasets = keys.get_column("dataset").unique().to_list() if "dataset" in keys.columns else []
        carry = carries.setdefault(str(datasets[0]), {}) if len(datasets) == 1 else None
        return state.held_table(keys, columns, pending=pending, order=ORDER, carry=carry)

    return read


def benchmark_tables(config: Config) -> list[str]:
    """The names of the benchmark tables checked (for the card; no index is built here)."""
    if config.no_benchmarks or not config.benchmarks:
        return []
    from pipeline.reference.benchmarks import table_names
    from pipeline.stages.context import reference_cache

    return table_names(Path(config.benchmarks), reference_cache(config))


def dataset_sources(index: pl.DataFrame | None, file_sha: dict[str, str]) -> dict[str, str]:
    """Per dataset, a sha256 of what its shards are made from: the code, and each run's
    source_uid with the sha256 of the file holding its row. Equal sources give equal shards."""
    from pipeline.core.config import VERSION, code_fingerprint

    if index is None or not index.height:
        return {}
    pairs = index.select(
        "dataset", "source_uid", pl.col(ROW_FILE).replace_strict(file_sha, default="?").alias("sha")
    ).sort("dataset", "source_uid", "sha")
    out = {}
    for (ds,), part in pairs.group_by("dataset", maintain_order=True):
        h = hashlib.sha256(f"{VERSION}+{code_fingerprint()}\n".encode())
        for uid, sha in part.select("source_uid", "sha").iter_rows():
            h.update(f"{uid}\0{sha}\n".encode())
        out[str(ds)] = h.hexdigest()
    return out


SOURCES = "sources.json"  # state/sources.json: the published build's id and dataset_sources


def reusable_shards(current: Path, stage: Path, record: Path, sources: dict[str, str]) -> set[str]:
    """Datasets whose shards in the current build were made from the same sources (``record``,
    written for that very build) and were carried into ``stage`` intact (stage_build links only
    files that match their manifest): their shards are kept as they are, not encoded again."""
    from pipeline.publish.publisher import MANIFEST

    try:
        manifest = orjson.loads((current / MANIFEST).read_bytes())
        made = orjson.loads(record.read_bytes())
        build, files, before = manifest["build"], manifest["files"], made["sources"]
        if made["build"] != build or not isinstance(files, dict) or not isinstance(before, dict):
            return set()
    except (OSError, orjson.JSONDecodeError, KeyError, TypeError):
        return set()
    out = set()
    for ds, src in sources.items():
        shards = [rel for rel in files if isinstance(rel, str) and rel.startswith(f"{ds}/data/")]
        if before.get(ds) == src and shards and all((stage / rel).is_file() for rel in shards):
            out.add(ds)
    return out


def write_stats(ledger_dir: Path, stats: Stats) -> None:
    atomic_write_bytes(
        ledger_dir / "stats.json", orjson.dumps(stats, option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2)
    )


def verify_trees(publish_dir: Path, datasets: list[str], stats: Stats) -> Validation:
    """Check what was written, from the files alone: every shard has the published schema, and
    each dataset's shards hold exactly the rows the ledger says it published."""
    problems: list[str] = []
    expected = stats["published"]["by_dataset"]
    for ds in datasets:
        shards = sorted((publish_dir / ds / "data").glob("train-*.parquet"))
        if not (publish_dir / ds / "README.md").exists():
            problems.append(f"{ds}: no README.md card")
        rows = 0
        for shard in shards:
            meta = pq.read_metadata(shard)
            if not meta.schema.to_arrow_schema().remove_metadata().equals(PUBLISHED):
                problems.append(f"{shard.name} of {ds}: schema differs from schemas/run.py")
            rows += meta.num_rows
        if rows != expected.get(ds, 0):
            problems.append(f"{ds}: {rows} rows in shards, ledger says {expected.get(ds, 0)}")
    return {"ok": not problems, "datasets": len(datasets), "problems": problems}
