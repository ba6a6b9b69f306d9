"""Task-level dedup: drop runs whose task IS a benchmark task; resolve catalog task ids.

A run is a benchmark task (``task_dedup/benchmark_task``) when
- its id equals a benchmark instance id, compared case-insensitively after normalising
  SWE-smith PR mirrors (``owner__repo.<sha8>.pr_N`` -> ``owner__repo-N``, the SWE-bench id of
  the same PR) and SWE-bench image names (``sweb.eval.x86_64.owner_1776_repo-N``); or
- it works on the same repo at the benchmark's base commit (prefix match, >= 7 hex digits on
  both sides; an unknown commit never matches). GitGoodBench rows carry one row per scenario
  commit, so they match by repo + any of those hashes.

Then the catalog: a run keeps the catalog's ``task_id`` (and its ``id_kind``) only when a catalog
task with its pool id (``upstream_id``, or already ``task_id``) sits at the SAME checkout
(repo + commit); otherwise ``id_kind = "pool"`` and its pool id stays. ``upstream_id`` always
keeps the pool's id. Everything is polars joins over the batch: no per-row Python.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, ClassVar

import polars as pl

from pipeline.stages.base import Stage, StageOutput, drops_from

if TYPE_CHECKING:
    from pipeline.core.context import Context

MIN_COMMIT = 7  # shortest commit prefix that identifies a checkout (git's default abbreviation)
_SWESMITH_PR = r"^(.+?)\.[0-9a-f]{8}\.pr_(\d+)$"
_SWESMITH_COMMIT = r"^[^.]+__[^.]+\.([0-9a-f]{8})\."
_IMAGE = r"^(?:.*/)?sweb\.eval\.(?:x86_64|arm64)\.(.+?)_1776_(.+)$"


def id_key(expr: pl.Expr) -> pl.Expr:
    """Comparable form of a task id (lower-case, PR mirrors and image names mapped to the id)."""
    e = expr.cast(pl.Utf8).fill_null("").str.strip_chars().str.to_lowercase()
    e = e.str.replace(_IMAGE, "${1}__${2}")
    return e.str.replace(_SWESMITH_PR, "${1}-${2}")


def repo_key(expr: pl.Expr) -> pl.Expr:
    """``owner/repo``, ``owner__repo``, ``https://github.com/owner/repo.git`` -> ``owner__repo``."""
    e = expr.cast(pl.Utf8).fill_null("").str.strip_chars().str.to_lowercase()
    e = e.str.replace(r"^(?:https?://)?github\.com/", "").str.replace(r"\.git$", "")
    return e.str.replace("/", "__", literal=True)


def commit_key(expr: pl.Expr) -> pl.Expr:
    """Lower-case commit hash, or "" when it is too short or not hex (unknown)."""
    e = expr.cast(pl.Utf8).fill_null("").str.strip_chars().str.to_lowercase()
    ok = e.str.contains(rf"^[0-9a-f]{{{MIN_COMMIT},40}}$")
    return pl.when(ok).then(e).otherwise(pl.lit(""))


def run_checkout(batch: pl.DataFrame) -> pl.Expr:
    """The run's commit: ``base_commit``, else the commit8 of a SWE-smith id, else ""."""
    from_id = (
        pl.col("instance_id").cast(pl.Utf8).fill_null("").str.to_lowercase().str.extract(_SWESMITH_COMMIT, 1)
    )
    base = commit_key(pl.col("base_commit")) if "base_commit" in batch.columns else pl.lit("")
    return pl.when(base != "").then(base).otherwise(from_id.fill_null(""))


def _commits_match(left: str, right: str) -> pl.Expr:
    a, b = pl.col(left), pl.col(right)
    return (a != "") & (b != "") & (a.str.starts_with(b) | b.str.starts_with(a))


