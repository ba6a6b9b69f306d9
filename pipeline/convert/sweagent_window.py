"""SWE-agent's windowed file viewer/editor → bash.

Both shapes of a call are accepted, for every tool: the text form the SWE-agent parser gives for
0.x text actions (``{"args": <first-line arguments>, "body": <edit body>}``) and the structured
arguments of SWE-agent 1.x function calling (``find_file(file_name, dir)``, ``search_dir
(search_term, dir)``, ``search_file(search_term, file)``, ``open(path, line_number)``,
``goto(line_number)``, ``scroll_up/down()``, ``create(filename)``, ``edit(search, replace,
replace-all)`` or ``edit(start_line, end_line, replacement_text)``, ``insert(text, line)``).
:func:`window_call` maps both onto one canonical :class:`WindowCall`.

The window SWE-agent printed is read back from the observation itself (``[File: P (N lines
total)]``, ``(k more lines above)``, ``i:line`` …, ``(m more lines below)``) and reproduced by an
``awk`` command that prints that exact format for the same line range, so the state the harness
kept (current file, first line) never has to be simulated. Text around the window (``File
updated. Please review…``, ``Text replaced. …``) is printed by the edit script or ``printf``.
SWE-agent 1.x strips the final newline of a tool's output; where the output ends with a window,
the newline the printer prints is restored (``convert/sweagent_newline_restored``).

Edits: ``edit N:M`` replaces those lines; ``edit(search, replace)`` replaces the one occurrence
inside the lines the agent had on screen (the previous window of that file), like SWE-agent's
``replace_in_window``; a failed search (``Your edit was not applied (file not modified)``…) runs
the same script, which fails with the recorded message and changes nothing. The edit works on
the open file (the window it printed, else the last one shown).

``replace-all`` (SWE-agent's spelling; ``replace_all`` accepted): which branch ran is read from
the result when it says (``Text replaced.``: the window replace; ``Replaced N occurrences``: every
occurrence in the file, and the script checks there are N), else from the argument. Up to
SWE-agent 1.1 the tool parsed the flag with ``type=bool``, so an explicit ``false`` (rendered
``False``) replaced everything; the result text is what tells. A search equal to its replacement
is refused by the tool (``No changes were made``): the script refuses it too. Argument sets that
fit no SWE-agent signature are not this tool's (``window_call`` returns None); the dispatcher then
drops them as ``convert/bad_tool_args`` unless another tool family owns the name.

Linter-rejected edits (``Your proposed edit has introduced new syntax error(s)``): SWE-agent
applied the edit, linted the file and restored it, so the file is unchanged. When every reported
error is ``E999`` (the file no longer compiles), the command is the same edit script gated by
``compile()``: replayed on the pre-edit file it compiles the candidate, fails, prints exactly the
recorded rejection, exits 1 and writes nothing (``convert/sweagent_edit_rejected_replayed``).
Other lint codes (``F821`` undefined name …) have no compile-level equivalent: that turn is
removed, its thought folded forward, and the run kept (``convert/sweagent_edit_rejected_removed``),
which is safe because the file state is unaffected.

SWE-agent 0.x's cursor editor (``set_cursors S E``; ``edit`` with no line range replaces the lines
between the cursors): its windows carry ``<<<<< START CURSOR >>>>>``/``<<<<< END CURSOR >>>>>``
lines, read back like the rest of the window and printed by the same ``awk`` printer at the same
places (its ``(N more lines below)`` counts one line fewer, as the tool's ``_print`` does); the
cursor edit uses the cursors of the window last shown (none on screen: ``convert/sweagent_window``).

Counted drops: viewer output that has no window (``convert/sweagent_window``), a search whose
output is SWE-agent's "more than N files" notice (``convert/sweagent_search_overflow``, no honest
grep prints it), unparseable arguments (``convert/bad_tool_args``).
"""

from __future__ import annotations

import re
import shlex
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from pipeline.convert.edits import (
    line_edit_command,
    print_command,
    replace_command,
    shell_quote,
    window_insert_command,
    window_replace_command,
)
from pipeline.core.episode import ConvertError
from pipeline.parsers.sweagent_tools import WINDOW_COMMANDS

