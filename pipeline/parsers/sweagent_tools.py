"""SWE-agent's tools as a run shows them: its special commands and bundles, the tools its system
prompt documents, text actions and editor command lines read as calls, multi-agent handoffs."""

from __future__ import annotations

import re
import shlex
from typing import Any

from pipeline.core.episode import Bash, Episode, ToolCall

# SWE-agent's tool bundles (windowed editor, search, submit): everything else is a shell command.
SPECIAL_COMMANDS = frozenset(
    {
        "open",
        "goto",
        "scroll_up",
        "scroll_down",
        "create",
        "edit",
        "insert",
        "append",
        "find_file",
        "search_dir",
        "search_file",
        "submit",
        "get_symbols",
        "filemap",
        "exit_forfeit",
        "exit_cost",
        "exit_context",
        "exit_api",
        "exit_format",
        "exit_error",
        "exit_early",
        # 0.x bundles beyond the editor (config/commands: cursors, CTF debug/server/decompile tools)
        "set_cursors",
        "summarize",
        "decompile",
        "disassemble",
        "debug_start",
        "debug_add_breakpoint",
        "debug_continue",
        "debug_step",
        "debug_exec",
        "debug_stop",
        "connect_start",
        "connect_sendline",
        "connect_exec",
        "connect_stop",
    }
)
# SWE-agent 1.x's bundles put these programs on the PATH (tools/<bundle>/bin/): a command that runs
# one ran the tool, whatever the run's prompt documents
BUNDLE_TOOLS = frozenset(
    {
        "str_replace_editor",
        "filemap",
        "view_image",
        "do_nothing",
        "_state",
        "_state_anthropic",
        "_state_diff_state",
        "_read_env",
        "_write_env",
        "click_mouse",
        "close_site",
        "double_click_mouse",
        "drag_mouse",
        "execute_script_on_page",
        "get_console_output",
        "move_mouse",
        "navigate_back",
        "navigate_forward",
        "open_site",
        "press_keys_on_page",
        "reload_page",
        "run_web_browser_server",
        "screenshot_site",
        "scroll_on_page",
        "set_browser_window_size",
        "type_text",
        "wait_time",
    }
)
CURDIR_RE = re.compile(r"\(Current directory: (/[^)\n]*)\)")
# A ``submit`` that did not end the run: SWE-agent's review-on-submit stage (``review_on_submit_m``
# prints a review checklist with the staged diff and waits for a second submit).
REVIEW_TOOL = "submit_review"


def text_action(action: str, tools: frozenset[str] = SPECIAL_COMMANDS) -> ToolCall | Bash:
    """One SWE-agent text action as a call: its tools (``tools``) keep their raw argument text."""
    a = action.strip()
    first, _, rest = a.partition("\n")
    word, _, args = first.strip().partition(" ")
    if word not in tools and word not in SPECIAL_COMMANDS and word not in BUNDLE_TOOLS:
        if (m := _CD_THEN.match(first)) and isinstance(
            call := text_action(m[1] + a[len(first) :], tools), ToolCall
        ):
            return call  # ``cd DIR && open x.py``: the tools print absolute paths, the cd changes no output
        if not rest and (inner := _inner_tool(a, tools)):
            # ``ls && open x.py``: the tool ran inside a command line, which no one converted
            # command reproduces (its name says so in the drop)
            return ToolCall(f"{inner} <in a command line>", {})
        return Bash(a)
    if word == "str_replace_editor" and (editor := editor_cli_call(a)) is not None:
        return editor
    if _chained(first):
        return ToolCall(f"{word} <in a command line>", {})
    return ToolCall(name=word, args={"args": args.strip(), "body": _first_block(rest, lines=word == "edit")})


_END_OF_EDIT = re.compile(r"^end_of_edit[ \t]*$", re.M)


def _first_block(rest: str, lines: bool = False) -> str:
    """The text up to the first ``end_of_edit`` line: SWE-agent ran only the first block of an
    action holding two ``edit`` blocks (the edit's report counts the lines of the first alone), so
    the text after it is no part of the call.

    ``lines``: an ``edit``'s replacement as the heredoc SWE-agent feeds it, every line with its
    newline: ``""`` is no line at all (the edit deletes its range), ``"\n"`` one empty line."""
    m = _END_OF_EDIT.search(rest)
    if m is None:
        return rest + "\n" if lines and rest and not rest.endswith("\n") else rest
    return rest[: m.start()] if lines else rest[: max(m.start() - 1, 0)]


# ``str_replace_editor`` run from the shell takes its arguments as options (argparse in the bundle)
_EDITOR_OPTIONS = {
    "--file_text": "file_text",
    "--old_str": "old_str",
    "--new_str": "new_str",
    "--insert_line": "insert_line",
}


