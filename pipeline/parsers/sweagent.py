"""SWE-agent ``.traj`` files: 0.x text actions and 1.x ``history`` with OpenAI ``tool_calls``.

Text actions (0.x, and the windowed-editor demos that put the action in ``<command>``) come from
``trajectory[i].action``: a SWE-agent special command (``open``, ``edit N:M … end_of_edit``, …)
becomes ``ToolCall(<command>, {"args": <rest of first line>, "body": <lines up to end_of_edit>})``,
anything else is a plain shell ``Bash``. Files whose history carries ``tool_calls`` are read
from the history so the calls keep their structured arguments.
"""

from __future__ import annotations

import re
import shlex
from collections import Counter
from typing import Any

import orjson

from pipeline.core.episode import Bash, Episode, ParseError, RawRun, Step, ToolCall
from pipeline.parsers.assembly import language_hint, make_episode, messages_episode
from pipeline.parsers.dialects import strip_think
from pipeline.parsers.fields import as_list, opt_str, sub_dict, text_of
from pipeline.parsers.format import Format, is_message_list
from pipeline.parsers.messages import Msg, first_user_index, normalize_message
from pipeline.parsers.observations import clean_observation, restore_pty_newlines
from pipeline.text.ids import swesmith_commit

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


def _json_field(x: Any) -> dict[str, Any]:
    if isinstance(x, dict):
        return x
    if isinstance(x, str) and x.strip().startswith("{"):
        try:
            v = orjson.loads(x)
        except orjson.JSONDecodeError:
            return {}
        return v if isinstance(v, dict) else {}
    return {}


def _history(rec: dict[str, Any]) -> list[Msg]:
    raw = rec.get("history")
    if raw is None:
        return []
    out: list[Msg] = []
    for i, m in enumerate(as_list(raw, "history")):
        if isinstance(m, dict) and m.get("is_demo"):
            continue  # in-context demonstrations are not this run
        out.append(normalize_message(m, f"history[{i}]"))
    return out


def _trajectory_steps(traj: list[Any], counters: Counter[str]) -> list[Step]:
    steps: list[Step] = []
    for i, st in enumerate(traj):
        if not isinstance(st, dict):
            raise ParseError("bad_shape", f"trajectory[{i}]: {type(st).__name__}")
        action = st.get("action")
        if not isinstance(action, str):
            raise ParseError("bad_shape", f"trajectory[{i}].action: {type(action).__name__}")
        if not action.strip():
            counters["parse/empty_action"] += 1
            continue
        thought = st.get("thought")
        obs, rc = clean_observation(text_of(st.get("observation"), f"trajectory[{i}].observation"), counters)
        steps.append(
            Step(
                thought=strip_think(thought if isinstance(thought, str) else ""),
                call=text_action(action),
                observation=obs,
                returncode=rc,
            )
        )
    return steps


def parse_sweagent(raw: RawRun) -> Episode:
    rec = raw.payload
    replay = _json_field(rec.get("replay_config"))
    agent = sub_dict(replay, "agent")
    model_cfg = sub_dict(agent, "model")
    ps = sub_dict(replay, "problem_statement")
    env = sub_dict(replay, "env")
    repo_cfg = sub_dict(env, "repo")
    environment = opt_str(rec.get("environment"))
    file_stem = (opt_str(rec.get("__file__")) or "").removesuffix(".traj")
    instance_id = (
        opt_str(ps.get("id"))
        or (environment if environment and "__" in environment else None)
        or file_stem
        or raw.source_uid
    )
    hist = _history(rec)
    traj_raw = rec.get("trajectory")
    traj = as_list(traj_raw, "trajectory") if traj_raw is not None else []
    if not hist:
        raise ParseError("no_task", "SWE-agent trajectory without a history")
    task_text = hist[first_user_index(hist)].text
    common: dict[str, Any] = dict(
        instance_id=instance_id,
        repo="",
        pool="swesmith" if swesmith_commit(instance_id) else "swe-agent",
        language=language_hint(task_text) if language_hint(task_text) != "unknown" else "python",
        base_commit=opt_str(repo_cfg.get("base_commit")),
        patch=None,
        origin=raw.origin,
        harness="swe-agent",
        model=opt_str(model_cfg.get("name")) or opt_str(rec.get("model")) or "unknown",
        source_uid=raw.source_uid,
        resolved="unknown",
        fold_group=None,
        epoch=raw.epoch,
    )
    root = None
    for st in traj:
        wd = _json_field(st.get("state")).get("working_dir") if isinstance(st, dict) else None
        if isinstance(wd, str) and wd.startswith("/"):
            root = wd.rstrip("/") or "/"
            break
    if root is None:
        for m in hist:
            cm = CURDIR_RE.search(m.text)
            if cm:
                root = cm.group(1).rstrip("/")
                break
    info = rec.get("info") if isinstance(rec.get("info"), dict) else {}
    systems = [m.text for m in hist if m.role == "system"]
    tools = declared_tools("\n\n\n".join(systems)) | handoff_tools(rec)
    if any(m.tool_calls for m in hist):
        ep = messages_episode(hist, root_hint=root, **common)
        _trajectory_submit(ep, traj)
        mark_timeouts(ep)
        tool_actions(ep, tools)  # before the newlines: a tool run from the shell prints as the tool
        restore_final_newlines(ep)  # 1.x (function calling, swe-rex) stripped them
        terminal_ls(ep)
    else:
        counters: Counter[str] = Counter()
        # Without a trajectory, each history assistant message carries ``action`` and ``thought``.
        steps = _trajectory_steps(traj, counters) if traj else _history_text_steps(rec, counters)
        ep = make_episode(
            task_text=task_text,
            steps=steps,
            dialect="sweagent_text",
            counters=counters,
            root_hint=root,
            **common,
        )
        tool_actions(ep, tools)
    mark_timeouts(ep)
    info = info if isinstance(info, dict) else {}
    status = opt_str(info.get("exit_status"))
    settle_exits(ep, status, opt_str(info.get("submission")))
    settle_submits(ep, opt_str(info.get("submission")))
    ep.meta.submission = recorded_submission(ep, status, info.get("submission"))
    return restore_pty_newlines(ep)


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


