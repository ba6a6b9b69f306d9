"""Solution-leak and benchmark-leak stages: labelled runs for every rule and every benign look-alike."""

from __future__ import annotations

import json

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.leaks.ngrams import token_hashes, token_hashes_regex
from pipeline.leaks.rules import maybe_attempt
from pipeline.stages.leaks import BenchmarkLeak, SolutionLeak
from pipeline.text.shell import PLAIN, shlex_split, split_command
from tests.builders import SUBMIT, ctx, work_frame
from tests.builders import run_row as work_row
from tests.conftest import BENCH, REAL

GOLD = """diff --git a/src/widget/core.py b/src/widget/core.py
--- a/src/widget/core.py
+++ b/src/widget/core.py
@@ -10,7 +10,9 @@ def render(frame):
-    width = frame.width
-    return layout(frame, width)
+    width = frame.width if frame.width is not None else default_width(frame)
+    height = clamp_height(frame.height, minimum=frame.min_height)
+    return layout(frame, width, height=height)
"""
FIXED_LINES = (
    "+    width = frame.width if frame.width is not None else default_width(frame)\n"
    "+    height = clamp_height(frame.height, minimum=frame.min_height)\n"
    "+    return layout(frame, width, height=height)\n"
)
SHOW_FIX = (
    "commit a11f950e2d4c1b3a5f6e7d8c9b0a1f2e3d4c5b6a\nAuthor: dev <dev@x>\n\n    Fix render width (#4738)\n\n"
    + GOLD
)
BASE = "0123456789abcdef0123456789abcdef01234567"


def leak_run(commands: list[str], outputs: list[str], **kw: object) -> dict[str, object]:
    kw.setdefault("instance_id", "acme__widget-4738")
    kw.setdefault("patch", GOLD)
    kw.setdefault("base_commit", BASE)
    return work_row([*commands, SUBMIT], [*outputs, ""], **kw)


def run_solution(*rows: dict[str, object]):
    return SolutionLeak(ctx())(work_frame(list(rows)))


def one(row: dict[str, object]) -> tuple[str | None, str, dict[str, int]]:
    out = run_solution(row)
    if out.dropped.height:
        d = out.dropped.row(0, named=True)
        assert d["stage"] == "solution_leak"
        return d["reason"], d["detail"], dict(out.counters)
    return None, "", dict(out.counters)


# ---- rules that drop when the observation delivered the fix ---------------------------------------------

