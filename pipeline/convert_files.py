"""``trajpipe convert``: trajectory files of any supported format → mini-coder JSONL.

The same steps as the pipeline (``pipeline.stages.STEPS``) without the corpus-level ones (task
dedup, leaks, trajectory dedup): quarantine, parse, convert, scrub, validate. Runs that cannot be
converted are listed with their stage and reason, never skipped silently.
"""

from __future__ import annotations

from pathlib import Path

import orjson

from pipeline.config import Config, Limits
from pipeline.context import Context
from pipeline.episode import RawRun
from pipeline.process import run_steps
from pipeline.stages import STEPS


def convert_files(files: list[Path], out: Path, *, step_limit: int = 250) -> tuple[int, int]:
    """Convert every run in ``files``; returns (converted, not converted)."""
    from pipeline.parsers.files import iter_trajectory_file

    config = Config(no_benchmarks=True, limits=Limits(step_limit=step_limit))
    ctx = Context(config=config, benchmarks=None, catalog_tasks=None)
    steps = [step(ctx) for step in STEPS if not step.corpus_level]
    lines: list[bytes] = []
    n_ok = n_drop = 0
    for path in files:
        items = list(iter_trajectory_file(path))
        fmt_of = {x.source_uid: x.origin for x in items if isinstance(x, RawRun)}
        position = {x.source_uid: i for i, x in enumerate(items)}
        batch, drop_frames, _ = run_steps(steps, items)
        quarantine, parse, convert, *later = drop_frames
        # runs that could not be read, then those that could not be converted (in file order),
        # then the later steps' drops in step order
        early = sorted([*parse.to_dicts(), *convert.to_dicts()], key=lambda d: position[d["source_uid"]])
        drops = [*quarantine.to_dicts(), *early, *(d for f in later for d in f.to_dicts())]
        for d in drops:
            lines.append(orjson.dumps({"source_uid": d["source_uid"], "format": fmt_of.get(d["source_uid"]),
                                       "drop": {k: d[k] for k in ("stage", "reason", "detail")}}))
            n_drop += 1
        for row in batch.select("source_uid", "messages").iter_rows(named=True):
            lines.append(orjson.dumps({"source_uid": row["source_uid"], "format": fmt_of[row["source_uid"]],
                                       "messages": row["messages"]}))
            n_ok += 1
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(b"\n".join(lines) + (b"\n" if lines else b""))
    return n_ok, n_drop
