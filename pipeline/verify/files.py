"""The repository's files as the run itself displayed them, and the run's edit scripts run on them.

The converter's edits are ``python3 -`` heredocs (``pipeline.convert.edits``) that read one file,
replace exact text, write it back and print the editor's report. Where the run displayed the
whole file earlier (a ``cat``/``cat -n`` of it, a file it created), that script is *run* here, in
process, on the displayed text: what it prints, its exit status and the text it leaves are the
command's, and must be what the converted run shows. Running it in process keeps the proof cheap
(no interpreter started per edit); the script sees only a file store and a print buffer: its
``open``, ``print``, ``sys`` and ``os`` are stand-ins, its other builtins a short list, and an
import of anything else fails the proof.

Knowledge is conservative: a command the run ran itself, other than a read-only display, may
change any file, so it forgets every file; a file is known again once displayed whole.
"""

from __future__ import annotations

import ast
import io
import posixpath
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pipeline.shell import Segment, split_command

TESTBED = "/testbed"
_PY_HEREDOC = re.compile(r"\Apython3 - <<'(\w+)'([^\n]*)\n(.*)\n\1\Z", re.S)
_CAT_N_LINE = re.compile(r"^ {0,5}\d+\t", re.M)
# programs that only read: a command made of these alone (no redirection) changes no file
_READ_ONLY = frozenset(
    [
        "cat",
        "ls",
        "grep",
        "egrep",
        "fgrep",
        "rg",
        "find",
        "head",
        "tail",
        "wc",
        "nl",
        "sed",
        "awk",
        "sort",
        "uniq",
        "cut",
        "tr",
        "echo",
        "printf",
        "pwd",
        "diff",
        "cmp",
        "stat",
        "file",
        "which",
        "tree",
        "du",
        "df",
        "date",
        "env",
        "true",
        "false",
        "test",
        "[",
        "git",
    ]
)
_GIT_READ = frozenset({"status", "diff", "log", "show", "grep", "blame", "ls-files", "rev-parse", "branch"})


class _Exit(Exception):
    def __init__(self, code: int) -> None:
        self.code = code


class _Sys:
    def __init__(self) -> None:
        self.exit = self._exit

    @staticmethod
    def _exit(code: int = 0) -> None:
        raise _Exit(int(code or 0))


class _Writer(io.StringIO):
    """A file opened for writing: its text lands in ``sink`` when it is closed."""

    def __init__(self, sink: dict[str, str], path: str) -> None:
        super().__init__(newline="")
        self.sink, self.path = sink, path

    def close(self) -> None:
        if not self.closed:
            self.sink[self.path] = self.getvalue()
        super().close()


@dataclass
class Outcome:
    printed: str
    code: int
    text: str | None  # the file's text after the script (None: it did not write)


@dataclass
class Files:
    """Known file texts by absolute path (a display is decoded when an edit first reads it)."""

    known: dict[str, str | Callable[[], str | None]] = field(default_factory=dict)

    def text(self, path: str) -> str | None:
        """The file's known text, or None."""
        value = self.known.get(path)
        if callable(value):
            value = value()
            if value is None:
                del self.known[path]
            else:
                self.known[path] = value
        return value

    def after(
        self, command: str, output: str, returncode: int | None, synthesised: bool, segments: list[Segment]
    ) -> None:
        """Learn from, or forget because of, one converted turn that is not a replayed edit
        (``segments``: the command's ``split_command``)."""
        if returncode == 0 and (shown := whole_display(command, output, segments)) is not None:
            self.known[shown[0]] = shown[1]
            return
        if synthesised and (created := created_file(command)) is not None:
            self.known[created[0]] = created[1]
            return
        if self.known and not synthesised and not read_only(command, segments):
            self.known.clear()


def _abs(path: str) -> str:
    return posixpath.normpath(path if path.startswith("/") else posixpath.join(TESTBED, path))


# SWE-agent's window as the converter prints it: lines FIRST..LAST of one file, then its total
_WINDOW_CMD = re.compile(r"\Aawk 'NR>=(\d+)&&NR<=(\d+)\{l\[NR\]=\$0\} END\{[^\n]*\}' ('(?:[^']|'\\'')*')\Z")
_WINDOW_OUT = re.compile(r"\A\[File: [^\n]+ \((\d+) lines total\)\]\n((?:\d+:[^\n]*\n)*)\Z")


def _window(command: str, output: str) -> tuple[str, str] | None:
    """A window that starts at line 1 and shows every line: the whole file."""
    m, w = _WINDOW_CMD.match(command), _WINDOW_OUT.match(output)
    if m is None or w is None or m.group(1) != "1":
        return None
    n, body = int(w.group(1)), w.group(2).split("\n")[:-1]
    if int(m.group(2)) < n or len(body) != n or not all(b.startswith(f"{i}:") for i, b in enumerate(body, 1)):
        return None
    words = split_command(f"cat {m.group(3)}")[0].argv
    texts = [b.split(":", 1)[1] for b in body]
    return _abs(words[1]), ("\n".join(texts) + "\n") if texts != [""] else "\n"


