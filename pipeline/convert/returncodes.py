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
``&>`` at their ``&``, which :func:`_join_redirects` glues back. A command's shape is computed
once (cached): the rules share it.

``MEASURED`` records each rule's precision and sample count from the bench; ``ENABLED`` is
exactly the rules that passed it (precision >= ``MIN_PRECISION`` on >= ``MIN_N`` decided samples
overall and on each of >= 2 repo groups with >= ``MIN_GROUP_N`` decided samples).
``tests/test_returncodes.py`` holds the table to that bar.
"""

from __future__ import annotations

import ast
import posixpath
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from itertools import pairwise

from pipeline.convert.runfiles import TESTBED, RunFiles, command_cwd
from pipeline.text.shell import OPS, Segment, shlex_split, split_command
from pipeline.text.shell import join_redirects as _join_redirects

MIN_PRECISION = 0.99
MIN_N = 200  # decided samples overall: one miss in 100 must be visible above noise
MIN_GROUP_N = 30  # decided samples for a repo group to count as a confirming group

# ---------------------------------------------------------------------------------------- the shape


@dataclass(frozen=True)
class Shape:
    """What the rules need of a command: its simple commands and the deciders of its last list."""

    segments: tuple[Segment, ...]
    deciders: tuple[Segment, ...]  # last stage of each pipeline of the last and-or list
    joins: tuple[str, ...]  # the operators between those pipelines ("&&" / "||")
    piped: bool  # the final decider reads a pipe (it is not the only stage of its pipeline)

    @property
    def final(self) -> Segment:
        return self.deciders[-1]


KEYWORDS = frozenset(
    {"if", "then", "else", "elif", "fi", "for", "while", "until", "do", "done", "case", "esac", "function",
     "select", "{", "}", "!", "[[", "]]", "exit", "return", "set", "trap", "exec", "eval", "source", "."}
)  # fmt: skip
_LIST_ENDS = frozenset({";", "\n", ""})
_BAD_OPS = frozenset({"(", ")", "&", ";;"})


_TIMEOUT = re.compile(r"(?:^|[\s;&|(])timeout\s+(?:-\S+\s+(?:\S+\s+)?)*\d")


def _xargs_decides(command: str) -> bool:
    """xargs runs as the last stage of a pipeline: its status (123 when a child failed) decides.
    The lexer peels xargs off its segment, so its place is read from the words themselves."""
    for line in command.split("\n"):
        toks = shlex_split(line)
        for i, t in enumerate(toks):
            if t.rsplit("/", 1)[-1] == "xargs" and (i == 0 or toks[i - 1] in OPS):
                nxt = next((toks[k] for k in range(i + 1, len(toks)) if _is_op(toks, k)), "")
                if nxt not in ("|", "|&"):
                    return True
    return False


def _is_op(toks: list[str], k: int) -> bool:
    """An operator token, not the ``&`` of a ``2>&1`` or ``&>`` redirection."""
    if toks[k] != "&":
        return toks[k] in OPS
    return not (k and toks[k - 1].endswith(">")) and not (k + 1 < len(toks) and toks[k + 1].startswith(">"))


_CONTINUATION = re.compile(r"\\\n[ \t]*")


@lru_cache(maxsize=512)
def _shape(command: str) -> Shape | None:
    """The command's shape, or None when its status is beyond these rules (see the module doc)."""
    if "\\\n" in command and "<<" not in command:
        # a line continuation joins its lines (the lexer leaves the newline on the next word)
        command = _CONTINUATION.sub(" ", command)
    if "pipefail" in command or "<<<" in command or ("xargs" in command and _xargs_decides(command)):
        return None
    if "timeout" in command and _TIMEOUT.search(command):
        return None  # timeout returns 124 for a child it killed, whatever the child printed
    segs = _join_redirects(split_command(command))
    if not segs:
        return None
    for s in segs:
        if s.op in _BAD_OPS or not s.argv or s.argv[0] in KEYWORDS or s.argv[0].startswith("$"):
            return None
    start = 0
    for i, s in enumerate(segs[:-1]):
        if s.op in _LIST_ENDS:
            start = i + 1
    last = segs[start:]
    deciders: list[Segment] = []
    joins: list[str] = []
    for s in last:
        if s.op != "|" and s.op != "|&":
            deciders.append(s)
            if s.op in ("&&", "||"):
                joins.append(s.op)
    if not deciders or last[-1].op not in _LIST_ENDS:
        return None  # the line ends in an operator ("a |", "a &&"): bash would not run it
    final_index = len(last) - 1
    piped = final_index > 0 and last[final_index - 1].op in ("|", "|&")
    return Shape(tuple(segs), tuple(deciders), tuple(joins), piped)


def _lists_and_items(shape: Shape) -> list[Segment]:
    """The deciders of the whole command: one per pipeline, whatever list it is in."""
    return [s for s in shape.segments if s.op not in ("|", "|&")]


def prog(seg: Segment) -> str:
    return seg.argv[0].rsplit("/", 1)[-1]


_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_TAIL_MARK = "</output_tail>"  # mini-swe-agent's closing tag of a long output's kept tail


def _last_line(output: str) -> str:
    """The last non-blank line, without colour codes (mini's closing ``</output_tail>`` dropped)."""
    text = output.rstrip()
    if text.endswith(_TAIL_MARK):
        text = text[: -len(_TAIL_MARK)].rstrip()
    line = text[text.rfind("\n") + 1 :].strip()
    return _ANSI.sub("", line) if "\x1b" in line else line