WINDOW_RE = re.compile(
    r"\[File: (?P<path>[^\n]+?) \((?P<total>\d+) lines total\)\](?:\n|\Z)"
    r"(?:\((?P<above>\d+) more lines above\)\n)?"
    r"(?P<body>(?:(?:\d+:[^\n]*|<<<<< (?:START|END) CURSOR >>>>>)(?:\n|\Z))+)"
    r"(?:\((?P<below>\d+) more lines below\)(?:\n|\Z))?"
)
# SWE-agent 0.x's cursor editor marks the edit span inside its window with these lines
START_MARK, END_MARK = "<<<<< START CURSOR >>>>>", "<<<<< END CURSOR >>>>>"
# 1.x structured arguments: tool -> (required keys, optional keys)
JSON_SIGNATURES: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "find_file": (frozenset({"file_name"}), frozenset({"dir"})),
    "search_dir": (frozenset({"search_term"}), frozenset({"dir"})),
    "search_file": (frozenset({"search_term"}), frozenset({"file"})),
    "open": (frozenset({"path"}), frozenset({"line_number"})),
    "goto": (frozenset({"line_number"}), frozenset()),
    "scroll_up": (frozenset(), frozenset()),
    "scroll_down": (frozenset(), frozenset()),
    "create": (frozenset({"filename"}), frozenset()),
    "insert": (frozenset({"text"}), frozenset({"line"})),
}
EDIT_SEARCH = (frozenset({"search", "replace"}), frozenset({"replace-all", "replace_all"}))
EDIT_LINES: tuple[frozenset[str], frozenset[str]] = (
    frozenset({"start_line", "end_line", "replacement_text"}),
    frozenset(),
)
REJECTED = "Your proposed edit has introduced new syntax error"
# which branch of SWE-agent's edit(search, replace) ran, as its success message says
_REPLACED_ALL = re.compile(r"\AReplaced (\d+) occurrences")
_REPLACED_ONE = re.compile(r"\AText replaced\.")
_LINT_CODE = re.compile(r"\b([EFWC]\d{3})\b")
_OVERFLOW = re.compile(r"^More than \d+ (?:files|lines) matched for ", re.M)
_OVERFLOW_LINE = re.compile(
    r'\AMore than (?P<n>\d+) (?:files|lines) matched for "(?P<term>.*)" in (?P<where>/[^\n]*)\. '
    r"Please narrow your search\.\n?\Z"
)


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
    cursors: tuple[int, int] | None = None  # the cursor editor's START/END lines, when shown


@dataclass
class WindowCall:
    """One windowed-tool call in canonical form, whichever shape it arrived in."""

    name: str
    words: list[str] = field(default_factory=list)  # positional text arguments (pattern, dir, …)
    line: int | None = None  # open/goto line, insert line
    start: int | None = None  # edit N:M
    end: int | None = None
    # insert text; an edit N:M's replacement as lines, each ending in a newline ("": no line)
    body: str = ""
    search: str | None = None  # edit(search, replace)
    replace: str = ""
    replace_all: bool = False


@dataclass
class WindowState:
    """What SWE-agent kept between calls, as far as the observations show it."""

    current_file: str | None = None
    shown: Window | None = None  # the last window displayed (the lines an edit may search)
    counters: Counter[str] = field(default_factory=Counter)


def _matches(args: dict[str, Any], sig: tuple[frozenset[str], frozenset[str]]) -> bool:
    keys = set(args)
    return sig[0] <= keys <= sig[0] | sig[1]


def _int(x: Any, turn: int) -> int:
    try:
        return int(str(x).strip())
    except ValueError:
        raise ConvertError("bad_tool_args", f"turn {turn}: not a line number: {str(x)[:40]!r}") from None


def _words(text: str, turn: int) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError as e:
        raise ConvertError("bad_tool_args", f"turn {turn}: {e}") from None


