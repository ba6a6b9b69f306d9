"""Tool call → ONE bash command whose output is the observation (input-formats §5).

Every converter returns an :class:`Action`: a command to run (``run``), text to fold into the
next THOUGHT (``fold``: ``think``), nothing (``remove``: to-do and memory tools, ``C-c``
interrupts) or the submit command (``submit``). Unknown tools raise ``ConvertError("unknown_tool",
<name>)``; they are never passed through.

Observations are re-shaped only where the harness decorated what the command printed: editor
headers (``Here's the result of running `cat -n` on …``), Claude Code's ``→`` line numbers and
``<system-reminder>`` blocks, OpenHands' ``[The command completed with exit code N.]`` trailers.
Where the harness's result text has no shell equivalent (an edit's success message), the command
prints it.

Tool families beyond bash/editor/Claude Code/pi: SWE-agent's windowed tools in either argument
shape (``sweagent_window``); ``read_file``/``write_file``/``patch`` (hermes_agent, kimi_code style)
→ ``cat -n``/``cat``/``sed``, heredoc create, exact replace; ``view``; ``list_dir``/``ls`` → ``ls -1p``
(a listing that is neither Claude's tree nor sorted names: ``convert/unverifiable_listing``);
``search``/``grep`` → ``grep`` (R2E's ``search(search_term)`` prints SWE-agent's search_dir
summary; other output that is not ``path:line:text``: ``convert/unverifiable_search``);
``apply_patch`` with a unified diff → ``git apply`` heredoc (other dialects, failed applies:
``convert/apply_patch_format`` / ``convert/apply_patch_failed``); to-do and memory tools removed.

Policies:
* a call the harness refused before running it (Claude Code's ``<tool_use_error>…``: file not read
  yet, string not found, a bad argument) changed nothing: it is removed, its thought carried to
  the next turn (``convert/refused_call_removed``), never a command that would apply it.
* Kimi Code's ``<system>…</system>`` status before a tool's output is the harness's text: removed,
  its exit code read (``split_system_status``).
* ``undo_edit`` that succeeded: the run is dropped (``convert/undo_edit``): restoring the
  editor's saved copy has no faithful shell equivalent. A failed ``undo_edit`` changed nothing
  and its turn is removed (counted ``convert/undo_edit_noop_removed``).
* ``is_input`` text other than an interrupt (``C-c``, ``C-d``, ``C-z``) is stdin for a running
  process, which one-shot commands cannot express: drop ``convert/interactive_input``.
* Return codes: the Step's, else a known marker, else the edit/view outcome, else None: the
  caller infers one by a measured rule or leaves it unknown (never a default 0).
"""

from __future__ import annotations

import re
import shlex
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from pipeline.convert import claude_search, codex_patch, edits, kimi_tools
from pipeline.convert.filemap import convert_filemap, is_filemap
from pipeline.convert.render import SUBMIT_COMMAND
from pipeline.convert.session_tools import no_effect_text, refuse_unreplayable
from pipeline.convert.sweagent_window import (
    RemovedTurn,
    WindowState,
    convert_window,
    window_call,
    window_name,
    window_refusal,
)
from pipeline.core.episode import ConvertError
from pipeline.parsers.sweagent import HANDOFF_TOOL, REVIEW_TOOL
from pipeline.text.shell import peel_wrappers
from pipeline.text.tails import newline_run_start, rstripped_len, tail_line_start

BASH_TOOLS = frozenset(
    {"bash", "execute_bash", "run", "Bash", "shell", "Shell", "terminal", "run_command"}
    | {"exec_command", "shell_command", "local_shell"}  # Codex CLI's shell tools
)
EDITOR_TOOLS = frozenset({"str_replace_editor", "file_editor", "str_replace_based_edit_tool"})
THINK_TOOLS = frozenset({"think", "Think"})
TODO_TOOLS = frozenset(
    {
        "TodoWrite",
        "TodoRead",
        "todo_write",
        "todo_read",
        "task_tracker",
        "update_plan",
        "todo",
        "todos",
        "write_todos",
        "update_todos",
        "manage_todo_list",
        "SetTodoList",
        "memory",
        "Memory",
        "save_memory",
        "read_memory",
        "write_memory",
        "add_memory",
        "search_memory",
        "remember",
        "recall",
    }
)
# calls that change neither the repository nor the shell's state and print nothing a later turn
# needs from a command: removed, their text (a delegated task) folded into the next thought
# (OpenHands' context condensation request, its hand-over to a sub-agent whose own actions are
# events of the same stream; per harness in its parser's docstring)
NO_EFFECT_TOOLS = frozenset({"request_condensation", "condensation_request", "delegate"})
# other harnesses' names for the same file and search tools (input-formats §1.2, §5; synth hermes)
READ_TOOLS = frozenset({"read_file", "ReadFile", "view_file"})
WRITE_TOOLS = frozenset({"write_file", "WriteFile", "create_file"})
REPLACE_TOOLS = frozenset({"patch", "replace_in_file", "edit_file", "str_replace"})
LIST_TOOLS = frozenset({"list_dir", "list_directory", "list_files", "ls"})
SEARCH_TOOLS = frozenset({"search", "grep", "grep_search", "search_files", "search_file_content"})
PATCH_TOOLS = frozenset({"apply_patch"})
SUBMIT_RE = re.compile(
    r"^(submit|finish|done|complete|task_complete|complete_task|attempt_completion|final_answer|"
    r"submit_answer|finish_task)$",
    re.I,
)
INTERRUPTS = frozenset({"C-c", "C-d", "C-z", "ctrl+c", "^C"})

