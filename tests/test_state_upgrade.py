"""A work dir written before the unit caches became Arrow IPC files (their kept rows were LZ4
Parquet, ``kept.parquet``) keeps working: the next epoch reads the old held rows and publishes
exactly the bytes of a work dir that never held a Parquet unit file; a damaged old file is
refused with the rebuild hint, and ``--rebuild`` (which reuses the old unit caches) gives the
same build again."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pipeline.core.config import Config
from pipeline.orchestration.runner import run_pipeline
from pipeline.store import unitfiles
from pipeline.store.records import StateDamaged
from pipeline.store.unitfiles import KEPT_NAME, KEPT_PARQUET_NAME
from tests.builders import distinct, tree_bytes
from tests.corpus_kit import add_epoch


def config(corpus: Path, work: Path) -> Config:
    return Config(affine=(str(corpus),), workdir=str(work), no_benchmarks=True, workers=1)


def epoch_one(corpus: Path) -> list[dict[str, object]]:
    return add_epoch(corpus, 1, [[distinct(i) for i in range(3)], [distinct(i) for i in range(3, 5)]])


def epoch_two(corpus: Path, shards: list[dict[str, object]]) -> None:
    # a new run, and run 0 exported again under a new id: deduplicated against the old held rows
    reexport = distinct(0) | {"rollout_id": "roll-0-again", "traj_id": "t-again"}
    add_epoch(corpus, 2, [[reexport, distinct(100)], [distinct(101)]], keep=shards)


def files(work: Path, pattern: str) -> list[str]:
    return sorted(p.name for p in (work / "state").glob(pattern))


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """Epoch one written by the format before (``old``) and by today's (``new``), both then given
    epoch two by today's code."""
    root = tmp_path_factory.mktemp("upgrade")
    corpus, old, new = root / "corpus", root / "old", root / "new"
    shards = epoch_one(corpus)
    with pytest.MonkeyPatch.context() as m:  # what the code before wrote (workers=1 runs inline)
        m.setattr(unitfiles, "KEPT_NAME", KEPT_PARQUET_NAME)
        run_pipeline(config(corpus, old))
    assert files(old, "cache/*/kept.*") == [KEPT_PARQUET_NAME] * 2
    assert files(old, "published/000000/*") and all(
        n.endswith(".parquet") for n in files(old, "published/0*/*")
    )
    run_pipeline(config(corpus, new))
    epoch_two(corpus, shards)
    for work in (old, new):
        summary = run_pipeline(config(corpus, work))
        assert summary.stats["invariant"]["ok"]
        assert summary.stats["drops"].get("traj_dedup/exact") == 1
    return corpus, old, new


def test_an_old_work_dir_and_a_new_epoch_publish_the_bytes_of_a_fresh_one(
    built: tuple[Path, Path, Path],
) -> None:
    _, old, new = built
    assert tree_bytes(old) == tree_bytes(new)
    # the old held rows stay as they were; the new epoch's are today's format
    assert all(n.endswith(".parquet") for n in files(old, "published/000000/*"))
    assert files(old, "published/000001/*") and all(
        n.endswith(".arrow") for n in files(old, "published/000001/*")
    )
    assert KEPT_NAME in files(old, "cache/*/kept.*")


def test_an_old_work_dir_rebuilt_reuses_its_parquet_caches_and_gives_the_same_build(
    built: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    corpus, old, new = built
    work = tmp_path / "work"
    shutil.copytree(old, work, symlinks=True)
    summary = run_pipeline(config(corpus, work), rebuild=True)
    assert summary.units_processed == 0  # every unit cache (the epoch-one ones are Parquet) reused
    assert files(work, "published/000000/*.parquet")
    rebuilt_new = tmp_path / "new"
    shutil.copytree(new, rebuilt_new, symlinks=True)
    run_pipeline(config(corpus, rebuilt_new), rebuild=True)
    assert tree_bytes(work) == tree_bytes(rebuilt_new)


@pytest.mark.parametrize("damage", ["truncate", "bitflip"])
def test_a_damaged_old_held_file_is_refused_with_the_hint_then_rebuilt(
    built: tuple[Path, Path, Path], tmp_path: Path, damage: str
) -> None:
    corpus, old, new = built
    work = tmp_path / "work"
    shutil.copytree(old, work, symlinks=True)
    target = sorted((work / "state" / "published" / "000000").glob("*.parquet"))[0]
    data = bytearray(target.read_bytes())
    if damage == "truncate":
        del data[len(data) // 2 :]
    else:
        data[len(data) // 2] ^= 0x04
    target.write_bytes(bytes(data))
    with pytest.raises(StateDamaged, match=f"{target.name}.*--rebuild"):
        run_pipeline(config(corpus, work))
    run_pipeline(config(corpus, work), rebuild=True)
    rebuilt_new = tmp_path / "new"
    shutil.copytree(new, rebuilt_new, symlinks=True)
    run_pipeline(config(corpus, rebuilt_new), rebuild=True)
    assert tree_bytes(work) == tree_bytes(rebuilt_new)
