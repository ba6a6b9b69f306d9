"""Errors at their true stage: a bug is ``<stage>/crash`` with a truncated traceback, never lost."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import polars as pl
import pytest

import pipeline.convert
import pipeline.parsers
from pipeline.core.config import Config
from pipeline.orchestration.runner import run_pipeline
from pipeline.stages.base import TRACEBACK_LIMIT, Stage, StageOutput, crash_detail
from tests.builders import CTX
from tests.builders import ledger_batch as batch_of
from tests.corpus_kit import add_epoch, view_record


class Broken(Stage):
    name = "scrub"

    def process(self, batch: pl.DataFrame) -> StageOutput[pl.DataFrame]:
        return {}["no such key"]  # a bug


def test_a_bug_in_a_batch_step_drops_its_batch_as_stage_crash_with_the_traceback() -> None:
    out = Broken(CTX)(batch_of(3))
    assert out.kept.height == 0
    assert (
        out.dropped["stage"].to_list() == ["scrub"] * 3 and out.dropped["reason"].to_list() == ["crash"] * 3
    )
    detail = out.dropped["detail"][0]
    assert "Traceback" in detail and "KeyError: 'no such key'" in detail and "in process" in detail
    assert out.counters == Counter({"scrub/crash": 3})


def test_a_bug_in_the_global_step_is_raised_not_swallowed() -> None:
    class BrokenGlobal(Broken):
        is_global = True

    with pytest.raises(KeyError):
        BrokenGlobal(CTX)(batch_of(2))


def _run(tmp_path: Path, n: int = 3) -> pl.DataFrame:
    records = [
        view_record(
            f"r{i}",
            instance_id=f"pallets__flask.a1b2c3d4.func_pm_op_swap__k{i}",
            commands=[(f"grep -rn needle{'x' * i} /testbed", f"hit {'y' * i}\n")],
        )
        for i in range(n)
    ]
    add_epoch(tmp_path / "corpus", 1, [records])
    summary = run_pipeline(
        Config(affine=(str(tmp_path / "corpus"),), workdir=str(tmp_path / "w"), no_benchmarks=True, workers=1)
    )
    assert summary.stats["invariant"]["ok"]
    return pl.read_parquet(tmp_path / "w" / "ledger" / "drops.parquet")


def test_a_converter_bug_lands_as_convert_crash(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = pipeline.convert.convert_turns  # what the Convert step calls

    def buggy(ep, step_limit=250):
        if ep.meta.source_uid.endswith("#L2"):
            raise TypeError("unsupported operand type(s) for +: 'int' and 'str'")
        return real(ep, step_limit=step_limit)

    monkeypatch.setattr(pipeline.convert, "convert_turns", buggy)
    drops = _run(tmp_path)
    assert drops.select("stage", "reason").rows() == [("convert", "crash")]
    assert drops["source_uid"][0].endswith("#L2")
    assert "Traceback" in drops["detail"][0] and "in buggy" in drops["detail"][0]
    assert "TypeError: unsupported operand" in drops["detail"][0]


def test_a_parser_bug_lands_as_parse_crash(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = pipeline.parsers.PARSERS["view"]

    def buggy(raw):
        if raw.source_uid.endswith("#L1"):
            raise ZeroDivisionError("division by zero")
        return real(raw)

    monkeypatch.setitem(pipeline.parsers.PARSERS, "view", buggy)
    drops = _run(tmp_path)
    assert drops.select("stage", "reason").rows() == [("parse", "crash")]
    assert drops["source_uid"][0].endswith("#L1")
    assert "in buggy" in drops["detail"][0] and "ZeroDivisionError" in drops["detail"][0]


def test_a_malformed_record_is_still_parse_bad_shape(tmp_path: Path) -> None:
    bad = view_record("bad")
    bad["nodes"][1]["content"] = {"not": "text"}
    add_epoch(tmp_path / "corpus", 1, [[bad, view_record("good")]])
    run_pipeline(
        Config(affine=(str(tmp_path / "corpus"),), workdir=str(tmp_path / "w"), no_benchmarks=True, workers=1)
    )
    drops = pl.read_parquet(tmp_path / "w" / "ledger" / "drops.parquet")
    assert drops.select("stage", "reason").rows() == [("parse", "bad_shape")]


def test_a_crash_detail_keeps_the_innermost_frames_and_is_bounded() -> None:
    try:
        try:
            {}["k" * 5000]
        except KeyError as inner:
            raise ValueError("bottom") from inner
    except ValueError as exc:
        detail = crash_detail(exc)
    assert (
        len(detail) == TRACEBACK_LIMIT + 1
        and detail.startswith("…")
        and detail.endswith("ValueError: bottom")
    )
