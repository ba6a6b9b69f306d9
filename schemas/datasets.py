"""Dataset names and the card's per-origin texts (pool names, licenses).

Albedo tells machines apart by source name, so each (origin, machine) is its own dataset. Which
machine a harness is comes with its input format (``pipeline/parsers/*.py`` ``FORMAT.machines``).
"""

from __future__ import annotations

ORIGIN_SLUGS: dict[str, str] = {
    "Affine corpus": "affine",
    "SWE-Lego": "swe-lego",
}


def dataset_name(origin: str, machine: str) -> str:
    """``mini-coder-<origin>-<machine>``, e.g. ``mini-coder-affine-bash`` (the machine slug of a
    harness comes from its input format: ``pipeline.parsers.machine_of``)."""
    origin_slug = ORIGIN_SLUGS.get(origin, origin.replace(" ", "-").replace("_", "-").lower())
    return f"mini-coder-{origin_slug}-{machine}"


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
