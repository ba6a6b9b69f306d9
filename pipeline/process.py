"""Per-unit work, run by any executor: read → parse → convert → per-run stages → dedup keys.

``process_unit`` is the only function executors map. It reads one unit, runs every per-run
stage and writes the result into the unit cache; it returns a small summary. Global steps
(trajectory dedup, publishing) run in the driver (``pipeline.runner``).
"""

from __future__ import annotations

import time
import traceback
from collections import Counter
from functools import lru_cache
from pathlib import Path
from typing import Any

import polars as pl

from pipeline.config import Config
from pipeline.context import Context
from pipeline.episode import PipelineDrop, Quarantined, RawRun
from pipeline.faults import crashpoint
from pipeline.rows import dataset_of, work_row
from pipeline.sources import affine, swelego
from pipeline.sources.base import ShardVerdict, Unit, shard_quarantine
from pipeline.stages.base import Stage, drops_frame
from pipeline.state import State
from schemas.run import DROPS, WORK, empty

QUARANTINE = "quarantine"
# columns only the per-unit stages read; the unit cache and the held-run store keep the rest
# (commands and outputs repeat what the messages hold, so they would double what is written)
STAGE_ONLY = ["commands", "outputs", "returncodes", "problem_statement"]


def epoch_key(epoch: int | None) -> str:
    return "none" if epoch is None else str(epoch)


def load_context(config: Config) -> Context:
    benchmarks = None
    if not config.no_benchmarks and config.benchmarks:
        from pipeline.benchmarks import load_benchmarks

        benchmarks = load_benchmarks(Path(config.benchmarks))
    tasks = None
    if config.catalog:
        p = Path(config.catalog) / "tasks.parquet"
        if p.exists():
            tasks = pl.read_parquet(p)
    return Context(config=config, benchmarks=benchmarks, catalog_tasks=tasks)


def build_stages(ctx: Context) -> list[Stage]:
    """The per-run stages in ledger order (docs/ARCHITECTURE.md)."""
    from pipeline.stages.leaks import BenchmarkLeak, SolutionLeak
    from pipeline.stages.scrub import Scrub
    from pipeline.stages.task_dedup import TaskDedup
    from pipeline.stages.validate import Validate

    return [TaskDedup(ctx), SolutionLeak(ctx), BenchmarkLeak(ctx), Scrub(ctx), Validate(ctx)]


@lru_cache(maxsize=2)
def worker_setup(config: Config) -> tuple[Context, list[Stage]]:
    """Reference tables and stage indexes, built once per worker process and config."""
    ctx = load_context(config)
    return ctx, build_stages(ctx)


def read_unit(unit: Unit, config: Config):  # noqa: ANN201 - iterator of source items
    if unit.source == "swelego":
        return swelego.read_unit(unit, config.limits)
    return affine.read_unit(unit, config.limits)


def convert_runs(raws: list[RawRun], step_limit: int, seconds: Counter[str] | None = None,
                 ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], Counter[str]]:
    """Parse and convert each raw run; a run that cannot be is a drop with its stage and reason."""
    from pipeline.convert import convert_episode
    from pipeline.parsers import parse_raw

    rows: list[dict[str, Any]] = []
    drops: list[dict[str, Any]] = []
    counters: Counter[str] = Counter()
    timing = seconds if seconds is not None else Counter()
    for raw in raws:
        ds = dataset_of(raw)
        dialect = "unparsed"
        try:
            t0 = time.perf_counter()
            ep = parse_raw(raw)
            t1 = time.perf_counter()
            timing["parse"] += t1 - t0
            dialect = ep.meta.dialect
            counters.update(ep.counters)
            conv = convert_episode(ep, step_limit=step_limit)
            timing["convert"] += time.perf_counter() - t1
            counters.update(conv.counters)
            counters[f"dialect_turns/{dialect}"] += len(conv.commands)
            rows.append(work_row(raw, ep, conv))
        except PipelineDrop as exc:
            drops.append(_drop(raw, ds, exc.stage, exc.reason, exc.detail))
            counters[f"{exc.stage}/{exc.reason}"] += 1
            counters[f"dialect_drops/{dialect}/{exc.stage}/{exc.reason}"] += 1
        except RecursionError as exc:  # hostile nesting: treated like any unreadable run
            drops.append(_drop(raw, ds, "parse", "too_deep", str(exc)[:200]))
        except Exception as exc:  # a bug must not lose the run: it is counted and explained
            tb = traceback.format_exception_only(exc)[-1].strip()
            drops.append(_drop(raw, ds, "parse", "crash", tb[:500]))
            counters["parse/crash"] += 1
    return rows, drops, counters


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


def _drop(raw: RawRun, dataset: str, stage: str, reason: str, detail: str) -> dict[str, Any]:
    return {"source_uid": raw.source_uid, "epoch": raw.epoch, "dataset": dataset, "stage": stage,
            "reason": reason, "detail": detail[:2000]}


def _quarantine(q: Quarantined) -> dict[str, Any]:
    return {"source_uid": q.source_uid, "epoch": q.epoch, "dataset": "", "stage": QUARANTINE,
            "reason": q.reason, "detail": q.detail[:2000]}


