"""The published build made from the ledger and the held store: the stats, the datasets' shards
(reused where a dataset did not change) and the checks of the trees written."""

from __future__ import annotations

import hashlib
import shutil
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

import orjson
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.core.config import Config
from pipeline.io.faults import crashpoint
from pipeline.io.fileio import atomic_write_bytes, atomic_write_json
from pipeline.orchestration.progress import Reporter
from pipeline.store.held import INDEX_COLUMNS, ROW_FILE
from pipeline.store.ledger import (
    InvariantError,
    Stats,
    Validation,
    check_invariant,
    compute_stats,
    sorted_drops,
)
from pipeline.store.records import (
    IngestKey,
    decode_ingested,
)
from pipeline.store.state import State
from pipeline.store.unitfiles import parquet_bytes
from schemas.run import PUBLISHED, WORK, empty

if TYPE_CHECKING:  # the publisher is imported after the map (start-up)
    from pipeline.publish.shards import RowReader
from pipeline.orchestration.background import _Background
from pipeline.orchestration.commit import PendingCommit, _empty_index


def _materialise(
    state: State,
    config: Config,
    workdir: Path,
    rep: Reporter,
    pending: PendingCommit | None = None,
    names: _Background[list[str]] | None = None,
) -> tuple[Stats, list[str]]:
    """Ledger, stats and publish tree, rendered from the committed state plus ``pending``.

    The new build is written beside the published one, verified and sealed with its manifest;
    only then is ``pending`` recorded, and ``<workdir>/publish`` switched to it with one rename.
    A run that fails before the record leaves the state as it was; one killed after it
    re-renders the same build next time. ``names``: :func:`benchmark_tables`, when it was read
    while the map ran."""
    from pipeline.publish.publisher import publish_tree, stage_build, switch_build, write_manifest

    files = pending.files if pending else None
    commits = state.commits() + ([pending.meta] if pending else [])
    ingested: Counter[IngestKey] = Counter()
    counters: Counter[str] = Counter()
    for c in commits:
        ingested.update(decode_ingested(c.get("ingested", {})))
        counters.update(c.get("counters", {}))
    # stats need three narrow columns; the trees are written from a lazy scan, one dataset at a time
    published = state.published(columns=["source_uid", "dataset", "epoch"], pending=files)
    if published is None:
        published = empty(WORK).select("source_uid", "dataset", "epoch")
    drops = sorted_drops(state.ledger(pending=files))
    tables = names.result() if names is not None else benchmark_tables(config)
    stats = compute_stats(
        ingested,
        published,
        drops,
        counters,
        benchmarks_checked=not config.no_benchmarks,
        benchmark_tables=tables,
    )
    stats["raw_bytes"] = sum(c.get("raw_bytes", 0) for c in commits)
    stats["epochs"] = sorted({e for e in published.get_column("epoch").to_list() if e is not None})
    ledger_dir = workdir / "ledger"
    atomic_write_bytes(ledger_dir / "drops.parquet", parquet_bytes(drops.to_arrow()))
    if not stats["invariant"]["ok"]:
        write_stats(ledger_dir, stats)  # for `audit`: the books that did not balance
    check_invariant(stats)  # before anything is published
    crashpoint("before_publish")
    stage, current_intact = stage_build(workdir)
    written: dict[str, str] = {}  # sha256 of the files publish_tree wrote, hashed from their bytes
    try:
        with rep.stage("publish", total=1) as advance:
            index = state.published(columns=[*INDEX_COLUMNS, ROW_FILE], pending=files)
            sources = dataset_sources(index, {**state.held_files(), **(files or {})})
            datasets = publish_tree(
                index if index is not None else _empty_index(),
                drops,
                stats,
                stage,
                benchmarks_checked=not config.no_benchmarks,
                rows=_held_reader(state, files),
                threads=config.workers,
                reuse=reusable_shards(workdir / "publish", stage, state.root / SOURCES, sources),
                hashes=written,
            )
            advance()
        stats["validation"] = verify_trees(stage, datasets, stats)
        if not stats["validation"]["ok"]:
            write_stats(ledger_dir, stats)
            raise InvariantError(f"published trees failed verification: {stats['validation']['problems']}")
        manifest = write_manifest(stage, stats, known=written)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    if pending is not None:
        state.write_record(pending.seq, pending.units, pending.files, pending.meta)
    switch_build(workdir, stage, manifest, current_intact=current_intact)
    # after the switch: a run killed before this line only loses the reuse, never trusts a stale one
    atomic_write_json(state.root / SOURCES, {"build": manifest["build"], "sources": sources})
    write_stats(ledger_dir, stats)
    atomic_write_json(ledger_dir / "datasets.json", datasets)
    return stats, datasets


