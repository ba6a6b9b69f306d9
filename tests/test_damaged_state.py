"""A damaged work dir: every kind of state file deleted, truncated or bit-flipped, then the same
`trajpipe run` again. Each case ends in a correct build, or in one clear error naming the file and
`--rebuild`, after which `--rebuild` gives the correct build. Never a silently different output."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pipeline.cli import app
from tests.corpus_kit import add_epoch
from tests.test_runner import distinct, tree_bytes

runner = CliRunner()


def run(corpus: Path, work: Path, *extra: str) -> tuple[int, str]:
    res = runner.invoke(
        app,
        ["run", "--affine", str(corpus), "--workdir", str(work), "--no-benchmarks", "--workers", "1", *extra],
    )
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        raise AssertionError(f"traceback instead of an error line: {res.exception!r}\n{res.output}")
    return res.exit_code, " ".join(res.output.split())


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, str], dict[str, str]]:
    """Two epochs run incrementally (two commits); the outputs of that and of a --rebuild."""
    root = tmp_path_factory.mktemp("damage")
    corpus = root / "corpus"
    shards = add_epoch(corpus, 1, [[distinct(i) for i in range(0, 3)], [distinct(3), b"{bad"]])
    work = root / "work"
    assert run(corpus, work)[0] == 0
    add_epoch(
        corpus, 2, [[distinct(i) for i in range(10, 13)], [distinct(0) | {"rollout_id": "dup"}]], keep=shards
    )
    assert run(corpus, work)[0] == 0
    assert len(list((work / "state" / "commits").glob("*.json"))) == 2
    incremental = tree_bytes(work)
    rebuilt = root / "rebuilt"
    shutil.copytree(work, rebuilt, symlinks=True)
    assert run(corpus, rebuilt, "--rebuild")[0] == 0
    return corpus, work, incremental, tree_bytes(rebuilt)


def _one(work: Path, pattern: str) -> Path:
    found = sorted(p for p in work.glob(pattern) if p.is_file())
    assert found, pattern
    return found[-1]


# kind -> a glob naming one file of that kind in the work dir
KINDS: dict[str, str] = {
    "commit_first": "state/commits/000000.json",
    "commit_last": "state/commits/000001.json",
    "published_part": "state/published/000000.parquet",
    "published_part_last": "state/published/000001.parquet",
    "published_rows": "state/published/000000/*.arrow",
    "ledger_part": "state/ledger/000001.parquet",
    "unit_kept": "state/cache/*/kept.arrow",
    "unit_drops": "state/cache/*/drops.parquet",
    "unit_meta": "state/cache/*/meta.json",
    "shard_sources": "state/sources.json",
    "stats": "ledger/stats.json",
    "drops": "ledger/drops.parquet",
    "datasets": "ledger/datasets.json",
    "shard": "publish/*/data/train-*.parquet",
    "card": "publish/*/README.md",
    "manifest": "publish/MANIFEST.json",
    "lock": ".lock",
}


def delete(p: Path) -> None:
    p.unlink()


def truncate(p: Path) -> None:
    data = p.read_bytes()
    p.write_bytes(data[: len(data) // 2])


def bitflip(p: Path) -> None:
    data = bytearray(p.read_bytes())
    if not data:
        data = bytearray(b"\x01")
    else:
        data[len(data) // 2] ^= 0x04
    p.write_bytes(bytes(data))


DAMAGE: dict[str, Callable[[Path], None]] = {"delete": delete, "truncate": truncate, "bitflip": bitflip}


@pytest.mark.parametrize("how", sorted(DAMAGE))
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_damaged_state_is_refused_or_rebuilt_never_silently_different(
    base: tuple[Path, Path, dict[str, str], dict[str, str]], kind: str, how: str, tmp_path: Path
) -> None:
    corpus, clean, incremental, rebuilt = base
    work = tmp_path / "work"
    shutil.copytree(clean, work, symlinks=True)
    target = _one(work, KINDS[kind])
    DAMAGE[how](target)
    code, out = run(corpus, work)
    if code == 0:
        assert tree_bytes(work) == incremental, f"{kind}/{how}: a different build without an error"
        return
    assert code == 3, out
    assert target.name in out and "--rebuild" in out, out
    assert "Traceback" not in out
    code, out = run(corpus, work, "--rebuild")
    assert code == 0, out
    assert tree_bytes(work) == rebuilt


@pytest.mark.parametrize("name", ["kept.arrow", "drops.parquet", "meta.json"])
def test_damaged_cache_of_an_undecided_unit_is_redone(
    base: tuple[Path, Path, dict[str, str], dict[str, str]], name: str, tmp_path: Path
) -> None:
    """As after a run killed between its units and its commit: the caches are there, the commit is
    not. A damaged cache is not trusted: the unit is processed again and the build is correct."""
    corpus, clean, incremental, _ = base
    work = tmp_path / "work"
    shutil.copytree(clean, work, symlinks=True)
    for sub in ("commits/000001.json", "published/000001.parquet", "ledger/000001.parquet"):
        (work / "state" / sub).unlink()
    for meta in (work / "state" / "cache").glob("*/meta.json"):
        bitflip(meta.parent / name)
    code, out = run(corpus, work)
    assert code == 0, out
    assert tree_bytes(work) == incremental


def test_altered_text_in_the_store_is_refused_not_published(
    base: tuple[Path, Path, dict[str, str], dict[str, str]], tmp_path: Path
) -> None:
    """A bit flip that still leaves a valid file of held rows (one letter of a message changed) is
    caught by the sha256 the commit recorded, not published as changed text."""
    import polars as pl

    corpus, clean, _, rebuilt = base
    work = tmp_path / "work"
    shutil.copytree(clean, work, symlinks=True)
    # the rows a commit holds: its copies of the unit files (published/<seq>.parquet is their index)
    part = next(
        p for p in sorted((work / "state" / "published" / "000000").glob("*.arrow")) if pl.read_ipc(p).height
    )
    frame = pl.read_ipc(part)
    frame = frame.with_columns(
        pl.col("messages").list.eval(
            pl.struct(
                pl.element().struct.field("role"),
                pl.element().struct.field("content").str.replace("alpha", "alphb"),
            )
        )
    )
    frame.write_ipc(part, compression="lz4")
    code, out = run(corpus, work)
    assert code == 3 and part.name in out and "--rebuild" in out, out
    assert run(corpus, work, "--rebuild")[0] == 0
    assert tree_bytes(work) == rebuilt


HOLD = """
import os, sys, time
from pathlib import Path
from pipeline.store.lock import WorkdirLocked, workdir_lock
work, start = Path(sys.argv[1]), float(sys.argv[2])
while time.time() < start:  # every contender starts at the same instant
    pass
