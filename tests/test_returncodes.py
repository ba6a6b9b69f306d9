"""Return codes inferred from (command, output) by measured rules (pipeline/convert/returncodes.py).

The cases are real turns (tests/fixtures/returncodes/cases.json, PROVENANCE.md there): given this
command and this output, the code is exactly N by rule R, or unknown (None). Where the trajectory
recorded its code, an inferred code equals it. A broken or disabled rule fails its cases.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.convert import rc_python, rc_shape
from pipeline.convert import returncodes as rc
from pipeline.convert.returncodes import infer_returncode
from pipeline.convert.runfiles import RunFiles

CASES: list[dict[str, Any]] = json.loads(
    (Path(__file__).resolve().parent / "fixtures" / "returncodes" / "cases.json").read_text()
)


def _id(case: dict[str, Any]) -> str:
    return f"{case['rule'] or 'unknown'}:{case['command'][:40]}"


def _files(case: dict[str, Any]) -> RunFiles:
    """The run's files as its earlier turns (``before``: the ones naming the script) left them."""
    files = RunFiles()
    for command, output, code in case.get("before", []):
        files.learn(command, output, code)
    return files


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_real_turn_gets_exactly_its_code(case: dict[str, Any]) -> None:
    expected = None if case["rule"] is None else (case["inferred"], case["rule"])
    assert infer_returncode(case["command"], case["output"], _files(case)) == expected
    if not case.get("before"):  # the two-argument call: nothing known but the command itself
        assert infer_returncode(case["command"], case["output"]) == expected
    if expected is not None and case["recorded"] is not None:
        assert expected[0] == case["recorded"], "an inferred code is the recorded one"


@pytest.mark.parametrize("case", [c for c in CASES if c.get("before") and c["rule"]], ids=_id)
def test_a_script_written_in_an_earlier_turn_is_decided_only_with_the_runs_files(
    case: dict[str, Any],
) -> None:
    assert infer_returncode(case["command"], case["output"]) is None


def test_the_cases_hold_a_known_script_that_exits_itself() -> None:
    """A script with ``sys.exit(1)`` in its known text that printed no traceback: unknown, and
    the record says 1 (no output shows which exit ran)."""
    neg = [c for c in CASES if c.get("before") and c["rule"] is None]
    assert neg
    for c in neg:
        shape = rc_shape._shape(c["command"])
        assert shape is not None
        known = rc_python._known_script(c["command"], shape, _files(c))
        assert known is not None and "sys.exit(1)" in known[1] and c["recorded"] == 1


@pytest.mark.parametrize("case", [c for c in CASES if c["rules"]], ids=_id)
def test_candidate_rules_answer_as_measured(case: dict[str, Any]) -> None:
    """What a disabled candidate says on a real turn (its misses are why it is disabled)."""
    for name, code in case["rules"].items():
        assert getattr(rc, name)(case["command"], case["output"]) == code, name


def test_the_cases_cover_every_enabled_rule_with_a_decision() -> None:
    assert {c["rule"] for c in CASES if c["rule"]} == set(rc.ENABLED)


def test_the_cases_hold_real_misses_of_the_disabled_candidates() -> None:
    misses = {
        name
        for c in CASES
        for name, code in c["rules"].items()
        if c["recorded"] is not None and code is not None and code != c["recorded"]
    }
    assert {"python_traceback", "python_clean_output"} <= misses


# ---------------------------------------------------------------------------------------- the table


def test_every_rule_has_a_measured_row_and_the_enabled_set_is_the_passing_one() -> None:
    assert [r.name for r in rc.RULES] == list(rc.MEASURED)
    assert set(rc.ENABLED) == {name for name, m in rc.MEASURED.items() if m.passes}


def test_no_enabled_rule_is_under_the_bar() -> None:
    assert rc.MIN_PRECISION == 0.99 and rc.MIN_N >= 200 and rc.MIN_GROUP_N >= 30
    for name in rc.ENABLED:
        m = rc.MEASURED[name]
        assert m.precision >= 0.99 and m.n >= rc.MIN_N, name
        assert m.groups >= 2 and m.min_group_precision >= 0.99, name


