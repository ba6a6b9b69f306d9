"""The driver: list units, map the per-unit work, run the global steps, commit, publish.

The driver does the only global work (trajectory dedup against everything held, the ledger,
the publish tree) over compact data. Every step is restartable: unit outputs are cached, a
run's decisions are committed atomically, and the publish tree is re-rendered from the state.
"""

from __future__ import annotations

import contextlib
import importlib
import shutil
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl

from pipeline.core.config import Config
from pipeline.core.episode import Quarantined
from pipeline.executors import make_executor
from pipeline.io.faults import crashpoint
from pipeline.orchestration.process import QUARANTINE, process_unit
from pipeline.orchestration.progress import Reporter
from pipeline.sources import SOURCES
from pipeline.sources.base import Unit
from pipeline.store.ledger import (
    Stats,
)
from pipeline.store.lock import workdir_lock
from pipeline.store.records import (
    UnitSummary,
)
from pipeline.store.state import State
from schemas.run import DROPS, empty

if TYPE_CHECKING:  # the publisher is imported after the map (start-up)
    pass
from pipeline.orchestration.background import _Background
from pipeline.orchestration.build import _materialise, benchmark_tables
from pipeline.orchestration.commit import LoadedUnit, _decide, _load_unit, held_runs


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
    for source in SOURCES:
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
