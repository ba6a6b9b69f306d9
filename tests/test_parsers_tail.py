"""Trailer removal reads only the tail of an output, and finds exactly what a whole-text search
finds: the window helpers are checked against plain ``re`` searches on hostile compositions of
the very notes they look for (chains, blank lines, long whitespace, notes inside the output)."""

from __future__ import annotations

import re
from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.convert import bash
from pipeline.convert.bash import split_exit_marker
from pipeline.convert.filetools import _claude_read_body
from pipeline.convert.views import _cat_n_body
from pipeline.parsers.dialects import strip_think
from pipeline.parsers.observations import OH_TRAILER_RE, SWEAGENT_FOOTER_RE, clean_observation
from pipeline.text.tails import rstripped_len, tail_search

PIECES = [
    "\n",
    "\n\n",
    " ",
    "\t",
    "\u00a0",
    " " * 70,
    "\n" * 70,
    "]",
    "[",
    "x",
    "12",
    "-3",
    ".",
    "bash-$",
    "(Open file: a.py)",
    "(Current directory: /r)",
    "[Current working directory: /w]",
    "[Python interpreter: /p]",
    "[Command finished with exit code 1]",
    "[The command completed with exit code 2.]",
    "[Command finished with exit code\n\n 7]",
    "[exit code: 3]",
    "Command exited with code 4",
    "Exit code 5\n",
    "     5\t",
    "  12\u2192",
    "\u2192",
    "<system-reminder>r</system-reminder>",
    "<think>",
    "</think>",
    "THOUGHT: ",
    "Your command ran successfully and did not produce any output.",
    "OBSERVATION:\n",
]
texts = st.lists(st.sampled_from(PIECES), max_size=40).map("".join)
FAST = settings(max_examples=300, deadline=None)
# OpenHands' trailer as specified: a chain of one-line notes, each led by at most one newline
# (OH_TRAILER_RE spells the first note's head out, for a faster search)
OH_TRAILER_SPEC = re.compile(
    r"(?:\n?\[(?:Current working directory: [^\n\]]*|Python interpreter: [^\n\]]*"
    r"|Command finished with exit code -?\d+)\])+\s*\Z"
)


def _span(m: re.Match[str] | None) -> tuple[int, int] | None:
    return m.span() if m else None


def _split_whole_text(obs: str) -> tuple[str, int | None]:
    """split_exit_marker as specified: each note searched for over the whole output."""

    def cut(o: str, m: re.Match[str]) -> str:
        head = o[: m.start()]
        return head + ("\n" if head and not head.endswith("\n") else "")

    rc = None
    m = bash._HEAD_EXIT.match(obs)
    if m:
        rc, obs = int(m.group(1)), obs[m.end() :]
    while True:
        if m := bash._TAIL_EXIT.search(obs):
            rc, obs = int(m.group(1) or m.group(2)), cut(obs, m)
        elif m := bash._EXIT_MARKER.search(obs):
            rc, obs = int(m.group(1)), cut(obs, m)
        elif m := bash._OH_TRAILERS.search(obs):
            obs = cut(obs, m)
        else:
            return obs, rc


@FAST
@given(texts)
def test_rstripped_len_is_the_length_without_trailing_whitespace(text: str) -> None:
    assert rstripped_len(text) == len(text.rstrip())


@FAST
@given(texts, st.integers(min_value=1, max_value=8))
def test_trailer_chain_tail_search_finds_what_a_whole_search_finds(text: str, lines: int) -> None:
    assert _span(tail_search(OH_TRAILER_RE, text, lines)) == _span(OH_TRAILER_SPEC.search(text))


@FAST
@given(texts)
def test_trailer_pattern_finds_what_the_chain_of_notes_finds(text: str) -> None:
    assert _span(OH_TRAILER_RE.search(text)) == _span(OH_TRAILER_SPEC.search(text))


def test_trailer_chain_longer_than_the_window_is_removed_whole() -> None:
    chain = "\n".join(f"[Current working directory: /w{i}]" for i in range(20))
    text = "output line\n" * 1000 + chain + "\n"
    m = tail_search(OH_TRAILER_RE, text, 8)
    assert m is not None and text[: m.start()] == "output line\n" * 999 + "output line"


@FAST
@given(texts)
def test_exit_notes_are_split_as_by_whole_text_searches(text: str) -> None:
    assert split_exit_marker(text) == _split_whole_text(text)


def test_exit_marker_digits_after_blank_lines_are_found() -> None:
    out = "x" * 5000 + "\n[Command finished with exit code\n\n\n 7]\n"
    assert split_exit_marker(out) == ("x" * 5000 + "\n", 7)


@FAST
@given(texts)
def test_observation_cleanup_matches_whole_text_trailer_searches(text: str) -> None:
    obs, _ = clean_observation(text, Counter())
    # the expected value, with every end-anchored search over the whole text
    expected = text
    if not re.match(r"\A\s*<returncode>", text):
        if m := re.match(r"\AEXECUTION RESULT of \[([^\]\n]{0,200})\]:\n?", expected):
            expected = expected[m.end() :]
        if m := OH_TRAILER_SPEC.search(expected):
            expected = expected[: m.start()]
        if m := re.match(r"\A(?:OBSERVATION:\n|Observation: ?)", expected):
            expected = expected[m.end() :]
        if m := SWEAGENT_FOOTER_RE.search(expected):
            expected = expected[: m.start()]
        if expected.strip() == "Your command ran successfully and did not produce any output.":
            expected = ""
        assert obs == expected


def test_sweagent_footer_is_removed_from_a_long_output() -> None:
    text = "line\n" * 2000 + "(Open file: /a.py)\n(Current directory: /testbed)\nbash-$ "
    assert clean_observation(text, Counter()) == ("line\n" * 1999 + "line", None)


@FAST
@given(texts)
def test_numbered_empty_tail_line_is_dropped_as_by_a_whole_text_substitution(text: str) -> None:
    assert _cat_n_body(text) == re.sub(r"(^|\n) *\d+\t\n?\Z", r"\1", text)


@FAST
@given(texts)
def test_claude_line_numbers_become_tabs_and_other_arrows_stay(text: str) -> None:
    body = re.sub(r"\s*<system-reminder>.*?</system-reminder>\s*", "\n", text, flags=re.S).rstrip("\n")
    body = re.sub(r"^( *\d+)\u2192", r"\1\t", body, flags=re.M)
    assert _claude_read_body(text) == (body + "\n" if body else "")


def test_claude_read_keeps_an_arrow_inside_a_line() -> None:
    assert _claude_read_body("     1\u2192a \u2192 b\n     2\u2192c\n") == "     1\ta \u2192 b\n     2\tc\n"


@FAST
@given(texts)
def test_thought_without_think_tags_is_only_unprefixed(text: str) -> None:
    if "<think>" not in text and "</think>" not in text:
        assert strip_think(text) == re.sub(r"\A\s*THOUGHT:\s*", "", text, flags=re.I).strip()


@FAST
@given(
    st.lists(
        st.sampled_from(["<tool_response>", "</tool_response>", "\n", "out", "\n\n", ""]), max_size=20
    ).map("".join)
)
def test_tool_responses_lose_exactly_one_newline_each_side(text: str) -> None:
    from pipeline.parsers.dialects import split_tool_responses

    bodies = re.findall(r"<tool_response>(.*?)</tool_response>", text, re.S)
    expected = [b[1:-1] if len(b) >= 2 and b[0] == b[-1] == "\n" else b for b in bodies]
    assert split_tool_responses(text) == (expected or None)
