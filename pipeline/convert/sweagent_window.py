"""SWE-agent's windowed file viewer/editor → bash (DESIGN §4.1).

The window SWE-agent printed is read back from the observation itself (``[File: P (N lines
total)]``, ``(k more lines above)``, ``i:line`` …, ``(m more lines below)``) and reproduced by an
``awk`` command that prints that exact format for the same line range, so the state the harness
kept (current file, first line) never has to be simulated. Text around the window (e.g. ``File
updated. Please review…``) is printed by ``printf``.

Policies: an ``edit`` that SWE-agent's linter rejected (file unchanged, "Your proposed edit has
introduced new syntax error(s)") and any viewer output that has no window are counted drops
(``convert/sweagent_edit_rejected``, ``convert/sweagent_window``): no honest command prints them.
Searches become ``find``/``grep`` and their observation is re-shaped to what those print.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from pipeline.convert.edits import line_edit_command, print_command, shell_quote
from pipeline.episode import ConvertError

WINDOW_RE = re.compile(
    r"\[File: (?P<path>[^\n]+?) \((?P<total>\d+) lines total\)\]\n"
    r"(?:\((?P<above>\d+) more lines above\)\n)?"
    r"(?P<body>(?:\d+:[^\n]*\n)+)"
    r"(?:\((?P<below>\d+) more lines below\)\n)?"
)
WINDOW_COMMANDS = frozenset({"open", "goto", "scroll_up", "scroll_down", "create", "edit",
                             "find_file", "search_dir", "search_file"})


@dataclass
class Result:
    command: str
    output: str
    returncode: int


@dataclass
class Window:
    path: str
    first: int
    last: int
    start: int  # span of the window text in the observation
    end: int


def find_window(obs: str) -> Window | None:
    m = WINDOW_RE.search(obs)
    if m is None:
        return None
    nums = [int(line.split(":", 1)[0]) for line in m.group("body").splitlines()]
    return Window(m.group("path"), nums[0], nums[-1], m.start(), m.end())


def window_printer(path: str, first: int, last: int) -> str:
    """awk printing SWE-agent's window of ``path`` (an empty file shows as one empty line)."""
    prog = (
        f'NR>={first}&&NR<={last}{{l[NR]=$0}} END{{n=NR; if(n==0){{n=1; l[1]=""}}; '
        f'print "[File: " FILENAME " (" n " lines total)]"; '
        f'if({first}>1) print "(" {first}-1 " more lines above)"; '
        f'for(i={first};i<={last}&&i<=n;i++) print i":"l[i]; '
        f'if({last}<n) print "(" n-{last} " more lines below)"}}'
    )
    return f"awk '{prog}' {shell_quote(path)}"


def _around(obs: str, win: Window, core: str) -> str:
    """``core`` then printers for whatever text surrounds the window in the observation."""
    parts = [p for p in (print_command(obs[: win.start]),) if p] + [core]
    if tail := print_command(obs[win.end:]):
        parts.append(tail)
    return " && ".join(parts)


def _abs(path: str, cwd: str = "/testbed") -> str:
    return path if path.startswith("/") else f"{cwd.rstrip('/')}/{path}"


def convert_window(name: str, args: dict[str, object], obs: str, turn: int,
                   current_file: str | None) -> tuple[Result, str | None]:
    """One windowed-tool call → (bash result, the file now open)."""
    rest = str(args.get("args", "") or "").strip()
    body = str(args.get("body", "") or "")
    if name == "find_file":
        words = shlex.split(rest)
        pattern, where = words[0], _abs(words[1]) if len(words) > 1 else "/testbed"
        out = "".join(line + "\n" for line in obs.splitlines() if line.startswith("/"))
        return Result(f"find {shell_quote(where)} -type f -name {shell_quote(pattern)}", out, 0), current_file
    if name == "search_dir":
        words = shlex.split(rest)
        term, where = words[0], _abs(words[1]) if len(words) > 1 else "/testbed"
        hits = re.findall(r"^(/\S.*) \((\d+) matches\)$", obs, re.M)
        out = "".join(f"{p}:{n}\n" for p, n in hits)
        cmd = f"grep -rIcF -- {shell_quote(term)} {shell_quote(where)} | grep -v ':0$'"
        return Result(cmd, out, 0 if out else 1), current_file
    if name == "search_file":
        words = shlex.split(rest)
        term = words[0]
        target = _abs(words[1]) if len(words) > 1 else current_file
        if target is None:
            raise ConvertError("sweagent_window", f"turn {turn}: search_file with no open file")
        hits = re.findall(r"^Line (\d+):(.*)$", obs, re.M)
        out = "".join(f"{n}:{t}\n" for n, t in hits)
        return Result(f"grep -nF -- {shell_quote(term)} {shell_quote(target)}", out, 0 if out else 1), current_file

    win = find_window(obs)
    if name == "edit":
        if "Your proposed edit has introduced" in obs:
            raise ConvertError("sweagent_edit_rejected", f"turn {turn}")
        m = re.fullmatch(r"(\d+):(\d+)", rest)
        if win is None or m is None:
            raise ConvertError("sweagent_window", f"turn {turn}: edit {rest!r} without a window")
        start, end = int(m.group(1)), int(m.group(2))
        printer = window_printer(win.path, win.first, win.last)
        tail = print_command(obs[win.end:])
        then = f"{printer} && {tail}" if tail else printer
        if obs[: win.start]:
            raise ConvertError("sweagent_window", f"turn {turn}: text before the edit window")
        cmd = line_edit_command(win.path, start, end, body.removesuffix("\n"), "", then=then)
        return Result(cmd, obs, 0), win.path
    if win is None:
        raise ConvertError("sweagent_window", f"turn {turn}: {name} output has no window")
    core = window_printer(win.path, win.first, win.last)
    if name == "create":
        # SWE-agent's create writes a single newline (shown as one empty line)
        core = f"printf '\\n' > {shell_quote(win.path)} && {core}"
    return Result(_around(obs, win, core), obs, 0), win.path
