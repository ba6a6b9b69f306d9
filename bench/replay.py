"""Replay converted real runs on their upstream base trees.

    .venv/bin/python bench/replay.py tests/fixtures/real [more files or dirs] \
        [--expectations tests/fixtures/real/EXPECTATIONS.json] [--benchmarks ../shared/benchmarks] \
        [--mirrors /work/.mirror] [--cache ~/.cache/trajpipe/replay] [--out bench/results/replay.md]

For every run ``trajpipe convert`` converts whose repository and base commit are known and
public, the base tree is checked out once from a local git mirror of the upstream repository
(``<mirrors>/<owner>+<name>/repo``: the search tool's ``fetch`` snapshots, or any bare clone named
``<owner>__<name>.git``) into ``<cache>/trees/<owner>__<name>@<commit>`` and committed in a fresh
git repo (content exact: ``read-tree`` + ``checkout-index``, so no ``export-subst``/``export-ignore``
rewriting as ``git archive`` would do). Each run is replayed in a scratch copy with ``/testbed``
mapped onto it (pipeline/devkit/replay.py: a private mount namespace and root when run as root, else
path rewriting), every converted command in order, each compared with the converted observation;
then the final ``git add -A && git diff --cached`` with the run's recorded patch.

Where the repository and commit come from, in order: the expectations file (``repo``,
``base_commit``), the SWE-bench tables (instance id → repo, base_commit), ``bench/replay_tasks.json``
(commits found for runs that record none; each entry says how). Nothing fetched is committed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pipeline.core.episode import RawRun  # noqa: E402
from pipeline.devkit.replay import Replay, Turn, make_shell, replay_turns, short_diff, turns_of  # noqa: E402
from pipeline.orchestration.convert_files import convert_files  # noqa: E402
from pipeline.parsers.files import iter_trajectory_file  # noqa: E402

TASKS_FILE = ROOT / "bench" / "replay_tasks.json"
FINAL_DIFF = "git add -A && git diff --cached"


@dataclass
class Run:
    uid: str
    file: Path
    fmt: str
    messages: list[dict[str, str]] | None
    drop: dict[str, str] | None
    payload: dict[str, Any] = field(default_factory=dict)
    repo: str | None = None
    commit: str | None = None
    instance_id: str | None = None


@dataclass
class Result:
    run: Run
    status: str  # replayed | not_replayed
    why: str = ""
    replay: Replay | None = None
    patch_recorded: str | None = None
    patch_status: str = ""  # identical | differs | none recorded
    patch_diff: str = ""


# ---------------------------------------------------------------- inputs


def _files(paths: list[Path]) -> list[Path]:
    out: list[Path] = []
    for p in paths:
        if p.is_dir():
            out += sorted(
                f for f in p.iterdir() if f.is_file() and f.suffix in (".traj", ".json", ".jsonl", ".gz")
            )
        else:
            out.append(p)
    return [f for f in out if f.name != "EXPECTATIONS.json"]


def load_runs(files: list[Path], work: Path) -> list[Run]:
    """Convert each file with ``trajpipe convert``'s own code; keep its raw payloads."""
    runs: list[Run] = []
    for n, f in enumerate(files):
        out = work / f"convert-{n}.jsonl"
        convert_files([f], out)
        payloads = {r.source_uid: r.payload for r in iter_trajectory_file(f) if isinstance(r, RawRun)}
        for line in out.read_bytes().splitlines():
            rec = orjson.loads(line)
            payload = payloads.get(rec["source_uid"], {})
            runs.append(
                Run(
                    rec["source_uid"],
                    f,
                    rec.get("format") or "-",
                    rec.get("messages"),
                    rec.get("drop"),
                    payload,
                    instance_id=payload.get("instance_id") if isinstance(payload, dict) else None,
                )
            )
    return runs


def _benchmark_commits(dirs: list[Path]) -> dict[str, tuple[str, str]]:
    table: dict[str, tuple[str, str]] = {}
    for d in dirs:
        for f in sorted(d.glob("*.jsonl")) if d.is_dir() else []:
            for line in f.read_bytes().splitlines():
                try:
                    r = orjson.loads(line)
                except orjson.JSONDecodeError:
                    continue
                if isinstance(r, dict) and r.get("instance_id") and r.get("base_commit") and r.get("repo"):
                    table.setdefault(r["instance_id"], (r["repo"], r["base_commit"]))
    return table


