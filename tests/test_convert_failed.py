"""A tool's outcome read from its text (``_failed`` with no return code): the failure hints are
looked for in the first 300 characters after the leading whitespace, as ``obs.lstrip()[:300]``
gives them, without copying the text (a file view's lines start with spaces)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pipeline.convert.tools import _FAIL_HINTS, _failed

# every character str.isspace() knows (re's \s must strip the same), a hint, other text
_SPACES = [chr(c) for c in range(0x3001) if chr(c).isspace()]
_pieces = st.sampled_from([*_SPACES, *_FAIL_HINTS, "x", "Err", "\u2192", "     1\u2192a\n"])
_texts = st.lists(_pieces, max_size=40).map("".join)


def _failed_by_lstrip(obs: str) -> bool:
    head = obs.lstrip()[:300]
    return any(h in head for h in _FAIL_HINTS)


@given(st.integers(0, 320).map(lambda n: " " * n), _texts)
def test_the_hints_are_read_after_the_leading_whitespace(lead: str, text: str) -> None:
    obs = lead + text
    assert _failed(obs, None) == _failed_by_lstrip(obs)


def test_a_return_code_decides_when_there_is_one() -> None:
    assert _failed("Error: x", 0) is False
    assert _failed("fine", 2) is True
    assert _failed("  \u2028\x1c Invalid", None) is True
    assert _failed("  " + "x" * 300 + "Invalid", None) is False  # the hint is past the 300 characters