CONFIRMED: list[tuple[str, list[str], list[str], str]] = [
    # SWE-bench#581: git log --all --grep='#4738' -> git show a11f950 -> verbatim gold patch.
    (
        "swebench_581_chain",
        ["git log --all --grep='#4738' --oneline", "git show a11f950"],
        ["a11f950 Fix render width (#4738)\n", SHOW_FIX],
        "git_history",
    ),
    # mini-swe-agent#787: pickaxe search; the listing names the task's PR.
    (
        "pickaxe_pr_number",
        ["cd /testbed && git log -S default_width --oneline | head -5"],
        ["a11f950 Fix render width (#4738)\n"],
        "git_history",
    ),
    (
        "git_branch_all_then_show",
        ["git branch -a", "git show origin/fix-4738:src/widget/core.py"],
        [
            "* main\n  remotes/origin/fix-4738\n",
            "def render(frame):\n    width = frame.width if frame.width is not None else default_width(frame)\n"
            "    height = clamp_height(frame.height, minimum=frame.min_height)\n"
            "    return layout(frame, width, height=height)\n",
        ],
        "foreign_object",
    ),
    ("git_show_sha", ["git show a11f950 -- src/widget/core.py"], [SHOW_FIX], "foreign_object"),
    ("git_diff_tag", ["git diff v2.1.0 v2.2.0 -- src/widget"], [GOLD], "foreign_object"),
    ("git_cat_file", ["git cat-file -p 9f8e7d6c"], [FIXED_LINES.replace("+", "")], "foreign_object"),
    ("format_patch", ["git format-patch -1 a11f950 --stdout"], [SHOW_FIX], "foreign_object"),
    ("checkout_sha_file_then_submit", ["git checkout a11f950 -- src/widget/core.py"], [""], "foreign_object"),
    ("restore_source", ["git restore --source=origin/main src/widget/core.py"], [""], "foreign_object"),
    (
        "cherry_pick",
        ["git cherry-pick a11f950"],
        ["[main 5d4c3b2] Fix render width (#4738)\n"],
        "foreign_object",
    ),
    (
        "curl_raw",
        ["curl -sL https://raw.githubusercontent.com/acme/widget/main/src/widget/core.py"],
        [
            "def render(frame):\n    width = frame.width if frame.width is not None else default_width(frame)\n"
        ],
        "network_fetch",
    ),
    (
        "curl_patch_url",
        ["wget -qO- https://github.com/acme/widget/pull/4738.patch"],
        [SHOW_FIX],
        "network_fetch",
    ),
    (
        "api_github",
        ["curl https://api.github.com/repos/acme/widget/pulls/4738/files"],
        ['[{"filename": "src/widget/core.py", "patch": "@@ -10,7 +10,9 @@"}]'],
        "network_fetch",
    ),
    (
        "python_requests_heredoc",
        [
            "python3 - <<'EOF'\nimport requests\nprint(requests.get('https://api.github.com/repos/acme/widget/commits').text)\nEOF"
        ],
        ['[{"sha": "a11f950", "commit": {"message": "Fix render width"}}]'],
        "network_fetch",
    ),
    (
        "git_fetch_upstream",
        ["git remote add upstream https://github.com/acme/widget.git && git fetch upstream"],
        ["From https://github.com/acme/widget\n * [new branch]      main       -> upstream/main\n"],
        "network_fetch",
    ),
    (
        "git_clone",
        ["git clone https://github.com/acme/widget /tmp/w"],
        ["Cloning into '/tmp/w'...\n"],
        "network_fetch",
    ),
    (
        "pip_download",
        ["pip download widget==2.2.0 --no-deps -d /tmp/p"],
        ["Collecting widget==2.2.0\nSaved /tmp/p/widget-2.2.0.tar.gz\nSuccessfully downloaded widget\n"],
        "package_fetch",
    ),
    (
        "pip_git_plus",
        ["pip install git+https://github.com/acme/widget@main"],
        ["Successfully installed widget-2.3.0.dev0\n"],
        "package_fetch",
    ),
    (
        "pip_upgrade_own",
        ["python -m pip install -U widget"],
        ["Successfully installed widget-2.2.0\n"],
        "package_fetch",
    ),
    (
        "site_packages_cat",
        ["cat /usr/local/lib/python3.11/site-packages/widget/core.py | sed -n 1,40p"],
        [
            "def render(frame):\n    width = frame.width if frame.width is not None else default_width(frame)\n"
            "    height = clamp_height(frame.height, minimum=frame.min_height)\n"
        ],
        "site_packages",
    ),
    (
        "site_packages_cp",
        ["cp /usr/lib/python3/dist-packages/widget/core.py src/widget/core.py"],
        [""],
        "site_packages",
    ),
]


@pytest.mark.parametrize(("cmds", "outs", "kind"), [c[1:] for c in CONFIRMED], ids=[c[0] for c in CONFIRMED])
def test_confirmed_leaks_are_dropped(cmds: list[str], outs: list[str], kind: str) -> None:
    row = leak_run(cmds, outs)
    if cmds[0].startswith(("git checkout", "git restore", "git cherry-pick")):
        # These print nothing useful: the foreign object landed in the tree, so the submitted diff has the fix.
        row["outputs"][-1] = GOLD
    reason, detail, _ = one(row)
    assert reason == kind
    assert detail.startswith("turn=")
    turn = int(detail.split()[0].split("=")[1])
    assert detail == f"turn={turn} cmd={row['commands'][turn][:200]}"


def test_detail_names_the_turn_that_delivered() -> None:
    row = leak_run(
        ["ls", "git log --all --oneline", "git show a11f950"],
        ["src\n", "a11f950 Fix render width\n5e6f7a8 Initial\n", SHOW_FIX],
    )
    reason, detail, _ = one(row)
    assert (reason, detail) == ("foreign_object", "turn=2 cmd=git show a11f950")


# ---- SWE-smith: the Bug Patch commit, on the real pandas sample ---------------------


@pytest.fixture
def pandas_task() -> dict[str, object]:
    p = REAL / "swesmith-task-instance-pandas-pr_53652.json"
    return json.loads(p.read_text())


def _bug_show(task: dict[str, object], subject: str) -> str:
    return f"commit 7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b\nAuthor: swesmith <s@x>\n\n    {subject}\n\n{task['patch']}"