def resolve_tasks(runs: list[Run], expectations: dict[str, Any], bench_dirs: list[Path]) -> None:
    """Fill repo/commit of each run (expectations, then SWE-bench tables, then replay_tasks.json)."""
    tables = _benchmark_commits(bench_dirs)
    extra = {
        k: v
        for k, v in (json.loads(TASKS_FILE.read_text()) if TASKS_FILE.is_file() else {}).items()
        if isinstance(v, dict)
    }
    for run in runs:
        exp = expectations.get(run.uid, {})
        run.instance_id = exp.get("instance_id") or run.instance_id
        run.repo, run.commit = exp.get("repo"), exp.get("base_commit")
        if not run.commit and run.instance_id in tables:
            run.repo, run.commit = tables[run.instance_id]
        if not run.commit and run.uid in extra:
            run.repo = run.repo or extra[run.uid]["repo"]
            run.commit = extra[run.uid].get("base_commit")


_PREIMAGE = re.compile(r"^diff --git a/(\S+) b/\S+\n(?:[^\n]*\n)*?index ([0-9a-f]{7,40})\.\.", re.M)


def candidate_commits(repo: str, patch: str | None, mirror: Path, limit: int) -> list[str]:
    """Main-line commits of the mirror where every file the recorded patch changes has the
    patch's pre-image blob (all main-line commits when there is no patch), newest first, thinned
    evenly to at most ``limit``."""
    commits = _git(f"--git-dir={mirror}", "rev-list", "--first-parent", "HEAD").split()
    pre = [
        (path, blob)
        for path, blob in _PREIMAGE.findall((patch or "").replace("\r\n", "\n"))
        if set(blob) != {"0"}
    ]
    if pre:
        query = "".join(f"{c}:{path}\n" for c in commits for path, _ in pre)
        out = subprocess.run(
            ["git", f"--git-dir={mirror}", "cat-file", "--batch-check=%(objectname)"],
            input=query,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split("\n")
        ok = []
        for i, c in enumerate(commits):
            got = out[i * len(pre) : (i + 1) * len(pre)]
            if all(g.startswith(blob) for g, (_, blob) in zip(got, pre, strict=True)):
                ok.append(c)
        commits = ok
    if len(commits) > limit:
        step = (len(commits) - 1) / (limit - 1)
        commits = [commits[round(i * step)] for i in range(limit)]
    return commits


def infer_commit(run: Run, mirror_dirs: list[Path], cache: Path, timeout: float, limit: int) -> str:
    """For a run whose repository is known but not its commit: replay it on each candidate
    commit and keep the one with the most identical observations (ties: the newest)."""
    assert run.repo
    mirror = find_mirror(run.repo, mirror_dirs)
    if mirror is None:
        return ""
    turns = turns_of(run.messages or [])
    patch = recorded_patch(run.payload) or (turns[-1].observation if turns and turns[-1].submit else None)
    best, best_n = "", -1
    for c in candidate_commits(run.repo, patch, mirror, limit):
        run.commit = c
        res = replay_run(run, mirror_dirs, cache, timeout)
        n = res.replay.count("identical") + (res.patch_status == "identical") if res.replay else -1
        if n > best_n:
            best, best_n = c, n
    run.commit = None
    return best


def recorded_patch(payload: dict[str, Any]) -> str | None:
    """The patch the raw record carries (SWE-agent/mini ``info.submission``, OpenHands
    ``test_result.git_patch``, ``model_patch``), or None."""
    info = payload.get("info") if isinstance(payload.get("info"), dict) else {}
    test = payload.get("test_result") if isinstance(payload.get("test_result"), dict) else {}
    for v in (
        info.get("submission"),
        info.get("model_patch"),
        test.get("git_patch"),
        payload.get("model_patch"),
    ):
        if isinstance(v, str) and v.strip():
            return v
    return None


# ---------------------------------------------------------------- base trees


def _git(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> str:
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


def find_mirror(repo: str, mirror_dirs: list[Path]) -> Path | None:
    owner, name = repo.split("/", 1)
    for d in mirror_dirs:
        for cand in (d / f"{owner}+{name}" / "repo", d / f"{owner}__{name}.git"):
            if (cand / "HEAD").is_file():
                return cand
    return None


def base_tree(repo: str, commit: str, mirror_dirs: list[Path], cache: Path) -> Path:
    """The cached checkout of ``repo`` at ``commit`` (a git repo with one commit), built once."""
    tree = cache / "trees" / f"{repo.replace('/', '__')}@{commit}"
    if (tree / ".git" / "replay-complete").is_file():
        return tree
    mirror = find_mirror(repo, mirror_dirs)
    if mirror is None:
        raise LookupError(f"no mirror of {repo} (fetch github:{repo})")
    if tree.exists():
        shutil.rmtree(tree)
    tree.mkdir(parents=True)
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "GIT_INDEX_FILE": str(Path(tmp) / "index")}
        try:
            full = _git(f"--git-dir={mirror}", "rev-parse", "--verify", f"{commit}^{{commit}}").strip()
            _git(f"--git-dir={mirror}", f"--work-tree={tree}", "read-tree", full, env=env)
            _git(f"--git-dir={mirror}", f"--work-tree={tree}", "checkout-index", "-a", "-f", env=env)
        except subprocess.CalledProcessError as e:
            shutil.rmtree(tree)
            raise LookupError(
                f"{repo}@{commit}: {e.stderr.strip().splitlines()[-1] if e.stderr.strip() else e}"
            ) from e
    ident = {
        **os.environ,
        "GIT_AUTHOR_NAME": "replay",
        "GIT_AUTHOR_EMAIL": "replay@localhost",
        "GIT_COMMITTER_NAME": "replay",
        "GIT_COMMITTER_EMAIL": "replay@localhost",
        "GIT_AUTHOR_DATE": "2000-01-01T00:00:00Z",
        "GIT_COMMITTER_DATE": "2000-01-01T00:00:00Z",
    }
    _git("init", "-q", cwd=tree)
    _git("add", "-A", "-f", cwd=tree)
    _git("-c", "commit.gpgsign=false", "commit", "-q", "-m", f"{repo}@{full}", cwd=tree, env=ident)
    (tree / ".git" / "replay-complete").write_text(full + "\n")
    return tree


# ---------------------------------------------------------------- replay


_OUT_NO_NL = re.compile(r"^-[^\n]*[^\n>]</output>$", re.M)  # converted: text glued to </output>
_INDEX = re.compile(r"^index ([0-9a-f]{7,40})\.\.[0-9a-f]{7,40}", re.M)


def _norm_patch(p: str) -> str:
    """A patch as compared: CRLF from a PTY-captured record read as LF, outer blank lines ignored."""
    p = p.replace("\r\n", "\n")
    return p.strip("\n") + "\n" if p.strip() else ""


def abbrev_of(run: Run, turns: list[Turn], mirror: Path | None) -> int | None:
    """The hash length the task image's git printed (``index a..b`` lines of the recorded patch or
    of any observation), else the mirror's own; a fresh repo would abbreviate to 7."""
    for text in [recorded_patch(run.payload) or "", *(t.observation for t in turns)]:
        m = _INDEX.search(text)
        if m:
            return len(m.group(1))
    if mirror is not None:
        return len(_git(f"--git-dir={mirror}", "rev-parse", "--short", "HEAD").strip())
    return None


def replay_run(run: Run, mirror_dirs: list[Path], cache: Path, timeout: float) -> Result:
    if run.messages is None:
        return Result(
            run,
            "not_replayed",
            f"not converted ({run.drop['stage']}/{run.drop['reason']})" if run.drop else "not converted",
        )
    if not run.repo or not run.commit:
        return Result(run, "not_replayed", "no public repository/base commit")
    try:
        base = base_tree(run.repo, run.commit, mirror_dirs, cache)
    except LookupError as e:
        return Result(run, "not_replayed", str(e))
    turns: list[Turn] = turns_of(run.messages)
    with tempfile.TemporaryDirectory(prefix="replay-") as scratch:
        tree = Path(scratch) / "testbed"
        subprocess.run(["cp", "-a", str(base), str(tree)], check=True)
        abbrev = abbrev_of(run, turns, find_mirror(run.repo, mirror_dirs))
        if abbrev:
            _git("config", "core.abbrev", str(abbrev), cwd=tree)
        shell = make_shell(tree, Path(scratch) / "ns")
        rep = replay_turns(turns, shell, timeout)
        final = shell.run(FINAL_DIFF, timeout=timeout)
    res = Result(run, "replayed", replay=rep)
    recorded = recorded_patch(run.payload)
    if recorded is None and turns and turns[-1].submit:
        recorded = turns[-1].observation
    res.patch_recorded = recorded
    if recorded is None:
        res.patch_status = "none recorded"
    elif _norm_patch(recorded) == _norm_patch(final.output):
        res.patch_status = "identical"
    else:
        res.patch_status = "differs"
        res.patch_diff = short_diff(_norm_patch(recorded), _norm_patch(final.output))
    return res


# ---------------------------------------------------------------- report


def _fmt_key(r: Result, expectations: dict[str, Any]) -> str:
    return expectations.get(r.run.uid, {}).get("dialect") or r.run.fmt


def summary_rows(results: list[Result], expectations: dict[str, Any]) -> list[list[str]]:
    by: dict[str, list[Result]] = defaultdict(list)
    for r in results:
        by[_fmt_key(r, expectations)].append(r)
    rows = []
    for key in [*sorted(by), "**all**"]:
        rs = results if key == "**all**" else by[key]
        rep = [r for r in rs if r.status == "replayed"]
        turns = [t for r in rep for t in r.replay.turns] if rep else []  # type: ignore[union-attr]
        rows.append(
            [
                key,
                str(len(rs)),
                str(len(rep)),
                str(sum(r.replay.identical for r in rep)),  # type: ignore[union-attr]
                str(sum(r.replay.count("differs") == 0 and r.patch_status != "differs" for r in rep)),  # type: ignore[union-attr]
                f"{sum(t.status == 'identical' for t in turns)}/{sum(t.status != 'skipped' for t in turns)}",
                str(sum(t.status in ("runtime", "dates") for t in turns)),
                str(sum(t.status == "skipped" for t in turns)),
                f"{sum(r.patch_status == 'identical' for r in rep)}/{sum(r.patch_status != 'none recorded' for r in rep)}",
            ]
        )
    return rows


HEADER = [
    "format",
    "runs",
    "replayed",
    "runs: every observation identical",
    "runs: identical but for the environment",
    "observations identical",
    "differ: environment (task runtime, file dates)",
    "skipped (network/package)",
    "final diffs identical",
]


def table(rows: list[list[str]]) -> str:
    lines = [
        "| " + " | ".join(HEADER) + " |",
        "|" + "|".join("---" if i == 0 else "---:" for i in range(len(HEADER))) + "|",
    ]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def render(results: list[Result], expectations: dict[str, Any], command: str) -> str:
    out = [
        "# Replay of converted real runs (bench/replay.py)\n",
        f"`{command}`\n",
        "Observations are compared byte for byte after rendering what the replayed command printed "
        "with the converter's own templates. *Task runtime*: the command runs the task's code or "
        "toolchain (python on the repository, pytest, make …), whose output depends on the task's "
        "image, not on the converter; these are listed but not counted as conversion defects. "
        "Final diffs: `git add -A && git diff --cached` after the last command vs the patch the "
        "raw record carries (leading/trailing blank lines ignored).\n",
        table(summary_rows(results, expectations)),
        "\n## Runs\n",
        "| run | format | repo@commit | turns | identical | environment | skipped | final diff | note |",
        "|---|---|---|---:|---:|---:|---:|---|---|",
    ]
    for r in results:
        if r.status != "replayed":
            out.append(
                f"| `{r.run.uid}` | {r.run.fmt} | {r.run.repo or '-'} | | | | | | not replayed: {r.why} |"
            )
            continue
        rep = r.replay
        assert rep is not None
        first = rep.first_difference
        note = (f"first difference: turn {first.index} ({first.status})" if first else "") + (
            f" {r.why}" if r.why else ""
        )
        out.append(
            f"| `{r.run.uid}` | {r.run.fmt} | {r.run.repo}@{(r.run.commit or '')[:10]} | {len(rep.turns)} | "
            f"{rep.count('identical')} | {rep.count('runtime') + rep.count('dates')} | {rep.count('skipped')} | {r.patch_status} | {note} |"
        )
    out.append("\n## Differences\n")
    for r in results:
        if r.status != "replayed":
            continue
        rep = r.replay
        assert rep is not None
        diffs = [t for t in rep.turns if t.status in ("differs", "runtime", "dates")]
        if not diffs and r.patch_status != "differs":
            continue
        out.append(f"### `{r.run.uid}`\n")
        for t in diffs:
            cmd = t.command.splitlines()[0][:100]
            flag = " (after a skipped command: the tree may have diverged)" if t.after_skip else ""
            if t.status == "runtime" and _OUT_NO_NL.search(t.diff):
                flag += " — the converted output lacks the final newline the program printed (class 9)"
            out.append(f"- turn {t.index} **{t.status}**{flag}: `{cmd}`\n\n```diff\n{t.diff}```\n")
        skipped = [t for t in rep.turns if t.status == "skipped"]
        out.extend(
            f"- turn {t.index} skipped ({t.reason}): `{t.command.splitlines()[0][:100]}`\n" for t in skipped
        )
        if r.patch_status == "differs":
            out.append(f"- final diff differs from the recorded patch:\n\n```diff\n{r.patch_diff}```\n")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("paths", nargs="+", type=Path)
    ap.add_argument("--expectations", type=Path, action="append", default=[])
    ap.add_argument("--benchmarks", type=Path, action="append", default=[])
    ap.add_argument("--mirrors", type=Path, action="append", default=[])
    ap.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "trajpipe" / "replay")
    ap.add_argument("--timeout", type=float, default=60.0)
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "replay.md")
    ap.add_argument("--json", type=Path, default=None, help="also write per-run results as JSON")
    ap.add_argument(
        "--infer-commits",
        type=int,
        default=0,
        metavar="N",
        help="for runs with a repository but no commit, try up to N main-line commits "
        "matching the recorded patch's pre-image and keep the best replay",
    )
    args = ap.parse_args(argv)

    expectations: dict[str, Any] = {}
    exp_files = args.expectations or [
        p / "EXPECTATIONS.json" for p in args.paths if (p / "EXPECTATIONS.json").is_file()
    ]
    for f in exp_files:
        expectations.update(json.loads(f.read_text()))
    bench_dirs = (
        args.benchmarks
        or [
            p for p in (ROOT.parent / "shared" / "benchmarks", Path("/work/shared/benchmarks")) if p.is_dir()
        ][:1]
    )
    mirrors = args.mirrors or [Path("/work/.mirror"), args.cache / "mirrors"]
    with tempfile.TemporaryDirectory() as work:
        runs = load_runs(_files(args.paths), Path(work))
    resolve_tasks(runs, expectations, bench_dirs)
    results = []
    for run in runs:
        inferred = ""
        if args.infer_commits and run.messages and run.repo and not run.commit:
            inferred = run.commit = (
                infer_commit(run, mirrors, args.cache, args.timeout, args.infer_commits) or None
            )
        res = replay_run(run, mirrors, args.cache, args.timeout)
        print(
            f"{run.uid}: {res.status} {res.why}"
            + (
                f" identical={res.replay.count('identical')}/{len(res.replay.turns)} diff={res.patch_status}"
                if res.replay
                else ""
            ),
            file=sys.stderr,
        )
        if inferred:
            res.why = f"commit inferred by replay among main-line candidates ({args.infer_commits} max)"
        results.append(res)
    command = "bench/replay.py " + " ".join(str(p) for p in args.paths)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(render(results, expectations, command))
    if args.json:
        args.json.write_bytes(
            orjson.dumps(
                [
                    {
                        "uid": r.run.uid,
                        "format": _fmt_key(r, expectations),
                        "status": r.status,
                        "why": r.why,
                        "patch": r.patch_status,
                        "turns": [t.__dict__ for t in r.replay.turns] if r.replay else [],
                    }
                    for r in results
                ],
                option=orjson.OPT_INDENT_2,
            )
        )
    print(table(summary_rows(results, expectations)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
