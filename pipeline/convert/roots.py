"""Repo roots → ``/testbed``, in every command, thought and output.

The root is the run's checkout, found from the run itself by its parser
(``Episode.meta.repo_root``: the task's ``<uploaded_files>`` line or "repository in the directory
…", the first ``cd``, the trace's working dir). When the run shows its root, only that root becomes
``/testbed``, and the forms that name the same checkout mounted elsewhere: ``/workspace/<name>``
and ``/home/<user>/<name>`` for the task's repo, and SWE-agent's ``/<owner>__<repo>`` (its
"Current directory" in a thought); other paths under ``/workspace``, ``/tmp`` or ``/home`` (a scratch
``/workspace/test.c``, another project) and ``/repo`` or ``/app`` stay as they were. Only when the run shows no root are the usual checkout forms
tried, in order: ``/workspace/<name>``, ``/repo``, ``/app``, ``/home/<user>/<repo name>``, Python
temp dirs ``/tmp/tmpXXXXXX/<name>`` and SWE-agent's ``/<owner>__<repo>``; where the task's repo is
known, the workspace, home and temp-dir forms must end in its name, so ``/tmp/tmpab12cd/test.py``
or ``/workspace/notes`` is not mistaken for a checkout.

A root is recognised only where a path starts: the character before it may not be part of a word,
a path or a URL host (``\\w . ~ / -``), so ``https://github.com/x/repo`` and ``/a/repo`` are left
alone, except in a ``file://`` URL (pip's ``Obtaining file:///workspace/x``), whose path is a
path; and the root must end at a path boundary, so ``/repository`` and ``/apps/x`` are left alone.
"""

from __future__ import annotations

import re
from functools import lru_cache

TESTBED = "/testbed"
_BEFORE = r"(?:(?<![\w.~/-])|(?<=file://))"
_AFTER = r"(?=$|[^\w.-]|\.(?!\w))"  # "cd /repo." ends at the dot, "/repo.git" does not match
_BEFORE_SLASH = r"(?:(?<![\w.~/-]/)|(?<=file:///))"  # _BEFORE, tested just after the root's leading slash


def _repo_names(repo: str | None) -> list[str]:
    """Directory names a checkout of ``owner__repo`` (or ``owner/repo``) is commonly given."""
    if not repo:
        return []
    base = repo.split("/")[-1]
    names = {
        repo.replace("/", "__"),
        base,
        base.split("__")[-1],
        base.split(".")[0],
        base.split(".")[0].split("__")[-1],
    }
    return sorted((n for n in names if n), key=len, reverse=True)


# SWE-agent's checkout ``/<owner>__<repo>`` (GitHub's owner characters, then the repo's)
OWNER_REPO = r"/[A-Za-z0-9][A-Za-z0-9-]*__[\w.-]+"
# the directories a checkout named after the task's repo sits in (the rooted runs' named forms)
_NAMED_DIRS = r"(?:workspace/|home/[\w.-]+/|tmp/tmp[\w]{6,}/)"
_NAMED_DIR = re.compile("/" + _NAMED_DIRS)


def _alternatives(repo_root: str | None, repo: str | None) -> list[str]:
    """The root forms, in the order they are tried: the run's own root when it has one (none
    when that is /testbed) plus the forms that name the task's repo (the same checkout mounted
    elsewhere: ``/workspace/<name>``, home and temp dirs) and SWE-agent's ``/<owner>__<repo>``;
    else the usual checkout forms."""
    names = _repo_names(repo)
    name = "(?:" + "|".join(re.escape(n) for n in names) + ")" if names else r"[\w.-]+"
    # the forms ending in the repo's name share one copy of it, ``/(?:home/…/|tmp/tmp…/)<name>``:
    # the same alternatives tried in the same order, and a pattern about half as long to compile
    # (one is compiled per run)
    homes = [rf"/(?:home/[\w.-]+/|tmp/tmp[\w]{{6,}}/){name}"]
    # SWE-agent's /<owner>__<repo>: only ever a checkout. A GitHub owner is letters, digits and
    # hyphens, so Python's ``a/b.__mul__`` or ``x/self._y__z`` is no root
    dunder = OWNER_REPO
    if repo_root and repo_root.rstrip("/"):
        root = repo_root.rstrip("/")
        alts = [] if root == TESTBED else [re.escape(root)]
        return [*alts, *([rf"/{_NAMED_DIRS}{name}"] if names else []), dunder]
    return [rf"/workspace/{name}", r"/repo", r"/app", *homes, dunder]


@lru_cache(maxsize=256)
def _pattern(repo_root: str | None, repo: str | None) -> re.Pattern[str]:
    """``_BEFORE (alternatives) _AFTER``."""
    alts = _alternatives(repo_root, repo)
    if not alts:
        return re.compile(r"(?!)")  # the run's root is /testbed already: nothing to rewrite
    if all(a.startswith("/") for a in alts):
        # Same language, but led by the literal "/" so the regex engine skips straight from one
        # slash to the next instead of trying the lookbehind at every character; the lookbehind
        # then tests the character before that slash.
        return re.compile("/" + _BEFORE_SLASH + "(?:" + "|".join(a[1:] for a in alts) + ")" + _AFTER)
    return re.compile(_BEFORE + "(?:" + "|".join(alts) + ")" + _AFTER)


