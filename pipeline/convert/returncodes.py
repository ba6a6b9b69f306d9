"""Return codes inferred from a command and its output, by rules measured on real runs.

Some harnesses (SWE-agent) record no return code. A converted turn needs one: the record's, one
proven by the converter, or one inferred here by a rule whose precision was MEASURED >= 99% on
real runs that do record their codes (``bench/rc_rules.py``: mini-swe-agent ``<returncode>``
observations and OpenHands ``exit_code`` extras, from independent repositories). Anything else is
unknown (None), and the verify step drops the run: a guessed 0 is never given.

``infer_returncode(command, output)`` returns ``(code, rule name)`` from the first enabled rule
that decides. Each rule is ``(command, output) -> int | None`` and reasons about what bash
returns: the status of the LAST pipeline it ran, which is the status of that pipeline's last
stage (no ``pipefail``). In ``a && b`` the pipeline that ran last is the first one that failed,
or ``b``. So a rule looks at the *deciders* of the command's last and-or list (the last stage of
each of its pipelines) and asks whether the output proves each one's status.

Commands whose status these rules cannot reason about are left alone (``_shape`` gives None):
subshells and command substitutions (``(``, ``$(``), background jobs, shell keywords (``if``,
``for``, ``while``, ``case``, functions, ``!``), ``exit``/``return``, ``set`` (``set -e`` /
``pipefail`` change which status is returned), here-strings, ``timeout N`` (124 for a child it
killed, whatever the child printed) and ``xargs`` deciding a pipeline (123 for any failing child).

The lexer is the project's one (:func:`pipeline.text.shell.split_command`); it cuts ``2>&1`` and
``&>`` at their ``&``, which ``pipeline.text.shell.join_redirects`` glues back. A command's shape is computed
once (cached): the rules share it.

``MEASURED`` records each rule's precision and sample count from the bench; ``ENABLED`` is
exactly the rules that passed it (precision >= ``MIN_PRECISION`` on >= ``MIN_N`` decided samples
overall and on each of >= 2 repo groups with >= ``MIN_GROUP_N`` decided samples).
``tests/test_returncodes.py`` holds the table to that bar.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from pipeline.convert.rc_python import (
    python_clean_output,
    python_inline,
    python_module_failed,
    python_script_known_clean,
    python_script_known_traceback,
    python_script_known_uncaught,
    python_script_quiet,
    python_syntax_error,
    python_traceback,
)
from pipeline.convert.rc_shape import (
    _ELIDED,
    _SHELL_ERROR,
    _SHELL_KEYS,
    Shape,
    _clean,
    _flags,
    _git_error_in,
    _is_python,
    _last_line,
    _lists_and_items,
    _loud_class,
    _loud_ok,
    _prefix_ok,
    _shape,
    _stderr_dropped,
    _stdout_redirected,
    _tool_error_in,
    prog,
)
from pipeline.convert.rc_tests import _is_pytest, pytest_summary, sympy_test_summary, unittest_summary
from pipeline.convert.runfiles import RunFiles

MIN_PRECISION = 0.99
MIN_N = 200  # decided samples overall: one miss in 100 must be visible above noise
MIN_GROUP_N = 30  # decided samples for a repo group to count as a confirming group


@dataclass(frozen=True)
class Rule:
    """A named rule: ``decide(command, output)``, or ``decide(command, output, files)`` when it
    reads the run's files (``uses_files``; given no :class:`RunFiles`, it knows only what the
    command itself writes)."""

    name: str
    decide: Callable[..., int | None]
    uses_files: bool = False

    def __call__(self, command: str, output: str, files: RunFiles | None = None) -> int | None:
        if not self.uses_files:
            return self.decide(command, output)
        return self.decide(command, output, RunFiles() if files is None else files)


def loud_success(command: str, output: str) -> int | None:
    """0 when the final decider is a loud program (a viewer, lister, writer, echo or read-only git
    subcommand: ``_loud_class``), every decider before it is one too, joined by ``&&``, and the
    output holds none of their failure messages (``cat: ...``, ``fatal: ...``) nor a shell error:
    each of them prints one whenever it fails, so each succeeded, and the status is the last one's.
    ``bench/rc_rules.py`` also reports it per class."""
    shape = _shape(command)
    if shape is None or _loud_class(shape.final) is None:
        return None
    if not _prefix_ok(shape, output) or not _loud_ok(shape.final, output):
        return None
    if not _clean(output) and not _one_file_elided(shape, output):
        return None
    return 0


def _one_file_elided(shape: Shape, output: str) -> bool:
    """``cat FILE`` / ``nl FILE`` alone, its long output cut in the middle by mini-swe-agent and
    no shell error in what is shown: cat fails only when it cannot open or read its one file,
    and then it prints a message and nothing long, so an output long enough to be cut is the file.
    (``ls -R`` is not: it goes on after a directory it cannot read, and its message may be cut.)"""
    if _ELIDED not in output or len(shape.segments) != 1 or prog(shape.final) not in ("cat", "nl"):
        return False
    operands = [a for a in shape.final.argv[1:] if not a.startswith("-")]
    if len(operands) != 1 or any(
        not re.fullmatch(r"-[nAbsvET]+", a) for a in shape.final.argv[1:] if a.startswith("-")
    ):
        return False
    shown = output.replace(_ELIDED, "")
    return not any(k in shown for k in _SHELL_KEYS) or _SHELL_ERROR.search(shown) is None


# the status of a loud program that printed its own failure message (GNU coreutils: 1; ls: 2 for
# an operand it cannot access)
_FAILURE_CODES = {
    "rm": 1, "cat": 1, "mkdir": 1, "cp": 1, "mv": 1, "touch": 1, "chmod": 1, "head": 1, "tail": 1,
    "wc": 1, "rmdir": 1, "ln": 1, "nl": 1,
}  # fmt: skip
_FAILURE_MSG = re.compile(
    r"^(?:\S*/)?(\w+): (?:cannot |can't |failed to |missing operand|invalid option|unrecognized option|"
    r"'[^']*': |‘[^’]*’: |[^\s:]+: )?.*(?:No such file or directory|Permission denied|Is a directory|"
    r"Not a directory|File exists|Directory not empty|missing operand|invalid option|unrecognized option)"
    r"(?:\s*\n(?:Try '\S+ --help' for more information\.))?$",
    re.M,
)


def loud_failure(command: str, output: str) -> int | None:
    """The failure status of a coreutils program (``rm``, ``cat``, ``mkdir``, ``cp``, ``mv``,
    ``ls``...) that is the final decider and printed its own failure message (``rm: cannot remove
    'x': No such file or directory``): 1 (``ls: cannot access``: 2). Every decider before it
    succeeded (loud, ``&&`` only), so its status is the command's."""
    shape = _shape(command)
    if shape is None or _stderr_dropped(shape.final) or shape.piped:
        return None
    p = prog(shape.final)
    if p not in _FAILURE_CODES and p != "ls":
        return None
    if p == "rm" and "f" in _flags(shape.final):
        return None  # rm -f fails silently on a missing file, loudly on others: keep it simple
    if not _prefix_ok(shape, output):
        return None
    mine = [m for m in _FAILURE_MSG.finditer(output) if m.group(1) == p]
    if not mine:
        return None
    if p == "ls":
        return 2 if any("cannot access" in m.group(0) for m in mine) else None
    return _FAILURE_CODES[p]