@pytest.mark.parametrize(
    ("row", "passes"),
    [
        (rc.Measured(1.0, 199, 2, 1.0), False),  # too few samples
        (rc.Measured(0.9899, 5000, 2, 0.99), False),  # under 99% overall
        (rc.Measured(1.0, 5000, 1, 1.0), False),  # one repo group only
        (rc.Measured(0.995, 5000, 2, 0.98), False),  # fails on one group
        (rc.Measured(0.99, 200, 2, 0.99), True),
    ],
)
def test_the_bar(row: rc.Measured, passes: bool) -> None:
    assert row.passes is passes


def test_a_rule_under_the_bar_is_not_consulted(monkeypatch: pytest.MonkeyPatch) -> None:
    turn = ("antlr4", "bash: line 1: antlr4: command not found\n")
    assert rc.cannot_run(*turn) == 127
    assert "cannot_run" not in rc.ENABLED and infer_returncode(*turn) is None


# ---------------------------------------------------------------------------------------- shapes


@pytest.mark.parametrize(
    ("command", "deciders", "joins"),
    [
        ("python x.py 2>&1 | tail -5", [["tail", "-5"]], ()),
        ("ls &>/dev/null", [["ls", "&>/dev/null"]], ()),
        ("cd /testbed && grep -rn foo . 2>/dev/null | head", [["head"]], ()),
        ("a && b; c | d && e", [["d"], ["e"]], ("&&",)),
        ("find . -name x | xargs grep -l y | head -3", [["head", "-3"]], ()),
    ],
)
def test_the_deciders_of_a_command(command: str, deciders: list[list[str]], joins: tuple[str, ...]) -> None:
    shape = rc_shape._shape(command)
    assert shape is not None
    assert [d.argv for d in shape.deciders] == deciders and shape.joins == joins


@pytest.mark.parametrize(
    "command",
    [
        "echo $(pwd) && ls",
        "for f in a b; do cat $f; done",
        "if [ -f x ]; then cat x; fi",
        "find . -name '*.py' | xargs grep -l foo",
        "set -o pipefail; pytest | tail -3",
        "python server.py &",
        "ls x || exit 1",
        "grep -rn foo . |",  # a line ending in an operator: bash would wait for more
        "ls &&",
    ],
)
def test_shapes_beyond_the_rules_are_unknown(command: str) -> None:
    assert rc_shape._shape(command) is None
    assert infer_returncode(command, "") is None and infer_returncode(command, "a.py\n") is None


