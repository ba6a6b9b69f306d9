"""One run through both solution-leak steps: rules name attempts, confirmation decides the drop."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import overload

import polars as pl
import pyarrow as pa

from pipeline.leaks.confirm import (
    BUG_SUBJECT,
    OWN_COMMIT,
    OWN_DIFF_CONTAINMENT,
    SUBMIT_MARK,
    confirm,
    own_final_diff,
)
from pipeline.leaks.rules import (
    MAYBE_ATTEMPT,
    RELATIVE,
    Task,
    classify,
    foreign_ref,
    git_parts,
    make_task,
    maybe_attempt,
    refs_of,
)
from pipeline.leaks.text import WS, diff_side, obs_lines, own_blocks
from pipeline.leaks.writes import Write, WriteMatch, confirming_write, writes_of
from pipeline.text.shell import Segment, simple_commands

DETAIL_CMD_CHARS = 200
DETAIL_MATCH_LINES = 3  # matching lines quoted in a write-confirmed drop's detail
DETAIL_LINE_CHARS = 100
# kinds whose delivered text the run could type in (a package install or a bug commit is confirmed as such)
WRITE_CONFIRMED = frozenset({"git_history", "foreign_object", "network_fetch", "site_packages"})
# listings that, without a flag or ref beyond the checkout (the rules name those), print only its past
OWN_LISTINGS = frozenset({"log", "rev-list", "shortlog", "whatchanged"})
LISTED_SHA = re.compile(r"(?m)^[*|\\/ ]*(?:commit )?([0-9a-f]{7,40})\b")
# git commands that write an object's content into the tree themselves (the run types nothing)
TREE_WRITERS = frozenset(
    {"checkout", "restore", "switch", "reset", "merge", "rebase", "stash", "cherry-pick"}
)


@dataclass
class Verdict:
    """A run's solution-leak outcome: the confirmed kind (None: kept), its evidence, and the
    unconfirmed attempts."""

    kind: str | None = None
    detail: str = ""
    attempts: set[str] = field(default_factory=set)


def scan_run(
    row: dict[str, object],
    maybe: list[bool] | None = None,
    lines: list[bool] | None = None,
) -> Verdict:
    """Both steps for one run (a dict with instance_id, repo, base_commit, patch, commands, outputs).

    ``maybe`` (per command, :func:`maybe_attempt`) and ``lines`` (per output, it may hold an
    ``OWN_COMMIT`` or a ``BUG_SUBJECT`` line) are the batch's vectorised pre-filters (:func:`prefilters`: necessary conditions, so an output they rule out is
    never read); computed here when not given.
    """
    task = make_task(row)
    commands: list[str] = list(row.get("commands") or [])  # type: ignore[call-overload]
    # a list, or a LazyTexts: each output is read on first use (most are never looked at)
    outputs: Sequence[str | None] = row.get("outputs") or []  # type: ignore[assignment]
    rcs: list[int | None] = list(row.get("returncodes") or [])  # type: ignore[call-overload]
    own_read = False  # task.submitted and task.own_blocks, read at the first attempt (most runs have none)
    verdict = Verdict()
    written: list[str] = []  # raw; whitespace-collapsed into task.written only when a rule needs it
    later = _RunWrites(commands, outputs)
    for i, cmd in enumerate(commands):
        if not cmd or SUBMIT_MARK in cmd:
            continue
        rc = rcs[i] if i < len(rcs) else None
        out: str | None = None  # outputs[i], read when a rule needs it
        written.append(cmd)
        may = maybe[i] if maybe is not None else maybe_attempt(cmd)
        listing = attempted = False  # this command lists the own history / attempts something
        segs = simple_commands(cmd) if may else []
        for k, seg in enumerate(segs):
            kind = classify(seg, task)
            is_git = seg.argv[0] == "git"
            attempted = attempted or kind is not None
            listing = listing or (kind is None and is_git and git_parts(seg.argv)[0] in OWN_LISTINGS)
            if kind is None and not (is_git and (lines is None or i >= len(lines) or lines[i])):
                continue
            if out is None:
                out = output_at(outputs, i)
            if kind is None and not BUG_SUBJECT.search(out):
                continue
            if not own_read:
                read_own_diff(task, commands, outputs)
                own_read = True
            task.written = "\n".join(WS.sub(" ", c) for c in written)
            ok, final = confirm(kind or "bug_patch", seg.argv, out, rc, task)
            if ok:
                verdict.kind = final
                verdict.detail = f"turn={i} cmd={cmd[:DETAIL_CMD_CHARS]}"
                return verdict
            match = later.confirming(i, out, task.written) if final in WRITE_CONFIRMED else None
            if (
                match is None
                and final in LANDING
                and writes_tree(segs, k)
                and beyond_own_past(seg.argv, task)
            ):
                match = later.landed(i, task)
            if match is not None:
                verdict.kind = final
                verdict.detail = write_detail(i, match, cmd)
                return verdict
            verdict.attempts.add(final)
        if listing and not attempted and not task.swesmith:
            # a plain ``git log`` lists only the checkout's past: what it names is the run's own history
            out = output_at(outputs, i) if out is None else out
            task.own_shas.update(LISTED_SHA.findall(out))
        # OWN_COMMIT: the (slow, line-anchored) Python scan only where the Rust twin matched
        if lines is not None and i < len(lines):
            if lines[i]:
                task.own_shas.update(OWN_COMMIT.findall(output_at(outputs, i) if out is None else out))
            continue
        out = output_at(outputs, i) if out is None else out
        if out.startswith("[") or "\n[" in out:
            task.own_shas.update(OWN_COMMIT.findall(out))
    return verdict


LANDING = frozenset({"foreign_object", "git_history"})  # kinds whose object a command can write into the tree
_STDOUT_TO_FILE = re.compile(r"^1?>>?(.*)$")
_APPLIERS = (["git", "apply"], ["git", "am"], ["patch"], ["tee"])


def writes_tree(segs: list[Segment], k: int) -> bool:
    """Does simple command ``k`` put what it reads into the tree itself: a tree-writing git command
    (``checkout SHA -- f``, ``cherry-pick``, ``stash apply``), its output redirected into a file
    (``git show SHA:f > f``) or piped into ``git apply``/``git am``/``patch``/``tee``?"""
    argv = segs[k].argv
    if git_parts(argv)[0] in TREE_WRITERS:
        return True
    for j, w in enumerate(argv[1:], 1):
        m = _STDOUT_TO_FILE.match(w)
        target = (m.group(1) or (argv[j + 1] if j + 1 < len(argv) else "")) if m else ""
        if target and not target.startswith(("/dev/", "&")):
            return True
    nxt = segs[k + 1].argv if segs[k].op == "|" and k + 1 < len(segs) else []
    return any(nxt[: len(a)] == a for a in _APPLIERS)


def beyond_own_past(argv: list[str], task: Task) -> bool:
    """Does the git command name an object beyond the checkout's own past? ``HEAD~1`` and its kin
    are the checkout's parents (except in SWE-smith, whose HEAD is the bug); a stash the rules
    called foreign is not the run's."""
    sub, args = git_parts(argv)
    if sub == "stash":
        return True
    return any(
        foreign_ref(a, task) and (task.swesmith or not all(RELATIVE.match(r) for r in refs_of(a)))
        for a in args
        if not a.startswith("-")
    )


