"""End-to-end benchmark: the whole pipeline against the physical floor, and how it scales.

    .venv/bin/python bench/e2e.py --size-gb 1.0 --scales 1,2,4 --scale-base-gb 0.25

1. Generates (and caches under bench/out/, git-ignored) synthetic corpora with `trajpipe synth`,
   sized by *raw JSON bytes*: the decompressed JSONL of every Affine chunk plus the JSON of every
   SWE-Lego row.
2. For each corpus, in a fresh child process (so peak-RSS counters start clean):
   - the whole pipeline (`run_pipeline`, fresh work dir, page cache warm), timed per driver
     phase (RunSummary.seconds), with the process tree's RSS sampled from /proc;
   - the floor: gzip decompression + `orjson.loads` of every line of the same chunks (and a
     Parquet read + `orjson.loads` of the SWE-Lego rows), mapped over the same units by the same
     executor with the same worker count;
   - a per-stage profile: the CPU seconds `process_unit` reports for each of its steps,
     summed over every unit of the measured run, next to the floor's CPU seconds.
3. Prints a markdown report and writes it to bench/results/e2e.md with the command.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import math
import os
import resource
import shutil
import subprocess
import sys
import threading
import time
import zlib
from pathlib import Path
from typing import Any

import orjson
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
TRAJPIPE = Path(sys.executable).with_name("trajpipe")
PAGE = os.sysconf("SC_PAGE_SIZE")
MB = 1e6


# -- corpus ----------------------------------------------------------------------------------


def corpus_files(corpus: Path) -> list[Path]:
    files = sorted((corpus / "affine").rglob("*.jsonl.gz"))
    files += sorted(p for p in (corpus / "swelego").rglob("*") if p.suffix in (".parquet", ".jsonl"))
    return files


def _loads(line: bytes) -> None:
    # the synthetic corpus plants malformed records on purpose: decoding them is still floor work
    with contextlib.suppress(orjson.JSONDecodeError):
        orjson.loads(line)


def floor_file(path: str) -> dict[str, Any]:
    """The floor for one input file: decode every record, nothing else. Returns bytes and lines."""
    t0 = time.perf_counter()
    raw = lines = 0
    if path.endswith(".jsonl.gz"):
        pending = b""
        with contextlib.suppress(EOFError, OSError, zlib.error), gzip.open(path, "rb") as fh:
            while block := fh.read(1 << 20):  # a planted broken gzip stops here, like the reader
                parts = (pending + block).split(b"\n")
                pending = parts.pop()
                for line in parts:
                    if line:
                        _loads(line)
                        raw += len(line) + 1
                        lines += 1
        if pending:
            _loads(pending)
            raw += len(pending)
            lines += 1
    elif path.endswith(".jsonl"):
        with open(path, "rb") as fh:
            for line in fh:
                if line.strip():
                    _loads(line)
                    raw += len(line)
                    lines += 1
    else:  # SWE-Lego Parquet: the rows' JSON is what a JSONL export would hold
        for batch in pq.ParquetFile(path).iter_batches(batch_size=256):
            for row in batch.to_pylist():
                msgs = row.get("messages")
                if isinstance(msgs, str | bytes):
                    _loads(msgs)
                    raw += len(msgs)
                else:
                    raw += len(orjson.dumps(msgs))
                lines += 1
    return {"raw_bytes": raw, "lines": lines, "seconds": time.perf_counter() - t0}


def synth_corpus(out: Path, runs: int, epochs: int, seed: int) -> dict[str, Any]:
    """`trajpipe synth` into ``out`` once; its raw size is recorded next to it (the cache key)."""
    marker = out / "bench-corpus.json"
    if marker.exists():
        return orjson.loads(marker.read_bytes())
    shutil.rmtree(out, ignore_errors=True)
    cmd = [
        str(TRAJPIPE),
        "synth",
        "--out",
        str(out),
        "--runs",
        str(runs),
        "--epochs",
        str(epochs),
        "--seed",
        str(seed),
    ]
    if any((SHARED / "benchmarks").glob("*.jsonl")):
        cmd += ["--benchmarks", str(SHARED / "benchmarks")]
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    seconds = time.perf_counter() - t0
    files = corpus_files(out)
    sizes = [floor_file(str(f)) for f in files]
    info = {
        "runs": runs,
        "epochs": epochs,
        "seed": seed,
        "files": len(files),
        "raw_bytes": sum(s["raw_bytes"] for s in sizes),
        "records": sum(s["lines"] for s in sizes),
        "synth_seconds": round(seconds, 1),
    }
    marker.write_bytes(orjson.dumps(info))
    return info


def ensure_corpus(out_root: Path, target_bytes: float, epochs: int, seed: int) -> tuple[Path, dict[str, Any]]:
    """A cached corpus of at least ``target_bytes`` raw JSON (runs per epoch from a calibration)."""
    cached = sorted(
        (
            (orjson.loads(m.read_bytes()), m.parent)
            for m in out_root.glob(f"corpus-r*-e{epochs}-s{seed}/bench-corpus.json")
        ),
        key=lambda c: c[0]["raw_bytes"],
    )
    for info, path in cached:  # an earlier corpus within 10% above the target is reused
        if target_bytes <= info["raw_bytes"] <= 1.1 * target_bytes:
            return path, info
    calib = synth_corpus(out_root / f"calib-e{epochs}-s{seed}", 60, epochs, seed)
    # bytes per run fall as corpora grow (shared repos amortise): estimate from the largest cached one
    for info, _ in cached:
        if info["raw_bytes"] > calib["raw_bytes"]:
            calib = info
    per_run = calib["raw_bytes"] / calib["runs"]
    runs = max(10, math.ceil(target_bytes / per_run * 1.02))
    while True:
        path = out_root / f"corpus-r{runs}-e{epochs}-s{seed}"
        info = synth_corpus(path, runs, epochs, seed)
        if info["raw_bytes"] >= target_bytes:
            return path, info
        runs = math.ceil(runs * target_bytes / info["raw_bytes"] * 1.02)  # overshoot, not undershoot


# -- memory of the process tree -------------------------------------------------------------


def tree_rss(root: int) -> int:
    """Resident bytes of ``root`` and all its descendants, now (Linux /proc)."""
    children: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat", "rb") as fh:
                ppid = int(fh.read().rsplit(b")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(d))
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        todo += children.get(pid, [])
        try:
            with open(f"/proc/{pid}/statm", "rb") as fh:
                total += int(fh.read().split()[1]) * PAGE
        except (OSError, IndexError, ValueError):
            pass
    return total


class TreeSampler:
    """Peak RSS of this process tree (driver + pool or Ray workers), sampled every ``period`` s."""

    def __init__(self, period: float = 0.2) -> None:
        self.period, self.peak, self._stop = period, 0, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, tree_rss(os.getpid()))
            self._stop.wait(self.period)

    def __enter__(self) -> TreeSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, tree_rss(os.getpid()))


# -- one measurement (runs in a child process) ------------------------------------------------


def measure(corpus: Path, workdir: Path, workers: int, executor: str, n_profile: int) -> dict[str, Any]:
    from pipeline.core.config import Config
    from pipeline.executors import make_executor
    from pipeline.orchestration.runner import list_all_units, run_pipeline

    bench_dir = SHARED / "benchmarks"
    cfg = Config(
        affine=(str(corpus / "affine"),),
        swelego=(str(corpus / "swelego"),),
        catalog=str(corpus / "catalog"),
        workdir=str(workdir),
        executor=executor,
        workers=workers,
        **({"benchmarks": str(bench_dir)} if any(bench_dir.glob("*.jsonl")) else {"no_benchmarks": True}),
    )
    shutil.rmtree(workdir, ignore_errors=True)
    for f in corpus_files(corpus):  # warm the page cache: floor and pipeline both read from memory
        with open(f, "rb") as fh:
            while fh.read(1 << 24):
                pass
    rss_start = tree_rss(os.getpid())
    load_before = os.getloadavg()[0]
    with TreeSampler() as sampler:
        t0 = time.perf_counter()
        summary = run_pipeline(cfg, rebuild=True)
        wall = time.perf_counter() - t0
    res: dict[str, Any] = {
        "pipeline_wall": wall,
        "phases": summary.seconds,
        "units": summary.units_total,
        "stats_raw_bytes": summary.stats.get("raw_bytes", 0),
        "ingested": summary.stats["ingested"]["total"],
        "published": summary.stats["published"]["total"],
        "invariant_ok": summary.stats["invariant"]["ok"],
        "load_avg": [load_before, os.getloadavg()[0]],  # other users of the machine skew timings
        "rss_tree_peak": sampler.peak,
        "rss_start": rss_start,
        "maxrss_driver": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        "maxrss_worker": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024,
    }
    units, _ = list_all_units(cfg)
    files = [u.location for u in units]
    t0 = time.perf_counter()
    floors = make_executor(executor, workers, cfg.ray_address).map(floor_file, files)
    res["floor_wall"] = time.perf_counter() - t0
    res["raw_bytes"] = sum(f["raw_bytes"] for f in floors)
    res["floor_cpu"] = sum(f["seconds"] for f in floors)
    if n_profile:
        # the run's own per-step CPU seconds (process_unit times each step), over every unit
        res["profile"] = {k.split("/", 1)[1]: v for k, v in summary.seconds.items() if k.startswith("unit/")}
        res["profile_floor"] = res["floor_cpu"]
        res["profile_raw_bytes"] = res["raw_bytes"]
        res["profile_units"] = len(units)
    return res


def run_measure(corpus: Path, workdir: Path, workers: int, executor: str, n_profile: int) -> dict[str, Any]:
    """``measure`` in a fresh interpreter: clean rusage counters and no state from earlier runs."""
    out = subprocess.run(
        [
            sys.executable,
            __file__,
            "--_measure",
            str(corpus),
            str(workdir),
            str(workers),
            executor,
            str(n_profile),
        ],
        check=True,
        capture_output=True,
    )
    return orjson.loads(out.stdout.strip().splitlines()[-1])


# -- report ------------------------------------------------------------------------------------


def fmt_mb(b: float) -> str:
    return f"{b / MB:,.0f} MB"


def report(
    args: argparse.Namespace, head: tuple[dict, dict], series: list[tuple[float, dict, dict]], command: str
) -> str:
    info, m = head
    total = m["pipeline_wall"]
    lines = [
        "# End-to-end benchmark",
        "",
        f"Command: `{command}`",
        "",
        f"Machine: {os.cpu_count()} cores, Python {sys.version.split()[0]}; executor `{args.executor}`, "
        f"{args.workers} workers. Corpus: `trajpipe synth --runs {info['runs']} --epochs {info['epochs']} "
        f"--seed {info['seed']}` = {info['records']:,} records in {info['files']} files, "
        f"{fmt_mb(m['raw_bytes'])} of raw JSON. Page cache warm for both measurements.",
        "",
        "## Pipeline against the floor",
        "",
        "Floor = gzip decompression + `orjson.loads` of every record of the same files, mapped by the "
        "same executor over the same units.",
        "",
        "| | seconds | raw MB/s | runs/s | × floor |",
        "|---|---:|---:|---:|---:|",
        f"| floor (decode only) | {m['floor_wall']:.1f} | {m['raw_bytes'] / MB / m['floor_wall']:.1f} | "
        f"{m['ingested'] / m['floor_wall']:,.0f} | 1.00 |",
    ]
    for phase, label in (
        ("list", "list units (manifests)"),
        ("units", "per-unit work (mapped)"),
        ("dedup", "traj_dedup + commit (driver)"),
        ("publish", "ledger + publish (driver)"),
    ):
        s = m["phases"].get(phase, 0.0)
        lines.append(f"| {label} | {s:.1f} | | | {s / m['floor_wall']:.2f} |")
    lines.append(
        f"| **whole pipeline** | **{total:.1f}** | **{m['raw_bytes'] / MB / total:.1f}** | "
        f"**{m['ingested'] / total:,.0f}** | **{total / m['floor_wall']:.2f}** |"
    )
    goal = total / m["floor_wall"] <= 4
    lines += [
        "",
        f"Goal: whole pipeline within 4× of the floor: **{'met' if goal else 'NOT met'}** "
        f"({total / m['floor_wall']:.2f}×). {m['ingested']:,} runs ingested, {m['published']:,} published, "
        f"invariant {'ok' if m['invariant_ok'] else 'BROKEN'}. Peak RSS: process tree "
        f"{fmt_mb(m['rss_tree_peak'])}, driver {fmt_mb(m['maxrss_driver'])}, largest worker "
        f"{fmt_mb(m['maxrss_worker'])}. 1-min load average before/after the pipeline: "
        f"{m['load_avg'][0]:.1f} / {m['load_avg'][1]:.1f} (2 cores; above 2 means other processes "
        "competed for the CPU).",
    ]
    if "profile" in m:
        pf = m["profile_floor"]
        prof_total = sum(m["profile"].values())
        lines += [
            "",
            f"### Per-unit steps ({m['profile_units']} units, {fmt_mb(m['profile_raw_bytes'])} raw)",
            "",
            "CPU seconds per step of `process_unit`, summed over every unit of the run above; × floor is "
            "against the floor's CPU seconds over the same units.",
            "",
            "| step | seconds | share | × floor |",
            "|---|---:|---:|---:|",
        ]
        for name, s in m["profile"].items():
            lines.append(f"| {name} | {s:.2f} | {s / prof_total:.0%} | {s / pf:.2f} |")
        lines.append(f"| **per-unit total** | **{prof_total:.2f}** | 100% | **{prof_total / pf:.2f}** |")
        lines.append(f"| (floor, CPU seconds) | {pf:.2f} | | 1.00 |")
    if series:
        base = series[0]
        lines += [
            "",
            "## Scaling",
            "",
            "| scale | raw JSON | runs | pipeline s | s per raw GB | time vs linear | peak RSS tree "
            "| peak RSS driver | peak RSS worker | load avg |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for scale, _info, s in series:
            linear = base[2]["pipeline_wall"] * s["raw_bytes"] / base[2]["raw_bytes"]
            lines.append(
                f"| {scale:g}× | {fmt_mb(s['raw_bytes'])} | {s['ingested']:,} | {s['pipeline_wall']:.1f} | "
                f"{s['pipeline_wall'] / (s['raw_bytes'] / 1e9):.1f} | {s['pipeline_wall'] / linear:.2f} | "
                f"{fmt_mb(s['rss_tree_peak'])} | {fmt_mb(s['maxrss_driver'])} | {fmt_mb(s['maxrss_worker'])} | "
                f"{s['load_avg'][0]:.1f}–{s['load_avg'][1]:.1f} |"
            )
        last = series[-1][2]
        growth = last["pipeline_wall"] / (base[2]["pipeline_wall"] * last["raw_bytes"] / base[2]["raw_bytes"])
        mem = last["rss_tree_peak"] / base[2]["rss_tree_peak"]
        lines += [
            "",
            f"Goal: time within 1.15× of linear from {base[0]:g}× to {series[-1][0]:g}×: "
            f"**{'met' if growth <= 1.15 else 'NOT met'}** ({growth:.2f}×). "
            f"Goal: peak memory flat: tree peak grew {mem:.2f}× for "
            f"{last['raw_bytes'] / base[2]['raw_bytes']:.1f}× the input "
            f"(**{'met' if mem <= 1.15 else 'NOT met'}**, flat taken as ≤ 1.15×).",
            "",
            "Time vs linear = pipeline seconds ÷ (smallest run's seconds × raw-size ratio). "
            "Peak RSS tree = largest sampled sum over the driver and all its worker processes "
            "(/proc every 0.2 s), so a lower bound that can miss a short spike; driver and worker = `getrusage` maxima (exact).",
        ]
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> None:
    if argv[:1] == ["--_measure"]:
        corpus, workdir, workers, executor, n_profile = argv[1:6]
        res = measure(Path(corpus), Path(workdir), int(workers), executor, int(n_profile))
        sys.stdout.write(orjson.dumps(res).decode() + "\n")
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size-gb", type=float, default=1.0, help="raw JSON of the headline corpus")
    ap.add_argument("--scales", default="1,2,4", help="multiples of --scale-base-gb ('' to skip)")
    ap.add_argument(
        "--scale-base-gb", type=float, default=None, help="base of the scaling series (default: --size-gb)"
    )
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--executor", default="local", choices=["local", "ray"])
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--profile-units", type=int, default=8, help="units timed step by step (0: skip)")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "out")
    ap.add_argument("--results", type=Path, default=ROOT / "bench" / "results" / "e2e.md")
    args = ap.parse_args(argv)
    command = "python bench/e2e.py " + " ".join(argv) if argv else "python bench/e2e.py"
    args.out.mkdir(parents=True, exist_ok=True)

    def run_at(gb: float, n_profile: int) -> tuple[dict, dict]:
        corpus, info = ensure_corpus(args.out, gb * 1e9, args.epochs, args.seed)
        print(
            f"measuring {corpus.name}: {info['raw_bytes'] / MB:,.0f} MB raw ...", file=sys.stderr, flush=True
        )
        m = run_measure(corpus, args.out / "work", args.workers, args.executor, n_profile)
        print(
            f"  pipeline {m['pipeline_wall']:.1f}s, floor {m['floor_wall']:.1f}s, "
            f"tree peak {m['rss_tree_peak'] / MB:,.0f} MB",
            file=sys.stderr,
            flush=True,
        )
        return info, m

    head = run_at(args.size_gb, args.profile_units)
    series: list[tuple[float, dict, dict]] = []
    base_gb = args.scale_base_gb or args.size_gb
    for s in [float(x) for x in args.scales.split(",") if x.strip()]:
        if math.isclose(base_gb * s, args.size_gb):
            series.append((s, *head))
        else:
            series.append((s, *run_at(base_gb * s, 0)))
    text = report(args, head, series, command)
    sys.stdout.write(text)
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(text)


if __name__ == "__main__":
    main(sys.argv[1:])