def _flags(seg: Segment) -> set[str]:
    """Short flags split (``-rn`` -> r, n) and long options, of the words before ``--``."""
    out: set[str] = set()
    for a in seg.argv[1:]:
        if a == "--":
            break
        if a.startswith("--"):
            out.add(a.split("=", 1)[0])
        elif a.startswith("-") and len(a) > 1 and not a[1].isdigit():
            out.update(a[1:])
    return out


_STDERR_DROPPED = re.compile(r"(?:^|\s)(?:2>|&>)\s*/dev/null|>\s*/dev/null\s+2>&1|2>&-")


def _stdout_redirected(seg: Segment) -> bool:
    """The segment's output goes to a file (``> f``, ``>> f``, ``1> f``, ``&> f``), not to the output."""
    return any(a[:1] == ">" or a.startswith(("1>", "&>")) for a in seg.argv[1:])


def _stderr_dropped(seg: Segment) -> bool:
    """The segment's error messages do not reach the output."""
    return _STDERR_DROPPED.search(seg.text) is not None


# ---------------------------------------------------------------------------------------- error shapes

# bash's own messages about the command line: a failed cd, redirection or missing program
_SHELL_ERROR = re.compile(
    r"^(?:/bin/|/usr/bin/)?(?:ba|da)?sh: (?:line \d+: |\d+: )?|^\S+: (?:line \d+: )?cd: |: command not found$"
    r"|No such file or directory$|: Permission denied$|^Killed$|^Segmentation fault|^Terminated$|No module named ",
    re.M,
)


# substrings every _SHELL_ERROR match holds: one ``in`` each rules most outputs out before the regex
_SHELL_KEYS = (
    "sh: ",
    "cd: ",
    "not found",
    "No such file",
    "Permission denied",
    "Killed",
    "Segmentation",
    "Terminated",
    "No module",
)


def _tool_error_in(name: str, output: str) -> bool:
    """A GNU tool's message in the output: a line that starts with its name and a colon
    (``cat: x: No such file``, ``/usr/bin/sed: -e expression``)."""
    key = name + ": "
    at = output.find(key)
    while at >= 0:
        if at == 0 or output[at - 1] in "\n/":
            start = output.rfind("\n", 0, at) + 1
            if at == start or " " not in output[start:at]:
                return True
        at = output.find(key, at + 1)
    return False


_GIT_ERROR = re.compile(r"^(?:fatal|error|usage|CONFLICT)\b|^Aborting$|^git: ", re.M)
_GIT_KEYS = ("fatal", "error", "usage", "CONFLICT", "Aborting", "git: ")


def _git_error_in(output: str) -> bool:
    return any(k in output for k in _GIT_KEYS) and _GIT_ERROR.search(output) is not None


# ---------------------------------------------------------------------------------------- loud programs

# programs that print a message whenever they fail, on the shapes below: an output free of their
# shapes shows that they succeeded. Silent failers (test, [, grep -q, cmp -s, diff, which, readlink,
# git diff --exit-code, git commit with nothing to commit) are not here.
VIEWERS = frozenset({"cat", "head", "tail", "nl", "wc", "sort", "uniq", "cut", "tr", "tac", "fold", "column"})
LISTERS = frozenset({"ls", "find", "pwd", "du", "stat", "file", "realpath", "basename", "dirname"})
WRITERS = frozenset({"mkdir", "cp", "mv", "rm", "touch", "chmod", "ln", "rmdir", "tee"})
ECHOES = frozenset({"echo", "printf", "true", ":"})
GIT_OK = frozenset(
    {"status", "log", "show", "diff", "add", "checkout", "branch", "rev-parse", "ls-files", "reset",
     "restore", "apply", "remote", "tag", "blame", "init", "clean"}
)  # fmt: skip
# silent failers left out: ``stash pop`` with no stash ("No stash entries found.", 1), ``config
# KEY`` of an unset key (1, nothing printed), and these diff options (1 when the trees differ)
GIT_DIFF_SILENT = frozenset({"--exit-code", "--quiet", "--check", "--no-index"})


def _loud_class(seg: Segment) -> str | None:
    """The loud-program class of a simple command (its rule's name part), or None."""
    p = prog(seg)
    if p == "sed":
        return "writer" if "i" in _flags(seg) or "--in-place" in _flags(seg) else "viewer"
    if p in VIEWERS:
        return "viewer"
    if p in LISTERS:
        if p == "find" and "+" in seg.argv and any(a in ("-exec", "-execdir") for a in seg.argv):
            return None  # find -exec ... {} + returns the children's failures (the ; form does not)
        return "lister"
    if p in WRITERS:
        return "writer"
    if p in ECHOES:
        return "echo"
    if p == "cd" and len(seg.argv) <= 2:
        return "cd"  # bash prints "cd: X: No such file or directory" whenever it fails
    if p == "git":
        sub = next((a for a in seg.argv[1:] if not a.startswith("-")), "")
        if sub in GIT_OK and not (GIT_DIFF_SILENT & set(seg.argv)):
            return "git"
    return None


def _loud_ok(seg: Segment, output: str) -> bool:
    """A loud program whose failure messages are absent from the output (stderr not dropped)."""
    cls = _loud_class(seg)
    if cls is None or _stderr_dropped(seg):
        return False
    if cls == "echo":
        return True
    if cls == "git":
        return not _git_error_in(output)
    if cls == "cd":
        return "cd: " not in output
    return not _tool_error_in(prog(seg), output)


def _prefix_ok(shape: Shape, output: str) -> bool:
    """Every decider before the final one provably succeeded (so the final one ran), ``&&`` joins only."""
    return all(j == "&&" for j in shape.joins) and all(_loud_ok(d, output) for d in shape.deciders[:-1])


