"""The step contract: one declared list of steps, one base, errors recorded at their true stage."""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path
from typing import get_args

import polars as pl

from pipeline.core.episode import PipelineDrop
from pipeline.core.stages import StageName
from pipeline.stages import GLOBAL_STEPS, STAGE_ORDER, STEPS, UNIT_STEPS
from pipeline.stages.base import RunStep, Stage, StageOutput
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


class Misnamed(Stage):
    """Drops its first row for a reason it does not declare."""

    name = "validate"
    reasons = ("odd",)

    def process(self, batch: pl.DataFrame) -> StageOutput[pl.DataFrame]:
        return self.split(batch, pl.Series([i == 0 for i in range(batch.height)]), "even")


def test_a_drop_for_an_undeclared_reason_crashes_the_batch() -> None:
    out = Misnamed(CTX)(batch_of(3))
    assert out.kept.height == 0
    assert set(out.dropped["reason"]) == {"crash"} and out.dropped.height == 3
    assert "undeclared reasons ['even']" in out.dropped["detail"][0]
    assert out.counters == Counter({"validate/crash": 3})


class OneByOne(RunStep[str, list[str]]):
    """Drops "bad" runs as ``bad`` (declared) and "worse" ones as ``worse`` (not declared)."""

    name = "parse"
    reasons = ("bad",)

    def one(self, item: str, counters: Counter[str]) -> str:
        if item in ("bad", "worse"):
            raise PipelineDrop(self.name, item, "because")
        return item

    def where(self, item: str) -> tuple[str, int | None, str]:
        return item, 1, "d"


def test_a_run_dropped_for_an_undeclared_reason_is_a_crash_and_the_others_go_on() -> None:
    out = OneByOne(CTX)(["ok", "bad", "worse"])
    assert out.kept == ["ok"]
    assert out.dropped.select("source_uid", "reason", "detail").rows() == [
        ("bad", "bad", "because"),
        ("worse", "crash", "undeclared reason 'worse': because"),
    ]


def _raised_reasons(error: str) -> set[str]:
    """Every literal reason the package raises ``error`` with (``ParseError("no_task", ...)``)."""
    found: set[str] = set()
    for path in (Path(__file__).resolve().parents[1] / "pipeline").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == error
                and node.args
                and isinstance(node.args[0], ast.Constant)
            ):
                found.add(str(node.args[0].value))
    return found


def test_parse_and_convert_declare_every_reason_their_code_raises() -> None:
    steps = {s.name: s for s in STEPS}
    parse, convert = _raised_reasons("ParseError"), _raised_reasons("ConvertError")
    assert "no_task" in parse and "unknown_tool" in convert  # the scan sees the raises
    assert parse <= steps["parse"].vocabulary(), sorted(parse - steps["parse"].vocabulary())
    assert convert <= steps["convert"].vocabulary(), sorted(convert - steps["convert"].vocabulary())
