"""Shared test set-up: offline Hub tripwire, quiet mini-swe-agent, a private reference cache per test,
the vendored fixture folders."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import settings

os.environ["HF_HUB_OFFLINE"] = "1"  # tripwire: no test may reach the Hub
os.environ.setdefault("MSWEA_SILENT_STARTUP", "1")
os.environ.setdefault("MSWEA_GLOBAL_CONFIG_DIR", tempfile.mkdtemp(prefix="mswea-"))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
# no test may use the user's reference cache (~/.cache/trajpipe): each test gets its own (below)
os.environ["TRAJPIPE_CACHE"] = tempfile.mkdtemp(prefix="trajpipe-cache-")

settings.register_profile("ci", max_examples=100, deadline=None)
settings.load_profile("ci")

FIXTURES = Path(__file__).resolve().parent / "fixtures"
REAL = FIXTURES / "real"  # real public trajectory files (PROVENANCE.md there)
# The nine samples the format tests were first written against (hand-checked turn by turn);
# every other real file is checked by tests/test_conformance.py from EXPECTATIONS.json.
SAMPLE_FILES = (
    "mini-swe-agent-v1-github-issue.traj.json",
    "mini-swe-agent-v2-github-issue.traj.json",
    "openhands-events-basic.json",
    "sweagent-0x-gpt4-pydicom-1458.traj",
    "sweagent-demo-function-calling-simple.traj",
    "sweagent-demo-textaction-window-marshmallow-1867.traj",
    "sweagent-swesmith-pandas-pr_53856.traj",
    "swesmith-ft-xml-example.jsonl",
    "swesmith-task-instance-pandas-pr_53652.json",
)
BENCH = FIXTURES / "benchmarks"  # small extracts of the real benchmark tables (PROVENANCE.md there)


@pytest.fixture(autouse=True)
def _hub_offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """The tripwire also on huggingface_hub's import-time constant (set before we got here)."""
    import huggingface_hub.constants as hc

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(hc, "HF_HUB_OFFLINE", True)


@pytest.fixture(autouse=True)
def _own_reference_cache(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Each test its own empty reference cache (as each had its own work dir's before the cache was
    shared): a test never sees another's entries, and child processes inherit it."""
    monkeypatch.setenv("TRAJPIPE_CACHE", str(tmp_path_factory.mktemp("trajpipe-cache")))
