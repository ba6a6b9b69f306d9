"""Measure the return-code inference rules (``pipeline/convert/returncodes.py``) on real runs that
record their return codes: hide the code, infer it, compare.

    PYTHONPATH=. .venv/bin/python bench/rc_rules.py                 # inputs from bench/rc_rules_manifest.json
    PYTHONPATH=. .venv/bin/python bench/rc_rules.py --build-manifest  # list the mirrors' files anew

Inputs are rebuilt from the public mirrors the manifest names (``/work/.mirror/<owner>+<name>/repo``,
override with ``--mirrors``): one row per input with its repo, commit, path and the sha256 of the bytes
the bench builds from it (a file as stored; an OpenHands session folder as the JSON list of its
``events/<n>.json`` in id order). No trajectory is committed: the manifest is the data lock.

Each input goes through the pipeline's own parser (``parse_raw``) and the same per-step command and
output shaping as ``convert_turns`` (roots rewritten, harness wrappers peeled, exit markers split,
tool calls converted by ``convert_call``). A turn whose return code the record holds (a mini-swe-agent
``<returncode>``, an OpenHands ``exit_code``, an exit marker) is a sample; every rule is run on it,
enabled or not, and its answer compared with the recorded code.

Reported per rule: decided, correct, precision, coverage (decided / samples) over all samples, per
source family (mini, openhands) and per repo group (independent runs: different repositories,
models and harness versions). A rule is enabled when its precision is >= 0.99 on at least
``MIN_N`` decided samples overall AND >= 0.99 on every repo group where it decided at least
``MIN_GROUP_N`` samples, with at least two such groups. SWE-agent runs (no return codes) are read
for coverage only: the share of their command turns without a code that the enabled rules decide.

Writes ``bench/results/rc_rules.md`` and ``bench/results/rc_rules.json``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pipeline.convert import _is_submit_command, rc_shape
from pipeline.convert import returncodes as rcmod
from pipeline.convert.actions import ToolState
from pipeline.convert.bash import split_exit_marker
from pipeline.convert.roots import RootRewriter
from pipeline.convert.runfiles import RunFiles
from pipeline.convert.tools import convert_call
from pipeline.core.episode import Bash, PipelineDrop, RawRun, ToolCall
from pipeline.parsers import parse_raw
from pipeline.parsers.files import iter_trajectory_file
from pipeline.text.shell import peel_wrappers

ROOT = Path(__file__).resolve().parents[1]
MANIFEST = ROOT / "bench" / "rc_rules_manifest.json"
RESULTS = ROOT / "bench" / "results"
MIN_N = rcmod.MIN_N
MIN_GROUP_N = rcmod.MIN_GROUP_N

# (group, family, repo, commit, how to list: "files" with suffixes under a folder, or "oh_sessions")
SOURCES: list[dict[str, Any]] = [
    {
        "group": "gruckion-gemini3",
        "family": "mini",
        "repo": "gruckion/mini-swe-agent",
        "commit": "d12a71affd95403b036b2bdbd827349b77bfffb9",
        "under": "swebench_results/20251118_gemini-3-pro-74pct/trajs/",
        "suffix": ".traj.json",
    },
    *[
        {
            # mini-swe-agent 1.17.3 runs of GPT-5 models on SWE-bench Verified tasks: a third group,
            # added after the rules were written (their first held-out test)
            "group": "wudi-gpt5",
            "family": "mini",
            "repo": "wudi-alex/mini-swe-agent-CaM",
            "commit": "fae95e425f7ab1e3cfbb3eea3f784515fdcc208f",
            "under": f"run_results/{folder}/",
            "suffix": ".traj.json",
        }
        for folder in ("mini-output", "gpt5-output", "nano-output", "mini-reasoning-high-res-api")
    ],
    {
        "group": "ergt10-glm46",
        "family": "openhands",
        "repo": "ergt10/openhands_swebench",
        "commit": "3f8ba937f9e13afa16e8596c497becbe6a52154c",
        "under": ".eval_sessions/sessions/",
        "sessions": True,
    },
    {
        "group": "upstream-tests",
        "family": "mini",
        "repo": "SWE-agent/mini-swe-agent",
        "commit": "a83fcae82d2a08f0ee0c688f9d137b3566c097f8",
        "under": "tests/test_data/",
        "suffix": ".traj.json",
    },
    {
        "group": "upstream-tests",
        "family": "openhands",
        "repo": "All-Hands-AI/OpenHands",
        "commit": "156d0686c46aafb0fa9d291da6421fb6f64dddc0",
        "paths": [
            "evaluation/benchmarks/multi_swe_bench/examples/output.jsonl",
            "tests/unit/resolver/mock_output/output.jsonl",
            "tests/runtime/trajs/basic.json",
            "tests/runtime/trajs/basic_gui_mode.json",
            "tests/runtime/trajs/wrong_initial_state.json",
        ],
    },
    {
        # SWE-agent 1.x runs on SWE-smith tasks, vendored in this repository (tests/fixtures/real,
        # PROVENANCE.md there: SWE-bench/SWE-smith); read from the work tree
        "group": "sweagent",
        "family": "sweagent",
        "repo": "local",
        "commit": "",
        "paths": [
            "tests/fixtures/real/sweagent-swesmith-pandas-pr_53856.traj",
            "tests/fixtures/real/sweagent-swesmith-pydantic-pr_8316-review-on-submit.traj",
        ],
    },
    {
        "group": "sweagent",
        "family": "sweagent",
        "repo": "SWE-agent/SWE-agent",
        "commit": "3ea751c087f32b16e039a2233dd6eefecef325d5",
        "under": "",
        "suffix": ".traj",
    },
]


# ------------------------------------------------------------------------------------------ git reads


class GitBlobs:
    """``git cat-file --batch`` over one bare mirror: blobs by ``commit:path`` without a process each."""

    def __init__(self, git_dir: Path) -> None:
        self.proc = subprocess.Popen(
            ["git", f"--git-dir={git_dir}", "cat-file", "--batch"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        self.git_dir = git_dir

    def read(self, commit: str, path: str) -> bytes | None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(f"{commit}:{path}\n".encode())
        self.proc.stdin.flush()
        head = self.proc.stdout.readline().split()
        if len(head) < 3 or head[1] != b"blob":
            return None
        data = self.proc.stdout.read(int(head[2]))
        self.proc.stdout.read(1)
        return data

    def ls(self, commit: str, under: str) -> list[str]:
        out = subprocess.run(
            ["git", f"--git-dir={self.git_dir}", "ls-tree", "-r", "--name-only", commit, "--", under or "."],
            capture_output=True,
            check=True,
            text=True,
        ).stdout
        return out.splitlines()

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait()


def mirror_dir(mirrors: Path, repo: str) -> Path:
    return mirrors / repo.replace("/", "+") / "repo"


def session_bytes(blobs: GitBlobs, commit: str, files: list[str]) -> bytes | None:
    """One OpenHands session as the JSON list of its events, in id order (the event store's layout)."""
    events = sorted(
        (f for f in files if f.rsplit("/", 1)[-1].removesuffix(".json").isdigit()),
        key=lambda f: int(f.rsplit("/", 1)[-1].removesuffix(".json")),
    )
    parts = [blobs.read(commit, f) for f in events]
    if not parts or any(p is None for p in parts):
        return None
    return b"[" + b",".join(p.strip() for p in parts if p is not None) + b"]"


def build_manifest(mirrors: Path) -> list[dict[str, str]]:
    rows: list[dict[str, str]] = []
    for src in SOURCES:
        base = {k: src[k] for k in ("group", "family", "repo", "commit")}
        if src["repo"] == "local":
            rows.extend(
                {**base, "path": p, "kind": "local", "sha256": sha((ROOT / p).read_bytes())}
                for p in src["paths"]
            )
            continue
        blobs = GitBlobs(mirror_dir(mirrors, src["repo"]))
        commit = src["commit"]
        if src.get("sessions"):
            by_session: dict[str, list[str]] = defaultdict(list)
            for f in blobs.ls(commit, src["under"]):
                parts = f.split("/")
                if len(parts) == 5 and parts[3] == "events":
                    by_session["/".join(parts[:3])].append(f)
            for sess, files in sorted(by_session.items()):
                data = session_bytes(blobs, commit, files)
                if data is not None:
                    rows.append({**base, "path": sess, "kind": "oh_session", "sha256": sha(data)})
        else:
            paths = src.get("paths") or [
                f for f in blobs.ls(commit, src["under"]) if f.endswith(src["suffix"])
            ]
            for p in sorted(paths):
                data = blobs.read(commit, p)
                if data is not None:
                    rows.append({**base, "path": p, "kind": "file", "sha256": sha(data)})
        blobs.close()
    return rows


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def inputs(manifest: list[dict[str, str]], mirrors: Path) -> Iterator[tuple[dict[str, str], bytes]]:
    """Each manifest row's bytes rebuilt from its mirror, checked against the recorded sha256."""
    open_: dict[str, GitBlobs] = {}
    listings: dict[tuple[str, str], list[str]] = {}
    for row in manifest:
        if row["kind"] == "local":
            data = (ROOT / row["path"]).read_bytes()
            if sha(data) != row["sha256"]:
                raise SystemExit(f"{row['path']}: changed bytes")
            yield row, data
            continue
        blobs = open_.get(row["repo"]) or open_.setdefault(
            row["repo"], GitBlobs(mirror_dir(mirrors, row["repo"]))
        )
        if row["kind"] == "oh_session":
            key = (row["repo"], row["commit"])
            if key not in listings:
                listings[key] = blobs.ls(row["commit"], str(Path(row["path"]).parent))
            prefix = row["path"] + "/events/"
            data = session_bytes(blobs, row["commit"], [f for f in listings[key] if f.startswith(prefix)])
        else:
            data = blobs.read(row["commit"], row["path"])
        if data is None or sha(data) != row["sha256"]:
            raise SystemExit(f"{row['repo']}@{row['commit'][:10]}:{row['path']}: missing or changed bytes")
        yield row, data
    for b in open_.values():
        b.close()


# ------------------------------------------------------------------------------------------ samples


@dataclass
class Sample:
    group: str
    family: str
    source: str
    command: str
    output: str
    returncode: int | None  # None: the record holds none (SWE-agent)
    needs: bool = True  # convert would have no code for it (neither recorded nor proven by a converter)
    run: str = ""  # the run's source uid (a file may hold several runs)
    code: int | None = None  # the code convert has before inference: recorded or a converter's proof


def turns(raw: RawRun) -> Iterator[tuple[str, str, int | None, bool, int | None]]:
    """(command, output, recorded code, needs inference, code before inference) of each command
    turn, in order, shaped as ``convert_turns`` shapes them."""
    try:
        ep = parse_raw(raw)
    except PipelineDrop:
        return
    roots = RootRewriter(ep.meta.repo_root, ep.task.repo)
    state = ToolState(counters=Counter())
    for turn, step in enumerate(ep.steps):
        if step.timed_out:
            continue
        obs = roots(step.observation)
        if isinstance(step.call, Bash):
            cmd = peel_wrappers(roots(step.call.command))
            out, marked = split_exit_marker(obs)
            rc = step.returncode if step.returncode is not None else marked
            if cmd and not _is_submit_command(cmd):
                yield cmd, out, rc, rc is None, rc
        elif isinstance(step.call, ToolCall):
            args = roots.deep(step.call.args)
            assert isinstance(args, dict)
            try:
                action = convert_call(step.call.name, args, obs, step.returncode, turn, state)
            except PipelineDrop:
                return
            if action.kind == "run" and action.command.strip() and not _is_submit_command(action.command):
                # a code the converter derived from an edit's outcome is proven, not recorded: only
                # the record's own code (or the exit marker convert_call split) is a sample's truth
                recorded = step.returncode is not None or split_exit_marker(obs)[1] is not None
                needs = action.returncode is None
                command = action.command.strip()
                yield (
                    command,
                    action.output,
                    action.returncode if recorded else None,
                    needs,
                    action.returncode,
                )


def samples_of(row: dict[str, str], data: bytes, tmp: Path) -> Iterator[Sample]:
    name = row["path"].replace("/", "__")
    path = tmp / (name if name.endswith((".json", ".jsonl", ".traj")) else name + ".json")
    path.write_bytes(data)
    for raw in iter_trajectory_file(path, name=name):
        if isinstance(raw, RawRun):
            for cmd, out, rc, needs, code in turns(raw):
                source = f"{row['repo']}:{row['path']}"
                yield Sample(
                    row["group"],
                    row["family"],
                    source,
                    cmd,
                    out,
                    rc,
                    needs,
                    f"{source}#{raw.source_uid}",
                    code,
                )
    path.unlink()


# ------------------------------------------------------------------------------------------ scoring


def in_context(samples: list[Sample], hidden: bool = True) -> Iterator[tuple[Sample, RunFiles]]:
    """Each sample with the files its run wrote or displayed before it (:class:`RunFiles`, fed
    the run's turns in order as ``convert_turns`` feeds it). A turn is learned from with the code
    convert would have for it with the record's codes hidden (``hidden``): a converter's proof,
    else what the enabled rules infer, else unknown."""
    files, run = RunFiles(), None
    for s in samples:
        if s.run != run:
            files, run = RunFiles(), s.run
        yield s, files
        code = s.code if (not hidden or s.returncode is None or not s.needs) else None
        if code is None:
            got = rcmod.infer_returncode(s.command, s.output, files)
            code = got[0] if got else None
        files.learn(s.command, s.output, code)


def score(samples: list[Sample]) -> dict[str, Any]:
    """Every rule on every recorded sample: decided / correct per rule, overall, per family, per group."""
    blank = lambda: {"decided": 0, "correct": 0, "samples": 0}  # noqa: E731
    table: dict[str, dict[str, Any]] = {
        r.name: {"all": blank(), "family": defaultdict(blank), "group": defaultdict(blank), "wrong": []}
        for r in rcmod.RULES
    }
    totals: Counter[str] = Counter()
    by_class: dict[str, Counter[str]] = defaultdict(Counter)
    conflicts: list[dict[str, Any]] = []
    for s, files in in_context(samples):
        if s.returncode is None:
            continue
        totals["all"] += 1
        totals[f"family:{s.family}"] += 1
        totals[f"group:{s.group}"] += 1
        answers: dict[str, int] = {}
        for r in rcmod.RULES:
            got = r(s.command, s.output, files)
            if got is None:
                continue
            answers[r.name] = got
            ok = got == s.returncode
            if r.name == "loud_success":
                shape = rc_shape._shape(s.command)
                cls = (shape and rc_shape._loud_class(shape.final)) or "?"
                by_class[cls]["decided"] += 1
                by_class[cls]["correct"] += ok
            for cell in (
                table[r.name]["all"],
                table[r.name]["family"][s.family],
                table[r.name]["group"][s.group],
            ):
                cell["decided"] += 1
                cell["correct"] += ok
            if not ok and len(table[r.name]["wrong"]) < 8:
                table[r.name]["wrong"].append(
                    {
                        "source": s.source,  # no command or output text: no trajectory data is committed
                        "program": _final_program(s.command),
                        "recorded": s.returncode,
                        "inferred": got,
                    }
                )
        if len(set(answers.values())) > 1 and len(conflicts) < 20:
            conflicts.append({"source": s.source, "answers": answers, "recorded": s.returncode})
    for t in table.values():
        for cell in [t["all"], *t["family"].values(), *t["group"].values()]:
            cell["precision"] = round(cell["correct"] / cell["decided"], 4) if cell["decided"] else None
        t["all"]["coverage"] = round(t["all"]["decided"] / max(totals["all"], 1), 4)
        for fam, cell in t["family"].items():
            cell["coverage"] = round(cell["decided"] / max(totals[f"family:{fam}"], 1), 4)
        for grp, cell in t["group"].items():
            cell["coverage"] = round(cell["decided"] / max(totals[f"group:{grp}"], 1), 4)
        t["family"], t["group"] = dict(t["family"]), dict(t["group"])
        t["passes"] = passes(t)
    return {
        "totals": dict(totals),
        "rules": table,
        "loud_success_by_class": {k: dict(v) for k, v in sorted(by_class.items())},
        "conflicts": conflicts,
    }


def command_shape(command: str) -> str:
    """A command's shape for the undecided list: its simple commands' programs and first
    subcommand or option, with the operators between them (``cd && python X.py``)."""
    shape = rc_shape._shape(command)
    if shape is None:
        return "?"
    parts: list[str] = []
    for seg in shape.segments:
        word = rc_shape.prog(seg)
        rest = [a for a in seg.argv[1:] if not a.startswith(("<<", ">", "2>"))][:1]
        if rest:
            a = rest[0]
            word += " X.py" if a.endswith(".py") else (" " + a if a.startswith("-") or a.isalpha() else " X")
        parts.append(word + (f" {seg.op}" if seg.op and seg.op != "\n" else (" ;" if seg.op else "")))
    return " ".join(parts)[:80]


def _final_program(command: str) -> str:
    shape = rc_shape._shape(command)
    return rc_shape.prog(shape.final) if shape else "?"


def measured(t: dict[str, Any]) -> rcmod.Measured:
    """The rule's row of the module's table; its ``passes`` is the enabling test."""
    a = t["all"]
    big = [c for name, c in t["group"].items() if c["decided"] >= MIN_GROUP_N and name != "sweagent"]
    return rcmod.Measured(
        precision=a["precision"] or 0.0,
        n=a["decided"],
        groups=len(big),
        min_group_precision=min((c["precision"] for c in big), default=1.0),
    )


def passes(t: dict[str, Any]) -> bool:
    return measured(t).passes


def write_table(sc: dict[str, Any]) -> None:
    """The MEASURED block of ``pipeline/convert/returncodes.py`` rewritten from this run."""
    path = ROOT / "pipeline" / "convert" / "returncodes.py"
    text = path.read_text()
    head, rest = text.split("# BEGIN MEASURED", 1)
    _, tail = rest.split("# END MEASURED", 1)
    rows = []
    for r in rcmod.RULES:
        m = measured(sc["rules"][r.name])
        rows.append(
            f'    "{r.name}": Measured({m.precision:.4f}, {m.n}, {m.groups}, {m.min_group_precision:.4f}),'
        )
    block = (
        "# BEGIN MEASURED (written by `bench/rc_rules.py --write-table`: precision, n, groups, min group precision)\n"
        "MEASURED: dict[str, Measured] = {\n" + "\n".join(rows) + "\n}\n"
    )
    path.write_text(head + block + "# END MEASURED" + tail)


def coverage(samples: list[Sample], enabled: set[str]) -> dict[str, Any]:
    """What the rules that pass decide, first in order as ``infer_returncode`` takes them, on turns
    with and without codes."""
    active = [r for r in rcmod.RULES if r.name in enabled]

    def infer(cmd: str, out: str, files: RunFiles | None) -> tuple[int, str] | None:
        for r in active:
            code = r(cmd, out, files)
            if code is not None:
                return code, r.name
        return None

    out: dict[str, Any] = {}
    # families that record codes: every command turn (as if its code were hidden); others: the
    # turns convert has no code for (a converter's proven code needs no inference)
    got_of: dict[int, tuple[tuple[int, str] | None, tuple[int, str] | None]] = {}
    for s, files in in_context(samples):
        if s.returncode is not None or s.needs:
            got_of[id(s)] = (infer(s.command, s.output, None), infer(s.command, s.output, files))
    fams = sorted({s.family for s in samples})
    for fam in fams:
        rows = [s for s in samples if id(s) in got_of and s.family == fam]
        by_rule: Counter[str] = Counter()
        decided = correct = decided_alone = 0
        undecided: Counter[str] = Counter()
        shapes: Counter[str] = Counter()
        runs: dict[str, bool] = {}
        runs_alone: dict[str, bool] = {}
        for s in rows:
            alone, got = got_of[id(s)]
            decided_alone += alone is not None
            runs_alone[s.run] = runs_alone.get(s.run, True) and alone is not None
            runs[s.run] = runs.get(s.run, True) and got is not None
            if got is None:
                undecided[_final_program(s.command)] += 1
                shapes[command_shape(s.command)] += 1
                continue
            decided += 1
            by_rule[got[1]] += 1
            correct += s.returncode is not None and got[0] == s.returncode
        has = sum(1 for s in rows if s.returncode is not None)
        out[fam] = {
            "runs": len(runs),
            "runs_all_decided": sum(runs.values()),
            "runs_all_decided_without_files": sum(runs_alone.values()),
            "decided_without_files": decided_alone,
            "undecided_shapes": dict(shapes.most_common(25)),
            "turns": len(rows),
            "recorded": has,
            "decided": decided,
            "correct_of_recorded": correct,
            "coverage": round(decided / max(len(rows), 1), 4),
            "by_rule": dict(by_rule.most_common()),
            "undecided_by_program": dict(undecided.most_common(12)),
        }
    return out


def git_head() -> str:
    try:
        return subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.2f}%"


