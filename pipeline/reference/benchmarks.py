"""Benchmark tables: load them from a folder, or pull them from the Hugging Face Hub.

Every table is normalised to the six Utf8 columns of :data:`COLUMNS` ("" where the source has no
value). One row per (benchmark, task, commit): GitGoodBench scenarios name several commits
(merge commit and parents, or the oldest/newest commit of a file chain), so they become one row
per commit hash and the task-dedup stage matches all of them by repo + commit.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import polars as pl

from pipeline.core.config import code_fingerprint
from pipeline.io.fileio import atomic_path, file_sha256
from pipeline.reference.cache import cached_dir

COLUMNS: list[str] = ["benchmark", "instance_id", "repo", "base_commit", "problem_statement", "patch"]

# Source column names, most specific first.
_ID_COLS = ("instance_id", "sample_id", "id", "task_id", "instance")
_REPO_COLS = ("repo", "repo_name", "full_name", "name")
_COMMIT_COLS = ("base_commit", "base_sha", "commit", "sha")
_STATEMENT_COLS = ("problem_statement", "problem", "statement", "issue")
_PATCH_COLS = ("patch", "gold_patch", "golden_patch", "fix_patch")
# Tables that describe something other than evaluation tasks (PROVENANCE.md: the SWE-smith repo
# pool is the training pool's repo list, not a benchmark).
_NOT_BENCHMARK_COLS = ("swesmith_repo_key",)
_TABLE_EXTS = (".parquet", ".jsonl", ".json", ".csv")
_HEX40 = r"\b[0-9a-f]{40}\b"


class NoBenchmarksError(FileNotFoundError):
    """The benchmark folder holds no benchmark table."""


def benchmark_name(path: Path) -> str:
    """``swebench_full_test_ids.csv`` -> ``swebench_full``; ``gitgoodbench_partial.csv`` -> ``gitgoodbench``."""
    stem = path.name
    for ext in _TABLE_EXTS:
        stem = stem.removesuffix(ext)
    stem = re.sub(r"-\d{5}-of-\d{5}$", "", stem)  # Hub shard suffixes
    return re.sub(r"(_test_ids|_ids|_partial)$", "", stem.lower())


def _first(cols: Iterable[str], names: tuple[str, ...]) -> str | None:
    present = set(cols)
    return next((n for n in names if n in present), None)


def _text(frame: pl.DataFrame, names: tuple[str, ...]) -> pl.Expr:
    col = _first(frame.columns, names)
    if col is None:
        return pl.lit("")
    expr = pl.col(col)
    if isinstance(frame.schema[col], pl.List):
        expr = expr.cast(pl.List(pl.Utf8)).list.join(" ")
    return expr.cast(pl.Utf8).fill_null("").str.strip_chars()


def normalise_table(frame: pl.DataFrame, benchmark: str) -> pl.DataFrame | None:
    """One source table in :data:`COLUMNS` form, or None when it is not a benchmark task table."""
    cols = set(frame.columns)
    if cols & set(_NOT_BENCHMARK_COLS):
        return None
    if "benchmark" in cols and set(COLUMNS) <= cols:  # already normalised (written by `pull`)
        return frame.select(pl.col(c).cast(pl.Utf8).fill_null("") for c in COLUMNS)
    if {"kind", "value"} <= cols:  # gitgoodbench_partial.csv: sample ids and repo names
        kind = pl.col("kind").str.strip_chars()
        return frame.select(
            pl.lit(benchmark).alias("benchmark"),
            pl.when(kind == "sample_id").then(pl.col("value")).otherwise(pl.lit("")).alias("instance_id"),
            pl.when(kind == "repo_name").then(pl.col("value")).otherwise(pl.lit("")).alias("repo"),
            pl.lit("").alias("base_commit"),
            pl.lit("").alias("problem_statement"),
            pl.lit("").alias("patch"),
        )
    if _first(cols, _ID_COLS) is None and not {"org", "repo", "number"} <= cols:
        return None
    if {"org", "repo", "number"} <= cols and "instance_id" not in cols:  # Multi-SWE-bench
        org, repo = pl.col("org").cast(pl.Utf8), pl.col("repo").cast(pl.Utf8)
        inst = pl.concat_str([org, pl.lit("__"), repo, pl.lit("-"), pl.col("number").cast(pl.Utf8)])
        repo_e = pl.concat_str([org, pl.lit("/"), repo])
    else:
        inst = _text(frame, _ID_COLS)
        repo_e = _text(frame, _REPO_COLS)
    if "base" in cols and isinstance(frame.schema["base"], pl.Struct):
        commit = pl.col("base").struct.field("sha").cast(pl.Utf8).fill_null("")
    else:
        commit = _text(frame, _COMMIT_COLS)
    out = frame.select(
        pl.lit(benchmark).alias("benchmark"),
        inst.alias("instance_id"),
        repo_e.alias("repo"),
        commit.alias("base_commit"),
        _text(frame, _STATEMENT_COLS).alias("problem_statement"),
        _text(frame, _PATCH_COLS).alias("patch"),
        # GitGoodBench rows carry their commits inside a JSON `scenario` column
        (
            pl.col("scenario").cast(pl.Utf8).fill_null("").str.extract_all(_HEX40)
            if "scenario" in cols
            else pl.lit(None, dtype=pl.List(pl.Utf8))
        ).alias("__hashes"),
    )
    if "scenario" in cols:
        out = (
            out.with_columns(
                pl.when(pl.col("__hashes").list.len() > 0)
                .then(pl.col("__hashes"))
                .otherwise(pl.concat_list(pl.col("base_commit")))
                .alias("__hashes")
            )
            .explode("__hashes")
            .with_columns(pl.col("__hashes").fill_null("").alias("base_commit"))
        )
    return out.drop("__hashes").with_columns(pl.col(c).fill_null("") for c in COLUMNS[1:])


def read_table(path: Path) -> pl.DataFrame:
    """Read one table file with every column kept (CSV as strings: commits are not numbers)."""
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        return pl.read_parquet(path)
    if suffix == ".csv":
        return pl.read_csv(path, infer_schema=False)
    if suffix == ".jsonl" or (suffix == ".json" and path.read_bytes()[:1].strip() != b"["):
        return pl.read_ndjson(path, infer_schema_length=None)
    return pl.read_json(path, infer_schema_length=None)


def _table_paths(folder: Path) -> list[Path]:
    """The table files under ``folder``; :class:`NoBenchmarksError` when the folder is missing."""
    if not folder.is_dir():
        raise NoBenchmarksError(
            f"benchmark folder {folder} does not exist; run `trajpipe benchmarks pull` "
            "or pass --no-benchmarks"
        )
    # Hidden folders (the Hub download cache of `pull`) hold raw files, not tables.
    return sorted(
        p
        for p in folder.rglob("*")
        if p.is_file()
        and p.suffix.lower() in _TABLE_EXTS
        and not any(part.startswith(".") for part in p.relative_to(folder).parts)
    )


def load_benchmarks(folder: Path) -> pl.DataFrame:
    """Every benchmark table under ``folder`` (recursively), concatenated in :data:`COLUMNS` form.

    Raises :class:`NoBenchmarksError` when the folder is missing or holds no benchmark table.
    """
    folder = Path(folder)
    paths = _table_paths(folder)
    frames: list[pl.DataFrame] = []
    for path in paths:
        table = normalise_table(read_table(path), benchmark_name(path))
        if table is not None and table.height:
            frames.append(table)
    if not frames:
        raise NoBenchmarksError(
            f"no benchmark table (.parquet/.jsonl/.json/.csv with task ids) in {folder}; "
            "run `trajpipe benchmarks pull` or pass --no-benchmarks"
        )
    return pl.concat(frames, how="vertical").unique(maintain_order=True)


def tables_key(folder: Path) -> str:
    """Content key of the benchmark tables under ``folder``: sha256 over each table file's path
    (relative) and bytes, and the code that reads them."""
    folder = Path(folder)
    h = hashlib.sha256(f"tables:{code_fingerprint()}".encode())
    for path in _table_paths(folder):
        h.update(f"\0{path.relative_to(folder).as_posix()}\0{file_sha256(path)}".encode())
    return h.hexdigest()[:24]


def load_benchmarks_cached(folder: Path, cache: Path | None) -> tuple[pl.DataFrame, str]:
    """:func:`load_benchmarks` and the tables' content key; with ``cache`` (the user-level reference
    cache), the table is read once per content into ``cache/tables-<key>/benchmarks.arrow`` and
    memory-mapped by every later process and run."""
    key = tables_key(folder)
    if cache is None:
        return load_benchmarks(folder), key

    def build(tmp: Path) -> None:
        load_benchmarks(folder).write_ipc(tmp / "benchmarks.arrow", compression="uncompressed")

    try:
        return pl.read_ipc(cached_dir(cache, f"tables-{key}", build) / "benchmarks.arrow"), key
    except OSError:  # a cache that cannot be written: read the tables as they are
        return load_benchmarks(folder), key


def table_names(folder: Path, cache: Path | None) -> list[str]:
    """The benchmark names of the tables under ``folder`` (for the card), sorted."""
    frame, _ = load_benchmarks_cached(folder, cache)
    return sorted(set(frame.get_column("benchmark").to_list()))


# --- pulling from the Hub -------------------------------------------------------------------


@dataclass(frozen=True)
class HubBenchmark:
    name: str
    repo_id: str
    # data files whose path contains one of these split names (case-insensitive) are taken
    splits: tuple[str, ...] = ("test", "dev")


# The evaluation sets a run must never leak. Training splits are never pulled.
HUB_BENCHMARKS: tuple[HubBenchmark, ...] = (
    HubBenchmark("swebench_full", "princeton-nlp/SWE-bench"),
    HubBenchmark("swebench_lite", "princeton-nlp/SWE-bench_Lite"),
    HubBenchmark("swebench_verified", "princeton-nlp/SWE-bench_Verified"),
    HubBenchmark("swebench_multimodal", "princeton-nlp/SWE-bench_Multimodal"),
    HubBenchmark("swebench_multilingual", "SWE-bench/SWE-bench_Multilingual"),
    HubBenchmark(
        "swebench_live", "SWE-bench-Live/SWE-bench-Live", ("test", "dev", "full", "verified", "lite")
    ),
    HubBenchmark("swebench_pro", "ScaleAI/SWE-bench_Pro"),
    HubBenchmark("multi_swe_bench", "ByteDance-Seed/Multi-SWE-bench", ("",)),
    HubBenchmark("gitgoodbench", "JetBrains/git_good_bench", ("",)),
    HubBenchmark("gitgoodbench_lite", "gitgood/git_good_bench-lite", ("",)),
)


class HubApi(Protocol):
    """The two ``huggingface_hub.HfApi`` methods the pull uses (so a test can pass a fake)."""

    def list_repo_files(self, repo_id: str, *, repo_type: str | None = None) -> list[str]: ...

    def hf_hub_download(
        self,
        repo_id: str,
        filename: str,
        *,
        repo_type: str | None = None,
        cache_dir: str | Path | None = None,
    ) -> str: ...


def _data_files(files: list[str], splits: tuple[str, ...]) -> list[str]:
    keep = []
    for f in sorted(files):
        low = f.lower()
        if not low.endswith(_TABLE_EXTS) or "train" in Path(low).name or Path(low).name.startswith("."):
            continue
        if any(s in low for s in splits):
            keep.append(f)
    return keep


def _write_atomic(frame: pl.DataFrame, path: Path) -> None:
    with atomic_path(path) as tmp:
        frame.write_parquet(tmp, compression="zstd")


def pull_benchmarks(
    to: Path, api: HubApi | Any | None = None, names: Iterable[str] | None = None
) -> list[Path]:
    """Download the benchmarks of :data:`HUB_BENCHMARKS` (or only ``names``) into ``to``.

    Each benchmark becomes ``to/<name>.parquet`` in :data:`COLUMNS` form, readable by
    :func:`load_benchmarks`. Raw Hub files are cached under ``to/.hub``. Fails (after writing
    the ones that worked) when a benchmark has no data file or cannot be downloaded.
    """
    if api is None:
        from huggingface_hub import HfApi

        api = HfApi()
    to = Path(to)
    to.mkdir(parents=True, exist_ok=True)
    wanted = set(names) if names is not None else None
    written: list[Path] = []
    failures: list[str] = []
    for bench in HUB_BENCHMARKS:
        if wanted is not None and bench.name not in wanted:
            continue
        try:
            files = _data_files(api.list_repo_files(bench.repo_id, repo_type="dataset"), bench.splits)
            if not files:
                raise FileNotFoundError(f"no test/dev data file in {bench.repo_id}")
            frames = []
            for f in files:
                local = Path(
                    api.hf_hub_download(bench.repo_id, f, repo_type="dataset", cache_dir=to / ".hub")
                )
                table = normalise_table(read_table(local), bench.name)
                if table is not None:
                    frames.append(table)
            if not frames:
                raise ValueError(f"{bench.repo_id}: no file had task ids")
            out = to / f"{bench.name}.parquet"
            _write_atomic(pl.concat(frames, how="vertical").unique(maintain_order=True), out)
            written.append(out)
        except Exception as exc:
            failures.append(f"{bench.name} ({bench.repo_id}): {exc}")
    if failures:
        raise RuntimeError("could not pull: " + "; ".join(failures))
    return written