def _held_reader(state: State, pending: dict[str, str] | None) -> RowReader:
    """The publisher's reader of held rows. It reads each dataset's runs in consecutive
    source_uid ranges (one thread per dataset), so each dataset has its own ``carry`` of decoded
    row groups that straddle two ranges (:meth:`State.held_table`)."""
    from pipeline.publish.shards import ORDER

    carries: dict[str, dict[tuple[str, int], pa.Table]] = {}

    def read(keys: pl.DataFrame, columns: list[str]) -> pa.Table:
        datasets = keys.get_column("dataset").unique().to_list() if "dataset" in keys.columns else []
        carry = carries.setdefault(str(datasets[0]), {}) if len(datasets) == 1 else None
        return state.held_table(keys, columns, pending=pending, order=ORDER, carry=carry)

    return read


def benchmark_tables(config: Config) -> list[str]:
    """The names of the benchmark tables checked (for the card; no index is built here)."""
    if config.no_benchmarks or not config.benchmarks:
        return []
    from pipeline.reference.benchmarks import table_names
    from pipeline.stages.context import reference_cache

    return table_names(Path(config.benchmarks), reference_cache(config))


def dataset_sources(index: pl.DataFrame | None, file_sha: dict[str, str]) -> dict[str, str]:
    """Per dataset, a sha256 of what its shards are made from: the code, and each run's
    source_uid with the sha256 of the file holding its row. Equal sources give equal shards."""
    from pipeline.core.config import VERSION, code_fingerprint

    if index is None or not index.height:
        return {}
    pairs = index.select(
        "dataset", "source_uid", pl.col(ROW_FILE).replace_strict(file_sha, default="?").alias("sha")
    ).sort("dataset", "source_uid", "sha")
    out = {}
    for (ds,), part in pairs.group_by("dataset", maintain_order=True):
        h = hashlib.sha256(f"{VERSION}+{code_fingerprint()}\n".encode())
        for uid, sha in part.select("source_uid", "sha").iter_rows():
            h.update(f"{uid}\0{sha}\n".encode())
        out[str(ds)] = h.hexdigest()
    return out


SOURCES = "sources.json"  # state/sources.json: the published build's id and dataset_sources


def reusable_shards(current: Path, stage: Path, record: Path, sources: dict[str, str]) -> set[str]:
    """Datasets whose shards in the current build were made from the same sources (``record``,
    written for that very build) and were carried into ``stage`` intact (stage_build links only
    files that match their manifest): their shards are kept as they are, not encoded again."""
    from pipeline.publish.publisher import MANIFEST

    try:
        manifest = orjson.loads((current / MANIFEST).read_bytes())
        made = orjson.loads(record.read_bytes())
        build, files, before = manifest["build"], manifest["files"], made["sources"]
        if made["build"] != build or not isinstance(files, dict) or not isinstance(before, dict):
            return set()
    except (OSError, orjson.JSONDecodeError, KeyError, TypeError):
        return set()
    out = set()
    for ds, src in sources.items():
        shards = [rel for rel in files if isinstance(rel, str) and rel.startswith(f"{ds}/data/")]
        if before.get(ds) == src and shards and all((stage / rel).is_file() for rel in shards):
            out.add(ds)
    return out


def write_stats(ledger_dir: Path, stats: Stats) -> None:
    atomic_write_bytes(
        ledger_dir / "stats.json", orjson.dumps(stats, option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2)
    )


def verify_trees(publish_dir: Path, datasets: list[str], stats: Stats) -> Validation:
    """Check what was written, from the files alone: every shard has the published schema, and
    each dataset's shards hold exactly the rows the ledger says it published."""
    problems: list[str] = []
    expected = stats["published"]["by_dataset"]
    for ds in datasets:
        shards = sorted((publish_dir / ds / "data").glob("train-*.parquet"))
        if not (publish_dir / ds / "README.md").exists():
            problems.append(f"{ds}: no README.md card")
        rows = 0
        for shard in shards:
            meta = pq.read_metadata(shard)
            if not meta.schema.to_arrow_schema().remove_metadata().equals(PUBLISHED):
                problems.append(f"{shard.name} of {ds}: schema differs from schemas/run.py")
            rows += meta.num_rows
        if rows != expected.get(ds, 0):
            problems.append(f"{ds}: {rows} rows in shards, ledger says {expected.get(ds, 0)}")
    return {"ok": not problems, "datasets": len(datasets), "problems": problems}