# mini-swe-agent keeps a long output's head and tail only: a message in the cut middle is unseen
_ELIDED = "<elided_chars>"


def _clean(output: str) -> bool:
    """No shell error in the output (see ``_SHELL_ERROR``), and none cut out of it: the rules that
    read an absence of errors call this, so an elided output is never clean."""
    if _ELIDED in output:
        return False
    return not any(k in output for k in _SHELL_KEYS) or _SHELL_ERROR.search(output) is None


# ---------------------------------------------------------------------------------------- the rules


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


def _is_python(seg: Segment) -> bool:
    p = prog(seg)
    return p == "python" or (p.startswith("python") and p[6:].replace(".", "").isdigit())


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


_TRACEBACK = "Traceback (most recent call last):"
_NOT_EXIT_1 = ("SystemExit", "KeyboardInterrupt")
_MESSAGE_LINES = 3
_EXC_LINE = re.compile(
    r"^[A-Za-z_][\w.]*(?:Error|Exception|Failure|Warning|Exit|Interrupt|Iteration)?(?::.*)?$"
)


def _python_script(seg: Segment) -> bool:
    """python running a script, ``-c`` code or stdin: not ``-m`` (a module is a tool with its own
    statuses: pytest, unittest, pip, pylint, flake8, black --check...) nor a test or setup driver
    (``runtests.py``, ``manage.py``, ``setup.py``)."""
    if not _is_python(seg):
        return False
    words = seg.argv[1:]
    if "-m" in words:
        return False
    script = next((w for w in words if not w.startswith("-")), "")
    name = script.rsplit("/", 1)[-1]
    return not (name.startswith(("runtests", "manage", "setup")) or name in ("test", "tests"))


def python_traceback(command: str, output: str) -> int | None:
    """1 when the final decider is a python script and the output ENDS with an uncaught exception's
    traceback (the header, frames, then the exception line last): python exits 1 on an uncaught
    exception (SystemExit and KeyboardInterrupt excluded: they exit otherwise)."""
    at = output.rfind(_TRACEBACK)
    if at < 0:
        return None
    shape = _shape(command)
    if shape is None or not _python_script(shape.final):
        return None
    lines = output[at + len(_TRACEBACK) :].strip("\n").splitlines()
    if not lines or not lines[0].startswith('  File "'):
        return None
    exc = next((i for i, ln in enumerate(lines) if ln and not ln[0].isspace()), None)
    if exc is None or not _EXC_LINE.match(lines[exc]) or lines[exc].startswith(_NOT_EXIT_1):
        return None
    # an exception's message may span lines; more text than that is the script going on
    if sum(1 for ln in lines[exc + 1 :] if ln.strip()) > _MESSAGE_LINES:
        return None
    return 1


_PYTEST_SUMMARY = re.compile(
    r"^=+ (.+) in [\d.]+ ?(?:s|seconds)(?: \([\d:.]+\))? =+$"
    r"|^((?:\d+ \w+(?:, )?)+) in [\d.]+ ?(?:s|seconds)(?: \([\d:.]+\))?$"
)  # ("in 4.31 seconds": pytest before 5.3)
_PYTEST_COUNT = re.compile(
    r"(\d+) (failed|passed|errors?|skipped|xfailed|xpassed|deselected|warnings?|rerun)"
)


# options that list instead of testing: their status is not the tests' (--fixtures: 0 with errors)
_PYTEST_INFO = frozenset(
    {"--fixtures", "--funcargs", "--fixtures-per-test", "--markers", "--collect-only", "--co", "--setup-plan",
     "--help", "-h", "--version", "-V", "--setup-only"}
)  # fmt: skip
_PYTEST_BANNER = re.compile(r"^!{3,} .* !{3,}$")
_PYTEST_COLLECT_ERROR = re.compile(r"^ERROR [^\s:]+(?: - .*)?$", re.M)


def _is_pytest(seg: Segment) -> bool:
    p = prog(seg)
    if p in ("pytest", "py.test"):
        return True
    words = seg.argv[1:]
    return (
        _is_python(seg)
        and "-m" in words
        and words.index("-m") + 1 < len(words)
        and words[words.index("-m") + 1] in ("pytest", "py.test")
    )


def pytest_summary(command: str, output: str) -> int | None:
    """pytest's own exit status read from its closing summary line, the last line of the output,
    when the final decider is pytest: 2 after "Interrupted:" (collection errors), 1 with failures or
    errors, 5 when no tests ran, 0 when tests passed (or were skipped / xfailed) and none failed."""
    if " in " not in output:
        return None
    shape = _shape(command)
    if shape is None or not _is_pytest(shape.final) or _PYTEST_INFO & set(shape.final.argv):
        return None
    m = _PYTEST_SUMMARY.match(_last_line(output))
    if not m:
        return None
    body = m.group(1) or m.group(2) or ""
    counts = {
        k.rstrip("s") if k.startswith(("error", "warning")) else k: int(n)
        for n, k in _PYTEST_COUNT.findall(body)
    }
    if "INTERNALERROR" in output or output.count("\n", 0, len(output.rstrip())) < 1:
        return None  # exit 3, or a summary line alone (a screen's last line, not the run)
    tail = [ln.strip() for ln in output.rstrip().splitlines()[-2:]]
    if len(tail) == 2 and _PYTEST_BANNER.match(tail[0]):
        # "!!! Interrupted: 1 error during collection !!!" right before the summary: 2; another
        # banner (the debugger quit, -x stopping) leaves the status to what stopped it
        return 2 if "Interrupted: " in tail[0] and "error" in tail[0] else None
    if counts.get("error") and _PYTEST_COLLECT_ERROR.search(output):
        return None  # a file that failed to import: 1, 2 or 4 (a node id it no longer finds)
    if counts.get("failed") or counts.get("error"):
        return 1
    if counts.get("passed") or counts.get("skipped") or counts.get("xfailed") or counts.get("xpassed"):
        return 0
    return None


