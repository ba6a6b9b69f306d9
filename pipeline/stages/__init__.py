"""The ledger's steps, declared once (docs/ARCHITECTURE.md "Steps").

``STEPS`` is read by the per-unit work (``pipeline.orchestration.process.process_unit``), by ``trajpipe convert``
(``pipeline.orchestration.convert_files``, which skips the corpus-level steps) and by the ledger's stage order
(``STAGE_ORDER``). Every step follows the contract of :class:`pipeline.stages.base.Step`.
"""

from __future__ import annotations

from typing import Any

from pipeline.stages.base import StageName, Step
from pipeline.stages.convert import Convert
from pipeline.stages.leaks import BenchmarkLeak, SolutionLeak
from pipeline.stages.parse import Parse
from pipeline.stages.quarantine import Quarantine
from pipeline.stages.scrub import Scrub
from pipeline.stages.task_dedup import TaskDedup
from pipeline.stages.traj_dedup import TrajDedup
from pipeline.stages.validate import Validate

# In ledger order: a run is dropped once, by the first step that drops it.
STEPS: tuple[type[Step[Any, Any]], ...] = (
    Quarantine,
    Parse,
    Convert,
    TaskDedup,
    SolutionLeak,
    BenchmarkLeak,
    Scrub,
    Validate,
    TrajDedup,
)

STAGE_ORDER: tuple[StageName, ...] = tuple(s.name for s in STEPS)

# the steps run per unit by an executor, and the global ones run once by the driver
UNIT_STEPS = tuple(s for s in STEPS if not s.is_global)
GLOBAL_STEPS = tuple(s for s in STEPS if s.is_global)

__all__ = ["GLOBAL_STEPS", "STAGE_ORDER", "STEPS", "UNIT_STEPS"]
