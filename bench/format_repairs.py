"""Every thought the format-error policy repairs, before and after, from real mini-swe-agent runs.

    .venv/bin/python bench/format_repairs.py TRAJ_DIR_OR_FILES... [--sample 40] [--seed 7] [--out FILE]
    .venv/bin/python bench/format_repairs.py --git-dir MIRROR.git --tree PATH [...]

Each run is parsed by the pipeline's own parser (``parse_raw``); the policy's ``repair_thought`` is
wrapped so that each thought it is given and what it returns are recorded exactly as the walker
used them. Prints the totals (runs, exchanges removed, thoughts repaired, runs dropped and why),
then ``--sample`` repairs drawn with ``--seed`` as Markdown (before / after / removed sentences,
and an empty verdict for the reader to fill in). ``--git-dir`` reads the ``*.traj.json`` files
under ``--tree`` straight from a bare mirror (``git cat-file``), without a checkout.
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import orjson

from pipeline.core.episode import ParseError, RawRun
from pipeline.parsers import parse_raw, walker
from pipeline.parsers.format_errors import Repair


@dataclass
class Record:
    uid: str
    before: str
    after: Repair


def files_from_dirs(paths: list[Path]) -> Iterator[tuple[str, bytes]]:
    for p in paths:
        found = sorted(p.rglob("*.traj.json")) if p.is_dir() else [p]
        for f in found:
            yield f.name, f.read_bytes()


def files_from_git(git_dir: str, tree: str) -> Iterator[tuple[str, bytes]]:
    listing = subprocess.run(
        ["git", f"--git-dir={git_dir}", "ls-tree", "-r", "HEAD", "--", tree],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    for line in sorted(listing.splitlines()):
        meta, path = line.split("\t", 1)
        if path.endswith(".traj.json"):
            blob = meta.split()[2]
            data = subprocess.run(
                ["git", f"--git-dir={git_dir}", "cat-file", "blob", blob], check=True, capture_output=True
            ).stdout
            yield Path(path).name, data


def collect(files: Iterator[tuple[str, bytes]]) -> tuple[list[Record], Counter[str]]:
    """Parse every run; the repairs the walker made and the totals."""
    records: list[Record] = []
    totals: Counter[str] = Counter()
    original = walker.repair_thought
    current = ""

    def recording(thought: str) -> Repair:
        got = original(thought)
        if got.removed or got.thought is None:
            records.append(Record(current, thought, got))
        return got

    walker.repair_thought = recording  # the walker calls it by its own module's name
    try:
        for name, data in files:
            current = name
            payload = orjson.loads(data)
            raw = RawRun(f"{name}#row=0", "mini-swe-agent", "miniswe", None, payload, 0)
            totals["runs"] += 1
            try:
                ep = parse_raw(raw)
            except ParseError as e:
                totals[f"dropped parse/{e.reason}"] += 1
                continue
            totals["parsed"] += 1
            for key in ("parse/format_error_removed", "parse/format_thought_repaired"):
                totals[key] += ep.counters[key]
            totals["runs with a removed exchange"] += bool(ep.counters["parse/format_error_removed"])
    finally:
        walker.repair_thought = original
    return records, totals


def quote(text: str) -> str:
    return "\n".join("> " + line if line else ">" for line in (text or "(empty)").split("\n"))


def render(sample: list[tuple[int, Record]], totals: Counter[str]) -> str:
    out = ["## Totals", ""]
    out += [f"- {k}: {v}" for k, v in sorted(totals.items())]
    out += ["", "## Sample", ""]
    for n, (i, r) in enumerate(sample, 1):
        verdict = "dropped (a reference remains)" if r.after.thought is None else "?"
        out += [f"### {n}. `{r.uid}` (repair {i})", "", "Before:", "", quote(r.before), ""]
        if r.after.thought is not None:
            out += ["After:", "", quote(r.after.thought), ""]
        out += ["Removed: " + " / ".join(f"«{s}»" for s in r.after.removed), "", f"Verdict: {verdict}", ""]
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("paths", nargs="*", type=Path)
    ap.add_argument("--git-dir")
    ap.add_argument("--tree", default="")
    ap.add_argument("--sample", type=int, default=40)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--drops", action="store_true", help="sample the thoughts that drop their run")
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    files = files_from_git(a.git_dir, a.tree) if a.git_dir else files_from_dirs(a.paths)
    records, totals = collect(files)
    pool = [(i, r) for i, r in enumerate(records) if (r.after.thought is None) == a.drops]
    sample = sorted(random.Random(a.seed).sample(pool, min(a.sample, len(pool))), key=lambda x: x[0])
    text = render(sample, totals)
    if a.out:
        a.out.write_text(text + "\n")
    else:
        sys.stdout.write(text + "\n")


if __name__ == "__main__":
    main()