@pytest.mark.parametrize("cmd", ["git show HEAD~1", "git diff HEAD~2 HEAD~1", "git log -p -3"])
def test_swesmith_bug_patch_shown_is_dropped(pandas_task: dict[str, object], cmd: str) -> None:
    row = leak_run(
        [cmd],
        [_bug_show(pandas_task, "Bug Patch")],
        instance_id=pandas_task["instance_id"],
        repo="pandas-dev__pandas",
        patch=pandas_task["patch"],
        base_commit="",
    )
    assert one(row)[0] == "bug_patch"


def test_swesmith_show_head_revealing_removed_f2p_tests_is_dropped(pandas_task: dict[str, object]) -> None:
    tests = "diff --git a/pandas/tests/test_x.py b/pandas/tests/test_x.py\ndeleted file mode 100644\n-def test_a():\n"
    row = leak_run(
        ["git show HEAD"],
        [_bug_show(pandas_task, "Remove F2P Tests").split("\n\ndiff")[0] + "\n\n" + tests],
        instance_id=pandas_task["instance_id"],
        patch=pandas_task["patch"],
        base_commit="",
    )
    assert one(row)[0] == "bug_patch"


def test_swesmith_reverse_of_bug_patch_via_parent_file(pandas_task: dict[str, object]) -> None:
    """`git show HEAD~2:file` prints the pre-bug code: the patch's REMOVED lines are the fix."""
    original = "\n".join(
        line[1:]
        for line in str(pandas_task["patch"]).splitlines()
        if line.startswith("-") and not line.startswith("---")
    )
    row = leak_run(
        ["git show HEAD~2:pandas/core/indexes/base.py"],
        [original],
        instance_id=pandas_task["instance_id"],
        patch=pandas_task["patch"],
        base_commit="",
    )
    assert one(row)[0] == "bug_patch"


def test_swesmith_oneline_listing_only_is_an_attempt(pandas_task: dict[str, object]) -> None:
    row = leak_run(
        ["git log --oneline -5"],
        ["9f8e7d6 Remove F2P Tests\n7a6b5c4 Bug Patch\n0a1b2c3 Initial\n"],
        instance_id=pandas_task["instance_id"],
        patch=pandas_task["patch"],
        base_commit="",
    )
    reason, _, counters = one(row)
    assert reason is None
    assert counters == {"solution_leak_attempt/bug_patch": 1}


# ---- attempted but unconfirmed: kept, counted ------------------------------------------------------------

ATTEMPTS: list[tuple[str, list[str], list[str], str]] = [
    ("log_all_unrelated", ["git log --all --oneline | head"], ["5e6f7a8 Initial import\n"], "git_history"),
    ("reflog", ["git reflog"], ["0123456 HEAD@{0}: clone: from /src\n"], "git_history"),
    (
        "show_sha_unrelated",
        ["git show 5e6f7a8"],
        ["commit 5e6f7a8\n\n    docs: typo\n\n-teh\n+the\n"],
        "foreign_object",
    ),
    (
        "curl_404",
        ["curl -s https://raw.githubusercontent.com/acme/widget/main/x.py"],
        ["404: Not Found"],
        "network_fetch",
    ),
    (
        "no_network",
        ["git fetch origin"],
        ["fatal: unable to access 'https://github.com/acme/widget/': Could not resolve host: github.com\n"],
        "network_fetch",
    ),
    (
        "pip_download_failed",
        ["pip download widget"],
        ["ERROR: Could not find a version that satisfies\n"],
        "package_fetch",
    ),
    (
        "site_packages_missing",
        ["cat /usr/lib/python3/site-packages/widget/core.py"],
        ["cat: /usr/lib/python3/site-packages/widget/core.py: No such file or directory\n"],
        "site_packages",
    ),
]


@pytest.mark.parametrize(("cmds", "outs", "kind"), [c[1:] for c in ATTEMPTS], ids=[c[0] for c in ATTEMPTS])
def test_unconfirmed_attempts_are_kept_and_counted(cmds: list[str], outs: list[str], kind: str) -> None:
    reason, _, counters = one(leak_run(cmds, outs))
    assert reason is None
    assert counters == {f"solution_leak_attempt/{kind}": 1}


# ---- benign look-alikes: kept, nothing counted -----------------------------------------------------------