@pytest.mark.parametrize(
    ("command", "output", "expected"),
    [
        # the status is the last stage's: head returns 0 whatever pytest did
        ("python -m pytest -x tests 2>&1 | tail -3", "1 failed in 0.2s\n", (0, "loud_success")),
        # a loud program before && : had it failed, it would have printed
        ("mkdir -p out && grep -rn foo src", "", (1, "grep_no_match")),
        # a silent failer before && (test): the empty output does not show that grep ran
        ("test -d src && grep -rn foo src", "", None),
        # stderr dropped: an empty output no longer shows there was no error
        ("grep -rn foo missing_dir 2>/dev/null", "", None),
        ("cat missing.py", "cat: missing.py: No such file or directory\n", None),
        ("git show HEAD:nope.py", "fatal: path 'nope.py' does not exist in 'HEAD'\n", None),
        ("pytest -q t.py", "1 passed in 0.01s\n", None),  # a summary line alone is no run's output
        ("curl -s http://localhost:8000", "<html></html>\n", None),
        # timeout returns 124 for the child it killed, whatever the child had printed
        ("timeout 30 grep -rn foo /", "/etc/foo.conf:1:foo\n", None),
        ("grep -n foo a.py > hits.txt", "", None),  # grep's stdout is in a file: empty says nothing
        ("cat <<< 'x' | grep -c y", "0\n", None),
        # silent failers of git: no stash (1, "No stash entries found."), an unset key (1, nothing)
        ("git stash pop", "No stash entries found.\n", None),
        ("git config user.name", "", None),
        ("git diff --no-index a.txt b.txt", "", None),
        # a module is a tool with its own statuses (flake8: 1 with findings, no error word)
        ("python -m flake8 a.py", "a.py:1:80: E501 line too long (88 > 79 characters)\n", None),
        # the code is seen, not what it imports: setup() exits 1 through argparse
        (
            "python -c 'import setup'",
            "usage: -c [global_opts] cmd1 [cmd1_opts]\n   or: -c --help\n\nerror: no commands supplied\n",
            None,
        ),
        ("python -c 'print(1 + 1)'", "2\n", (0, "python_inline")),
        ("python -c 'print(1); quit(3)'", "1\n", None),
        # grep's binary notices are matches when grep is alone; before a | they are no match at all
        (
            'grep -r "NdarrayMixin" astropy/table',
            "grep: astropy/table/__pycache__/t.cpython-39.pyc: binary file matches\nastropy/table/t.py:import x\n",
            (0, "grep_match"),
        ),
        (
            'grep -r "integer=True" sympy | grep "infinite"',
            "grep: sympy/core/__pycache__/a.cpython-39.pyc: binary file matches\n",
            None,
        ),
        # mini-swe-agent's long-output form: an error in the cut middle would be unseen
        (
            "ls -R",
            "<warning>\nThe output of your last command was too long.\n</warning>\n<output_head>\n./a:\nx.py\n"
            "</output_head>\n<elided_chars>\n27751 characters elided\n</elided_chars>\n<output_tail>\n"
            "./z:\ny.py\n</output_tail>",
            None,
        ),  # the code may exit: its status is not shown
        (
            "cat <<'EOF' > t.py\nprint(undefined)\nEOF\npython t.py",
            "Traceback (most recent call last):\n  File \"/testbed/t.py\", line 1, in <module>\n    print(undefined)\nNameError: name 'undefined' is not defined\n",
            (1, "python_inline"),
        ),
    ],
)
def test_given_this_command_and_output(command: str, output: str, expected: tuple[int, str] | None) -> None:
    assert infer_returncode(command, output) == expected


@pytest.mark.parametrize("command", ["cat big.py", "python reproduce.py", "grep -rn x .", "curl x"])
def test_inference_is_cheap_on_a_long_output(command: str) -> None:
    """1.2 MB of output: substring checks before any regex (about 5-45 ms here, the bound is loose
    for a shared machine); a regex scanning such an output per line took a second."""
    import time

    output = "x = 1\n" * 200_000
    start = time.perf_counter()
    for _ in range(5):
        infer_returncode(command, output)
    assert (time.perf_counter() - start) / 5 < 0.25


def test_the_fixture_matches_its_provenance_row() -> None:
    import hashlib

    folder = Path(__file__).resolve().parent / "fixtures" / "returncodes"
    digest = hashlib.sha256((folder / "cases.json").read_bytes()).hexdigest()
    assert f"{len(CASES)} turns" in (folder / "PROVENANCE.md").read_text()
    assert digest in (folder / "PROVENANCE.md").read_text()


_WORDS = [
    "grep", "cat", "python", "pytest", "ls", "git", "status", "-c", "-m", "|", "&&", "||", ";", "2>&1", ">",
    "<<EOF", "EOF", "x.py", "-q", "\n", "xargs", "timeout", "10", "echo", "sed", "-i", "find", "-exec", "{}",
    "+", "tee", "'", '"', "$(", ")", "&", "#",
]  # fmt: skip
_OUTPUTS = [
    "",
    "cat: x: No such file or directory\n",
    "=== 1 failed in 0.1s ===\n",
    "Ran 1 test in 0.1s\n\nOK\n",
    "Traceback (most recent call last):\n",
]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from(_WORDS), max_size=14).map(" ".join) | st.text(max_size=40),
    st.sampled_from(_OUTPUTS) | st.text(max_size=40),
)
def test_any_text_gets_a_code_of_an_enabled_rule_or_none_and_no_rule_raises(
    command: str, output: str
) -> None:
    for rule in rc.RULES:
        got_rule = rule(command, output)
        assert got_rule is None or isinstance(got_rule, int)
    got = infer_returncode(command, output)
    assert got is None or (isinstance(got[0], int) and got[1] in rc.ENABLED)