_EXIT_MARKER = re.compile(
    r"\n*\[(?:The command completed with exit code|Command finished with exit code)\s*(-?\d+)\.?\]\s*$"
)
# other harnesses' exit-code notes: Affine bash tool "[exit code: N]", pi "Command exited with
# code N" (both appended), Claude Code "Exit code N" (prepended); they are not command output
_TAIL_EXIT = re.compile(r"\n*(?:\[exit code: (-?\d+)\]|Command exited with code (-?\d+))\s*$")
_HEAD_EXIT = re.compile(r"^Exit code (-?\d+)\n")
_OH_TRAILERS = re.compile(r"\n*\[(?:Current working directory|Python interpreter): [^\n]*\]\s*$")
_CAT_N_HEADER = re.compile(r"^Here's the result of running `cat -n` on [^\n]*:\n")
_DIR_HEADER = re.compile(r"^Here's the files and directories up to 2 levels deep in [^\n]*:\n")
_REMINDER = re.compile(r"\s*<system-reminder>.*?</system-reminder>\s*", re.S)
_NUMBERED_EMPTY_TAIL = re.compile(r"(^|\n) *\d+\t\n?\Z")
_ARROW_NUMBER = re.compile(r"^( *\d+)\u2192", re.M)
# _ARROW_NUMBER's line starts after a newline (and, by match, at the start): led by a literal, the
# search jumps from newline to newline instead of testing a multiline ^ at every character
# (its empty group: findall then lists the shared empty string, not a copy of each match)
_NL_ARROW_AT_NUMBER = re.compile(r"\n *\d+\u2192()")
_ARROW_AT_START = re.compile(r" *\d+\u2192")
# a line (after the first) that does not start with a line number's arrow: usually there is none
_NL_NOT_AT_NUMBER = re.compile(r"\n(?! *\d+\u2192)")


def _arrows_at_numbers(body: str) -> int:
    """How many lines of ``body`` start with a line number's arrow (the line starts ``_ARROW_NUMBER`` finds).
    When every line does (the usual case) that is its line count: one search for a line that
    does not, without a match object per line."""
    if _NL_NOT_AT_NUMBER.search(body) is None and _ARROW_AT_START.match(body):
        return body.count("\n") + 1
    return len(_NL_ARROW_AT_NUMBER.findall(body)) + bool(_ARROW_AT_START.match(body))


def _tab_number(m: re.Match[str]) -> str:
    """Claude Code's ``  12→`` line number as ``cat -n`` prints it (a function: faster than a
    ``\\1`` template, which re expands in Python for each of a file's lines)."""
    return m.group(1) + "\t"


_FAIL_HINTS = (
    "No replacement was performed",
    "did not appear verbatim",
    "Multiple occurrences",
    "ERROR:",
    "Error:",
    "not found",
    "must appear exactly once",
    "Invalid",
    "does not exist",
    "String to replace not found",
    "Found 0 matches",
)


@dataclass
class Action:
    kind: str  # "run" | "fold" | "remove" | "submit"
    command: str = ""
    output: str = ""
    returncode: int | None = None
    text: str = ""  # fold: the thought text; submit: a final message to fold into the thought


@dataclass
class ToolState:
    """What a converter must remember across calls of one run."""

    counters: Counter[str] = field(default_factory=Counter)
    window: WindowState = field(init=False)  # SWE-agent's open file and displayed lines

    def __post_init__(self) -> None:
        self.window = WindowState(counters=self.counters)


def _s(args: dict[str, Any], *names: str, default: str | None = None) -> str | None:
    for n in names:
        v = args.get(n)
        if v is not None:
            return v if isinstance(v, str) else str(v)
    return default


def _truthy(x: Any) -> bool:
    return str(x).strip().lower() in ("true", "1", "yes")


# "Error:" ends a word of the message ("Error: File not found", "ERROR:\n…"), never a path of
# Rust or C++ (``Error::new``, ``std::Error::``): a hint ending in ":" is one only when no ":" follows
_FAIL_HINT = re.compile("|".join(re.escape(h) + ("(?!:)" if h.endswith(":") else "") for h in _FAIL_HINTS))
# the whitespace str.lstrip() strips (re's \s is str.isspace, as lstrip's is)
_LEADING_SPACE = re.compile(r"\s*")


def _failed(obs: str, rc: int | None) -> bool:
    if rc is not None:
        return rc != 0
    # a hint on the output's first line (after the leading whitespace; at most 300 characters of
    # it): a harness reports a failure as its whole output, error first, while a file a read tool
    # prints may hold a hint anywhere (Rust's ``Err(Error::new(…))``, a comment's "not found").
    # Searched in place, without copying the text (a view's lines start with spaces).
    m = _LEADING_SPACE.match(obs)
    start = m.end() if m else 0
    end = obs.find("\n", start, start + 300)
    return _FAIL_HINT.search(obs, start, start + 300 if end < 0 else end) is not None


# ---------------------------------------------------------------- bash


def _last_line_start(obs: str, end: int) -> int:
    """Where a ``\\n*<one-line note>\\s*$`` match can start at the earliest: the newlines before
    the last non-blank line (the note ends that line, and a match takes every newline before it).
    ``end`` is the length of ``obs`` without its trailing whitespace."""
    nl = tail_line_start(obs, 1, end)
    return newline_run_start(obs, nl + 1) if nl else 0


def _exit_marker(obs: str, end: int) -> re.Match[str] | None:
    """``_EXIT_MARKER.search(obs)``: the marker holds one ``[`` and ends the text, so it starts at
    the last ``[`` (its digits may follow blank lines, so the last line alone is not enough)."""
    bracket = obs.rfind("[", 0, end)
    return _EXIT_MARKER.search(obs, newline_run_start(obs, bracket)) if bracket >= 0 else None


def split_exit_marker(obs: str) -> tuple[str, int | None]:
    """Remove harness exit-code notes and OpenHands' cwd trailers; return the output and the code."""
    rc = None
    m = _HEAD_EXIT.match(obs)
    if m:
        rc, obs = int(m.group(1)), obs[m.end() :]
    while True:
        # every note is anchored at the end and ends in "]" or a digit: only the tail is searched
        end = rstripped_len(obs)
        last = obs[end - 1 : end]
        if last != "]" and not last.isdigit():
            return obs, rc
        m = _TAIL_EXIT.search(obs, _last_line_start(obs, end))
        if m:
            rc = int(m.group(1) or m.group(2))
            obs = obs[: m.start()] + (
                "\n" if obs[: m.start()] and not obs[: m.start()].endswith("\n") else ""
            )
            continue
        m = _exit_marker(obs, end) if last == "]" else None
        if m:
            rc = int(m.group(1))
            obs = obs[: m.start()] + (
                "\n" if obs[: m.start()] and not obs[: m.start()].endswith("\n") else ""
            )
            continue
        m = _OH_TRAILERS.search(obs, _last_line_start(obs, end)) if last == "]" else None
        if m:
            obs = obs[: m.start()] + (
                "\n" if obs[: m.start()] and not obs[: m.start()].endswith("\n") else ""
            )
            continue
        return obs, rc