_RAN = re.compile(r"^Ran \d+ tests? in [\d.]+s$", re.M)
_UNITTEST_END = re.compile(r"^(OK|FAILED)(?: \(.*\))?$")
_AFTER_RESULT = re.compile(
    r"^(?:(?:Destroying|Creating|Cloning) test database for alias .*|Preserving test database .*"
    r"|System check identified (?:no issues|some issues).*|Testing against Django installed in .*"
    r"|Found \d+ test\(s\)\.|Skipping setup of unused database\(s\): .*)$"
)  # (Django's runner prints these on stdout, flushed after the result it printed on stderr)


def unittest_summary(command: str, output: str, files: RunFiles | None = None) -> int | None:
    """unittest's verdict (Django's runtests.py, ``python -m unittest``, ``manage.py test``): the
    "OK" / "FAILED (...)" line right after "Ran N tests", followed only by Django's test-database
    teardown lines, decides 0 / 1, when the final decider is python or a ``runtests.py`` /
    ``manage.py`` script (python code the command shows, or a script the run showed, must call
    ``unittest.main()`` or an exit: a runner's ``run()`` alone returns, and the code exits 0)."""
    if "Ran " not in output:
        return None
    shape = _shape(command)
    if shape is None or not (_is_python(shape.final) or prog(shape.final) in ("runtests.py", "manage.py")):
        return None
    code = _inline_code(shape) if _is_python(shape.final) else None
    if code is None and files is not None and _python_script(shape.final):
        known = _known_script(command, shape, files)
        code = None if known is None else known[1]
    if code is not None and (("unittest.main(" not in code and "exit" not in code) or "exit=False" in code):
        return None  # code that runs a TestRunner itself and does not exit with its result: 0
    ran = list(_RAN.finditer(output))
    if not ran:
        return None
    rest = [ln for ln in output[ran[-1].end() :].splitlines() if ln.strip() and ln.strip() != _TAIL_MARK]
    if not rest:
        return None
    m = _UNITTEST_END.match(rest[0].strip())
    if not m or not all(_AFTER_RESULT.match(ln.strip()) for ln in rest[1:]):
        return None
    return 0 if m.group(1) == "OK" else 1


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


_PY_ERROR_WORDS = re.compile(r"Traceback|Error|error|FAIL|Fail|fail|Exception|exception|exit|Abort|abort")


def python_clean_output(command: str, output: str) -> int | None:
    """0 when the final decider is a python script and the output holds no error word at all (no
    traceback, "Error", "FAIL", "exception", "exit"). A candidate the bench REJECTS (about 97%):
    reproduction scripts print their findings and then ``sys.exit(1)``, which no output shows.
    Kept, disabled, so the table says why scripts get no code from their output alone."""
    shape = _shape(command)
    if shape is None or not _python_script(shape.final):
        return None
    if not _prefix_ok(shape, output) or _PY_ERROR_WORDS.search(output) or not _clean(output):
        return None
    return 0


_EXITS = re.compile(
    r"exit|quit|abort|SystemExit|excepthook|\bmain\(|signal|kill|exec|runpy|run_path|subprocess|system\("
)


def _inline_code(shape: Shape) -> str | None:
    """The program text the final python decider runs when the command shows it: ``-c CODE``, a
    heredoc on its stdin, or a script an earlier ``cat``/``tee`` heredoc of the same command wrote
    (``cat <<'EOF' > x.py ... EOF`` then ``python x.py``); else None."""
    seg = shape.final
    words = seg.argv[1:]
    if "-c" in words and words.index("-c") + 1 < len(words):
        return words[words.index("-c") + 1]
    script = next((w for w in words if not w.startswith(("-", "<<"))), "")
    if seg.heredoc and (not script or script == "-"):
        return seg.heredoc
    if not script.endswith(".py"):
        return None
    written = None
    for s in shape.segments[:-1]:
        if s.heredoc and prog(s) in ("cat", "tee") and _writes_whole(s, script):
            written = s.heredoc
    return written


def _writes_whole(seg: Segment, path: str) -> bool:
    """``cat <<EOF > path`` / ``tee path <<EOF``: the heredoc is the file's whole text (``>>`` and
    ``tee -a`` append to a text this command does not show)."""
    argv = seg.argv
    if prog(seg) == "tee":
        return path in argv and not ({"a", "--append"} & _flags(seg))
    return ">" + path in argv or any(a == ">" and b == path for a, b in pairwise(argv))


def python_inline(command: str, output: str) -> int | None:
    """Inline python code (its text is in the command): 1 by :func:`python_inline_exception`, 0 by
    :func:`python_inline_clean`."""
    code = python_inline_exception(command, output)
    return code if code is not None else python_inline_clean(command, output)


def python_inline_clean(command: str, output: str) -> int | None:
    """0 when the final decider runs python code given inline (``-c`` or a heredoc) that never
    calls an exit (no ``exit``, ``SystemExit``, ``abort``, ``main(``, signals in its text), and the
    output holds no exception line, no traceback and no shell error: such a program ends with
    status 0 unless an exception escapes it, and an escaping exception prints itself."""
    if _TRACEBACK in output or (_has_exc_word(output) and _EXC_ANYWHERE.search(output)) or _troubled(output):
        return None  # (the code is seen, not the modules it imports: their messages count too)
    shape = _shape(command)
    if shape is None or not _is_python(shape.final):
        return None
    code = _inline_code(shape)
    if code is None or _EXITS.search(code) or not _prefix_ok(shape, output) or not _clean(output):
        return None
    return 0