_NOT_FOUND = re.compile(r"^(?:\S+: )?(?:line \d+: |\d+: )?(\S+): (?:command )?not found$")
_NO_FILE = re.compile(
    r"^(?:\S+: )?(?:line \d+: |\d+: )?(\S+): (No such file or directory|Permission denied)$"
)


def cannot_run(command: str, output: str) -> int | None:
    """The code of a program that could not start, from the message that ends the output and
    names the final decider: bash's "X: command not found" -> 127; "./x: No such file or
    directory" -> 127 and "Permission denied" -> 126 for a program given as a path; python's
    "can't open file ... [Errno 2]" for its script -> 2; pytest's "ERROR: file or directory not
    found: x" -> 4 (its usage-error status)."""
    if "not found" not in output and "No such file" not in output and "Permission denied" not in output:
        return None
    shape = _shape(command)
    if shape is None:
        return None
    last, argv0 = _last_line(output), shape.final.argv[0]
    m = _NOT_FOUND.match(last)
    if m and m.group(1) == argv0:
        return 127
    m = _NO_FILE.match(last)
    if m and m.group(1) == argv0 and "/" in argv0:
        return 127 if m.group(2).startswith("No such") else 126
    if _is_python(shape.final) and "can't open file" in last and last.endswith("No such file or directory"):
        return 2
    if _is_pytest(shape.final) and last.startswith("ERROR: file or directory not found: "):
        return 4
    return None


