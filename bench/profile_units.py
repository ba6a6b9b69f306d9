"""Where per-unit time goes: run the pipeline on a corpus and print wall and CPU seconds per step.

Usage: .venv/bin/python bench/profile_units.py CORPUS_DIR [--workers 1] [--benchmarks DIR]

CORPUS_DIR is what `trajpipe synth --out` wrote. Steps are summed over units (with several
workers they overlap in wall time). The work dir is fresh each time, so nothing is cached.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from pipeline.core.config import Config
from pipeline.orchestration.runner import run_pipeline

SHARED_BENCH = Path(__file__).resolve().parents[2] / "shared" / "benchmarks"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("corpus", type=Path)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--benchmarks", type=Path, default=SHARED_BENCH if SHARED_BENCH.exists() else None)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="trajpipe-prof-"))
    bench = str(args.benchmarks) if args.benchmarks else str(args.corpus / "benchmarks")
    cfg = Config(
        affine=(str(args.corpus / "affine"),),
        swelego=(str(args.corpus / "swelego"),),
        catalog=str(args.corpus / "catalog"),
        benchmarks=bench,
        workdir=str(work),
        workers=args.workers,
    )
    t0 = time.perf_counter()
    summary = run_pipeline(cfg)
    wall = time.perf_counter() - t0
    mb = summary.stats["raw_bytes"] / 1e6
    unit = {k: v for k, v in summary.seconds.items() if k.startswith("unit/")}
    cpu = summary.cpu_seconds
    total = sum(unit.values())
    print(
        f"{mb:.1f} MB raw, {summary.stats['invariant']['ingested']} runs, wall {wall:.1f}s "
        f"({mb / wall:.1f} MB/s), workers {args.workers}"
    )
    print(f"{'step':24s} {'wall s':>8s} {'CPU s':>8s} {'share':>6s} {'MB/s':>7s}")
    for k, v in sorted(unit.items(), key=lambda kv: -kv[1]):
        print(f"{k:24s} {v:8.2f} {cpu.get(k, 0.0):8.2f} {v / total:6.1%} {mb / v if v else 0:7.1f}")
    for k in ("list", "units", "dedup", "publish"):
        print(f"driver/{k:17s} {summary.seconds.get(k, 0):8.2f} {cpu.get(k, 0.0):8.2f}")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
