"""A command's shape as the return-code rules read it: its last and-or list, the deciders of its
pipelines (the last stage of each), their programs and flags, and what its output shows of them
(shell and git errors, loud programs, elided output)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from pipeline.text.shell import OPS, Segment, shlex_split, split_command
from pipeline.text.shell import join_redirects as _join_redirects


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


def _is_python(seg: Segment) -> bool:
    p = prog(seg)
    return p == "python" or (p.startswith("python") and p[6:].replace(".", "").isdigit())
