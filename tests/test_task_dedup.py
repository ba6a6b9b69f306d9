"""Task dedup: benchmark tasks dropped, catalog task ids taken only at the same checkout."""

from __future__ import annotations

from typing import Any

import polars as pl
import pytest

from pipeline.core.config import Config
from pipeline.reference.benchmarks import load_benchmarks
from pipeline.stages.context import Context
from pipeline.stages.task_dedup import TaskDedup
from schemas.run import WORK, polars_schema
from tests.conftest import BENCH

DJANGO_11099 = "d26b2424437dabeeca94d7900b37d2df4410da0c"  # swebench_verified base commit


@pytest.fixture(scope="module")
def benchmarks() -> pl.DataFrame:
    return load_benchmarks(BENCH)


def work(*rows: dict[str, Any]) -> pl.DataFrame:
    schema = polars_schema(WORK)
    defaults = {
        "epoch": 1,
        "dataset": "mini-coder-affine-bash",
        "base_commit": "",
        "upstream_id": "",
        "id_kind": "",
        "messages": [],
    }
    return pl.DataFrame([{k: {**defaults, **r}.get(k) for k in schema} for r in rows], schema=schema)


def stage(benchmarks: pl.DataFrame | None, catalog: pl.DataFrame | None = None) -> TaskDedup:
    return TaskDedup(Context(config=Config(), benchmarks=benchmarks, catalog_tasks=catalog))


def test_benchmark_task_by_instance_id_is_dropped_naming_benchmark_and_instance(
    benchmarks: pl.DataFrame,
) -> None:
    batch = work(
        {"source_uid": "u1", "instance_id": "django__django-11099", "repo": "django__django"},
        {"source_uid": "u2", "instance_id": "django__django-99999", "repo": "django__django"},
    )
    out = stage(benchmarks)(batch)
    assert out.kept["source_uid"].to_list() == ["u2"]
    assert out.dropped.select("source_uid", "stage", "reason").rows() == [
        ("u1", "task_dedup", "benchmark_task")
    ]
    detail = out.dropped["detail"].item()
    assert "instance=django__django-11099" in detail and "by=id" in detail
    assert detail.startswith("benchmark=swebench_")
    assert out.counters == {"task_dedup/benchmark_task": 1}


def test_swesmith_pr_mirror_id_matches_the_swebench_id(benchmarks: pl.DataFrame) -> None:
    batch = work(
        {"source_uid": "m", "instance_id": "django__django.d26b2424.pr_11099", "repo": "django__django"},
        {
            "source_uid": "s",
            "instance_id": "django__django.0a1b2c3d.lm_rewrite__x1y2z3",
            "repo": "django__django",
        },
    )
    out = stage(benchmarks)(batch)
    assert out.dropped["source_uid"].to_list() == ["m"]
    assert "instance=django__django-11099" in out.dropped["detail"].item()
    assert out.kept["source_uid"].to_list() == ["s"]


def test_same_repo_at_benchmark_base_commit_is_dropped_but_unknown_commit_never_matches(
    benchmarks: pl.DataFrame,
) -> None:
    batch = work(
        {
            "source_uid": "full",
            "instance_id": "pool-task-1",
            "repo": "django/django",
            "base_commit": DJANGO_11099,
        },
        {
            "source_uid": "prefix",
            "instance_id": "pool-task-2",
            "repo": "Django__Django",
            "base_commit": DJANGO_11099[:8],
        },
        {"source_uid": "unknown", "instance_id": "pool-task-3", "repo": "django__django", "base_commit": ""},
        {
            "source_uid": "other_repo",
            "instance_id": "pool-task-4",
            "repo": "flask__flask",
            "base_commit": DJANGO_11099,
        },
    )
    out = stage(benchmarks)(batch)
    assert out.dropped["source_uid"].to_list() == ["full", "prefix"]
    assert all("by=repo+commit" in d and "instance=django__django-11099" in d for d in out.dropped["detail"])
    assert out.kept["source_uid"].to_list() == ["unknown", "other_repo"]


def test_gitgoodbench_by_sample_id_and_by_repo_and_commit_hash() -> None:
    ggb = pl.DataFrame(
        {
            "benchmark": ["gitgoodbench"] * 2,
            "instance_id": ["mockito_mockito_merge_0002"] * 2,
            "repo": ["mockito/mockito"] * 2,
            "base_commit": ["a" * 40, "b" * 40],
            "problem_statement": ["", ""],
            "patch": ["", ""],
        }
    )
    batch = work(
        {"source_uid": "id", "instance_id": "mockito_mockito_merge_0002", "repo": ""},
        {"source_uid": "parent", "instance_id": "x", "repo": "mockito__mockito", "base_commit": "b" * 40},
        {"source_uid": "keep", "instance_id": "y", "repo": "mockito__mockito", "base_commit": "c" * 40},
    )
    out = stage(ggb)(batch)
    assert out.dropped["source_uid"].to_list() == ["id", "parent"]
    assert out.kept["source_uid"].to_list() == ["keep"]


def test_catalog_task_at_same_commit_is_mapped_at_another_commit_is_not() -> None:
    catalog = pl.DataFrame(
        {
            "task_id": ["albedo-0001", "albedo-0002", "openswe-77"],
            "id_kind": ["albedo", "albedo", "open-swe"],
            "repo": ["pallets/flask", "psf/requests", "encode/httpx"],
            "commit": ["1111111aaaaaaa" + "0" * 26, "2222222bbbbbbb" + "0" * 26, "3333333ccccccc" + "0" * 26],
            "upstream_id": [
                "pallets__flask.1111111a.lm_rewrite__abc",
                "psf__requests-4242",
                "encode__httpx-9",
            ],
        }
    )
    batch = work(
        {
            "source_uid": "same",
            "instance_id": "pallets__flask.1111111a.lm_rewrite__abc",
            "repo": "pallets__flask",
        },
        {
            "source_uid": "moved",
            "instance_id": "psf__requests-4242",
            "repo": "psf__requests",
            "base_commit": "9999999" + "0" * 33,
        },
        {"source_uid": "unknown", "instance_id": "encode__httpx-9", "repo": "encode__httpx"},
        {"source_uid": "nocat", "instance_id": "foo__bar-1", "repo": "foo__bar", "base_commit": "abcdef1"},
    )
    out = stage(None, catalog)(batch)
    assert out.dropped.height == 0
    assert out.kept.select("source_uid", "instance_id", "id_kind", "upstream_id").rows() == [
        ("same", "albedo-0001", "albedo", "pallets__flask.1111111a.lm_rewrite__abc"),
        ("moved", "psf__requests-4242", "pool", "psf__requests-4242"),
        ("unknown", "encode__httpx-9", "pool", "encode__httpx-9"),
        ("nocat", "foo__bar-1", "pool", "foo__bar-1"),
    ]
    assert out.kept.columns == batch.columns


def test_no_benchmarks_and_no_catalog_keeps_everything_as_pool() -> None:
    batch = work(
        {
            "source_uid": "a",
            "instance_id": "django__django-11099",
            "repo": "django__django",
            "upstream_id": "orig-id",
        }
    )
    out = stage(None)(batch)
    assert out.kept.select("instance_id", "id_kind", "upstream_id").rows() == [
        ("django__django-11099", "pool", "orig-id")
    ]
