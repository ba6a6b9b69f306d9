"""The converter's edit scripts run in process on a file's known text: the script sees only a file
store and a print buffer (stand-ins for ``open``, ``print``, ``sys`` and ``os``, a short list of
other builtins); an import of anything else fails the proof, and a script naming a dunder or a
formatter (the ways out of a restricted namespace) is not run at all."""

from __future__ import annotations

import ast
import dis
import io
import posixpath
import re
from collections.abc import Iterator
from dataclasses import dataclass
from types import CodeType
from typing import TYPE_CHECKING, Any

from pipeline.convert.roots import TESTBED

if TYPE_CHECKING:
    from pipeline.convert.runfiles import Files


_PY_HEREDOC = re.compile(r"\Apython3 - <<'(\w+)'([^\n]*)\n(.*)\n\1\Z", re.S)


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


def _abs(path: str) -> str:
    return posixpath.normpath(path if path.startswith("/") else posixpath.join(TESTBED, path))


def _codes(code: CodeType) -> Iterator[CodeType]:
    """A code object and every code object nested in it."""
    yield code
    for const in code.co_consts:
        if isinstance(const, CodeType):
            yield from _codes(const)


_FOR_ITER = dis.opmap["FOR_ITER"]
_BACKWARD = frozenset(dis.opmap[n] for n in ("JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT") if n in dis.opmap)


def _plain(code: CodeType) -> bool:
    """Whether a compiled script is one a plain edit script can be: no name a way out of the
    restricted namespace needs (dunders, formatters), and no loop but ``for`` over a container
    (every backward jump closes a ``for``; ``range`` is not among its builtins), so it ends."""
    for c in _codes(code):
        if any(name.startswith("_") or name in _REFUSED_NAMES for name in c.co_names):
            return False
        ops = c.co_code[::2]  # one opcode per two-byte unit (inline caches are units too)
        if sum(op in _BACKWARD for op in ops) > ops.count(_FOR_ITER):
            return False
    return True


# names a plain edit script never needs: dunders (the way out of a restricted namespace) and the
# string formatters that read attributes named inside a format string
_REFUSED_NAMES = frozenset({"format", "format_map", "globals", "locals", "vars", "getattr", "eval", "exec"})
_BUILTINS = {
    "len": len, "max": max, "min": min, "enumerate": enumerate, "sum": sum,
    "str": str, "int": int, "list": list, "compile": compile, "SyntaxError": SyntaxError,
    "ValueError": ValueError, "repr": repr, "any": any, "all": all,
}  # fmt: skip


def edit_script(command: str) -> tuple[str, str] | None:
    """``(script, then)`` of a ``python3 -`` heredoc command (``then``: what runs after it)."""
    m = _PY_HEREDOC.match(command)
    if m is None:
        return None
    return m.group(3), m.group(2).strip().removeprefix("&&").strip()


# the converter's edit scripts name their one file first (``path = '…'``) and read it whole
_PATH_LINE = re.compile(r"^path = (.+)$", re.M)


def _reads_unknown(script: str, files: Files) -> bool:
    """Whether a converter's edit script reads a file whose text is not known (most edits: a file
    is rarely displayed whole before it is edited), told from its text without compiling it."""
    if "f.read()" not in script:
        return False
    m = _PATH_LINE.search(script)
    if m is None:
        return False
    try:
        path = ast.literal_eval(m.group(1))
    except (ValueError, SyntaxError):
        return False
    return isinstance(path, str) and files.text(_abs(path)) is None


def run_edit(script: str, files: Files) -> Outcome | None:
    """The script run on the known files; None when it reads a file not known, or is not one of
    the converter's plain edit scripts (then nothing is proven by running it)."""
    if _reads_unknown(script, files):
        return None  # it would stop at its read: not compiled for nothing
    try:
        code_obj = compile(script, "<edit>", "exec")
    except (SyntaxError, ValueError):
        return None
    if not _plain(code_obj):
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
        exec(code_obj, env)
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
