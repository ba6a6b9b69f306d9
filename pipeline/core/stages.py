"""The ledger's stage names and their order: the ground floor's, so the store and the ledger read
them without importing a step."""

from __future__ import annotations

from typing import Literal, get_args

# The ledger's stages, in ledger order. ``pipeline.stages.STEPS`` declares one step per name
# (tests/test_steps.py checks that the two agree).
StageName = Literal[
    "quarantine",
    "parse",
    "convert",
    "verify",
    "task_dedup",
    "solution_leak",
    "benchmark_leak",
    "scrub",
    "validate",
    "traj_dedup",
]

# The ledger's stage order: StageName's, which STEPS declares in the same order.
STAGE_ORDER: tuple[StageName, ...] = get_args(StageName)
