"""Peers benchmark: trajpipe's dedup step against datatrove's MinHash stages on the same runs.

    .venv/bin/python bench/peers.py [--runs 2000] [--reps 3] [--seed 0]

datatrove is an optional dependency: the bench installs it (with the spaCy word tokenizer and
xxhash its MinHash stages need) into its own venv, bench/out/peers-venv (git-ignored), once. If it
cannot be installed, the bench prints one line saying so and exits 0.

1. Builds ``--runs`` synthetic runs with bench/dedup.py's generator (realistic command lists over
   400 synthetic repos) and its planted pairs: near-duplicates (a copy with a few commands edited,
   true Jaccard >= 0.9: should merge) and distinct pairs on the same repo and task (a shared
   prefix of commands, then different edits, true Jaccard <= 0.5: should not merge).
2. Exports the runs as datatrove Documents (JSONL, one file per task, ``id`` = the run's uid) in two
   texts: ``messages`` (every message's content: what a user would export) and ``actions`` (the
   normalised action stream trajpipe itself shingles, so the two tools see the same words).
3. Runs, interleaved rep by rep (each datatrove run in a fresh child process of the peers venv):
   - trajpipe's dedup step on the runs' messages: ``add_dedup_keys`` (commands from the messages,
     masks, 5-word shingles, 128-slot MinHash) + ``traj_dedup`` (16 bands x 8 rows LSH, verify at
     J >= 0.8, union-find, representatives), in this process (2 threads);
   - datatrove's four MinHash stages, ``MinhashConfig(num_buckets=16, hashes_per_bucket=8,
     n_grams=5)``, with ``LocalPipelineExecutor`` (2 workers): signatures, buckets, clusters, filter.
4. Counts, per tool, merged planted near pairs (recall), merged planted distinct pairs (false
   merges) and drops outside the planted near pairs; prints a markdown table and writes it to
   bench/results/peers.md with the command.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "out"
VENV = OUT / "peers-venv"
# datatrove's MinHash stages tokenise English with spaCy, normalise text with regex and hash with
# xxhash (all optional extras of datatrove; `datatrove.pipeline.dedup` also imports tokenizers);
# orjson reads and writes its JSONL.
REQUIREMENTS = ["datatrove==0.10.1", "spacy>=3.8,<4", "regex", "xxhash<4", "tokenizers", "orjson"]
# what the stages import, checked once after the install
IMPORT_CHECK = (
    "import datatrove.pipeline.dedup, datatrove.executor, datatrove.pipeline.readers, xxhash, orjson;"
    "from datatrove.utils.word_tokenizers import load_word_tokenizer;"
    "load_word_tokenizer('eng').word_tokenize('a b')"
)
BANDS, ROWS, SHINGLE = 16, 8, 5


# -- the datatrove side (runs inside the peers venv: no polars, no trajpipe) ------------------------


def datatrove_run(inp: Path, work: Path, tasks: int, workers: int) -> dict[str, Any]:
    """datatrove's four MinHash stages over the JSONL documents in ``inp``: seconds per stage, the
    cluster id of every document in a cluster and the ids of the removed ones."""
    from datatrove.executor import LocalPipelineExecutor
    from datatrove.pipeline.dedup import (
        MinhashDedupBuckets,
        MinhashDedupCluster,
        MinhashDedupFilter,
        MinhashDedupSignature,
    )
    from datatrove.pipeline.dedup.minhash import MinhashConfig
    from datatrove.pipeline.readers import JsonlReader
    from datatrove.pipeline.writers import JsonlWriter

    config = MinhashConfig(num_buckets=BANDS, hashes_per_bucket=ROWS, n_grams=SHINGLE)
    shutil.rmtree(work, ignore_errors=True)
    seconds: dict[str, float] = {}

    def reader() -> JsonlReader:
        return JsonlReader(str(inp), compression=None, glob_pattern="*.jsonl")

    def stage(name: str, pipeline: list[Any], n_tasks: int) -> None:
        t0 = time.perf_counter()
        LocalPipelineExecutor(
            pipeline=pipeline,
            tasks=n_tasks,
            workers=min(workers, n_tasks),
            logging_dir=str(work / "logs" / name),
        ).run()
        seconds[name] = time.perf_counter() - t0

    stage(
        "signatures",
        [reader(), MinhashDedupSignature(output_folder=str(work / "sigs"), config=config)],
        tasks,
    )
    stage(
        "buckets",
        [
            MinhashDedupBuckets(
                input_folder=str(work / "sigs"), output_folder=str(work / "buckets"), config=config
            )
        ],
        config.num_buckets,
    )
    stage(
        "clusters",
        [
            MinhashDedupCluster(
                input_folder=str(work / "buckets"),
                output_folder=str(work / "remove"),
                config=config,
                save_cluster_id=True,
            )
        ],
        1,
    )
    stage(
        "filter",
        [
            reader(),
            MinhashDedupFilter(
                input_folder=str(work / "remove"),
                exclusion_writer=JsonlWriter(str(work / "removed"), compression=None),
                load_cluster_ids=True,
            ),
            JsonlWriter(str(work / "kept"), compression=None),
        ],
        tasks,
    )
    from importlib.metadata import version

    cluster, removed = read_clusters(inp, work, tasks)
    return {"seconds": seconds, "cluster": cluster, "removed": removed, "version": version("datatrove")}


def read_clusters(inp: Path, work: Path, tasks: int) -> tuple[dict[str, int], list[str]]:
    """The cluster id of every document in a cluster and the ids of the removed documents."""
    import orjson

    # From the cluster stage's own files: (doc index, cluster id) per rank. The filter's
    # `minhash_cluster_id` metadata is not used: a rank without a .remove file skips loading it.
    # One input file per task, so rank r read the r-th file (the reader's files are sorted).
    files = sorted(inp.glob("*.jsonl"))
    assert len(files) == tasks, "one input file per task"
    cluster: dict[str, int] = {}
    removed: list[str] = []
    for rank, path in enumerate(files):
        ids = [orjson.loads(line)["id"] for line in path.read_bytes().splitlines() if line]
        for name, width in ((f"{rank:06d}.clusters", 2), (f"{rank:06d}.remove", 1)):
            raw = (work / "remove" / name).read_bytes() if (work / "remove" / name).exists() else b""
            vals = struct.unpack(f"<{len(raw) // 4}I", raw)
            if width == 2:
                cluster.update((ids[d], c) for d, c in zip(vals[::2], vals[1::2], strict=True))
            else:
                removed += [ids[d] for d in vals]
    written = sum(len(p.read_bytes().splitlines()) for p in (work / "removed").glob("*.jsonl"))
    assert written == len(removed), f"filter removed {written} documents, the cluster stage {len(removed)}"
    return cluster, removed


# -- the peers venv --------------------------------------------------------------------------------


def peers_python() -> Path | None:
    """The peers venv's interpreter, created and filled on first use; None (with one line on
    stderr) when datatrove cannot be installed."""
    python = VENV / "bin" / "python"
    stamp = VENV / "requirements.txt"
    if python.exists() and stamp.exists() and stamp.read_text().split() == REQUIREMENTS:
        return python
    shutil.rmtree(VENV, ignore_errors=True)
    print(f"peers: installing {' '.join(REQUIREMENTS)} into {VENV} (once) ...", file=sys.stderr, flush=True)
    steps = [
        [sys.executable, "-m", "venv", str(VENV)],
        [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", *REQUIREMENTS],
        [str(python), "-c", IMPORT_CHECK],
    ]
    for cmd in steps:
        try:
            proc = subprocess.run(cmd, check=False, capture_output=True, text=True)
        except OSError as exc:
            proc = subprocess.CompletedProcess(cmd, 1, "", str(exc))
        if proc.returncode != 0:
            errors = [
                ln for ln in proc.stderr.splitlines() if ln.startswith("ERROR")
            ] or proc.stderr.splitlines()
            why = errors[-1].strip() if errors else f"exit status {proc.returncode}"
            print(f"peers: skipped, datatrove could not be installed into {VENV}: {why}")
            shutil.rmtree(VENV, ignore_errors=True)
            return None
    stamp.write_text("\n".join(REQUIREMENTS) + "\n")
    return python


def run_datatrove(python: Path, inp: Path, work: Path, tasks: int, workers: int) -> dict[str, Any]:
    """``datatrove_run`` in a fresh interpreter of the peers venv; its wall time included."""
    t0 = time.perf_counter()
    proc = subprocess.run(
        [str(python), __file__, "--_datatrove", str(inp), str(work), str(tasks), str(workers)],
        check=False,
        capture_output=True,
    )
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"peers: the datatrove run failed:\n{proc.stderr.decode()[-3000:]}")
    import orjson

    res: dict[str, Any] = orjson.loads(proc.stdout.strip().splitlines()[-1])
    res["wall"] = wall
    return res


# -- the trajpipe side and the planted pairs -------------------------------------------------------


def export(frame: Any, out: Path, tasks: int) -> dict[str, Path]:
    """The runs as datatrove JSONL documents, ``tasks`` files per text kind: {kind: folder}."""
    import orjson
    import polars as pl

    from pipeline.dedup.keys import action_stream, commands_from_messages

    texts = frame.select(
        "source_uid",
        pl.col("messages")
        .list.eval(pl.element().struct.field("content").fill_null(""))
        .list.join("\n")
        .alias("messages"),
        action_stream(commands_from_messages(pl.col("messages"))).alias("actions"),
    )
    folders = {}
    for kind in ("messages", "actions"):
        folder = out / kind
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        step = -(-texts.height // tasks)
        for t in range(tasks):
            part = texts.slice(t * step, step)
            lines = [
                orjson.dumps({"id": u, "text": x}) for u, x in part.select("source_uid", kind).iter_rows()
            ]
            (folder / f"{t:05d}.jsonl").write_bytes(b"\n".join(lines) + b"\n")
        folders[kind] = folder
    return folders


def trajpipe_run(frame: Any) -> dict[str, Any]:
    """trajpipe's dedup step on the runs' messages: seconds, and every dropped run's kept run."""
    from pipeline.core.config import DedupParams
    from pipeline.dedup.keys import add_dedup_keys
    from pipeline.stages.traj_dedup import traj_dedup

    params = DedupParams(bands=BANDS, rows=ROWS, shingle=SHINGLE)
    t0 = time.perf_counter()
    keyed = add_dedup_keys(frame, params)
    t1 = time.perf_counter()
    out = traj_dedup(keyed, keyed.head(0).select("source_uid", "exact_hash", "minhash"), params)
    t2 = time.perf_counter()
    kept_by = {
        uid: detail.split(" ")[0].removeprefix("kept=")
        for uid, detail in out.dropped.select("source_uid", "detail").iter_rows()
    }
    return {
        "seconds": {"dedup keys": t1 - t0, "LSH + verify + clusters": t2 - t1},
        "wall": t2 - t0,
        "kept_by": kept_by,
    }