NOTES = """## Notes

- Groups are independent runs: `gruckion-gemini3` (mini-swe-agent 1.15, Gemini 3 Pro, SWE-bench
  Verified), `ergt10-glm46` (OpenHands CodeAct, GLM-4.6, SWE-bench Lite event stores),
  `wudi-gpt5` (mini-swe-agent 1.17.3, GPT-5 models; added after the rules were written, so a
  held-out check of every rule), `upstream-tests` (the harnesses' own test data). `sweagent` has
  no codes and counts for no rule.
- The run's files: each input's turns are fed in order to a `RunFiles`
  (`pipeline/convert/runfiles.py`), as `convert_turns` feeds it, learning from each turn with the
  code convert would have with the record's codes hidden (a converter's proof, else what the
  enabled rules infer). The "without the run's files" columns are the same rules given none.
- Scripts (`python x.py`) were the bulk of what stayed unknown. With the script's text known (the
  run wrote it with a heredoc or an editor, or displayed it whole), `python_script_known_clean`
  decides 0 when the text calls no exit that could have run (an exit of 0, or one right after a
  constant `print` the output lacks, is allowed) and the output shows no traceback, syntax error,
  crash or argparse report; `python_script_known_traceback` decides 1 from a traceback whose first
  frame is the script's module level when the script prints no tracebacks itself. The remaining
  scripts either call `sys.exit(<computed>)` / `sys.exit(1)` after text the output shows, or were
  never shown. Without the text, `python_clean_output` (all error words excluded) stays under 99%
  and `python_traceback` at 84% (`traceback.print_exc()`; prints flushed after a traceback).
- Before this work (the seven rules enabled at `498bfcc`, no run files) on these same inputs:
  mini 16,336 of 21,371 turns (76.44%), 4 of 682 runs with every turn decided; openhands 1,960 of
  3,300 (59.39%), 13 of 164 runs; sweagent 53 of 93 (56.99%), 12 of 21 runs.
- Rules measured under the bar stay disabled: `cannot_run` (119 decided, 100%, under 200),
  `or_fallback` (259, 100%, one group), `loud_failure` (75), `sympy_test_summary` (one group),
  `shell_syntax_error` (98%), `python_syntax_error` (7).
- SWE-agent CTF demonstrations show `///PROCESS-DONE:N:PROCESS-DONE///` in observations: harness
  decoration that carries the exit code (a recorded code for the parser to take, and text for it
  to strip).
"""