# ---------------------------------------------------------------------------------------- RunFiles


def _run(*turns: tuple[str, str, int | None]) -> RunFiles:
    files = RunFiles()
    for t in turns:
        files.learn(*t)
    return files


WRITE = "cat <<'EOF' > repro.py\nprint('hello')\nEOF"


def test_run_files_learn_a_heredoc_write_and_keep_it_across_runs_of_the_script() -> None:
    files = _run(
        (WRITE, "", 0), ("python repro.py", "hello\n", 0), ("python -m pytest tests", "1 passed in 0.1s", 0)
    )
    assert files.script("repro.py") == "print('hello')\n"
    assert files.script("/testbed/repro.py") == "print('hello')\n"


def test_run_files_learn_a_write_even_when_the_script_run_after_it_fails() -> None:
    files = _run((WRITE + "\npython repro.py", "Traceback ...", 1))
    assert files.script("repro.py") == "print('hello')\n"


def test_run_files_append_to_a_known_file_and_resolve_cd() -> None:
    files = _run(
        ("cd /testbed/sub && cat > a.py <<'EOF'\nx = 1\nEOF", "", 0),
        ("cat >> /testbed/sub/a.py <<'EOF'\nprint(x)\nEOF", "", 0),
    )
    assert files.script("sub/a.py") == "x = 1\nprint(x)\n"


@pytest.mark.parametrize(
    "command",
    [
        "sed -i 's/hello/bye/' repro.py",
        "echo 'print(2)' >> repro.py",
        "git checkout .",
        "make",
        "python other.py",  # a script not known may write any file
        "cat <<EOF > repro.py\nprint('$HOME')\nEOF",  # bash expands an unquoted body
        "false && cat <<'EOF' > repro.py\nprint(3)\nEOF",  # the write may not have run
    ],
)
def test_run_files_forget_what_a_command_may_have_written(command: str) -> None:
    assert _run((WRITE, "", 0), (command, "", None)).script("repro.py") is None


@pytest.mark.parametrize(
    "command",
    [
        "python -m pytest tests/test_repro.py -x",  # a test runner does not write the files it is given
        "pytest repro.py",
        "python3 --version",
        "cp repro.py repro.py.bak",  # cp writes its destination only
        "git checkout src/module.py",  # a named file, not the whole tree
        "cat <<'EOF' > notes.md\nrun repro.py again\nEOF",  # a heredoc written is text, not code
        "python repro.py",  # the script is known: it writes only what its text names
        "ls; grep -rn hello .",
    ],
)
def test_run_files_keep_what_a_command_cannot_have_written(command: str) -> None:
    assert _run((WRITE, "", 0), (command, "", None)).script("repro.py") == "print('hello')\n"


def test_run_files_know_a_script_this_command_writes_before_running_it() -> None:
    files = _run((WRITE, "", 0))
    other = "cat <<'EOF' > other.py\nprint(2)\nEOF\npython other.py"
    assert _run((WRITE, "", 0), (other, "2\n", 0)).script("repro.py") == "print('hello')\n"
    assert rc_python.python_script_known_clean(other, "2\n", files) == 0


def test_run_files_learn_a_whole_display_only_when_it_succeeded() -> None:
    assert _run(("cat repro.py", "print(1)\n", 0)).script("repro.py") == "print(1)\n"
    assert _run(("cat repro.py", "cat: repro.py: No such file or directory\n", 1)).script("repro.py") is None