BENIGN: list[tuple[str, list[str], list[str]]] = [
    ("git_status", ["git status"], ["On branch main\nnothing to commit\n"]),
    ("git_diff_own", ["git diff", "git diff HEAD -- src/widget/core.py"], [GOLD, GOLD]),
    ("git_diff_cached", ["git add -A && git diff --cached"], [GOLD]),
    ("git_log_n3", ["git log -n 3"], ["commit 0123456\nAuthor: a\n\n    Initial\n"]),
    ("git_log_oneline5", ["cd /testbed && git log --oneline -5"], ["0123456 Initial\n"]),
    ("git_show_head", ["git show HEAD --stat"], ["commit 0123456\n\n    Initial\n\n src/a.py | 2 +-\n"]),
    ("git_show_base_sha", [f"git show {BASE[:10]}"], [SHOW_FIX]),
    (
        "git_stash",
        ["git stash && python -m pytest -q && git stash pop"],
        ["Saved working directory\n1 passed\n"],
    ),
    ("pip_install_editable", ["pip install -e ."], ["Successfully installed widget-2.1.0\n"]),
    (
        "pip_install_dependency",
        ["pip install pytest==8.0 hypothesis"],
        ["Successfully installed pytest-8.0\n"],
    ),
    ("curl_localhost", ["curl -s http://localhost:8000/api/render"], ['{"width": 10}']),
    (
        "site_packages_dependency",
        ["cat /usr/lib/python3/site-packages/numpy/core/numeric.py | head"],
        ["def zeros_like(a):\n"],
    ),
    (
        "own_commit_then_show",
        ["git commit -am wip", "git show 5d4c3b2"],
        ["[main 5d4c3b2] wip\n 1 file changed\n", SHOW_FIX],
    ),
    ("checkout_file", ["git checkout -- src/widget/core.py"], [""]),
    ("clone_local", ["git clone /testbed /tmp/copy"], ["Cloning into '/tmp/copy'...\ndone.\n"]),
    (
        "heredoc_edit_mentions_git",
        [
            "python3 - <<'EOF'\nfrom pathlib import Path\np = Path('README.md')\n"
            "p.write_text(p.read_text().replace('old', 'run git log --all and curl https://github.com/x'))\nEOF"
        ],
        [""],
    ),
    ("grep_for_pip", ["grep -rn 'pip download' docs/"], ["docs/install.rst:3:pip download widget\n"]),
]


@pytest.mark.parametrize(("cmds", "outs"), [c[1:] for c in BENIGN], ids=[c[0] for c in BENIGN])
def test_benign_lookalikes_are_kept_and_not_counted(cmds: list[str], outs: list[str]) -> None:
    reason, _, counters = one(leak_run(cmds, outs))
    assert reason is None
    assert counters == {}


def test_batch_mixes_kept_and_dropped_in_order() -> None:
    rows = [
        leak_run(["ls"], ["a\n"], source_uid="u0"),
        leak_run(["git show a11f950"], [SHOW_FIX], source_uid="u1"),
        leak_run(["git status"], ["clean\n"], source_uid="u2"),
    ]
    out = run_solution(*rows)
    assert out.kept["source_uid"].to_list() == ["u0", "u2"]
    assert out.dropped.select("source_uid", "stage", "reason").rows() == [
        ("u1", "solution_leak", "foreign_object")
    ]
    assert out.counters["solution_leak/foreign_object"] == 1


def test_split_command_peels_wrappers() -> None:
    segs = split_command("cd /testbed && FOO=1 timeout 30 bash -lc 'git log --all | head -3'; echo done")
    assert [s.argv for s in segs] == [["git", "log", "--all"], ["head", "-3"], ["echo", "done"]]


# ---- benchmark leaks ------------------------------------------------------------------------------------

BENCH_PATCH = """diff --git a/lib/parser.py b/lib/parser.py
--- a/lib/parser.py
+++ b/lib/parser.py
@@ -1,4 +1,8 @@
 import re
+import os
-    return tokens
+    tokens = [t for t in tokens if t.kind != TokenKind.COMMENT]
+    if strict_mode and not tokens:
+        raise ParserError("empty token stream after comment removal")
+    return normalise_tokens(tokens, keep_positions=True)
+    }
"""
BENCH_STATEMENT = (
    "The tokenizer keeps comment tokens when strict mode is enabled, so parse_expression raises a confusing "
    "IndexError instead of ParserError. Steps to reproduce: call parse_expression with a string that only "
    "contains a comment and strict mode turned on, and observe the traceback pointing into the lexer module "
    "rather than a clear error message about the empty token stream."
)


def bench_table() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "benchmark": ["swebench_lite", "swebench_verified"],
            "instance_id": ["acme__parser-1234", "acme__parser-1234"],
            "repo": ["acme/parser", "acme/parser"],
            "base_commit": ["f" * 40, "f" * 40],
            "problem_statement": [BENCH_STATEMENT, BENCH_STATEMENT],
            "patch": [BENCH_PATCH, BENCH_PATCH],
        }
    )