def output_at(outputs: Sequence[str | None], i: int) -> str:
    """The output of command ``i`` ("" when missing or null)."""
    return (outputs[i] if i < len(outputs) else "") or ""


class LazyTexts(Sequence[str | None]):
    """One run's texts of a list-of-strings column, each converted to a Python string on first use
    (``iter_rows`` would convert every output of every run: most are never looked at)."""

    def __init__(self, texts: pa.Array | None) -> None:
        self.texts = texts
        self.cache: dict[int, str | None] = {}

    @classmethod
    def per_run(cls, column: pl.Series) -> list[LazyTexts]:
        """One :class:`LazyTexts` per row of ``column`` (a null list is empty); Arrow string views, no copy."""
        lists = column.rechunk().to_arrow(compat_level=pl.CompatLevel.newest())
        return [cls(lists[r].values) for r in range(len(lists))]

    def __len__(self) -> int:
        return 0 if self.texts is None else len(self.texts)

    @overload
    def __getitem__(self, k: int) -> str | None: ...
    @overload
    def __getitem__(self, k: slice) -> list[str | None]: ...
    def __getitem__(self, k: int | slice) -> str | list[str | None] | None:
        if isinstance(k, slice):
            return [self[i] for i in range(*k.indices(len(self)))]
        n = len(self)
        if not -n <= k < n:
            raise IndexError(k)
        k %= n
        if k not in self.cache:
            self.cache[k] = self.texts[k].as_py()  # type: ignore[index]
        return self.cache[k]