def editor_cli_call(command: str) -> ToolCall | None:
    """``str_replace_editor view /p --view_range 1 20`` as the tool's structured call; None when
    the words do not fit its command line (then it is a call without arguments: a counted drop)."""
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    if len(words) < 3 or any(w in _CHAIN_OPS for w in words):
        return None
    args: dict[str, Any] = {"command": words[1], "path": words[2]}
    rest = words[3:]
    while rest:
        opt = rest.pop(0)
        if opt == "--view_range" and len(rest) >= 2 and all(re.fullmatch(r"-?\d+", w) for w in rest[:2]):
            args["view_range"] = [int(rest.pop(0)), int(rest.pop(0))]
        elif opt in _EDITOR_OPTIONS and rest:
            args[_EDITOR_OPTIONS[opt]] = rest.pop(0)
        else:
            return None
    if "insert_line" in args:
        if not re.fullmatch(r"\d+", str(args["insert_line"])):
            return None
        args["insert_line"] = int(args["insert_line"])
    return ToolCall("str_replace_editor", args)


_CHAIN_OPS = frozenset({"&&", "||", ";", "|", "&"})
_CD_THEN = re.compile(r"\Acd\s+(?:'[^']*'|\"[^\"]*\"|[^\s;&|'\"]+)\s*&&\s*(\S.*)\Z")


def _chained(line: str) -> bool:
    """Whether a tool's command line goes on past the tool (``open a.py && goto 50``)."""
    from pipeline.text.shell import shlex_split

    return any(t in _CHAIN_OPS for t in shlex_split(line))


def _inner_tool(command: str, tools: frozenset[str]) -> str | None:
    """The first tool a one-line command runs after its first simple command, if any."""
    from pipeline.text.shell import split_command  # the project's shell lexer

    try:
        segs = split_command(command)
    except ValueError:
        return None
    return next(
        (
            s.argv[0]
            for s in segs
            if s.argv and (s.argv[0] in tools or s.argv[0] in SPECIAL_COMMANDS or s.argv[0] in BUNDLE_TOOLS)
        ),
        None,
    )


# The tools a run's system prompt documents (SWE-agent lists its bundles' commands under
# ``COMMANDS:``, as ``name:\n  docstring: …`` blocks or ``name <args> - doc`` lines).
_DOC_BLOCK_RE = re.compile(r"^([A-Za-z_][\w-]*):\n  (?:docstring|signature):", re.M)
_DOC_LINE_RE = re.compile(r"^([A-Za-z_][\w-]*)(?:(?: [<\[][^\n]*?)? - |\n<)", re.M)


def declared_tools(system_text: str) -> frozenset[str]:
    """The command names a SWE-agent system prompt documents besides the shell (every
    ``COMMANDS:`` section of the text: a multi-agent run joins its agents' prompts)."""
    names = set(_DOC_BLOCK_RE.findall(system_text))
    for at in (m.end() for m in re.finditer("COMMANDS:\n", system_text)):
        section = system_text[at:]
        section = section[: section.find("\n\n\n")] if "\n\n\n" in section else section
        # a multi-line signature's terminator line (``end_of_edit - …`` after ``<text>``) is no tool
        names.update(
            m.group(1)
            for m in _DOC_LINE_RE.finditer(section)
            if not section.startswith("<", section.rfind("\n", 0, max(m.start() - 1, 0)) + 1)
        )
    return frozenset(names)


def tool_actions(ep: Episode, tools: frozenset[str]) -> None:
    """A shell command whose first word is one of the run's tools ran that tool, not a program
    (SWE-agent puts its bundles on the PATH): it becomes the tool's call, so a tool the converter
    does not know is a counted ``convert/unknown_tool`` drop, never passed through as bash."""
    for st in ep.steps:
        c = st.call
        cmd = c.command if isinstance(c, Bash) else c.args.get("command") if c.name == "bash" else None
        if isinstance(cmd, str) and isinstance(call := text_action(cmd, tools), ToolCall):
            if call.name in HANDOFF_TOOLS and call.name in tools:
                call = ToolCall(HANDOFF_TOOL, {"name": call.name, **call.args})
            st.call = call
            ep.counters["parse/sweagent_tool_in_shell"] += 1


# SWE-agent's windowed file viewer and editor: tools that print a window of the open file
WINDOW_COMMANDS = frozenset(
    {
        "open",
        "goto",
        "scroll_up",
        "scroll_down",
        "create",
        "edit",
        "insert",
        "find_file",
        "search_dir",
        "search_file",
        "set_cursors",
    }
)


# CodeR-style multi-agent runs (a SWE-agent fork): a manager's ``plan`` hands the task to agents
# that end with ``succeed`` or ``fail``; the handoffs print the agents' reports, not a program's
# output. They are tools of a run whose history names several agents.
HANDOFF_TOOLS = frozenset({"plan", "succeed", "fail"})
HANDOFF_TOOL = "sweagent_handoff"


def handoff_tools(rec: dict[str, Any]) -> frozenset[str]:
    """``HANDOFF_TOOLS`` for a run whose history has more than one agent, else none."""
    hist = rec.get("history")
    agents = {m.get("agent") for m in hist if isinstance(m, dict)} if isinstance(hist, list) else set()
    agents.discard(None)
    return HANDOFF_TOOLS if len(agents) > 1 and agents != {"primary"} else frozenset()