def bench_one(row: dict[str, object], table: pl.DataFrame | None = None) -> tuple[str | None, str]:
    out = BenchmarkLeak(ctx(table if table is not None else bench_table()))(work_frame([row]))
    if out.dropped.height:
        d = out.dropped.row(0, named=True)
        return d["reason"], d["detail"]
    return None, ""


def test_gold_patch_in_a_diff_is_a_leak() -> None:
    reason, detail = bench_one(work_row(["curl -s https://example.org/p.diff"], [BENCH_PATCH]))
    assert reason == "gold_patch"
    assert "instance=acme__parser-1234" in detail and "swebench_lite" in detail


def test_gold_patch_written_by_the_agent_is_a_leak() -> None:
    edit = (
        "python3 - <<'EOF'\nnew = '''    tokens = [t for t in tokens if t.kind != TokenKind.COMMENT]\n"
        '    if strict_mode and not tokens:\n        raise ParserError("empty token stream after comment removal")\n'
        "    return normalise_tokens(tokens, keep_positions=True)'''\nEOF"
    )
    assert bench_one(work_row([edit], [""]))[0] == "gold_patch"


def test_repository_source_with_the_fix_merged_is_not_a_leak() -> None:
    """A later checkout of the same repo shows the fixed code as plain source: corpus material."""
    source = BENCH_PATCH.replace("+", " ")
    assert bench_one(work_row(["cat -n lib/parser.py"], [source], repo="acme__parser")) == (None, "")


def test_trivial_added_lines_alone_do_not_match() -> None:
    assert bench_one(work_row(["git diff"], ["+import os\n+    }\n+    return tokens\n"])) == (None, "")


def test_problem_statement_containment() -> None:
    row = work_row(["ls"], [""], problem_statement=BENCH_STATEMENT[:300] + " Also fix the docs.")
    reason, detail = bench_one(row)
    assert reason == "problem_statement" and "acme__parser-1234" in detail
    short = work_row(["ls"], [""], problem_statement=BENCH_STATEMENT[:90])
    assert bench_one(short) == (None, "")


def test_instance_id_token() -> None:
    assert (
        bench_one(work_row(["cat results.json"], ['{"acme__parser-1234": "resolved"}']))[0] == "instance_id"
    )
    # a longer number is a different token
    assert bench_one(work_row(["cat results.json"], ['{"acme__parser-12345": 1}'])) == (None, "")


def test_own_instance_is_not_a_leak() -> None:
    row = work_row(
        ["git diff"], [BENCH_PATCH], instance_id="acme__parser-1234", problem_statement=BENCH_STATEMENT
    )
    assert bench_one(row) == (None, "")
    same_checkout = work_row(
        ["git diff"], [BENCH_PATCH], instance_id="pool-77", repo="acme__parser", base_commit="f" * 40
    )
    assert bench_one(same_checkout) == (None, "")


def test_no_benchmarks_keeps_all_and_counts_skipped() -> None:
    out = BenchmarkLeak(ctx(None))(work_frame([work_row(["ls"], [BENCH_PATCH])] * 3))
    assert out.kept.height == 3 and out.dropped.height == 0
    assert out.counters == {"benchmark_leak/skipped": 3}


@pytest.fixture(scope="module")
def real_benchmarks() -> pl.DataFrame:
    d = BENCH
    frames = []
    for name in ("swebench_lite", "swebench_verified"):
        df = pl.read_ndjson(d / f"{name}.jsonl").select(
            "instance_id", "repo", "base_commit", "problem_statement", "patch"
        )
        frames.append(df.with_columns(pl.lit(name).alias("benchmark")))
    return pl.concat(frames, how="diagonal")


def test_real_swebench_gold_patch_planted_in_unrelated_run(real_benchmarks: pl.DataFrame) -> None:
    inst = real_benchmarks.filter(pl.col("instance_id") == "django__django-11206").row(0, named=True)
    row = work_row(
        ["curl -s https://example.org/fix.diff"],
        [inst["patch"]],
        instance_id="acme__widget-1",
        repo="acme__widget",
    )
    out = BenchmarkLeak(ctx(real_benchmarks))(work_frame([row]))
    assert out.dropped.select("reason", "detail").rows() == [
        ("gold_patch", "benchmark=swebench_verified instance=django__django-11206 score=1.00")
    ]


