"""Claude Code's Read output: the arrows counted at line numbers (newline-led search plus the first
line) are exactly the line starts the multiline ``^ *\\d+→`` pattern finds, so the fast whole-body
replace is taken exactly when every arrow is a line number's."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.convert.filetools import _claude_read_body
from pipeline.convert.views import _ARROW_AT_START, _NL_ARROW_AT_NUMBER, _arrows_at_numbers

LINE_START_ARROWS = re.compile(r"^ *\d+\u2192", re.M)
texts = st.lists(st.sampled_from(["\n", " ", "1", "23", "\u2192", "a", "\t", "\r"]), max_size=30).map("".join)


@settings(max_examples=1500, deadline=None)
@given(texts)
def test_arrows_at_numbers_are_the_multiline_line_starts(text: str) -> None:
    got = len(_NL_ARROW_AT_NUMBER.findall(text)) + bool(_ARROW_AT_START.match(text))
    assert got == len(LINE_START_ARROWS.findall(text))
    assert _arrows_at_numbers(text) == got
    # every line numbered (the fast count's case), and one line more that may not be
    numbered = "\n".join(f"{' ' * (i % 3)}{i}\u2192{line}" for i, line in enumerate(text.split("\n")))
    for body in (numbered, numbered + "\n" + text, text + "\n" + numbered):
        assert _arrows_at_numbers(body) == len(LINE_START_ARROWS.findall(body))


def test_numbered_lines_and_a_stray_arrow() -> None:
    assert _claude_read_body("     1\u2192a\n     2\u2192b\n") == "     1\ta\n     2\tb\n"
    # an arrow inside a line's text is not a line number's: only the numbers' arrows become tabs
    assert _claude_read_body("     1\u2192x \u2192 y\n     2\u2192b") == "     1\tx \u2192 y\n     2\tb\n"
