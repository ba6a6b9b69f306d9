"""Leak stages over real public trajectories: every drop and every attempt, for a hand verdict.

    .venv/bin/python bench/leaks_real.py tests/fixtures/real [more dirs or files] [--benchmarks ../shared/benchmarks]
        [--csv out.csv] [--show-attempts] [--labels tests/fixtures/real/leaks/EXPECTATIONS.json]

Each file goes through the pipeline's own quarantine -> parse -> convert steps (``pipeline.stages.STEPS``,
as ``trajpipe convert`` runs them, step limit 250), then the SolutionLeak stage (and BenchmarkLeak when a
benchmarks folder is given). Prints one line per run that was dropped or had an attempt: file,
stage/reason or attempts, and the drop's detail. With ``--labels`` (file name -> {"label": "leak" |
"look-alike"}, the hand verdicts), also the solution-leak precision and recall over the labelled runs.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pipeline.core.config import Config, Limits
from pipeline.core.episode import Quarantined
from pipeline.orchestration.process import run_steps
from pipeline.parsers.files import iter_trajectory_file
from pipeline.stages import STEPS
from pipeline.stages.context import Context
from pipeline.stages.leaks import BenchmarkLeak, SolutionLeak

SUFFIXES = (".traj", ".json", ".jsonl", ".gz")


def files_of(paths: list[Path]) -> list[Path]:
    out: list[Path] = []
    for p in paths:
        if p.is_dir():
            out.extend(sorted(f for f in p.rglob("*") if f.is_file() and f.name.endswith(SUFFIXES)))
        else:
            out.append(p)
    return out


def scan(files: list[Path], benchmarks: pl.DataFrame | None) -> tuple[list[dict[str, object]], Counter[str]]:
    """One record per converted run: file, source_uid, outcome (kept / stage/reason), attempts, detail."""
    config = Config(no_benchmarks=benchmarks is None, limits=Limits(step_limit=250))
    ctx = Context(config=config, benchmarks=benchmarks, catalog_tasks=None)
    read = [step(ctx) for step in STEPS if step.name in ("quarantine", "parse", "convert", "verify")]
    stages = [SolutionLeak(ctx), *([BenchmarkLeak(ctx)] if benchmarks is not None else [])]
    records: list[dict[str, object]] = []
    totals: Counter[str] = Counter()
    for f in files:
        items = list(iter_trajectory_file(f))
        frame, (_, *drops), _ = run_steps(read, items)
        # quarantined records (unreadable file, malformed line) are no runs; parse/convert drops are
        totals["runs"] += sum(1 for i in items if not isinstance(i, Quarantined))
        totals["quarantined"] += sum(1 for i in items if isinstance(i, Quarantined))
        totals["not_converted"] += sum(dropped.height for dropped in drops)
        for dropped in drops:
            totals.update(f"{s}/{r}" for s, r in dropped.select("stage", "reason").iter_rows())
        if not frame.height:
            continue
        for k in range(frame.height):  # one run at a time: attempt counters are per batch
            batch = frame[k : k + 1]
            rec: dict[str, object] = {
                "file": str(f),
                "source_uid": batch["source_uid"][0],
                "outcome": "kept",
                "attempts": "",
                "detail": "",
            }
            for stage in stages:
                res = stage(batch)
                if res.dropped.height:
                    d = res.dropped.row(0, named=True)
                    rec.update(outcome=f"{d['stage']}/{d['reason']}", detail=d["detail"])
                    break
                if stage.name == "solution_leak":
                    rec["attempts"] = ",".join(
                        sorted(
                            k.split("/", 1)[1] for k in res.counters if k.startswith("solution_leak_attempt/")
                        )
                    )
            records.append(rec)
            totals["converted"] += 1
    return records, totals


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("paths", nargs="+", type=Path)
    ap.add_argument("--benchmarks", type=Path)
    ap.add_argument("--csv", type=Path)
    ap.add_argument("--show-attempts", action="store_true")
    ap.add_argument(
        "--labels", type=Path, help="hand verdicts: JSON of file name -> {label: leak|look-alike}"
    )
    a = ap.parse_args()
    bench = None
    if a.benchmarks:
        from pipeline.reference.benchmarks import load_benchmarks

        bench = load_benchmarks(a.benchmarks)
    records, totals = scan(files_of(a.paths), bench)
    outcomes = Counter(str(r["outcome"]) for r in records)
    print(
        f"runs {totals['runs']}, converted {totals['converted']}, not converted {totals['not_converted']}"
        f", quarantined records {totals['quarantined']}"
    )
    print("not converted:", {k: v for k, v in sorted(totals.items()) if "/" in k})
    print("outcomes:", dict(outcomes))
    print("runs with unconfirmed attempts:", sum(1 for r in records if r["attempts"]))
    for r in records:
        if r["outcome"] != "kept" or (a.show_attempts and r["attempts"]):
            print(f"{r['outcome']}\t{Path(str(r['file'])).name}\t{r['attempts']}\t{str(r['detail'])[:160]!r}")
    if a.csv:
        pl.DataFrame(records).write_csv(a.csv)
    if a.labels:
        print(score(records, json.loads(a.labels.read_text())))


def score(records: list[dict[str, object]], labels: dict[str, dict[str, object]]) -> str:
    """Solution-leak precision and recall over the runs of labelled files (one run per file)."""
    tp = fp = fn = tn = 0
    missing = []
    for r in records:
        want = labels.get(Path(str(r["file"])).name)
        if want is None:
            continue
        leak, dropped = want["label"] == "leak", str(r["outcome"]).startswith("solution_leak/")
        tp, fp, fn, tn = (
            tp + (leak and dropped),
            fp + (dropped and not leak),
            fn + (leak and not dropped),
            tn + (not leak and not dropped),
        )
    seen = {Path(str(r["file"])).name for r in records}
    missing = sorted(set(labels) - seen)
    precision = f"{tp / (tp + fp):.2%}" if tp + fp else "n/a"
    recall = f"{tp / (tp + fn):.2%}" if tp + fn else "n/a"
    return (
        f"labelled runs {tp + fp + fn + tn} (leaks {tp + fn}, look-alikes {fp + tn}): TP {tp} FP {fp} FN {fn} TN {tn}, "
        f"precision {precision}, recall {recall}"
        + (f"; labelled but not converted: {missing}" if missing else "")
    )


if __name__ == "__main__":
    main()