def codex_shell_command(args: dict[str, Any]) -> str | None:
    """Codex's shell call as one command: ``cmd`` (``exec_command``) or ``command`` (a string,
    or ``shell``'s argv, ``["bash", "-lc", SCRIPT]`` its script), run in ``cd WORKDIR &&`` when
    the call's working directory is not the checkout root. None: not Codex's argument shape."""
    cmd = args.get("cmd", args.get("command"))
    if isinstance(cmd, list):
        words = [str(w) for w in cmd]
        text = words[2] if len(words) == 3 and words[1] in ("-lc", "-c") else shlex.join(words)
    elif isinstance(cmd, str):
        text = cmd
    else:
        return None
    workdir = args.get("workdir")
    if isinstance(workdir, str) and workdir.rstrip("/") not in ("", "/testbed"):
        return f"cd {edits.shell_quote(workdir)} && {text}"
    return text


def convert_bash(args: dict[str, Any], obs: str, rc: int | None, turn: int, state: ToolState) -> Action:
    cmd = codex_shell_command(args) if ("workdir" in args or "cmd" in args) else None
    if cmd is None:
        cmd = _s(args, "command", "cmd", "script", default="") or ""
    is_input = str(args.get("is_input", "false")).lower() in ("true", "1")
    if is_input or cmd.strip() in INTERRUPTS:
        if cmd.strip() in INTERRUPTS:
            state.counters["convert/interrupt_removed"] += 1
            return Action("remove", text="convert/interrupt_removed")
        raise ConvertError("interactive_input", f"turn {turn}")
    out, marked = split_exit_marker(obs)
    return Action("run", peel_wrappers(cmd), out, rc if rc is not None else marked)


# ---------------------------------------------------------------- viewing


def _cat_n_body(obs: str, to_end: bool = True) -> str:
    """The editor's view output as ``cat -n`` prints it (header gone, no numbered empty tail)."""
    body = _CAT_N_HEADER.sub("", obs, count=1)
    if to_end:
        # the editor numbers the empty string after the file's final newline; cat -n does not.
        # That line is the last one (bar a final newline): search from the newline before it.
        m = _NUMBERED_EMPTY_TAIL.search(body, max(body.rfind("\n", 0, len(body) - 1), 0))
        if m:
            body = body[: m.start()] + m.group(1)
    return body


def _to_end(view_range: Any) -> bool:
    return not (isinstance(view_range, (list, tuple)) and len(view_range) == 2 and int(view_range[1]) != -1)


def view_command(path: str, view_range: Any = None) -> str:
    q = edits.shell_quote(path)
    if view_range and isinstance(view_range, (list, tuple)) and len(view_range) == 2:
        a, b = int(view_range[0]), int(view_range[1])
        return f"cat -n {q} | sed -n '{a},{'$' if b == -1 else b}p'"
    return f"cat -n {q}"


def _missing(path: str, command: str, obs: str = "No such file", turn: int = 0) -> tuple[str, int]:
    """What ``cat`` prints for a missing file (a ``| sed`` pipeline still exits 0), when the
    recorded error says the file is missing; any other read failure has no ``cat`` equivalent
    and is a counted drop (``convert/unverifiable_view``)."""
    if not _NO_PATH.search(obs):
        raise ConvertError("unverifiable_view", f"turn {turn}: {obs.strip()[:80]}")
    return f"cat: {path}: No such file or directory\n", 0 if "|" in command else 1


# a failed view's error that says the path is not there (cat prints its own message for that)
_NO_PATH = re.compile(r"does not exist|No such file|not found|[Nn]o file", re.I)
# str_replace_editor clips a long file's text at its limit and appends this note (OpenHands,
# SWE-agent 1.x); the numbering is applied after the clip
_CLIPPED = re.compile(r"<response clipped><NOTE>[^\n]*</NOTE>\n?\Z")


def _clipped_view(path: str, body: str, turn: int) -> Action:
    """A whole-file view the editor clipped: ``head -c N FILE | cat -n`` prints the same numbered
    prefix (N: the bytes of the file's text that were shown). The clip note is harness text, like
    the view's header. A clip inside a ``view_range`` is a counted drop."""
    m = _CLIPPED.search(body)
    if m is None:  # more text after the clip (SWE-agent's abbreviated view): not a prefix of the file
        raise ConvertError("clipped_view", f"turn {turn}: {path}")
    shown = body[: m.start()]
    lines = shown.split("\n")
    if not all(re.match(r" *\d+\t", ln) for ln in lines if ln):
        raise ConvertError("clipped_view", f"turn {turn}: {path}")
    raw = "\n".join(ln.split("\t", 1)[1] if ln else "" for ln in lines)
    cmd = f"head -c {len(raw.encode('utf-8', 'surrogateescape'))} {edits.shell_quote(path)} | cat -n"
    return Action("run", cmd, shown, 0)


# the editor's note on the hidden entries it left out (with "in this directory" since 2025-01)
def _clipped_range(path: str, view_range: Any, body: str, turn: int) -> Action:
    """A range view the editor clipped: it cut the range's text at its limit, then numbered
    the lines from the range's first; that is the same-length byte prefix of the range's
    numbered view (``cat -n FILE | sed -n 'a,bp' | head -c N``). The clip note is harness text."""
    m = _CLIPPED.search(body)
    if m is None:
        raise ConvertError("clipped_view", f"turn {turn}: {path} {view_range}")
    shown = body[: m.start()]
    numbers = [int(ln.split("\t", 1)[0]) for ln in shown.split("\n") if ln]
    first = int(view_range[0])
    if not all(re.match(r" *\d+\t", ln) for ln in shown.split("\n") if ln) or numbers != list(
        range(first, first + len(numbers))
    ):
        raise ConvertError("clipped_view", f"turn {turn}: {path} {view_range}")
    size = len(shown.encode("utf-8", "surrogateescape"))
    return Action("run", f"{view_command(path, view_range)} | head -c {size}", shown, 0)


_HIDDEN_NOTE = re.compile(
    r"\n+\d+ hidden files/directories (?:in this directory )?are excluded\. "
    r"You can use 'ls -la [^\n]*' to see them\.\s*\Z"
)
# the orders a listing can be printed in by a command that reads the file system: byte order
# (``LC_ALL=C sort``), and a locale's order (``sort`` under en_US.UTF-8: letters and digits
# only, case folded), reproduced by a python3 filter where no two entries tie under it
_LOCALE_SORT = (
    "python3 -c 'import re, sys; print(*sorted(sys.stdin.read().splitlines(), "
    'key=lambda p: re.sub(r"[^0-9a-z]", "", p.lower())), sep="\\n")\''
)