def merges(
    group: dict[str, Any], dropped: list[str], near: list[tuple[str, str]], distinct: list[tuple[str, str]]
) -> dict[str, float]:
    """Merged near pairs, merged distinct pairs and drops outside the planted near pairs, given
    each clustered document's group (documents missing from ``group`` are alone)."""

    def same(a: str, b: str) -> bool:
        return a in group and group.get(a) == group.get(b)

    partner: dict[str, set[str]] = {}
    for a, b in near:
        partner.setdefault(a, set()).add(b)
        partner.setdefault(b, set()).add(a)
    return {
        "recall": sum(same(a, b) for a, b in near) / max(len(near), 1),
        "false": sum(same(a, b) for a, b in distinct),
        "false_rate": sum(same(a, b) for a, b in distinct) / max(len(distinct), 1),
        "dropped": len(dropped),
        "unexpected": sum(1 for u in dropped if not any(same(u, p) for p in partner.get(u, ()))),
    }


def trajpipe_groups(kept_by: dict[str, str]) -> dict[str, str]:
    """Group of every run in a cluster: its kept run (the representative keeps itself)."""
    return {**kept_by, **{rep: rep for rep in kept_by.values()}}


# -- report ------------------------------------------------------------------------------------------


def spread(xs: list[float], fmt: str = ",.0f") -> str:
    return f"{statistics.median(xs):{fmt}} ({min(xs):{fmt}}–{max(xs):{fmt}})"


