"""History reads confirmed by what the run then writes: the labelled repro run (a ``git log --all -p
--grep`` whose diff the run types in, cut by the step limit) dropped end to end, and the same run with
its read in every other form and behind every compound shell form, each with a twin that types
something else (kept, its attempt counted)."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from typer.testing import CliRunner

from pipeline.cli import app
from pipeline.orchestration.process import run_steps
from pipeline.parsers.files import iter_trajectory_file
from pipeline.stages import STEPS
from pipeline.stages.leaks import SolutionLeak
from tests.builders import ctx, work_frame
from tests.builders import run_row as work_row

L1 = Path(__file__).resolve().parent / "fixtures" / "repro" / "L1-history-read-then-written"
CHUNK = L1 / "affine" / "views" / "duel_turns@v4" / "chunks" / "view_0084_0000.jsonl.gz"
READ_TURN, WRITE_TURN = 22, 25
SHA = "ba3c8250f24aa9e38a34f879e84dad9ccdf0ce4e"
PATH = "src/batchingot/token.py"
OLD = "    return segment_list[:11]"
NEW = "    return segment_list[:11] if record is None else segment_list[:record]"


def test_the_repro_run_is_dropped_as_a_git_history_leak_and_audit_explains_why(tmp_path: Path) -> None:
    work = tmp_path / "w"
    res = CliRunner().invoke(
        app,
        ["run", "--affine", str(L1 / "affine"), "--no-benchmarks", "--workdir", str(work), "--workers", "1"],
    )
    assert res.exit_code == 0, res.output
    assert "ingested 1 = published 0 + dropped 1 + quarantined 0" in res.output
    drops = pl.read_parquet(work / "ledger" / "drops.parquet")
    assert drops.select("stage", "reason").rows() == [("solution_leak", "git_history")]
    res = CliRunner().invoke(
        app, ["audit", "--workdir", str(work), "--explain", "view_0084_0000.jsonl.gz#L1"]
    )
    assert res.exit_code == 0, res.output
    assert "dropped by solution_leak: git_history" in res.output
    assert "turn=22 write_turn=25 lines=1/1" in res.output
    assert NEW.strip() in res.output and "git log --all -p --grep='inbox' -n 3" in res.output


# ----------------------------------------------------------------------------- the run, varied


def repro_row() -> dict[str, Any]:
    """The repro run as the pipeline converts it (the WORK row the leak stage reads)."""
    read = [step(ctx()) for step in STEPS if step.name in ("quarantine", "parse", "convert", "verify")]
    batch, _, _ = run_steps(read, list(iter_trajectory_file(CHUNK)))
    assert batch.height == 1
    row: dict[str, Any] = batch.row(0, named=True)
    assert row["commands"][READ_TURN].startswith("git log --all -p")
    assert f"old = {OLD!r}" in row["commands"][WRITE_TURN]
    return row


ROW = repro_row()
HUNK = ROW["outputs"][READ_TURN][ROW["outputs"][READ_TURN].index("diff --git") :]
LOG_P = ROW["outputs"][READ_TURN]
SHOW = LOG_P  # ``git show SHA`` prints the same commit header and diff
DIFF = HUNK
FIXED_FILE = next(o for o in ROW["outputs"] if o.startswith('"""Loader unit helpers."""')).replace(
    OLD, NEW, 1
)
CHERRY = "[main 7f3e2a1] Fix inbox_dune ignoring record\n Date: Tue Mar 4 10:12:55 2025 +0100\n 1 file changed, 1 insertion(+), 1 deletion(-)\n"
GIT_DIFF_AFTER = (
    f"diff --git a/{PATH} b/{PATH}\nindex 34ae118..d043589 100644\n--- a/{PATH}\n+++ b/{PATH}\n"
    "@@ -118,4 +118,4 @@ def inbox_dune(scope, record=None):\n         return []\n"
    "     segment_list = [x for x in scope if x is not None]\n"
    f"-{OLD}\n+{NEW}\n \n \n"
)


def varied(
    read: str | None = None,
    output: str | None = None,
    *,
    new: str = NEW,
    extra: list[tuple[int, str, str]] | None = None,
) -> dict[str, Any]:
    """The repro row with its history read (command, output) replaced, its edit writing ``new``,
    and ``extra`` (turn, command, output) turns inserted after the read."""
    row = {k: (list(v) if isinstance(v, list) else v) for k, v in ROW.items()}
    if read is not None:
        row["commands"][READ_TURN] = read
    if output is not None:
        row["outputs"][READ_TURN] = output
    if new != NEW:
        row["commands"][WRITE_TURN] = row["commands"][WRITE_TURN].replace(repr(NEW), repr(new))
    for turn, cmd, out in reversed(extra or []):
        row["commands"].insert(turn, cmd)
        row["outputs"].insert(turn, out)
        row["returncodes"].insert(turn, 0)
    return row


def verdict(row: dict[str, Any]) -> tuple[str | None, list[str]]:
    out = SolutionLeak(ctx())(pl.DataFrame([row], schema=pl.DataFrame([ROW]).schema))
    reason = out.dropped["reason"][0] if out.dropped.height else None
    return reason, sorted(k.split("/", 1)[1] for k in out.counters if k.startswith("solution_leak_attempt/"))


READS: list[tuple[str, str, str]] = [
    # (read command, its output, the kind it is dropped as)
    ("git log --all -p --grep='inbox' -n 3", LOG_P, "git_history"),
    ("git log --all -S 'segment_list[:record]' -p", LOG_P, "git_history"),
    ("git log --all -G 'segment_list\\[' -p -- src/", LOG_P, "git_history"),
    ("git log --branches -p -n 2", LOG_P, "git_history"),
    ("git log --remotes -p -n 2", LOG_P, "git_history"),
    ("git log --tags -p -n 2", LOG_P, "git_history"),
    ("git log origin/fix-inbox -p -n 1", LOG_P, "git_history"),
    ("git log v3.20.0 -p -n 1 -- src/batchingot/token.py", LOG_P, "git_history"),
    ("git reflog -p -n 3", LOG_P, "git_history"),
    ("git log -g -p -n 3", LOG_P, "git_history"),
    ("git whatchanged --all -p -n 3", LOG_P, "git_history"),
    (f"git show {SHA[:7]}", SHOW, "foreign_object"),
    (f"git show {SHA}", SHOW, "foreign_object"),
    (f"git show {SHA[:10]}:{PATH}", FIXED_FILE, "foreign_object"),
    (f"git show origin/fix-inbox:{PATH}", FIXED_FILE, "foreign_object"),
    (f"git show v3.20.0:{PATH}", FIXED_FILE, "foreign_object"),
    (f"git diff HEAD {SHA[:7]}", DIFF, "foreign_object"),
    (f"git diff {SHA[:7]}~1 {SHA[:7]} -- {PATH}", DIFF, "foreign_object"),
    ("git diff HEAD origin/fix-inbox", DIFF, "foreign_object"),
    ("git stash show -p", DIFF, "foreign_object"),
    ("git stash show -p stash@{0}", DIFF, "foreign_object"),
    (
        f"git format-patch -1 {SHA[:7]} --stdout",
        "From " + SHA + " Mon Sep 17 00:00:00 2001\n" + DIFF,
        "foreign_object",
    ),
    (f"git cat-file -p {SHA[:7]}:{PATH}", FIXED_FILE, "foreign_object"),
]


@pytest.mark.parametrize(("read", "output", "kind"), READS, ids=[r[0][:40] for r in READS])
def test_every_history_read_form_then_typed_in_is_dropped(read: str, output: str, kind: str) -> None:
    assert verdict(varied(read, output)) == (kind, [])


@pytest.mark.parametrize(("read", "output", "kind"), READS, ids=[r[0][:40] for r in READS])
def test_the_same_read_then_typing_something_else_is_kept_and_counted(
    read: str, output: str, kind: str
) -> None:
    other = "    return list(segment_list)[: record or 11]"
    assert verdict(varied(read, output, new=other)) == (None, [kind])


# Every compound form around the read; the output is what the read printed.
COMPOUND = [
    "if [ -d .git ]; then {r}; fi",
    "if true\nthen\n  {r}\nfi",
    "if false; then :; else {r}; fi",
    "for f in src/batchingot/token.py; do {r}; done",
    "while true; do {r}; break; done",
    "until {r}; do :; done",
    "case x in x) {r};; esac",
    "{{ {r}; }}",
    "{{ {r}; }} 2>&1 | head -100",
    "( cd /testbed && {r} )",
    'echo "$({r})"',
    'out=$({r}); echo "$out"',
    "echo `{r}`",
    "bash -c {q}",
    "sh -c {q}",
    "timeout 30 bash -lc {q} | cat",
    "eval {q}",
    "show() {{ {r}; }}; show",
    "function show {{\n  {r}\n}}\nshow",
    "{r} \\\n  | head -100",
    "cat <<'EOF' > /tmp/notes.txt\nlooking at history\nEOF\n{r}",
]


@pytest.mark.parametrize("form", COMPOUND)
def test_a_history_read_inside_any_compound_command_is_seen(form: str) -> None:
    read = "git log --all -p --grep=inbox -n 3"
    cmd = form.format(r=read, q=shlex.quote(read))
    assert verdict(varied(cmd)) == ("git_history", [])
    assert verdict(varied(cmd, new="    return list(segment_list)[: record or 11]")) == (
        None,
        ["git_history"],
    )


def test_xargs_show_of_listed_commits_is_seen() -> None:
    cmd = "git rev-list --all --grep=inbox | head -1 | xargs git show"
    assert verdict(varied(cmd, SHOW)) == ("git_history", [])


def test_a_cherry_pick_of_a_commit_the_run_did_not_make_is_a_leak_once_it_applied() -> None:
    pick = varied(
        "git log --all --oneline --grep=inbox",
        f"{SHA[:7]} Fix inbox_dune ignoring record\n",
        extra=[(READ_TURN + 1, f"git cherry-pick {SHA[:7]}", CHERRY)],
    )
    assert verdict(pick) == ("foreign_object", [])
    failed = varied(
        "git log --all --oneline --grep=inbox",
        f"{SHA[:7]} Fix inbox_dune ignoring record\n",
        extra=[(READ_TURN + 1, f"git cherry-pick {SHA[:7]}", f"fatal: bad revision '{SHA[:7]}'\n")],
    )
    assert verdict(failed) == (None, ["foreign_object", "git_history"])


def test_a_checkout_of_a_file_from_a_foreign_commit_is_a_leak_when_its_lines_reach_the_diff() -> None:
    took = varied(
        "git log --all --oneline --grep=inbox",
        f"{SHA[:7]} Fix inbox_dune ignoring record\n",
        extra=[
            (READ_TURN + 1, f"git checkout {SHA[:7]} -- {PATH}", f"Updated 1 path from {SHA[:7]}\n"),
            (READ_TURN + 2, "git diff", GIT_DIFF_AFTER),
        ],
        new="    return list(segment_list)[: record or 11]",
    )
    assert verdict(took) == ("foreign_object", [])
    # the run's own stash, applied again: its lines are the run's own typing
    own = varied(
        "git stash",
        "Saved working directory and index state WIP on main: 34ae118 Start\n",
        extra=[
            (READ_TURN + 1, "git stash pop", "On branch main\nChanges not staged for commit:\n"),
            (READ_TURN + 2, "git diff", GIT_DIFF_AFTER),
        ],
    )
    own["commands"].insert(READ_TURN, f"sed -i 's/{OLD.strip()}/{NEW.strip()}/' {PATH}")
    own["outputs"].insert(READ_TURN, "")
    own["returncodes"].insert(READ_TURN, 0)
    assert verdict(own) == (None, [])


def test_a_clone_the_task_itself_asks_for_is_its_checkout_not_a_leak() -> None:
    """A task that starts with no checkout (containerise, package or set up a repository) asks for the
    clone; the same clone in a task that gives a checkout fetches upstream: a leak."""
    clone = "git clone https://github.com/BurntSushi/ripgrep.git agent-result/BurntSushi-ripgrep/cloned_repo"
    out = "Cloning into 'agent-result/BurntSushi-ripgrep/cloned_repo'...\nReceiving objects: 100% (1/1), done.\n"
    asked = (
        "Please create a Dockerfile for this GitHub repository: BurntSushi/ripgrep\n"
        "1. Clone the repository using git clone under the agent-result/$repo_folder_name/cloned_repo directory"
    )
    for statement, want in ((asked, (None, [])), ("Fix the bug in the searcher.", ("network_fetch", []))):
        row = work_row(
            [clone, "ls agent-result"], [out, "cloned_repo\n"], problem_statement=statement, patch=""
        )
        res = SolutionLeak(ctx())(work_frame([row]))
        attempts = sorted(k for k in res.counters if k.startswith("solution_leak_attempt/"))
        got = (res.dropped["reason"][0] if res.dropped.height else None, attempts)
        assert got == want


def test_pip_naming_the_tasks_own_package_as_installed_confirms_despite_another_commands_error() -> None:
    """``pip install erfa; pip install --no-deps astropy``: the first pip's ERROR lines do not hide that
    the second installed the task's own package (a release with the fix in it)."""
    cmd = "pip install erfa 2>&1; pip install --no-deps astropy 2>&1 | tail -5"
    out = (
        "ERROR: Could not find a version that satisfies the requirement erfa (from versions: none)\n"
        "ERROR: No matching distribution found for erfa\nInstalling collected packages: astropy\n"
        "Successfully installed astropy-7.2.0\n"
    )
    cases = (
        ("astropy-7.2.0", ("package_fetch", [])),
        ("astropy-iers-data-0.2026.6", (None, ["solution_leak_attempt/package_fetch"])),
    )
    for installed, want in cases:
        row = work_row([cmd], [out.replace("astropy-7.2.0", installed)], instance_id="astropy__astropy-12907")
        row["repo"] = "astropy/astropy"
        res = SolutionLeak(ctx())(work_frame([row]))
        attempts = sorted(k for k in res.counters if k.startswith("solution_leak_attempt/"))
        got = (res.dropped["reason"][0] if res.dropped.height else None, attempts)
        assert got == want