_GREP = frozenset({"grep", "egrep", "fgrep", "rg"})
_GREP_STATUS_FLAGS = frozenset(
    {"q", "c", "L", "--quiet", "--silent", "--count", "--files-without-match", "s", "--no-messages"}
)


def _grep_final(command: str) -> Shape | None:
    shape = _shape(command)
    if shape is None:
        return None
    f = shape.final
    is_git_grep = prog(f) == "git" and next((a for a in f.argv[1:] if not a.startswith("-")), "") == "grep"
    if not (prog(f) in _GREP or is_git_grep) or _GREP_STATUS_FLAGS & _flags(f) or _stderr_dropped(f):
        return None
    return shape


def grep_no_match(command: str, output: str) -> int | None:
    """1 when the final decider is grep (rg, git grep) and the output is empty: grep prints nothing
    and returns 1 when no line matched (an error would have printed, its stderr is kept; -q, -s,
    -c and -L change what is printed and are excluded, and so does a redirected stdout), and a
    failed ``&&`` item before it would have printed its failure too."""
    if output.strip():
        return None
    shape = _grep_final(command)
    if shape is None or not _prefix_ok(shape, output) or _stdout_redirected(shape.final):
        return None
    return 1


_BINARY_MATCH = re.compile(r"^(?:\S*/)?grep: .+: binary file matches$", re.M)


def grep_match(command: str, output: str) -> int | None:
    """0 when the whole command is one pipeline ending in grep (rg, git grep) and the output is
    non-empty with no shell error and no message of any of its programs (``strings: x: No such
    file`` from a stage before grep is all a failed pipeline prints): everything printed came
    out of grep, so a line matched, and grep returns 0 when a line matched. When grep is the only
    stage, its "grep: f: binary file matches" notices (GNU grep >= 3.5, on stderr) are matches
    too, not errors. (With an earlier command in the line, its output could be all there is:
    measured, that fails.)"""
    if not output.strip():
        return None
    shape = _grep_final(command)
    if shape is None or len(_lists_and_items(shape)) != 1 or not _clean(output):
        return None
    seen = output
    if len(shape.segments) == 1 and "binary file matches" in output:
        seen = _BINARY_MATCH.sub("", output)
    if _git_error_in(seen) or any(_tool_error_in(prog(seg), seen) for seg in shape.segments):
        return None  # a stage before grep that failed leaves grep nothing to match: its message is no match
    return 0


def or_fallback(command: str, output: str) -> int | None:
    """0 when the command's last list ends with ``|| echo ...`` / ``|| true`` / ``|| :``: whatever
    ran before, either it returned 0 or the always-succeeding fallback ran and returned 0."""
    if "||" not in command:
        return None
    shape = _shape(command)
    if shape is None or not shape.joins or shape.joins[-1] != "||" or _loud_class(shape.final) != "echo":
        return None
    if not _clean(output):
        return None  # a syntax error: bash ran nothing of the list
    return 0


_SYNTAX_ERROR = re.compile(
    r"^(?:/bin/|/usr/bin/)?(?:ba)?sh: (?:-c: )?(?:line \d+: )?syntax error(?: near unexpected token .*|: unexpected end of file.*)$",
    re.M,
)


def shell_syntax_error(command: str, output: str) -> int | None:
    """2 when bash reports a syntax error in the command (``bash: -c: line 3: syntax error near
    unexpected token `&&'``): bash stops there with status 2, whatever it ran before it."""
    if "syntax error" not in output:
        return None
    m = _SYNTAX_ERROR.search(output)
    if m is None or output[m.end() :].count("\n") > 2:
        return None  # (bash quotes the offending line after the message; nothing runs after it)
    return 2


