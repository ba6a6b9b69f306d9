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


def square_after_one(x: int, flags: str) -> tuple[int, int]:
    """Item 0 waits until item 1 has finished, so completion order is never input order and two
    processes must take part; the order is forced by the file item 1 leaves, not by timing."""
    if x == 0:
        deadline = time.monotonic() + 120
        while not (Path(flags) / "1").exists():
            if time.monotonic() > deadline:
                raise TimeoutError("item 1 never finished while item 0 waited for it")
            time.sleep(0.01)
    (Path(flags) / str(x)).touch()
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
    out = ex.map(square_after_one, items, str(tmp_path), on_done=lambda i, r: done.append(i))

    assert [sq for sq, _ in out] == [x * x for x in items]
    assert sorted(done) == items and done.index(1) < done.index(0)  # every item reported; 1 before 0
    assert out[0][1] != out[1][1]  # item 1 ran while item 0 held the other worker process
    assert ex.peak_in_flight == 3  # bounded submission
    assert not ray.is_initialized()  # it shut down the Ray it started
    assert ex.map(square_after_one, [], str(tmp_path)) == []


@pytest.fixture(scope="module")
def ray_cluster(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201 - yields the module
    ray = pytest.importorskip("ray")
    os.environ.pop("RAY_ADDRESS", None)
    ray.init(num_cpus=2, include_dashboard=False, object_store_memory=100 * 1024**2,
             log_to_driver=False, _temp_dir=str(tmp_path_factory.mktemp("ray")))
    yield ray
    ray.shutdown()


@pytest.mark.ray
def test_task_failure_raises_the_original_error_and_keeps_a_borrowed_ray(ray_cluster) -> None:  # noqa: ANN001
    ex = RayExecutor(2, None)
    with pytest.raises(ValueError, match="bad item 3"):
        ex.map(fail_on_three, list(range(8)))
    assert ray_cluster.is_initialized()  # not ours to stop
    assert ex.map(fail_on_three, [0, 1, 2]) == [0, 1, 2]


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.ray
def test_ray_and_local_publish_byte_identical_trees(ray_cluster, tmp_path: Path) -> None:  # noqa: ANN001
    from pipeline.config import Config
    from pipeline.runner import run_pipeline
    from pipeline.sources.synth import synth

    corpus = tmp_path / "corpus"
    synth(corpus, runs=30, epochs=2, seed=3)
    common = {"affine": (str(corpus / "affine"),), "swelego": (str(corpus / "swelego"),),
              "catalog": str(corpus / "catalog"), "workers": 2, "benchmarks": str(BENCH)}

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
