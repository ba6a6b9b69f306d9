"""The ledger's steps, declared once (docs/ARCHITECTURE.md "Steps").

``STEPS`` is read by the per-unit work (``pipeline.orchestration.process.process_unit``), by ``trajpipe convert``
(``pipeline.orchestration.convert_files``, which skips the corpus-level steps) and by the ledger's stage order
(``STAGE_ORDER``). Every step follows the contract of :class:`pipeline.stages.base.Step`.

The step classes are imported when ``STEPS`` (or ``UNIT_STEPS``, ``GLOBAL_STEPS``) is first read:
the driver needs only the stage order, and importing every step (the leak scanners compile
kernels) would add a second to its start-up.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pipeline.core.stages import STAGE_ORDER
from pipeline.stages.base import Step

if TYPE_CHECKING:
    STEPS: tuple[type[Step[Any, Any]], ...]
    UNIT_STEPS: tuple[type[Step[Any, Any]], ...]
    GLOBAL_STEPS: tuple[type[Step[Any, Any]], ...]


def _declare() -> dict[str, tuple[type[Step[Any, Any]], ...]]:
    from pipeline.stages.convert import Convert
    from pipeline.stages.leaks import BenchmarkLeak, SolutionLeak
    from pipeline.stages.parse import Parse
    from pipeline.stages.quarantine import Quarantine
    from pipeline.stages.scrub import Scrub
    from pipeline.stages.task_dedup import TaskDedup
    from pipeline.stages.traj_dedup import TrajDedup
    from pipeline.stages.validate import Validate
    from pipeline.stages.verify import Verify

    # In ledger order: a run is dropped once, by the first step that drops it.
    steps: tuple[type[Step[Any, Any]], ...] = (
        Quarantine,
        Parse,
        Convert,
        Verify,
        TaskDedup,
        SolutionLeak,
        BenchmarkLeak,
        Scrub,
        Validate,
        TrajDedup,
    )
    # the steps run per unit by an executor, and the global ones run once by the driver
    return {
        "STEPS": steps,
        "UNIT_STEPS": tuple(s for s in steps if not s.is_global),
        "GLOBAL_STEPS": tuple(s for s in steps if s.is_global),
    }


def __getattr__(name: str) -> Any:
    if name in ("STEPS", "UNIT_STEPS", "GLOBAL_STEPS"):
        globals().update(_declare())
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["GLOBAL_STEPS", "STAGE_ORDER", "STEPS", "UNIT_STEPS"]