def _named_form_root(root: str, repo: str | None) -> bool:
    """True when the run's root (without its final slash) is itself one of the named forms
    (``/workspace/<name>``, a home or temp dir ending in the repo's name) and no longer name of
    the repo can match where it does. Then wherever the root matches, the named forms, tried
    next, match the same text, so the root needs no alternative of its own.

    A longer name (``tornadoweb__tornado`` for ``tornado``) matches where the root does only if
    what it adds could follow the root: where the path boundary (``_AFTER``) holds after it."""
    m = _NAMED_DIR.match(root)
    if m is None:
        return False
    names = _repo_names(repo)
    name = root[m.end() :]
    after = re.compile(_AFTER)
    return name in names and not any(
        n != name and n.startswith(name) and after.match(n, len(name)) for n in names
    )


def _rooted_pattern(repo_root: str, repo: str | None) -> re.Pattern[str]:
    """The pattern of a run whose root is known. A root that is one of the named forms is left
    to them: the pattern is then the repo's alone, compiled once for all its runs (a temp dir's
    root differs in every run, and a compile costs about a millisecond, more than the run's
    rewrites of most runs)."""
    return _pattern(TESTBED if _named_form_root(repo_root.rstrip("/"), repo) else repo_root, repo)


def rewrite_roots(text: str, repo_root: str | None = None, repo: str | None = None) -> str:
    """Every repo root in ``text`` replaced by /testbed."""
    if "/" not in text:
        return text
    if repo_root and repo_root.rstrip("/"):
        # the run's own root and the forms naming its repo, nothing else
        return _rooted_pattern(repo_root, repo or None).sub(TESTBED, text)
    # every usual form, those naming the repo included: one search, not one for each form's
    # marker first to leave out those the text cannot hold (a third faster on unrooted runs)
    return _pattern(None, repo).sub(TESTBED, text)


@lru_cache(maxsize=256)
def _ascii_twin(pattern: re.Pattern[str]) -> re.Pattern[str]:
    """``pattern`` with ASCII classes: on an ASCII text it matches where ``pattern`` does (there
    ``\\w`` is ``[a-zA-Z0-9_]`` either way) and the regex engine tests its classes faster."""
    return re.compile(pattern.pattern, re.ASCII)


class RootRewriter:
    """``rewrite_roots(text, repo_root, repo)`` for one run's many texts: the run's pattern is
    looked up once, not once per text; an ASCII text (most are) goes through its ASCII twin."""

    def __init__(self, repo_root: str | None = None, repo: str | None = None) -> None:
        rooted = repo_root and repo_root.rstrip("/")
        pattern = _rooted_pattern(repo_root, repo or None) if repo_root and rooted else _pattern(None, repo)
        self.sub = pattern.sub
        self.ascii_sub = _ascii_twin(pattern).sub

    def __call__(self, text: str) -> str:
        if "/" not in text:
            return text
        return (self.ascii_sub if text.isascii() else self.sub)(TESTBED, text)

    def deep(self, value: object) -> object:
        """Every string in a tool call's arguments (lists and dicts walked) rewritten."""
        if isinstance(value, dict):
            # mostly strings: each rewritten in place, as __call__ does, without a call of it
            sub, ascii_sub = self.sub, self.ascii_sub
            return {
                k: (
                    ((ascii_sub if v.isascii() else sub)(TESTBED, v) if "/" in v else v)
                    if type(v) is str
                    else self.deep(v)
                )
                for k, v in value.items()
            }
        if isinstance(value, str):
            return self(value)
        if isinstance(value, list):
            return [self.deep(v) for v in value]
        return value


# Residue a converted run must not hold (validate's ``foreign_root``): ``/repo``, ``/app``,
# SWE-agent's ``/<owner>__<repo>`` and ``/workspace/<the repo's name>``. Any other path under
# /workspace (a scratch file, another project) is not a checkout, as in rewrite_roots; home and
# temp dirs are ambiguous (``/home/u/.cache``), so not checked.
# MAYBE_FOREIGN_RS is the check without its lookarounds, for polars' regex engine: it matches
# wherever the check does (``[^\s/]`` admits every character ``[\w.-]`` does), so a text it finds
# nothing in holds no foreign root. Kept next to _foreign so the two change together.
MAYBE_FOREIGN_RS = r"/(?:workspace/|repo|app|[A-Za-z0-9][^\s/]*__)"


@lru_cache(maxsize=256)
def _foreign(repo: str | None) -> re.Pattern[str]:
    names = _repo_names(repo)
    workspace = ["workspace/(?:" + "|".join(re.escape(n) for n in names) + ")"] if names else []
    alts = [*workspace, "repo", "app", OWNER_REPO[1:]]
    return re.compile("/" + _BEFORE_SLASH + "(?:" + "|".join(alts) + ")" + _AFTER)


def find_foreign_roots(text: str, repo: str | None = None) -> list[str]:
    """Repo roots other than /testbed left in ``text`` (validator's ``foreign_root`` rule);
    ``repo``: the run's repo, whose ``/workspace/<name>`` checkout would be one."""
    if "/" not in text:
        return []
    return [m.group(0) for m in _foreign(repo or None).finditer(text)]