_EXC_ANYWHERE = re.compile(r"^[\w.]*(?:Error|Exception|Warning)\b", re.M)


def _has_exc_word(output: str) -> bool:
    """The cheap pre-check of ``_EXC_ANYWHERE``: the words it needs."""
    return "Error" in output or "Exception" in output or "Warning" in output


_HANDLES = re.compile(r"except|traceback|print_exc|logging|warn|sys\.stderr|exit|quit|signal")


def python_inline_exception(command: str, output: str) -> int | None:
    """1 when the final decider runs inline python code (``-c`` / heredoc) that handles no exception
    and prints none itself (no ``except``, ``traceback``, ``logging``, ``warn``, ``stderr``, exit
    calls in its text) and the output ends with an exception line after a traceback or a
    ``File "<string>"`` syntax-error frame: the exception escaped, and python exits 1."""
    if _TRACEBACK not in output and 'File "<' not in output:
        return None
    shape = _shape(command)
    if shape is None or not _is_python(shape.final):
        return None
    code = _inline_code(shape)
    if code is None or _HANDLES.search(code):
        return None
    last = _last_line(output)
    if not _EXC_LINE.match(last) or last.startswith(_NOT_EXIT_1) or not _EXC_ANYWHERE.match(last):
        return None
    return 1


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


# what a failing or bug-reproducing script prints before it exits non-zero, lower-cased (measured:
# with these excluded, a script's output alone is enough; without, it is not); a linter's report
# ("************* module x", "rated at") is one too
_PY_BAD_WORDS = (
    "traceback", "error", "fail", "exception", "exit", "abort", "issue", "bug", "reproduc", "wrong",
    "mismatch", "expected", "incorrect", "invalid", "not ", "missing", "problem", "warn", "bad",
    "false", "none", "usage:", "*** module", "rated at", "✗", "❌", "⚠", "✘",
)  # fmt: skip


def _troubled(output: str) -> bool:
    """The output holds a word of ``_PY_BAD_WORDS`` (any case) or a lone ``X`` (a cross mark)."""
    low = output.lower()
    if any(w in low for w in _PY_BAD_WORDS):
        return True
    return "X" in output and "X" in output.split()


def python_script_quiet(command: str, output: str, files: RunFiles | None = None) -> int | None:
    """0 when the final decider is a python script and the output (possibly empty) is clean and
    free of every word a failing or bug-reproducing script prints (errors, failures, "issue",
    "expected", "not", "False", crosses, a linter's report...). A measured rule, not a proof: a
    script may exit non-zero silently; its output then shows no sign of trouble at all, which
    the bench finds rare. (An uncaught exception always prints a traceback.) Where the run showed
    the script's text and it calls an exit, it abstains."""
    shape = _shape(command)
    if shape is None or not _python_script(shape.final) or _inline_code(shape) is not None:
        return None  # code the command shows is python_inline's to judge: it may call exit()
    if _troubled(output) or not _prefix_ok(shape, output) or not _clean(output):
        return None
    known = _known_script(command, shape, files or RunFiles())
    if known is not None and _SCRIPT_EXITS.search(known[1]):
        return None  # the run showed its text, and it may exit non-zero quietly
    return 0


_SYMPY_END = re.compile(r"^=+ tests finished: (.*) in [\d.]+ seconds =+$")


def sympy_test_summary(command: str, output: str) -> int | None:
    """SymPy's ``bin/test`` verdict from its closing line: "tests finished: ... failed|exceptions"
    -> 1, else (passed, expected to fail, skipped only) -> 0; its "DO *NOT* COMMIT!" trailer after
    a failure is allowed."""
    if "tests finished" not in output:
        return None
    shape = _shape(command)
    if shape is None or not (
        shape.final.argv[0].endswith("bin/test")
        or (_is_python(shape.final) and any(a.endswith("bin/test") for a in shape.final.argv[1:2]))
    ):
        return None
    lines = [ln.strip() for ln in output.rstrip().splitlines()[-3:] if ln.strip()]
    if lines and lines[-1] == "DO *NOT* COMMIT!":
        lines.pop()
    m = _SYMPY_END.match(lines[-1]) if lines else None
    if not m:
        return None
    return 1 if re.search(r"\d+ (?:failed|exceptions?)", m.group(1)) else 0


# ---------------------------------------------------------------------------------------- known scripts

