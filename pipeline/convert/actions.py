"""What converting one tool call gives (an :class:`Action`), the state a run's calls share, and
whether a call failed (its return code, else the failure words its output starts with)."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from pipeline.convert.sweagent_window import (
    WindowState,
)

_FAIL_HINTS = (
    "No replacement was performed",
    "did not appear verbatim",
    "Multiple occurrences",
    "ERROR:",
    "Error:",
    "not found",
    "must appear exactly once",
    "Invalid",
    "does not exist",
    "String to replace not found",
    "Found 0 matches",
)


@dataclass
class Action:
    kind: str  # "run" | "fold" | "remove" | "submit"
    command: str = ""
    output: str = ""
    returncode: int | None = None
    text: str = ""  # fold: the thought text; submit: a final message to fold into the thought


@dataclass
class ToolState:
    """What a converter must remember across calls of one run."""

    counters: Counter[str] = field(default_factory=Counter)
    window: WindowState = field(init=False)  # SWE-agent's open file and displayed lines

    def __post_init__(self) -> None:
        self.window = WindowState(counters=self.counters)


def _s(args: dict[str, Any], *names: str, default: str | None = None) -> str | None:
    for n in names:
        v = args.get(n)
        if v is not None:
            return v if isinstance(v, str) else str(v)
    return default


def _truthy(x: Any) -> bool:
    return str(x).strip().lower() in ("true", "1", "yes")


# "Error:" ends a word of the message ("Error: File not found", "ERROR:\n…"), never a path of
# Rust or C++ (``Error::new``, ``std::Error::``): a hint ending in ":" is one only when no ":" follows
_FAIL_HINT = re.compile("|".join(re.escape(h) + ("(?!:)" if h.endswith(":") else "") for h in _FAIL_HINTS))
# the whitespace str.lstrip() strips (re's \s is str.isspace, as lstrip's is)
_LEADING_SPACE = re.compile(r"\s*")


def _failed(obs: str, rc: int | None) -> bool:
    if rc is not None:
        return rc != 0
    # a hint on the output's first line (after the leading whitespace; at most 300 characters of
    # it): a harness reports a failure as its whole output, error first, while a file a read tool
    # prints may hold a hint anywhere (Rust's ``Err(Error::new(…))``, a comment's "not found").
    # Searched in place, without copying the text (a view's lines start with spaces).
    m = _LEADING_SPACE.match(obs)
    start = m.end() if m else 0
    end = obs.find("\n", start, start + 300)
    return _FAIL_HINT.search(obs, start, start + 300 if end < 0 else end) is not None
