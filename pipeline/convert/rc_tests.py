"""The return-code rules of test runners: pytest's, unittest's and sympy's summaries."""

from __future__ import annotations

import re

from pipeline.convert.rc_python import _inline_code, _known_script, _python_script
from pipeline.convert.rc_shape import _TAIL_MARK, _is_python, _last_line, _shape, prog
from pipeline.convert.runfiles import RunFiles
from pipeline.text.shell import Segment

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