# ---------------------------------------------------------------- final newlines (SWE-agent 1.x)
#
# SWE-agent 1.x (swe-rex) records a command's output with its trailing whitespace stripped: a
# script that printed ``344\n`` is recorded as ``344``. Mini-swe-agent records what the command
# printed, so the newline is put back where the command is known to print it (policy):
#
# * SWE-agent's own tools (editor, windowed tools, filemap) print with ``print``: always, and an
#   editor view whose last numbered line was the empty one (``    55\t``) gets its tab back;
# * a shell command: decided from the program that printed last (the last simple command, looking
#   through stdin filters such as ``| head -20``). Programs that print whole lines (python running
#   a script or a module, pytest, pip, grep, find, ls, wc, git, echo without ``-n``, …; ``python
#   -c``/heredoc code unless it writes with ``end=``/``stdout.write``; ``printf`` whose format ends
#   in ``\n``) get it back. Programs that copy bytes (``cat``/``head``/``tail``/``sed`` on a file,
#   ``printf`` otherwise, ``echo -n``, unknown programs) keep the output as recorded: their last
#   line may really have no newline.
# Counted ``parse/sweagent_newline_restored``.

_LINE_PROGRAMS = frozenset(
    {
        "pytest",
        "py.test",
        "tox",
        "nox",
        "pip",
        "pip3",
        "uv",
        "conda",
        "grep",
        "egrep",
        "fgrep",
        "rg",
        "ag",
        "find",
        "ls",
        "wc",
        "sort",
        "uniq",
        "nl",
        "cut",
        "awk",
        "gawk",
        "git",
        "diff",
        "echo",
        "pwd",
        "which",
        "whoami",
        "du",
        "df",
        "tree",
        "date",
        "env",
        "make",
        "cmake",
        "go",
        "cargo",
        "npm",
        "yarn",
        "node",
        "java",
        "javac",
        "mvn",
        "gradle",
        "ruby",
        "rspec",
        "bundle",
        "php",
        "composer",
        "gcc",
        "g++",
        "clang",
        "rustc",
        "mypy",
        "flake8",
        "ruff",
        "black",
        "pylint",
        "coverage",
        "file",
        "stat",
        "id",
        "uname",
        "ps",
        "type",
        "xxd",
        "od",
        "base64",
        "md5sum",
        "sha256sum",
        "realpath",
        "dirname",
        "basename",
        "readlink",
        "test",
        "true",
        "false",
        "mkdir",
        "rm",
        "cp",
        "mv",
        "touch",
        "chmod",
        "ln",
        "cd",
        "export",
        "source",
        ".",
        "apt",
        "apt-get",
    }
)
_STDIN_FILTERS = frozenset({"head", "tail", "sed", "cat", "sort", "uniq", "grep", "tee", "less", "more"})
_PYTHON = re.compile(r"^(?:.*/)?python[\d.]*$")
_FD_REDIRECT = re.compile(r"\s\d*>&\d+|\s&>>?\s*[^\s;&|]+")  # ``2>&1``: not a command separator
_PARTIAL_WRITE = re.compile(r"\bend\s*=|stdout\.write|sys\.stdout|print\(\s*\)\s*$")