# what can end a script with a status other than 0 or 1 with no traceback, or stop it otherwise:
# exit calls, signals, another program in its place, CLI entry points that call sys.exit
# (``unittest.main``, ``main()``, pylint's ``Run``, argparse, Django's command line, setup())
_SCRIPT_EXITS = re.compile(
    r"exit|quit|abort|SystemExit|excepthook|kill|signal|\.main\b|import[^\n]*\bmain\b|\bRun\(|parse_args"
    r"|execute_from_command_line|\bexec\(|os\.exec|runpy|run_path|faulthandler|ctypes|unittest|(?<![.\w])setup\(|_thread|os\.fork|sys\.settrace"
    r"|argv|argparse|ArgumentParser|add_argument|run_pylint|\bcli\b|click|typer|command_line|build_main"
)
# what could print an exception's traceback other than the interpreter's hook, or run other code
_SCRIPT_PRINTS_TRACEBACKS = re.compile(
    r"traceback|logging|logger|exc_info|print_exception|__traceback__|multiprocessing|argv"
    r"|pytest|doctest|interact|pdb"
)  # (a thread's or a child's traceback starts elsewhere than the script's module level: the
# frame check tells them apart, unless the child is the script itself: argv, __file__ run)
_RUNS_CHILDREN = re.compile(r"subprocess|os\.system|popen|Popen")
_HIDDEN_END = (
    "Fatal Python error",
    "Segmentation fault",
    "core dumped",
    "Killed",
    "Aborted",
    "truncated due to length",
    "Unable to decode the command",  # python could not decode its -c argument: 1, no traceback
)
_USAGE = re.compile(r"^usage: |^\S+(?: \S+)*: error: ", re.M)
_SYNTAX_LINE = re.compile(r"^(?:SyntaxError|IndentationError|TabError)\b", re.M)


def _known_script(command: str, shape: Shape, files: RunFiles) -> tuple[str, str] | None:
    """``(script word, text)`` when the final decider runs a script (``python [opts] path.py
    [args]``) whose whole text the run wrote or displayed before (or this command's own heredoc
    wrote), its output not redirected and its errors kept; else None. A ``cd DIR`` that starts the
    command gives relative paths their base; after any other ``cd``, a relative script is unknown."""
    seg = shape.final
    if not _python_script(seg) or seg.heredoc or "-c" in seg.argv or shape.piped:
        return None
    if (
        _stdout_redirected(seg)
        or _stderr_dropped(seg)
        or any(a.startswith("2>") and a != "2>&1" for a in seg.argv)
    ):
        return None
    words = seg.argv[1:]
    script = next((w for w in words if not w.startswith("-")), "")
    if not script.endswith(".py") or any(
        w.startswith("-") and w not in ("-u", "-B") for w in words[: words.index(script)]
    ):
        return None  # -i (stays), -W error, -X options change how it ends
    cwd = command_cwd(command)
    if cwd is None and not script.startswith("/"):
        return None  # a cd may have moved the shell: which file runs is not known
    written = _inline_code(
        shape
    )  # a heredoc of this command wrote it: `cat <<'EOF' > x.py ... EOF; python x.py`
    text = written if written is not None else files.script(script, cwd or TESTBED)
    return None if text is None else (script, text)


_EXIT_NAMES = frozenset({"exit", "quit", "_exit"})
_STDOUT_MOVED = re.compile(r"redirect_stdout|sys\.stdout\s*=|sys\.__stdout__|\bdup2\b|capture")


def _exit_call(stmt: ast.stmt) -> ast.expr | None:
    """The exit a statement is, if it is one: ``sys.exit(X)`` / ``exit(X)`` / ``quit(X)`` /
    ``os._exit(X)`` as a statement, or ``raise SystemExit(X)``; its argument expression (a
    ``Constant(None)`` when it has none)."""
    call = stmt.value if isinstance(stmt, ast.Expr) else stmt.exc if isinstance(stmt, ast.Raise) else None
    if isinstance(stmt, ast.Raise) and isinstance(call, ast.Name) and call.id == "SystemExit":
        return ast.Constant(None)
    if not isinstance(call, ast.Call) or call.keywords or len(call.args) > 1:
        return None
    f = call.func
    name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
    if (name in _EXIT_NAMES and isinstance(stmt, ast.Expr)) or (
        name == "SystemExit" and isinstance(stmt, ast.Raise)
    ):
        return call.args[0] if call.args else ast.Constant(None)
    return None


def _printed_before(body: list[ast.stmt], i: int) -> str | None:
    """The constant text ``print("...")`` prints, when it is the statement right before ``body[i]``."""
    if (
        i == 0
        or not isinstance(prev := body[i - 1], ast.Expr)
        or not isinstance(call := prev.value, ast.Call)
    ):
        return None
    if (
        not (isinstance(call.func, ast.Name) and call.func.id == "print")
        or call.keywords
        or len(call.args) != 1
    ):
        return None
    arg = call.args[0]
    return (
        arg.value.strip()
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and arg.value.strip()
        else None
    )


@lru_cache(maxsize=256)
def _without_exits(text: str, output: str) -> str:
    """The script's text with the exit calls cut out that cannot have ended this run with a
    status other than 0: an exit of 0 (``sys.exit(0)``, ``sys.exit()``), and an exit right after
    a ``print("constant")`` whose text the output does not hold (had it run, that line would
    show: stdout is flushed at exit). Any other exit call, or one not a statement of its own,
    and the text is kept whole (the caller then abstains)."""
    if "exit" not in text and "quit" not in text and "SystemExit" not in text:
        return text
    if _STDOUT_MOVED.search(text):
        return text  # its prints may not reach the output
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return text
    cut: list[ast.stmt] = []
    for node in ast.walk(tree):
        for field_name in ("body", "orelse", "finalbody", "handlers"):
            body = getattr(node, field_name, None)
            if not isinstance(body, list):
                continue
            for i, stmt in enumerate(body):
                if not isinstance(stmt, ast.stmt) or (arg := _exit_call(stmt)) is None:
                    continue
                zero = isinstance(arg, ast.Constant) and arg.value in (0, None)
                shown = _printed_before(body, i)
                if zero or (shown is not None and shown not in output):
                    cut.append(stmt)
                else:
                    return text
    lines = text.split("\n")
    for stmt in sorted(cut, key=lambda n: (n.lineno, n.col_offset), reverse=True):
        if stmt.lineno != stmt.end_lineno:
            return text
        line = lines[stmt.lineno - 1]
        lines[stmt.lineno - 1] = line[: stmt.col_offset] + "pass" + line[stmt.end_col_offset or 0 :]
    return "\n".join(lines)


