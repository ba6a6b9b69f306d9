"""The ledger's steps, declared once (docs/ARCHITECTURE.md "Steps").

``STEPS`` is read by the per-unit work (``pipeline.orchestration.process.process_unit``), by ``trajpipe convert``
(``pipeline.orchestration.convert_files``, which skips the corpus-level steps) and by the driver (the
global steps); the ledger's stage order (``pipeline.core.stages.STAGE_ORDER``) names the same steps
in the same order. Every step follows the contract of :class:`pipeline.stages.base.Step`.

The step classes are imported when ``STEPS`` (or ``UNIT_STEPS``, ``GLOBAL_STEPS``) is first read:
the driver needs only the stage order and the global step, and importing every step (the leak
scanners compile kernels) would add a second to its start-up.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from pipeline.core.stages import STAGE_ORDER
from pipeline.stages.base import Step

if TYPE_CHECKING:
    STEPS: tuple[type[Step[Any, Any]], ...]
    UNIT_STEPS: tuple[type[Step[Any, Any]], ...]
    GLOBAL_STEPS: tuple[type[Step[Any, Any]], ...]


# In ledger order: a run is dropped once, by the first step that drops it. The steps run per unit
# by an executor come first, then the global ones the driver runs once over every new run; each
# group is imported on its own first use (the driver needs only the global one).
_UNIT_STEPS: tuple[tuple[str, str], ...] = (
    ("pipeline.stages.quarantine", "Quarantine"),
    ("pipeline.stages.parse", "Parse"),
    ("pipeline.stages.convert", "Convert"),
    ("pipeline.stages.verify", "Verify"),
    ("pipeline.stages.task_dedup", "TaskDedup"),
    ("pipeline.stages.leaks", "SolutionLeak"),
    ("pipeline.stages.leaks", "BenchmarkLeak"),
    ("pipeline.stages.scrub", "Scrub"),
    ("pipeline.stages.validate", "Validate"),
)
_GLOBAL_STEPS: tuple[tuple[str, str], ...] = (("pipeline.stages.traj_dedup", "TrajDedup"),)


def _load(declared: tuple[tuple[str, str], ...]) -> tuple[type[Step[Any, Any]], ...]:
    return tuple(getattr(importlib.import_module(module), cls) for module, cls in declared)


def __getattr__(name: str) -> Any:
    if name == "UNIT_STEPS":
        value = _load(_UNIT_STEPS)
    elif name == "GLOBAL_STEPS":
        value = _load(_GLOBAL_STEPS)
    elif name == "STEPS":
        value = __getattr__("UNIT_STEPS") + __getattr__("GLOBAL_STEPS")
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


__all__ = ["GLOBAL_STEPS", "STAGE_ORDER", "STEPS", "UNIT_STEPS"]
