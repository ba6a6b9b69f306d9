"""Per-unit work, run by any executor: read, then every per-unit step, then write.

``process_unit`` is the only function executors map. It reads one unit in batches, passes each
batch through the declared per-unit steps (``pipeline.stages.UNIT_STEPS``: quarantine, parse,
convert, task dedup, leaks, scrub, validate), adds the dedup keys and writes the result into
the unit cache; it returns a small summary. Global steps (trajectory dedup, publishing) run in
the driver (``pipeline.orchestration.runner``).
"""

from __future__ import annotations

import contextlib
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any, cast

import polars as pl

from pipeline.core.config import Config
from pipeline.core.episode import Quarantined, RawRun
from pipeline.io.faults import crashpoint
from pipeline.sources import source_of
from pipeline.sources.base import ShardVerdict, Unit, shard_quarantine
from pipeline.stages.base import DETAIL_LIMIT, Step, drops_from, paused_gc
from pipeline.stages.context import Context, reference_cache
from pipeline.stages.quarantine import Quarantine, SourceItem, quarantine_rows
from pipeline.stages.rows import dataset_of
from pipeline.store.records import IngestKey, UnitMeta, UnitSummary, encode_ingested
from pipeline.store.state import State
from schemas.run import DROPS, WORK, empty

QUARANTINE = Quarantine.name
# columns only the per-unit stages read; the unit cache and the held-run store keep the rest
# (commands and outputs repeat what the messages hold, so they would double what is written)
STAGE_ONLY = ["commands", "outputs", "returncodes", "problem_statement"]


def epoch_key(epoch: int | None) -> str:
    return "none" if epoch is None else str(epoch)


def load_context(config: Config) -> Context:
    benchmarks, key, cache = None, "", reference_cache(config)
    if not config.no_benchmarks and config.benchmarks:
        from pipeline.reference.benchmarks import load_benchmarks_cached

        benchmarks, key = load_benchmarks_cached(Path(config.benchmarks), cache)
    tasks = None
    if config.catalog:
        p = Path(config.catalog) / "tasks.parquet"
        if p.exists():
            tasks = pl.read_parquet(p)
    return Context(config=config, benchmarks=benchmarks, catalog_tasks=tasks, benchmarks_key=key, cache=cache)


def build_steps(ctx: Context) -> list[Step[Any, Any]]:
    """The per-unit steps in ledger order (``pipeline.stages.UNIT_STEPS``)."""
    from pipeline.stages import UNIT_STEPS

    return [step(ctx) for step in UNIT_STEPS]


@lru_cache(maxsize=2)
def worker_setup(config: Config) -> tuple[Context, list[Step[Any, Any]]]:
    """Reference tables and step indexes, built once per worker process and config."""
    ctx = load_context(config)
    return ctx, build_steps(ctx)


def read_unit(unit: Unit, config: Config) -> Iterator[RawRun | Quarantined | ShardVerdict]:
    return source_of(unit.source).read_unit(unit, config.limits)


class StepTimes:
    """Wall and CPU seconds per step of one unit, summed over its batches (returned with the
    unit's summary, never cached). CPU seconds are the process's, pool threads included: a worker
    runs one unit at a time, so they are the step's own and stay true on a loaded machine."""

    def __init__(
        self,
        wall_clock: Callable[[], float] = time.perf_counter,
        cpu_clock: Callable[[], float] = time.process_time,
    ) -> None:
        self.wall: defaultdict[str, float] = defaultdict(float)
        self.cpu: defaultdict[str, float] = defaultdict(float)
        self._wall_clock, self._cpu_clock = wall_clock, cpu_clock
        self._wall0, self._cpu0 = wall_clock(), cpu_clock()

    @contextlib.contextmanager
    def step(self, name: str) -> Iterator[None]:
        wall, cpu = self._wall_clock(), self._cpu_clock()
        try:
            yield
        finally:
            self.wall[name] += self._wall_clock() - wall
            self.cpu[name] += self._cpu_clock() - cpu

    def rest(self, name: str) -> None:
        """Book what no step was timed for since this clock started (reading the input) to ``name``."""
        self.wall[name] = max(0.0, self._wall_clock() - self._wall0 - sum(self.wall.values()))
        self.cpu[name] = max(0.0, self._cpu_clock() - self._cpu0 - sum(self.cpu.values()))


