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


def extract_problem(text: str) -> tuple[str, bool]:
    """(statement, used_fallback)."""
    for close, pat in _PATTERNS:
        k = text.rfind(close)
        m = pat.search(text[: k + len(close)]) if k >= 0 else None
        if m and m.group(1).strip():
            return _trim(m.group(1)), False
    rest = _UPLOADED_RE.sub("", text, count=1)
    if rest != text:
        # OpenHands-style preamble without a known wrapper: drop the path lines, keep the rest.
        rest = _PREAMBLE_RE.sub("", rest, count=1)
    return rest.strip(), True