def _inline_program(shape: Shape) -> tuple[str, str] | None:
    """``("-", code)`` when the final decider runs python code the command shows (``-c CODE``, a
    heredoc on stdin), its output not redirected and its errors kept (and not piped: its status
    is the command's)."""
    seg = shape.final
    if not _is_python(seg) or shape.piped or _stdout_redirected(seg) or _stderr_dropped(seg):
        return None
    if any(a.startswith("2>") and a != "2>&1" for a in seg.argv) or "-m" in seg.argv:
        return None
    if any(
        w.startswith("-") and w not in ("-u", "-B", "-c", "-") for w in seg.argv[1:] if not w.startswith("<<")
    ):
        return None
    code = _inline_code(shape)
    if code is None or (not code.isascii() and "-c" in seg.argv):
        return None  # (a -c argument python cannot decode under the run's locale fails with 1)
    return ("-", code)


@lru_cache(maxsize=256)
def _parses(text: str) -> bool:
    try:
        ast.parse(text)
    except (SyntaxError, ValueError):
        return False
    return True


def python_script_known_clean(command: str, output: str, files: RunFiles) -> int | None:
    """0 when the final decider runs a script whose text the run wrote or displayed earlier (or
    code the command shows: ``-c``, a heredoc), that text parses and calls no exit (no ``exit``, ``quit``, ``SystemExit``, signals, CLI entry
    points...; allowed: an exit of 0, and an exit right after a constant ``print`` the output does
    not show, which did not run: ``_without_exits``), and the output holds no traceback, no syntax error, no crash and no shell error:
    such a script ends with 0 unless an exception escapes it, and an escaping exception prints
    its traceback (stderr is kept)."""
    if _TRACEBACK in output or _SYNTAX_LINE.search(output) or any(k in output for k in _HIDDEN_END):
        return None
    if "usage: " in output and _USAGE.search(output):
        return None  # argparse's report of a bad command line, from code the script called: exit 2
    shape = _shape(command)
    if shape is None or not _prefix_ok(shape, output) or not _clean(output):
        return None
    known = _known_script(command, shape, files) or _inline_program(shape)
    if known is None or not _parses(known[1]):
        return None
    if _SCRIPT_EXITS.search(_without_exits(known[1], output)):
        return None
    return 0


def python_script_known_traceback(command: str, output: str, files: RunFiles) -> int | None:
    """1 when the final decider runs a script whose text the run wrote or displayed earlier, that
    text prints no traceback itself and runs nothing that could (no ``traceback``, ``logging``,
    threads, subprocesses, ``warnings``), calls no exit, and the output holds a traceback whose
    first frame is the script's module level: only the interpreter prints that, for an exception
    that escaped the script, and then python exits 1 (SystemExit, KeyboardInterrupt excluded)."""
    if _TRACEBACK not in output or any(k in output for k in _HIDDEN_END) or _ELIDED in output:
        return None
    shape = _shape(command)
    if shape is None or not _prefix_ok(shape, output):
        return None
    known = _known_script(command, shape, files)
    if known is None or _SCRIPT_EXITS.search(known[1]) or _SCRIPT_PRINTS_TRACEBACKS.search(known[1]):
        return None
    if "__file__" in known[1] and _RUNS_CHILDREN.search(known[1]):
        return None  # it may run itself in a child, whose traceback has the same first frame
    name = posixpath.basename(known[0])
    lines = output.splitlines()
    for i, line in enumerate(lines[:-1]):
        if line.strip() != _TRACEBACK:
            continue
        frame = _FRAME.match(lines[i + 1])
        if frame is None or posixpath.basename(frame.group(1)) != name or frame.group(2) != "<module>":
            continue
        exc = next((ln for ln in lines[i + 2 :] if ln and not ln[0].isspace()), "")
        if _EXC_LINE.match(exc) and not exc.startswith(_NOT_EXIT_1):
            return 1
    return None


_FRAME = re.compile(r'^  File "([^"]+)", line \d+, in (\S+)$')
_MODULE_FRAME = re.compile(r'^  File "([^"]+)", line (\d+), in <module>$')
# what may catch an exception, or run the script again in a child, at module level
_CATCHERS = (ast.Try, ast.With, ast.AsyncWith) + ((ast.TryStar,) if hasattr(ast, "TryStar") else ())
# what can end a process whose exception escaped with another status than 1 (an exit before the
# failing line would have stopped it before that line ran, so only these matter here)
_EXIT_ALTERING = re.compile(
    r"_exit\b|atexit|excepthook|ctypes|\bkill\b|signal\.(?:signal|alarm|raise_signal|setitimer)"
    r"|settrace|setprofile|\bexec[lv]p?e?\(|os\.exec|os\.fork|os\.abort|faulthandler"
)
_CHILD_OF_ITSELF = re.compile(r"subprocess|os\.system|popen|Popen|multiprocessing|concurrent|runpy|exec\(")


def _first_line(stmt: ast.stmt) -> int:
    decorators: list[ast.expr] = getattr(stmt, "decorator_list", None) or []
    return min([stmt.lineno, *(d.lineno for d in decorators)])


