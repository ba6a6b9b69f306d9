"""The convert step's fast paths are the plain code they replace: each is checked against that
code (kept as the specification) on generated inputs built from the pieces that decide it."""

from __future__ import annotations

import re
import shlex
import sys

from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.convert import _is_submit_command, edits, roots
from pipeline.convert.roots import RootRewriter, rewrite_roots
from pipeline.parsers.assembly import SUBMIT_MARKERS
from pipeline.text import shell

# texts made of paths (a root's forms, look-alikes, the repo's names) and what may stand before one
_SEGMENTS = ["repo", "app", "workspace", "home", "alice", "tmp", "tmpab12cd", "testbed", "astropy", "pandas"]
_SEGMENTS += [
    "notes",
    "a__b",
    "srv",
    "checkouts",
    "proj-7",
    "repo.git",
    "x.py",
    "app.",
    "",
    "pandas-dev__pandas",
]
_SEGMENTS += ["tmp/tmpab12cd/astropy", "home/alice/pandas", "workspace/astropy", "workspace/pandas"]
_BETWEEN = ["", " ", "\n", "file://", "https://github.com", ".", "~", "-", "x", "/"]
_paths = st.lists(st.sampled_from(_SEGMENTS), min_size=1, max_size=4).map(lambda s: "/" + "/".join(s))
_texts = st.lists(st.tuples(st.sampled_from(_BETWEEN), _paths), max_size=5).map(
    lambda parts: "".join(a + b for a, b in parts)
)
_ROOTS = [
    None,
    "",
    "/",
    "/testbed",
    "/testbed/",
    "/repo",
    "/app/",
    "/srv/checkouts/proj-7",
    "/workspace/astropy",
]
_REPOS = [None, "", "astropy__astropy", "pandas-dev__pandas.95280573", "o/x", "srv"]


@settings(max_examples=400)
@given(st.lists(_texts, max_size=4), st.sampled_from(_ROOTS), st.sampled_from(_REPOS))
def test_a_runs_root_rewriter_is_rewrite_roots(texts: list[str], root: str | None, repo: str | None) -> None:
    rewrite = RootRewriter(root, repo)
    for text in texts:
        assert rewrite(text) == rewrite_roots(text, root, repo)
    args = {"command": texts, "path": texts[0] if texts else "/repo", "n": 3, "nested": {"x": texts[-1:]}}
    assert (
        rewrite.deep(args)
        == {
            "command": [rewrite_roots(t, root, repo) for t in texts],
            "path": rewrite_roots(args["path"], root, repo),  # type: ignore[arg-type]
            "n": 3,
            "nested": {"x": [rewrite_roots(t, root, repo) for t in texts[-1:]]},
        }
    )


def _peel_with_shlex(cmd: str) -> str:
    """pipeline.text.shell.peel_wrappers before its single-quote fast path: every script through shlex."""
    cmd = cmd.strip()
    while True:
        m = shell._WRAP_RE.match(cmd)
        if m:
            try:
                words = shlex.split(m.group(1))
            except ValueError:
                words = []
            if len(words) == 1:
                cmd = words[0].strip()
                continue
        m = shell._CD_RE.match(cmd) or shell._TIMEOUT_RE.match(cmd)
        if m:
            cmd = m.group(1).strip()
            continue
        return cmd


_SCRIPT_PIECES = ["'", '"', "\\", " ", "\n", "ls", "-la", "cd /testbed", "&&", "#", "$HOME", "''", "x"]
_scripts = st.lists(st.sampled_from(_SCRIPT_PIECES), max_size=8).map("".join)


@settings(max_examples=400)
@given(
    st.sampled_from(
        ["bash -lc ", "sh -c ", "/bin/bash -c ", "timeout 30 bash -lc ", "cd /testbed && ", " ", ""]
    ),
    _scripts,
)
def test_peeling_a_single_quoted_script_is_what_shlex_does(wrapper: str, script: str) -> None:
    for cmd in (wrapper + script, f"{wrapper}'{script}'", f"{wrapper}'{script.replace(chr(39), '')}'"):
        assert shell.peel_wrappers(cmd) == _peel_with_shlex(cmd)