def _truthy(x: Any) -> bool:
    return str(x).strip().lower() in ("true", "1", "yes")


def window_name(name: str) -> bool:
    """A name of SWE-agent's windowed tools (other harnesses may use it too: pi's ``edit``)."""
    return name in WINDOW_COMMANDS


def window_call(name: str, args: dict[str, Any], turn: int = 0) -> WindowCall | None:
    """The canonical call, or None when ``args`` fit neither SWE-agent shape (another tool)."""
    if name not in WINDOW_COMMANDS:
        return None
    if set(args) <= {"args", "body"}:
        return _text_call(
            name, str(args.get("args", "") or "").strip(), str(args.get("body", "") or ""), turn
        )
    if name == "edit":
        if _matches(args, EDIT_SEARCH):
            flag = args.get("replace-all", args.get("replace_all"))
            return WindowCall(
                name,
                search=str(args["search"]),
                replace=str(args["replace"] or ""),
                replace_all=_truthy(flag) if flag is not None else False,
            )
        if _matches(args, EDIT_LINES):
            return WindowCall(
                name,
                start=_int(args["start_line"], turn),
                end=_int(args["end_line"], turn),
                body=_as_lines(str(args["replacement_text"] or "")),
            )
        return None
    sig = JSON_SIGNATURES.get(name)
    if sig is None or not _matches(args, sig):
        return None
    if name in ("find_file", "search_dir", "search_file"):
        first = {"find_file": "file_name"}.get(name, "search_term")
        second = {"search_file": "file"}.get(name, "dir")
        words = [str(args[first])] + ([str(args[second])] if args.get(second) not in (None, "") else [])
        return WindowCall(name, words=words)
    if name == "open":
        ln = args.get("line_number")
        return WindowCall(name, words=[str(args["path"])], line=None if ln in (None, "") else _int(ln, turn))
    if name == "goto":
        return WindowCall(name, line=_int(args["line_number"], turn))
    if name == "create":
        return WindowCall(name, words=[str(args["filename"])])
    if name == "insert":
        ln = args.get("line")
        return WindowCall(
            name, body=str(args["text"] or ""), line=None if ln in (None, "") else _int(ln, turn)
        )
    return WindowCall(name)  # scroll_up / scroll_down


def _as_lines(replacement: str) -> str:
    """A structured edit's ``replacement_text`` as lines: SWE-agent drops one final newline, and
    an empty text deletes the range (``set_window_text``: ``new_text.split("\n") if new_text else []``)."""
    text = replacement.removesuffix("\n")
    return text + "\n" if text else ""


def _text_call(name: str, rest: str, body: str, turn: int) -> WindowCall:
    if name == "edit":
        # SWE-agent's 0.x ``edit`` reads only its first word (``$1``): ``edit 2:2 a.py`` is ``edit 2:2``
        m = re.fullmatch(r"(\d+)\s*:\s*(\d+)(?:\s.*)?", rest, re.S)
        if m:
            return WindowCall(name, start=int(m.group(1)), end=int(m.group(2)), body=body)
        if not rest.strip() and body:
            return WindowCall(name, body=body)  # the cursor editor: replaces the lines between its cursors
        words = _words(rest, turn)  # 1.x text action: edit 'search' 'replace' [replace_all]
        if len(words) in (2, 3) and not body:
            return WindowCall(
                name, search=words[0], replace=words[1], replace_all=len(words) == 3 and _truthy(words[2])
            )
        raise ConvertError("bad_tool_args", f"turn {turn}: edit {rest[:40]!r}")
    if name == "insert":
        return WindowCall(name, body=body, line=_int(rest, turn) if rest else None)
    words = _words(rest, turn)
    if name in ("open", "goto") and words and words[-1].isdigit():
        line = int(words[-1])
        return WindowCall(name, words=words[:-1], line=line)
    return WindowCall(name, words=words)


def find_window(obs: str) -> Window | None:
    m = WINDOW_RE.search(obs)
    if m is None:
        return None
    lines = m.group("body").splitlines()
    nums = [int(line.split(":", 1)[0]) for line in lines if line not in (START_MARK, END_MARK)]
    if not nums:
        return None
    return Window(m.group("path"), nums[0], nums[-1], m.start(), m.end(), _cursors(lines, nums[-1]))


