"""Dedup benchmark on a synthetic corpus (issue 4, "Must show").

    .venv/bin/python bench/dedup.py [--runs 20000] [--seed 0]

Builds ``--runs`` synthetic runs (realistic command lists: grep/sed/cat/pytest/git and python
heredoc edits over a per-repo vocabulary), with planted near-duplicate pairs (a copy with a few
commands edited, true Jaccard >= 0.9) and distinct pairs on the same task (a shared prefix of
commands, true Jaccard <= 0.5), then measures in one process:

1. signature throughput of ``pipeline.dedup.minhash.signatures`` against
   ``datasketch.MinHash.update_batch`` on the same 32-bit shingle hashes (bit-identical output);
2. the whole dedup step (``add_dedup_keys`` + ``traj_dedup``) in runs/s;
3. recall on planted near-duplicates and false merges on planted distinct pairs.

Prints a markdown table and writes it to ``bench/results/dedup.md``.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl
from datasketch import MinHash

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pipeline.config import DedupParams  # noqa: E402
from pipeline.dedup.keys import action_stream, add_dedup_keys, shingle_hashes  # noqa: E402
from pipeline.dedup.minhash import signatures  # noqa: E402
from pipeline.stages.traj_dedup import traj_dedup  # noqa: E402

SYSTEM = "You are a helpful assistant that can interact multiple times with a computer shell to solve programming tasks."
VERBS = ["parse", "load", "render", "visit", "merge", "split", "flush", "resolve", "build", "check", "encode",
         "decode", "format", "validate", "collect", "apply", "emit", "read", "write", "scan"]
NOUNS = ["node", "token", "frame", "row", "item", "config", "header", "path", "query", "field", "schema",
         "record", "block", "value", "index", "cache", "session", "request", "span", "unit"]


class Repo:
    """A synthetic repository: its files and the identifiers its code uses."""

    def __init__(self, rng: random.Random, k: int) -> None:
        pkg = f"pkg{k}"
        self.files = [f"src/{pkg}/{rng.choice(NOUNS)}_{rng.choice(VERBS)}{j}.py" for j in range(rng.randint(6, 14))]
        self.names = [f"{rng.choice(VERBS)}_{rng.choice(NOUNS)}{rng.choice(['', 's', '_all', '_one'])}"
                      for _ in range(rng.randint(20, 40))]
        self.tests = [f"tests/test_{rng.choice(NOUNS)}_{j}.py" for j in range(rng.randint(3, 8))]


def command(rng: random.Random, repo: Repo) -> str:
    f, name = rng.choice(repo.files), rng.choice(repo.names)
    kind = rng.random()
    if kind < 0.18:
        return f"grep -rn \"{name}\" src/ --include=*.py | head -{rng.choice([20, 50])}"
    if kind < 0.36:
        a = rng.randrange(1, 400)
        return f"sed -n '{a},{a + rng.randrange(20, 120)}p' /testbed/{f}"
    if kind < 0.46:
        return f"cat /testbed/{f}"
    if kind < 0.72:
        old, new, other = rng.choice(repo.names), rng.choice(repo.names), rng.choice(repo.names)
        return ("python3 - <<'PY'\nfrom pathlib import Path\n"
                f"p = Path('/testbed/{f}')\ns = p.read_text()\n"
                f"old = '''    result = {old}(value, {other}=None)\n    return result'''\n"
                f"new = '''    result = {new}(value, {other}={rng.choice(['True', 'False', 'None'])})\n"
                f"    if result is None:\n        raise ValueError(\"{name} failed\")\n    return result'''\n"
                "assert s.count(old) == 1, 'old text not found'\np.write_text(s.replace(old, new))\n"
                "print('edited')\nPY")
    if kind < 0.88:
        return f"cd /testbed && python -m pytest {rng.choice(repo.tests)} -x -q -k {rng.choice(repo.names)}"
    if kind < 0.94:
        return f"git diff -- {f}"
    return (f"python3 -c \"from {f[4:-3].replace('/', '.')} import {name}; print({name}("
            f"{rng.randrange(100)}))\"")


def mutate(rng: random.Random, cmds: list[str], repo: Repo, n_edits: int) -> list[str]:
    """A near copy: ``n_edits`` commands get one identifier or flag changed."""
    out = list(cmds)
    for i in rng.sample(range(len(out)), min(n_edits, len(out))):
        c = out[i]
        victim = next((nm for nm in repo.names if nm in c), None)
        out[i] = c.replace(victim, rng.choice(repo.names), 1) if victim else c + " -v"
    return out


def synth(n_runs: int, seed: int) -> tuple[pl.DataFrame, list[tuple[str, str]], list[tuple[str, str]]]:
    rng = random.Random(seed)
    repos = [Repo(rng, k) for k in range(400)]
    n_near = n_runs // 20
    n_distinct = n_runs // 20
    n_base = n_runs - n_near - n_distinct
    uids, cmds_all, epochs, resolved, tasks = [], [], [], [], []
    runs_of: list[tuple[Repo, list[str], str]] = []
    for i in range(n_base):
        repo = rng.choice(repos)
        cmds = [command(rng, repo) for _ in range(rng.randint(12, 45))]
        task = f"task{i % 5000}"
        uids.append(f"base/{i:06d}")
        cmds_all.append(cmds)
        epochs.append(rng.randint(80, 84))
        resolved.append(rng.choice(["resolved", "not resolved", "unknown"]))
        tasks.append(task)
        runs_of.append((repo, cmds, task))
    near_pairs, distinct_pairs = [], []
    for j, i in enumerate(rng.sample(range(n_base), n_near)):
        repo, cmds, task = runs_of[i]
        uids.append(f"near/{j:06d}")
        cmds_all.append(mutate(rng, cmds, repo, max(1, len(cmds) // 40)))
        epochs.append(85)
        resolved.append("resolved")
        tasks.append(task)
        near_pairs.append((uids[i], uids[-1]))
    for j, i in enumerate(rng.sample(range(n_base), n_distinct)):
        repo, cmds, task = runs_of[i]
        shared = cmds[: max(1, int(len(cmds) * rng.uniform(0.1, 0.35)))]
        uids.append(f"dist/{j:06d}")
        cmds_all.append(shared + [command(rng, repo) for _ in range(len(cmds) - len(shared))])
        epochs.append(85)
        resolved.append("resolved")
        tasks.append(task)
        distinct_pairs.append((uids[i], uids[-1]))
    frame = pl.DataFrame({
        "source_uid": uids, "epoch": pl.Series(epochs, dtype=pl.Int32), "dataset": "mini-coder-affine-bash",
        "resolved": resolved, "instance_id": tasks, "commands": cmds_all,
    })
    # Messages rendered like the pipeline's: system, task, then one assistant turn + observation per command.
    turn = pl.struct(role=pl.lit("assistant"), content=pl.concat_str(
        [pl.lit("THOUGHT: next step.\n\n```bash\n"), pl.element(), pl.lit("\n```")]))
    obs = pl.struct(role=pl.lit("user"), content=pl.lit("<returncode>0</returncode>\n<output>\n</output>"))
    frame = frame.with_columns(
        pl.concat_list(
            pl.concat_list(pl.struct(role=pl.lit("system"), content=pl.lit(SYSTEM)),
                           pl.struct(role=pl.lit("user"), content=pl.concat_str([pl.lit("Solve "), "instance_id"]))),
            pl.col("commands").list.eval(pl.concat_list(turn, obs)).list.eval(pl.element().explode()),
        ).alias("messages"))
    return frame, near_pairs, distinct_pairs


def true_jaccard(frame: pl.DataFrame, pairs: list[tuple[str, str]], shingle: int) -> np.ndarray:
    pos = {u: i for i, u in enumerate(frame["source_uid"].to_list())}
    idx = sorted({pos[u] for p in pairs for u in p})
    sub = frame[idx]
    streams = sub.select(action_stream(pl.col("commands"))).to_series()
    h, off = shingle_hashes(streams, shingle)
    local = {frame["source_uid"][i]: k for k, i in enumerate(idx)}
    sets = [np.unique(h[off[k]:off[k + 1]]) for k in range(len(idx))]
    out = []
    for a, b in pairs:
        sa, sb = sets[local[a]], sets[local[b]]
        inter = np.intersect1d(sa, sb, assume_unique=True).size
        out.append(inter / (sa.size + sb.size - inter))
    return np.array(out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=20_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--datasketch-docs", type=int, default=2_000)
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "dedup.md")
    args = ap.parse_args()
    params = DedupParams()

    t0 = time.perf_counter()
    frame, near_pairs, distinct_pairs = synth(args.runs, args.seed)
    gen_s = time.perf_counter() - t0
    jn = true_jaccard(frame, near_pairs, params.shingle)
    jd = true_jaccard(frame, distinct_pairs, params.shingle)
    near_pairs = [p for p, j in zip(near_pairs, jn, strict=True) if j >= 0.9]
    distinct_pairs = [p for p, j in zip(distinct_pairs, jd, strict=True) if j <= 0.5]

    # 1. signatures: ours vs datasketch.update_batch on the same shingle hashes.
    streams = frame.select(action_stream(pl.col("commands"))).to_series()
    hashes, offsets = shingle_hashes(streams, params.shingle)
    k = min(args.datasketch_docs, frame.height)
    sub_off = offsets[: k + 1]
    sub_h = hashes[: sub_off[-1]]
    t = time.perf_counter()
    ours_sub = signatures(sub_h, sub_off, params.num_perm, params.seed)
    ours_sub_s = time.perf_counter() - t
    docs = [sub_h[sub_off[i]:sub_off[i + 1]].tolist() for i in range(k)]
    sketches = [MinHash(num_perm=params.num_perm, seed=params.seed, hashfunc=int) for _ in range(k)]
    t = time.perf_counter()
    for m, d in zip(sketches, docs, strict=True):
        m.update_batch(d)
    ds_s = time.perf_counter() - t
    identical = all(np.array_equal(m.hashvalues, ours_sub[i]) for i, m in enumerate(sketches))
    t = time.perf_counter()
    signatures(hashes, offsets, params.num_perm, params.seed)
    ours_full_s = time.perf_counter() - t

    # 2. the whole dedup step.
    t = time.perf_counter()
    keyed = add_dedup_keys(frame, params)
    keys_s = time.perf_counter() - t
    t = time.perf_counter()
    out = traj_dedup(keyed, keyed.head(0).select("source_uid", "exact_hash", "minhash"), params)
    cluster_s = time.perf_counter() - t
    total_s = keys_s + cluster_s

    # 3. quality: a pair is merged when both runs end up represented by the same kept run.
    final = {u: u for u in frame["source_uid"].to_list()}
    for uid, detail in out.dropped.select("source_uid", "detail").iter_rows():
        final[uid] = detail.split(" ")[0].removeprefix("kept=")
    recall = np.mean([final[a] == final[b] for a, b in near_pairs]) if near_pairs else float("nan")
    false_merges = np.mean([final[a] == final[b] for a, b in distinct_pairs]) if distinct_pairs else float("nan")
    planted = {frozenset(p) for p in near_pairs}
    unexpected = sum(1 for u in out.dropped["source_uid"].to_list() if frozenset((u, final[u])) not in planted)
    mean_shingles = float(np.diff(offsets).mean())
    mb = streams.str.len_bytes().sum() / 1e6

    rows = [
        ("runs (synthetic, planted pairs included)", f"{frame.height:,}", ""),
        ("mean action stream / shingles per run", f"{mb * 1e6 / frame.height:,.0f} B / {mean_shingles:,.0f}", ""),
        (f"signatures, ours ({k:,} runs)", f"{k / ours_sub_s:,.0f} runs/s", ""),
        (f"signatures, datasketch `update_batch` ({k:,} runs, same hashes)", f"{k / ds_s:,.0f} runs/s",
         "identity hashfunc; MinHash objects built outside the timer"),
        ("signature speed-up, ours / datasketch", f"{ds_s / ours_sub_s:,.1f}x", "goal >= 20x"),
        ("bit-identical to datasketch", str(identical), ""),
        (f"signatures, ours (all {frame.height:,} runs)", f"{frame.height / ours_full_s:,.0f} runs/s", ""),
        ("dedup keys (exact hash + normalise + tokenise + MinHash)", f"{keys_s:.2f} s", ""),
        ("LSH 16x8 + verify + union-find + representatives", f"{cluster_s:.2f} s", ""),
        ("whole dedup step", f"{frame.height / total_s:,.0f} runs/s", "goal >= 5,000 runs/s"),
        (f"recall, planted near-dups J >= 0.9 ({len(near_pairs):,} pairs, min J {jn.min():.3f})",
         f"{100 * recall:.2f}%", "goal >= 99%"),
        (f"false merges, planted distinct pairs J <= 0.5 ({len(distinct_pairs):,} pairs, max J {jd.max():.3f})",
         f"{100 * false_merges:.2f}%", "goal <= 0.1%"),
        ("drops outside the planted near-dup pairs", f"{unexpected:,}",
         "no-op mutations (exact copies) and planted pairs below J 0.9 are counted here"),
        ("drops", ", ".join(f"{k_}={v}" for k_, v in sorted(out.counters.items())), ""),
    ]
    table = ["| measure | value | note |", "|---|---|---|", *(f"| {a} | {b} | {c} |" for a, b, c in rows)]
    header = (f"# Dedup benchmark\n\n`.venv/bin/python bench/dedup.py --runs {args.runs} --seed {args.seed}` "
              f"on {platform.processor() or platform.machine()}, {os.cpu_count()} cores (shared), "
              f"polars {pl.__version__}, numpy {np.__version__}; corpus generated in {gen_s:.1f} s (not timed).\n")
    text = header + "\n" + "\n".join(table) + "\n"
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)


if __name__ == "__main__":
    main()
