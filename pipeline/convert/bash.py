"""Bash calls: the command as the harness ran it (its wrappers peeled) and its output without the
exit-code notes the harness appended (their code read)."""

from __future__ import annotations

import re
import shlex
from typing import Any

from pipeline.convert import edits
from pipeline.convert.actions import Action, ToolState, _s
from pipeline.core.episode import ConvertError
from pipeline.text.shell import peel_wrappers
from pipeline.text.tails import newline_run_start, rstripped_len, tail_line_start

INTERRUPTS = frozenset({"C-c", "C-d", "C-z", "ctrl+c", "^C"})

_EXIT_MARKER = re.compile(
    r"\n*\[(?:The command completed with exit code|Command finished with exit code)\s*(-?\d+)\.?\]\s*$"
)
# other harnesses' exit-code notes: Affine bash tool "[exit code: N]", pi "Command exited with
# code N" (both appended), Claude Code "Exit code N" (prepended); they are not command output
_TAIL_EXIT = re.compile(r"\n*(?:\[exit code: (-?\d+)\]|Command exited with code (-?\d+))\s*$")
_HEAD_EXIT = re.compile(r"^Exit code (-?\d+)\n")
_OH_TRAILERS = re.compile(r"\n*\[(?:Current working directory|Python interpreter): [^\n]*\]\s*$")


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