def main(argv: list[str]) -> None:
    if argv[:1] == ["--_datatrove"]:
        import orjson

        inp, work, tasks, workers = argv[1:5]
        res = datatrove_run(Path(inp), Path(work), int(tasks), int(workers))
        sys.stdout.write(orjson.dumps(res).decode() + "\n")
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=2_000, help="runs (datatrove takes ~20-60 ms per run here)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--reps", type=int, default=3, help="interleaved reps (median (min–max))")
    ap.add_argument("--workers", type=int, default=2, help="datatrove workers (trajpipe: threads)")
    ap.add_argument("--results", type=Path, default=ROOT / "bench" / "results" / "peers.md")
    args = ap.parse_args(argv)
    command = "python bench/peers.py " + " ".join(argv) if argv else "python bench/peers.py"
    python = peers_python()
    if python is None:
        return

    import numpy as np
    from dedup import synth, true_jaccard  # bench/ is on sys.path when run as a script

    from pipeline.core.config import DedupParams

    load_start = os.getloadavg()[0]
    frame, near, distinct = synth(args.runs, args.seed)
    jn = true_jaccard(frame, near, SHINGLE)
    jd = true_jaccard(frame, distinct, SHINGLE)
    near = [p for p, j in zip(near, jn, strict=True) if j >= 0.9]
    distinct = [p for p, j in zip(distinct, jd, strict=True) if j <= 0.5]
    frame = frame.drop("commands")  # the exported runs: trajpipe reads the commands from the messages
    work = OUT / "peers"
    folders = export(frame, work / "input", args.workers)
    n = frame.height
    trajpipe_run(frame.head(200))  # numba kernels loaded, thread pools started: not timed

    reps: list[dict[str, Any]] = []
    for i in range(args.reps):
        rep: dict[str, Any] = {"load": [os.getloadavg()[0]]}
        rep["trajpipe"] = trajpipe_run(frame)
        for kind, folder in folders.items():
            rep[kind] = run_datatrove(python, folder, work / f"dt-{kind}", args.workers, args.workers)
        rep["load"].append(os.getloadavg()[0])
        reps.append(rep)
        print(
            f"rep {i + 1}: trajpipe {rep['trajpipe']['wall']:.2f}s, datatrove messages "
            f"{rep['messages']['wall']:.1f}s, actions {rep['actions']['wall']:.1f}s",
            file=sys.stderr,
            flush=True,
        )

    last = reps[-1]
    quality = {
        "trajpipe": merges(
            trajpipe_groups(last["trajpipe"]["kept_by"]), list(last["trajpipe"]["kept_by"]), near, distinct
        ),
        **{k: merges(last[k]["cluster"], last[k]["removed"], near, distinct) for k in folders},
    }
    version = last["messages"]["version"]
    tp = [n / r["trajpipe"]["wall"] for r in reps]
    rows = [
        "| tool (input text) | docs/s, median (min–max) | docs/s without the filter stage | "
        "trajpipe ÷ it, per rep | near pairs merged (recall) | distinct pairs merged (false merges) "
        "| drops outside planted near pairs |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    q = quality["trajpipe"]
    rows.append(
        f"| trajpipe `add_dedup_keys` + `traj_dedup` (messages) | {spread(tp)} | – | 1 | "
        f"{100 * q['recall']:.2f}% | {q['false']} ({100 * q['false_rate']:.2f}%) | {q['unexpected']} |"
    )
    for kind in folders:
        dt = [n / r[kind]["wall"] for r in reps]
        core = [n / (r[kind]["wall"] - r[kind]["seconds"]["filter"]) for r in reps]
        speed = [r[kind]["wall"] / r["trajpipe"]["wall"] for r in reps]
        q = quality[kind]
        rows.append(
            f"| datatrove {version} MinHash stages ({kind}) | {spread(dt)} | {spread(core)} | "
            f"{spread(speed, '.1f')}× | {100 * q['recall']:.2f}% | {q['false']} ({100 * q['false_rate']:.2f}%) "
            f"| {q['unexpected']} |"
        )
    stage_rows = ["| stage | " + " | ".join(folders) + " |", "|---|" + "---:|" * len(folders)]
    stages = list(last["messages"]["seconds"])
    for s in stages:
        cells = [spread([r[k]["seconds"][s] for r in reps], ".2f") for k in folders]
        stage_rows.append(f"| {s} | " + " | ".join(cells) + " |")
    cells = [spread([r[k]["wall"] - sum(r[k]["seconds"].values()) for r in reps], ".2f") for k in folders]
    stage_rows.append("| interpreter start-up + imports + result read-back | " + " | ".join(cells) + " |")
    tp_stage = "; ".join(
        f"{s} {spread([r['trajpipe']['seconds'][s] for r in reps], '.2f')} s"
        for s in reps[0]["trajpipe"]["seconds"]
    )
    params = DedupParams(bands=BANDS, rows=ROWS, shingle=SHINGLE)
    text = "\n".join(
        [
            "# Peers: trajpipe's dedup step vs datatrove's MinHash stages",
            "",
            f"Command: `{command}`",
            "",
            f"{platform.machine()}, {os.cpu_count()} cores shared with other jobs (1-min load average "
            f"{load_start:.1f} at start, per rep "
            + ", ".join(f"{r['load'][0]:.1f} → {r['load'][1]:.1f}" for r in reps)
            + f"). {n:,} synthetic runs from bench/dedup.py's generator, {len(near):,} planted near-duplicate "
            f"pairs (true Jaccard of the action shingles ≥ 0.9, min {np.min(jn):.3f}: should merge) and "
            f"{len(distinct):,} planted distinct pairs on the same repo and task (shared first commands, "
            f"then different edits; true Jaccard ≤ 0.5, max {np.max(jd):.3f}: should not merge).",
            "",
            f"Same parameters on both sides: {BANDS} bands × {ROWS} rows, {SHINGLE}-word shingles "
            f"(trajpipe: `DedupParams(bands={BANDS}, rows={ROWS}, shingle={SHINGLE})`, {params.num_perm} "
            f"permutations, verify at J ≥ {params.threshold}; datatrove: `MinhashConfig(num_buckets={BANDS}, "
            f"hashes_per_bucket={ROWS}, n_grams={SHINGLE})`, 64-bit xxhash, spaCy English words). "
            f"{args.reps} reps, interleaved (trajpipe, datatrove on messages, datatrove on actions); "
            "speeds are median (min–max) over the reps, the ratio is taken within each rep.",
            "",
            "Inputs: trajpipe reads the runs' messages (a frame in memory; the commands come out of the "
            "```bash fences) and uses 2 threads. datatrove reads the same runs exported as JSONL "
            f"Documents in {args.workers} files and runs `LocalPipelineExecutor` with {args.workers} workers "
            "(buckets: 16 tasks, clusters: 1); its time is the child process's wall time, start-up included. "
            "*messages* = every message's content joined (system prompt, task, thoughts, commands, "
            "outputs); *actions* = the normalised command stream trajpipe itself shingles, so both tools "
            "see the same words.",
            "",
            *rows,
            "",
            f"trajpipe step: {tp_stage} (median (min–max)). datatrove seconds per stage:",
            "",
            *stage_rows,
            "",
            "A pair counts as merged when both runs end in the same cluster (trajpipe: the same kept "
            "run; datatrove: the same `minhash_cluster_id`). trajpipe verifies every LSH candidate pair "
            "on its signature estimate (J ≥ 0.8) before joining it; datatrove joins every pair that "
            "shares one bucket.",
        ]
    )
    print(text)
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(text + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
