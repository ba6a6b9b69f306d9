"""The exact hash read from the column's UTF-8 buffer is the sha256 of each string (speed only)."""

from __future__ import annotations

import hashlib

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.dedup.keys import _sha256_hex


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.none(), st.text(max_size=300)), max_size=30))
def test_exact_hash_is_the_sha256_of_each_string(texts: list[str | None]) -> None:
    got = _sha256_hex(pl.Series("c", texts, dtype=pl.Utf8)).to_list()
    assert got == [hashlib.sha256((t or "").encode()).hexdigest() for t in texts]


def test_exact_hash_of_a_sliced_column_hashes_its_own_strings() -> None:
    col = pl.Series("c", ["a", "bé", None, "ccc"], dtype=pl.Utf8)[1:]
    assert _sha256_hex(col).to_list() == [hashlib.sha256(t.encode()).hexdigest() for t in ["bé", "", "ccc"]]


def test_exact_hash_of_long_strings_and_of_a_column_in_chunks() -> None:
    texts = ["x" * 13, "y" * 12, "é" * 100_000, "", "z" * 3_000_000]
    col = pl.concat([pl.Series("c", texts[:2]), pl.Series("c", [None, *texts[2:]])], rechunk=False)
    want = [hashlib.sha256(t.encode()).hexdigest() for t in [*texts[:2], "", *texts[2:]]]
    assert _sha256_hex(col).to_list() == want