def test_known_script_rules_on_their_shapes() -> None:
    files = _run((WRITE, "", 0))
    assert infer_returncode("cd /testbed && python repro.py", "hello\n", files) == (
        0,
        "python_script_known_clean",
    )
    assert (
        rc_python.python_script_known_clean("python repro.py > out.txt", "", files) is None
    )  # output hidden
    assert (
        rc_python.python_script_known_clean("python repro.py 2>/dev/null", "hello\n", files) is None
    )  # errors hidden
    assert (
        rc_python.python_script_known_clean("cd sub; python repro.py", "hello\n", files) is None
    )  # which repro.py?
    tb = 'hello\nTraceback (most recent call last):\n  File "/testbed/repro.py", line 1, in <module>\nValueError: x\n'
    assert rc_python.python_script_known_traceback("python repro.py", tb, files) == 1
    exits = _run(("cat <<'EOF' > repro.py\nimport sys\nsys.exit(1)\nEOF", "", 0))
    assert infer_returncode("python repro.py", "", exits) is None  # python_script_quiet abstains too
    usage = (
        "usage: manage.py cheeses create [-h] name\nmanage.py cheeses create: error: the following arguments"
    )
    assert rc_python.python_script_known_clean("python repro.py", usage, files) is None  # a library's exit 2
    printed = _run(
        (
            "cat <<'EOF' > repro.py\nimport traceback\ntry:\n    f()\nexcept Exception:\n    traceback.print_exc()\nEOF",
            "",
            0,
        )
    )
    assert (
        rc_python.python_script_known_traceback("python repro.py", tb, printed) is None
    )  # print_exc: exit 0


def _tb(line: int) -> str:
    return f'Traceback (most recent call last):\n  File "repro.py", line {line}, in <module>\nValueError: x\n'


def test_an_uncaught_module_level_exception_exits_1_even_in_a_script_that_prints_tracebacks() -> None:
    """The frame's line is a module-level statement with no ``try``/``with`` around it: nothing
    could catch what it raised, so python printed the traceback and exits 1. The same traceback
    from a line inside a ``try`` may be the script's own ``print_exc`` (exit 0): unknown."""
    script = (
        "cat <<'EOF' > repro.py\nimport traceback\nsetup_things()\n"
        "try:\n    f()\nexcept Exception:\n    traceback.print_exc()\n"
        "with ctx():\n    g()\nif True:\n    h()\nEOF"
    )
    files = _run((script, "", 0))
    assert rc.python_script_known_traceback("python repro.py", _tb(2), files) is None  # it prints some
    assert rc.python_script_known_uncaught("python repro.py", _tb(2), files) == 1
    assert rc.python_script_known_uncaught("python repro.py", _tb(10), files) == 1  # inside an `if`
    assert rc.python_script_known_uncaught("python repro.py", _tb(4), files) is None  # in the try
    assert rc.python_script_known_uncaught("python repro.py", _tb(8), files) is None  # a with may swallow
    assert rc.python_script_known_uncaught("python repro.py", _tb(11), files) is None  # no statement there
    stop = _tb(2).replace("ValueError: x", "KeyboardInterrupt")
    assert rc.python_script_known_uncaught("python repro.py", stop, files) is None
    # a class statement's frame is the module's (its body runs in a frame named after the class)
    model = _run(
        (
            "cat <<'EOF' > repro.py\nimport traceback\n\nclass Author(Model):\n    try:\n        x = 1\n"
            "    except Exception:\n        traceback.print_exc()\nEOF",
            "",
            0,
        )
    )
    assert rc.python_script_known_uncaught("python repro.py", _tb(3), model) == 1
    # an exit called before the line would have ended the run before it: only what ends a
    # process another way leaves the status open
    words = _run((script.replace("setup_things()", "from scipy import signal; unittest = 1"), "", 0))
    assert rc.python_script_known_uncaught("python repro.py", _tb(2), words) == 1
    hook = _run((script.replace("setup_things()", "atexit.register(lambda: os._exit(0))"), "", 0))
    assert rc.python_script_known_uncaught("python repro.py", _tb(2), hook) is None
    child = _run((script.replace("setup_things()", "import subprocess"), "", 0))
    assert rc.python_script_known_uncaught("python repro.py", _tb(2), child) is None  # a child of itself?


