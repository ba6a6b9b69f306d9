"""End-to-end benchmark: the whole pipeline against the physical floor, side by side, and how it scales.

    .venv/bin/python bench/e2e.py --size-gb 1.0 --scales 1,2,4 --scale-base-gb 0.25 --reps 3 --before main

1. Generates (and caches under bench/out/, git-ignored) synthetic corpora with `trajpipe synth`,
   sized by *raw JSON bytes*: the decompressed JSONL of every Affine chunk plus the JSON of every
   SWE-Lego row.
2. Runs ``--reps`` interleaved reps, because the machine is shared and noisy. One rep is, each in
   a fresh child process (clean rusage counters, no state from earlier runs), page cache warm:
   - the whole pipeline (`run_pipeline`, fresh work dir), timed per driver phase and per step of
     `process_unit` (RunSummary.seconds), with the process tree's RSS sampled from /proc;
   - the floor: gzip decompression + `orjson.loads` of every line of the same chunks (and a
     Parquet read + `orjson.loads` of the SWE-Lego rows), mapped over the same units by the same
     executor with the same worker count;
   - with ``--before REV``: the same pipeline measurement on the code of git revision REV
     (extracted with `git archive` under bench/out/, imported through PYTHONPATH with the current
     venv; every child checks which `pipeline` it imported, driver and pool workers);
   - the other corpora of the scaling series (``--scales``).
   Every child's reference cache (benchmark tables, leak index, catalog keys: TRAJPIPE_CACHE) is
   the bench's own under --out, warmed by an untimed calibration run; what a first run on new
   tables pays to fill it is measured once (rep 1, with an empty cache, just before its measured
   run) and reported on its own line.
   The 1-min load average is read before and after every rep. Ratios are taken within a rep
   (pipeline ÷ floor of the same rep), reported as median (min–max); the step tables come from
   the rep with the median ratio.
3. Prints a markdown report and writes it to bench/results/e2e.md (with the command) and the raw
   measurements to bench/results/e2e.json.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import math
import os
import resource
import shutil
import statistics
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
    t0, c0 = time.perf_counter(), time.process_time()
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
    return {
        "raw_bytes": raw,
        "lines": lines,
        "seconds": time.perf_counter() - t0,
        "cpu": time.process_time() - c0,
    }


def synth_command(out: Path, runs: int, epochs: int, seed: int) -> list[str]:
    """The one `trajpipe synth` command line of the benches (real benchmark tables when present)."""
    cmd = [str(TRAJPIPE), "synth", "--out", str(out), "--runs", str(runs), "--epochs", str(epochs)]
    cmd += ["--seed", str(seed)]
    if any((SHARED / "benchmarks").glob("*.jsonl")):
        cmd += ["--benchmarks", str(SHARED / "benchmarks")]
    return cmd


def synth_corpus(out: Path, runs: int, epochs: int, seed: int) -> dict[str, Any]:
    """`trajpipe synth` into ``out`` once; its raw size is recorded next to it (the cache key)."""
    marker = out / "bench-corpus.json"
    if marker.exists():
        return orjson.loads(marker.read_bytes())
    shutil.rmtree(out, ignore_errors=True)
    cmd = synth_command(out, runs, epochs, seed)
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


# -- which code is measured ---------------------------------------------------------------------


def use_tree(tree: Path) -> None:
    """Import ``pipeline`` and ``schemas`` from ``tree``, whatever the venv's editable install
    points at: ``tree`` goes first on sys.path (PYTHONPATH does the same for pool workers, which
    are spawned), and setuptools' editable meta-path finder is taken out of this process."""
    sys.path.insert(0, str(tree))
    sys.meta_path[:] = [f for f in sys.meta_path if "__editable__" not in getattr(f, "__module__", "")]
    check_tree(tree)


def pipeline_file(_: object = None) -> str:
    """Where this process imported ``pipeline`` from (also mapped over the pool's workers)."""
    import pipeline

    return str(Path(pipeline.__file__).resolve())


def check_tree(tree: Path) -> None:
    where = Path(pipeline_file())
    if not where.is_relative_to(tree.resolve()):
        raise SystemExit(f"e2e: imported pipeline from {where}, expected it under {tree}")


