"""Machines: which dataset a run belongs to, and the card's "Machine" sentence for it.

Albedo tells machines apart by source name, so each (origin, machine) is its own dataset.
"""

from __future__ import annotations

import re

# harness id -> (machine slug used in the dataset name, the card's Machine text)
MACHINES: dict[str, tuple[str, str]] = {
    "bash": ("bash", "Affine's bash-tool harness (each command runs in `bash -c`, off a terminal)"),
    "mini_swe_textbased": ("textbased", "mini-swe-agent's text-based loop (one ```bash block per turn, `subprocess.run` per command)"),
    "mini_swe": ("textbased", "mini-swe-agent's text-based loop (one ```bash block per turn, `subprocess.run` per command)"),
    "pi": ("pi", "pi-coding-agent over ACP (tools `read`, `bash`, `edit`, `write`)"),
    "claude_code": ("claude-code", "Claude Code over ACP (tools `Bash`, `Read`, `Edit`, `Write`, `Grep`, `Glob`, to-do tools)"),
    "kimi_code": ("kimi-code", "Kimi Code over ACP (shell and file tools, to-do tools)"),
    "hermes_agent": ("hermes", "Hermes agent (terminal and file tools, memory tools)"),
    "null": ("chat", "verifiers' plain chat agent with native tools over MCP, no container"),
    "openhands": ("openhands", "OpenHands CodeAct in non-function-calling mode (`execute_bash`, `str_replace_editor`, `think`, `finish`)"),
    "swe-agent": ("swe-agent", "SWE-agent (windowed file viewer and editor, bash)"),
    "swe-smith": ("swe-smith", "SWE-agent as used by SWE-smith (bash and `str_replace_editor`)"),
    "mini-swe-agent": ("mini-swe-agent", "mini-swe-agent (one ```bash block per turn)"),
}

ORIGIN_SLUGS: dict[str, str] = {
    "Affine corpus": "affine",
    "SWE-Lego": "swe-lego",
}


def machine_of(harness: str) -> str:
    """Machine slug for a harness id; unknown harnesses keep their own (slugified) name."""
    if harness in MACHINES:
        return MACHINES[harness][0]
    # any other value becomes a safe name part: [a-z0-9.-], starting alphanumeric, bounded
    slug = re.sub(r"[^a-z0-9.]+", "-", harness.lower()).strip("-.")[:48].strip("-.")
    return slug or "unknown"


def machine_text(harness: str) -> str:
    return MACHINES.get(harness, (harness, f"the `{harness}` harness"))[1]


def dataset_name(origin: str, harness: str) -> str:
    """``mini-coder-<origin>-<machine>``, e.g. ``mini-coder-affine-bash``."""
    origin_slug = ORIGIN_SLUGS.get(origin, origin.replace(" ", "-").replace("_", "-").lower())
    return f"mini-coder-{origin_slug}-{machine_of(harness)}"

# Task pool id (``affine_source``) -> the name the card's summary line uses.
POOL_NAMES: dict[str, str] = {
    "swesmith": "SWE-smith",
    "scaleswe": "ScaleSWE",
    "multiswe": "Multi-SWE-bench",
    "swerebench_v2": "SWE-rebench V2",
    "swerebench": "SWE-rebench",
    "r2e_gym": "R2E-Gym",
    "swelego": "SWE-Lego",
    "SWE-Lego": "SWE-Lego",
    "swebench": "SWE-bench",
}

# The card's License section per origin.
LICENSE_TEXTS: dict[str, str] = {
    "Affine corpus": (
        "**Not settled.** Affine publishes no license for its corpus (none on `data.affine.io` or in "
        "`AffineFoundation/affine`). The task records come from public datasets under their own terms."
    ),
    "SWE-Lego": (
        "**Not settled.** The trajectories come from the SWE-Lego dataset and keep its terms; check them "
        "before use. The task records come from public datasets under their own terms."
    ),
}


def pool_name(pool: str) -> str:
    return POOL_NAMES.get(pool, pool)


def license_text(origin: str) -> str:
    return LICENSE_TEXTS.get(
        origin,
        f"**Not settled.** The runs come from `{origin}` inputs under their own terms. The task records "
        "come from public datasets under their own terms.",
    )
