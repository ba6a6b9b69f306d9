"""The user-level reference cache (pipeline/reference/cache.py): the benchmark tables, the
benchmark-leak index and the catalog's dedup keys, built once per content, shared by every work dir,
rebuilt when damaged, skipped when it cannot be written, and never part of the config hash."""

from __future__ import annotations

import shutil
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

import pipeline.reference.cache as ref_cache
from pipeline.cli import app
from pipeline.core.config import Config
from pipeline.devkit.synth.corpus import synth
from pipeline.leaks.benchmark import BenchmarkIndex
from pipeline.orchestration.runner import run_pipeline
from tests.builders import tree_bytes
from tests.conftest import BENCH

KINDS = {"tables", "leak-index-v3", "catalog-keys"}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("corpus")
    synth(root, runs=8, epochs=1, seed=5, benchmarks=BENCH)
    return root


def config(corpus: Path, work: Path, cache: Path) -> Config:
    return Config(
        affine=(str(corpus / "affine"),),
        swelego=(str(corpus / "swelego"),),
        catalog=str(corpus / "catalog"),
        benchmarks=str(BENCH),
        workdir=str(work),
        cache_dir=str(cache),
        workers=1,  # inline: the build counters below see the worker's builds too
    )


@pytest.fixture(scope="module")
def clean(corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A cache filled by one run, and that run's outputs."""
    root = tmp_path_factory.mktemp("clean")
    run_pipeline(config(corpus, root / "work", root / "cache"))
    return root / "cache", tree_bytes(root / "work")


def count_builds(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Entries built (sealed), by kind (``tables``, ``leak-index-v3``, ``catalog-keys``)."""
    built: Counter[str] = Counter()
    seal = ref_cache._seal

    def counted(folder: Path) -> None:  # folder: the temp folder ".<kind>-<key>.<random>"
        built[folder.name[1:].split(".")[0].rsplit("-", 1)[0]] += 1
        seal(folder)

    monkeypatch.setattr(ref_cache, "_seal", counted)
    index_build = BenchmarkIndex.build.__func__  # type: ignore[attr-defined]

    def build(cls: type[BenchmarkIndex], benchmarks: object) -> BenchmarkIndex:
        built["BenchmarkIndex.build"] += 1
        return index_build(cls, benchmarks)  # type: ignore[no-any-return]

    monkeypatch.setattr(BenchmarkIndex, "build", classmethod(build))
    return built


def entries(cache: Path) -> list[Path]:
    return sorted(p for p in (cache / "reference").iterdir() if not p.name.startswith("."))


def test_a_second_work_dir_reuses_every_entry(
    corpus: Path, clean: tuple[Path, dict[str, str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    built = count_builds(monkeypatch)
    cache = tmp_path / "cache"
    run_pipeline(config(corpus, tmp_path / "a", cache))
    assert built == Counter({**dict.fromkeys(KINDS, 1), "BenchmarkIndex.build": 1})
    assert {p.name.rsplit("-", 1)[0] for p in entries(cache)} == KINDS
    assert all(ref_cache.sealed(p) for p in entries(cache))
    built.clear()
    run_pipeline(config(corpus, tmp_path / "b", cache))  # a fresh work dir, the same cache: nothing built
    assert built == Counter()
    assert tree_bytes(tmp_path / "a") == tree_bytes(tmp_path / "b") == clean[1]


def _truncate(p: Path) -> None:
    p.write_bytes(p.read_bytes()[: p.stat().st_size // 2])


def _bitflip(p: Path) -> None:
    data = bytearray(p.read_bytes())
    data[len(data) // 2] ^= 0x10
    p.write_bytes(bytes(data))


# how -> damage done to one entry folder
DAMAGE: dict[str, Callable[[Path], None]] = {
    "truncate": lambda entry: _truncate(max(entry.iterdir(), key=lambda p: p.stat().st_size)),
    "bitflip": lambda entry: _bitflip(max(entry.iterdir(), key=lambda p: p.stat().st_size)),
    "delete": lambda entry: max(entry.iterdir(), key=lambda p: p.stat().st_size).unlink(),
    "extra_file": lambda entry: (entry / "garbage.npy").write_bytes(b"\x93NUMPY garbage"),
    "bad_manifest": lambda entry: (entry / ref_cache.MANIFEST).write_bytes(b"[not a manifest"),
    "no_manifest": lambda entry: (entry / ref_cache.MANIFEST).unlink(),
    "file_instead": lambda entry: (shutil.rmtree(entry), entry.write_bytes(b"garbage")),
}


@pytest.mark.parametrize("how", sorted(DAMAGE))
def test_a_damaged_entry_is_rebuilt_and_the_outputs_do_not_change(
    how: str,
    corpus: Path,
    clean: tuple[Path, dict[str, str]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cache = tmp_path / "cache"
    shutil.copytree(clean[0], cache)
    for entry in entries(cache):
        DAMAGE[how](entry)
    built = count_builds(monkeypatch)
    run_pipeline(config(corpus, tmp_path / "work", cache))
    assert built == Counter({**dict.fromkeys(KINDS, 1), "BenchmarkIndex.build": 1})
    assert all(ref_cache.sealed(p) for p in entries(cache)) and len(entries(cache)) == len(KINDS)
    assert tree_bytes(tmp_path / "work") == clean[1]


def test_a_cache_that_cannot_be_written_is_skipped(
    corpus: Path, clean: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the cache folder would be")
    res = CliRunner().invoke(
        app,
        [
            "run",
            *("--affine", str(corpus / "affine"), "--swelego", str(corpus / "swelego")),
            *("--catalog", str(corpus / "catalog"), "--benchmarks", str(BENCH)),
            *("--workdir", str(tmp_path / "work"), "--workers", "1", "--cache-dir", str(blocked)),
        ],
    )
    assert res.exit_code == 0 and res.exception is None, res.output
    assert "Traceback" not in res.output
    assert blocked.read_text() == "a file where the cache folder would be"
    assert tree_bytes(tmp_path / "work") == clean[1]


def test_the_cache_dir_is_not_part_of_the_config_hash(tmp_path: Path) -> None:
    configs = [Config(), Config(cache_dir=str(tmp_path / "a")), Config(cache_dir="/elsewhere")]
    assert len({c.stage_hash() for c in configs}) == 1
    assert Config.load(None, cache_dir="/x").cache_dir == "/x"


def test_the_default_cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("TRAJPIPE_CACHE", str(tmp_path / "mine"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert ref_cache.reference_dir(None) == tmp_path / "mine" / "reference"
    assert ref_cache.reference_dir(str(tmp_path / "opt")) == tmp_path / "opt" / "reference"
    monkeypatch.delenv("TRAJPIPE_CACHE")
    assert ref_cache.reference_dir(None) == tmp_path / "xdg" / "trajpipe" / "reference"
    monkeypatch.setenv("XDG_CACHE_HOME", "")
    assert ref_cache.reference_dir(None) == tmp_path / "home" / ".cache" / "trajpipe" / "reference"


def test_concurrent_processes_build_an_entry_once(tmp_path: Path) -> None:
    """Threads lock like processes (each opens its own lock file): one builds, the others wait and
    find the sealed entry."""
    builds: list[int] = []

    def build(folder: Path) -> None:
        builds.append(1)
        time.sleep(0.2)
        (folder / "data.bin").write_bytes(b"x" * 1000)

    got: list[Path] = []
    threads = [
        threading.Thread(target=lambda: got.append(ref_cache.cached_dir(tmp_path, "k-1", build)))
        for _ in range(4)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(builds) == 1 and got == [tmp_path / "k-1"] * 4
    assert ref_cache.sealed(tmp_path / "k-1")
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith(".")) == ["k-1"]


def test_only_the_entries_used_last_are_kept_per_kind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every code version and table set makes new entries: a build prunes its kind to the KEEP used
    last (an older format version counts as the same kind), other kinds untouched."""
    monkeypatch.setattr(ref_cache, "KEEP", 2)

    def build(folder: Path) -> None:
        (folder / "data.bin").write_bytes(folder.name.encode())

    def use(key: str) -> None:
        ref_cache.cached_dir(tmp_path, key, build)
        time.sleep(0.05)  # past the file system's timestamp granularity

    for key in ("leak-index-v2-a", "leak-index-v3-b", "tables-a", "leak-index-v3-c"):
        use(key)
    assert {p.name for p in entries_in(tmp_path)} == {"leak-index-v3-b", "leak-index-v3-c", "tables-a"}
    use("leak-index-v3-b")  # used again: now the most recent
    use("leak-index-v3-d")
    assert {p.name for p in entries_in(tmp_path)} == {"leak-index-v3-b", "leak-index-v3-d", "tables-a"}
    assert all(ref_cache.sealed(p) for p in entries_in(tmp_path))


def entries_in(root: Path) -> list[Path]:
    return [p for p in root.iterdir() if not p.name.startswith(".")]


def test_pruning_removes_the_lock_files_of_the_entries_it_removes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pruned entry takes its lock file with it, and lock files an older trajpipe left beside
    entries long gone are swept with their kind; those of kept entries stay."""
    monkeypatch.setattr(ref_cache, "KEEP", 1)
    (tmp_path / ".tables-gone.lock").write_text("")  # left by a prune before this fix
    for key in ("tables-a", "tables-b", "catalog-keys-a"):
        ref_cache.cached_dir(tmp_path, key, lambda folder: (folder / "x").write_bytes(b"x"))
        time.sleep(0.05)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        ".catalog-keys-a.lock",
        ".tables-b.lock",
        "catalog-keys-a",
        "tables-b",
    ]


def test_a_lock_file_unlinked_while_a_process_waits_on_it_is_opened_again(tmp_path: Path) -> None:
    """Pruning unlinks a lock file while holding it. A builder already waiting on that file gets
    the lock of a file no longer in the folder: it must lock the path again, or a third process,
    creating a new lock file, would build beside it."""
    import fcntl

    lock = tmp_path / ".tables-k.lock"
    held = lock.open("w")
    fcntl.flock(held, fcntl.LOCK_EX)
    inodes: list[int] = []

    def build(folder: Path) -> None:
        inodes.append(lock.stat().st_ino)  # the lock file at the path while the build runs
        (folder / "x").write_bytes(b"x")

    waiter = threading.Thread(target=lambda: ref_cache.cached_dir(tmp_path, "tables-k", build))
    waiter.start()
    time.sleep(0.3)  # the waiter has opened the old file and blocks on it
    old_inode = lock.stat().st_ino
    lock.unlink()
    holder_of_new = lock.open("w")  # a third process creates the path anew and holds it
    fcntl.flock(holder_of_new, fcntl.LOCK_EX)
    held.close()  # the waiter now holds the unlinked file: it must not build under it
    time.sleep(0.3)
    assert inodes == [], "built under a lock file no longer at its path"
    new_inode = lock.stat().st_ino
    holder_of_new.close()
    waiter.join(timeout=10)
    assert inodes == [new_inode] and new_inode != old_inode
    assert ref_cache.sealed(tmp_path / "tables-k")
