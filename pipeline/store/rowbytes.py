"""A row's publishing size: what the shard writer sizes shards by and the held store keeps per row."""

from __future__ import annotations

import polars as pl
import pyarrow as pa

from schemas.run import PUBLISHED

# the column of the held store's index holding a precomputed row_bytes_expr
ROW_BYTES = "__bytes"


def row_bytes_expr() -> pl.Expr:
    """Approximate uncompressed Arrow size of a row: string bytes plus offsets and fixed widths."""
    string_cols = [n for n, t in zip(PUBLISHED.names, PUBLISHED.types, strict=True) if pa.types.is_string(t)]
    fixed = 4 * len(string_cols) + 2 + 4  # string offsets, two bools, the list offset
    size = pl.sum_horizontal(pl.col(c).str.len_bytes().fill_null(0) for c in string_cols)
    msgs = (
        pl.col("messages")
        .list.eval(
            pl.element().struct.field("content").str.len_bytes().fill_null(0)
            + pl.element().struct.field("role").str.len_bytes().fill_null(0)
            + 8
        )
        .list.sum()
        .fill_null(0)
    )
    return (size + msgs + fixed).cast(pl.Int64)
