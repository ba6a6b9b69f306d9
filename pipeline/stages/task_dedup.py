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
keeps the pool's id. The keys of a batch's runs are polars expressions over the batch; the benchmark
and catalog indexes are dicts built once per worker, looked up per run (a batch holds tens of runs,
where each polars join cost a fixed few milliseconds).
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, ClassVar

import polars as pl

from pipeline.stages.base import Stage, StageOutput, drops_from
from pipeline.text.ids import SWESMITH_COMMIT_PATTERN, SWESMITH_PR_PATTERN
from schemas.run import DROPS, empty

if TYPE_CHECKING:
    from pipeline.stages.context import Context

MIN_COMMIT = 7  # shortest commit prefix that identifies a checkout (git's default abbreviation)
_IMAGE = r"^(?:.*/)?sweb\.eval\.(?:x86_64|arm64)\.(.+?)_1776_(.+)$"


def id_key(expr: pl.Expr) -> pl.Expr:
    """Comparable form of a task id (lower-case, PR mirrors and image names mapped to the id)."""
    e = expr.cast(pl.Utf8).fill_null("").str.strip_chars().str.to_lowercase()
    e = e.str.replace(_IMAGE, "${1}__${2}")
    return e.str.replace(SWESMITH_PR_PATTERN, "${1}-${2}")


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
        pl.col("instance_id")
        .cast(pl.Utf8)
        .fill_null("")
        .str.to_lowercase()
        .str.extract(SWESMITH_COMMIT_PATTERN, 1)
    )
    base = commit_key(pl.col("base_commit")) if "base_commit" in batch.columns else pl.lit("")
    return pl.when(base != "").then(base).otherwise(from_id.fill_null(""))


def commits_match(a: str, b: str) -> bool:
    """Two known commits (non-empty) of the same checkout: one is a prefix of the other."""
    return a != "" and b != "" and (a.startswith(b) or b.startswith(a))


Hit = tuple[str, str | None, str, str]  # how ("id" < "repo+commit"), benchmark, b_id, b_commit


def _null_first(value: str | None) -> tuple[bool, str]:
    """A sort key of a nullable string ordering a null first, as polars' sort does."""
    return value is not None, value or ""


def _first(hits: list[Hit]) -> Hit:
    """The hit reported: the least (how, benchmark, b_id, b_commit), a null benchmark first."""
    return min(hits, key=lambda h: (h[0], _null_first(h[1]), h[2], h[3]))