def _cursors(lines: list[str], last: int) -> tuple[int, int] | None:
    """The cursor lines a window shows: START is printed before its line, END after its line; a
    cursor one past the window's last line is printed after it (SWE-agent's loop runs one further)."""
    if START_MARK not in lines and END_MARK not in lines:
        return None
    start = end = None
    for i, line in enumerate(lines):
        if line == START_MARK:
            nxt = next((x for x in lines[i + 1 :] if x not in (START_MARK, END_MARK)), None)
            start = int(nxt.split(":", 1)[0]) if nxt is not None else last + 1
        elif line == END_MARK:
            prev = next((x for x in reversed(lines[:i]) if x not in (START_MARK, END_MARK)), None)
            # an END mark right after START with no line between is past the last line
            end = (
                last + 1
                if prev is None or (start == last + 1 and lines[i - 1] == START_MARK)
                else int(prev.split(":", 1)[0])
            )
    if start is None or end is None:
        return None
    return start, end


def window_printer(path: str, first: int, last: int, cursors: tuple[int, int] | None = None) -> str:
    """awk printing SWE-agent's window of ``path`` (an empty file shows as one empty line); with
    ``cursors``, the cursor editor's START/END marks around those lines, as its ``_print`` does."""
    if cursors is not None:
        a, b = cursors
        prog = (
            f'NR>={first}&&NR<={last}{{l[NR]=$0}} END{{n=NR; if(n==0){{n=1; l[1]=""}}; m=(n<{last}?n:{last}); '
            f'print "[File: " FILENAME " (" n " lines total)]"; '
            f'if({first}>1) print "(" {first}-1 " more lines above)"; '
            f'for(i={first};i<=m+1;i++){{if(i=={a}) print "{START_MARK}"; if(i<=m) print i":"l[i]; '
            f'if(i=={b}) print "{END_MARK}"}}; '
            # its _print counts total - start - shown lines below: one fewer than there are
            f'if(n-{last}-1>0) print "(" n-{last}-1 " more lines below)"}}'
        )
        return f"awk '{prog}' {shell_quote(path)}"
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
    if tail := print_command(obs[win.end :]):
        parts.append(tail)
    return " && ".join(parts)


def _abs(path: str, cwd: str = "/testbed") -> str:
    return path if path.startswith("/") else f"{cwd.rstrip('/')}/{path}"


def _same_file(a: str, b: str) -> bool:
    """Paths as SWE-agent shows them: relative to the working directory or absolute."""
    if _abs(a) == _abs(b):
        return True
    rel, full = (a, b) if not a.startswith("/") else (b, a)
    return not rel.startswith("/") and full.endswith("/" + rel.removeprefix("./"))


def _with_newline(obs: str, win: Window, state: WindowState) -> tuple[str, Window]:
    """1.x dropped the final newline of a window the printer ends with: put it back."""
    if win.end == len(obs) and not obs.endswith("\n"):
        state.counters["convert/sweagent_newline_restored"] += 1
        obs += "\n"
        win = Window(win.path, win.first, win.last, win.start, win.end + 1)
    return obs, win


def _rejection(obs: str, turn: int, state: WindowState) -> str | None:
    """The recorded lint rejection when a compile check reproduces it; raise ``_Removed`` when
    only the turn can go; None when the edit was not rejected."""
    if REJECTED not in obs:
        return None
    errors = obs.split("ERRORS:", 1)[1].split("This is how your edit", 1)[0] if "ERRORS:" in obs else ""
    codes = set(_LINT_CODE.findall(errors))
    if codes == {"E999"}:
        state.counters["convert/sweagent_edit_rejected_replayed"] += 1
        return obs
    state.counters["convert/sweagent_edit_rejected_removed"] += 1
    raise RemovedTurn(f"turn {turn}: lint codes {sorted(codes)}")


