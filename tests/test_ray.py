"""The Ray executor: same results as the local executor, in input order, on a real local Ray.

Ray tests are marked ``ray`` and kept to a few (each Ray start costs seconds on 2 cores); the
one-line install check runs without Ray.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from pipeline.executors import make_executor
from pipeline.executors.ray import RayExecutor, RayNotInstalled
from tests.conftest import BENCH


def _wait_for(flag: Path, why: str) -> None:
    deadline = time.monotonic() + 120
    while not flag.exists():
        if time.monotonic() > deadline:
            raise TimeoutError(why)
        time.sleep(0.01)


def square_after_one(x: int, flags: str) -> tuple[int, int]:
    """Items 0 and 1 run at the same time in two processes, and 0 returns only after the driver has
    recorded 1's result: the order is forced by files, not by timing."""
    if x == 0:
        (Path(flags) / "started-0").touch()
        _wait_for(Path(flags) / "seen-1", "the driver never saw item 1 while item 0 waited for it")
    if x == 1:
        _wait_for(Path(flags) / "started-0", "item 0 never started while item 1 waited for it")
    return x * x, os.getpid()


def fail_on_three(x: int) -> int:
    if x == 3:
        raise ValueError(f"bad item {x}")
    return x


def test_missing_ray_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # makes `import ray` raise ImportError
    with pytest.raises(RayNotInstalled, match=r"pip install trajpipe\[ray\]"):
        make_executor("ray", 2, None)


@pytest.mark.ray
def test_map_returns_input_order_and_stops_its_own_ray(tmp_path: Path) -> None:
    ray = pytest.importorskip("ray")
    os.environ.pop("RAY_ADDRESS", None)
    assert not ray.is_initialized()
    items = list(range(12))
    done: list[int] = []
    ex = RayExecutor(2, None, max_in_flight=3, object_store_memory=100 * 1024**2)

    def seen(i: int, result: tuple[int, int]) -> None:
        done.append(i)
        (tmp_path / f"seen-{i}").touch()

    out = ex.map(square_after_one, items, str(tmp_path), on_done=seen)

    assert [sq for sq, _ in out] == [x * x for x in items]
    assert sorted(done) == items and done.index(1) < done.index(0)  # every item reported; 1 before 0
    assert out[0][1] != out[1][1]  # items 0 and 1 ran at once: two real worker processes
    assert ex.peak_in_flight == 3  # bounded submission
    assert not ray.is_initialized()  # it shut down the Ray it started
    assert ex.map(square_after_one, [], str(tmp_path)) == []


@pytest.fixture(scope="module")
def ray_cluster(tmp_path_factory: pytest.TempPathFactory):
    ray = pytest.importorskip("ray")
    os.environ.pop("RAY_ADDRESS", None)
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        object_store_memory=100 * 1024**2,
        log_to_driver=False,
        _temp_dir=str(tmp_path_factory.mktemp("ray")),
    )
    yield ray
    ray.shutdown()


@pytest.mark.ray
def test_task_failure_raises_the_original_error_and_keeps_a_borrowed_ray(ray_cluster) -> None:
    ex = RayExecutor(2, None)
    with pytest.raises(ValueError, match="bad item 3"):
        ex.map(fail_on_three, list(range(8)))
    assert ray_cluster.is_initialized()  # not ours to stop
    assert ex.map(fail_on_three, [0, 1, 2]) == [0, 1, 2]


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.ray
def test_ray_and_local_publish_byte_identical_trees(ray_cluster, tmp_path: Path) -> None:
    from pipeline.core.config import Config
    from pipeline.devkit.synth.corpus import synth
    from pipeline.orchestration.runner import run_pipeline

    corpus = tmp_path / "corpus"
    synth(corpus, runs=30, epochs=2, seed=3)
    common = {
        "affine": (str(corpus / "affine"),),
        "swelego": (str(corpus / "swelego"),),
        "catalog": str(corpus / "catalog"),
        "workers": 2,
        "benchmarks": str(BENCH),
    }

    summaries = {}
    for kind in ("local", "ray"):
        summaries[kind] = run_pipeline(Config(workdir=str(tmp_path / kind), executor=kind, **common))
    assert summaries["ray"].units_processed == summaries["local"].units_processed > 1
    assert summaries["ray"].stats["invariant"]["ok"]
    assert summaries["ray"].stats["published"]["total"] > 0

    for sub in ("publish", "ledger"):
        local, ray_ = _tree(tmp_path / "local" / sub), _tree(tmp_path / "ray" / sub)
        assert local, f"nothing written under {sub}/"
        assert sorted(ray_) == sorted(local)
        differing = [name for name in local if local[name] != ray_[name]]
        assert not differing, f"files differ between executors: {differing}"