_SORTED_CLIP_LINES = 20


def _locale_key(line: str) -> str:
    return re.sub(r"[^0-9a-z]", "", line.lower())


def _sorter(lines: list[str], key_of: Any = lambda x: x) -> str | None:
    """The ``| sort`` stage that prints ``lines`` in their recorded order, or None."""
    keys = [key_of(x) for x in lines]
    if keys == sorted(keys, key=lambda k: k.encode()):
        return "LC_ALL=C sort"
    loc = [_locale_key(k) for k in keys]
    if all(k.isascii() for k in keys) and loc == sorted(loc) and len(set(loc)) == len(loc):
        return _LOCALE_SORT
    return None


def _hidden_filter(root: str) -> str:
    """find's test for openhands-aci's hidden entries: a name starting with "." at depth 1 or 2."""
    hidden = edits.shell_quote(f"{root}/.*") + " -o -path " + edits.shell_quote(f"{root}/*/.*")
    return f"-not \\( -path {hidden} \\)"


def _marked_listing(path: str, lines: list[str]) -> Action | None:
    """openhands-aci's directory view since 2025-01: ``find -L P -maxdepth 2`` without hidden
    entries, sorted, directories marked with ``/`` (``P/`` first). The command below prints the
    same lines when their recorded order is one ``_sorter`` reproduces, else the listing cannot be
    replayed (``convert/unverifiable_listing``); None for other listings."""
    root = path.rstrip("/") or "/"
    if lines[0] != root + "/":
        return None
    sort = _sorter(lines, lambda x: x.rstrip("/"))
    if sort is None:
        raise ConvertError("unverifiable_listing", f"{path}: in no order a sort reproduces")
    cmd = (
        f"find -L {edits.shell_quote(root)} -maxdepth 2 {_hidden_filter(root)} | {sort} | "
        'while IFS= read -r p; do if [ -d "$p" ]; then echo "$p/"; else echo "$p"; fi; done'
    )
    return Action("run", cmd, "\n".join(lines) + "\n", 0)


def convert_dir_view(path: str, obs: str, turn: int) -> Action:
    """The editor's directory view: the ``find`` command that prints its lines, in their order.

    Shapes (openhands-aci's history; SWE-agent's editor prints the first): ``find P -maxdepth 2
    -not -path '*/.*'`` in the file system's own order; the same sorted; ``find -L`` sorted with
    directories marked (``_marked_listing``). A sorted listing is ``find … | sort`` in its order
    (``_sorter``). A listing that is only its root (the checkout was a symlink ``find -P`` does
    not follow) is ``find P -maxdepth 0``. A listing the editor clipped at its limit is the
    sorted command's output cut at the same byte (``| head -c N``). The clip note, the header and
    the hidden-entries note are the editor's text, not the command's.

    A listing in the file system's own order is the editor's own ``find``, which prints that order
    on the checkout it was recorded on. Dropped (``convert/unverifiable_listing``): a listing with
    an entry outside its root (the checkout's own path, rewritten to the new root)."""
    body = _DIR_HEADER.sub("", obs, count=1)
    clip = _CLIPPED.search(body)
    shown = body[: clip.start()] if clip else _HIDDEN_NOTE.sub("", body).rstrip("\n")
    lines = shown.split("\n")
    root = path.rstrip("/") or "/"
    q = edits.shell_quote(root)
    inside = root.rstrip("/") + "/"
    if not all(ln == root or ln.startswith(inside) for ln in (lines[:-1] if clip else lines)):
        raise ConvertError("unverifiable_listing", f"turn {turn}: {path}: an entry outside the listed folder")
    if not clip:
        marked = _marked_listing(path, lines)
        if marked is not None:
            return marked
        if lines == [root]:
            return Action("run", f"find {q} -maxdepth 0", root + "\n", 0)
    elif lines[0] == root + "/":  # marked after the clip: the note became a listed entry
        raise ConvertError("unverifiable_listing", f"turn {turn}: clipped marked listing of {path}")
    # a clipped listing shows a prefix: sorted, it is the sorted listing's prefix only if the
    # harness sorted; many sorted lines say it did (find's own order, a disk's, never is)
    sort = _sorter(lines[:-1] if clip else lines) if not clip or len(lines) > _SORTED_CLIP_LINES else None
    # in no sorted order: the order the file system gave the editor's own find, which that find
    # prints again on the run's checkout (the image the run was recorded in)
    find = f"find {q} -maxdepth 2 -not -path '*/.*'"
    cmd = f"{find} | {sort}" if sort is not None else find
    if clip is None:
        return Action("run", cmd, shown + "\n", 0)
    return Action("run", f"{cmd} | head -c {len(shown.encode('utf-8', 'surrogateescape'))}", shown, 0)


def convert_view(path: str, view_range: Any, obs: str, rc: int | None, turn: int = 0) -> Action:
    """An editor ``view``: ``find`` for a directory, ``cat -n`` (``| sed`` for a range) for a file.

    A failed view is never given an output it would not print: a missing path gets ``cat``'s own
    message; a ``view_range`` the editor refused becomes a script applying the editor's checks,
    which prints the recorded error (``edits.view_range_command``); any other failure is a
    counted drop (``convert/unverifiable_view``)."""
    if _DIR_HEADER.match(obs):
        return convert_dir_view(path, obs, turn)
    if "<response clipped><NOTE>" in obs:
        if not view_range or (_to_end(view_range) and int(view_range[0]) == 1):
            return _clipped_view(path, _CAT_N_HEADER.sub("", obs, count=1), turn)
        return _clipped_range(path, view_range, _CAT_N_HEADER.sub("", obs, count=1), turn)
    body = _cat_n_body(obs, _to_end(view_range))
    if _CAT_N_HEADER.match(obs) or rc == 0 or not _failed(obs, rc):
        return Action("run", view_command(path, view_range), body, 0)
    cmd = view_command(path, view_range)
    if "view_range" in obs and isinstance(view_range, (list, tuple)) and len(view_range) == 2:
        error = obs.strip("\n")
        return Action(
            "run", edits.view_range_command(path, int(view_range[0]), int(view_range[1]), error), error, 1
        )
    out, code = _missing(path, cmd, obs, turn)
    return Action("run", cmd, out, code)


