"""The step contract: one declared list of steps, one base, errors recorded at their true stage."""

from __future__ import annotations

from collections import Counter
from typing import get_args

import polars as pl

from pipeline.stages import GLOBAL_STEPS, STAGE_ORDER, STEPS, UNIT_STEPS
from pipeline.stages.base import Stage, StageName, StageOutput
from pipeline.store.ledger import sorted_drops
from schemas.run import WORK, empty
from tests.builders import CTX
from tests.builders import ledger_batch as batch_of


def test_the_declared_steps_are_the_ledger_stages_in_order() -> None:
    assert tuple(s.name for s in STEPS) == get_args(StageName) == STAGE_ORDER
    assert [s.name for s in GLOBAL_STEPS] == ["traj_dedup"]
    assert STEPS[:-1] == UNIT_STEPS
    for step in STEPS:
        assert len(set(step.reasons)) == len(step.reasons), step.name
        if step.name != "scrub":  # scrub rewrites, it never drops
            assert step.reasons, f"{step.name} declares no reasons"


def test_ledger_sorts_drops_in_the_declared_step_order() -> None:
    rows = [
        {"source_uid": f"u{i}", "epoch": 1, "dataset": "d", "stage": s, "reason": "r", "detail": ""}
        for i, s in enumerate(reversed(STAGE_ORDER))
    ]
    frame = pl.DataFrame(
        rows,
        schema=empty(WORK).select("source_uid", "epoch", "dataset").schema
        | {"stage": pl.Utf8, "reason": pl.Utf8, "detail": pl.Utf8},
    )
    assert tuple(sorted_drops(frame)["stage"]) == STAGE_ORDER


class Halves(Stage):
    """Drops every other row as ``odd``; counts with relative keys."""

    name = "validate"
    reasons = ("odd",)

    def process(self, batch: pl.DataFrame) -> StageOutput[pl.DataFrame]:
        calls.append(batch.height)
        out = self.split(batch, pl.Series([i % 2 == 1 for i in range(batch.height)]), "odd")
        out.counters["looked"] += batch.height
        return out


calls: list[int] = []


def test_the_base_guards_empty_batches_and_prefixes_counters_with_the_stage() -> None:
    calls.clear()
    out = Halves(CTX)(batch_of(0))
    assert calls == [] and out.kept.height == 0 and out.dropped.height == 0 and not out.counters
    out = Halves(CTX)(batch_of(4))
    assert out.kept["source_uid"].to_list() == ["u0", "u2"]
    assert out.dropped.select("source_uid", "stage", "reason").rows() == [
        ("u1", "validate", "odd"),
        ("u3", "validate", "odd"),
    ]
    assert out.counters == Counter({"validate/odd": 2, "validate/looked": 4})