def read_own_diff(task: Task, commands: list[str], outputs: Sequence[str | None]) -> None:
    """Set what confirmation compares an observation with (only it reads them): the run's own final
    added lines (``task.submitted``) and its final diff as post-image windows (``task.own_blocks``)."""
    if commands and SUBMIT_MARK in commands[-1] and len(outputs) >= len(commands):
        task.submitted = diff_side(outputs[len(commands) - 1] or "", "+")
    task.own_blocks = own_blocks(own_final_diff(commands, outputs))


class _Printed(Sequence[list[str]]):
    """The normalised lines of each observation (diffs as post-images), computed on first use: most
    observations are never looked at."""

    def __init__(self, outputs: Sequence[str | None], upto: int) -> None:
        self.outputs, self.upto = outputs, upto
        self.cache: dict[int, list[str]] = {}

    def __len__(self) -> int:
        return self.upto

    @overload
    def __getitem__(self, k: int) -> list[str]: ...
    @overload
    def __getitem__(self, k: slice) -> list[list[str]]: ...
    def __getitem__(self, k: int | slice) -> list[str] | list[list[str]]:
        if isinstance(k, slice):
            return [self[i] for i in range(*k.indices(self.upto))]
        if not 0 <= k < self.upto:
            raise IndexError(k)
        if k not in self.cache:
            self.cache[k] = obs_lines((self.outputs[k] if k < len(self.outputs) else "") or "")
        return self.cache[k]


# Only these commands can write text into a file (a redirect, tee, sed -i, a script, a patch).
_MAYBE_WRITE = re.compile(r">|\btee\b|\bsed\b|python|\bpatch\b|\bapply\b")


class _RunWrites:
    """A run's writes after its first attempt, read once, only when the run has an attempt (most have none)."""

    def __init__(self, commands: list[str], outputs: Sequence[str | None]) -> None:
        self.commands, self.outputs = commands, outputs
        self.writes: list[Write] | None = None
        self.flat: dict[int, str] = {}  # turn -> its output, whitespace collapsed

    def _read(self, first: int) -> list[Write]:
        writes: list[Write] = []
        for j in range(first + 1, len(self.commands)):
            cmd = self.commands[j]
            if cmd and SUBMIT_MARK not in cmd and _MAYBE_WRITE.search(cmd):
                writes.extend(writes_of(j, cmd, _Printed(self.outputs, j)))
        return writes

    def _printed_before(self, turn: int, lines: set[str]) -> set[str]:
        """Those of ``lines`` that an observation before ``turn`` printed (as a normalised line)."""
        out: set[str] = set()
        printed = _Printed(self.outputs, turn)
        for k in range(turn):
            if k not in self.flat:
                self.flat[k] = WS.sub(" ", (self.outputs[k] if k < len(self.outputs) else "") or "")
            maybe = {x for x in lines - out if x in self.flat[k]}  # a line is a substring of its output
            if maybe:
                out |= maybe & set(printed[k])
        return out

    def landed(self, turn: int, task: Task) -> WriteMatch | None:
        """A foreign object written into the tree by the command of ``turn`` itself (``git checkout
        SHA -- f``, ``git stash apply``): the run's final diff after it (its submission, else its
        last plain ``git diff``) holds added lines the run never typed and had not printed before."""
        blocks = own_blocks(own_final_diff(self.commands[turn + 1 :], self.outputs[turn + 1 :]))
        added = [x for b in blocks for x in b.added]
        if not added:
            return None
        typed = WS.sub(" ", "\n".join(c for c in self.commands if c))
        fresh = {x for x in added if x not in typed}
        fresh -= self._printed_before(turn, fresh)
        got = [x for x in added if x in fresh]
        if not got or len(got) < OWN_DIFF_CONTAINMENT * len(added):
            return None
        return WriteMatch(turn, got, len(got), len(added))

    def confirming(self, turn: int, output: str, typed: str) -> WriteMatch | None:
        """The later write the observation of ``turn`` had shown (see :mod:`pipeline.leaks.writes`)."""
        if self.writes is None:
            self.writes = self._read(turn)
        later = [w for w in self.writes if w.turn > turn]
        if not later:
            return None
        introduced = {x for w in later for x, f in zip(w.post, w.new, strict=True) if f}
        skip = {x for x in introduced if x in typed} | self._printed_before(turn, introduced)
        return confirming_write(later, turn, output, skip)