def test_real_swebench_instance_id_and_statement(real_benchmarks: pl.DataFrame) -> None:
    inst = real_benchmarks.filter(pl.col("instance_id") == "django__django-11099").row(0, named=True)
    stage = BenchmarkLeak(ctx(real_benchmarks))
    by_id = work_row(["ls /logs"], ["django__django-11099.json\n"], instance_id="acme__widget-1")
    by_text = work_row(
        ["ls"], [""], instance_id="acme__widget-2", problem_statement=inst["problem_statement"]
    )
    own = work_row(
        ["ls"],
        ["django__django-11099\n"],
        instance_id="django__django-11099",
        problem_statement=inst["problem_statement"],
    )
    out = stage(work_frame([by_id, by_text, own]))
    assert out.dropped["reason"].to_list() == ["instance_id", "problem_statement"]
    assert out.kept.height == 1


def test_real_swebench_statements_do_not_flag_each_other(real_benchmarks: pl.DataFrame) -> None:
    """Unrelated real runs (the SWE-agent sample trajectories) carry no benchmark text."""
    stage = BenchmarkLeak(ctx(real_benchmarks))
    texts = [p.read_text(errors="replace")[:200_000] for p in sorted(REAL.glob("*.traj*"))]
    rows = [work_row(["cat x"], [t], instance_id=f"other__repo-{i}") for i, t in enumerate(texts)]
    out = stage(work_frame(rows))
    assert out.dropped.height == 0, out.dropped.to_dicts()


# ---- confirmation by the run's own final diff (no gold patch known: pool tasks, SWE-Lego) -----------------

SRC = (
    "def collect_items(items, strict=False):\n    result = []\n    for pos, item in enumerate(items):\n"
    "        if len(item) > 51:\n            result.append(item)\n        elif item in seen:\n            continue\n"
    "    return result\n"
)
FIXED_SRC = SRC.replace("len(item) > 51", "len(item) >= 51")
OWN = (
    "diff --git a/w/core.py b/w/core.py\nindex 1111111..2222222 100644\n--- a/w/core.py\n+++ b/w/core.py\n"
    "@@ -2,6 +2,6 @@ def collect_items(items, strict=False):\n     result = []\n"
    "     for pos, item in enumerate(items):\n-        if len(item) > 51:\n+        if len(item) >= 51:\n"
    "             result.append(item)\n         elif item in seen:\n             continue\n"
)
EDIT = (
    "python3 - <<'PY'\nfrom pathlib import Path\np = Path('/testbed/w/core.py')\ns = p.read_text()\n"
    "old = '        if len(item) > 51:'\nnew = '        if len(item) >= 51:'\np.write_text(s.replace(old, new))\nPY"
)
FIX_COMMIT = (
    "commit 9f1e2d3c4b5a69788776655443322110ffeeddcc\nAuthor: dev <d@x>\n\n    Fix collect_items boundary\n\n"
)


def own_run(
    commands: list[str], outputs: list[str], rcs: list[int] | None = None, submission: str = OWN
) -> dict[str, object]:
    """A pool task (no patch): the run edits one line, then submits ``submission``."""
    row = work_row(
        [*commands, EDIT, "git diff", SUBMIT],
        [*outputs, "", OWN, submission],
        instance_id="acme__w-77",
        repo="acme__w",
        patch="",
        base_commit="",
    )
    if rcs is not None:
        row["returncodes"] = [*rcs, 0, 0, 0]
    return row


@pytest.mark.parametrize(
    ("cmds", "outs", "rcs", "kind"),
    [
        (["git log --all -p -S collect_items -1"], [FIX_COMMIT + OWN], None, "git_history"),
        (["git show 9f1e2d3c4b"], [FIX_COMMIT + OWN], None, "foreign_object"),
        (["git show origin/fix:w/core.py | sed -n '1,8p'"], [FIXED_SRC], None, "foreign_object"),
        (
            ["curl -s https://raw.githubusercontent.com/acme/w/main/w/core.py | sed -n 1,8p"],
            [FIXED_SRC],
            None,
            "network_fetch",
        ),
        (
            ["diff -u /testbed/w/core.py /usr/lib/python3/site-packages/w/core.py"],
            [OWN.split("\n", 4)[4]],
            [1],
            "site_packages",
        ),
        (
            ["sed -n '1,8p' /usr/local/lib/python3.11/site-packages/w/core.py"],
            [FIXED_SRC],
            None,
            "site_packages",
        ),
    ],
    ids=[
        "pickaxe_patch",
        "show_sha",
        "remote_branch_file",
        "curl_raw_range",
        "diff_installed_rc1",
        "sed_installed",
    ],
)
def test_one_line_own_fix_seen_before_written_is_confirmed(
    cmds: list[str], outs: list[str], rcs: list[int] | None, kind: str
) -> None:
    reason, detail, _ = one(own_run(cmds, outs, rcs))
    assert (reason, detail.split()[0]) == (kind, "turn=0")