def _operands(argv: list[str]) -> list[str]:
    """Non-option arguments (a numeric option value such as ``-n 20`` counts as an option's)."""
    out, skip = [], False
    for a in argv[1:]:
        if skip:
            skip = False
            continue
        if a.startswith("-"):
            skip = a in ("-n", "-c", "-e", "-f", "--lines", "--bytes")
            continue
        out.append(a)
    return out


def prints_final_newline(command: str) -> bool:
    """Whether ``command``'s output ends with a newline, decided from its last program (policy
    above); False when that cannot be known."""
    from pipeline.text.shell import split_command  # the project's shell lexer

    segs = split_command(_FD_REDIRECT.sub(" ", command))
    while segs:
        seg = segs[-1]
        argv = seg.argv
        prog = argv[0].rsplit("/", 1)[-1] if argv else ""
        if (
            prog in _STDIN_FILTERS
            and not _operands(argv)
            and len(segs) > 1
            and segs[-2].op == "|"
            and prog != "grep"
        ):
            segs = segs[:-1]  # ``… | head -20``: the lines come from before the filter
            continue
        if _PYTHON.match(prog):
            if "-c" in argv[1:-1]:
                return not _PARTIAL_WRITE.search(argv[argv.index("-c") + 1])
            if seg.heredoc or (len(argv) > 1 and argv[1] == "-"):
                return not _PARTIAL_WRITE.search(seg.heredoc)
            return len(argv) > 1  # a script or ``-m module``; a bare ``python`` reads stdin
        if prog == "echo":
            return not any(a.startswith("-") and "n" in a for a in argv[1:2])
        if prog == "printf":
            fmt = next((a for a in argv[1:] if not a.startswith("-")), "")
            return fmt.endswith("\\n")
        return prog in _LINE_PROGRAMS
    return False


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
_TOOL_OUTPUT_NAMES = WINDOW_COMMANDS | {"str_replace_editor", "filemap"}
_BARE_NUMBER_TAIL = re.compile(r"\n *\d+\Z")


def restore_final_newlines(ep: Episode) -> None:
    """Put back the final newline SWE-agent 1.x stripped, where the command printed one."""
    for st in ep.steps:
        obs, c = st.observation, st.call
        if not obs or obs.endswith(("\n", "\r\n")) or st.timed_out:
            continue
        if isinstance(c, ToolCall) and c.name in _TOOL_OUTPUT_NAMES:
            if c.name == "str_replace_editor" and _BARE_NUMBER_TAIL.search(obs):
                obs += "\t"  # the editor numbers the empty line after the file's last newline
        else:
            cmd = c.command if isinstance(c, Bash) else c.args.get("command") if c.name == "bash" else None
            if not isinstance(cmd, str) or not prints_final_newline(cmd):
                continue
        st.observation = obs + ("\r\n" if "\r\n" in obs else "\n")
        ep.counters["parse/sweagent_newline_restored"] += 1


# SWE-agent's notes for a command it killed: 0.x appends ``EXECUTION TIMED OUT`` (with a reason
# since 0.7) to what the command printed; 1.x replaces the output with its cancel template.
_TIMEOUT_0X = re.compile(
    r"\n?EXECUTION TIMED OUT(?: BECAUSE NO OUTPUT WAS PRODUCED FOR MORE THAN [\d.]+ SECONDS\."
    r"\nPLEASE REFINE YOUR RUNNING COMMAND SO IT WILL PRODUCE OUTPUT IN THE SPECIFIED TIME "
    r"FRAME\.| BECAUSE THE COMMAND WAS RUNNING FOR MORE THAN [\d.]+ SECONDS\."
    r"| AND INTERRUPT FAILED\. (?:RESTARTING PROCESS|TERMINATING INTERACTIVE SESSION)\.)?\s*\Z"
)
_TIMEOUT_1X = re.compile(
    r"\AThe command (['\"]).*\1 was cancelled because it took more than [\d.]+ seconds\. "
    r"Please try a different command that completes more quickly\.(?: Note: .*)?\s*\Z",
    re.S,
)


def mark_timeouts(ep: Episode) -> None:
    """A command SWE-agent killed on its timeout is ``Step.timed_out`` (no return code); its
    observation is what it printed before (nothing, for 1.x's cancel message). Counted
    ``parse/timed_out``."""
    for st in ep.steps:
        obs = st.observation
        if "EXECUTION TIMED OUT" in obs[-300:] and (m := _TIMEOUT_0X.search(obs, max(len(obs) - 300, 0))):
            st.observation = obs[: m.start()]
        elif obs.startswith("The command ") and _TIMEOUT_1X.match(obs):
            st.observation = ""
        else:
            continue
        st.timed_out, st.returncode = True, None
        ep.counters["parse/timed_out"] += 1