def write_detail(turn: int, match: WriteMatch, cmd: str) -> str:
    """``turn=I write_turn=J lines=K/N match=["…", …] cmd=…`` (the command last: it may hold anything)."""
    quoted = json.dumps([x[:DETAIL_LINE_CHARS] for x in match.lines[:DETAIL_MATCH_LINES]], ensure_ascii=False)
    return (
        f"turn={turn} write_turn={match.turn} lines={match.seen}/{match.total} match={quoted} "
        f"cmd={cmd[:DETAIL_CMD_CHARS]}"
    )


_DETAIL = re.compile(r"^turn=(\d+)(?: write_turn=(\d+) lines=(\d+)/(\d+) match=(\[.*?\]))? cmd=(.*)$", re.S)


def explain_detail(detail: str) -> dict[str, object] | None:
    """A solution-leak drop's detail as fields: the attempted command and its turn, and for a drop
    confirmed by the run's own write, that write's turn and the matching lines (None: not that shape)."""
    m = _DETAIL.match(detail)
    if not m:
        return None
    turn, write_turn, seen, total, match, cmd = m.groups()
    out: dict[str, object] = {"attempt_turn": int(turn), "attempted_command": cmd}
    if write_turn is not None:
        try:
            lines = json.loads(match)
        except ValueError:
            lines = [match]
        out.update(write_turn=int(write_turn), lines_seen=f"{seen}/{total}", matching_lines=lines)
    else:
        out["confirmed_by"] = "the attempt's own output"
    return out


def pre_mask(batch: pl.DataFrame, pattern: str) -> pl.Series:
    """Runs with a command matching ``pattern`` (Rust regex, vectorised)."""
    return batch.select(
        pl.col("commands")
        .list.eval(pl.element().str.contains(pattern).fill_null(False))
        .list.any()
        .fill_null(False)
        .alias("m")
    )["m"]


# Rust twins of OWN_COMMIT and BUG_SUBJECT that match wherever the Python pattern does: OWN_COMMIT
# without its line anchor (Rust checks ``(?m)^`` at every line start: twice the time over the outputs)
# and with Rust's \s, a subset of Python's (so its [^\]\s] matches more); the literal words every
# BUG_SUBJECT line holds. One pass of their alternation flags the outputs either may hold (an output
# flagged for the other's sake is searched by both Python patterns, which decide).
OWN_COMMIT_RS = r"\[[^\]\s]+(?: \(root-commit\))? [0-9a-f]{7,40}\]"
BUG_SUBJECT_RS = r"Bug Patch|Remove F2P Tests"


def prefilters(batch: pl.DataFrame) -> pl.DataFrame:
    """Per command :func:`maybe_attempt`, and per output "may hold an OWN_COMMIT or a BUG_SUBJECT
    line" (``lines``), in Rust over the batch."""
    return batch.select(
        pl.col("commands")
        .list.eval(
            pl.element().str.replace_all(r"['\"\\]", "").str.contains(MAYBE_ATTEMPT.pattern).fill_null(False)
        )
        .alias("maybe"),
        pl.col("outputs")
        .list.eval(pl.element().str.contains(f"{OWN_COMMIT_RS}|{BUG_SUBJECT_RS}").fill_null(False))
        .alias("lines"),
    )