# ---------------------------------------------------------------- editing


def _edit_action(path: str, pairs: list[tuple[str, str, bool]], obs: str, rc: int | None) -> Action:
    if _failed(obs, rc):
        cmd = edits.replace_command(path, pairs, edits.default_ok(path), fail_message=obs)
        return Action("run", cmd, obs, 1)
    return Action("run", edits.replace_command(path, pairs, obs), obs, 0)


# openhands-aci's refusal to create over an existing file (nothing is written)
_EXISTS = re.compile(r"File already exists at: [^\n]*\. Cannot overwrite files using command `create`")


def _create_action(path: str, content: str, obs: str, rc: int | None, turn: int) -> Action:
    # the refusal is the editor's whole output, whether or not the harness recorded a status
    # (SWE-agent records none; its words are not among the failure hints)
    refused = _EXISTS.match(obs.lstrip()) is not None and rc in (None, 1)
    if (refused or _failed(obs, rc)) and _EXISTS.search(obs):
        ok = f"File created successfully at: {path}"
        return Action("run", edits.create_unless_exists_command(path, content, obs, ok), obs, 1)
    if _failed(obs, rc):
        # e.g. "File already exists … cannot overwrite": the file was not written
        raise ConvertError("failed_create", f"turn {turn}: {obs.strip()[:80]}")
    return Action("run", edits.create_command(path, content, obs), obs, 0)


def convert_editor(args: dict[str, Any], obs: str, rc: int | None, turn: int, state: ToolState) -> Action:
    command = _s(args, "command", default="")
    path = _s(args, "path", default="") or ""
    if command == "view":
        return convert_view(path, args.get("view_range"), obs, rc, turn)
    if command == "create":
        return _create_action(path, _s(args, "file_text", "content", default="") or "", obs, rc, turn)
    if command == "str_replace":
        old = _s(args, "old_str", default="") or ""
        new = _s(args, "new_str", default="") or ""
        return _edit_action(path, [(old, new, False)], obs, rc)
    if command == "insert":
        line = int(args.get("insert_line", 0) or 0)
        new = _s(args, "new_str", default="") or ""
        if _failed(obs, rc):
            return Action("run", edits.insert_command(path, line, new, edits.default_ok(path), obs), obs, 1)
        return Action("run", edits.insert_command(path, line, new, obs), obs, 0)
    if command == "undo_edit":
        if _failed(obs, rc):
            state.counters["convert/undo_edit_noop_removed"] += 1
            return Action("remove", text="convert/undo_edit_noop_removed")
        raise ConvertError("undo_edit", f"turn {turn}: {path}")
    raise ConvertError("unknown_tool", f"{args.get('_tool', 'str_replace_editor')}.{command}")


# ---------------------------------------------------------------- Claude Code


def _claude_read_body(obs: str, to_end: bool = False) -> str:
    """Claude Code's numbered read as ``cat -n`` prints it. Read numbers the empty string after a
    file's final newline as one more line; ``cat -n`` does not: on a read that reached the end of
    the file (``to_end``) a numbered empty last line is that artifact and goes."""
    body = (_REMINDER.sub("\n", obs) if "<system-reminder>" in obs else obs).rstrip("\n")
    arrows = body.count("\u2192")
    if arrows:
        # when every arrow is a line number's (the usual case), replacing them all is the same
        # edit as the per-line substitution, without a Python call per line
        at_numbers = _arrows_at_numbers(body)
        body = body.replace("\u2192", "\t") if at_numbers == arrows else _ARROW_NUMBER.sub(_tab_number, body)
    if to_end and (m := _NUMBERED_EMPTY_TAIL.search(body, max(body.rfind("\n", 0, len(body) - 1), 0))):
        body = body[: m.start()]
    return body + "\n" if body else ""


def _range(offset: Any, limit: Any) -> list[int] | None:
    if offset is None and limit is None:
        return None
    a = int(offset or 1)
    return [a, a + int(limit) - 1] if limit is not None else [a, -1]


def _grep(args: dict[str, Any], obs: str) -> Action:
    pattern = _s(args, "pattern", default="") or ""
    where = _s(args, "path", default="/testbed") or "/testbed"
    mode = _s(args, "output_mode", default="files_with_matches") or "files_with_matches"
    flags = claude_search.grep_flags(mode, pattern, bool(args.get("-i")))
    inc = f" --include={edits.shell_quote(g)}" if (g := _s(args, "glob")) else ""
    lines = [
        ln
        for ln in obs.splitlines()
        if ln.strip() and not re.match(r"^(Found \d+ (files?|matches)|No (files|matches) found)", ln)
    ]
    where = claude_search.search_root(where, lines)
    target = f" {edits.shell_quote(where)}" if where else ""
    cmd = f"grep {flags}{inc} -- {edits.shell_quote(pattern)}{target}"
    cmd, lines = claude_search.sorted_result(cmd, lines, mode)
    out = "".join(ln + "\n" for ln in lines)
    return Action("run", cmd, out, 0 if out else 1)


def _glob(args: dict[str, Any], obs: str) -> Action:
    pattern = _s(args, "pattern", default="*") or "*"
    where = _s(args, "path", default="/testbed") or "/testbed"
    cmd = claude_search.glob_command(pattern, where)
    base = where.rstrip("/") + "/"
    paths = [
        ln.removeprefix(base) for ln in obs.splitlines() if ln.strip() and not ln.startswith("No files found")
    ]
    out = "".join(p + "\n" for p in sorted(paths)) or "\n"
    return Action("run", cmd, out, 0)


def _ls(args: dict[str, Any], obs: str) -> Action:
    where = _s(args, "path", default="/testbed") or "/testbed"
    names = sorted(m.group(1) for m in re.finditer(r"^  - (.+)$", obs, re.M))
    return Action("run", f"ls -1p {edits.shell_quote(where)}", "".join(n + "\n" for n in names), 0)