# ``ls`` in SWE-agent 1.x ran on a terminal (swe-rex's pty), so it printed columns; mini-swe-agent
# runs commands on pipes, where ``ls`` prints one name a line unless told ``-C``.
_PLAIN_LS = re.compile(r"\A((?:cd [^;&|<>]+ && )?ls)((?: +-[A-Za-z]+)*(?: +[^\s;&|<>`$]+)*)\s*\Z")
_COLUMNS = re.compile(r"\S(?:\t| {2,})\S")


def terminal_ls(ep: Episode) -> None:
    """A plain ``ls`` whose recorded output is in columns gets ``-C``, which prints those columns
    without a terminal (``parse/terminal_ls_columns``); a listing the flags fix (``-1``, ``-l``,
    ``-m``, ``-x``, ``-C``) or one name a line is left alone."""
    for st in ep.steps:
        c = st.call
        cmd = c.command if isinstance(c, Bash) else c.args.get("command") if c.name == "bash" else None
        m = _PLAIN_LS.match(cmd) if isinstance(cmd, str) else None
        if m is None or not _COLUMNS.search(st.observation):
            continue
        if any(f.startswith("-") and set(f[1:]) & set("1lmxCgno") for f in m.group(2).split()):
            continue
        new = f"{m.group(1)} -C{m.group(2)}"
        st.call = (
            Bash(new) if isinstance(c, Bash) else ToolCall(c.name, {**c.args, "command": new}, c.call_id)
        )
        ep.counters["parse/terminal_ls_columns"] += 1


def submit_argument(call: ToolCall | Bash) -> str | None:
    """None when ``call`` is not SWE-agent's ``submit``; else its argument text, "" for the patch
    submit (``submit`` takes no argument in the SWE bundles; CTF bundles submit a flag)."""
    if isinstance(call, Bash):
        return "" if call.command.strip() == "submit" else None
    if call.name != "submit":
        return None
    if set(call.args) <= {"args", "body"}:
        return (str(call.args.get("args") or "") + str(call.args.get("body") or "")).strip()
    return orjson.dumps(call.args).decode() if call.args else ""


def settle_submits(ep: Episode, submission: str | None = None) -> None:
    """The run ends at its last real submit (SWE-agent ends a run when a submit submits).

    A patch submit followed by more steps was a review stage: its call becomes ``REVIEW_TOOL``
    (``parse/sweagent_review_submit``). The final submit's observation is the submitted patch:
    the recorded one, else the record's ``info.submission`` (``parse/submission_from_info``)
    when the step printed something else (``Exited (autosubmitted)``) or nothing.
    """
    steps = ep.steps
    for st in steps[:-1]:
        if submit_argument(st.call) == "":
            st.call = ToolCall(REVIEW_TOOL, {}, st.call.call_id if isinstance(st.call, ToolCall) else None)
            ep.counters["parse/sweagent_review_submit"] += 1
    last = steps[-1] if steps else None
    ep.meta.submitted = last is not None and submit_argument(last.call) == ""
    if last is None or not ep.meta.submitted or not submission or not submission.strip():
        return
    if not last.observation.lstrip("\r\n").startswith("diff "):
        last.observation = submission
        ep.counters["parse/submission_from_info"] += 1


# SWE-agent's exits on an error or a limit (``exit_cost``, ``exit_context``, …): 0.x records them as
# the step's action, 1.x as the step's exit status. Neither is a command: the harness stopped the
# run, then tried an autosubmission (``git add -A && git diff --cached``, mini's submit command),
# recorded as ``info.exit_status == "submitted (<exit>)"`` when it produced the patch.
EXIT_ACTIONS = frozenset(
    {"exit_cost", "exit_context", "exit_api", "exit_format", "exit_error", "exit_forfeit", "exit_early"}
)


def record_says_submitted(status: str | None) -> bool | None:
    """What ``info.exit_status`` says of the submission: None when there is no status."""
    if not status:
        return None
    return status.strip().startswith("submitted")