def test_own_fix_from_last_git_diff_when_the_submission_has_none() -> None:
    """OpenHands' finish prints no diff: the run's last plain `git diff` stands for its final diff."""
    row = own_run(
        ["git log --all -p -S collect_items -1"],
        [FIX_COMMIT + OWN],
        submission="COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n",
    )
    assert one(row)[0] == "git_history"


@pytest.mark.parametrize(
    ("cmds", "outs"),
    [
        # the unfixed code in a foreign object: the post-image window is absent
        (["git show 9f1e2d3c4b:w/core.py"], [SRC]),
        # the fixed line alone, without its context (a grep over other files)
        (
            ["git log --all --oneline", "git show 9f1e2d3c4b -- other.py"],
            ["9f1e2d3 other\n", "+        if len(item) >= 51:\n+        x = 1\n"],
        ),
    ],
)
def test_own_fix_not_shown_is_only_an_attempt(cmds: list[str], outs: list[str]) -> None:
    reason, _, counters = one(own_run(cmds, outs))
    assert reason is None and counters


def test_own_fix_seen_after_the_run_wrote_it_is_not_a_leak() -> None:
    """`git diff HEAD~1` after the run's own edit shows the run's own work, not an oracle."""
    row = work_row(
        [EDIT, "git diff HEAD~1", SUBMIT], ["", OWN, OWN], instance_id="acme__w-77", repo="acme__w"
    )
    reason, _, counters = one(row)
    assert reason is None and counters == {"solution_leak_attempt/foreign_object": 1}


def test_remote_set_url_with_a_token_is_not_a_fetch() -> None:
    """Setting a push URL and listing remotes transfers nothing (a secret-planting look-alike)."""
    cmd = "git remote set-url origin https://x-access-token:ghp_x@github.com/acme/tools.git && git remote -v"
    out = (
        "origin\thttps://x-access-token:ghp_x@github.com/acme/tools.git (fetch)\n"
        "origin\thttps://x-access-token:ghp_x@github.com/acme/tools.git (push)\n"
    )
    assert one(leak_run([cmd], [out])) == (None, "", {})


def test_remote_add_without_transfer_is_an_attempt() -> None:
    """`git remote add` then `git remote -v`: the listing is not fetched content."""
    cmd = "git remote add upstream https://github.com/acme/widget.git && git remote -v"
    out = "upstream\thttps://github.com/acme/widget.git (fetch)\nupstream\thttps://github.com/acme/widget.git (push)\n"
    reason, _, counters = one(leak_run([cmd], [out]))
    assert reason is None and counters == {"solution_leak_attempt/network_fetch": 1}


# ---- one-line gold patches: matched only as a printed diff naming the file ----------------------------------

ONE_LINE = """diff --git a/lib/enums.py b/lib/enums.py
--- a/lib/enums.py
+++ b/lib/enums.py
@@ -31,6 +31,7 @@ def __new__(metacls, classname, bases, classdict):
         cls.label = property(lambda self: cls._value2label_map_.get(self.value))
+        cls.do_not_call_in_templates = True
         return enum.unique(cls)
"""


def one_line_table() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "benchmark": ["swebench_verified"],
            "instance_id": ["acme__enums-12304"],
            "repo": ["acme/enums"],
            "base_commit": ["e" * 40],
            "problem_statement": [BENCH_STATEMENT],
            "patch": [ONE_LINE],
        }
    )


def test_one_line_gold_patch_printed_whole_is_a_leak() -> None:
    reason, detail = bench_one(work_row(["cat /tmp/review/fix.diff"], [ONE_LINE]), one_line_table())
    assert reason == "gold_patch" and "instance=acme__enums-12304" in detail


def test_one_line_gold_added_line_without_its_file_is_not_a_leak() -> None:
    """The same one-liner in another project's own diff is a coincidence, not the benchmark's patch."""
    own = (
        "diff --git a/src/other.py b/src/other.py\n@@ -1,2 +1,3 @@\n class X:\n"
        "+        cls.do_not_call_in_templates = True\n"
    )
    assert bench_one(work_row(["git diff"], [own]), one_line_table()) == (None, "")


