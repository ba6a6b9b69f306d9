"""Per-step accounting: every step of a unit is booked in wall and in CPU seconds, and a step that
waits is booked wall time but next to no CPU (what makes the CPU table robust to a loaded machine)."""

from __future__ import annotations

import time
from pathlib import Path

from pipeline.core.config import Config
from pipeline.orchestration.process import StepTimes
from pipeline.orchestration.runner import run_pipeline
from tests.builders import distinct
from tests.corpus_kit import add_epoch


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_waiting_step_is_booked_wall_time_and_a_busy_step_cpu_time() -> None:
    wall, cpu = Clock(), Clock()
    times = StepTimes(wall, cpu)
    wall.now += 1.0  # reading the input before the first step
    cpu.now += 0.5
    with times.step("wait"):
        wall.now += 0.25
    with times.step("busy"):
        wall.now += 0.5
        cpu.now += 0.5
    with times.step("wait"):  # steps are summed over batches
        wall.now += 0.125
        cpu.now += 0.0625
    times.rest("read")  # (binary fractions: the sums are exact)
    assert dict(times.wall) == {"wait": 0.375, "busy": 0.5, "read": 1.0}
    assert dict(times.cpu) == {"wait": 0.0625, "busy": 0.5, "read": 0.5}


def test_the_default_clocks_are_the_process_wall_and_cpu_clocks() -> None:
    times = StepTimes()
    with times.step("busy"):
        end = time.process_time() + 0.02
        while time.process_time() < end:
            pass
    times.rest("read")
    assert set(times.wall) == set(times.cpu) == {"busy", "read"}
    # the loop ran until the process clock moved 0.02 s (wall may be less: the process clock counts
    # every thread)
    assert times.cpu["busy"] >= 0.02 and times.wall["busy"] > 0


def test_a_run_reports_wall_and_cpu_seconds_for_the_same_steps_and_phases(tmp_path: Path) -> None:
    add_epoch(tmp_path / "c", 1, [[distinct(i) for i in range(4)], [distinct(i) for i in range(4, 6)]])
    summary = run_pipeline(
        Config(affine=(str(tmp_path / "c"),), workdir=str(tmp_path / "w"), no_benchmarks=True, workers=1)
    )
    steps = {k for k in summary.seconds if k.startswith("unit/")}
    assert {"unit/parse", "unit/convert", "unit/validate", "unit/write", "unit/read"} <= steps
    assert set(summary.cpu_seconds) == set(summary.seconds)
    assert {"list", "units", "dedup", "publish"} <= set(summary.cpu_seconds)
    assert all(v >= 0.0 for v in summary.cpu_seconds.values())
    # two units' CPU is booked: the per-unit CPU cannot be zero when two units were converted
    assert sum(v for k, v in summary.cpu_seconds.items() if k.startswith("unit/")) > 0.0
