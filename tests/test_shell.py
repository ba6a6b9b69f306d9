"""The one shell lexer and wrapper peeler: every wrapper form, and convert's peeler agreeing with it."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.leaks.rules import classify, make_task
from pipeline.text.shell import peel_wrappers, split_command
from pipeline.text.shell import peel_wrappers as convert_peel

INNER = ["git", "log", "--all", "-p"]

WRAPPED = [
    "timeout 30 git log --all -p",
    "timeout 2.5m git log --all -p",
    "timeout -s KILL 30 git log --all -p",
    "timeout -k 5 30 git log --all -p",
    "timeout -s KILL -k 5 30 git log --all -p",
    "timeout --signal=KILL --kill-after=5 30 git log --all -p",
    "timeout --preserve-status 30 git log --all -p",
    "env A=B git log --all -p",
    "env -u HOME A=B C=D git log --all -p",
    "env -i PATH=/usr/bin git log --all -p",
    "A=B GIT_PAGER=cat git log --all -p",
    "sudo git log --all -p",
    "sudo -u builder git log --all -p",
    "sudo -E -u builder -- git log --all -p",
    "nice git log --all -p",
    "nice -n 10 git log --all -p",
    "nice -10 git log --all -p",
    "stdbuf -oL git log --all -p",
    "stdbuf -o L -e 0 git log --all -p",
    "nohup git log --all -p",
    "time git log --all -p",
    "command git log --all -p",
    "exec git log --all -p",
    "/usr/bin/git log --all -p",
    "bash -c 'git log --all -p'",
    "bash -lc 'git log --all -p'",
    "sh -lc 'git log --all -p'",
    'sh -c "git log --all -p"',
    "/bin/bash -c 'git log --all -p'",
    "bash --login -c 'git log --all -p'",
    "bash -e -c 'git log --all -p'",
    "zsh -ic 'git log --all -p'",
    "cd /testbed && git log --all -p",
    "cd /work/repo; git log --all -p",
    'cd "/some dir" && git log --all -p',
    "cd /testbed && timeout -s KILL 30 sudo -u u env A=B nice -n 5 stdbuf -oL bash -lc 'git log --all -p'",
]


@pytest.mark.parametrize("cmd", WRAPPED)
def test_every_wrapper_form_is_peeled(cmd: str) -> None:
    segs = split_command(cmd)
    assert [[s.argv[0].rsplit("/", 1)[-1], *s.argv[1:]] for s in segs] == [INNER]


@pytest.mark.parametrize("cmd", WRAPPED)
def test_every_wrapper_form_reaches_the_git_history_rule(cmd: str) -> None:
    task = make_task({"instance_id": "acme__widget-1"})
    assert [classify(s, task) for s in split_command(cmd)] == ["git_history"]


def test_the_timeout_signal_form_that_used_to_slip_past() -> None:
    """leaks.py:182 dropped only ``-s`` and left ``KILL 30`` in front of git."""
    segs = split_command("timeout -s KILL 30 git log --all -p")
    assert segs[0].argv[0] == "git"


def test_chains_keep_their_operators() -> None:
    segs = split_command("git log --all -p | head -50 && echo done; ls")
    assert [(s.argv[0], s.op) for s in segs] == [("git", "|"), ("head", "&&"), ("echo", ";"), ("ls", "")]


def test_heredoc_body_goes_to_its_command() -> None:
    segs = split_command("cat > /testbed/a.py <<'EOF'\nx = 1\nEOF\necho ok")
    assert segs[0].argv == ["cat", ">", "/testbed/a.py", "<<EOF"] and segs[0].heredoc == "x = 1"
    assert segs[1].argv == ["echo", "ok"]


def test_convert_uses_the_same_peeler() -> None:
    assert convert_peel is peel_wrappers


@pytest.mark.parametrize(
    ("cmd", "published"),
    [
        ("bash -lc 'git log --all -p'", "git log --all -p"),
        ("cd /testbed && git log --all -p", "git log --all -p"),
        ("timeout -s KILL 30 git log --all -p", "git log --all -p"),
        ("timeout -k 5 30 git log --all -p", "git log --all -p"),
        ("cd /testbed && timeout 30 bash -lc 'git log --all -p'", "git log --all -p"),
        # not harness wrappers: the command's own words, published as written
        ("sudo -u u git log --all -p", "sudo -u u git log --all -p"),
        ("cd /elsewhere && git log --all -p", "cd /elsewhere && git log --all -p"),
    ],
)
def test_convert_peels_only_harness_wrappers(cmd: str, published: str) -> None:
    assert peel_wrappers(cmd) == published


_WORDS = st.sampled_from(
    [
        "git",
        "log",
        "--all",
        "-p",
        "show",
        "HEAD~1",
        "ls",
        "-la",
        "echo",
        "x",
        "&&",
        "|",
        ";",
        "'a b'",
        "A=B",
        "-s",
        "KILL",
        "30",
        "5m",
        "-k",
        "2",
    ]
)
_PREFIX = st.sampled_from(
    [
        "",
        "cd /testbed && ",
        "cd /testbed; ",
        "timeout 30 ",
        "timeout -s KILL 30 ",
        "timeout -k 2 10 ",
        "timeout --signal=TERM 5m ",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_PREFIX, max_size=3), st.lists(_WORDS, min_size=1, max_size=8), st.booleans())
def test_what_convert_peels_the_lexer_peels_too(prefixes: list[str], words: list[str], wrap: bool) -> None:
    """Whatever the string-level peeler removes, the argv-level view already saw through: both views
    of a command name the same simple commands."""
    inner = " ".join(words)
    # shlex cannot tell a quoted "&&" from the operator: a script of bare operators is not a command
    wrap = wrap and "'" not in inner and not set(words) & {"&&", "|", ";"}
    cmd = "".join(prefixes) + (f"bash -lc {inner!r}" if wrap else inner)
    assert [s.argv for s in split_command(cmd)] == [s.argv for s in split_command(peel_wrappers(cmd))]


def _shlex_reference(line: str) -> list[str]:
    """What the lexer gave before its regex path: shlex, or a whitespace split on bad quotes."""
    import shlex

    try:
        lex = shlex.shlex(line, posix=True, punctuation_chars=";&|()")
        lex.whitespace_split = True
        lex.commenters = "#"
        return list(lex)
    except ValueError:
        return line.split()


@settings(max_examples=2000, deadline=None)
@given(st.text(alphabet=" \t\r\n'\"\\#;&|()<>=$-_./~*ab01\u00a0é", max_size=40))
def test_the_regex_lexer_gives_shlex_s_tokens(line: str) -> None:
    from pipeline.text.shell import shlex_split

    assert shlex_split(line) == _shlex_reference(line)


def test_split_command_keeps_a_quoted_multiline_argument_in_one_command() -> None:
    segs = split_command("printf '%s\\n' 'first\n1. second\n2. third' && git status")
    assert [s.argv[0] for s in segs] == ["printf", "git"]
    assert segs[0].argv[2] == "first\n1. second\n2. third"


def test_a_continued_line_is_one_command_without_its_backslash_newline() -> None:
    segs = split_command("find . -name '*.py' \\\n  | xargs grep -n foo \\\n  | head -5")
    assert [s.argv[0] for s in segs] == ["find", "grep", "head"]  # xargs is a wrapper: peeled
    assert segs[1].argv == ["grep", "-n", "foo"]
    # inside single quotes a backslash-newline is text
    assert split_command("printf 'a\\\nb'")[0].argv == ["printf", "a\\\nb"]