def write_report(result: dict[str, Any], argv: list[str]) -> None:
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "rc_rules.json").write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
    sc, cov = result["score"], result["coverage"]
    groups = sorted({g for t in sc["rules"].values() for g in t["group"]})
    lines = [
        "# Return-code inference rules, measured",
        "",
        f"`{' '.join(argv)}` at commit `{result['commit']}` ({result['seconds']:.0f} s).",
        "",
        f"Samples (turns whose record holds the return code): {sc['totals'].get('all', 0)}; "
        + ", ".join(f"{k.split(':', 1)[1]} {v}" for k, v in sorted(sc["totals"].items()) if ":" in k)
        + ".",
        "",
        f"A rule is enabled when precision >= {rcmod.MIN_PRECISION} on >= {MIN_N} decided samples, and on every"
        f" repo group where it decided >= {MIN_GROUP_N} (at least two such groups).",
        "",
        "| rule | enabled | decided | correct | precision | coverage | "
        + " | ".join(f"{g} (n, prec.)" for g in groups)
        + " |",
        "|---|---|---|---|---|---|" + "---|" * len(groups),
    ]
    for r in rcmod.RULES:
        t = sc["rules"][r.name]
        a = t["all"]
        cells = [
            f"{t['group'][g]['decided']}, {pct(t['group'][g]['precision'])}" if g in t["group"] else "0"
            for g in groups
        ]
        lines.append(
            f"| `{r.name}` | {'yes' if t['passes'] else 'no'} | {a['decided']} | {a['correct']} | {pct(a['precision'])}"
            f" | {pct(a['coverage'])} | " + " | ".join(cells) + " |"
        )
    lines += ["", "Per source family (decided, precision, coverage of the family's samples):", ""]
    fams = sorted({f for t in sc["rules"].values() for f in t["family"]})
    lines += ["| rule | " + " | ".join(fams) + " |", "|---|" + "---|" * len(fams)]
    for r in rcmod.RULES:
        t = sc["rules"][r.name]
        cells = [
            f"{t['family'][f]['decided']}, {pct(t['family'][f]['precision'])}, {pct(t['family'][f]['coverage'])}"
            if f in t["family"]
            else "0"
            for f in fams
        ]
        lines.append(f"| `{r.name}` | " + " | ".join(cells) + " |")
    lines += ["", "`loud_success` per class of its final program (decided, correct):", ""]
    lines += [
        f"- {k}: {v.get('decided', 0)}, {v.get('correct', 0)}" for k, v in sc["loud_success_by_class"].items()
    ]
    lines += [
        "",
        f"Samples where two rules (enabled or not) disagree: {len(sc['conflicts'])} (first 20 in the json).",
    ]
    lines += ["", "## `infer_returncode` (enabled rules, first that decides) per family", ""]
    lines += [
        "| family | command turns | with a recorded code | decided | correct (of recorded) | coverage | decided without the run's files | runs | runs with every such turn decided | without the run's files |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for fam, c in cov.items():
        lines.append(
            f"| {fam} | {c['turns']} | {c['recorded']} | {c['decided']} | {c['correct_of_recorded']} | {pct(c['coverage'])}"
            f" | {c['decided_without_files']} | {c['runs']} | {c['runs_all_decided']} | {c['runs_all_decided_without_files']} |"
        )
    lines += [
        "",
        "For mini-swe-agent and OpenHands the turns are every command turn with its code hidden; for SWE-agent,",
        "the command turns convert has no code for (the windowed tools' converters prove theirs).",
    ]
    lines += ["", "Decisions per rule:", ""]
    for fam, c in cov.items():
        lines.append(f"- {fam}: " + ", ".join(f"`{k}` {v}" for k, v in c["by_rule"].items()))
    lines += ["", "Undecided turns by final program (`?`: a shape the rules leave alone):", ""]
    for fam, c in cov.items():
        lines.append(f"- {fam}: " + ", ".join(f"`{k}` {v}" for k, v in c["undecided_by_program"].items()))
    lines += ["", "Undecided turns by command shape (programs, first word, operators), top 25:", ""]
    for fam, c in cov.items():
        lines.append(f"- {fam}: " + ", ".join(f"`{k}` {v}" for k, v in c["undecided_shapes"].items()))
    lines += ["", NOTES]
    lines += ["", "## Wrong decisions (up to 8 per rule)", ""]
    for r in rcmod.RULES:
        wrong = sc["rules"][r.name]["wrong"]
        if wrong:
            lines.append(f"- `{r.name}`:")
            for w in wrong:
                lines.append(
                    f"  - {w['source']}: `{w['program']}`, recorded {w['recorded']}, inferred {w['inferred']}"
                )
    lines += [
        "",
        "## Inputs",
        "",
        "Rebuilt from the mirrors the manifest (`bench/rc_rules_manifest.json`) names:",
        "",
    ]
    for k, v in result["inputs"].items():
        lines.append(f"- {k}: {v} inputs")
    (RESULTS / "rc_rules.md").write_text("\n".join(lines) + "\n")


def load_samples(args: argparse.Namespace) -> list[Sample]:
    cache = Path(args.cache) if args.cache else None
    if cache and cache.exists():
        return [Sample(**json.loads(ln)) for ln in cache.read_text().splitlines()]
    manifest = json.loads(MANIFEST.read_text())
    samples: list[Sample] = []
    with tempfile.TemporaryDirectory() as tmp:
        for row, data in inputs(manifest, Path(args.mirrors)):
            samples.extend(samples_of(row, data, Path(tmp)))
    if cache:
        cache.parent.mkdir(parents=True, exist_ok=True)
        cache.write_text("".join(json.dumps(s.__dict__) + "\n" for s in samples))
    return samples


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mirrors", default="/work/.mirror")
    ap.add_argument(
        "--build-manifest", action="store_true", help="list the mirrors' inputs into the manifest"
    )
    ap.add_argument("--cache", help="samples cache (JSONL, outside the repo); read if present")
    ap.add_argument("--write-table", action="store_true", help="rewrite the module's MEASURED table")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    if args.build_manifest:
        rows = build_manifest(Path(args.mirrors))
        MANIFEST.write_text("[\n" + ",\n".join(json.dumps(r, sort_keys=True) for r in rows) + "\n]\n")
        print(f"{len(rows)} inputs -> {MANIFEST}")
        return
    samples = load_samples(args)
    manifest = json.loads(MANIFEST.read_text())
    sc = score(samples)
    enabled = {name for name, t in sc["rules"].items() if t["passes"]}
    if args.write_table:
        write_table(sc)
    elif enabled != set(rcmod.ENABLED):
        print(
            f"note: the module's table is stale: passing now {sorted(enabled)}, enabled {sorted(rcmod.ENABLED)}"
        )
    result = {
        "commit": git_head(),
        "score": sc,
        "enabled": sorted(enabled),
        "coverage": coverage(samples, enabled),
        "inputs": dict(Counter(f"{r['group']} ({r['repo']}@{r['commit'][:10]})" for r in manifest)),
        "seconds": time.perf_counter() - t0,
    }
    write_report(result, ["bench/rc_rules.py", *(argv if argv is not None else sys.argv[1:])])
    for r in rcmod.RULES:
        a = result["score"]["rules"][r.name]["all"]
        print(
            f"{r.name:32} {'ON ' if result['score']['rules'][r.name]['passes'] else 'off'} n={a['decided']:6} prec={pct(a['precision'])}"
        )
    for fam, c in result["coverage"].items():
        print(f"coverage {fam}: {c['decided']}/{c['turns']} = {pct(c['coverage'])}")


if __name__ == "__main__":
    main()
