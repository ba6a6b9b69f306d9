"""The compiled byte tokeniser gives the tokens of the regex specification on any text (speed
only): TOKEN_PATTERN over the fully normalised action stream, token_hash per token."""

from __future__ import annotations

import numpy as np
import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.dedup import keys
from pipeline.dedup.keys import TOKEN_PATTERN, action_stream, token_hash, token_hashes_flat


def spec(commands: list[list[str]]) -> list[list[int]]:
    frame = pl.DataFrame({"c": commands}, schema={"c": pl.List(pl.Utf8)})
    tokens = frame.select(action_stream(pl.col("c")).str.extract_all(TOKEN_PATTERN)).to_series().to_list()
    return [[token_hash(t.encode()) for t in run or []] for run in tokens]


def tokenised(commands: list[list[str]], threads: int = 1) -> list[list[int]]:
    pre = pl.DataFrame({"c": commands}, schema={"c": pl.List(pl.Utf8)}).select(keys._premask(pl.col("c")))
    flat, counts = token_hashes_flat(pre.to_series(), threads=threads)
    off = np.concatenate([[0], np.cumsum(counts)])
    return [flat[off[i] : off[i + 1]].tolist() for i in range(len(commands))]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.text(max_size=60), max_size=4), min_size=1, max_size=8))
def test_tokens_of_any_text_are_those_of_the_regex_specification(commands: list[list[str]]) -> None:
    assert tokenised(commands) == spec(commands)


def test_long_tokens_hex_words_and_words_around_non_ascii() -> None:
    commands = [["x" * 37 + " deadbeef0 dead_beef0 0xff é12ab ab12é é_a9 9é " + "中" * 9], [], [""]]
    assert tokenised(commands, threads=2) == spec(commands)