class TaskDedup(Stage):
    name = "task_dedup"
    reasons: ClassVar[tuple[str, ...]] = ("benchmark_task",)
    corpus_level = True

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx)
        bench = ctx.benchmarks
        if bench is None:
            bench = pl.DataFrame(
                schema={c: pl.Utf8 for c in ("benchmark", "instance_id", "repo", "base_commit")}
            )
        b = bench.select(
            pl.col("benchmark").cast(pl.Utf8),
            pl.col("instance_id").cast(pl.Utf8).fill_null("").alias("b_id"),
            repo_key(pl.col("repo")).alias("repo_k"),
            commit_key(pl.col("base_commit")).alias("b_commit"),
        )
        # Indexes built once per worker: ids, and (repo, commit prefix) for commit matching.
        self._bench_ids = (
            b.filter(pl.col("b_id") != "")
            .with_columns(id_key(pl.col("b_id")).alias("id_k"))
            .select("id_k", "benchmark", "b_id")
            .unique()
            .sort("id_k", "benchmark", "b_id")
        )
        self._bench_commits = (
            b.filter((pl.col("b_commit") != "") & (pl.col("repo_k") != ""))
            .with_columns(pl.col("b_commit").str.slice(0, MIN_COMMIT).alias("c7"))
            .select("repo_k", "c7", "b_commit", "benchmark", "b_id")
            .unique()
            .sort("benchmark", "b_id")
        )
        cat = ctx.catalog_tasks
        self._catalog: pl.DataFrame | None = None
        if cat is not None and cat.height:
            cols = cat.select(
                pl.col("task_id").cast(pl.Utf8),
                pl.col("id_kind").cast(pl.Utf8),
                repo_key(pl.col("repo")).alias("repo_k"),
                commit_key(pl.col("commit")).alias("c_commit"),
                pl.col("upstream_id").cast(pl.Utf8).fill_null(""),
            )
            # A catalog task is found by the pool's id (its upstream_id) or by its own task_id.
            self._catalog = (
                pl.concat(
                    [
                        cols.select(
                            pl.col("upstream_id").alias("key"), "task_id", "id_kind", "repo_k", "c_commit"
                        ),
                        cols.select(
                            pl.col("task_id").alias("key"), "task_id", "id_kind", "repo_k", "c_commit"
                        ),
                    ]
                )
                .filter(pl.col("key") != "")
                .unique()
                .sort("key", "task_id")
            )

    def _benchmark_hits(self, runs: pl.DataFrame) -> pl.DataFrame:
        """``__row, detail`` of the runs that are benchmark tasks (first hit per run)."""
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
        by_id = ids.join(self._bench_ids, on="id_k", how="inner").select(
            "__row", "benchmark", "b_id", pl.lit("id").alias("how"), pl.lit("").alias("b_commit")
        )
        by_commit = (
            runs.filter(pl.col("__commit") != "")
            .with_columns(pl.col("__commit").str.slice(0, MIN_COMMIT).alias("c7"))
            .join(self._bench_commits, left_on=["__repo", "c7"], right_on=["repo_k", "c7"], how="inner")
            .filter(_commits_match("__commit", "b_commit"))
            .select("__row", "benchmark", "b_id", pl.lit("repo+commit").alias("how"), "b_commit")
        )
        hits = (
            pl.concat([by_id, by_commit])
            .sort("__row", "how", "benchmark", "b_id")
            .unique("__row", keep="first")
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
        return hits.select("__row", detail.alias("__detail"))

    def _catalog_map(self, runs: pl.DataFrame) -> pl.DataFrame:
        """``__row, task_id, id_kind`` of the runs whose catalog task is at the same checkout."""
        assert self._catalog is not None
        return (
            runs.select("__row", "__pool", "__repo", "__commit")
            .join(self._catalog, left_on="__pool", right_on="key", how="inner")
            .filter((pl.col("__repo") == pl.col("repo_k")) & _commits_match("__commit", "c_commit"))
            .sort("__row", "task_id")
            .unique("__row", keep="first")
            .select("__row", pl.col("task_id").alias("__task_id"), pl.col("id_kind").alias("__id_kind"))
        )

    def process(self, batch: pl.DataFrame) -> StageOutput[pl.DataFrame]:
        upstream = (
            pl.col("upstream_id").cast(pl.Utf8).fill_null("")
            if "upstream_id" in batch.columns
            else pl.lit("")
        )
        pool = pl.col("instance_id").cast(pl.Utf8).fill_null("")
        runs = batch.with_row_index("__row").with_columns(
            upstream.alias("__upstream"),
            pool.alias("__pool"),
            repo_key(pl.col("repo")).alias("__repo"),
            run_checkout(batch).alias("__commit"),
        )
        hits = self._benchmark_hits(runs)
        runs = runs.join(hits, on="__row", how="left", maintain_order="left")
        is_hit = pl.col("__detail").is_not_null()
        gone = runs.filter(is_hit)
        dropped = drops_from(gone, self.name, "benchmark_task", pl.col("__detail"))
        kept = runs.filter(~is_hit)
        # upstream_id always keeps the pool's id; instance_id/id_kind come from the catalog only
        # for the same checkout.
        kept = kept.with_columns(
            pl.when(pl.col("__upstream") != "")
            .then(pl.col("__upstream"))
            .otherwise(pl.col("__pool"))
            .alias("upstream_id")
        )
        if self._catalog is not None:
            mapped = self._catalog_map(kept)
            kept = kept.join(mapped, on="__row", how="left", maintain_order="left").with_columns(
                pl.coalesce(pl.col("__task_id"), pl.col("instance_id")).alias("instance_id"),
                pl.coalesce(pl.col("__id_kind"), pl.lit("pool")).alias("id_kind"),
            )
        else:
            kept = kept.with_columns(pl.lit("pool").alias("id_kind"))
        out_cols = list(batch.columns) + [c for c in ("upstream_id", "id_kind") if c not in batch.columns]
        kept = kept.select(out_cols)
        counters: Counter[str] = Counter()
        if gone.height:
            counters["benchmark_task"] = gone.height
        return StageOutput(kept, dropped, counters)
