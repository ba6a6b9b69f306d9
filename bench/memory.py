"""Peak memory of a whole `trajpipe run` at 1× and 8× the sample corpus.

Usage: .venv/bin/python bench/memory.py [--runs 120] [--factor 8] [--workers 2]

Each size runs in a fresh subprocess; the peak is the largest sum of RSS over the run's
process tree (driver + workers), sampled every 20 ms from /proc. Writes bench/results/memory.md.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

from e2e import synth_command, tree_rss  # bench/ is on sys.path when run as a script

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "out"
SHARED_BENCH = ROOT.parent / "shared" / "benchmarks"


def measure(cmd: list[str]) -> tuple[float, int]:
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    peak = 0
    while proc.poll() is None:
        peak = max(peak, tree_rss(proc.pid))
        time.sleep(0.02)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stderr.read().decode()[-3000:]}")
    return time.perf_counter() - start, peak


def corpus(runs: int, epochs: int) -> Path:
    out = OUT / f"mem-{runs}x{epochs}"
    if not (out / "labels.jsonl").exists():
        cmd = synth_command(out, runs, epochs, 11)
        subprocess.run(cmd, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    return out


def raw_mb(path: Path) -> float:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 2**20


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=120, help="runs per epoch at 1×")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--factor", type=int, default=8)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    bench = str(SHARED_BENCH) if SHARED_BENCH.exists() else None
    rows = []
    for scale in (1, args.factor):
        src = corpus(args.runs * scale, args.epochs)
        work = OUT / f"mem-work-{scale}"
        cmd = [
            sys.executable,
            "-m",
            "pipeline.cli",
            "run",
            "--rebuild",
            "--workdir",
            str(work),
            "--affine",
            str(src / "affine"),
            "--swelego",
            str(src / "swelego"),
            "--catalog",
            str(src / "catalog"),
            "--workers",
            str(args.workers),
        ]
        cmd += ["--benchmarks", bench] if bench else ["--benchmarks", str(src / "benchmarks")]
        # cold: no cached unit outputs, so every stage really runs
        subprocess.run(["rm", "-rf", str(work)], check=True)
        secs, peak = measure(cmd)
        rows.append((scale, raw_mb(src), secs, peak / 2**20))
    base = rows[0][3]
    lines = [
        f"Command: `.venv/bin/python bench/memory.py --runs {args.runs} --epochs {args.epochs} "
        f"--factor {args.factor} --workers {args.workers}`",
        "",
        "| scale | corpus on disk (MB, gzip) | wall (s) | peak RSS, process tree (MB) | peak / 1× |",
        "|---:|---:|---:|---:|---:|",
    ]
    for scale, mb, secs, peak in rows:
        lines.append(f"| {scale}× | {mb:.1f} | {secs:.1f} | {peak:.0f} | {peak / base:.2f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    (ROOT / "bench" / "results").mkdir(parents=True, exist_ok=True)
    (ROOT / "bench" / "results" / "memory.md").write_text(text)


if __name__ == "__main__":
    main()
