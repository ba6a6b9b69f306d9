"""The version is defined once and keys the caches with the code; CI lints before it tests."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

import pipeline.core.config as config
from pipeline.core.config import VERSION, Config

ROOT = Path(__file__).resolve().parents[1]


def test_the_version_is_pyprojects() -> None:
    assert tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"] == VERSION


def test_a_code_change_is_a_new_cache_key_without_a_version_bump(monkeypatch: pytest.MonkeyPatch) -> None:
    before = Config().stage_hash()
    monkeypatch.setattr(config, "code_fingerprint", lambda: "another-source-tree")
    assert Config().stage_hash() != before


def test_the_code_fingerprint_covers_the_sources() -> None:
    config.code_fingerprint.cache_clear()
    assert len(config.code_fingerprint()) == 16 and config.code_fingerprint() == config.code_fingerprint()


def test_ci_lints_then_tests_with_the_pinned_versions() -> None:
    run = (ROOT / ".ci" / "run").read_text()
    assert run.index("make lint") < run.index("make test")
    makefile = (ROOT / "Makefile").read_text()
    assert "-r requirements-dev.txt" in makefile
    lint = makefile[makefile.index("\nlint:") :].split("\n\n")[0]
    assert "ruff check" in lint and "ruff format --check" in lint and "mypy" in lint
    pins = [
        ln for ln in (ROOT / "requirements-dev.txt").read_text().splitlines() if ln and not ln.startswith("#")
    ]
    assert pins and all("==" in ln for ln in pins)
