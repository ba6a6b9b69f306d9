"""Instance ids: the SWE-smith id grammar (``owner__repo.<commit8>.<method>__<hash>``,
``owner__repo.<commit8>.pr_<N>``) and SWE-bench's (``owner__repo-<N>``)."""

from __future__ import annotations

import re

HEX_RE = re.compile(r"\A[0-9a-f]{7,40}\Z")
SWESMITH_ID_RE = re.compile(r"\A([\w.-]+?__[\w.-]+?)\.([0-9a-f]{8})\.")
# the start of a SWE-smith task id as the leak rules tell one (an owner without dots)
SWESMITH_TASK_RE = re.compile(r"^[\w-]+__[\w.-]+\.[0-9a-f]{8}\.")


def swesmith_commit(instance_id: str) -> str | None:
    m = SWESMITH_ID_RE.match(instance_id)
    return m.group(2) if m else None


def repo_from_id(instance_id: str) -> str:
    """``owner__repo`` from SWE-smith (``owner__repo.c0ffee12.x``) or SWE-bench (``owner__repo-123``) ids."""
    m = SWESMITH_ID_RE.match(instance_id)
    if m:
        return m.group(1)
    m2 = re.match(r"\A([\w.-]+__[\w.-]+?)-\d+\Z", instance_id)
    return m2.group(1) if m2 else ""


# a whole SWE-smith id, read to its end: its commit and the method that made the instance
_SWESMITH = re.compile(r"^[\w.-]+__[\w.-]+?\.([0-9a-f]{7,40})\.(\w+?)(?:__\w+)?$")
_PR_SUFFIX = re.compile(r"\.pr_\d+$")


def family_of(instance_id: str) -> str:
    """``pr`` for real pull requests, else SWE-smith's method class (lm, combine, mechanical)."""
    if _PR_SUFFIX.search(instance_id):
        return "pr"
    m = _SWESMITH.match(instance_id)
    if not m:
        return "pr"  # SWE-bench-style ids and other pools are real PRs
    method = m.group(2)
    if method.startswith(("lm_rewrite", "lm_modify", "lm_")):
        return "lm"
    if method.startswith("combine"):
        return "combine"
    if method.startswith("pr_"):
        return "pr"
    return "mechanical"


def id_base_commit(instance_id: str) -> str | None:
    """The commit a whole SWE-smith id ends its name with. For a compound id (an instance made
    from another: ``owner__repo.<c1>.<method>__<h>.<c2>.pr_0__<h>``) that is the last commit,
    where :func:`swesmith_commit` reads the first."""
    m = _SWESMITH.match(instance_id)
    return m.group(1) if m else None


def normalise_repo(repo: str) -> str:
    """``owner/repo`` and URL forms → ``owner__repo`` (the catalog's spelling)."""
    r = repo.strip().removesuffix(".git")
    for prefix in ("https://github.com/", "http://github.com/", "github.com/"):
        if r.startswith(prefix):
            r = r[len(prefix) :]
    return r.replace("/", "__") if "__" not in r else r


# The same grammar as polars patterns (task dedup compares ids and commits column-wise): a PR
# mirror's id and the commit8 of an id, read from its lower-cased form.
SWESMITH_PR_PATTERN = r"^(.+?)\.[0-9a-f]{8}\.pr_(\d+)$"
SWESMITH_COMMIT_PATTERN = r"^[^.]+__[^.]+\.([0-9a-f]{8})\."
