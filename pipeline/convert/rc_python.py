"""The return-code rules of python runs: tracebacks, inline code (``python -c``, heredocs), and
scripts whose text the run wrote or displayed earlier."""

from __future__ import annotations

import ast
import posixpath
import re
from functools import lru_cache
from itertools import pairwise

from pipeline.convert.rc_shape import (
    _ELIDED,
    Shape,
    _clean,
    _flags,
    _is_python,
    _last_line,
    _prefix_ok,
    _shape,
    _stderr_dropped,
    _stdout_redirected,
    prog,
)
from pipeline.convert.roots import TESTBED
from pipeline.convert.runfiles import RunFiles, command_cwd
from pipeline.text.shell import Segment

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
