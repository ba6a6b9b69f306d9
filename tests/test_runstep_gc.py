"""A run step pauses the cyclic garbage collector over its batch and always gives it back."""

from __future__ import annotations

import gc
from collections import Counter
from typing import Any

from pipeline.core.episode import ParseError
from pipeline.stages.base import RunStep
from tests.builders import CTX


class Probe(RunStep[int, list[Any]]):
    name = "parse"
    reasons = ("bad_shape",)
    seen: list[bool]

    def one(self, item: int, counters: Counter[str]) -> Any:
        self.seen.append(gc.isenabled())
        if item == 1:
            raise ParseError("bad_shape", "one")
        if item == 2:
            raise RuntimeError("a bug")
        return item

    def where(self, item: int) -> tuple[str, int | None, str]:
        return f"uid{item}", None, "d"


def test_the_collector_is_paused_per_run_and_back_on_after_drops_and_crashes() -> None:
    step = Probe(CTX)
    step.seen = []
    assert gc.isenabled()
    out = step([0, 1, 2, 3])
    assert gc.isenabled()
    assert step.seen == [False] * 4
    assert out.kept == [0, 3]
    assert sorted(out.dropped.get_column("reason").to_list()) == ["bad_shape", "crash"]


def test_a_collector_the_caller_disabled_stays_disabled() -> None:
    step = Probe(CTX)
    step.seen = []
    gc.disable()
    try:
        step([0])
        assert not gc.isenabled()
    finally:
        gc.enable()
