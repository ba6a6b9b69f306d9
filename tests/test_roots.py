"""Repo roots become /testbed; look-alikes and URLs are left alone."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.convert.roots import find_foreign_roots, rewrite_roots


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("cd /workspace/astropy && ls", "cd /testbed && ls"),
        ("python /workspace/proj/src/a.py", "python /testbed/src/a.py"),
        ("cat /repo/setup.py", "cat /testbed/setup.py"),
        ("ls /app", "ls /testbed"),
        ("PYTHONPATH=/repo:/repo/src pytest", "PYTHONPATH=/testbed:/testbed/src pytest"),
        ('open("/app/main.py")', 'open("/testbed/main.py")'),
        ("cd /repo.", "cd /testbed."),
        (
            "[File: /marshmallow-code__marshmallow/src/fields.py (9 lines total)]",
            "[File: /testbed/src/fields.py (9 lines total)]",
        ),
        ("/testbed/x.py stays", "/testbed/x.py stays"),
    ],
)
def test_roots_are_rewritten(text: str, expected: str) -> None:
    assert rewrite_roots(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "ls /repository/x",
        "ls /apps/x",
        "ls /application",
        "see https://github.com/x/repo and https://example.com/app/page",
        "git clone https://github.com/owner__repo",
        "cat /testbed/src/repo/app.py",
        "cat /etc/repo.d/app",
        "python -m app",
        "cd /repo.git",
        "/testbed/sub/a__b.py",
    ],
)
def test_look_alikes_are_untouched(text: str) -> None:
    assert rewrite_roots(text) == text
    assert find_foreign_roots(text) == []


def test_home_and_temp_roots_need_the_repo_name() -> None:
    text = "cd /home/alice/astropy && cp /tmp/tmpab12cd34/astropy/a.py /tmp/tmpab12cd34/notes.txt"
    assert rewrite_roots(text, repo="astropy__astropy") == (
        "cd /testbed && cp /testbed/a.py /tmp/tmpab12cd34/notes.txt"
    )
    # SWE-smith-style repo ids name the same checkout
    assert rewrite_roots("ls /home/u/pandas/x", repo="pandas-dev__pandas.95280573") == "ls /testbed/x"
    assert rewrite_roots("ls /home/u/.cache/pip", repo="pandas-dev__pandas") == "ls /home/u/.cache/pip"


def test_parser_root_is_used_first() -> None:
    assert (
        rewrite_roots(
            "cd /srv/checkouts/proj-7 && ls /srv/checkouts/proj-7/src", repo_root="/srv/checkouts/proj-7"
        )
        == "cd /testbed && ls /testbed/src"
    )
    assert rewrite_roots("ls /srv/checkouts/proj-70", repo_root="/srv/checkouts/proj-7") == (
        "ls /srv/checkouts/proj-70"
    )


def test_foreign_roots_are_reported() -> None:
    # /workspace/x is a checkout only when x is the run's repo (other /workspace paths stay)
    assert find_foreign_roots("cd /workspace/x && cat /repo/a") == ["/repo"]
    assert find_foreign_roots("cd /workspace/x && cat /repo/a", repo="o__x") == ["/workspace/x", "/repo"]


# The rewrite leaves out alternatives a text cannot match (the parser's root when absent, the
# home and temp-dir forms without "/home/" or "/tmp/tmp"); the result must be the full pattern's.
_ROOT_PIECES = [
    "/repo",
    "/app",
    "/workspace/foo",
    "/home/u/django",
    "/home/u/x",
    "/tmp/tmpabcdef/django",
    "/tmp/tmpabcdef/x",
    "/owner__repo",
    "/owner.__repo",
    "/_x__y",
    "/srv/root",
    "/srv/rootx",
    "~",
    "-",
    ".",
    "x",
    " ",
    "\n",
    "https://x.com/repo",
    "/repository",
    "/testbed",
    "//",
    "/",
    # names followed by a dot, a dash or a longer name; roots holding non-path characters
    "/home/u/django.",
    "/home/u/django.x",
    "/home/u/django-",
    "/home/u/a__django",
    "/home/",
    "/tmp/tmpabcdef/",
    "/a:",
    "/a:/repo",
    "/a:/workspace",
    ":",
    "b",
    "file://",
    "file:",
]


@settings(max_examples=1500, deadline=None)
@given(
    st.lists(st.sampled_from(_ROOT_PIECES), max_size=12).map("".join),
    st.sampled_from(
        [
            None,
            "/srv/root",
            "/testbed",
            "/workspace/foo",
            "srv",
            "/a:",
            "/a:/workspace",
            "/home/u/django",
            "/",
            "/srv/root/",
            # roots that are named forms (left to them when no longer name extends theirs)
            "/tmp/tmpabcdef/django",
            "/home/u/django/",
            "/workspace/x:y",
            "/home/u/django.x",
        ]
    ),
    st.sampled_from([None, "owner/django", "a__django", "my repo/x:y", "django.x"]),
)
def test_rewrite_equals_the_documented_pattern(text: str, root: str | None, repo: str | None) -> None:
    from pipeline.convert.roots import _AFTER, _BEFORE, _alternatives

    # the documented form: not after a word/path character, any root form, then a path boundary
    alts = _alternatives(root, repo)
    if not alts:  # the run's root is /testbed: nothing is rewritten
        assert rewrite_roots(text, root, repo) == text
        return
    full = re.compile(_BEFORE + "(?:" + "|".join(alts) + ")" + _AFTER)
    assert rewrite_roots(text, root, repo) == full.sub("/testbed", text)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from(_ROOT_PIECES), max_size=12).map("".join),
    st.sampled_from([None, "owner/foo", "a__django"]),
)
def test_foreign_roots_equal_the_documented_pattern(text: str, repo: str | None) -> None:
    from pipeline.convert.roots import _AFTER, _BEFORE, _repo_names

    names = "|".join(re.escape(n) for n in _repo_names(repo))
    workspace = f"/workspace/(?:{names})|" if names else ""
    full = re.compile(_BEFORE + f"(?:{workspace}/repo|/app|/[A-Za-z0-9][A-Za-z0-9-]*__[\\w.-]+)" + _AFTER)
    assert find_foreign_roots(text, repo) == full.findall(text)


_NAMED_ROOT_PIECES = [
    *_ROOT_PIECES,
    "/tmp/tmpzz99yy/django",
    "/tmp/tmpzz99yy/django.",
    "/tmp/tmpzz99yy/django.x",
    "/tmp/tmpzz99yy/django-",
    "/tmp/tmpzz99yy/django/",
    "/tmp/tmpzz99yy/a__django",
    "/tmp/tmpzz99yy/x:y",
    "/tmp/tmpzz99yy/x:y.",
    "/workspace/django",
    "/home/v/django",
    "/home/v/django.x.",
    "/tmp/tmpzz99y/django",
    "file:///tmp/tmpzz99yy/django",
    "/tmp/tmpzz99yy/djangoweb__django",
    "/tmp/tmpzz99yy/django:x__django",
    "/tmp/tmpzz99yy/django-__django",
    "/tmp/tmpzz99yy/x",
    "/home/v/x:y__x",
    "__django",
    ":x",
]


# what may follow a root in a text: a boundary, or what a longer name of the repo adds
_ROOT_SUFFIXES = ["", ".", ". ", ".x", "-", ":y", ":y__x", "web__django", ":x__django", "-__django", "/a"]


@settings(max_examples=2000, deadline=None)
@given(
    st.data(),
    st.sampled_from(
        [
            "/tmp/tmpzz99yy/django",
            "/tmp/tmpzz99yy/django/",
            "/tmp/tmpzz99yy/django.x",
            "/tmp/tmpzz99yy/x:y",
            "/tmp/tmpzz99yy/a__django",
            "/workspace/django",
            "/home/v/django",
            "/home/v/django.x",
            "/tmp/tmpzz99y/django",
            "/tmp/tmpzz99yy/x",
            "/home/v/x",
        ]
    ),
    st.sampled_from(
        [
            "owner/django",
            "a__django",
            "django.x",
            "my repo/x:y",
            "o/django.x.",
            "o/django.",
            "djangoweb/django",
            "django:x/django",
            "django-/django",
            "x:y/x",
        ]
    ),
)
def test_a_named_form_root_rewrites_as_its_own_alternative(data: st.DataObject, root: str, repo: str) -> None:
    """A run whose root is a named form gets the repo's pattern, without the root as an
    alternative of its own (one compile per repo, not per temp dir): every rewrite is the one
    with it, by the function and by a run's RootRewriter."""
    from pipeline.convert.roots import _AFTER, _BEFORE, RootRewriter, _alternatives

    pieces = [*_NAMED_ROOT_PIECES, *(root.rstrip("/") + s for s in _ROOT_SUFFIXES)]
    text = "".join(data.draw(st.lists(st.sampled_from(pieces), max_size=8)))

    with_root = re.compile(_BEFORE + "(?:" + "|".join(_alternatives(root, repo)) + ")" + _AFTER)
    expected = with_root.sub("/testbed", text)
    assert rewrite_roots(text, root, repo) == expected
    assert RootRewriter(root, repo)(text) == expected


