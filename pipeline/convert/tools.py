"""Tool call → ONE bash command whose output is the observation.

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
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pipeline.convert import edits, kimi_tools
from pipeline.convert.actions import Action, ToolState, _failed, _s, _truthy
from pipeline.convert.bash import convert_bash
from pipeline.convert.filemap import convert_filemap, is_filemap
from pipeline.convert.filetools import (
    _CAT_N_LINE,
    _apply_patch,
    _create_action,
    _edit_action,
    _list_dir,
    _range,
    _read_file,
    _review,
    _search_tool,
    convert_claude,
    convert_editor,
)
from pipeline.convert.session_tools import NO_EFFECT_TOOLS as SESSION_NO_EFFECT_TOOLS
from pipeline.convert.session_tools import SUBAGENT_TOOLS, no_effect_text, refuse_unreplayable
from pipeline.convert.sweagent_window import (
    RemovedTurn,
    convert_window,
    window_call,
    window_name,
    window_refusal,
)
from pipeline.convert.views import _missing, convert_view, view_command
from pipeline.core.episode import ConvertError
from pipeline.parsers.sweagent_tools import HANDOFF_TOOL, REVIEW_TOOL

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


# A converter of one family: (name, args, observation, return code, turn, the run's tool state).
Converter = Callable[[str, dict[str, Any], str, int | None, int, ToolState], Action]


@dataclass(frozen=True)
class ToolFamily:
    """Tools converted alike: which calls are its own (by name, and for some by arguments) and how
    one is converted. A call belongs to the first family of its table that owns it."""

    name: str
    owns: Callable[[str, dict[str, Any]], bool]
    convert: Converter


def _bash(name: str, args: dict[str, Any], obs: str, rc: int | None, turn: int, state: ToolState) -> Action:
    refuse_unreplayable(name, args, obs, turn)
    return convert_bash(args, obs, rc, turn, state)


def _review_call(
    name: str, args: dict[str, Any], obs: str, rc: int | None, turn: int, state: ToolState
) -> Action:
    return _review(obs, state)


def _handoff(
    name: str, args: dict[str, Any], obs: str, rc: int | None, turn: int, state: ToolState
) -> Action:
    # a multi-agent handoff changes no file and prints the agents' reports, which no command
    # prints: the turn goes, its thought is carried to the next one
    state.counters["convert/sweagent_handoff_removed"] += 1
    return Action("remove", text="convert/sweagent_handoff_removed")


def _think(name: str, args: dict[str, Any], obs: str, rc: int | None, turn: int, state: ToolState) -> Action:
    return Action("fold", text=_s(args, "thought", "content", "text", default="") or "")


def _todo(name: str, args: dict[str, Any], obs: str, rc: int | None, turn: int, state: ToolState) -> Action:
    return Action("remove")


def _session_no_effect(
    name: str, args: dict[str, Any], obs: str, rc: int | None, turn: int, state: ToolState
) -> Action:
    folded = no_effect_text(name, args, turn) or ""  # owned: a tool no_effect_text knows, never None
    state.counters["convert/no_effect_folded"] += 1
    return Action("fold", text=folded)


def _no_effect(
    name: str, args: dict[str, Any], obs: str, rc: int | None, turn: int, state: ToolState
) -> Action:
    state.counters["convert/no_effect_removed"] += 1
    inputs = args.get("inputs")
    task = _s(inputs, "task", default="") if isinstance(inputs, dict) else ""
    return Action("fold", text=task or "") if task else Action("remove", text="convert/no_effect_removed")


def _flag_submit(
    name: str, args: dict[str, Any], obs: str, rc: int | None, turn: int, state: ToolState
) -> Action:
    # a submit with an argument (a CTF flag) is not the patch submit, and has no shell command
    raise ConvertError("unknown_tool", f"{name} <argument>")


def _submit(name: str, args: dict[str, Any], obs: str, rc: int | None, turn: int, state: ToolState) -> Action:
    return Action("submit", text=_s(args, "message", "result", "summary", default="") or "", output=obs)


def _editor(name: str, args: dict[str, Any], obs: str, rc: int | None, turn: int, state: ToolState) -> Action:
    try:
        _require(f"{name}.{args.get('command')}", args, _EDITOR_NEEDS.get(str(args.get("command")), ()), turn)
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


def _claude(name: str, args: dict[str, Any], obs: str, rc: int | None, turn: int, state: ToolState) -> Action:
    return convert_claude(name, args, obs, rc, turn)


def _read(name: str, args: dict[str, Any], obs: str, rc: int | None, turn: int, state: ToolState) -> Action:
    return _read_file(args, obs, rc, turn)


def _write(name: str, args: dict[str, Any], obs: str, rc: int | None, turn: int, state: ToolState) -> Action:
    path = _s(args, "path", "file_path", "filename", default="") or ""
    return _create_action(path, _s(args, "content", "file_text", "text", default="") or "", obs, rc, turn)


def _replace(
    name: str, args: dict[str, Any], obs: str, rc: int | None, turn: int, state: ToolState
) -> Action:
    old_key = next(k for k in ("old_string", "old_str", "oldText", "old_text") if k in args)
    path = _s(args, "path", "file_path", "filename", default="") or ""
    new = _s(args, "new_string", "new_str", "newText", "new_text", default="") or ""
    return _edit_action(path, [(str(args[old_key]), new, _truthy(args.get("replace_all")))], obs, rc)


def _view(name: str, args: dict[str, Any], obs: str, rc: int | None, turn: int, state: ToolState) -> Action:
    return convert_view(_s(args, "path", default="") or "", args.get("view_range"), obs, rc, turn)


def _list(name: str, args: dict[str, Any], obs: str, rc: int | None, turn: int, state: ToolState) -> Action:
    return _list_dir(name, args, obs, turn)


def _search(name: str, args: dict[str, Any], obs: str, rc: int | None, turn: int, state: ToolState) -> Action:
    return _search_tool(name, args, obs, rc, turn, state)


def _patch(name: str, args: dict[str, Any], obs: str, rc: int | None, turn: int, state: ToolState) -> Action:
    return _apply_patch(args, obs, rc, turn)


def _pi(name: str, args: dict[str, Any], obs: str, rc: int | None, turn: int, state: ToolState) -> Action:
    path = _s(args, "path", "file_path", default="") or ""
    if name == "read":
        rng = _range(args.get("offset"), args.get("limit"))
        end = "$" if rng is None or rng[1] == -1 else rng[1]
        cmd = (
            f"cat {edits.shell_quote(path)}"
            if rng is None
            else f"sed -n '{rng[0]},{end}p' {edits.shell_quote(path)}"
        )
        if _failed(obs, rc):  # the tool's error is not what cat/sed print: theirs, when the file is missing
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


def _named(names: frozenset[str]) -> Callable[[str, dict[str, Any]], bool]:
    return lambda name, args: name in names


def _flagged_submit(name: str, args: dict[str, Any]) -> bool:
    return (
        bool(SUBMIT_RE.match(name))
        and set(args) <= {"args", "body"}
        and bool(str(args.get("args") or "").strip())
    )


# The harness's own tools, in the order a call is matched: shell, review, handoff, think, to-do,
# the interactive agents' no-effect tools and sub-agents, other no-effect tools, submit (with a flag, then the patch submit), the editor.
HARNESS_FAMILIES: tuple[ToolFamily, ...] = (
    ToolFamily("bash", _named(BASH_TOOLS), _bash),
    ToolFamily("review", lambda name, args: name == REVIEW_TOOL, _review_call),
    ToolFamily("handoff", lambda name, args: name == HANDOFF_TOOL, _handoff),
    ToolFamily("think", _named(THINK_TOOLS), _think),
    ToolFamily("todo", _named(TODO_TOOLS), _todo),
    ToolFamily("session_no_effect", _named(SUBAGENT_TOOLS | SESSION_NO_EFFECT_TOOLS), _session_no_effect),
    ToolFamily("no_effect", _named(NO_EFFECT_TOOLS), _no_effect),
    ToolFamily("flag_submit", _flagged_submit, _flag_submit),
    ToolFamily("submit", lambda name, args: bool(SUBMIT_RE.match(name)), _submit),
    ToolFamily("editor", _named(EDITOR_TOOLS), _editor),
)
# The file tools of other harnesses, matched once their required arguments are checked.
FILE_FAMILIES: tuple[ToolFamily, ...] = (
    ToolFamily("claude", _named(CLAUDE_TOOLS), _claude),
    ToolFamily("read", _named(READ_TOOLS), _read),
    ToolFamily("write", _named(WRITE_TOOLS), _write),
    ToolFamily(
        "replace", lambda name, args: name in REPLACE_TOOLS and any(k in args for k in _OLD), _replace
    ),
    ToolFamily("view", lambda name, args: name == "view" and "path" in args, _view),
    ToolFamily("list", _named(LIST_TOOLS), _list),
    ToolFamily("search", _named(SEARCH_TOOLS), _search),
    ToolFamily("patch", _named(PATCH_TOOLS), _patch),
    ToolFamily("pi", _named(PI_TOOLS), _pi),
)


def _family_of(families: tuple[ToolFamily, ...], name: str, args: dict[str, Any]) -> ToolFamily | None:
    return next((f for f in families if f.owns(name, args)), None)


def convert_call(
    name: str, args: dict[str, Any], obs: str, rc: int | None, turn: int, state: ToolState
) -> Action:
    """One structured tool call (+ its observation) → an :class:`Action`: the window tools and the
    calls the harness refused first, then the first family of each table that owns the call."""
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
    if family := _family_of(HARNESS_FAMILIES, name, args):
        return family.convert(name, args, obs, rc, turn, state)
    if name in _NEEDS and (name not in REPLACE_TOOLS or any(k in args for k in _OLD)):
        _require(name, args, _NEEDS[name], turn)
    if family := _family_of(FILE_FAMILIES, name, args):
        return family.convert(name, args, obs, rc, turn, state)
    if window_name(name):
        # SWE-agent's tool name with arguments none of its signatures has
        raise ConvertError("bad_tool_args", f"turn {turn}: {name}({', '.join(sorted(args))})")
    raise ConvertError("unknown_tool", name)
