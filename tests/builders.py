"""Builders shared by the tests (test modules import from here, never from each other)."""

from __future__ import annotations

import polars as pl

from pipeline.config import Config
from pipeline.context import Context

# a context with no reference tables (what `trajpipe convert` and most stage tests use)
CTX = Context(Config(no_benchmarks=True), benchmarks=None, catalog_tasks=None)


def ledger_batch(n: int, epoch: int = 3, dataset: str = "d") -> pl.DataFrame:
    """``n`` runs with just the columns a ledger row needs (source_uid u0…, epoch, dataset)."""
    return pl.DataFrame({"source_uid": [f"u{i}" for i in range(n)], "epoch": [epoch] * n, "dataset": [dataset] * n},
                        schema={"source_uid": pl.Utf8, "epoch": pl.Int32, "dataset": pl.Utf8})
