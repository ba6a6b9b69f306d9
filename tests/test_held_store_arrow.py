"""The kept rows' Arrow table is the one polars' own conversion gives (speed only)."""

from __future__ import annotations

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.store.unitfiles import arrow_table

texts = st.one_of(st.none(), st.text(max_size=40))
messages = st.lists(st.fixed_dictionaries({"role": texts, "content": texts}), max_size=4)


def frame_of(
    rows: list[tuple[str | None, list[dict[str, str | None]] | None, bool | None, int | None]],
) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "source_uid": [r[0] for r in rows],
            "messages": [r[1] for r in rows],
            "verified": [r[2] for r in rows],
            "epoch": [r[3] for r in rows],
            "minhash": [[i, 2 * i] for i in range(len(rows))],
        },
        schema={
            "source_uid": pl.Utf8,
            "messages": pl.List(pl.Struct({"role": pl.Utf8, "content": pl.Utf8})),
            "verified": pl.Boolean,
            "epoch": pl.Int32,
            "minhash": pl.List(pl.UInt32),
        },
    )


def same_table(frame: pl.DataFrame) -> None:
    want, got = frame.to_arrow(), arrow_table(frame)
    assert got.schema == want.schema
    assert got.equals(want)
    assert [c.num_chunks for c in got.columns] == [c.num_chunks for c in want.columns]


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(
            texts,
            st.one_of(st.none(), messages),
            st.one_of(st.none(), st.booleans()),
            st.one_of(st.none(), st.integers(-(2**31), 2**31 - 1)),
        ),
        max_size=20,
    )
)
def test_arrow_table_is_polars_conversion(
    rows: list[tuple[str | None, list[dict[str, str | None]] | None, bool | None, int | None]],
) -> None:
    frame = frame_of(rows)
    same_table(frame)
    same_table(frame[1:])  # a slice, as a dataset's part of a sorted frame may be


def test_arrow_table_of_an_empty_frame_and_long_strings() -> None:
    same_table(frame_of([]))
    same_table(frame_of([("x" * 100_000, [{"role": "user", "content": "é" * 70_000}], True, 1)] * 3))
