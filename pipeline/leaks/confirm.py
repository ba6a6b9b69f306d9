"""Solution-leak confirmation (step 2): did the attempted command's observation deliver the fix?

Evidence, any of: containment of the task's fix lines (the gold patch's added lines, or for SWE-smith
tasks — whose ``patch`` introduces the bug — its removed lines) >= ``FIX_CONTAINMENT``; the run's own
final diff found in the observation before the run wrote it (>= 0.8 of its added lines,
each block seen *with its context* as one contiguous post-image, so a one-line fix counts and a stray
equal line does not); the task's PR number in a history listing; a SWE-smith "Bug Patch"/"Remove F2P
Tests" commit shown with its diff; a fetch or install that returned content, not an error (for ``git
fetch/pull/clone``: git's own transfer output). Confirmation from what the run *later wrote* is in
:mod:`pipeline.leaks.writes`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pipeline.leaks.rules import RELATIVE, Task, git_parts, refs_of
from pipeline.leaks.text import containment, has_run, line_set, obs_lines
from pipeline.text.shell import simple_commands
from schemas.miniswe import SUBMIT_SENTINEL

FIX_CONTAINMENT = 0.5
OWN_DIFF_CONTAINMENT = 0.8
SUBMIT_MARK = SUBMIT_SENTINEL

FETCH_ERROR = re.compile(
    r"(?i)404[: ]+not found|\b(?:401|403|404|429|500|502|503)\b[^\n]{0,40}(?:error|forbidden|not found|unauthori)|"
    r"could not resolve|failed to connect|connection (?:refused|timed out|reset)|temporary failure in name|"
    r"network is unreachable|name or service not known|urlopen error|max retries exceeded|connectionerror|"
    r"^fatal:|^error:|^curl: \(\d+\)|unable to access|repository not found|could not read from remote|"
    r"rate limit exceeded|bad credentials|permission denied|\"message\":\s*\"not found\"|no such file|"
    r"command not found|ERROR: |Traceback \(most recent call last\)|timed out",
    re.M,
)
_PIP_INSTALLED = re.compile(r"(?m)^Successfully installed (.+)$")
_PKG_OK = re.compile(r"Successfully (?:installed|downloaded)|^Saved \S+|^Installed \d+ package", re.M)
BUG_SUBJECT = re.compile(
    r"(?m)^(?:[*|\\/ ]*(?:commit )?[0-9a-f]{7,40}\s+(?:\([^)\n]*\)\s+)?|\s{4})(?:Bug Patch|Remove F2P Tests)\s*$"
)
_GIT_TRANSFER = re.compile(
    r"(?m)^From \S+$|^\s*\* \[new (?:branch|tag|ref)\]|^\s*[0-9a-f]{7,}\.\.[0-9a-f]{7,}\s+\S+\s+->|"
    r"^Cloning into |^Receiving objects: |^Unpacking objects: |^Updating [0-9a-f]{7,}\.\.[0-9a-f]{7,}$|^Fast-forward$"
)
OWN_COMMIT = re.compile(r"(?m)^\[[^\]\s]+(?: \(root-commit\))? ([0-9a-f]{7,40})\]")
_PLAIN_DIFF = re.compile(r"^git (?:--no-pager )?diff(?: (?:HEAD|--cached|--staged|--no-color|-U\d+))*$")


def own_fix_seen(task: Task, output: str) -> bool:
    """Did this observation show the run's own final fix before the run typed it?"""
    blocks = [b for b in task.own_blocks if not all(x in task.written for x in b.added)]
    total = sum(len(b.added) for b in task.own_blocks)
    if not blocks or not output:
        return False
    seq = obs_lines(output)
    seen = sum(len(b.added) for b in blocks if has_run(seq, b.window))
    return seen > 0 and seen / total >= OWN_DIFF_CONTAINMENT


def own_final_diff(commands: list[str], outputs: Sequence[str | None]) -> str:
    """The run's own final diff: the submission's output, else the last plain ``git diff`` it printed."""
    if commands and SUBMIT_MARK in commands[-1] and len(outputs) >= len(commands):
        sub = outputs[len(commands) - 1] or ""
        if "\n@@ " in sub:
            return sub
    for cmd, out in zip(reversed(commands), reversed(outputs[: len(commands)]), strict=False):
        if (
            out
            and "\n@@ " in out
            and any(_PLAIN_DIFF.match(" ".join(seg.argv)) for seg in simple_commands(cmd))
        ):
            return out
    return ""


def delivered_content(output: str, rc: int | None) -> bool:
    """A fetch that printed something other than an error."""
    return (rc is None or rc == 0) and bool(output.strip()) and not FETCH_ERROR.search(output)