def convert_claude(name: str, args: dict[str, Any], obs: str, rc: int | None, turn: int) -> Action:
    path = _s(args, "file_path", "path", default="") or ""
    if name == "Read":
        rng = _range(args.get("offset"), args.get("limit"))
        cmd = view_command(path, rng)
        if _failed(obs, rc) and "\u2192" not in obs:
            out, code = _missing(path, cmd, obs, turn)
            return Action("run", cmd, out, code)
        # the read reached the file's end: no limit, or fewer lines shown than it allowed
        shown = _arrows_at_numbers(obs.split("<system-reminder>", 1)[0].rstrip("\n"))
        to_end = rng is None or rng[1] == -1 or shown < rng[1] - rng[0] + 1
        return Action("run", cmd, _claude_read_body(obs, to_end), 0)
    if name == "Write":
        return _create_action(path, _s(args, "content", default="") or "", obs, rc, turn)
    if name == "Edit":
        pair = (
            _s(args, "old_string", default="") or "",
            _s(args, "new_string", default="") or "",
            bool(args.get("replace_all", False)),
        )
        return _edit_action(path, [pair], obs, rc)
    if name == "MultiEdit":
        pairs = [
            (str(e.get("old_string", "")), str(e.get("new_string", "")), bool(e.get("replace_all", False)))
            for e in args.get("edits", []) or []
        ]
        if not pairs:
            raise ConvertError("bad_tool_args", f"turn {turn}: MultiEdit without edits")
        return _edit_action(path, pairs, obs, rc)
    if name == "Grep":
        return _grep(args, obs)
    if name == "Glob":
        return _glob(args, obs)
    return _ls(args, obs)


# ---------------------------------------------------------------- other harnesses

_CAT_N_LINE = re.compile(r"^ *\d+\t", re.M)
_GREP_LINE = re.compile(r"^[^\n:]+:\d+:")
_NO_MATCH = re.compile(r"^\s*(No (matches|files|results) found|Found 0 matches)", re.I)


def _read_file(args: dict[str, Any], obs: str, rc: int | None, turn: int = 0) -> Action:
    """``read_file(path[, offset, limit])``: numbered (``cat -n``) or plain (``cat``/``sed``) text."""
    path = _s(args, "path", "file_path", "filename", default="") or ""
    # Kimi's ReadFile names its range line_offset/n_lines
    first = next((args[k] for k in ("offset", "start_line", "line_offset") if args.get(k) is not None), None)
    rng = _range(first, args.get("limit", args.get("n_lines")))
    if _failed(obs, rc) and not _CAT_N_LINE.match(obs):
        cmd = view_command(path, rng)
        out, code = _missing(path, cmd, obs, turn)
        return Action("run", cmd, out, code)
    if _CAT_N_LINE.match(obs) or _CAT_N_HEADER.match(obs):
        return Action("run", view_command(path, rng), _cat_n_body(obs, rng is None or rng[1] == -1), 0)
    if rng is None:
        return Action("run", f"cat {edits.shell_quote(path)}", obs, 0)
    end = "$" if rng[1] == -1 else rng[1]
    return Action("run", f"sed -n '{rng[0]},{end}p' {edits.shell_quote(path)}", obs, 0)


def _list_dir(name: str, args: dict[str, Any], obs: str, turn: int) -> Action:
    """Claude Code's tree listing, or a plain sorted one-name-a-line listing (``ls -1p``)."""
    if re.search(r"^  - ", obs, re.M):
        return _ls(args, obs)
    names = [ln for ln in obs.splitlines() if ln.strip()]
    if names and names == sorted(names) and all(" " not in n.strip() or "/" in n for n in names):
        where = _s(args, "path", "dir_path", "directory", default="/testbed") or "/testbed"
        return Action("run", f"ls -1p {edits.shell_quote(where)}", "".join(n + "\n" for n in names), 0)
    raise ConvertError("unverifiable_listing", f"turn {turn}: {name}")


def _search_tool(
    name: str, args: dict[str, Any], obs: str, rc: int | None, turn: int, state: ToolState
) -> Action:
    """R2E/SWE-agent ``search(search_term, path)`` or a grep-style ``path:line:text`` search."""
    if "search_term" in args:
        words = [str(args["search_term"])] + ([str(args["path"])] if args.get("path") else [])
        res = convert_window("search_dir", {"args": shlex.join(words), "body": ""}, obs, turn, state.window)
        return Action("run", res.command, res.output, res.returncode)
    pattern = _s(args, "pattern", "query", "regex", default=None)
    if pattern is None:
        raise ConvertError("bad_tool_args", f"turn {turn}: {name} without a pattern")
    where = _s(args, "path", "dir_path", "directory", default="/testbed") or "/testbed"
    cmd = f"grep -rnE -- {edits.shell_quote(pattern)} {edits.shell_quote(where)}"
    if _NO_MATCH.match(obs) or not obs.strip():
        return Action("run", cmd, "", 1)
    lines = [ln for ln in obs.splitlines() if ln.strip()]
    if all(_GREP_LINE.match(ln) for ln in lines):
        return Action("run", cmd, "".join(ln + "\n" for ln in lines), 0)
    raise ConvertError("unverifiable_search", f"turn {turn}: {name}")


def _apply_patch(args: dict[str, Any], obs: str, rc: int | None, turn: int) -> Action:
    """A unified diff applied by ``git apply`` from a quoted heredoc; the tool's message printed
    after it. Other patch dialects and failed applications are counted drops."""
    patch = _s(args, "patch", "input", "diff", default="") or ""
    if patch.lstrip().startswith(codex_patch.BEGIN):
        out, _ = split_exit_marker(obs)
        if (rc is not None and rc != 0) or (not codex_patch.is_success(out) and _failed(out, None)):
            raise ConvertError("apply_patch_failed", f"turn {turn}: {obs.strip()[:80]}")
        if not codex_patch.is_success(out):  # a report that is not Codex's: not what it ran
            raise ConvertError("apply_patch_format", f"turn {turn}: report {out.strip()[:60]!r}")
        workdir = _s(args, "workdir", default="/testbed") or "/testbed"
        return Action("run", codex_patch.codex_patch_command(patch, workdir, out, turn), out, 0)
    if not re.search(r"^(diff --git |--- )", patch, re.M) or "\n@@ " not in patch:
        raise ConvertError("apply_patch_format", f"turn {turn}")
    if _failed(obs, rc):
        raise ConvertError("apply_patch_failed", f"turn {turn}: {obs.strip()[:80]}")
    body = patch.removesuffix("\n")
    delim = edits.heredoc_delimiter(body)
    printer = edits.print_command(obs)
    return Action(
        "run", f"git apply <<'{delim}'{' && ' + printer if printer else ''}\n{body}\n{delim}", obs, 0
    )


# ---------------------------------------------------------------- SWE-agent review-on-submit

_REVIEW_DIFF = re.compile(r"<diff>\n")


