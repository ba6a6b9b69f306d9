"""The verify step's rules: every converted run checked against its own record, fail-closed.

Each rule is one small function from a :class:`Subject` (the parsed episode and its conversion)
to the first :class:`Violation` it finds, or None; :data:`RULES` lists them in the order they
run. A run with a violation is dropped as ``verify/<rule>`` and never published. The format
rule (mini-swe-agent's own parser accepts every message) is the validate step's.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property, lru_cache

from pipeline.convert import Converted
from pipeline.convert.editrun import edit_script, run_edit
from pipeline.convert.render import SUBMIT_COMMAND, submission_of
from pipeline.convert.roots import TESTBED
from pipeline.convert.runfiles import Files
from pipeline.core.episode import Episode
from pipeline.text.shell import Segment, split_command
from pipeline.verify.decoration import decoration_in
from pipeline.verify.effects import REFUSAL, edit_violation
from pipeline.verify.programs import unknown_programs


class Subject:
    """One run under verification: its episode, its conversion, and what the rules share."""

    def __init__(self, episode: Episode, conv: Converted, suspects: set[int] | None = None) -> None:
        self.episode, self.conv = episode, conv
        # the turns whose output may hold harness decoration (None: every turn may)
        self.suspects = suspects

    @cached_property
    def segments(self) -> list[list[Segment]]:
        """Each command's simple commands (lexed once for every rule, and once per distinct
        command of a worker: runs repeat their commands, and the rules only read the result)."""
        return [_segments(c) for c in self.conv.commands]


@lru_cache(maxsize=8192)
def _segments(command: str) -> list[Segment]:
    return split_command(command)


@dataclass(frozen=True, slots=True)
class Violation:
    rule: str  # the ledger reason: verify/<rule>
    detail: str


def executable(s: Subject) -> Violation | None:
    """Every program a command runs exists in the target image; no harness tool is a command.
    A program the record shows missing ("command not found") is missing from the target image
    too: the command fails there the same way, so it stays."""
    for turn, prog, kind in unknown_programs(s.conv.commands, s.episode.task.repo, s.segments):
        if kind == "unknown_program" and _not_found(prog, s.conv.outputs[turn]):
            continue
        return Violation(kind, f"turn {turn}: {prog}")
    return None


def _not_found(prog: str, output: str) -> bool:
    """Whether ``output`` is a shell's report that ``prog`` does not exist (bash's and dash's)."""
    return f"{prog}: command not found" in output or f"{prog}: not found" in output


def effect(s: Subject) -> Violation | None:
    """A synthesised command has the original call's effect (none when it was refused): run on
    the file as the run displayed it where it did, else proven by construction (``effects``)."""
    conv = s.conv
    files = Files()
    # the displayed files are followed only in a run with an edit script to run on them
    edits = any(
        src.synthesised and cmd.startswith("python3 - <<")
        for cmd, src in zip(conv.commands, conv.sources, strict=True)
    )
    for turn, (cmd, out, rc, src) in enumerate(
        zip(conv.commands, conv.outputs, conv.returncodes, conv.sources, strict=True)
    ):
        edit = edit_script(cmd) if src.synthesised else None
        if edit is None:
            if edits:
                files.after(cmd, out, rc, src.synthesised, s.segments[turn])
            if src.synthesised and (why := edit_violation(cmd, out, rc, src.observation)) is not None:
                return Violation("edit_effect", f"turn {turn}: {src.tool}: {why}")
            continue
        if REFUSAL.search(src.observation):
            return Violation(
                "edit_effect", f"turn {turn}: {src.tool}: the harness refused the call, the command writes"
            )
        outcome = run_edit(edit[0], files)
        if outcome is None:
            files.known.clear()  # it may have written a file not known: nothing is known after it
            if (why := edit_violation(cmd, out, rc, src.observation)) is not None:
                return Violation("edit_effect", f"turn {turn}: {src.tool}: {why}")
            continue
        chained = bool(edit[1]) and outcome.code == 0  # `script && display`: the display printed too
        if (outcome.code == 0) != (rc == 0) or not (
            out.startswith(outcome.printed) if chained else out == outcome.printed
        ):
            return Violation(
                "edit_effect",
                f"turn {turn}: {src.tool}: run on the file as displayed, it exits {outcome.code} "
                f"and prints {outcome.printed[:80]!r}, not what the run shows",
            )
    return None


