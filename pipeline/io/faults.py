"""Crash points for the crash-safety tests: ``TRAJPIPE_CRASH_AT=<point>[:<n>]`` makes the
process SIGKILL itself at the n-th time it reaches ``<point>`` (a real kill, no cleanup)."""

from __future__ import annotations

import os
import signal
from collections import Counter

_hits: Counter[str] = Counter()  # per-process hit counts; only read when the variable is set


def crashpoint(name: str) -> None:
    spec = os.environ.get("TRAJPIPE_CRASH_AT")
    if not spec:
        return
    point, _, nth = spec.partition(":")
    if point != name:
        return
    _hits[name] += 1
    if _hits[name] >= int(nth or 1):
        os.kill(os.getpid(), signal.SIGKILL)