class RemovedTurn(Exception):
    """The call changed nothing and no honest command prints its output: drop only this turn."""


# SWE-agent's search tools grep with a basic regular expression (``grep -nIH -- "$search_term"``),
# skip hidden paths (``find ! -path '*/.*'``) and refuse a listing of more than 100 files (lines)
_HIDDEN = "--exclude-dir='.*' --exclude='.*'"


def _overflow(call: WindowCall, obs: str, turn: int, current: str | None) -> Result:
    """The tool's "More than N files (lines) matched" refusal: the same count, computed by grep,
    prints the same sentence when it is over the tool's limit, as the tool does."""
    m = _OVERFLOW_LINE.match(obs)
    if m is None or not call.words or call.name == "find_file" or m["term"] != call.words[0]:
        raise ConvertError("sweagent_search_overflow", f"turn {turn}: {call.name}")
    term = shell_quote(call.words[0])
    if call.name == "search_dir":
        count = f"grep -rlI {_HIDDEN} -- {term} {shell_quote(m['where'])} | wc -l"
        unit = "files"
    else:
        target = _abs(call.words[1]) if len(call.words) > 1 else current
        if target is None or not _same_file(target, m["where"]):
            raise ConvertError("sweagent_search_overflow", f"turn {turn}: {call.name}")
        count, unit = f"grep -c -- {term} {shell_quote(m['where'])}", "lines"
    sentence = f'More than %s {unit} matched for "%s" in %s. Please narrow your search.\\n'
    cmd = (
        f'n=$({count}); [ "$n" -gt 100 ] && printf {shell_quote(sentence)} "$n" {term} '
        f"{shell_quote(m['where'])}"
    )
    return Result(cmd, m.group(0).rstrip("\n") + "\n", 0)


# the place a search tool names in its first line: the realpath of the directory (its default:
# the shell's working directory) or the file (its default: the open file) it searched
_PLACE = re.compile(r'\A(?:Found \d+ matches|No matches found) for ".*" in (/[^\n]*?):?\n')


def _named_place(obs: str) -> str | None:
    m = _PLACE.match(obs if obs.endswith("\n") else obs + "\n")
    return m.group(1) if m else None


def _search(call: WindowCall, obs: str, turn: int, current: str | None) -> Result:
    if _OVERFLOW.search(obs):
        return _overflow(call, obs, turn, current)
    if not call.words:
        raise ConvertError("bad_tool_args", f"turn {turn}: {call.name} without a search term")
    term = call.words[0]
    if call.name == "find_file":
        where = _abs(call.words[1]) if len(call.words) > 1 else _named_place(obs) or "/testbed"
        out = "".join(line + "\n" for line in obs.splitlines() if line.startswith("/"))
        return Result(f"find {shell_quote(where)} -type f -name {shell_quote(term)}", out, 0)
    if call.name == "search_dir":
        where = _abs(call.words[1]) if len(call.words) > 1 else _named_place(obs) or "/testbed"
        hits = re.findall(r"^(/\S.*) \((\d+) matches\)$", obs, re.M)
        out = "".join(f"{p}:{n}\n" for p, n in hits)
        # SWE-agent skips hidden paths (.git!) and lists files sorted; the pipeline exits as sort does
        cmd = f"grep -rIc {_HIDDEN} -- {shell_quote(term)} {shell_quote(where)} | grep -v ':0$' | sort"
        return Result(cmd, out, 0)
    target = _abs(call.words[1]) if len(call.words) > 1 else _named_place(obs) or current
    if target is None:
        raise ConvertError("sweagent_window", f"turn {turn}: search_file with no open file")
    hits = re.findall(r"^Line (\d+):(.*)$", obs, re.M)
    out = "".join(f"{n}:{t}\n" for n, t in hits)
    return Result(f"grep -n -- {shell_quote(term)} {shell_quote(target)}", out, 0 if out else 1)


def _then(obs: str, win: Window) -> str:
    """The window printer, then a printer for any text after the window."""
    printer = window_printer(win.path, win.first, win.last, win.cursors)
    tail = print_command(obs[win.end :])
    return f"{printer} && {tail}" if tail else printer