RULES: tuple[Rule, ...] = (
    Rule("cannot_run", cannot_run),
    Rule("python_traceback", python_traceback),
    Rule("pytest_summary", pytest_summary),
    Rule("unittest_summary", unittest_summary, uses_files=True),
    Rule("grep_no_match", grep_no_match),
    Rule("grep_match", grep_match),
    Rule("loud_success", loud_success),
    Rule("loud_failure", loud_failure),
    Rule("or_fallback", or_fallback),
    Rule("shell_syntax_error", shell_syntax_error),
    Rule("sympy_test_summary", sympy_test_summary),
    Rule("python_inline", python_inline),
    Rule("python_script_known_clean", python_script_known_clean, uses_files=True),
    Rule("python_script_known_traceback", python_script_known_traceback, uses_files=True),
    Rule("python_script_known_uncaught", python_script_known_uncaught, uses_files=True),
    Rule("python_script_quiet", python_script_quiet, uses_files=True),
    Rule("python_clean_output", python_clean_output),
    Rule("python_syntax_error", python_syntax_error),
    Rule("python_module_failed", python_module_failed),
)


@dataclass(frozen=True)
class Measured:
    """One rule's numbers from ``bench/rc_rules.py`` (all repo groups together, and per group)."""

    precision: float  # correct / decided over every recorded sample
    n: int  # decided samples
    groups: int  # repo groups where it decided >= MIN_GROUP_N samples
    min_group_precision: float  # the lowest precision among those groups (1.0 when none)

    @property
    def passes(self) -> bool:
        return (
            self.n >= MIN_N
            and self.precision >= MIN_PRECISION
            and self.groups >= 2
            and self.min_group_precision >= MIN_PRECISION
        )


# BEGIN MEASURED (written by `bench/rc_rules.py --write-table`: precision, n, groups, min group precision)
MEASURED: dict[str, Measured] = {
    "cannot_run": Measured(1.0000, 119, 2, 1.0000),
    "python_traceback": Measured(0.8391, 814, 3, 0.7905),
    "pytest_summary": Measured(1.0000, 669, 3, 1.0000),
    "unittest_summary": Measured(1.0000, 753, 2, 1.0000),
    "grep_no_match": Measured(1.0000, 408, 2, 1.0000),
    "grep_match": Measured(1.0000, 3387, 3, 1.0000),
    "loud_success": Measured(1.0000, 11547, 4, 1.0000),
    "loud_failure": Measured(1.0000, 75, 1, 1.0000),
    "or_fallback": Measured(1.0000, 259, 1, 1.0000),
    "shell_syntax_error": Measured(0.9818, 55, 1, 0.9778),
    "sympy_test_summary": Measured(1.0000, 123, 1, 1.0000),
    "python_inline": Measured(1.0000, 849, 3, 1.0000),
    "python_script_known_clean": Measured(1.0000, 3473, 3, 1.0000),
    "python_script_known_traceback": Measured(1.0000, 289, 2, 1.0000),
    "python_script_known_uncaught": Measured(1.0000, 462, 2, 1.0000),
    "python_script_quiet": Measured(1.0000, 942, 2, 1.0000),
    "python_clean_output": Measured(0.9880, 3499, 3, 0.9690),
    "python_syntax_error": Measured(1.0000, 7, 0, 1.0000),
    "python_module_failed": Measured(1.0000, 215, 2, 1.0000),
}
# END MEASURED

ENABLED: frozenset[str] = frozenset(name for name, m in MEASURED.items() if m.passes)

_ACTIVE: tuple[Rule, ...] = tuple(r for r in RULES if r.name in ENABLED)


def infer_returncode(command: str, output: str, files: RunFiles | None = None) -> tuple[int, str] | None:
    """``(code, rule name)`` from the first enabled rule that decides, else None (unknown).
    ``files``: what the run wrote or displayed before this turn (:class:`RunFiles`, fed each turn
    in order); without it, the rules that read files abstain."""
    for rule in _ACTIVE:
        code = rule(command, output, files)
        if code is not None:
            return code, rule.name
    return None
