"""The shell walker (:func:`pipeline.text.shell.simple_commands`): every simple command a compound command
runs is seen, wherever it stands (if/for/while/until/case bodies, groups, subshells, functions,
command substitutions, ``bash -c``/``sh -c`` scripts, ``eval``, ``xargs``, ``find -exec``,
here-documents, continuation lines), and no keyword or loop word is taken for a command."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline.text.shell import lift_substitutions, simple_commands

LOG = ["git", "log", "--all", "-p"]

# One line per form: the command, then exactly the simple commands it runs (in order).
FORMS: list[tuple[str, list[list[str]]]] = [
    ("if true; then git log --all -p; fi", [["true"], LOG]),
    ("if [ -d .git ]; then\n  git log --all -p\nfi", [["[", "-d", ".git", "]"], LOG]),
    (
        "if false; then echo a; elif true; then git log --all -p; else git show abc1234; fi",
        [["false"], ["echo", "a"], ["true"], LOG, ["git", "show", "abc1234"]],
    ),
    ("for f in a b c; do git log --all -p -- $f; done", [[*LOG, "--", "$f"]]),
    ("for f in a b\ndo\n  git log --all -p\ndone", [LOG]),
    ("while read sha; do git show $sha; done < shas.txt", [["read", "sha"], ["git", "show", "$sha"]]),
    ("until git log --all -p; do sleep 1; done", [LOG, ["sleep", "1"]]),
    (
        "case $x in a) git log --all -p;; b|c) git show abc1234;; *) echo no;; esac",
        [LOG, ["git", "show", "abc1234"], ["echo", "no"]],
    ),
    ("case $x in\n  (a)\n    git log --all -p\n    ;;\nesac", [LOG]),
    ("{ git log --all -p; }", [LOG]),
    ("{ git log --all -p; } 2>&1 | head -50", [LOG, ["head", "-50"]]),
    ("( cd /testbed && git log --all -p )", [LOG]),
    ("(git log --all -p)", [LOG]),
    ("x=$(git log --all -p)", [LOG]),
    ('echo "$(git log --all -p | head -1)"', [LOG, ["head", "-1"], ["echo", "$_"]]),
    ("echo $(echo $(git log --all -p))", [LOG, ["echo", "$_"], ["echo", "$_"]]),
    ("echo `git log --all -p`", [LOG, ["echo", "$_"]]),
    (
        "git show `git rev-list --all | tail -1`",
        [["git", "rev-list", "--all"], ["tail", "-1"], ["git", "show", "$_"]],
    ),
    ("f() { git log --all -p; }; f", [LOG, ["f"]]),
    ("function f { git log --all -p; }", [LOG]),
    ("function f() {\n  git log --all -p\n}", [LOG]),
    ("bash -c 'if true; then git log --all -p; fi'", [["true"], LOG]),
    ('sh -c "git log --all -p"', [LOG]),
    ("git log --oneline | bash -c 'xargs git show'", [["git", "log", "--oneline"], ["git", "show"]]),
    ("timeout 30 bash -lc 'for i in 1 2; do git log --all -p; done'", [LOG]),
    ("eval 'git log --all -p'", [LOG]),
    ('eval "git log --all -p | head"', [LOG, ["head"]]),
    ("git rev-list --all | xargs git show", [["git", "rev-list", "--all"], ["git", "show"]]),
    ("git rev-list --all | xargs -I{} git show {}", [["git", "rev-list", "--all"], ["git", "show", "{}"]]),
    (
        "find . -name '*.py' -exec git log --all -p -- {} \\;",
        [["find", ".", "-name", "*.py", "-exec", *LOG, "--", "{}"], [*LOG, "--", "{}"]],
    ),
    ("git log \\\n  --all \\\n  -p", [LOG]),
    (
        "cat <<'EOF' > /tmp/notes\nif then fi $(git log --all -p)\nEOF\ngit log --all -p",
        [["cat", "<<EOF", ">", "/tmp/notes"], LOG],
    ),
    ("cat <<EOF > /tmp/x\n$(git log --all -p)\nEOF", [LOG, ["cat", "<<EOF", ">", "/tmp/x"]]),
    ("time { git log --all -p; }", [LOG]),
    ("! git log --all -p", [LOG]),
    ("echo '$(git log --all -p)' '`git show x`'", [["echo", "$(git log --all -p)", "`git show x`"]]),
    ("# git log --all -p\nls", [["ls"]]),
    ("n=$((1 + 2)); echo $n", [["echo", "$n"]]),
    ("git log --all -p 2>&1 | head", [[*LOG, "2>&1"], ["head"]]),
]


@pytest.mark.parametrize(("cmd", "want"), FORMS, ids=[f[0][:40] for f in FORMS])
def test_every_compound_form_yields_exactly_its_simple_commands(cmd: str, want: list[list[str]]) -> None:
    assert [s.argv for s in simple_commands(cmd)] == want


def test_substitutions_in_single_quotes_and_quoted_heredocs_are_text() -> None:
    assert lift_substitutions("echo '$(a)' \"$(b)\" `c`") == ("echo '$(a)' \"$_\" $_", ["b", "c"])
    assert lift_substitutions("cat <<'E'\n$(a)\nE\n$(b)") == ("cat <<'E'\n$(a)\nE\n$_", ["b"])


# ------------------------------------------------------------------------ generated compound commands

_counter = iter(range(10**9))


@st.composite
def _leaf(draw: st.DrawFn) -> tuple[str, list[list[str]]]:
    """One marked simple command, possibly behind a wrapper; its argv is what the walker must see."""
    n = next(_counter)
    argv = draw(
        st.sampled_from([["mk", f"m{n}"], ["mk", "log", "--all", f"-S{n}"], ["mk", f"show{n}", "-p"]])
    )
    wrap = draw(st.sampled_from(["", "timeout 5 ", "env A=1 ", "nice -n 5 ", "stdbuf -oL "]))
    return wrap + " ".join(argv), [argv]


def _compose(
    children: st.SearchStrategy[tuple[str, list[list[str]]]],
) -> st.SearchStrategy[tuple[str, list[list[str]]]]:
    def pair(op: str) -> st.SearchStrategy[tuple[str, list[list[str]]]]:
        return st.tuples(children, children).map(
            lambda ab: (f"{ab[0][0]} {op} {ab[1][0]}", ab[0][1] + ab[1][1])
        )

    def one(f: str) -> st.SearchStrategy[tuple[str, list[list[str]]]]:
        return children.map(lambda a: (f.format(a[0], q=shlex.quote(a[0])), a[1]))

    return st.one_of(
        pair("&&"),
        pair("||"),
        pair(";"),
        pair("|"),
        st.tuples(children, children).map(lambda ab: (f"{ab[0][0]}\n{ab[1][0]}", ab[0][1] + ab[1][1])),
        st.tuples(children, children).map(
            lambda ab: (f"if {ab[0][0]}; then {ab[1][0]}; fi", ab[0][1] + ab[1][1])
        ),
        st.tuples(children, children, children).map(
            lambda t: (f"if {t[0][0]}\nthen\n{t[1][0]}\nelse {t[2][0]}\nfi", t[0][1] + t[1][1] + t[2][1])
        ),
        st.tuples(children, children).map(
            lambda ab: (f"until {ab[0][0]} || true; do {ab[1][0]}; done", ab[0][1] + ab[1][1])
        ),
        st.tuples(children, children).map(
            lambda ab: (f"while {ab[0][0]} && false; do {ab[1][0]}; done", ab[0][1] + ab[1][1])
        ),
        one("for w in x y; do {0}; done"),
        one("for w in x y\ndo\n{0}\ndone"),
        st.tuples(children, children).map(
            lambda ab: (f"case k in k) {ab[0][0]};; j|l) {ab[1][0]};; esac", ab[0][1] + ab[1][1])
        ),
        one("case k in\n  (k)\n    {0}\n    ;;\nesac"),
        one("{{ {0}; }}"),
        one("( {0} )"),
        one('echo "$( {0} )"'),
        one("v=$( {0} )"),
        one("bash -c {q}"),
        one("sh -c {q}"),
        one("timeout 9 bash -lc {q}"),
        one("eval {q}"),
        one("fn() {{ {0}; }}; fn"),
        one("function fn {{\n{0}\n}}; fn"),
        one("cat <<'EOF' >/dev/null\nif then do done ( ) $(not run) `not run`\nEOF\n{0}"),
        one("! {0}"),
    )


def _backticked(leaf: tuple[str, list[list[str]]]) -> tuple[str, list[list[str]]]:
    return f"echo `{leaf[0]}`", leaf[1]


COMPOUND = st.recursive(
    st.one_of(
        _leaf(),
        _leaf().map(_backticked),
        _leaf().map(lambda a: (f"true | xargs {a[0]}", [["true"], *a[1]])),
        _leaf().map(lambda a: (a[0].replace(" ", " \\\n  ", 1), a[1])),
    ),
    _compose,
    max_leaves=6,
)


def _marked(argvs: list[list[str]]) -> list[list[str]]:
    return [a for a in argvs if a and a[0] == "mk"]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(COMPOUND)
def test_every_simple_command_of_a_generated_compound_command_is_seen(
    case: tuple[str, list[list[str]]],
) -> None:
    cmd, want = case
    got = [s.argv for s in simple_commands(cmd)]
    assert sorted(_marked(got)) == sorted(_marked(want))
    # nothing else: no keyword, loop word, case pattern or heredoc line taken for a command
    assert {a[0] for a in got} <= {"mk", "echo", "true", "false", "fn", "cat"}


BASH = shutil.which("bash")


@pytest.mark.skipif(BASH is None, reason="needs bash")
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(COMPOUND)
def test_bash_runs_no_simple_command_the_walker_misses(
    tmp_path_factory: pytest.TempPathFactory, case: tuple[str, list[list[str]]]
) -> None:
    """Run by bash, with ``mk`` logging its argv: every command bash ran is one the walker saw (and
    the generated text is valid shell)."""
    cmd, want = case
    bin_dir = tmp_path_factory.mktemp("bin")
    log = bin_dir / "log"
    mk = bin_dir / "mk"
    mk.write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> {shlex.quote(str(log))}\nexit 0\n')
    mk.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ.get('PATH', '')}"}
    assert BASH is not None
    done = subprocess.run(
        [BASH, "-c", cmd],
        check=False,
        env=env,
        capture_output=True,
        text=True,
        timeout=20,
        stdin=subprocess.DEVNULL,
    )
    assert "syntax error" not in done.stderr, done.stderr
    ran = set(Path(log).read_text().splitlines()) if log.exists() else set()
    seen = {" ".join(a[1:]) for a in _marked([s.argv for s in simple_commands(cmd)])}
    assert ran <= seen
    assert ran <= {" ".join(a[1:]) for a in _marked(want)}  # the generator's own bookkeeping
