"""What every stage may read: the config and the reference tables (loaded once per worker)."""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from pipeline.core.config import Config


@dataclass
class Context:
    config: Config
    # the benchmark tables, concatenated: benchmark, instance_id, repo, base_commit,
    # problem_statement, patch. None when the user passed --no-benchmarks.
    benchmarks: pl.DataFrame | None
    # catalog tasks: task_id, id_kind, repo, commit, upstream_id. None when no catalog.
    catalog_tasks: pl.DataFrame | None