def _review(obs: str, state: ToolState) -> Action:
    """SWE-agent's review stage of ``submit`` (``review_on_submit_m``): it ran ``git add -A && git
    diff --cached`` and printed its review message with that diff between ``<diff>`` and
    ``</diff>``; the run went on. The command does the same: the message's text around the diff is
    printed, the diff comes from git. A message without a diff is printed as it is. The final
    newline ``print`` wrote (which SWE-agent 1.x strips) is printed too."""
    if not obs.endswith("\n"):
        obs += "\n"
        state.counters["convert/sweagent_newline_restored"] += 1
    m = _REVIEW_DIFF.search(obs)
    end = obs.rfind("\n</diff>")
    if m is None or end < m.end():
        return Action("run", edits.print_command(obs) or "true", obs, 0)
    head, tail = obs[: m.end()], obs[end:]  # the diff between them ends with git's own newline
    parts = [edits.print_command(head), "git add -A", "git diff --cached", edits.print_command(tail)]
    return Action("run", " && ".join(p for p in parts if p), obs, 0)


# ---------------------------------------------------------------- dispatch

CLAUDE_TOOLS = frozenset({"Read", "Write", "Edit", "MultiEdit", "Grep", "Glob", "LS"})
PI_TOOLS = frozenset({"read", "write", "edit"})

# The arguments each file tool cannot do without, as (alternative names) per role. A call lacking
# one is not a call these converters understand: ``convert/bad_tool_args``, never an edit or a
# write with an empty path or text standing in for a value the harness spelled differently.
_PATH = ("path", "file_path", "filename")
_CONTENT = ("content", "file_text", "text")
_OLD = ("old_string", "old_str", "oldText", "old_text")
_NEW = ("new_string", "new_str", "newText", "new_text")
_EDITOR_NEEDS: dict[str, tuple[tuple[str, ...], ...]] = {
    "view": (("path",),),
    "create": (("path",), ("file_text", "content")),
    "str_replace": (("path",), ("old_str",)),
    "insert": (("path",), ("insert_line",), ("new_str",)),
    "undo_edit": (("path",),),
}
_NEEDS: dict[str, tuple[tuple[str, ...], ...]] = {
    "Read": (_PATH,),
    "Write": (_PATH, ("content",)),
    "Edit": (_PATH, ("old_string",), ("new_string",)),
    "MultiEdit": (_PATH, ("edits",)),
    "read": (_PATH,),
    "write": (_PATH, _CONTENT),
    "edit": (_PATH, _OLD, _NEW),
    **{n: (_PATH,) for n in READ_TOOLS},
    **{n: (_PATH, _CONTENT) for n in WRITE_TOOLS},
    **{n: (_PATH, _NEW) for n in REPLACE_TOOLS},
}


# the editor's result for a call missing an argument it needs: its refusal or its crash
_EDITOR_FAILED = re.compile(
    r"\A\s*(?:ERROR:|-{20,}\n\w*Error +Traceback|Traceback \(most recent call last\))|Parameter `"
)
# Claude Code's refusal of a call it did not run
_REFUSED = re.compile(r"\s*<tool_use_error>")
# Kimi Code's status part before a tool's output: the harness's words, not the command's
_SYSTEM_STATUS = re.compile(r"<system>(.*?)</system>\n?", re.S)
_STATUS_EXIT = re.compile(r"exit(?:ed with)? code:? (-?\d+)", re.I)


def split_system_status(obs: str) -> tuple[str, int | None]:
    """Kimi's ``<system>…</system>`` status removed from the start of a tool result, and the
    return code it states (``Command executed successfully.``: 0; ``… exit code: N``: N). An
    ``ERROR`` status without a code stays, unwrapped, as the failure the converter reads (a read
    of a missing file becomes ``cat``'s own message, ``_missing``)."""
    m = _SYSTEM_STATUS.match(obs)
    if m is None:
        return obs, None
    status, rest = m.group(1), obs[m.end() :]
    code = _STATUS_EXIT.search(status)
    if code:
        return rest, int(code.group(1))
    if status.startswith("ERROR"):
        return status + ("\n" + rest if rest else ""), None
    return rest, 0 if status.startswith("Command executed successfully") else None


def _require(tool: str, args: dict[str, Any], needs: tuple[tuple[str, ...], ...], turn: int) -> None:
    for names in needs:
        if all(args.get(n) is None for n in names):
            raise ConvertError(
                "bad_tool_args", f"turn {turn}: {tool}({', '.join(sorted(args))}) without {names[0]}"
            )


KIMI_OWN = frozenset({"ReadFile", "StrReplaceFile", "WriteFile"})


def _kimi_call(name: str, args: dict[str, Any], obs: str, rc: int | None, turn: int) -> Action | None:
    """Kimi CLI's file tools in Kimi's argument shapes (``pipeline.convert.kimi_tools``); None
    for the same names in another harness's shape (read by the shared converters)."""
    path = _s(args, "path", default="") or ""
    if name == "WriteFile" and args.get("mode") == "append":
        raise ConvertError("bad_tool_args", f"turn {turn}: WriteFile in append mode")
    if name == "StrReplaceFile" and "edit" in args:
        pairs = kimi_tools.replace_pairs(args, turn)
        if _failed(obs, rc):
            if "No replacements were made" not in obs:
                raise ConvertError("unverifiable_edit", f"turn {turn}: {obs.strip()[:80]}")
            return Action("run", kimi_tools.kimi_replace_command(path, pairs, obs), obs, 1)
        if obs.strip():
            raise ConvertError("unverifiable_edit", f"turn {turn}: an edit's output {obs.strip()[:60]!r}")
        return Action("run", kimi_tools.kimi_replace_command(path, pairs, None), "", 0)
    if name == "ReadFile" and ("line_offset" in args or "n_lines" in args or _CAT_N_LINE.match(obs)):
        if _failed(obs, rc) and not _CAT_N_LINE.match(obs):
            return None  # a failed read: the shared reader gives cat's own message
        first = args.get("line_offset")
        if isinstance(first, int) and first < 0:
            raise ConvertError("bad_tool_args", f"turn {turn}: ReadFile from the end (line_offset {first})")
        return Action("run", view_command(path, _range(first, args.get("n_lines"))), obs, 0)
    return None