# ----------------------------------------------------------------------------------------------
# Speed-ups must not change what is matched


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="abgitXZ09_./=:,+@%~- ", max_size=24))
def test_plain_commands_split_like_shlex(line: str) -> None:
    assert PLAIN.fullmatch(line)
    assert line.split() == shlex_split(line)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="gitpcurl:/ '\"\\;|&-sk", max_size=30))
def test_commands_the_prefilter_skips_have_no_classifiable_segment(cmd: str) -> None:
    """maybe_attempt is False only when no simple command is git, pip, a URL or site-packages."""
    if not maybe_attempt(cmd):
        for seg in split_command(cmd):
            text = " ".join([*seg.argv, seg.heredoc])
            assert "git" not in text and "pip" not in text and "://" not in text


def test_quoted_git_still_reaches_the_rules() -> None:
    assert maybe_attempt("g'i't log --all") and maybe_attempt('"git" show HEAD~1')
    assert not maybe_attempt("cat README.md | head -n 5")


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.none(), st.text(alphabet="aZ_9 .-\n\u212a\u0130\u00e9K", max_size=30), st.text(max_size=12)
        ),
        max_size=8,
    ),
    st.integers(0, 2),
)
def test_byte_tokeniser_equals_the_regex_tokeniser(texts: list[str | None], skip: int) -> None:
    """The compiled tokeniser gives the regex's tokens, in order, for any text: ASCII, non-ASCII whose
    lowercase is ASCII (Kelvin sign -> k, dotted I -> i), nulls, and a sliced (offset) series."""
    s = pl.Series(texts, dtype=pl.Utf8).slice(min(skip, len(texts)))
    h, counts = token_hashes(s)
    want_h, want_counts = token_hashes_regex(s)
    assert counts.tolist() == want_counts.tolist() and h.tolist() == want_h.tolist()


# ---- gold patches of fixes already merged in the run's checkout (real runs, bench/results/leaks.md) --------

MERGED_SRC = (
    "def strip_comments(tokens, strict_mode):\n"
    "    tokens = [t for t in tokens if t.kind != TokenKind.COMMENT]\n"
    "    if strict_mode and not tokens:\n"
    '        raise ParserError("empty token stream after comment removal")\n'
    "    return normalise_tokens(tokens, keep_positions=True)\n"
)


def test_gold_lines_the_checkout_printed_first_and_the_agent_quoted_are_not_a_leak() -> None:
    """A later checkout holds an earlier instance's fix; the agent cats the file, then edits around it."""
    edit = (
        "python3 - <<'EOF'\nold = '''    tokens = [t for t in tokens if t.kind != TokenKind.COMMENT]\n"
        '    if strict_mode and not tokens:\n        raise ParserError("empty token stream after comment removal")\n'
        "    return normalise_tokens(tokens, keep_positions=True)'''\nnew = old + '\\n    # done'\nEOF"
    )
    row = work_row(["cat lib/parser.py", edit, "git diff"], [MERGED_SRC, "", "+    # done\n"])
    assert bench_one(row) == (None, "")


def test_gold_lines_typed_before_any_print_still_leak() -> None:
    """The same lines typed by the agent before its checkout printed them: the gold patch, verbatim."""
    edit = (
        "python3 - <<'EOF'\nnew = '''    tokens = [t for t in tokens if t.kind != TokenKind.COMMENT]\n"
        '    if strict_mode and not tokens:\n        raise ParserError("empty token stream after comment removal")\n'
        "    return normalise_tokens(tokens, keep_positions=True)'''\nEOF"
    )
    row = work_row([edit, "cat lib/parser.py"], ["", MERGED_SRC])
    assert bench_one(row)[0] == "gold_patch"


def test_one_line_gold_patch_in_a_backup_file_of_the_own_diff_is_not_a_leak() -> None:
    """`cp enums.py enums.py.orig` ends up in the run's own diff: its + lines are the checkout's code."""
    own = (
        "diff --git a/lib/enums.py.orig b/lib/enums.py.orig\nnew file mode 100644\n--- /dev/null\n"
        "+++ b/lib/enums.py.orig\n@@ -0,0 +1,2 @@\n+class X:\n+        cls.do_not_call_in_templates = True\n"
    )
    assert bench_one(work_row(["vim lib/enums.py", "git diff"], ["", own]), one_line_table()) == (None, "")