def _uncaught_at(tree: ast.Module, line: int) -> bool:
    """Whether a module-level statement spans ``line`` and nothing around it can catch what it
    raises (no ``try`` or ``with`` on the way down from the module to it)."""
    body: list[ast.stmt] = tree.body
    while True:
        stmt = next((st for st in body if _first_line(st) <= line <= (st.end_lineno or st.lineno)), None)
        if stmt is None or isinstance(stmt, (*_CATCHERS, ast.Match)):
            return False  # (a match's cases are not followed)
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            # the module's frame at a def or class: its decorators, defaults, bases or metaclass
            # raised (a class body runs in a frame of its own, named after the class)
            return True
        inner = [
            b
            for field in ("body", "orelse", "handlers", "finalbody", "cases")
            for b in getattr(stmt, field, None) or []
            if isinstance(b, ast.stmt)
        ]
        nested = [b for b in inner if _first_line(b) <= line <= (b.end_lineno or b.lineno)]
        if not nested:
            return True  # the statement itself (its header line or a simple statement)
        body = nested


def python_script_known_uncaught(command: str, output: str, files: RunFiles) -> int | None:
    """1 when the final decider runs a script whose text the run wrote or displayed earlier, has
    nothing that ends a process another way (``os._exit``, ``atexit``, an ``excepthook``, signals,
    ``exec``) and runs no child of itself, and the output holds a traceback whose first frame is
    the script's module level at a line where nothing can catch the exception (no ``try``/``with``
    around that statement): the exception escaped the script, python printed it and exits 1
    (SystemExit and KeyboardInterrupt excluded). A traceback the script printed itself starts at
    a frame where it was caught, which is inside a ``try``. (An exit the script calls before that
    line would have ended it before the line ran.)"""
    if _TRACEBACK not in output or any(k in output for k in _HIDDEN_END) or _ELIDED in output:
        return None
    shape = _shape(command)
    if shape is None or not _prefix_ok(shape, output):
        return None
    known = _known_script(command, shape, files)
    if known is None or _EXIT_ALTERING.search(known[1]) or _CHILD_OF_ITSELF.search(known[1]):
        return None
    try:
        tree = ast.parse(known[1])
    except (SyntaxError, ValueError):
        return None
    name = posixpath.basename(known[0])
    lines = output.splitlines()
    for i, line in enumerate(lines[:-1]):
        if line.strip() != _TRACEBACK:
            continue
        frame = _MODULE_FRAME.match(lines[i + 1])
        if frame is None or posixpath.basename(frame.group(1)) != name:
            continue
        exc = next((ln for ln in lines[i + 2 :] if ln and not ln[0].isspace()), "")
        if (
            _EXC_LINE.match(exc)
            and not exc.startswith(_NOT_EXIT_1)
            and _uncaught_at(tree, int(frame.group(2)))
        ):
            return 1
    return None


def python_syntax_error(command: str, output: str) -> int | None:
    """1 when the final decider runs a script and the output is python's report that the script
    itself does not compile: its first line the script's ``File "x.py", line N`` (no traceback:
    nothing ran), a ``SyntaxError`` / ``IndentationError`` line after it."""
    if "Error" not in output or _TRACEBACK in output:
        return None
    shape = _shape(command)
    if shape is None or not _python_script(shape.final) or shape.final.heredoc or "-c" in shape.final.argv:
        return None
    words = shape.final.argv[1:]
    script = next((w for w in words if not w.startswith("-")), "")
    lines = [ln for ln in output.strip("\n").splitlines() if ln.strip()]
    m = _FRAME_NO_FUNC.match(lines[0]) if lines else None
    if (
        not script.endswith(".py")
        or m is None
        or posixpath.basename(m.group(1)) != posixpath.basename(script)
    ):
        return None
    if not _SYNTAX_LINE.match(lines[-1]) or len(lines) > 6 or not _prefix_ok(shape, output):
        return None
    return 1


_RUNPY_FRAME = re.compile(r'^  File "(?:[^"]*/runpy\.py|<frozen runpy>)", line \d+, in _run_module_as_main$')
_RUNNERS = frozenset({"pytest", "py.test", "unittest", "nose", "tox", "doctest"})


def python_module_failed(command: str, output: str) -> int | None:
    """1 when the final decider is ``python -m MODULE`` (not a test runner) and the output shows
    the module failed as a whole: python's "python: No module named MODULE" as its last line, or a
    traceback whose first frame is runpy's ``_run_module_as_main`` (only the interpreter prints
    that frame first: it is the outermost one, so the exception escaped the module)."""
    if "No module named" not in output and "_run_module_as_main" not in output:
        return None
    shape = _shape(command)
    if shape is None or shape.piped or not _is_python(shape.final) or not _prefix_ok(shape, output):
        return None
    seg = shape.final
    words = seg.argv[1:]
    if (
        "-m" not in words
        or words.index("-m") + 1 >= len(words)
        or _stderr_dropped(seg)
        or _stdout_redirected(seg)
    ):
        return None
    module = words[words.index("-m") + 1]
    if module.split(".")[0] in _RUNNERS:
        if re.fullmatch(r"(?:\S*/)?python[\d.]*: No module named " + re.escape(module), _last_line(output)):
            return 1
        return None
    if re.fullmatch(r"(?:\S*/)?python[\d.]*: No module named " + re.escape(module), _last_line(output)):
        return 1
    lines = output.splitlines()
    for i, line in enumerate(lines[:-1]):
        if line.strip() == _TRACEBACK and _RUNPY_FRAME.match(lines[i + 1]):
            exc = next((ln for ln in lines[i + 2 :] if ln and not ln[0].isspace()), "")
            if _EXC_LINE.match(exc) and not exc.startswith(_NOT_EXIT_1):
                return 1
    return None


_FRAME_NO_FUNC = re.compile(r'^  File "([^"]+)", line \d+$')


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
