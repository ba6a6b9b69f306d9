"""Repo roots → ``/testbed``, in every command, thought and output.

A root is recognised only where a path starts: the character before it may not be part of a word,
a path or a URL host (``\\w . ~ / -``), so ``https://github.com/x/repo`` and ``/a/repo`` are left
alone; and the root must end at a path boundary, so ``/repository`` and ``/apps/x`` are left alone.

Recognised roots, in order: the root the parser saw (``Episode.meta.repo_root``), ``/workspace/<name>``,
``/repo``, ``/app``, ``/testbed`` variants (``/testbed/`` doubled slashes are not touched),
``/home/<user>/<repo name>``, Python temp dirs ``/tmp/tmpXXXXXX/<name>``, and SWE-agent's
``/<owner>__<repo>``. Where the task's repo is known, the home and temp-dir forms must end in its
name, so ``/tmp/tmpab12cd/test.py`` is not mistaken for a checkout.
"""

from __future__ import annotations

import re
from functools import lru_cache

TESTBED = "/testbed"
_BEFORE = r"(?<![\w.~/-])"
_AFTER = r"(?=$|[^\w.-]|\.(?!\w))"  # "cd /repo." ends at the dot, "/repo.git" does not match
_BEFORE_SLASH = r"(?<![\w.~/-]/)"  # _BEFORE, tested just after the root's leading slash


def _repo_names(repo: str | None) -> list[str]:
    """Directory names a checkout of ``owner__repo`` (or ``owner/repo``) is commonly given."""
    if not repo:
        return []
    base = repo.split("/")[-1]
    names = {repo.replace("/", "__"), base, base.split("__")[-1], base.split(".")[0],
             base.split(".")[0].split("__")[-1]}
    return sorted((n for n in names if n), key=len, reverse=True)


def _alternatives(repo_root: str | None, repo: str | None, named: bool) -> list[str]:
    """The root forms, in the order they are tried; without ``named``, the home and temp-dir
    forms are left out."""
    names = _repo_names(repo)
    name = "(?:" + "|".join(re.escape(n) for n in names) + ")" if names else r"[\w.-]+"
    alts = []
    if repo_root and repo_root.rstrip("/") not in ("", TESTBED):
        alts.append(re.escape(repo_root.rstrip("/")))
    alts += [r"/workspace/[\w.-]+", r"/repo", r"/app"]
    if named:
        alts += [rf"/home/[\w.-]+/{name}", rf"/tmp/tmp[\w]{{6,}}/{name}"]
    alts += [r"/[A-Za-z0-9][\w.-]*__[\w.-]+"]
    return alts


@lru_cache(maxsize=256)
def _pattern(repo_root: str | None, repo: str | None, named: bool = True) -> re.Pattern[str]:
    """``_BEFORE (alternatives) _AFTER``. Without ``named`` (for a text holding neither
    ``/home/`` nor ``/tmp/tmp``, which cannot match those forms) the pattern does not depend on
    the repo, so one compiled pattern serves every run."""
    alts = _alternatives(repo_root, repo, named)
    if all(a.startswith("/") for a in alts):
        # Same language, but led by the literal "/" so the regex engine skips straight from one
        # slash to the next instead of trying the lookbehind at every character; the lookbehind
        # then tests the character before that slash.
        return re.compile("/" + _BEFORE_SLASH + "(?:" + "|".join(a[1:] for a in alts) + ")" + _AFTER)
    return re.compile(_BEFORE + "(?:" + "|".join(alts) + ")" + _AFTER)


def rewrite_roots(text: str, repo_root: str | None = None, repo: str | None = None) -> str:
    """Every repo root in ``text`` replaced by /testbed."""
    if "/" not in text:
        return text
    # alternatives that cannot match this text are left out, which keeps the pattern shared
    if repo_root and repo_root.rstrip("/") not in text:
        repo_root = None
    if "/home/" in text or "/tmp/tmp" in text:
        return _pattern(repo_root, repo).sub(TESTBED, text)
    return _pattern(repo_root, None, named=False).sub(TESTBED, text)


# home and temp dirs are ambiguous without the repo name (``/home/u/.cache``), so not checked here
# _FOREIGN without its lookarounds, for polars' regex engine: it matches wherever _FOREIGN does
# (``[^\s/]`` admits every character ``[\w.-]`` does), so a text it finds nothing in holds no
# foreign root. Kept next to _FOREIGN so the two change together.
MAYBE_FOREIGN_RS = r"/(?:workspace/|repo|app|[A-Za-z0-9][^\s/]*__)"
_FOREIGN = re.compile("/" + _BEFORE_SLASH + r"(?:workspace/[\w.-]+|repo|app|[A-Za-z0-9][\w.-]*__[\w.-]+)" + _AFTER)


def find_foreign_roots(text: str) -> list[str]:
    """Repo roots other than /testbed left in ``text`` (validator's ``foreign_root`` rule)."""
    if "/" not in text:
        return []
    return [m.group(0) for m in _FOREIGN.finditer(text)]