def _replace_all(call: WindowCall, obs: str) -> int | None:
    """None for the window replace; else the replace-all branch, with the number of occurrences
    its result reported (0: not reported)."""
    if m := _REPLACED_ALL.match(obs):
        return int(m.group(1))
    if _REPLACED_ONE.match(obs) or not call.replace_all:
        return None
    return 0


def _edit(call: WindowCall, obs: str, turn: int, state: WindowState) -> tuple[Result, str]:
    reject = _rejection(obs, turn, state)
    win = find_window(obs)  # the edited window, or the "would have looked" one of a rejection
    path = win.path if win is not None else (state.shown.path if state.shown else state.current_file)
    if path is None:
        raise ConvertError("sweagent_window", f"turn {turn}: edit with no open file")
    if reject is not None:
        ok, then, fail, rc = "", None, None, 1
    elif win is not None:
        obs, win = _with_newline(obs, win, state)
        ok, then, fail, rc = obs[: win.start], _then(obs, win), None, 0
    elif call.search is not None:  # "Your edit was not applied (file not modified)" and the like
        ok, then, fail, rc = "", None, obs, 1
    else:
        raise ConvertError("sweagent_window", f"turn {turn}: edit {call.start}:{call.end} printed no window")
    if call.search is None:
        start, end = call.start, call.end
        if start is None or end is None:  # cursor edit: the span between the cursors last shown
            shown = state.shown
            if shown is None or shown.cursors is None or not _same_file(shown.path, path):
                raise ConvertError("sweagent_window", f"turn {turn}: cursor edit with no cursors on screen")
            start, end = shown.cursors
        # an empty replacement deletes the lines (SWE-agent 0.x's read loop, 1.x's set_window_text)
        new = None if not call.body else call.body.removesuffix("\n")
        cmd = line_edit_command(path, start, end, new, ok, then=then, reject_message=reject)
    elif (every := _replace_all(call, obs)) is not None:
        cmd = replace_command(
            path,
            [(call.search, call.replace, True)],
            ok,
            fail_message=fail,
            then=then,
            reject_message=reject,
            count=every or None,
        )
    else:
        shown = state.shown
        if shown is None or not _same_file(shown.path, path):
            raise ConvertError(
                "sweagent_window", f"turn {turn}: edit(search) with no window of {path} on screen"
            )
        cmd = window_replace_command(
            path,
            shown.first,
            shown.last,
            call.search,
            call.replace,
            ok,
            fail_message=fail,
            then=then,
            reject_message=reject,
        )
    return Result(cmd, obs, rc), path


# the 0.x tools' refusals before they do anything: no open file (``_constrain_line``, edit,
# search_file), arguments that fit no usage (``Usage: edit <start_line>:<end_line>``)
_NO_FILE_OPEN = re.compile(r"\A\s*No file open\. Use the `?open`? command first\.\s*\Z")
_USAGE = re.compile(r"\A\s*Usage: (?P<name>\w+)\b[^\n]*\n(?:Error: [^\n]*\n)?\s*\Z")


def window_refusal(name: str, obs: str) -> str | None:
    """The counter of a windowed-tool call the tool refused before doing anything, else None.

    Such a call changed no file, and its message is about the harness's own state or syntax,
    which no command shows: its turn is removed and its thought carried to the next one."""
    if _NO_FILE_OPEN.match(obs):
        return "convert/sweagent_no_open_file_removed"
    if (m := _USAGE.match(obs if obs.endswith("\n") else obs + "\n")) and m["name"] == name:
        return "convert/sweagent_usage_removed"
    return None