def settle_exits(ep: Episode, status: str | None, submission: str | None) -> None:
    """Harness exits are no turns (``parse/sweagent_exit_removed``); a run its record says was
    submitted (autosubmitted after the exit, or a submit the saved history lost) ends with the
    submit, whose reply is the record's patch (``parse/sweagent_autosubmission``); a final submit
    of a run its record says did not submit is removed (``parse/sweagent_unsubmitted_submit_removed``)."""
    kept = [st for st in ep.steps if not (isinstance(st.call, ToolCall) and st.call.name in EXIT_ACTIONS)]
    if len(kept) < len(ep.steps):
        ep.counters["parse/sweagent_exit_removed"] += len(ep.steps) - len(kept)
        ep.steps = kept
    says = record_says_submitted(status)
    if says is False and ep.steps and submit_argument(ep.steps[-1].call) == "":
        # a submit the record says did not submit (the harness failed on it): no submit turn
        ep.steps.pop()
        ep.counters["parse/sweagent_unsubmitted_submit_removed"] += 1
    # (a run ending with a CTF flag submit was "submitted" too: its flag, not a patch)
    if ep.steps and says is True and submit_argument(ep.steps[-1].call) is None:
        ep.steps.append(Step(thought="", call=ToolCall("submit", {}), observation=submission or ""))
        ep.counters["parse/sweagent_autosubmission"] += 1


def normal_patch(patch: str) -> str:
    """A recorded patch as the run's final message shows it: the pty's ``\r\n`` line ends undone
    (as in its observations) and the newline SWE-agent puts before it dropped."""
    if "\r\n" in patch and not re.search(r"(?<!\r)\n", patch):
        patch = patch.replace("\r\n", "\n")
    return patch.lstrip("\r\n")


def recorded_submission(ep: Episode, status: str | None, submission: Any) -> str | None:
    """``Meta.submission`` of a run that ends with its submit (``settle_submits``): the patch the
    record says it submitted ("" for a submit with no patch); None for a run that does not submit
    or whose submit the record says nothing about (no status, no patch in ``info``, no diff shown)."""
    says = record_says_submitted(status)
    if says is False or not ep.meta.submitted:
        return None
    if isinstance(submission, str) and submission.strip():
        return normal_patch(submission)
    # no patch in ``info``: the diff the final submit printed, if it printed one
    last = ep.steps[-1] if ep.steps else None
    shown = last.observation.lstrip("\r\n") if last and submit_argument(last.call) == "" else ""
    if shown.startswith("diff "):
        return normal_patch(shown)
    if says is None and not isinstance(submission, str):
        return None  # a submit step, and no record of what it submitted
    return ""


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


def _trajectory_submit(ep: Episode, traj: list[Any]) -> None:
    """A submit present only in ``trajectory`` (the saved history was cut before it) is kept:
    appended when the history's last step is not a submit and the trajectory's last step is."""
    if not traj or not ep.steps or submit_argument(ep.steps[-1].call) == "":
        return
    st = traj[-1]
    if not isinstance(st, dict) or not isinstance(st.get("action"), str) or st["action"].strip() != "submit":
        return
    obs, rc = clean_observation(text_of(st.get("observation"), "trajectory[-1].observation"), ep.counters)
    thought = st.get("thought")
    ep.steps.append(
        Step(
            thought=strip_think(thought if isinstance(thought, str) else ""),
            call=ToolCall("submit", {}),
            observation=obs,
            returncode=rc,
        )
    )
    ep.counters["parse/trajectory_submit_recovered"] += 1


def _history_text_steps(rec: dict[str, Any], counters: Counter[str]) -> list[Step]:
    steps: list[Step] = []
    raw = [m for m in as_list(rec.get("history"), "history") if isinstance(m, dict) and not m.get("is_demo")]
    for i, m in enumerate(raw):
        if m.get("role") != "assistant" or not isinstance(m.get("action"), str):
            continue
        nxt = raw[i + 1] if i + 1 < len(raw) else None
        obs_text = (
            text_of(nxt.get("content"), f"history[{i + 1}].content")
            if nxt and nxt.get("role") in ("user", "tool")
            else ""
        )
        obs, rc = clean_observation(obs_text, counters)
        thought = m.get("thought")
        steps.append(
            Step(
                thought=strip_think(thought if isinstance(thought, str) else ""),
                call=text_action(m["action"]),
                observation=obs,
                returncode=rc,
            )
        )
    return steps


def _detect(obj: Any) -> bool:
    return (
        isinstance(obj, dict)
        and isinstance(obj.get("history"), list)
        and (
            "trajectory" in obj
            or "info" in obj
            or "environment" in obj
            or "replay_config" in obj
            or is_message_list(obj["history"])
        )
    )


FORMAT = Format(
    kind="sweagent",
    parse=parse_sweagent,
    harness="swe-agent",
    machines={"swe-agent": ("swe-agent", "SWE-agent (windowed file viewer and editor, bash)")},
    name="SWE-agent",
    detect=_detect,
)
