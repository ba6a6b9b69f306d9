"""Start-up cost: what a worker or the CLI imports before it does any work."""

from __future__ import annotations

import subprocess
import sys


def test_the_cli_and_the_per_unit_code_import_no_pandas() -> None:
    """pandas costs ~0.4 CPU-s per process and trajpipe never uses it; it is installed here only as a
    dependency of the dev extra's `datasets`. (pyarrow itself imports it, when installed, to check
    whether an input is a pandas object: that cost is pyarrow's, not ours, and a runtime install has
    no pandas.)"""
    code = (
        "import sys\n"
        "import pipeline.cli, pipeline.orchestration.process, pipeline.orchestration.runner\n"
        "from schemas.run import DROPS, PUBLISHED, WORK, empty\n"
        "for s in (DROPS, PUBLISHED, WORK):\n"
        "    empty(s)\n"
        "print('pandas' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_the_driver_imports_no_step_until_it_needs_one() -> None:
    """The driver's start-up is serial wall time: importing it loads no per-unit step (the leak
    scanners pull in numba, ~0.4 CPU-s), and the stage order it needs comes without them; the
    steps are imported on first use of STEPS, in the declared order."""
    code = (
        "import sys\n"
        "import pipeline.orchestration.runner\n"
        "from pipeline.stages import STAGE_ORDER\n"
        "print(sorted(m for m in sys.modules if m == 'numba' or m.startswith('pipeline.stages.')))\n"
        "from pipeline.stages import STEPS, UNIT_STEPS, GLOBAL_STEPS\n"
        "assert tuple(s.name for s in STEPS) == STAGE_ORDER\n"
        "assert UNIT_STEPS + GLOBAL_STEPS == STEPS\n"
        "print('pipeline.stages.leaks' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    first, second = out.stdout.strip().splitlines()
    # the contract, the context and the WORK row builder, and the one step the driver runs itself
    assert first == (
        "['pipeline.stages.base', 'pipeline.stages.context', 'pipeline.stages.quarantine', 'pipeline.stages.rows']"
    )
    assert second == "True"