def convert_call(
    name: str, args: dict[str, Any], obs: str, rc: int | None, turn: int, state: ToolState
) -> Action:
    """One structured tool call (+ its observation) → an :class:`Action`."""
    if window_name(name) and (why := window_refusal(name, obs)):
        state.counters[why] += 1
        return Action("remove", text=why)
    if _REFUSED.match(obs):
        # Claude Code refused the call before running it (not read yet, string not found, a bad
        # argument): it changed nothing, so no command stands for it; its thought is carried
        state.counters["convert/refused_call_removed"] += 1
        return Action("remove", text="convert/refused_call_removed")
    if obs.startswith("<system>"):
        obs, status_rc = split_system_status(obs)
        rc = rc if rc is not None else status_rc
    if name in KIMI_OWN and (kimi := _kimi_call(name, args, obs, rc, turn)) is not None:
        return kimi
    if window_call(name, args, turn) is not None:
        # SWE-agent's windowed tools, as text ({"args", "body"}) or 1.x structured arguments
        try:
            res = convert_window(name, args, obs, turn, state.window)
        except RemovedTurn:  # counted where it was raised
            return Action("remove", text="convert/sweagent_turn_removed")
        return Action("run", res.command, res.output, res.returncode)
    if name in BASH_TOOLS:
        refuse_unreplayable(name, args, obs, turn)
        return convert_bash(args, obs, rc, turn, state)
    if name == REVIEW_TOOL:
        return _review(obs, state)
    if name == HANDOFF_TOOL:
        # a multi-agent handoff changes no file and prints the agents' reports, which no command
        # prints: the turn goes, its thought is carried to the next one
        state.counters["convert/sweagent_handoff_removed"] += 1
        return Action("remove", text="convert/sweagent_handoff_removed")
    if name in THINK_TOOLS:
        return Action("fold", text=_s(args, "thought", "content", "text", default="") or "")
    if name in TODO_TOOLS:
        return Action("remove")
    folded = no_effect_text(name, args, turn)
    if folded is not None:
        state.counters["convert/no_effect_folded"] += 1
        return Action("fold", text=folded)
    if name in NO_EFFECT_TOOLS:
        state.counters["convert/no_effect_removed"] += 1
        inputs = args.get("inputs")
        task = _s(inputs, "task", default="") if isinstance(inputs, dict) else ""
        return Action("fold", text=task or "") if task else Action("remove", text="convert/no_effect_removed")
    if SUBMIT_RE.match(name) and set(args) <= {"args", "body"} and str(args.get("args") or "").strip():
        # a submit with an argument (a CTF flag) is not the patch submit, and has no shell command
        raise ConvertError("unknown_tool", f"{name} <argument>")
    if SUBMIT_RE.match(name):
        return Action("submit", text=_s(args, "message", "result", "summary", default="") or "", output=obs)
    if name in EDITOR_TOOLS:
        try:
            _require(
                f"{name}.{args.get('command')}", args, _EDITOR_NEEDS.get(str(args.get("command")), ()), turn
            )
        except ConvertError:
            if not _EDITOR_FAILED.search(obs):
                raise
            # the editor cannot run a command without its argument: it refused or crashed
            # (openhands-aci's traceback) and changed nothing
            state.counters["convert/refused_call_removed"] += 1
            return Action("remove", text="convert/refused_call_removed")
        if args.get("command") == "view" and is_filemap(obs):
            # SWE-agent's editor shows a large file with function bodies elided (its filemap):
            # an awk built from the elided ranges the view shows prints it
            shown = convert_filemap(_s(args, "path", default="") or "", obs, turn)
            return Action("run", shown.command, shown.output, 0)
        return convert_editor({**args, "_tool": name}, obs, rc, turn, state)
    if name in _NEEDS and (name not in REPLACE_TOOLS or any(k in args for k in _OLD)):
        _require(name, args, _NEEDS[name], turn)
    if name in CLAUDE_TOOLS:
        return convert_claude(name, args, obs, rc, turn)
    if name in READ_TOOLS:
        return _read_file(args, obs, rc, turn)
    if name in WRITE_TOOLS:
        path = _s(args, "path", "file_path", "filename", default="") or ""
        return _create_action(path, _s(args, "content", "file_text", "text", default="") or "", obs, rc, turn)
    if name in REPLACE_TOOLS and (
        old_key := next((k for k in ("old_string", "old_str", "oldText", "old_text") if k in args), None)
    ):
        path = _s(args, "path", "file_path", "filename", default="") or ""
        new = _s(args, "new_string", "new_str", "newText", "new_text", default="") or ""
        return _edit_action(path, [(str(args[old_key]), new, _truthy(args.get("replace_all")))], obs, rc)
    if name == "view" and "path" in args:
        return convert_view(_s(args, "path", default="") or "", args.get("view_range"), obs, rc, turn)
    if name in LIST_TOOLS:
        return _list_dir(name, args, obs, turn)
    if name in SEARCH_TOOLS:
        return _search_tool(name, args, obs, rc, turn, state)
    if name in PATCH_TOOLS:
        return _apply_patch(args, obs, rc, turn)
    if name in PI_TOOLS:
        path = _s(args, "path", "file_path", default="") or ""
        if name == "read":
            rng = _range(args.get("offset"), args.get("limit"))
            end = "$" if rng is None or rng[1] == -1 else rng[1]
            cmd = (
                f"cat {edits.shell_quote(path)}"
                if rng is None
                else f"sed -n '{rng[0]},{end}p' {edits.shell_quote(path)}"
            )
            if _failed(
                obs, rc
            ):  # the tool's error is not what cat/sed print: theirs, when the file is missing
                out, code = _missing(path, cmd, obs, turn)
                if rng is not None:
                    out, code = f"sed: can't read {path}: No such file or directory\n", 2
                return Action("run", cmd, out, code)
            return Action("run", cmd, obs, 0)
        if name == "write":
            return _create_action(path, _s(args, "content", "file_text", default="") or "", obs, rc, turn)
        old = _s(args, "oldText", "old_str", "old_string", default="") or ""
        new = _s(args, "newText", "new_str", "new_string", default="") or ""
        return _edit_action(path, [(old, new, False)], obs, rc)
    if window_name(name):
        # SWE-agent's tool name with arguments none of its signatures has
        raise ConvertError("bad_tool_args", f"turn {turn}: {name}({', '.join(sorted(args))})")
    raise ConvertError("unknown_tool", name)


__all__ = ["SUBMIT_COMMAND", "Action", "ToolState", "convert_call", "peel_wrappers", "split_exit_marker"]
