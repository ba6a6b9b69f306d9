"""Harness decoration: text a harness adds around what a command printed.

A converted observation is what the converted command prints, so none of these may remain in one
unless the command itself prints it. Each pattern is anchored the way its harness writes it (a
whole line, or its own tag), so a file that merely mentions the words is not taken for it. A
command whose own text holds the decoration's key phrase (a ``grep`` for it, an ``echo`` of it) is
let through: its output may hold the phrase because the command printed it.
"""

from __future__ import annotations

import re

# (name, key phrase, pattern): the key phrase is a literal every match holds
DECORATIONS: tuple[tuple[str, str, re.Pattern[str]], ...] = tuple(
    (name, key, re.compile(pattern, re.M))
    for name, key, pattern in (
        # SWE-agent's windowed viewer and its prompts
        ("viewer_header", "lines total)]", r"^\[File: [^\n]+ \(\d+ lines total\)\]$"),
        ("viewer_more_lines", "more lines ", r"^\(\d+ more lines (?:above|below)\)$"),
        ("sweagent_prompt", "(Open file: ", r"^\(Open file: [^\n]*\)$"),
        ("sweagent_prompt", "(Current directory: ", r"^\(Current directory: [^\n]*\)$"),
        (
            "sweagent_no_output",
            "did not produce any output",
            r"^Your command ran successfully and did not produce any output\.$",
        ),
        # editors' notes and headers (str_replace_editor and its cousins)
        ("clipped", "<response clipped>", r"<response clipped>"),
        (
            "clipped",
            "To save on context only part of this file",
            r"To save on context only part of this file",
        ),
        (
            "editor_header",
            "Here's the result of running `cat -n`",
            r"^Here's the result of running `cat -n` on ",
        ),
        (
            "editor_header",
            "Here's the files and directories up to",
            r"^Here's the files and directories up to \d+ levels? deep in ",
        ),
        (
            "next_step_template",
            "Review the changes and make sure they are as expected",
            r"Review the changes and make sure they are as expected\. Edit the file again if necessary\.",
        ),
        # OpenHands' trailers and notes
        ("openhands_note", "[Python Interpreter: ", r"^\[Python [Ii]nterpreter: [^\n]*\]$"),
        (
            "openhands_note",
            "exit code",
            r"^\[(?:Command finished|The command completed) with exit code -?\d+\.?\]$",
        ),
        ("openhands_note", "working directory: ", r"^\[(?:Jupyter )?[Cc]urrent working directory: [^\n]*\]$"),
        ("openhands_note", "has no new output after", r"^\[The command has no new output after \d+ seconds"),
        # tool harnesses' refusals and status parts (Claude Code, Kimi CLI)
        ("tool_error", "<tool_use_error>", r"<tool_use_error>"),
        ("tool_status", "<system>", r"^<system>[^\n]*</system>$"),
        ("tool_status", "<system-reminder>", r"<system-reminder>"),
    )
)
# every key phrase a match must contain, searched first (a substring search each: faster than
# one alternation, which has no literal prefix to jump to): most outputs hold none of them
_KEYS = tuple(dict.fromkeys(k for _, k, _ in DECORATIONS))


_ANY_KEY = "|".join(re.escape(k) for k in _KEYS)


def decoration_suspects(runs: list[list[str]]) -> list[set[int]]:
    """For each run's outputs, the turns whose output holds a decoration's key phrase: one search
    of every output of a batch by polars' (Rust) regex engine, which scans for the phrases at
    once instead of once per phrase."""
    import polars as pl

    flat = pl.Series([o for outs in runs for o in outs], dtype=pl.String)
    hits = flat.str.contains(_ANY_KEY).to_list() if len(flat) else []
    out: list[set[int]] = []
    i = 0
    for outs in runs:
        out.append({t for t in range(len(outs)) if hits[i + t]})
        i += len(outs)
    return out


def decoration_in(output: str, command: str) -> str | None:
    """The name of the first harness decoration in ``output`` that ``command`` does not print."""
    if not any(k in output for k in _KEYS):
        return None
    for name, key, pattern in DECORATIONS:
        if key in output and key not in command and pattern.search(output):
            return name
    return None