held = both = 0
for i in range(150):
    if i % 10 == 0:
        (work / ".lock").write_text("999999")  # now and then: a lock left by a process that died
    try:
        with workdir_lock(work):
            marker = work / f"holder-{os.getpid()}"
            marker.touch()
            if len(list(work.glob("holder-*"))) > 1:
                both += 1
            time.sleep(0.002)
            marker.unlink()
            held += 1
    except (WorkdirLocked, OSError):
        pass
print(held, both)
"""


def test_lock_has_one_holder_even_when_stale_and_raced(tmp_path: Path) -> None:
    """Three processes hammer one work dir's lock, which now and then names a dead process:
    never two holders at once (the pid-file lock let two win)."""
    import subprocess
    import sys
    import time

    root = Path(__file__).parents[1]
    start = time.time() + 8  # after every interpreter has imported the pipeline
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", HOLD, str(tmp_path), str(start)],
            cwd=root,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    results = [tuple(int(x) for x in p.communicate(timeout=120)[0].split()) for p in procs]
    assert sum(h for h, _ in results) > 0
    assert sum(b for _, b in results) == 0, results


@pytest.mark.parametrize("limit_kib", [8, 13, 20])  # fails in the first unit cache, a later one, the commit
def test_disk_full_is_one_clear_line_and_the_next_run_is_correct(
    base: tuple[Path, Path, dict[str, str], dict[str, str]], limit_kib: int, tmp_path: Path
) -> None:
    """Writes fail part-way (a file-size limit makes every write past it fail with EFBIG, as a
    full disk fails with ENOSPC): one error line naming the cause, no temp file left behind, and
    the same command afterwards gives the correct build."""
    import resource
    import signal
    import subprocess
    import sys

    corpus, _, _, rebuilt = base
    work = tmp_path / "work"

    def small_disk() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit_kib * 1024, limit_kib * 1024))

    args = [
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
    ]
    res = subprocess.run(
        args,
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=Path(__file__).parents[1],
        preexec_fn=small_disk,
    )
    text = " ".join(res.stderr.split())
    assert res.returncode == 2, text
    assert "Traceback" not in res.stderr and "error:" in text and "rerun" in text, text
    assert [p for p in work.rglob("*") if ".tmp" in p.name or ".staging-" in p.name] == []
    code, out = run(corpus, work)
    assert code == 0, out
    assert tree_bytes(work) == rebuilt  # one commit of everything, as a --rebuild makes


@pytest.mark.parametrize("how", sorted(DAMAGE))
def test_damaged_catalog_key_cache_is_recomputed(how: str, tmp_path: Path) -> None:
    """The catalog's dedup keys are a reference cache entry sealed by a sha256 manifest: damaged, they
    are computed again from the catalog, and the decisions are those of an undamaged cache."""
    from pipeline.core.config import Config
    from pipeline.orchestration.runner import run_pipeline

    first = tmp_path / "first"
    add_epoch(first, 1, [[distinct(1), distinct(2)]])
    run_pipeline(Config(affine=(str(first),), workdir=str(tmp_path / "a"), no_benchmarks=True, workers=1))
    runs = tmp_path / "catalog" / "runs"
    runs.mkdir(parents=True)
    for i, shard in enumerate(sorted((tmp_path / "a" / "publish").rglob("train-*.parquet"))):
        shutil.copy(shard, runs / f"part-{i}.parquet")
    second = tmp_path / "second"
    shards = add_epoch(second, 5, [[distinct(1) | {"rollout_id": "again"}, distinct(3)]])
    cfgs = [
        Config(
            affine=(str(second),),
            workdir=str(tmp_path / name),
            no_benchmarks=True,
            workers=1,
            catalog=str(tmp_path / "catalog"),
            cache_dir=str(tmp_path / f"cache-{name}"),
        )
        for name in ("clean", "damaged")
    ]
    for cfg in cfgs:
        run_pipeline(cfg)
    DAMAGE[how](next((tmp_path / "cache-damaged" / "reference").glob("catalog-keys-*/keys.parquet")))
    add_epoch(second, 6, [[distinct(1) | {"rollout_id": "third"}, distinct(4)]], keep=shards)
    for cfg in cfgs:
        assert run_pipeline(cfg).stats["drops"] == {"traj_dedup/exact": 2}
    assert tree_bytes(tmp_path / "clean") == tree_bytes(tmp_path / "damaged")
