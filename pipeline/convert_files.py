"""``trajpipe convert``: trajectory files of any supported format → mini-coder JSONL.

The same parse → convert → scrub → validate path as the pipeline, without the corpus-level
steps (task dedup, leaks, trajectory dedup). Runs that cannot be converted are listed with
their stage and reason, never skipped silently.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import orjson
import polars as pl

from pipeline.config import Config
from pipeline.context import Context
from pipeline.episode import Quarantined, RawRun
from pipeline.process import convert_runs
from pipeline.stages.scrub import Scrub
from pipeline.stages.validate import Validate
from schemas.run import WORK, empty


def convert_files(files: list[Path], out: Path, *, step_limit: int = 250,
                  by_format: Counter[str] | None = None) -> tuple[int, int]:
    """Convert every run in ``files``; returns (converted, not converted). ``by_format`` receives
    ``<format>/converted`` and ``<format>/<stage>/<reason>`` counts (format ``unknown`` when the
    file's format could not be told)."""
    tally: Counter[str] = by_format if by_format is not None else Counter()
    from pipeline.parsers.files import iter_trajectory_file

    ctx = Context(config=Config(no_benchmarks=True), benchmarks=None, catalog_tasks=None)
    stages = [Scrub(ctx), Validate(ctx)]
    lines: list[bytes] = []
    n_ok = n_drop = 0
    for path in files:
        raws: list[RawRun] = []
        fmt_of: dict[str, str] = {}
        for item in iter_trajectory_file(path):
            if isinstance(item, Quarantined):
                lines.append(orjson.dumps({"source_uid": item.source_uid, "format": None,
                                           "drop": {"stage": "quarantine", "reason": item.reason,
                                                    "detail": item.detail}}))
                tally[f"unknown/quarantine/{item.reason}"] += 1
                n_drop += 1
            else:
                raws.append(item)
                fmt_of[item.source_uid] = item.origin
        rows, drops, _ = convert_runs(raws, step_limit)
        batch = pl.DataFrame(rows, schema=empty(WORK).schema) if rows else empty(WORK)
        for stage in stages:
            res = stage(batch)
            batch = res.kept
            drops.extend(res.dropped.to_dicts())
        for d in drops:
            lines.append(orjson.dumps({"source_uid": d["source_uid"], "format": fmt_of.get(d["source_uid"]),
                                       "drop": {k: d[k] for k in ("stage", "reason", "detail")}}))
            tally[f"{fmt_of.get(d['source_uid'], 'unknown')}/{d['stage']}/{d['reason']}"] += 1
            n_drop += 1
        for row in batch.select("source_uid", "messages").iter_rows(named=True):
            lines.append(orjson.dumps({"source_uid": row["source_uid"], "format": fmt_of[row["source_uid"]],
                                       "messages": row["messages"]}))
            tally[f"{fmt_of[row['source_uid']]}/converted"] += 1
            n_ok += 1
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(b"\n".join(lines) + (b"\n" if lines else b""))
    return n_ok, n_drop


def format_summary(by_format: Counter[str]) -> list[str]:
    """One line per input format: runs converted and the drops by stage/reason."""
    formats: dict[str, Counter[str]] = {}
    for key, n in by_format.items():
        fmt, _, what = key.partition("/")
        formats.setdefault(fmt, Counter())[what] += n
    lines = []
    for fmt in sorted(formats):
        c = formats[fmt]
        drops = sorted((k, n) for k, n in c.items() if k != "converted")
        detail = ", ".join(f"{k} {n}" for k, n in drops)
        lines.append(f"{fmt}: {c['converted']} converted, {sum(n for _, n in drops)} not converted"
                     + (f" ({detail})" if detail else ""))
    return lines
