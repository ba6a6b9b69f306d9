"""extract_problem finds the three wrappers whose statement runs to the nearest close
(``<pr_description>``, ``<issue_description>``, ``<issue>``) by their opening match and ``str.find``,
and searches the others with ``endpos`` instead of on a cut copy: given any message, the statement
and the fallback flag are exactly those of the regex search (the old code, kept here as the
specification)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.parsers.problem import _PATTERNS, _PREAMBLE_RE, _UPLOADED_RE, _trim, extract_problem


def _sliced(text: str) -> tuple[str, bool]:
    for close, pat in _PATTERNS:
        k = text.rfind(close)
        m = pat.search(text[: k + len(close)]) if k >= 0 else None
        if m and m.group(1).strip():
            return _trim(m.group(1)), False
    rest = _UPLOADED_RE.sub("", text, count=1)
    if rest != text:
        rest = _PREAMBLE_RE.sub("", rest, count=1)
    return rest.strip(), True


PIECES = [
    "<pr_description>",
    "</pr_description>",
    "<issue_description>",
    "</issue_description>",
    "<issue>",
    "</issue>",
    "ISSUE:\n",
    "INSTRUCTIONS:",
    "Please solve this issue:",
    "\n\nYou can execute bash commands",
    "\n\n## ",
    "Consider the following PR description:",
    "<uploaded_files>",
    "</uploaded_files>",
    "I've uploaded a ",
    "\n",
    " ",
    "\t",
    "x",
    "\r",
    "\u00a0",
    "\n\t ",
    "fix it",
]
messages = st.lists(st.sampled_from(PIECES), max_size=14).map("".join)


@settings(max_examples=3000, deadline=None)
@given(messages)
def test_endpos_search_is_the_sliced_search(text: str) -> None:
    assert extract_problem(text) == _sliced(text)


def test_statement_before_a_later_closing_marker() -> None:
    text = "<pr_description>\nfix the bug\n</pr_description>\nsee </pr_description> above"
    assert extract_problem(text) == ("fix the bug", False) == _sliced(text)
