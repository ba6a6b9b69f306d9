"""Shared test set-up: offline Hub tripwire, quiet mini-swe-agent, the ../shared data folder."""

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

settings.register_profile("ci", max_examples=100, deadline=None)
settings.load_profile("ci")

SHARED = Path(__file__).resolve().parents[2] / "shared"


@pytest.fixture(autouse=True)
def _hub_offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """The tripwire also on huggingface_hub's import-time constant (set before we got here)."""
    import huggingface_hub.constants as hc

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(hc, "HF_HUB_OFFLINE", True)


@pytest.fixture(scope="session")
def shared() -> Path:
    """The ../shared folder with real samples and benchmark tables; skip when absent."""
    if not (SHARED / "corpus-samples").is_dir():
        pytest.skip("../shared is not on this machine")
    return SHARED
