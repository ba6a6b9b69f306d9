"""What every stage may read: the config and the reference tables (loaded once per worker)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import polars as pl

from pipeline.core.config import Config
from pipeline.reference.cache import reference_dir


@dataclass
class Context:
    config: Config
    # the benchmark tables, concatenated: benchmark, instance_id, repo, base_commit,
    # problem_statement, patch. None when the user passed --no-benchmarks.
    benchmarks: pl.DataFrame | None
    # catalog tasks: task_id, id_kind, repo, commit, upstream_id. None when no catalog.
    catalog_tasks: pl.DataFrame | None
    # content key of the benchmark table files ("" when the tables came from elsewhere) and the folder
    # where indexes derived from them are cached by that key (None: built in memory, not cached)
    benchmarks_key: str = ""
    cache: Path | None = None
    # the dedup keys (source_uid, exact_hash, minhash, ...) of every run already published or in the
    # catalog: what the global step compares new runs with (None in a worker)
    held: pl.DataFrame | None = None


def reference_cache(config: Config) -> Path | None:
    """Where the reference tables, their indexes and the catalog's keys are cached by content: the
    user-level cache (``config.cache_dir``, else ``$TRAJPIPE_CACHE``, ``$XDG_CACHE_HOME/trajpipe``,
    ``~/.cache/trajpipe``), shared by every work dir; None when there is no home to put it in."""
    return reference_dir(config.cache_dir)