def test_temp_dir_roots_share_the_repo_pattern() -> None:
    from pipeline.convert.roots import _rooted_pattern

    a = _rooted_pattern("/tmp/tmpabcdef/django", "owner/django")
    assert a is _rooted_pattern("/tmp/tmpzz99yy/django/", "owner/django")
    assert a is _rooted_pattern("/home/u/django", "owner/django")
    # a longer name that cannot follow where the root ends (the owner's name, a dotted suffix)
    # leaves the root to the named forms too
    assert _rooted_pattern("/tmp/tmpabcdef/tornado", "tornadoweb/tornado") is _rooted_pattern(
        "/home/u/tornado", "tornadoweb/tornado"
    )
    assert _rooted_pattern("/home/u/django", "django.x") is _rooted_pattern("/home/v/django", "django.x")
    # one that can keeps the root's own alternative: the named forms would take that longer name
    # where the root ends before it
    assert _rooted_pattern("/home/u/django", "o/django.") is not _rooted_pattern(
        "/home/v/django", "o/django."
    )
    assert _rooted_pattern("/home/u/x", "x:y/x") is not _rooted_pattern("/home/v/x", "x:y/x")
    text = "cd /tmp/tmpabcdef/django. then /tmp/tmpabcdef/django.x"
    assert (
        rewrite_roots(text, "/tmp/tmpabcdef/django", "o/django.")
        == "cd /testbed. then /tmp/tmpabcdef/django.x"
    )
    assert (
        rewrite_roots(text, "/tmp/tmpabcdef/django.", "o/django.")
        == "cd /testbed then /tmp/tmpabcdef/django.x"
    )


def test_python_dunder_names_after_a_slash_are_no_swe_agent_root() -> None:
    """SWE-agent's checkout is ``/<owner>__<repo>`` and a GitHub owner has no ``.`` or ``_``: the
    code ``prettyForm.__mul__(*a)/prettyForm.__mul__(*b)`` (a real sympy diff) is left alone."""
    code = "return prettyForm.__mul__(*a)/prettyForm.__mul__(*b)"
    assert rewrite_roots(code, "/sympy__sympy", "sympy__sympy") == code
    assert rewrite_roots(code) == code and find_foreign_roots(code) == []
    assert rewrite_roots("cd /pytest-dev__pytest/src", "/pytest-dev__pytest") == "cd /testbed/src"
    assert find_foreign_roots("ls /scikit-learn__scikit-learn") == ["/scikit-learn__scikit-learn"]