def _git_history(
    argv: list[str], output: str, rc: int | None, task: Task, fix_hit: bool, own_hit: bool
) -> bool:
    pr = (
        bool(task.pr_number)
        and re.search(rf"(?:#|pull/|PR[ -]?|pull request #?){task.pr_number}\b", output) is not None
    )
    return pr or fix_hit or own_hit


def _foreign_object(
    argv: list[str], output: str, rc: int | None, task: Task, fix_hit: bool, own_hit: bool
) -> bool:
    if fix_hit or own_hit:
        return True
    # checkout/restore/cherry-pick print nothing: the object landed in the tree if the final diff has the fix.
    sub, args = git_parts(argv)
    if sub == "cherry-pick" and _picked(args, output, rc):
        return True  # a commit the run did not make, applied: its change is in the tree
    writes = sub in ("checkout", "restore", "cherry-pick", "reset", "merge", "rebase", "switch")
    if writes and bool(task.fix) and not FETCH_ERROR.search(output):
        return containment(task.fix, set(task.submitted)) >= FIX_CONTAINMENT
    return False


_PICKED = re.compile(r"(?m)^\[[^\]\n]+ [0-9a-f]{7,40}\] ")
_PICK_FAILED = re.compile(
    r"(?mi)^(?:error|fatal|hint): |conflict|could not apply|is now empty|nothing to commit"
)
_PICK_CONTROL = frozenset({"--abort", "--quit", "--skip", "--continue"})


def _picked(args: list[str], output: str, rc: int | None) -> bool:
    """Did ``git cherry-pick`` apply a commit (git's ``[branch sha] subject`` line; with ``-n``,
    silence), not fail, conflict or come out empty?"""
    if _PICK_CONTROL & set(args) or rc not in (None, 0) or _PICK_FAILED.search(output):
        return False
    no_commit = bool({"-n", "--no-commit"} & set(args))
    return bool(_PICKED.search(output)) or (no_commit and not output.strip())


def _network_fetch(
    argv: list[str], output: str, rc: int | None, task: Task, fix_hit: bool, own_hit: bool
) -> bool:
    if argv[0] == "git":  # other commands of the chain print too (`git remote -v`): git's own words count
        return (rc in (None, 0) and bool(_GIT_TRANSFER.search(output))) or fix_hit or own_hit
    return delivered_content(output, rc) or fix_hit or own_hit


def _package_fetch(
    argv: list[str], output: str, rc: int | None, task: Task, fix_hit: bool, own_hit: bool
) -> bool:
    # pip naming the task's own package among those it installed is proof whatever else the output
    # holds (the other commands of a chain print their own errors: ``pip install a; pip install b``)
    for line in _PIP_INSTALLED.findall(output):
        names = {re.sub(r"-\d[^-\s]*$", "", d).lower().replace("_", "-") for d in line.split()}
        if names & {p.replace("_", "-") for p in task.packages}:
            return True
    return bool(_PKG_OK.search(output)) and not re.search(r"(?m)^ERROR:", output)


def _site_packages(
    argv: list[str], output: str, rc: int | None, task: Task, fix_hit: bool, own_hit: bool
) -> bool:
    copies = argv[0] in ("cp", "rsync") and rc in (None, 0) and not FETCH_ERROR.search(output)
    if argv[0] in ("diff", "colordiff", "cmp") and rc == 1:
        rc = 0  # diff's "the files differ": its output is the difference
    return (delivered_content(output, rc) and (fix_hit or own_hit)) or copies


CONFIRMERS = {
    "git_history": _git_history,
    "foreign_object": _foreign_object,
    "network_fetch": _network_fetch,
    "package_fetch": _package_fetch,
    "site_packages": _site_packages,
}


def confirm(kind: str, argv: list[str], output: str, rc: int | None, task: Task) -> tuple[bool, str]:
    """(confirmed, final kind) for one attempted command and its observation."""
    if BUG_SUBJECT.search(output):
        return "diff --git" in output or containment(
            task.fix, line_set(output)
        ) >= FIX_CONTAINMENT, "bug_patch"
    lines = line_set(output) if output else set()
    fix_hit = bool(task.fix) and containment(task.fix, lines) >= FIX_CONTAINMENT
    if (
        kind == "foreign_object"
        and task.swesmith
        and fix_hit
        and any(RELATIVE.match(r) for a in argv for r in refs_of(a))
    ):
        return True, "bug_patch"
    rule = CONFIRMERS.get(kind)
    if rule is None:
        return False, kind
    return rule(argv, output, rc, task, fix_hit, own_fix_seen(task, output)), kind
