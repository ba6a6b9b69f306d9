"""A tool's outcome read from its text (``_failed`` with no return code): the failure hints are
looked for on the first line after the leading whitespace, within its first 300 characters, as
``obs.lstrip()[:300].split("\n")[0]`` gives them, without copying the text (a file view's lines
start with spaces). A harness reports a failure as its output, error first; a file's text may hold
a hint on any later line."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pipeline.convert.actions import _FAIL_HINTS, _failed

# every character str.isspace() knows (re's \s must strip the same), a hint, other text
_SPACES = [chr(c) for c in range(0x3001) if chr(c).isspace()]
_pieces = st.sampled_from([*_SPACES, *_FAIL_HINTS, "x", "Err", ":", "\u2192", "     1\u2192a\n", "\n"])
_texts = st.lists(_pieces, max_size=40).map("".join)


def _failed_by_lstrip(obs: str) -> bool:
    head = obs.lstrip()[:300].split("\n")[0]
    return any(
        head.startswith(h, i) and not (h.endswith(":") and head[i + len(h) : i + len(h) + 1] == ":")
        for h in _FAIL_HINTS
        for i in range(len(head))
    )


@given(st.integers(0, 320).map(lambda n: " " * n), _texts)
def test_the_hints_are_read_after_the_leading_whitespace(lead: str, text: str) -> None:
    obs = lead + text
    assert _failed(obs, None) == _failed_by_lstrip(obs)


def test_a_return_code_decides_when_there_is_one() -> None:
    assert _failed("Error: x", 0) is False
    assert _failed("fine", 2) is True
    assert _failed("  \u2028\x1c Invalid", None) is True
    assert _failed("  " + "x" * 300 + "Invalid", None) is False  # the hint is past the 300 characters
    assert _failed("\n\nERROR:\nInvalid `path` parameter", None) is True  # OpenHands' editor


def test_a_hint_in_a_files_text_past_its_first_line_is_no_failure() -> None:
    rust = 'use crate::error::Error;\n\npub fn f() -> Result<(), Error> {\n    Err(Error::new("empty"))\n}\n'
    assert _failed(rust, None) is False
    assert _failed("def f():\n    raise KeyError('not found')\n", None) is False
    # nor is Rust's path separator after "Error" on the first line (a read from the middle of a file)
    assert _failed('        return Err(Error::new("empty items"));\n    }\n', None) is False
    assert _failed("Error: ENOENT: no such file or directory", None) is True
