"""The benchmark index's fast helpers equal the plain forms they replaced (speed only):
``diff_side``'s whitespace collapsing, ``patch_paths`` and ``sorted_unique``."""

from __future__ import annotations

import re
import sys

import numpy as np
import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.leaks.benchmark import patch_paths
from pipeline.leaks.ngrams import sorted_unique
from pipeline.leaks.text import (
    _PY_QUOTE_HEAD,
    _PY_QUOTE_TAIL,
    WS,
    WS_RUN_RS,
    diff_side,
    distinctive,
    norm_lines_expr,
)

# every character Python calls whitespace, the line breaks ``splitlines`` knows, and diff markers
SPACES = [chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace()]
PIECES = [
    *SPACES,
    "+",
    "-",
    "+++ b/",
    "--- a/",
    "\n",
    "x",
    "return",
    "import os",
    "a_long_identifier(1)",
    "é",
]


def diff_side_reference(patch: str, sign: str) -> list[str]:
    """``diff_side`` as it was: the regex whitespace collapse and ``distinctive``."""
    out: list[str] = []
    for raw in patch.splitlines():
        if raw.startswith(sign) and not raw.startswith(sign * 3):
            n = WS.sub(" ", raw[1:]).strip()
            if distinctive(n):
                out.append(n)
    return list(dict.fromkeys(out))


def test_str_split_and_the_regex_agree_on_every_whitespace_character() -> None:
    for c in [*SPACES, "\x1c", "\x85", "\u200b", "\u180e", "\ufeff"]:
        text = f"{c}a{c}{c}b{c}"
        assert " ".join(text.split()) == WS.sub(" ", text).strip(), hex(ord(c))


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=60), st.sampled_from("+-"))
def test_diff_side_equals_the_regex_form(pieces: list[str], sign: str) -> None:
    patch = "".join(pieces)
    assert diff_side(patch, sign) == diff_side_reference(patch, sign)


@settings(max_examples=400, deadline=None)
@given(
    st.lists(
        st.sampled_from(["+++ b/", "+++ a/", "\n", "\r\n", " ", "\t", "src/x.py", "+", "b/"]), max_size=40
    )
)
def test_patch_paths_equals_the_multiline_regex(pieces: list[str]) -> None:
    patch = "".join(pieces)
    assert patch_paths(patch) == re.findall(r"(?m)^\+\+\+ b/(\S+)", patch)


def test_patch_paths_of_a_real_patch() -> None:
    patch = "diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x\n+y\n+++ b/not/a/header\n"
    assert patch_paths(patch) == ["a.py", "not/a/header"]
    assert patch_paths("+++ b/first.py\n") == ["first.py"]
    assert patch_paths("") == []


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=2**64 - 1), max_size=50))
def test_sorted_unique_equals_np_unique(values: list[int]) -> None:
    a = np.array(values, dtype=np.uint64)
    got = sorted_unique(a)
    assert got.dtype == np.uint64
    assert np.array_equal(got, np.unique(a))


def norm_lines_reference(x: pl.Expr) -> pl.Expr:
    """``norm_lines_expr`` as it was: every whitespace run replaced, single spaces included."""
    return (
        x.str.replace(r"^(?:\S+?:\d+[:-]|\s*\d+\t)?\s*[+-]?", "")
        .str.replace_all(r"\s+", " ")
        .str.strip_chars()
        .str.replace(_PY_QUOTE_HEAD, "")
        .str.replace(_PY_QUOTE_TAIL, "")
        .str.strip_chars()
    )


@settings(max_examples=400, deadline=None)
@given(
    st.lists(
        st.lists(st.sampled_from([*PIECES, "\x1c", "  ", " \t ", "a.py:12:", "  3\t", '"""']), max_size=30)
    )
)
def test_whitespace_runs_collapse_as_with_the_plain_pattern(lines: list[list[str]]) -> None:
    frame = pl.DataFrame({"x": ["".join(p) for p in lines]}, schema={"x": pl.Utf8})
    plain = frame.select(pl.col("x").str.replace_all(r"\s+", " "))["x"]
    assert frame.select(pl.col("x").str.replace_all(WS_RUN_RS, " "))["x"].equals(plain)
    assert frame.select(norm_lines_expr(pl.col("x")))["x"].equals(
        frame.select(norm_lines_reference(pl.col("x")))["x"]
    )
