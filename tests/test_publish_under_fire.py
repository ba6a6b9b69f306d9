"""Publishing ships only whole builds: `run` is SIGKILLed at each write of its publish step, and
`publish --to` copies after each kill and while a run is going; every copied tree is exactly one
whole build (the one before or the one after) or the command is refused."""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.corpus_kit import add_epoch
from tests.test_crash import trajpipe_run
from tests.test_runner import distinct

ROOT = Path(__file__).parents[1]


def files_of(root: Path) -> dict[str, str]:
    """rel path -> sha256 of every file of a published tree (through the `publish` symlink)."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def publish_to(work: Path, to: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pipeline.cli", "publish", "--workdir", str(work), "--to", str(to)],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )


@pytest.fixture(scope="module")
def builds(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, str], dict[str, str]]:
    """A corpus at epoch 1 and its epoch-2 successor, and the whole builds A (epoch 1) and B (both)."""
    root = tmp_path_factory.mktemp("fire")
    c1, c2 = root / "c1", root / "c2"
    shards = add_epoch(c1, 1, [[distinct(i) for i in range(0, 4)]])
    add_epoch(c2, 1, [[distinct(i) for i in range(0, 4)]])
    add_epoch(
        c2, 2, [[distinct(i) for i in range(10, 14)], [distinct(i) for i in range(20, 22)]], keep=shards
    )
    work = root / "clean"
    assert trajpipe_run(c1, work).returncode == 0
    a = files_of(work / "publish")
    assert trajpipe_run(c2, work).returncode == 0
    b = files_of(work / "publish")
    assert a != b and "MANIFEST.json" in a and "MANIFEST.json" in b
    return c1, c2, a, b


def test_kill_at_each_publish_write_then_copy(
    builds: tuple[Path, Path, dict[str, str], dict[str, str]], tmp_path: Path
) -> None:
    c1, c2, a, b = builds
    base = tmp_path / "base"
    assert trajpipe_run(c1, base).returncode == 0
    kills = 0
    for n in range(1, 40):
        work = tmp_path / f"w{n}"
        shutil.copytree(base, work, symlinks=True)  # build A, as `run` left it
        killed = trajpipe_run(c2, work, crash=f"publish_write:{n}")
        copied = tmp_path / f"out{n}"
        res = publish_to(work, copied)
        if res.returncode == 0:
            assert files_of(copied) in (a, b), (n, res.stderr)
        else:
            assert (
                res.returncode == 3 and "refusing to publish" in res.stderr and "Traceback" not in res.stderr
            )
        if killed.returncode == 0:  # past the last publish write: the run completed
            assert files_of(copied) == b
            break
        assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
        kills += 1
        rerun = trajpipe_run(c2, work)
        assert rerun.returncode == 0, rerun.stderr[-2000:]
        assert files_of(work / "publish") == b
        again = tmp_path / f"again{n}"
        assert publish_to(work, again).returncode == 0 and files_of(again) == b
    # the dataset's shards, its card, the manifest, the build's rename and the switch
    assert kills == 5


def test_copy_during_a_run_is_one_whole_build_or_refused(
    builds: tuple[Path, Path, dict[str, str], dict[str, str]], tmp_path: Path
) -> None:
    c1, c2, a, b = builds
    work = tmp_path / "w"
    assert trajpipe_run(c1, work).returncode == 0
    env = {k: v for k, v in os.environ.items() if k != "TRAJPIPE_CRASH_AT"}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pipeline.cli",
            "run",
            "--affine",
            str(c2),
            "--workdir",
            str(work),
            "--no-benchmarks",
            "--workers",
            "1",
        ],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    outcomes = []
    try:
        i = 0
        while proc.poll() is None or i < 2:
            copied = tmp_path / f"out{i}"
            res = publish_to(work, copied)
            if res.returncode == 0:
                got = files_of(copied)
                assert got in (a, b), i
                outcomes.append("a" if got == a else "b")
            else:
                assert res.returncode == 3 and "refusing to publish" in res.stderr, res.stderr
                assert "Traceback" not in res.stderr
                outcomes.append("refused")
            i += 1
            time.sleep(0.05)
    finally:
        proc.wait(timeout=300)
    assert proc.returncode == 0, proc.stderr.read() if proc.stderr else ""
    assert outcomes[-1] == "b"


def test_tampered_build_is_refused(
    builds: tuple[Path, Path, dict[str, str], dict[str, str]], tmp_path: Path
) -> None:
    c1, _, a, _ = builds
    work = tmp_path / "w"
    assert trajpipe_run(c1, work).returncode == 0
    shard = next((work / "publish").glob("*/data/train-*.parquet"))
    data = bytearray(shard.read_bytes())
    data[len(data) // 2] ^= 0x01
    os.chmod(shard, 0o644)
    shard.write_bytes(bytes(data))
    res = publish_to(work, tmp_path / "out")
    assert res.returncode == 3 and "differs from the build manifest" in " ".join(res.stderr.split())
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").rglob("*.parquet"))
    # the next run repairs the build from the state
    assert trajpipe_run(c1, work).returncode == 0
    assert files_of(work / "publish") == a
    assert publish_to(work, tmp_path / "out2").returncode == 0 and files_of(tmp_path / "out2") == a