def process_unit(unit: Unit, config: Config, workdir: str) -> dict[str, Any]:
    """Process one unit end to end and cache the result; returns the unit's summary.

    Runs stream through in batches of ``limits.batch_runs``: only one batch of raw runs, episodes
    and rows is in memory at a time, whatever the chunk's size."""
    from pipeline.dedup.keys import add_dedup_keys

    state = State(Path(workdir))
    chash = config.stage_hash()
    if state.cached(unit.state_key, chash):
        return {**state.read_unit_meta(unit.state_key, chash), "seconds": {}}
    _, stages = worker_setup(config)
    writer = state.unit_writer(unit.state_key, chash)
    # Memory stays flat whatever a chunk holds: quarantine entries, drops and the uids of the runs
    # seen (for a shard that fails verification) are packed into frames as they accumulate.
    seen_uids: list[str] = []
    seen_packed: list[pl.Series] = []
    quarantined: list[Quarantined] = []

    def pack() -> None:
        if quarantined:
            writer.write_drops("q", drops_frame([_quarantine(q) for q in quarantined]))
            quarantined.clear()
        if seen_uids:
            seen_packed.append(pl.Series("source_uid", seen_uids, dtype=pl.Utf8))
            seen_uids.clear()
        if len(seen_packed) > 64:
            seen_packed[:] = [pl.concat(seen_packed)]
    ingested: Counter[str] = Counter()
    counters: Counter[str] = Counter()
    n_kept = 0
    raw_bytes = 0
    verdict = ShardVerdict(False, "unreadable", "reader ended without a verdict")
    pending: list[RawRun] = []

    def flush() -> None:
        nonlocal n_kept
        rows, drop_rows, batch_counters = convert_runs(pending, config.limits.step_limit, seconds)
        counters.update(batch_counters)
        t0 = time.perf_counter()
        batch = pl.DataFrame(rows, schema=empty(WORK).schema) if rows else empty(WORK)
        batch_drops = [drops_frame(drop_rows)]
        writer.write_drops("d", batch_drops[0])
        seconds["rows"] += time.perf_counter() - t0
        for stage in stages:
            t0 = time.perf_counter()
            out = stage(batch)
            seconds[stage.name] += time.perf_counter() - t0
            batch = out.kept
            writer.write_drops("d", out.dropped)
            batch_drops.append(out.dropped)
            counters.update(out.counters)
        counters.update(format_counters(pending, batch_drops))
        t0 = time.perf_counter()
        batch = add_dedup_keys(batch, config.dedup)
        seconds["dedup_keys"] += time.perf_counter() - t0
        t0 = time.perf_counter()
        if batch.height:
            writer.write(batch.drop(STAGE_ONLY))
        seconds["write"] += time.perf_counter() - t0
        n_kept += batch.height
        pending.clear()

    seconds: Counter[str] = Counter()  # per-step wall time of this unit: returned, never cached
    started = time.perf_counter()
    for item in read_unit(unit, config):
        if isinstance(item, RawRun):
            ingested[f"{dataset_of(item)}|{epoch_key(item.epoch)}"] += 1
            counters[f"ingest/{item.kind}"] += 1
            raw_bytes += item.raw_bytes
            seen_uids.append(item.source_uid)
            pending.append(item)
            if len(pending) >= config.limits.batch_runs:
                flush()
                if len(seen_uids) >= 4096:
                    pack()
        elif isinstance(item, Quarantined):
            quarantined.append(item)
            ingested[f"|{epoch_key(item.epoch)}"] += 1
            if len(quarantined) >= 4096:
                pack()
        else:
            verdict = item
    if pending and verdict.ok:
        flush()
    pending.clear()
    if verdict.retry:  # not fetched: nothing is decided or cached; the next run fetches it again
        writer.discard()
        writer.discard_drops("q")
        return {"unit": unit.state_key, "key": unit.key, "url": unit.url, "deferred": verdict.detail,
                "seconds": dict(seconds)}
    pack()
    if not verdict.ok:
        # a shard that fails verification: nothing in it is trusted, its runs are quarantined
        writer.discard()
        uids = pl.concat(seen_packed) if seen_packed else pl.Series("source_uid", [], dtype=pl.Utf8)
        seen_packed.clear()
        if uids.len():
            whole = pl.DataFrame({"source_uid": uids}).select(
                "source_uid", pl.lit(unit.epoch, dtype=pl.Int64).alias("epoch"), pl.lit("").alias("dataset"),
                pl.lit(QUARANTINE).alias("stage"), pl.lit(verdict.reason).alias("reason"),
                pl.lit(f"{unit.key}: {verdict.detail}"[:2000]).alias("detail")).cast(empty(DROPS).schema)
        else:
            whole = drops_frame([_quarantine(q) for q in shard_quarantine(unit, [], verdict.reason, verdict.detail)])
        writer.write_drops("q", whole)
        n_kept, raw_bytes = 0, 0
        counters = Counter({k: v for k, v in counters.items() if k.startswith("ingest/")})
        ingested = Counter({k: n for k, n in ingested.items() if k.startswith("|")})  # line-level entries stay
        ingested[f"|{epoch_key(unit.epoch)}"] += whole.height
    n_drops = sum(writer.drop_counts.values())
    n_in = sum(ingested.values())
    if n_kept + n_drops != n_in:
        raise AssertionError(f"{unit.key}: {n_in} ingested but {n_kept} kept + {n_drops} dropped")
    meta = {
        "unit": unit.state_key, "source": unit.source, "key": unit.key, "url": unit.url,
        "epoch": unit.epoch, "verdict": verdict.reason or "ok",
        "ingested": dict(sorted(ingested.items())), "counters": dict(sorted(counters.items())),
        "raw_bytes": raw_bytes,
    }
    crashpoint("unit_done")
    t0 = time.perf_counter()
    writer.finish(add_dedup_keys(empty(WORK), config.dedup).drop(STAGE_ONLY), empty(DROPS), meta)
    seconds["write"] += time.perf_counter() - t0
    seconds["read"] = max(0.0, time.perf_counter() - started - sum(seconds.values()))
    return {**meta, "seconds": dict(seconds)}