def _detail(hit: Hit) -> str | None:
    """The drop detail of a hit (None for a benchmark without a name: such a hit drops nothing)."""
    how, benchmark, b_id, b_commit = hit
    if benchmark is None:
        return None
    at = f" base_commit={b_commit[:12]}" if b_commit else ""
    return f"benchmark={benchmark} instance={b_id} by={how}{at}"


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
        # Indexes built once per worker as dicts: a batch (tens of runs) is looked up in Python, where
        # polars joins cost a fixed ~5 ms per batch. Ids, and (repo, commit prefix) for commit matching.
        self._by_id: dict[str, list[Hit]] = {}
        ids = (
            b.filter(pl.col("b_id") != "")
            .select(id_key(pl.col("b_id")).alias("id_k"), "benchmark", "b_id")
            .unique()
        )
        for id_k, benchmark, b_id in ids.iter_rows():
            self._by_id.setdefault(id_k, []).append(("id", benchmark, b_id, ""))
        self._by_commit: dict[tuple[str, str], list[Hit]] = {}
        commits = b.filter((pl.col("b_commit") != "") & (pl.col("repo_k") != "")).unique()
        for benchmark, b_id, repo_k, b_commit in commits.select(
            "benchmark", "b_id", "repo_k", "b_commit"
        ).iter_rows():
            self._by_commit.setdefault((repo_k, b_commit[:MIN_COMMIT]), []).append(
                ("repo+commit", benchmark, b_id, b_commit)
            )
        # A catalog task is found by the pool's id (its upstream_id) or by its own task_id.
        self._catalog: dict[str, list[tuple[str | None, str | None, str, str]]] | None = None
        cat = ctx.catalog_tasks
        if cat is not None and cat.height:
            cols = cat.select(
                pl.col("task_id").cast(pl.Utf8),
                pl.col("id_kind").cast(pl.Utf8),
                repo_key(pl.col("repo")).alias("repo_k"),
                commit_key(pl.col("commit")).alias("c_commit"),
                pl.col("upstream_id").cast(pl.Utf8).fill_null(""),
            )
            self._catalog = {}
            for task_id, id_kind, repo_k, c_commit, upstream in cols.unique().iter_rows():
                for key in {upstream, task_id} - {"", None}:
                    self._catalog.setdefault(key, []).append((task_id, id_kind, repo_k, c_commit))

    def _hit(self, ids: tuple[str, str], repo: str, commit: str) -> Hit | None:
        """The benchmark instance a run (its id keys, repo key and commit) is the task of, if any."""
        hits = [h for k in set(ids) - {""} for h in self._by_id.get(k, ())]
        if commit:
            hits += [
                h for h in self._by_commit.get((repo, commit[:MIN_COMMIT]), ()) if commits_match(commit, h[3])
            ]
        return _first(hits) if hits else None

    def _catalog_task(self, pool: str, repo: str, commit: str) -> tuple[str | None, str | None] | None:
        """(task_id, id_kind) of the run's catalog task at the same checkout (least task_id), if any."""
        assert self._catalog is not None
        found = [
            (task_id, id_kind)
            for task_id, id_kind, repo_k, c_commit in self._catalog.get(pool, ())
            if repo == repo_k and commits_match(commit, c_commit)
        ]
        # the least task_id (a null first); a tie (the task under two kinds) by kind, so that the
        # choice never depends on the index's order
        return min(found, key=lambda t: (_null_first(t[0]), _null_first(t[1]))) if found else None

    def process(self, batch: pl.DataFrame) -> StageOutput[pl.DataFrame]:
        upstream = (
            pl.col("upstream_id").cast(pl.Utf8).fill_null("")
            if "upstream_id" in batch.columns
            else pl.lit("")
        )
        keys = batch.select(
            id_key(pl.col("instance_id")).alias("id"),
            id_key(upstream).alias("up_id"),
            upstream.alias("upstream"),
            pl.col("instance_id").cast(pl.Utf8).fill_null("").alias("pool"),
            repo_key(pl.col("repo")).alias("repo"),
            run_checkout(batch).alias("commit"),
        )
        details: list[str | None] = []
        for id_k, up_k, _, _, repo, commit in keys.iter_rows():
            hit = self._hit((id_k, up_k), repo, commit)
            details.append(None if hit is None else _detail(hit))
        counters: Counter[str] = Counter()
        dropped = empty(DROPS)
        kept, kept_keys = batch, keys
        if any(d is not None for d in details):
            is_hit = pl.Series([d is not None for d in details], dtype=pl.Boolean)
            gone = batch.filter(is_hit)
            detail = pl.lit(pl.Series([d for d in details if d is not None], dtype=pl.Utf8))
            dropped = drops_from(gone, self.name, "benchmark_task", detail)
            kept, kept_keys = batch.filter(~is_hit), keys.filter(~is_hit)
            counters["benchmark_task"] = gone.height
        # upstream_id always keeps the pool's id; instance_id/id_kind come from the catalog only
        # for the same checkout.
        up_ids: list[str] = []
        inst: list[str | None] = []
        kinds: list[str] = []
        for (_, _, up, pool, repo, commit), orig in zip(
            kept_keys.iter_rows(), kept.get_column("instance_id").cast(pl.Utf8).to_list(), strict=True
        ):
            up_ids.append(up or pool)
            task = self._catalog_task(pool, repo, commit) if self._catalog is not None else None
            inst.append(orig if task is None or task[0] is None else task[0])
            kinds.append("pool" if task is None or task[1] is None else task[1])
        kept = kept.with_columns(
            pl.Series("upstream_id", up_ids, dtype=pl.Utf8),
            pl.Series("id_kind", kinds, dtype=pl.Utf8),
            pl.Series("instance_id", inst, dtype=pl.Utf8)
            if self._catalog is not None
            else pl.col("instance_id"),
        )
        out_cols = list(batch.columns) + [c for c in ("upstream_id", "id_kind") if c not in batch.columns]
        return StageOutput(kept.select(out_cols), dropped, counters)
