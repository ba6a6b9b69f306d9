"""Crash safety: SIGKILL a real `trajpipe run` at several points; the rerun's output equals a
clean run's byte for byte."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.builders import distinct, tree_bytes
from tests.corpus_kit import add_epoch, jsonl

# real `trajpipe run` processes killed at six points: minutes, not seconds (`make test-fast` skips them)
pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]

POINTS = ["unit_done:2", "unit_write:3", "after_units", "commit_parts", "commit_record", "before_publish"]


def trajpipe_run(corpus: Path, work: Path, crash: str | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env.pop("TRAJPIPE_CRASH_AT", None)
    if crash:
        env["TRAJPIPE_CRASH_AT"] = crash
    return subprocess.run(
        check=False,
        args=[
            sys.executable,
            "-m",
            "pipeline.cli",
            "run",
            "--affine",
            str(corpus),
            "--workdir",
            str(work),
            "--no-benchmarks",
            "--workers",
            "1",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=Path(__file__).parents[1],
    )


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    root = tmp_path_factory.mktemp("crash")
    corpus = root / "corpus"
    shards = add_epoch(corpus, 1, [[distinct(i) for i in range(j, j + 3)] for j in range(0, 12, 3)])
    add_epoch(corpus, 2, [[distinct(0) | {"rollout_id": "again"}, distinct(50), b"{bad"]], keep=shards)
    clean = root / "clean"
    res = trajpipe_run(corpus, clean)
    assert res.returncode == 0, res.stderr
    return corpus, tree_bytes(clean)


@pytest.mark.parametrize("point", POINTS)
def test_killed_run_then_rerun_equals_a_clean_run(
    corpus: tuple[Path, dict[str, str]], point: str, tmp_path: Path
) -> None:
    src, expected = corpus
    work = tmp_path / "work"
    killed = trajpipe_run(src, work, crash=point)
    assert killed.returncode == -signal.SIGKILL, (point, killed.returncode, killed.stderr[-2000:])
    rerun = trajpipe_run(src, work)
    assert rerun.returncode == 0, rerun.stderr[-2000:]
    assert tree_bytes(work) == expected
    assert not list(work.rglob("*.tmp")) or all(".tmp" in p.name for p in work.rglob("*.tmp"))


def test_stale_temp_files_do_not_leak_into_outputs(tmp_path: Path) -> None:
    corpus = tmp_path / "c"
    add_epoch(corpus, 1, [[distinct(1), distinct(2)]])
    work = tmp_path / "w"
    assert trajpipe_run(corpus, work, crash="commit_parts").returncode == -signal.SIGKILL
    assert trajpipe_run(corpus, work).returncode == 0
    published = [p.name for p in (work / "publish").rglob("*.parquet")]
    assert published and all(n.startswith("train-") for n in published)
    assert jsonl  # corpus_kit helpers in use
