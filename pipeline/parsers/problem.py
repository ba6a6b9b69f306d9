"""Problem statement from the first user message, per harness template.

Known wrappers (first match wins): ``<pr_description>`` (SWE-smith / SWE-agent 1.x / mini-swe
SWE-bench config), ``<issue_description>`` (OpenHands / SWE-Lego), SWE-agent's
``ISSUE:\\n…\\n\\nINSTRUCTIONS:``, mini-swe's ``Please solve this issue: …``. Otherwise the whole
message is the statement and the caller counts ``parse/problem_statement_fallback``.

The statement is kept as the harness got it: the templates put exactly one newline on each side
of it (``<pr_description>\n{task}\n</pr_description>``), and only that newline is taken off, so a
statement ending in a newline (most SWE-bench ones) keeps it. Leading blank space is dropped.
"""

from __future__ import annotations

import re

# (closing marker that must be present, pattern): the guard keeps a hostile message with many
# unclosed openings from making the lazy scan quadratic.
_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    (
        "</pr_description>",
        re.compile(
            r"<pr_description>\s*(?:Consider the following PR description:\s*\n)?"
            r"(.*?)\n?[ \t]*</pr_description>",
            re.DOTALL,
        ),
    ),
    (
        "</issue_description>",
        re.compile(r"<issue_description>\s*\n?(.*?)\n?[ \t]*</issue_description>", re.DOTALL),
    ),
    ("</issue>", re.compile(r"<issue>\s*\n?(.*?)\n?[ \t]*</issue>", re.DOTALL)),
    ("INSTRUCTIONS:", re.compile(r"(?:^|\n)ISSUE:\n(.*?)\n+\s*INSTRUCTIONS:", re.DOTALL)),
    (
        "",
        re.compile(
            r"\A\s*Please solve this issue:\s*(.*?)(?:\n\nYou can execute bash commands|\n\n## "
            r"|\n\n<instructions>|\Z)",
            re.DOTALL,
        ),
    ),
]
_UPLOADED_RE = re.compile(r"\A\s*<uploaded_files>.*?</uploaded_files>\s*", re.DOTALL)
_PREAMBLE_RE = re.compile(r"\AI've uploaded an? [^\n]*?(?:\n\n|\n|$)")


def _trim(statement: str) -> str:
    """Leading blank space off; the end as the task had it (the template's newline is already
    outside the match)."""
    return statement.lstrip()


# The wrappers whose statement runs to the nearest closing tag, led by at most one newline and
# blanks: (opening pattern, closing tag). Their lazy ``OPEN(.*?)\n?[ \t]*CLOSE`` (the first three
# _PATTERNS) is found here as the opening match plus ``str.find`` for the close, not one regex
# step per character of the statement.
_WRAPPED: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"<pr_description>\s*(?:Consider the following PR description:\s*\n)?"), "</pr_description>"),
    (re.compile(r"<issue_description>\s*\n?"), "</issue_description>"),
    (re.compile(r"<issue>\s*\n?"), "</issue>"),
]


def _wrapped(text: str, opening: re.Pattern[str], close: str) -> str | None:
    """Group 1 of the lazy ``OPEN(.*?)\n?[ \t]*CLOSE`` search (None when it does not match)."""
    m = opening.search(text)
    if m is None:
        return None
    start = m.end()
    c = text.find(close, start)
    if c < 0:  # no close after the first opening: none after any later one either
        return None
    # the statement ends where the blanks before the close (and one newline before them) begin
    end = c
    while end > start and text[end - 1] in " \t":
        end -= 1
    if end > start and text[end - 1] == "\n":
        end -= 1
    return text[start:end]


def extract_problem(text: str) -> tuple[str, bool]:
    """(statement, used_fallback)."""
    for opening, close in _WRAPPED:
        statement = _wrapped(text, opening, close) if close in text else None
        if statement is not None and statement.strip():
            return _trim(statement), False
    for close, pat in _PATTERNS[len(_WRAPPED) :]:
        k = text.rfind(close)
        # endpos, not a slice: the same search (the text "ends" there), without copying the text
        m = pat.search(text, 0, k + len(close)) if k >= 0 else None
        if m and m.group(1).strip():
            return _trim(m.group(1)), False
    rest = _UPLOADED_RE.sub("", text, count=1)
    if rest != text:
        # OpenHands-style preamble without a known wrapper: drop the path lines, keep the rest.
        rest = _PREAMBLE_RE.sub("", rest, count=1)
    return rest.strip(), True
