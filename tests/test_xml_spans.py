"""The XML tool-call dialect read with ``str.find`` finds exactly what its regexes
(``FUNCTION_RE``, ``PARAM_RE``: lazy bodies up to the close tag, the next parameter or the end)
find, on any text built from the dialect's own pieces."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.parsers.dialects import FUNCTION_RE, PARAM_RE, _xml_calls, _xml_spans

PIECES = [
    "<function=",
    "</function>",
    "<parameter=",
    "</parameter>",
    ">",
    "\n",
    "a",
    " b ",
    "x" * 199,
    "y" * 201,
    "<",
    "=",
    "[1, 2]",
]
texts = st.lists(st.sampled_from(PIECES), max_size=40).map("".join)


def by_regex(pattern: re.Pattern[str], text: str) -> list[tuple[str, str]]:
    return [(m.group(1), m.group(2)) for m in pattern.finditer(text)]


@settings(max_examples=800, deadline=None)
@given(texts)
def test_spans_are_the_regex_matches(text: str) -> None:
    assert _xml_spans(text, "<function=", "</function>", None) == by_regex(FUNCTION_RE, text)
    assert _xml_spans(text, "<parameter=", "</parameter>", "<parameter=") == by_regex(PARAM_RE, text)


def test_a_call_with_parameters() -> None:
    text = (
        "<function=str_replace_editor>\n<parameter=command>view</parameter>\n"
        "<parameter=path>\n/testbed/a.py\n</parameter><parameter=view_range>[1, 20]"
        "<parameter=bad\nname>x</parameter></function>tail<function=finish>"
    )
    calls = _xml_calls(text)
    assert [(c.name, c.args) for c in calls] == [
        ("str_replace_editor", {"command": "view", "path": "/testbed/a.py", "view_range": [1, 20]}),
        ("finish", {}),
    ]