# create of a path that exists: 0.x ``Error: …`` then the file's window, 1.x ``Warning: …`` alone
_CREATE_EXISTS = re.compile(r"(?P<msg>(?P<level>Error|Warning): File '(?P<path>[^\n]+)' already exists\.)\n")
# what the 0.x viewer prints when it refuses to move (its ``open``/``goto`` in defaults.sh):
# nothing changes, the open file and window stay
# (``open P N`` first runs ``awk 'END {print NR}' P`` and a ``[ N -gt … ]`` test, which fail on a
# missing P before the message: their errors are the harness script's, dropped with the call)
_OPEN_MISSING = re.compile(
    r"\A(?:awk: (?:fatal: )?cannot open [^\n]*\n|/root/commands/[^\n]*: line \d+: \[: [^\n]*\n)*"
    r"(?P<msg>File (?P<path>[^\n]+) not found)\n?\Z"
)
_GOTO_PAST_END = re.compile(r"\AError: <line> must be less than or equal to (?P<n>\d+)\n?\Z")


def _refused_move(call: WindowCall, obs: str, current: str | None) -> Result | None:
    """``open`` of a path that does not exist, ``goto`` past the open file's end: a test that
    prints the viewer's message exactly when the viewer printed it (same condition, no effect);
    None for any other output."""
    if call.name == "open" and call.words and (m := _OPEN_MISSING.match(obs)) and m["path"] == call.words[0]:
        q = shell_quote(call.words[0])
        return Result(f"test -e {q} || echo {shell_quote(m['msg'])}", m["msg"] + "\n", 0)
    if call.name == "goto" and call.line is not None and current and (m := _GOTO_PAST_END.match(obs)):
        if call.line <= int(m["n"]):
            return None
        prog = f'END{{if({call.line}>NR) print "Error: <line> must be less than or equal to " NR}}'
        return Result(f"awk '{prog}' {shell_quote(current)}", m.group(0).rstrip("\n") + "\n", 0)
    return None


def convert_window(name: str, args: dict[str, Any], obs: str, turn: int, state: WindowState) -> Result:
    """One windowed-tool call → the bash result; ``state`` follows the open file and window.

    Raises :class:`RemovedTurn` when only this turn must go (see the module docstring)."""
    call = window_call(name, args, turn)
    if call is None:
        raise ConvertError("bad_tool_args", f"turn {turn}: {name}({', '.join(sorted(args))})")
    if name in ("find_file", "search_dir", "search_file"):
        return _search(call, obs, turn, state.current_file)
    if name == "edit":
        res, state.current_file = _edit(call, obs, turn, state)
        if (win := find_window(res.output)) is not None and res.returncode == 0:
            state.shown = win
        return res
    win = find_window(obs)
    if win is None:
        m = _CREATE_EXISTS.fullmatch(obs.rstrip("\n") + "\n") if name == "create" else None
        if m and call.words and m["path"] == call.words[0] and m["level"] == "Warning":
            # 1.x create of a file that is there: it says so, exits 1, writes nothing
            q, msg = shell_quote(m["path"]), shell_quote(m["msg"])
            return Result(f"[ ! -e {q} ] || {{ echo {msg}; false; }}", m["msg"] + "\n", 1)
        if (refused := _refused_move(call, obs, state.current_file)) is not None:
            return refused
        raise ConvertError("sweagent_window", f"turn {turn}: {name} output has no window")
    obs, win = _with_newline(obs, win, state)
    printer = window_printer(win.path, win.first, win.last, win.cursors)
    if name == "insert":
        target = win.path
        cmd = window_insert_command(target, call.line, call.body, obs[: win.start], then=_then(obs, win))
        state.current_file, state.shown = target, win
        return Result(cmd, obs, 0)
    core = printer
    if name == "create" and (m := _CREATE_EXISTS.match(obs)) and m.end() == win.start:
        # 0.x create of a file that is there: it says so, writes nothing and opens the file
        state.current_file, state.shown = win.path, win
        core = f"test -e {shell_quote(m['path'])} && echo {shell_quote(m['msg'])} && {printer}"
        tail = print_command(obs[win.end :])
        return Result(f"{core} && {tail}" if tail else core, obs, 0)
    if name == "create":
        # SWE-agent's create writes a single newline (shown as one empty line)
        core = f"printf '\\n' > {shell_quote(win.path)} && {core}"
    state.current_file, state.shown = win.path, win
    return Result(_around(obs, win, core), obs, 0)
