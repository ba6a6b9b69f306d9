"""One home per concept: the mini-swe-agent format constants and the hashing constants."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from pipeline.dedup.hashing import fmix32, fmix64
from schemas import miniswe

ROOT = Path(__file__).resolve().parents[1]
SOURCES = [p for p in (ROOT / "pipeline").rglob("*.py")]


def _spelled_outside(pattern: str, home: set[str]) -> list[str]:
    return sorted(
        str(p.relative_to(ROOT))
        for p in SOURCES
        if p.name not in home and not _synthetic(p) and re.search(pattern, p.read_text(encoding="utf-8"))
    )


def _synthetic(path: Path) -> bool:
    """The synthetic corpus plants sentinels and raw harness text on purpose: it is test tooling."""
    return path.name.startswith("synth") or "synth" in path.relative_to(ROOT).parts


def test_the_format_constants_are_mini_swe_agents() -> None:
    mini = pytest.importorskip("minisweagent.agents.default")
    assert mini.AgentConfig.__dataclass_fields__["action_regex"].default == miniswe.ACTION_REGEX
    assert miniswe.ACTION_RE.findall("```bash\nls\n```") == ["ls"]
    assert (
        miniswe.SUBMIT_COMMAND
        == "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached"
    )


def test_the_format_constants_are_spelled_only_in_schemas() -> None:
    assert (
        _spelled_outside(r'"COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT|"MINI_SWE_AGENT_FINAL_OUTPUT', set()) == []
    )
    assert _spelled_outside(r"r\"```bash\\s\*", set()) == []


def test_the_hashing_constants_are_spelled_only_in_pipeline_hashing() -> None:
    assert _spelled_outside(r"0x9E3779B97F4A7C15|0xFF51AFD7ED558CCD|0x85EBCA6B", {"hashing.py"}) == []
    assert _spelled_outside(r"hash\(seed=\d", {"hashing.py"}) == []


def test_the_finalizers_are_murmur3s() -> None:
    # reference values of MurmurHash3's fmix64 / fmix32
    assert int(fmix64(np.array([1], dtype=np.uint64))[0]) == 0xB456BCFC34C2CB2C
    assert int(fmix32(np.array([1], dtype=np.uint32))[0]) == 0x514E28B7
