"""Task dedup's dict lookups decide exactly what the polars joins they replaced decided.

``_joins`` is a reference copy of the stage as it was (every match a polars join over the batch);
hypothesis draws batches, benchmark tables and catalogs from small pools of ids, repos and commits
(PR mirrors, image names, commit prefixes, nulls) so that runs hit by id, by repo + commit, both, or
not at all, and compares kept rows, ledger rows and counters.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from pipeline.core.config import Config
from pipeline.stages.base import drops_from
from pipeline.stages.context import Context
from pipeline.stages.task_dedup import MIN_COMMIT, TaskDedup, commit_key, id_key, repo_key, run_checkout
from schemas.run import WORK, polars_schema

# Commits of the pool differ in their first MIN_COMMIT digits, so two benchmark rows never tie on
# (how, benchmark, instance) with different commits (the joins' unstable sort left such ties open).
COMMITS = ["1111111aaaa" + "0" * 29, "2222222bbbb" + "0" * 29, "abcdef1234", "abcdef0", "9" * 40]
IDS = [
    "django__django-11099",
    "Django__Django-11099 ",
    "django__django.1a2b3c4d.pr_11099",
    "sweb.eval.x86_64.django_1776_django-11099",
    "psf__requests-4242",
    "psf__requests.2222222b.lm_rewrite__x",
    "mockito_mockito_merge_0002",
    "",
]
REPOS = ["django/django", "django__django", "https://github.com/psf/requests.git", "psf/requests", "", "x/y"]


def _commit(draw: st.DrawFn) -> str | None:
    c = draw(st.sampled_from([*COMMITS, "", "xyz", None]))
    if c and draw(st.booleans()):
        c = c[: draw(st.integers(3, len(c)))]  # a prefix, maybe too short to count
    return c


@st.composite
def tables(draw: st.DrawFn) -> tuple[pl.DataFrame, pl.DataFrame | None, pl.DataFrame]:
    n = draw(st.integers(0, 6))
    bench = pl.DataFrame(
        {
            "benchmark": [
                draw(st.sampled_from(["swebench_lite", "swebench_verified", "gitgoodbench", None]))
                for _ in range(n)
            ],
            "instance_id": [draw(st.sampled_from([*IDS, None])) for _ in range(n)],
            "repo": [draw(st.sampled_from(REPOS)) for _ in range(n)],
            "base_commit": [draw(st.sampled_from([*COMMITS, "", "xyz"])) for _ in range(n)],
        },
        schema={c: pl.Utf8 for c in ("benchmark", "instance_id", "repo", "base_commit")},
    )
    catalog = None
    if draw(st.booleans()):
        k = draw(st.integers(1, 4))
        task_ids = [
            draw(st.sampled_from(["albedo-1", "albedo-2", "psf__requests-4242", None])) for _ in range(k)
        ]
        catalog = pl.DataFrame(
            {
                "task_id": task_ids,
                "id_kind": [None if t is None else f"kind-{t[-1]}" for t in task_ids],  # one kind per task
                "repo": [draw(st.sampled_from(REPOS)) for _ in range(k)],
                "commit": [draw(st.sampled_from([*COMMITS, ""])) for _ in range(k)],
                "upstream_id": [draw(st.sampled_from([*IDS, None])) for _ in range(k)],
            },
            schema={c: pl.Utf8 for c in ("task_id", "id_kind", "repo", "commit", "upstream_id")},
        )
    schema = polars_schema(WORK)
    rows = [
        {
            "source_uid": f"u{i}",
            "epoch": 1,
            "dataset": "d",
            "instance_id": draw(st.sampled_from([*IDS, None])),
            "upstream_id": draw(st.sampled_from(["", None, *IDS[:3]])),
            "repo": draw(st.sampled_from([*REPOS, None])),
            "base_commit": _commit(draw),
            "messages": [],
        }
        for i in range(draw(st.integers(1, 8)))
    ]
    batch = pl.DataFrame([{k: r.get(k) for k in schema} for r in rows], schema=schema)
    return bench, catalog, batch


def _match(left: str, right: str) -> pl.Expr:
    a, b = pl.col(left), pl.col(right)
    return (a != "") & (b != "") & (a.str.starts_with(b) | b.str.starts_with(a))


def _joins(bench: pl.DataFrame, cat: pl.DataFrame | None, batch: pl.DataFrame) -> Any:
    """The stage before (reference copy): (kept, dropped, counters) from polars joins."""
    b = bench.select(
        pl.col("benchmark").cast(pl.Utf8),
        pl.col("instance_id").cast(pl.Utf8).fill_null("").alias("b_id"),
        repo_key(pl.col("repo")).alias("repo_k"),
        commit_key(pl.col("base_commit")).alias("b_commit"),
    )
    bench_ids = (
        b.filter(pl.col("b_id") != "")
        .with_columns(id_key(pl.col("b_id")).alias("id_k"))
        .select("id_k", "benchmark", "b_id")
        .unique()
    )
    bench_commits = (
        b.filter((pl.col("b_commit") != "") & (pl.col("repo_k") != ""))
        .with_columns(pl.col("b_commit").str.slice(0, MIN_COMMIT).alias("c7"))
        .select("repo_k", "c7", "b_commit", "benchmark", "b_id")
        .unique()
    )
    catalog = None
    if cat is not None and cat.height:
        cols = cat.select(
            pl.col("task_id").cast(pl.Utf8),
            pl.col("id_kind").cast(pl.Utf8),
            repo_key(pl.col("repo")).alias("repo_k"),
            commit_key(pl.col("commit")).alias("c_commit"),
            pl.col("upstream_id").cast(pl.Utf8).fill_null(""),
        )
        keyed = ("task_id", "id_kind", "repo_k", "c_commit")
        catalog = (
            pl.concat(
                [
                    cols.select(pl.col("upstream_id").alias("key"), *keyed),
                    cols.select(pl.col("task_id").alias("key"), *keyed),
                ]
            )
            .filter(pl.col("key") != "")
            .unique()
        )
    runs = batch.with_row_index("__row").with_columns(
        pl.col("upstream_id").cast(pl.Utf8).fill_null("").alias("__upstream"),
        pl.col("instance_id").cast(pl.Utf8).fill_null("").alias("__pool"),
        repo_key(pl.col("repo")).alias("__repo"),
        run_checkout(batch).alias("__commit"),
    )
    ids = (
        pl.concat(
            [
                runs.select("__row", id_key(pl.col("instance_id")).alias("id_k")),
                runs.select("__row", id_key(pl.col("__upstream")).alias("id_k")),
            ]
        )
        .filter(pl.col("id_k") != "")
        .unique()
    )
    by_id = ids.join(bench_ids, on="id_k").select(
        "__row", "benchmark", "b_id", pl.lit("id").alias("how"), pl.lit("").alias("b_commit")
    )
    by_commit = (
        runs.filter(pl.col("__commit") != "")
        .with_columns(pl.col("__commit").str.slice(0, MIN_COMMIT).alias("c7"))
        .join(bench_commits, left_on=["__repo", "c7"], right_on=["repo_k", "c7"])
        .filter(_match("__commit", "b_commit"))
        .select("__row", "benchmark", "b_id", pl.lit("repo+commit").alias("how"), "b_commit")
    )
    hits = (
        pl.concat([by_id, by_commit]).sort("__row", "how", "benchmark", "b_id").unique("__row", keep="first")
    )
    detail = pl.concat_str(
        [
            pl.lit("benchmark="),
            pl.col("benchmark"),
            pl.lit(" instance="),
            pl.col("b_id"),
            pl.lit(" by="),
            pl.col("how"),
            pl.when(pl.col("b_commit") != "")
            .then(pl.lit(" base_commit=") + pl.col("b_commit").str.slice(0, 12))
            .otherwise(pl.lit("")),
        ]
    )
    runs = runs.join(
        hits.select("__row", detail.alias("__detail")), on="__row", how="left", maintain_order="left"
    )
    is_hit = pl.col("__detail").is_not_null()
    gone = runs.filter(is_hit)
    kept = runs.filter(~is_hit).with_columns(
        pl.when(pl.col("__upstream") != "")
        .then(pl.col("__upstream"))
        .otherwise(pl.col("__pool"))
        .alias("upstream_id")
    )
    if catalog is not None:
        mapped = (
            kept.select("__row", "__pool", "__repo", "__commit")
            .join(catalog, left_on="__pool", right_on="key")
            .filter((pl.col("__repo") == pl.col("repo_k")) & _match("__commit", "c_commit"))
            .sort("__row", "task_id")
            .unique("__row", keep="first")
            .select("__row", pl.col("task_id").alias("__task_id"), pl.col("id_kind").alias("__id_kind"))
        )
        kept = kept.join(mapped, on="__row", how="left", maintain_order="left").with_columns(
            pl.coalesce(pl.col("__task_id"), pl.col("instance_id")).alias("instance_id"),
            pl.coalesce(pl.col("__id_kind"), pl.lit("pool")).alias("id_kind"),
        )
    else:
        kept = kept.with_columns(pl.lit("pool").alias("id_kind"))
    counters = Counter({"task_dedup/benchmark_task": gone.height} if gone.height else {})
    return (
        kept.select(batch.columns),
        drops_from(gone, "task_dedup", "benchmark_task", pl.col("__detail")),
        counters,
    )


@settings(max_examples=300, deadline=None)
@given(tables())
def test_lookups_decide_what_the_joins_decided(
    case: tuple[pl.DataFrame, pl.DataFrame | None, pl.DataFrame],
) -> None:
    bench, catalog, batch = case
    out = TaskDedup(Context(config=Config(), benchmarks=bench, catalog_tasks=catalog))(batch)
    kept, dropped, counters = _joins(bench, catalog, batch)
    assert_frame_equal(out.kept, kept)
    assert_frame_equal(out.dropped, dropped)
    assert out.counters == counters