EXITING = (
    "cat <<'EOF' > repro.py\nimport sys\nif bad():\n    print(\"BUG REPRODUCED\")\n    sys.exit(1)\n"
    'print("fixed")\nsys.exit(0)\nEOF'
)


def test_an_exit_after_a_print_the_output_lacks_did_not_run() -> None:
    """``print("BUG REPRODUCED"); sys.exit(1)``: had the exit run, its line would show (stdout is
    flushed at exit); an output without it ended with 0, one with it is unknown."""
    files = _run((EXITING, "", 0))
    assert rc_python.python_script_known_clean("python repro.py", "fixed\n", files) == 0
    assert rc_python.python_script_known_clean("python repro.py", "BUG REPRODUCED\n", files) is None
    moved = _run((EXITING.replace("import sys", "import sys\nsys.stdout = open('log', 'w')"), "", 0))
    assert (
        rc_python.python_script_known_clean("python repro.py", "", moved) is None
    )  # its prints go elsewhere
    computed = _run(("cat <<'EOF' > repro.py\nimport sys\nsys.exit(0 if ok() else 1)\nEOF", "", 0))
    assert rc_python.python_script_known_clean("python repro.py", "", computed) is None


def test_run_files_follow_the_converters_edits_and_keep_the_text_a_refused_edit_left() -> None:
    from pipeline.convert.edits import replace_command

    edit = replace_command("/testbed/repro.py", [("hello", "bye", False)], "edited")
    refused = replace_command(
        "/testbed/repro.py", [("absent", "x", False)], "edited", fail_message="no match"
    )
    files = _run((WRITE, "", 0), (refused, "no match\n", 1))
    assert files.script("repro.py") == "print('hello')\n"  # the editor refused: the file is as it was
    files.learn(edit, "edited\n", 0)
    assert files.script("repro.py") == "print('bye')\n"
    assert _run((WRITE, "", 0), (edit, "edited\n", 1)).script("repro.py") is None  # it ended otherwise


def test_a_window_the_run_showed_outranks_the_text_inferred() -> None:
    window = "[File: /testbed/repro.py (1 lines total)]\n1:print('other')\n"
    assert _run((WRITE, "", 0), ("head -5 /testbed/repro.py", window, 0)).script("repro.py") is None
    agrees = "[File: /testbed/repro.py (1 lines total)]\n1:print('hello')\n"
    assert (
        _run((WRITE, "", 0), ("head -5 /testbed/repro.py", agrees, 0)).script("repro.py")
        == "print('hello')\n"
    )
    from pipeline.convert.edits import replace_command

    refused = replace_command("/testbed/repro.py", [("absent", "x", False)], "edited", fail_message="no")
    preview = "This is how your edit would have looked if applied\n---\n" + window  # not the file
    assert _run((WRITE, "", 0), (refused, preview, 1)).script("repro.py") == "print('hello')\n"


def test_the_repositorys_test_runner_run_by_python_writes_no_known_script() -> None:
    """``python tests/runtests.py ...`` (Django's runner) is a test runner like ``pytest``: the
    run's own scripts stay known after it; an unknown script may write anything (all forgotten),
    and a runtests.py the run wrote itself is read as its text says."""
    assert _run((WRITE, "", 0), ("python tests/runtests.py auth_tests -v 2", "OK\n", 0)).script("repro.py")
    assert _run((WRITE, "", 0), ("python tests/other.py auth_tests", "OK\n", 0)).script("repro.py") is None
    own = "cat <<'EOF' > runtests.py\nopen('repro.py', 'w').write('x')\nEOF"
    assert _run((WRITE, "", 0), (own, "", 0), ("python runtests.py", "", 0)).script("repro.py") is None