def export_tree(rev: str, out_root: Path) -> tuple[Path, str]:
    """The source tree of git revision ``rev`` under ``out_root`` (extracted once per commit with
    `git archive`: no worktree to register or clean up), and the commit it resolved to."""
    try:
        sha = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--verify", f"{rev}^{{commit}}"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    except subprocess.CalledProcessError as exc:
        raise SystemExit(f"e2e: --before {rev}: not a git revision here ({exc.stderr.strip()})") from None
    tree = out_root / f"rev-{sha[:12]}"
    if not (tree / ".complete").exists():
        shutil.rmtree(tree, ignore_errors=True)
        tree.mkdir(parents=True)
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", "--format=tar", sha, "pipeline", "schemas"],
            check=True,
            capture_output=True,
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
        (tree / ".complete").write_text(sha + "\n")
    return tree, sha


# -- one measurement (runs in a child process) ------------------------------------------------


def make_config(corpus: Path, workdir: Path, workers: int, executor: str) -> Any:
    from pipeline.core.config import Config

    bench_dir = SHARED / "benchmarks"
    return Config(
        affine=(str(corpus / "affine"),),
        swelego=(str(corpus / "swelego"),),
        catalog=str(corpus / "catalog"),
        workdir=str(workdir),
        executor=executor,
        workers=workers,
        **({"benchmarks": str(bench_dir)} if any(bench_dir.glob("*.jsonl")) else {"no_benchmarks": True}),
    )


def warm(corpus: Path) -> None:
    """Read every input file once: floor and pipeline both read from the page cache."""
    for f in corpus_files(corpus):
        with open(f, "rb") as fh:
            while fh.read(1 << 24):
                pass


def measure_pipeline(corpus: Path, workdir: Path, workers: int, executor: str) -> dict[str, Any]:
    """The whole pipeline on ``corpus`` in a fresh work dir: wall time, phases, steps, memory."""
    from pipeline.orchestration.runner import run_pipeline

    cfg = make_config(corpus, workdir, workers, executor)
    shutil.rmtree(workdir, ignore_errors=True)
    warm(corpus)
    rss_start = tree_rss(os.getpid())
    with TreeSampler() as sampler:
        t0 = time.perf_counter()
        summary = run_pipeline(cfg, rebuild=True)
        wall = time.perf_counter() - t0
    shutil.rmtree(workdir, ignore_errors=True)
    stats = summary.stats or {}
    return {
        "pipeline_wall": wall,
        "phases": {k: v for k, v in summary.seconds.items() if not k.startswith("unit/")},
        # per step of process_unit: wall seconds inside the workers, summed over every unit
        "steps": {k.split("/", 1)[1]: v for k, v in summary.seconds.items() if k.startswith("unit/")},
        # the same in CPU seconds of the worker processes (a tree older than the CPU accounting: none)
        "steps_cpu": {
            k.split("/", 1)[1]: v
            for k, v in getattr(summary, "cpu_seconds", {}).items()
            if k.startswith("unit/")
        },
        "phases_cpu": {
            k: v for k, v in getattr(summary, "cpu_seconds", {}).items() if not k.startswith("unit/")
        },
        "units": summary.units_total,
        "stats_raw_bytes": stats.get("raw_bytes", 0),
        "ingested": stats["ingested"]["total"],
        "published": stats["published"]["total"],
        "invariant_ok": stats["invariant"]["ok"],
        "rss_tree_peak": sampler.peak,
        "rss_start": rss_start,
        "maxrss_driver": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        "maxrss_worker": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024,
        "pipeline_file": pipeline_file(),
    }


def measure_floor(corpus: Path, workdir: Path, workers: int, executor: str) -> dict[str, Any]:
    """The floor over the pipeline's own units, mapped by the same executor."""
    from pipeline.executors import make_executor
    from pipeline.orchestration.runner import list_all_units

    cfg = make_config(corpus, workdir, workers, executor)
    units, _ = list_all_units(cfg)
    files = [u.location for u in units]
    warm(corpus)
    t0 = time.perf_counter()
    floors = make_executor(executor, workers, cfg.ray_address).map(floor_file, files)
    wall = time.perf_counter() - t0
    return {
        "floor_wall": wall,
        "floor_cpu": sum(f["seconds"] for f in floors),  # decode seconds summed over the units
        "floor_proc_cpu": sum(f["cpu"] for f in floors),  # the same in CPU seconds
        "raw_bytes": sum(f["raw_bytes"] for f in floors),
        "records": sum(f["lines"] for f in floors),
        "units": len(units),
    }


