"""The working directory an agent harness declares to its model: the run's checkout root.

Interactive agents tell the model where it works in their system prompt's environment block
(Claude Code ``Working directory: /Users/me/proj``, pi ``Current working directory: /home/me/app``,
Kimi ``The current working directory is `/work/x```). Where a run's record has no ``cwd``
field (Affine's trace envelopes of these harnesses), that line is the root, whatever its form.
"""

from __future__ import annotations

import re

from pipeline.parsers.messages import Msg

_DECLARED = re.compile(
    r"^[ \t]*(?:Primary working directory|Current working directory|Working directory)[ \t]*:[ \t]*"
    r"`?(/[^\s`]*)`?[ \t]*$"
    r"|current working directory is `?(/[^\s`]+?)`?[.,]?(?:\s|$)",
    re.M | re.I,
)


def declared_workdir(msgs: list[Msg]) -> str | None:
    """The absolute working directory a system message declares (the first one), or None;
    ``/`` is no checkout."""
    for m in msgs:
        if m.role != "system":
            continue
        found = _DECLARED.search(m.text)
        if found:
            root = (found.group(1) or found.group(2) or "").rstrip("/")
            return root or None
    return None
