"""Example budgets for property tests: small in CI, scaled up by `make fuzz`."""

from __future__ import annotations

import os

SCALE = max(1, int(os.environ.get("TRAJPIPE_FUZZ_SCALE", "1")))


def examples(n: int) -> int:
    """``n`` examples in CI, ``n × TRAJPIPE_FUZZ_SCALE`` under `make fuzz`."""
    return n * SCALE