def measure_workers(corpus: Path, workdir: Path, workers: int, executor: str) -> dict[str, Any]:
    """Where the driver and the executor's workers import ``pipeline`` from."""
    from pipeline.executors import make_executor

    cfg = make_config(corpus, workdir, workers, executor)
    found = make_executor(executor, workers, cfg.ray_address).map(pipeline_file, list(range(2 * workers)))
    return {"driver": pipeline_file(), "workers": sorted(set(found))}


MEASURES = {"pipeline": measure_pipeline, "floor": measure_floor, "workers": measure_workers}


def run_child(
    kind: str,
    corpus: Path,
    workdir: Path,
    workers: int,
    executor: str,
    tree: Path = ROOT,
    cache: Path | None = None,
) -> dict[str, Any]:
    """One measurement in a fresh interpreter that imports ``pipeline`` from ``tree``. Its reference
    cache is ``cache``, by default the bench's own beside the work dir (warmed by the calibration
    run, kept across reps; the bench never touches ~/.cache)."""
    path = [str(tree), *(p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p)]
    refs = cache or workdir.with_name("reference-cache")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(path), TRAJPIPE_CACHE=str(refs))
    # both trees' bytecode is written by the calibration run and read by every rep, as an installed
    # package's is (pip compiles it): a PYTHONDONTWRITEBYTECODE=1 shell would otherwise make every
    # driver and worker compile trajpipe's ~90 modules again (~0.3 CPU-s each)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    proc = subprocess.run(
        [
            sys.executable,
            __file__,
            "--_measure",
            kind,
            str(corpus),
            str(workdir),
            str(workers),
            executor,
            str(tree),
        ],
        check=False,
        capture_output=True,
        env=env,
    )
    if proc.returncode != 0:
        raise SystemExit(f"e2e: the {kind} measurement failed:\n{proc.stderr.decode()[-3000:]}")
    res: dict[str, Any] = orjson.loads(proc.stdout.strip().splitlines()[-1])
    return res


def check_children(tree: Path, corpus: Path, args: argparse.Namespace) -> None:
    """Fail loudly unless the driver and every pool worker import ``pipeline`` from ``tree``."""
    got = run_child("workers", corpus, args.out / "work", args.workers, args.executor, tree)
    for where in [got["driver"], *got["workers"]]:
        if not Path(where).is_relative_to(tree.resolve()):
            raise SystemExit(f"e2e: a measurement of {tree} imported pipeline from {where}")


# -- statistics ---------------------------------------------------------------------------------


def median(xs: list[float]) -> float:
    return statistics.median(xs)


def spread(xs: list[float], digits: int = 2) -> str:
    """``median (min–max)``."""
    return f"{median(xs):.{digits}f} ({min(xs):.{digits}f}–{max(xs):.{digits}f})"


