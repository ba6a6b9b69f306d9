"""Per-unit work, run by any executor: read → parse → convert → per-run stages → dedup keys.

``process_unit`` is the only function executors map. It reads one unit, runs every per-run
stage and writes the result into the unit cache; it returns a small summary. Global steps
(trajectory dedup, publishing) run in the driver (``pipeline.runner``).
"""

from __future__ import annotations

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
from pipeline.state import State, UnitOutput
from schemas.run import WORK, empty

QUARANTINE = "quarantine"


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


def convert_runs(raws: list[RawRun], step_limit: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]], Counter[str]]:
    """Parse and convert each raw run; a run that cannot be is a drop with its stage and reason."""
    from pipeline.convert import convert_episode
    from pipeline.parsers import parse_raw

    rows: list[dict[str, Any]] = []
    drops: list[dict[str, Any]] = []
    counters: Counter[str] = Counter()
    for raw in raws:
        ds = dataset_of(raw)
        try:
            ep = parse_raw(raw)
            counters.update(ep.counters)
            conv = convert_episode(ep, step_limit=step_limit)
            counters.update(conv.counters)
            rows.append(work_row(raw, ep, conv))
        except PipelineDrop as exc:
            drops.append(_drop(raw, ds, exc.stage, exc.reason, exc.detail))
            counters[f"{exc.stage}/{exc.reason}"] += 1
        except RecursionError as exc:  # hostile nesting: treated like any unreadable run
            drops.append(_drop(raw, ds, "parse", "too_deep", str(exc)[:200]))
        except Exception as exc:  # a bug must not lose the run: it is counted and explained
            tb = traceback.format_exception_only(exc)[-1].strip()
            drops.append(_drop(raw, ds, "parse", "crash", tb[:500]))
            counters["parse/crash"] += 1
    return rows, drops, counters


def _drop(raw: RawRun, dataset: str, stage: str, reason: str, detail: str) -> dict[str, Any]:
    return {"source_uid": raw.source_uid, "epoch": raw.epoch, "dataset": dataset, "stage": stage,
            "reason": reason, "detail": detail[:2000]}


def _quarantine(q: Quarantined) -> dict[str, Any]:
    return {"source_uid": q.source_uid, "epoch": q.epoch, "dataset": "", "stage": QUARANTINE,
            "reason": q.reason, "detail": q.detail[:2000]}


def process_unit(unit: Unit, config: Config, workdir: str) -> dict[str, Any]:
    """Process one unit end to end and cache the result; returns the unit's summary."""
    state = State(Path(workdir))
    chash = config.stage_hash()
    if state.cached(unit.state_key, chash):
        return state.read_unit(unit.state_key, chash).meta
    ctx, stages = worker_setup(config)
    raws: list[RawRun] = []
    quarantined: list[Quarantined] = []
    verdict = ShardVerdict(False, "unreadable", "reader ended without a verdict")
    for item in read_unit(unit, config):
        if isinstance(item, RawRun):
            raws.append(item)
        elif isinstance(item, Quarantined):
            quarantined.append(item)
        else:
            verdict = item
    if not verdict.ok:
        # a shard that fails verification: nothing in it is trusted
        quarantined.extend(shard_quarantine(unit, raws, verdict.reason, verdict.detail))
        raws = []
    ingested: Counter[str] = Counter()
    for raw in raws:
        ingested[f"{dataset_of(raw)}|{epoch_key(raw.epoch)}"] += 1
    for q in quarantined:
        ingested[f"|{epoch_key(q.epoch)}"] += 1

    rows, drop_rows, counters = convert_runs(raws, config.limits.step_limit)
    for raw in raws:
        counters[f"ingest/{raw.kind}"] += 1
    drop_rows = [_quarantine(q) for q in quarantined] + drop_rows
    batch = pl.DataFrame(rows, schema=empty(WORK).schema) if rows else empty(WORK)
    drop_frames = [drops_frame(drop_rows)]
    for stage in stages:
        out = stage(batch)
        batch = out.kept
        drop_frames.append(out.dropped)
        counters.update(out.counters)
    from pipeline.dedup.keys import add_dedup_keys

    batch = add_dedup_keys(batch, config.dedup)
    drops = pl.concat(drop_frames, how="vertical")
    n_in = sum(ingested.values())
    if batch.height + drops.height != n_in:
        raise AssertionError(f"{unit.key}: {n_in} ingested but {batch.height} kept + {drops.height} dropped")
    meta = {
        "unit": unit.state_key, "source": unit.source, "key": unit.key, "url": unit.url,
        "epoch": unit.epoch, "verdict": verdict.reason or "ok",
        "ingested": dict(sorted(ingested.items())), "counters": dict(sorted(counters.items())),
        "raw_bytes": sum(r.raw_bytes for r in raws),
    }
    crashpoint("unit_done")
    state.write_unit(unit.state_key, chash, UnitOutput(batch, drops, meta))
    return meta
