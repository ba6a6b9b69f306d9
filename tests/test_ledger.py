"""The invariant is checked from independent records: what came in, what was published, what dropped."""

from __future__ import annotations

from collections import Counter

import polars as pl
import pytest

from pipeline.store.ledger import InvariantError, Stats, check_invariant, compute_stats
from pipeline.store.records import decode_ingested, encode_ingested
from schemas.run import DROPS, empty


def published(rows: list[tuple[str, str, int | None]]) -> pl.DataFrame:
    return pl.DataFrame(
        {"source_uid": [r[0] for r in rows], "dataset": [r[1] for r in rows], "epoch": [r[2] for r in rows]},
        schema={"source_uid": pl.Utf8, "dataset": pl.Utf8, "epoch": pl.Int32},
    )


def drops(rows: list[tuple[str, int | None, str, str, str]]) -> pl.DataFrame:
    if not rows:
        return empty(DROPS)
    return pl.DataFrame(
        [
            {"source_uid": u, "epoch": e, "dataset": d, "stage": s, "reason": r, "detail": ""}
            for u, e, d, s, r in rows
        ],
        schema=empty(DROPS).schema,
    )


def stats_for(ingested: dict[tuple[str, str], int], pub: pl.DataFrame, drp: pl.DataFrame) -> Stats:
    """Stats for runs ingested per ``(dataset, epoch)`` (dataset "" for quarantined input)."""
    return compute_stats(Counter(ingested), pub, drp, Counter(), benchmarks_checked=True, benchmark_tables=[])


def test_balanced_books_pass_per_total_dataset_and_epoch() -> None:
    pub = published([("a", "ds1", 1), ("b", "ds2", 2), ("c", "ds2", None)])
    drp = drops([("d", 1, "ds1", "validate", "roles"), ("e", 2, "", "quarantine", "bad_json")])
    stats = stats_for({("ds1", "1"): 2, ("ds2", "2"): 1, ("ds2", "none"): 1, ("", "2"): 1}, pub, drp)
    inv = stats["invariant"]
    assert inv["ok"], inv
    assert (inv["ingested"], inv["published"], inv["dropped"], inv["quarantined"]) == (5, 3, 1, 1)
    assert stats["ingested"]["by_epoch"] == {"1": 2, "2": 2, "none": 1}
    assert stats["converted"] == 4
    check_invariant(stats)


def test_a_run_lost_between_stages_fails_before_publishing() -> None:
    pub = published([("a", "ds1", 1)])
    stats = stats_for({("ds1", "1"): 2}, pub, drops([]))
    assert not stats["invariant"]["ok"]
    assert stats["invariant"]["datasets_off"] == {"ds1": {"ingested": 2, "published": 1, "dropped": 0}}
    with pytest.raises(InvariantError, match="ingested 2 != published 1"):
        check_invariant(stats)


def test_a_run_counted_under_the_wrong_epoch_is_caught() -> None:
    # totals and datasets balance, but epoch 1 ingested 2 and epoch 2 published one of them
    pub = published([("a", "ds1", 1), ("b", "ds1", 2)])
    stats = stats_for({("ds1", "1"): 2}, pub, drops([]))
    assert not stats["invariant"]["ok"]
    assert set(stats["invariant"]["epochs_off"]) == {"1", "2"}


def test_ingested_keys_round_trip_through_their_json_form() -> None:
    counts = Counter({("mini-coder-affine-bash", "84"): 3, ("", "none"): 1, ("a|b", "2"): 2})
    encoded = encode_ingested(counts)
    assert encoded == {"|none": 1, "a|b|2": 2, "mini-coder-affine-bash|84": 3}
    assert decode_ingested(encoded) == counts  # the epoch is what follows the last "|"