def median_index(xs: list[float]) -> int:
    """Index of the median value (the lower middle one for an even count)."""
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    return order[(len(xs) - 1) // 2]


# -- report ------------------------------------------------------------------------------------


def fmt_mb(b: float) -> str:
    return f"{b / MB:,.0f} MB"


PHASES = (
    ("list", "list units (manifests)"),
    ("units", "per-unit work (mapped)"),
    ("dedup", "traj_dedup + commit (driver)"),
    ("publish", "ledger + publish (driver)"),
)


def report(args: argparse.Namespace, info: dict[str, Any], reps: list[dict[str, Any]], command: str) -> str:
    before = args.before is not None
    floor = [r["floor"] for r in reps]
    after = [r["after"] for r in reps]
    ratio = [a["pipeline_wall"] / f["floor_wall"] for a, f in zip(after, floor, strict=True)]
    mid = median_index(ratio)
    m, fm = after[mid], floor[mid]
    lines = [
        "# End-to-end benchmark",
        "",
        f"Command: `{command}`",
        "",
        f"Machine: {os.cpu_count()} cores (shared with other jobs), Python {sys.version.split()[0]}; "
        f"executor `{args.executor}`, {args.workers} workers. Corpus: `trajpipe synth --runs {info['runs']} "
        f"--epochs {info['epochs']} --seed {info['seed']}` = {info['records']:,} records in {info['files']} "
        f"files, {fmt_mb(fm['raw_bytes'])} of raw JSON. Page cache warm for every measurement.",
        "",
        "## Pipeline against the floor",
        "",
        "Floor = gzip decompression + `orjson.loads` of every record of the same files, mapped by the "
        "same executor over the same units. "
        f"{len(reps)} reps, interleaved: each rep runs "
        + (
            "the pipeline, the floor and the pipeline of the *before* revision "
            if before
            else "the pipeline and the floor "
        )
        + "back to back, each in a fresh child process, so a burst of load from other jobs hits "
        "both sides of a ratio alike. Load = the machine's 1-min load average before → after the rep "
        f"({os.cpu_count()} cores: above {os.cpu_count()} other processes competed for the CPU).",
        "",
    ]
    head = "| rep | pipeline s | floor s | pipeline ÷ floor |"
    rule = "|---|---:|---:|---:|"
    if before:
        head += " before s | before ÷ floor | speed-up (before ÷ after) |"
        rule += "---:|---:|---:|"
    lines += [head + " load |", rule + "---|"]
    for i, r in enumerate(reps):
        row = f"| {i + 1} | {r['after']['pipeline_wall']:.1f} | {r['floor']['floor_wall']:.1f} | {ratio[i]:.2f} |"
        if before:
            b = r["before"]["pipeline_wall"]
            row += f" {b:.1f} | {b / r['floor']['floor_wall']:.2f} | {b / r['after']['pipeline_wall']:.2f} |"
        lines.append(row + f" {r['load'][0]:.1f} → {r['load'][1]:.1f} |")
    goal = median(ratio) <= 4
    lines += [
        "",
        f"**Whole pipeline ÷ floor: {spread(ratio)}** (median (min–max) over {len(reps)} reps). "
        f"Goal ≤ 4× the floor: **{'met' if goal else 'NOT met'}**.",
    ]
    if "cold" in reps[0]:
        cold, warm = reps[0]["cold"]["pipeline_wall"], reps[0]["after"]["pipeline_wall"]
        lines += [
            "",
            f"First run on new reference tables: **{cold - warm:+.1f} s** (rep 1 ran the pipeline once with "
            f"an empty reference cache just before its measured run: {cold:.1f} s against {warm:.1f} s; every "
            "measured run finds the benchmark tables, their leak index and the catalog's keys in the bench's "
            "reference cache, as every run after the first does).",
        ]
    if before:
        bratio = [r["before"]["pipeline_wall"] / r["floor"]["floor_wall"] for r in reps]
        speed = [r["before"]["pipeline_wall"] / r["after"]["pipeline_wall"] for r in reps]
        lines += [
            "",
            f"Before (`{args.before}` = {args.before_sha[:10]}): {spread(bratio)} × the floor; "
            f"speed-up of this tree over it (before ÷ after, per rep): **{spread(speed)}×**.",
        ]
    lines += [
        "",
        f"Median rep ({mid + 1}): {m['ingested']:,} runs ingested, {m['published']:,} published, invariant "
        f"{'ok' if m['invariant_ok'] else 'BROKEN'}; {m['ingested'] / m['pipeline_wall']:,.0f} runs/s, "
        f"{fm['raw_bytes'] / MB / m['pipeline_wall']:.1f} raw MB/s (floor "
        f"{fm['raw_bytes'] / MB / fm['floor_wall']:.1f}). Peak RSS: process tree {fmt_mb(m['rss_tree_peak'])}, "
        f"driver {fmt_mb(m['maxrss_driver'])}, largest worker {fmt_mb(m['maxrss_worker'])}.",
        "",
        "### Driver phases (median rep)",
        "",
        "Wall seconds of the driver's phases; × floor is against the same rep's floor wall time.",
        "",
    ]
    bm = reps[median_index(bratio)]["before"] if before else None
    bf = reps[median_index(bratio)]["floor"] if before else None
    if before:
        lines += ["| phase | before s | × floor | after s | × floor |", "|---|---:|---:|---:|---:|"]
    else:
        lines += ["| phase | seconds | × floor |", "|---|---:|---:|"]
    for phase, label in [*PHASES, ("", "**whole pipeline**")]:
        s = m["phases"].get(phase, 0.0) if phase else m["pipeline_wall"]
        cells = f"{s:.1f} | {s / fm['floor_wall']:.2f}"
        if bm is not None and bf is not None:
            b = bm["phases"].get(phase, 0.0) if phase else bm["pipeline_wall"]
            cells = f"{b:.1f} | {b / bf['floor_wall']:.2f} | " + cells
        lines.append(f"| {label} | {cells} |")
    floor_row = f"{fm['floor_wall']:.1f} | 1.00"
    if bf is not None:
        floor_row = f"{bf['floor_wall']:.1f} | 1.00 | " + floor_row
    lines.append(f"| floor (decode only) | {floor_row} |")
    tails = [
        (a["phases"].get("dedup", 0.0) + a["phases"].get("publish", 0.0)) / a["pipeline_wall"] for a in after
    ]
    lines += [
        "",
        f"Driver's serial tail after the map (traj_dedup + commit, ledger + publish) ÷ whole pipeline, per "
        f"rep, %: **{spread([100 * t for t in tails], 1)}** (goal < 10%: "
        f"**{'met' if median(tails) < 0.10 else 'not met'}**).",
    ]
    lines += [
        "",
        f"### Per-unit steps (median rep, {fm['units']} units)",
        "",
        "Seconds per step of `process_unit` (wall time inside the worker, so CPU time while the "
        "workers do not wait), summed over every unit of the run; × floor is against the floor's decode "
        "seconds summed over the same units in the same rep.",
        "",
    ]
    steps = list(m["steps"])
    if bm is not None and bf is not None:
        steps += [s for s in bm["steps"] if s not in steps]
        lines += [
            "| step | before s | × floor | after s | × floor | speed-up (before ÷ after) |",
            "|---|---:|---:|---:|---:|---:|",
        ]
    else:
        lines += ["| step | seconds | share | × floor |", "|---|---:|---:|---:|"]
    total = sum(m["steps"].values())
    for name in steps:
        s = m["steps"].get(name)
        if bm is not None and bf is not None:
            b = bm["steps"].get(name)
            lines.append(
                f"| {name} | {_cell(b)} | {_cell(b, bf['floor_cpu'])} | {_cell(s)} | {_cell(s, fm['floor_cpu'])} "
                f"| {_cell(b, s) if s else '–'} |"
            )
        else:
            lines.append(f"| {name} | {s:.2f} | {s / total:.0%} | {s / fm['floor_cpu']:.2f} |")
    if bm is not None and bf is not None:
        btotal = sum(bm["steps"].values())
        lines += [
            f"| **per-unit total** | **{btotal:.2f}** | **{btotal / bf['floor_cpu']:.2f}** | **{total:.2f}** "
            f"| **{total / fm['floor_cpu']:.2f}** | **{btotal / total:.2f}** |",
            f"| (floor, decode s) | {bf['floor_cpu']:.2f} | 1.00 | {fm['floor_cpu']:.2f} | 1.00 | |",
        ]
    else:
        lines += [
            f"| **per-unit total** | **{total:.2f}** | 100% | **{total / fm['floor_cpu']:.2f}** |",
            f"| (floor, decode s) | {fm['floor_cpu']:.2f} | | 1.00 |",
        ]
    lines += cpu_table(m, fm, bm, bf)
    lines += scaling(args, reps)
    return "\n".join(lines) + "\n"


def cpu_table(
    m: dict[str, Any], fm: dict[str, Any], bm: dict[str, Any] | None, bf: dict[str, Any] | None
) -> list[str]:
    """Per-unit steps and driver phases in CPU seconds (robust to the machine's load), against the
    floor's CPU seconds; a before tree older than the CPU accounting has none ("–")."""
    cpu, phases = m.get("steps_cpu") or {}, m.get("phases_cpu") or {}
    if not cpu or not fm.get("floor_proc_cpu"):
        return []
    floor = fm["floor_proc_cpu"]
    before = bm is not None
    bcpu = (bm or {}).get("steps_cpu") or {}
    bphases = (bm or {}).get("phases_cpu") or {}
    bfloor = (bf or {}).get("floor_proc_cpu")

    def row(name: str, secs: float, b: float | None) -> str:
        cells = f"{secs:.2f} | {secs / floor:.2f}"
        return (
            f"| {name} | {_cell(b)} | {_cell(b, bfloor)} | {cells} |" if before else f"| {name} | {cells} |"
        )

    lines = [
        "",
        "### CPU seconds per step (median rep)",
        "",
        "CPU seconds of the worker processes per step of `process_unit`, summed over every unit, and "
        "of the driver per phase; × floor is against the floor's decode CPU seconds over the same units "
        "in the same rep" + (" (a before tree without CPU accounting shows –)." if before else "."),
        "",
        "| step | before CPU s | × floor | after CPU s | × floor |"
        if before
        else "| step | CPU s | × floor |",
        "|---|---:|---:|---:|---:|" if before else "|---|---:|---:|",
    ]
    for name, secs in sorted(cpu.items(), key=lambda kv: -kv[1]):
        lines.append(row(name, secs, bcpu.get(name)))
    lines.append(row("**per-unit total**", sum(cpu.values()), sum(bcpu.values()) if bcpu else None))
    lines += [row(f"driver: {p}", phases[p], bphases.get(p)) for p in ("dedup", "publish") if p in phases]
    lines.append(row("(floor, decode CPU s)", floor, bfloor))
    return lines


def _cell(x: float | None, per: float | None = None) -> str:
    if x is None:
        return "–"
    return f"{x / per:.2f}" if per is not None else f"{x:.2f}"


def scaling(args: argparse.Namespace, reps: list[dict[str, Any]]) -> list[str]:
    """The scaling series: per scale the median rep, then growth per rep as median (min–max)."""
    scales = list(reps[0]["scales"])
    if len(scales) < 2:
        return []
    lines = [
        "",
        "## Scaling",
        "",
        "Every scale is measured in every rep (interleaved with the runs above); the row shows the "
        "rep with the median time, the goals use the per-rep ratios.",
        "",
        "| scale | raw JSON | runs | pipeline s, median (min–max) | s per raw GB | peak RSS tree "
        "| peak RSS driver | peak RSS worker |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for s in scales:
        runs = [r["scales"][s] for r in reps]
        walls = [x["pipeline_wall"] for x in runs]
        x = runs[median_index(walls)]
        lines.append(
            f"| {float(s):g}× | {fmt_mb(x['stats_raw_bytes'])} | {x['ingested']:,} | {spread(walls, 1)} | "
            f"{x['pipeline_wall'] / (x['stats_raw_bytes'] / 1e9):.1f} | {fmt_mb(x['rss_tree_peak'])} | "
            f"{fmt_mb(x['maxrss_driver'])} | {fmt_mb(x['maxrss_worker'])} |"
        )
    lo, hi = scales[0], scales[-1]
    growth, mem = [], []
    for r in reps:
        a, b = r["scales"][lo], r["scales"][hi]
        size = b["stats_raw_bytes"] / a["stats_raw_bytes"]
        growth.append(b["pipeline_wall"] / (a["pipeline_wall"] * size))
        mem.append(b["rss_tree_peak"] / a["rss_tree_peak"])
    size = reps[0]["scales"][hi]["stats_raw_bytes"] / reps[0]["scales"][lo]["stats_raw_bytes"]
    lines += [
        "",
        f"Time vs linear from {float(lo):g}× to {float(hi):g}× ({size:.1f}× the input) = "
        f"pipeline seconds ÷ (the {float(lo):g}× seconds × raw-size ratio), per rep: **{spread(growth)}**; "
        f"goal within 1.15× of linear: **{'met' if median(growth) <= 1.15 else 'NOT met'}**. "
        f"Peak RSS of the process tree grew **{spread(mem)}×** "
        f"(goal ≤ 1.3× from 1× to 8×: **{'met' if median(mem) <= 1.3 else 'NOT met'}** over this "
        f"{size:.1f}× range; `bench/memory.py` measures the 1×→8× series).",
        "",
        "Peak RSS tree = largest sampled sum over the driver and all its worker processes "
        "(/proc every 0.2 s), so a lower bound that can miss a short spike; driver and worker = "
        "`getrusage` maxima (exact).",
    ]
    return lines


# -- driver ------------------------------------------------------------------------------------


def main(argv: list[str]) -> None:
    if argv[:1] == ["--_measure"]:
        kind, corpus, workdir, workers, executor, tree = argv[1:7]
        use_tree(Path(tree))
        res = MEASURES[kind](Path(corpus), Path(workdir), int(workers), executor)
        sys.stdout.write(orjson.dumps(res).decode() + "\n")
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size-gb", type=float, default=1.0, help="raw JSON of the headline corpus")
    ap.add_argument("--scales", default="1,2,4", help="multiples of --scale-base-gb ('' to skip)")
    ap.add_argument(
        "--scale-base-gb", type=float, default=None, help="base of the scaling series (default: --size-gb)"
    )
    ap.add_argument("--reps", type=int, default=3, help="interleaved reps (ratios: median (min–max))")
    ap.add_argument("--before", default=None, metavar="REV", help="also measure git revision REV")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--executor", default="local", choices=["local", "ray"])
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "out")
    ap.add_argument("--results", type=Path, default=ROOT / "bench" / "results" / "e2e.md")
    args = ap.parse_args(argv)
    if args.reps < 1:
        ap.error("--reps must be at least 1")
    command = "python bench/e2e.py " + " ".join(argv) if argv else "python bench/e2e.py"
    args.out.mkdir(parents=True, exist_ok=True)

    # every corpus first (generation is not interleaved with the measurements)
    head, info = ensure_corpus(args.out, args.size_gb * 1e9, args.epochs, args.seed)
    base_gb = args.scale_base_gb or args.size_gb
    series: dict[str, Path] = {}
    for s in [float(x) for x in args.scales.split(",") if x.strip()]:
        series[f"{s:g}"] = (
            head
            if math.isclose(base_gb * s, args.size_gb)
            else ensure_corpus(args.out, base_gb * s * 1e9, args.epochs, args.seed)[0]
        )
    trees = {"after": ROOT}
    if args.before is not None:
        trees["before"], args.before_sha = export_tree(args.before, args.out)
    work = args.out / "work"
    # which code runs (driver and pool workers), then one untimed run per tree on the small
    # calibration corpus: numba's on-disk caches and the OS's file caches are warm for every rep
    calib = args.out / f"calib-e{args.epochs}-s{args.seed}"
    synth_corpus(calib, 60, args.epochs, args.seed)
    for tree in trees.values():
        check_children(tree, head, args)
        run_child("pipeline", calib, work, args.workers, args.executor, tree)

    def say(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    say(f"measuring {head.name}: {info['raw_bytes'] / MB:,.0f} MB raw, {args.reps} reps")
    reps: list[dict[str, Any]] = []
    args.results.parent.mkdir(parents=True, exist_ok=True)

    def save() -> None:
        raw = {
            "command": command,
            "corpus": info,
            "before": getattr(args, "before_sha", None),
            "reps": reps,
        }
        args.results.with_suffix(".json").write_bytes(orjson.dumps(raw, option=orjson.OPT_INDENT_2))

    for i in range(args.reps):
        rep: dict[str, Any] = {"load": [os.getloadavg()[0]]}
        # the floor sits between the two pipelines; before and after swap places every rep
        order = ["after", "floor", "before"] if i % 2 == 0 else ["before", "floor", "after"]
        if i == 0:  # the one-off cost the reps do not pay, paired with the run it is compared to
            order.insert(order.index("after"), "cold")
        for what in order:
            if what == "floor":
                rep["floor"] = run_child("floor", head, work, args.workers, args.executor)
            elif what == "cold":  # building the reference cache for tables a run has not seen
                cold = args.out / "reference-cache-cold"
                shutil.rmtree(cold, ignore_errors=True)
                rep["cold"] = run_child("pipeline", head, work, args.workers, args.executor, cache=cold)
                shutil.rmtree(cold, ignore_errors=True)
            elif what in trees:
                rep[what] = run_child("pipeline", head, work, args.workers, args.executor, trees[what])
        rep["scales"] = {
            s: rep["after"]
            if corpus == head
            else run_child("pipeline", corpus, work, args.workers, args.executor)
            for s, corpus in series.items()
        }
        rep["load"].append(os.getloadavg()[0])
        reps.append(rep)
        save()  # after every rep: an interrupted run keeps what it measured
        msg = (
            f"  rep {i + 1}: pipeline {rep['after']['pipeline_wall']:.1f}s, floor {rep['floor']['floor_wall']:.1f}s "
            f"({rep['after']['pipeline_wall'] / rep['floor']['floor_wall']:.2f}×)"
        )
        if "before" in rep:
            msg += f", before {rep['before']['pipeline_wall']:.1f}s"
        say(msg + f", load {rep['load'][0]:.1f} → {rep['load'][1]:.1f}")
    text = report(args, info, reps, command)
    sys.stdout.write(text)
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(text)
    save()


if __name__ == "__main__":
    main(sys.argv[1:])