def whole_display(
    command: str, output: str, segments: list[Segment] | None = None
) -> tuple[str, Callable[[], str | None]] | None:
    """``(path, text)`` when a plain ``cat FILE``, ``cat -n FILE`` or a SWE-agent window
    covering every line printed the whole file; ``text`` decodes the display when called (None:
    the display is not the whole file after all), so a file never edited costs no decoding."""
    if command.startswith("awk 'NR>="):
        shown = _window(command, output)
        return None if shown is None else (shown[0], lambda: shown[1])
    if not command.startswith("cat ") or "|" in command or ">" in command or "\n" in command:
        return None
    segs = split_command(command) if segments is None else segments
    if len(segs) != 1 or segs[0].heredoc:
        return None
    argv = segs[0].argv
    if len(argv) == 2 and argv[0] == "cat" and not argv[1].startswith("-"):
        return _abs(argv[1]), lambda: output
    if len(argv) == 3 and argv[:2] == ["cat", "-n"]:
        return _abs(argv[2]), lambda: _cat_n_text(output)
    return None


def _cat_n_text(output: str) -> str | None:
    """The file ``cat -n`` printed, or None when its lines are not numbered 1, 2, ... in order."""
    lines = output.split("\n")
    body = lines[:-1] if lines[-1] == "" else lines
    if all(_CAT_N_LINE.match(line) for line in body) and [int(b.split("\t", 1)[0]) for b in body] == list(
        range(1, len(body) + 1)
    ):
        return _CAT_N_LINE.sub("", output)
    return None


def created_file(command: str) -> tuple[str, str] | None:
    """``(path, text)`` of a converter's create: a quoted ``cat > FILE <<'EOF'`` (no truncation),
    or SWE-agent's ``create`` (one empty line, then its window)."""
    e = re.match(r"\Aprintf '\\n' > ('(?:[^']|'\\'')*'|\S+) && awk ", command)
    if e is not None:
        return _abs(split_command(f"cat {e.group(1)}")[0].argv[1]), "\n"
    m = re.match(r"\A(?:mkdir -p \S+ && )?cat > (\S+) <<'(\w+)'([^\n]*)\n(.*)\n\2\Z", command, re.S)
    if m is None or "truncate" in m.group(3):
        return None
    path = m.group(1).strip("'")
    return _abs(path), m.group(4) + "\n"


def read_only(command: str, segments: list[Segment] | None = None) -> bool:
    """Whether ``command`` can change no file (only read-only programs, no redirection)."""
    if ">" in command or "<<" in command:
        return False
    for seg in split_command(command) if segments is None else segments:
        if not seg.argv:
            continue
        prog = seg.argv[0]
        if prog not in _READ_ONLY:
            return False
        if prog == "sed" and any(a.startswith("-i") or a == "--in-place" for a in seg.argv[1:]):
            return False
        if prog == "git" and (len(seg.argv) < 2 or seg.argv[1] not in _GIT_READ):
            return False
        if prog == "find" and any(a in ("-delete", "-exec", "-execdir", "-ok") for a in seg.argv):
            return False
    return True


_SAFE_NODES = (
    ast.Module, ast.Import, ast.alias, ast.Assign, ast.AugAssign, ast.Expr, ast.Call, ast.Name,
    ast.Load, ast.Store, ast.Constant, ast.Attribute, ast.If, ast.Compare, ast.BinOp, ast.BoolOp,
    ast.UnaryOp, ast.With, ast.withitem, ast.Try, ast.ExceptHandler, ast.Tuple, ast.List, ast.For,
    ast.Subscript, ast.Slice, ast.keyword, ast.JoinedStr, ast.FormattedValue, ast.GeneratorExp,
    ast.comprehension, ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.In, ast.NotIn,
    ast.Is, ast.IsNot, ast.And, ast.Or, ast.Not, ast.Add, ast.Sub, ast.Mult, ast.USub, ast.Mod,
    ast.IfExp, ast.Pass,
)  # fmt: skip
_BUILTINS = {
    "len": len, "max": max, "min": min, "range": range, "enumerate": enumerate, "sum": sum,
    "str": str, "int": int, "list": list, "compile": compile, "SyntaxError": SyntaxError,
    "ValueError": ValueError, "repr": repr, "any": any, "all": all,
}  # fmt: skip


def edit_script(command: str) -> tuple[str, str] | None:
    """``(script, then)`` of a ``python3 -`` heredoc command (``then``: what runs after it)."""
    m = _PY_HEREDOC.match(command)
    if m is None:
        return None
    return m.group(3), m.group(2).strip().removeprefix("&&").strip()


def run_edit(script: str, files: Files) -> Outcome | None:
    """The script run on the known files; None when it reads a file not known, or is not one of
    the converter's plain edit scripts (then nothing is proven by running it)."""
    try:
        tree = ast.parse(script)
    except SyntaxError:
        return None
    if not all(isinstance(node, _SAFE_NODES) for node in ast.walk(tree)):
        return None
    out = io.StringIO()
    written: dict[str, str] = {}
    missing = False

    def _open(path: str, mode: str = "r", **_: Any) -> io.StringIO:
        nonlocal missing
        full = _abs(path)
        if "w" in mode:
            return _Writer(written, full)
        text = files.text(full)
        if text is None:
            missing = True
            raise _Exit(-1)
        return io.StringIO(text, newline="")

    def _print(*args: Any, sep: str = " ", end: str = "\n") -> None:
        out.write(sep.join(str(a) for a in args) + end)

    def _import(name: str, *_: Any, **__: Any) -> Any:
        if name == "sys":
            return _Sys()
        raise _Exit(-1)

    env: dict[str, Any] = {
        "__builtins__": {**_BUILTINS, "open": _open, "print": _print, "__import__": _import}
    }
    code = 0
    try:
        exec(compile(tree, "<edit>", "exec"), env)
    except _Exit as e:
        code = e.code
    except Exception:
        return None
    if missing or code < 0:
        return None
    text = None
    for path, text in written.items():
        files.known[path] = text
    return Outcome(out.getvalue(), code, text)