@given(_scripts)
def test_a_submit_command_is_one_naming_a_sentinel(text: str) -> None:
    for cmd in (
        text,
        f"echo {text}MINI_SWE_AGENT_FINAL_OUTPUT",
        f"{text}NANO_SWE_AGENT_FINAL_OUTP",
        " submit ",
        # every marker, and the part they share (looked for first) without one
        *(f"{text}{s}{text}" for s in SUBMIT_MARKERS),
        f"echo {text}_FINAL_OUTPUT",
        f"echo SWE_AGENT{text}_FINAL_OUTPUT",
    ):
        want = cmd.strip() == "submit" or any(s in cmd for s in SUBMIT_MARKERS)
        assert _is_submit_command(cmd) == want


def test_a_safe_character_is_a_printable_one() -> None:
    # py_str tests whole texts with str.isprintable: the same test as _safe_char on every character
    for code in range(sys.maxunicode + 1):
        c = chr(code)
        assert edits._safe_char(c) == c.isprintable(), hex(code)


def _py_str_per_character(text: str) -> str:
    """pipeline.convert.edits.py_str before its whole-text fast paths."""
    if "\n" not in text and "`" not in text and all(edits._safe_char(c) for c in text):
        return repr(text)
    out: list[str] = []
    n = len(text)
    for i, c in enumerate(text):
        if c == "\\":
            out.append("\\\\")
        elif c == "'":
            out.append("\\'" if i == n - 1 or text[i + 1] == "'" else "'")
        elif c == "\n" or c == "\t":
            out.append(c)
        elif c == "\r":
            out.append("\\r")
        elif c == "`" and (i == 0 or text[i - 1] == "\n"):
            out.append("\\x60")
        elif not edits._safe_char(c):
            out.append(edits._escape_char(c))
        else:
            out.append(c)
    return "'''" + "".join(out) + "'''"


_LITERAL_PIECES = ["'", "''", "\\", "\n", "\t", "\r", "`", "```", "x", " ", "é", "\u2028", "\x00", '"', "\n`"]


@settings(max_examples=500)
@given(st.lists(st.sampled_from(_LITERAL_PIECES), max_size=12).map("".join))
def test_a_python_literal_is_the_per_character_one(text: str) -> None:
    assert edits.py_str(text) == _py_str_per_character(text)
    assert eval(edits.py_str(text)) == text


def _old_pattern(repo_root: str | None, repo: str | None) -> re.Pattern[str]:
    """roots._pattern before the forms ending in the repo's name shared one copy of it."""
    names = roots._repo_names(repo)
    name = "(?:" + "|".join(re.escape(n) for n in names) + ")" if names else r"[\w.-]+"
    homes = [rf"/home/[\w.-]+/{name}", rf"/tmp/tmp[\w]{{6,}}/{name}"]
    dunder = r"/[A-Za-z0-9][\w.-]*__[\w.-]+"
    if repo_root and repo_root.rstrip("/"):
        root = repo_root.rstrip("/")
        alts = [] if root == roots.TESTBED else [re.escape(root)]
        alts = [*alts, *([rf"/workspace/{name}", *homes] if names else []), dunder]
    else:
        alts = [rf"/workspace/{name}", r"/repo", r"/app", *homes, dunder]
    return re.compile("/" + roots._BEFORE_SLASH + "(?:" + "|".join(a[1:] for a in alts) + ")" + roots._AFTER)


@settings(max_examples=400)
@given(_texts, st.sampled_from(_ROOTS), st.sampled_from(_REPOS))
def test_a_root_pattern_rewrites_what_the_unshared_one_did(
    text: str, root: str | None, repo: str | None
) -> None:
    want = _old_pattern(root, repo or None).sub(roots.TESTBED, text)
    assert roots._pattern(root, repo or None).sub(roots.TESTBED, text) == want


def test_every_root_form_is_rewritten_as_before_for_every_run_kind() -> None:
    texts = [b + "/" + a + e for a in _SEGMENTS for b in _BETWEEN for e in ("", "/x", ".", ".git", " ")]
    for root in _ROOTS:
        for repo in _REPOS:
            rewrite = RootRewriter(root, repo)
            new, old = roots._pattern(root, repo or None), _old_pattern(root, repo or None)
            for text in texts:
                assert new.sub(roots.TESTBED, text) == old.sub(roots.TESTBED, text), (root, repo, text)
            for text in texts:
                assert rewrite(text) == rewrite_roots(text, root, repo)
