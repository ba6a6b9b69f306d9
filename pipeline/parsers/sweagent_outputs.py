"""SWE-agent's outputs as the commands printed them: the final newline 1.x stripped put back where
the command prints it, timeouts marked, a terminal ``ls`` in columns read."""

from __future__ import annotations

import re

from pipeline.core.episode import Bash, Episode, ToolCall
from pipeline.parsers.sweagent_tools import WINDOW_COMMANDS

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