def observations(s: Subject) -> Violation | None:
    """No harness decoration in an observation unless its command prints it."""
    conv = s.conv
    turns = range(len(conv.commands)) if s.suspects is None else sorted(s.suspects)
    for turn in turns:
        if (name := decoration_in(conv.outputs[turn], conv.commands[turn])) is not None:
            return Violation("harness_decoration", f"turn {turn}: {name}")
    return None


_TRACEBACK_END = re.compile(
    r"Traceback \(most recent call last\):\n(?:[ \t].*\n|\S.*\n)*?\w*(?:Error|Exception)\b.*\n?\Z"
)
_NOT_FOUND = re.compile(r"\A[^\n]*(?:command not found|No such file or directory)\n?\Z")


def returncodes(s: Subject) -> Violation | None:
    """Every code is recorded, a synthesised command's own, or inferred by a measured rule; an
    inferred 0 never stands on an output that is a failure (a traceback, "command not found")."""
    for turn, (out, rc, src) in enumerate(
        zip(s.conv.outputs, s.conv.returncodes, s.conv.sources, strict=True)
    ):
        if src.rc_from == "unknown":
            return Violation("returncode_unknown", f"turn {turn}: {src.tool}")
        if (
            rc == 0
            and src.rc_from.startswith("rule:")
            and (_NOT_FOUND.match(out) or _TRACEBACK_END.search(out))
        ):
            return Violation("returncode_contradicted", f"turn {turn}: {src.rc_from} gave 0 on a failure")
    return None


def _normal(patch: str) -> str:
    """A patch compared line by line, trailing whitespace and blank edges aside."""
    return "\n".join(line.rstrip() for line in patch.strip("\n").splitlines())


def submission(s: Subject) -> Violation | None:
    """A run the record says submitted ends with mini's submit and its final message is that
    patch; a run cut by the step limit is not submitted by design."""
    conv, recorded = s.conv, s.conv.submission
    ends_in_submit = bool(conv.commands) and conv.commands[-1] == SUBMIT_COMMAND
    if conv.submitted != ends_in_submit:
        return Violation("submission", f"submitted={conv.submitted} but the last command is not the submit")
    if conv.submitted:
        final = submission_of(conv.outputs[-1])
        if recorded is None and not final.strip():
            return Violation("submission", "a submit whose patch the record does not hold")
        if recorded is not None and _normal(final) != _normal(recorded):
            return Violation("submission", "the final message is not the patch the record submitted")
    elif recorded is not None and recorded.strip() and not conv.counters.get("convert/step_limit_truncated"):
        return Violation(
            "submission_lost", "the record submitted a patch; the run does not end with the submit"
        )
    return None


def roots(s: Subject) -> Violation | None:
    """No path under the run's original checkout remains anywhere in the run."""
    root = (s.episode.meta.repo_root or "").rstrip("/")
    if not root or root == TESTBED or len(root) < 2:
        return None
    pattern = re.compile(r"(?<![\w.~/-])" + re.escape(root) + r"(?=$|[/\s'\"`:;,)\]}>])", re.M)
    conv = s.conv
    for where, texts in (
        ("task", [conv.problem_statement]),
        ("thought", conv.thoughts),
        ("command", conv.commands),
        ("output", conv.outputs),
    ):
        for turn, text in enumerate(texts):
            if root in text and pattern.search(text):
                return Violation("original_root", f"{where} {turn}: {root}")
    return None


RULES: tuple[tuple[str, Callable[[Subject], Violation | None]], ...] = (
    ("executable", executable),
    ("effect", effect),
    ("observations", observations),
    ("returncodes", returncodes),
    ("submission", submission),
    ("roots", roots),
)
# every reason a rule may give (the verify step's ledger vocabulary)
REASONS: tuple[str, ...] = (
    "harness_tool",
    "unknown_program",
    "edit_effect",
    "harness_decoration",
    "returncode_unknown",
    "returncode_contradicted",
    "submission",
    "submission_lost",
    "original_root",
)


def verify(
    episode: Episode, conv: Converted, rules: tuple[str, ...] | None = None, suspects: set[int] | None = None
) -> Violation | None:
    """The first violation of the run (``rules``: only those named), or None: it may be published.
    ``suspects``: the turns whose output may hold decoration (``decoration_suspects``)."""
    subject = Subject(episode, conv, suspects)
    for name, rule in RULES:
        if (rules is None or name in rules) and (v := rule(subject)) is not None:
            return v
    return None


__all__ = ["REASONS", "RULES", "Subject", "Violation", "verify"]
