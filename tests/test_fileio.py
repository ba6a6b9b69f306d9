"""Atomic writes have one home (pipeline.io.fileio) and every one of them is flushed to disk."""

from __future__ import annotations

import os
import re
from pathlib import Path

import polars as pl
import pytest

from pipeline.io import fileio
from pipeline.store.unitfiles import UnitWriter

PACKAGE = Path(__file__).resolve().parents[1] / "pipeline"


@pytest.fixture
def fsyncs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    real = os.fsync

    def counting(fd: int) -> None:
        calls.append(fd)
        real(fd)

    monkeypatch.setattr(os, "fsync", counting)
    return calls


def test_every_atomic_write_is_fsynced_before_the_rename(tmp_path: Path, fsyncs: list[int]) -> None:
    assert fileio.atomic_write_bytes(tmp_path / "a.bin", b"x") and len(fsyncs) == 1
    assert (
        not fileio.atomic_write_bytes(tmp_path / "a.bin", b"x") and len(fsyncs) == 1
    )  # unchanged: untouched
    assert fileio.atomic_write_json(tmp_path / "b.json", {"k": 1}) and len(fsyncs) == 2
    assert fileio.copy_if_changed(tmp_path / "a.bin", tmp_path / "c" / "a.bin") and len(fsyncs) == 3
    assert not fileio.copy_if_changed(tmp_path / "a.bin", tmp_path / "c" / "a.bin") and len(fsyncs) == 3
    w = UnitWriter(tmp_path / "unit")
    w.finish(pl.DataFrame({"x": [1]}), pl.DataFrame({"y": [2]}), {"done": True})
    assert len(fsyncs) == 6  # kept.arrow, drops.parquet, meta.json
    assert sorted(p.name for p in (tmp_path / "unit").iterdir()) == [
        "drops.parquet",
        "kept.arrow",
        "meta.json",
    ]


def test_a_failed_write_leaves_the_old_file_and_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "t.txt"
    fileio.atomic_write_text(target, "old")
    with pytest.raises(RuntimeError), fileio.atomic_path(target) as tmp:
        tmp.write_text("half")
        raise RuntimeError("killed")
    assert target.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["t.txt"]


def test_no_module_renames_files_but_fileio() -> None:
    offenders = [
        str(p.relative_to(PACKAGE))
        for p in PACKAGE.rglob("*.py")
        if p.name != "fileio.py" and re.search(r"\bos\.(replace|rename)\(", p.read_text())
    ]
    assert offenders == []