def run_steps(
    steps: list[Step[Any, Any]],
    batch: Any,
    times: StepTimes | None = None,
) -> tuple[Any, list[pl.DataFrame], Counter[str]]:
    """Pass ``batch`` through ``steps`` in order: the last step's kept batch, every step's
    dropped rows (in step order) and the counters."""
    drops: list[pl.DataFrame] = []
    counters: Counter[str] = Counter()
    clock = times if times is not None else StepTimes()
    for step in steps:
        with clock.step(step.name):
            out = step(batch)
        batch = out.kept
        drops.append(out.dropped)
        counters.update(out.counters)
    return batch, drops, counters


def format_counters(raws: list[RawRun], drops: list[pl.DataFrame]) -> Counter[str]:
    """Per input format (the run's origin): ``format_runs/<f>`` runs read and
    ``format_drops/<f>/<stage>/<reason>`` for every drop of one of them, at any stage."""
    fmt_of = {r.source_uid: r.origin for r in raws}
    out: Counter[str] = Counter(f"format_runs/{r.origin}" for r in raws)
    for frame in drops:
        if frame.height:
            for uid, stage, reason in frame.select("source_uid", "stage", "reason").iter_rows():
                out[f"format_drops/{fmt_of.get(uid, 'unknown')}/{stage}/{reason}"] += 1
    return out


class CodeChanged(RuntimeError):
    """A worker's code is not the driver's: trajpipe was upgraded or edited while a run was going."""


