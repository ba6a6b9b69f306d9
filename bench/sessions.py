"""Agent session transcripts in the wild: public Claude Code / Codex CLI / Kimi session files, converted by the CLI.

    python bench/sessions.py fetch --mirrors /work/.mirror --out /work/data/sessions/files
    python bench/sessions.py run --files /work/data/sessions/files [--results bench/results/sessions.md]

The harvest is ``bench/sessions_manifest.jsonl``: one line per file ``{repo, commit, path, sha256,
family, file}`` (byte-identical copies listed once), found with code search over public
repositories (agents' own test fixtures and committed transcripts). ``fetch`` rebuilds it from bare
mirrors (``git --git-dir <mirror>/<owner>+<name>/repo show <commit>:<path>``), checking each sha256.

``run`` converts every file with ``python -m pipeline.cli convert FILES --out X.jsonl`` (a subprocess:
the CLI users run, from this tree) and counts per format: runs in (files the CLI read as that
format), converted (past the convert step: published or dropped by verify), verified (published)
and faithful (published and without any violation of ``bench/wild_check.py``, which imports nothing
of the pipeline; the run's record is its session's event list), and every drop by reason.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from wild_check import check_run  # noqa: E402

MANIFEST = HERE / "sessions_manifest.jsonl"


def _manifest() -> list[dict[str, Any]]:
    return [json.loads(ln) for ln in MANIFEST.read_text().splitlines() if ln.strip()]


def fetch(mirrors: Path, out: Path) -> int:
    out.mkdir(parents=True, exist_ok=True)
    missing = 0
    for row in _manifest():
        git_dir = mirrors / row["repo"].replace("/", "+") / "repo"
        try:
            data = subprocess.run(
                ["git", "--git-dir", str(git_dir), "show", f"{row['commit']}:{row['path']}"],
                check=True,
                capture_output=True,
            ).stdout
        except (subprocess.CalledProcessError, FileNotFoundError):
            missing += 1
            continue
        if hashlib.sha256(data).hexdigest() != row["sha256"]:
            missing += 1
            continue
        (out / row["file"]).write_bytes(data)
    print(f"{len(_manifest()) - missing} files written to {out}, {missing} missing or changed")
    return 1 if missing else 0


def _events(path: Path) -> list[Any]:
    events: list[Any] = []
    for ln in path.read_bytes().split(b"\n"):
        if ln.strip():
            try:
                events.append(json.loads(ln))
            except ValueError:
                continue
    return events


def run(files: Path, results: Path | None) -> int:
    rows = _manifest()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out.jsonl"
        subprocess.run(
            [sys.executable, "-m", "pipeline.cli", "convert", str(files), "--out", str(out)],
            cwd=HERE.parent,
            capture_output=True,
            check=False,
        )
        lines = [json.loads(ln) for ln in out.read_text().splitlines() if ln.strip()]
    family = {r["file"]: r["family"] for r in rows}
    stats: dict[str, Counter[str]] = defaultdict(Counter)
    drops: dict[str, Counter[str]] = defaultdict(Counter)
    violations: list[str] = []
    quarantined: set[str] = set()
    for ln in lines:
        name = ln["source_uid"].split("#", 1)[0]
        fmt = ln.get("format") or f"({family.get(name, '?')}, not detected)"
        drop = ln.get("drop")
        if drop and drop.get("stage") == "quarantine":
            # a file no format reads is quarantined line by line: counted once, as a file
            if name in quarantined:
                continue
            quarantined.add(name)
            fmt = "(not a session file of a known format)"
        s = stats[fmt]
        s["in"] += 1
        if drop:
            drops[fmt][f"{drop['stage']}/{drop['reason']}"] += 1
            if drop["stage"] == "verify":
                s["converted"] += 1
            continue
        s["converted"] += 1
        s["verified"] += 1
        found = check_run(ln["messages"], _events(files / name))
        bad = {k: v for k, v in found.items() if v}
        if bad:
            violations.append(f"{name}: {bad}")
        else:
            s["faithful"] += 1
    table = [
        "| format | runs in | converted | verified | faithful | dropped (reason: runs) |",
        "|---|---|---|---|---|---|",
    ]
    for fmt in sorted(stats):
        s = stats[fmt]
        why = ", ".join(f"{k} {v}" for k, v in sorted(drops[fmt].items(), key=lambda kv: (-kv[1], kv[0])))
        table.append(
            f"| {fmt} | {s['in']} | {s['converted']} | {s['verified']} | {s['faithful']} | {why or '-'} |"
        )
    text = "\n".join(table) + "\n"
    if violations:
        text += "\nwild_check violations:\n" + "".join(f"- {v}\n" for v in violations)
    print(text)
    if results is not None:
        results.write_text(text)
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    f = sub.add_parser("fetch")
    f.add_argument("--mirrors", type=Path, required=True)
    f.add_argument("--out", type=Path, required=True)
    r = sub.add_parser("run")
    r.add_argument("--files", type=Path, required=True)
    r.add_argument("--results", type=Path, default=None)
    args = ap.parse_args()
    if args.cmd == "fetch":
        return fetch(args.mirrors, args.out)
    return run(args.files, args.results)


if __name__ == "__main__":
    raise SystemExit(main())