def test_a_commit_a_plain_git_log_listed_is_the_runs_own_history() -> None:
    """``git show SHA`` of a commit a plain ``git log`` printed is an ancestor of the checkout: no attempt;
    the same sha listed by ``git log --all`` may be a future commit: a foreign-object attempt."""
    show = f"commit {SHA}\nAuthor: a <a@x>\n\n    Older work\n\n{HUNK.replace(NEW, '    return list(segment_list)')}"
    for listing, want in (
        ("git log --oneline -5", (None, [])),
        ("git log --all --oneline -5", (None, ["foreign_object", "git_history"])),
    ):
        row = varied(
            listing,
            f"{SHA[:7]} Older work\n0a1b2c3 Start\n",
            extra=[(READ_TURN + 1, f"git show {SHA[:7]}", show)],
            new="    return list(segment_list)[: record or 11]",
        )
        assert verdict(row) == want


@pytest.mark.parametrize(
    ("read", "want"),
    [
        (f"git show {SHA[:7]}:{PATH} > {PATH}", ("foreign_object", [])),
        (f"git show {SHA[:7]} | git apply", ("foreign_object", [])),
        (f"git diff HEAD {SHA[:7]} -- {PATH} | patch -p1", ("foreign_object", [])),
        (f"git format-patch -1 {SHA[:7]} --stdout | git am", ("foreign_object", [])),
        # the checkout's parent is its own past: the file it restores holds no fix
        (f"git show HEAD~1:{PATH} > {PATH}", (None, ["foreign_object", "git_history"])),
        # printed, not written: the run types nothing from it, so nothing confirms
        (f"git show {SHA[:7]}:{PATH} | head -5", (None, ["foreign_object", "git_history"])),
    ],
)
def test_a_foreign_object_written_into_the_tree_by_a_redirect_or_a_pipe_is_a_leak(
    read: str, want: tuple[str | None, list[str]]
) -> None:
    row = varied(
        "git log --all --oneline --grep=inbox",
        f"{SHA[:7]} Fix inbox_dune ignoring record\n",
        extra=[(READ_TURN + 1, read, ""), (READ_TURN + 2, "git diff", GIT_DIFF_AFTER)],
        new="    return list(segment_list)[: record or 11]",
    )
    assert verdict(row) == want


def test_a_pull_request_diff_read_with_githubs_cli_then_typed_in_is_a_leak() -> None:
    read = "gh pr diff 7101 -R glyphworks/batchingot"
    assert verdict(varied(read, HUNK)) == ("network_fetch", [])
    assert verdict(varied(read, "HTTP 404: Not Found (https://api.github.com/graphql)\n")) == (
        None,
        ["network_fetch"],
    )
    assert verdict(varied("gh auth status", "You are not logged into any GitHub hosts.\n")) == (None, [])