def process_unit(unit: Unit, config: Config, workdir: str, expected_hash: str | None = None) -> UnitSummary:
    """Process one unit end to end and cache the result; returns the unit's summary.

    Runs stream through in batches of ``limits.batch_runs``: only one batch of raw runs, episodes
    and rows is in memory at a time, whatever the chunk's size. ``expected_hash``: the driver's
    :meth:`Config.stage_hash`. The code fingerprint in it is taken per process, so a worker
    started after the package's sources changed would cache the unit where the driver never
    looks; it refuses (:class:`CodeChanged`) instead."""
    from pipeline.dedup.keys import add_dedup_keys

    state = State(Path(workdir))
    chash = config.stage_hash()
    if expected_hash is not None and chash != expected_hash:
        raise CodeChanged(
            "trajpipe's code changed while this run was going (a worker's code fingerprint is not the "
            "driver's): nothing of this run was committed; run the same command again"
        )
    if state.cached(unit.state_key, chash):
        return UnitSummary(**state.read_unit_meta(unit.state_key, chash), seconds={}, cpu_seconds={})
    _, steps = worker_setup(config)
    writer = state.unit_writer(unit.state_key, chash)
    # Memory stays flat whatever a chunk holds: every batch's drops go to the unit writer as they
    # are decided, and the uids of the runs seen (for a shard that fails verification) are packed.
    seen_uids: list[str] = []
    seen_packed: list[pl.Series] = []

    def pack_seen() -> None:
        if seen_uids:
            seen_packed.append(pl.Series("source_uid", seen_uids, dtype=pl.Utf8))
            seen_uids.clear()
        if len(seen_packed) > 64:
            seen_packed[:] = [pl.concat(seen_packed)]

    ingested: Counter[IngestKey] = Counter()
    counters: Counter[str] = Counter()
    n_kept = raw_bytes = 0
    verdict = ShardVerdict(False, "unreadable", "reader ended without a verdict")

    def flush(batch: list[SourceItem]) -> None:
        nonlocal n_kept
        kept, drops, batch_counters = run_steps(steps, batch, times)
        writer.write_drops("q", drops[0])  # the quarantine step's: they stay if the shard fails
        for frame in drops[1:]:
            writer.write_drops("d", frame)
        counters.update(batch_counters)
        counters.update(format_counters([x for x in batch if isinstance(x, RawRun)], drops[1:]))
        with times.step("dedup_keys"):
            kept = add_dedup_keys(kept, config.dedup)
        with times.step("write"):
            if kept.height:
                writer.write(kept.drop(STAGE_ONLY))
        n_kept += kept.height

    def next_batch(items: Iterator[RawRun | Quarantined | ShardVerdict]) -> tuple[list[SourceItem], bool]:
        """The next batch read, counted as ingested, and whether it is full (more may follow): a
        batch is ``batch_runs`` runs, whatever else it holds, or 4096 items (a chunk of a million
        bad lines is flushed as it goes, like one of runs)."""
        nonlocal verdict, raw_bytes
        batch: list[SourceItem] = []
        n_runs = 0
        for item in items:
            if isinstance(item, ShardVerdict):
                verdict = item
                continue
            if isinstance(item, RawRun):
                ingested[dataset_of(item), epoch_key(item.epoch)] += 1
                counters[f"ingest/{item.kind}"] += 1
                raw_bytes += item.raw_bytes
                seen_uids.append(item.source_uid)
                n_runs += 1
            else:
                ingested["", epoch_key(item.epoch)] += 1
            batch.append(item)
            if n_runs >= config.limits.batch_runs or len(batch) >= 4096:
                return batch, True
        return batch, False

    times = StepTimes()
    items = read_unit(unit, config)
    full = True
    while full:
        # a batch is read, put through the steps and written with the cyclic collector paused, so
        # its decoded records are freed before the collector ever scans them (see paused_gc)
        with paused_gc():
            pending, full = next_batch(items)
            if full or (pending and verdict.ok):
                flush(pending)
            elif pending and not verdict.retry:  # the line-level entries of the last batch stay,
                # like those already written
                writer.write_drops("q", quarantine_rows([x for x in pending if isinstance(x, Quarantined)]))
            del pending
        if len(seen_uids) >= 4096:
            pack_seen()
    if verdict.retry:  # not fetched: nothing is decided or cached; the next run fetches it again
        writer.discard()
        writer.discard_drops("q")
        return cast(
            UnitSummary,
            {
                "unit": unit.state_key,
                "key": unit.key,
                "url": unit.url,
                "deferred": verdict.detail,
                "seconds": dict(times.wall),
                "cpu_seconds": dict(times.cpu),
            },
        )
    pack_seen()
    if not verdict.ok:
        # a shard that fails verification: nothing in it is trusted, its runs are quarantined
        writer.discard()
        uids = pl.concat(seen_packed) if seen_packed else pl.Series("source_uid", [], dtype=pl.Utf8)
        seen_packed.clear()
        if uids.len():
            seen_runs = pl.DataFrame({"source_uid": uids}).with_columns(
                pl.lit(unit.epoch, dtype=pl.Int64).alias("epoch"), pl.lit("").alias("dataset")
            )
            detail = f"{unit.key}: {verdict.detail}"[:DETAIL_LIMIT]
            whole = drops_from(seen_runs, QUARANTINE, verdict.reason, detail).cast(empty(DROPS).schema)
        else:
            whole = quarantine_rows(
                shard_quarantine(unit, [], verdict.reason or "unreadable", verdict.detail)
            )
        writer.write_drops("q", whole)
        n_kept, raw_bytes = 0, 0
        counters = Counter({k: v for k, v in counters.items() if k.startswith("ingest/")})
        ingested = Counter({k: n for k, n in ingested.items() if k[0] == ""})  # line-level entries stay
        ingested["", epoch_key(unit.epoch)] += whole.height
    n_drops = sum(writer.drop_counts.values())
    n_in = sum(ingested.values())
    if n_kept + n_drops != n_in:
        raise AssertionError(f"{unit.key}: {n_in} ingested but {n_kept} kept + {n_drops} dropped")
    meta = UnitMeta(
        unit=unit.state_key,
        source=unit.source,
        key=unit.key,
        url=unit.url,
        epoch=unit.epoch,
        verdict=verdict.reason or "ok",
        ingested=encode_ingested(ingested),
        counters=dict(sorted(counters.items())),
        raw_bytes=raw_bytes,
    )
    crashpoint("unit_done")
    with times.step("write"):
        writer.finish(add_dedup_keys(empty(WORK), config.dedup).drop(STAGE_ONLY), empty(DROPS), meta)
    times.rest("read")
    return UnitSummary(**meta, seconds=dict(times.wall), cpu_seconds=dict(times.cpu))
