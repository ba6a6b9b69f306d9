"""The driver's decision over a run's new units: their rows placed in the held store, the global
steps (trajectory dedup against every held run) and the commit of what they decided."""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl
import pyarrow.parquet as pq

from pipeline.core.config import Config
from pipeline.io.fileio import file_sha256
from pipeline.orchestration.process import epoch_key
from pipeline.orchestration.progress import Reporter
from pipeline.sources.base import Unit
from pipeline.stages.base import drops_from
from pipeline.store.held import INDEX_COLUMNS, ROW_FILE, held_file, read_held
from pipeline.store.ledger import (
    sorted_drops,
)
from pipeline.store.records import (
    CommitMeta,
    IngestKey,
    UnitMeta,
    decode_ingested,
    encode_ingested,
)
from pipeline.store.rowbytes import ROW_BYTES
from pipeline.store.state import State
from pipeline.store.unitfiles import KEPT_NAMES, parquet_bytes
from schemas.run import DROPS, WORK, empty

if TYPE_CHECKING:  # the publisher is imported after the map (start-up)
    pass
from pipeline.orchestration.background import _Background


def signature_scheme(config: Config) -> str:
    from pipeline.dedup.keys import SIGNATURE_SCHEME

    return (
        SIGNATURE_SCHEME.format(shingle=config.dedup.shingle)
        + f"/perm{config.dedup.num_perm}-seed{config.dedup.seed}"
    )


def held_runs(state: State, config: Config) -> pl.DataFrame:
    """Dedup keys of every run already published or already in the catalog.

    Stored signatures are reused only when they were made with today's signature scheme;
    otherwise they are recomputed from the stored messages, so a library upgrade that changes
    token hashing can never let an old duplicate back in."""
    from pipeline.dedup.keys import add_dedup_keys

    scheme = signature_scheme(config)
    parts = []
    for commit in state.commits():
        path = state.root / "published" / f"{commit['seq']:06d}.parquet"
        if not path.exists() or not pq.read_schema(path).names:
            continue
        if commit.get("signature_scheme") == scheme:
            parts.append(pl.read_parquet(path, columns=["source_uid", "exact_hash", "minhash"]))
        else:
            index = pl.read_parquet(path, columns=["source_uid", "dataset", ROW_FILE])
            old = state.held_rows(index, ["source_uid", "messages"]) if index.height else index
            if old.height:
                parts.append(add_dedup_keys(old, config.dedup).select("source_uid", "exact_hash", "minhash"))
    if config.catalog:
        parts.append(catalog_keys(config, scheme))
    parts = [p for p in parts if p.height]
    if not parts:
        return pl.DataFrame(
            schema={"source_uid": pl.Utf8, "exact_hash": pl.Utf8, "minhash": pl.List(pl.UInt32)}
        )
    return pl.concat(parts, how="vertical_relaxed")


def catalog_keys(config: Config, scheme: str) -> pl.DataFrame:
    """Dedup keys of the catalog's runs, computed once per catalog content and signature scheme
    (a catalog of earlier datasets can be large; its keys are kept in the user-level reference
    cache, shared by every work dir, and computed in memory when that cannot be written)."""
    from pipeline.dedup.keys import add_dedup_keys
    from pipeline.reference.cache import cached_dir
    from pipeline.stages.context import reference_cache

    runs_dir = Path(config.catalog or "") / "runs"
    files = sorted(runs_dir.rglob("*.parquet")) if runs_dir.exists() else []
    empty_keys = pl.DataFrame(
        schema={"source_uid": pl.Utf8, "exact_hash": pl.Utf8, "minhash": pl.List(pl.UInt32)}
    )
    if not files:
        return empty_keys

    def compute() -> pl.DataFrame:
        cat = pl.concat([pl.read_parquet(f) for f in files], how="diagonal_relaxed")
        if not cat.height:
            return empty_keys
        return add_dedup_keys(cat, config.dedup).select(
            ("catalog:" + pl.col("source_uid").cast(pl.Utf8)).alias("source_uid"), "exact_hash", "minhash"
        )

    def build(tmp: Path) -> None:
        (tmp / "keys.parquet").write_bytes(parquet_bytes(compute().to_arrow()))

    fingerprint = hashlib.sha256(
        "\n".join([scheme, *(f"{f.relative_to(runs_dir)}:{file_sha256(f)}" for f in files)]).encode()
    ).hexdigest()[:24]
    cache = reference_cache(config)
    if cache is None:
        return compute()
    try:
        return pl.read_parquet(cached_dir(cache, f"catalog-keys-{fingerprint}", build) / "keys.parquet")
    except OSError:  # a cache that cannot be written
        return compute()


KEY_COLUMNS = ["source_uid", "epoch", "dataset", "resolved", "exact_hash", "minhash"]


@dataclass
class PendingCommit:
    """A run's decisions written to the store but not yet recorded: they count only once the
    build they make has been written and verified (then the record is written, then the switch)."""

    seq: int
    units: list[str]
    files: dict[str, str]
    meta: CommitMeta


@dataclass
class LoadedUnit:
    """What the driver reads of a processed unit: its meta, its drops, and the index columns of
    its kept runs, read from the copy of its rows already placed in the commit's part of the
    held store (``rel``, with its ``sha``; removed again if none of its runs is admitted)."""

    meta: UnitMeta
    drops: pl.DataFrame
    index: pl.DataFrame
    rel: str
    sha: str


def _load_unit(state: State, seq: int, unit_key: str, chash: str) -> LoadedUnit:
    """Verify a processed unit and copy its kept rows into run ``seq``'s part of the held store.

    The kept file is hashed once, as it is copied (a damaged cache file is refused there); its
    index is read from the copy, whose bytes are the ones hashed."""
    meta = state.read_unit_meta(unit_key, chash, unverified=KEPT_NAMES)
    rel, sha = state.hold_unit_rows(seq, unit_key, chash)
    drops = pl.read_parquet(state.unit_file(unit_key, chash, "drops.parquet"))
    return LoadedUnit(meta, drops, _index_of(state.root / rel), rel, sha)


def _decide(
    state: State,
    config: Config,
    new: list[Unit],
    refused: pl.DataFrame,
    chash: str,
    rep: Reporter,
    seq: int,
    loaded: dict[str, LoadedUnit] | None = None,
    held: _Background[pl.DataFrame] | None = None,
) -> PendingCommit:
    """The global step: trajectory dedup of the new runs against everything held; one commit.

    Only the dedup keys of the new runs are in memory at once; each unit's rows are copied as
    they are into the commit's part of the store (``loaded``: units already read while the map
    ran; the others are read here). The decisions are made in ``new``'s order. ``held``: the
    keys of the runs held before, when they were gathered while the map ran."""
    from pipeline.stages import GLOBAL_STEPS
    from pipeline.stages.context import Context
    from pipeline.stages.scrub import scrub_counter_names, scrub_ledger

    have = loaded or {}
    # taken out of ``loaded``: a unit's drops must not outlive the ledger made of them
    units = [
        have.pop(u.state_key) if u.state_key in have else _load_unit(state, seq, u.state_key, chash)
        for u in new
    ]
    metas = [lu.meta for lu in units]
    ingested: Counter[IngestKey] = Counter()
    counters: Counter[str] = Counter()
    for m in metas:
        ingested.update(decode_ingested(m["ingested"]))
        counters.update(m["counters"])
    for ep in refused.get_column("epoch").to_list():
        ingested["", epoch_key(ep)] += 1
    drops = [lu.drops for lu in units]
    drops.append(refused)
    # the index columns of every new run (rows stay where the workers wrote them)
    keys = (
        pl.concat(
            [lu.index.with_columns(pl.lit(i, pl.UInt32).alias("__part")) for i, lu in enumerate(units)],
            how="vertical_relaxed",
        )
        if units
        else None
    )
    admitted: pl.Series | None = None
    if keys is not None and keys.height:
        keys, taken = _taken_uids(state, keys)
        drops.append(taken)
    with rep.stage("traj_dedup", total=1) as advance:
        if keys is not None and keys.height:
            ctx = Context(
                config,
                benchmarks=None,
                catalog_tasks=None,
                held=held.result() if held is not None else held_runs(state, config),
            )
            batch = keys.select(KEY_COLUMNS).sort("source_uid")
            for step in GLOBAL_STEPS:
                res = step(ctx)(batch)
                batch = res.kept
                drops.append(res.dropped)
                counters.update(res.counters)
            admitted = batch.get_column("source_uid")
        advance()
    ledger = sorted_drops(
        scrub_ledger(pl.concat([d.select(DROPS.names) for d in drops], how="vertical_relaxed"))
    )
    # the ledger holds them now: a chunk of a million bad lines must not be held twice
    drops.clear()
    for lu in units:
        lu.drops = lu.drops.clear()

    # the commit's index: admitted runs unit by unit, by source_uid, each naming its unit's file
    index: list[pl.DataFrame] = []
    rows: dict[str, str] = {}
    if keys is not None and admitted is not None:
        keys = keys.filter(pl.col("source_uid").is_in(admitted))
        for (i,), part in sorted(keys.group_by("__part"), key=lambda kv: int(str(kv[0][0]))):
            lu = units[int(str(i))]
            rows[lu.rel] = lu.sha
            index.append(part.sort("source_uid").select(*INDEX_COLUMNS, pl.lit(lu.rel).alias(ROW_FILE)))
    del keys
    for lu in units:  # a unit none of whose runs is admitted holds no rows
        if lu.rel not in rows:
            (state.root / lu.rel).unlink(missing_ok=True)

    files = state.write_parts(seq, index, ledger, rows)
    counters = scrub_counter_names(counters)  # a tool or dialect name comes from the input
    return PendingCommit(
        seq,
        [u.state_key for u in new],
        files,
        {
            "ingested": encode_ingested(ingested),
            "counters": dict(sorted(counters.items())),
            "signature_scheme": signature_scheme(config),
            "raw_bytes": sum(m.get("raw_bytes", 0) for m in metas),
        },
    )


def _index_of(kept: Path) -> pl.DataFrame:
    """The index columns of a unit's kept runs (the narrow read; the publishing size is computed
    here only for a cache written without it)."""
    held = held_file(kept)
    if ROW_BYTES in held.names:
        return read_held(held, INDEX_COLUMNS)
    from pipeline.store.rowbytes import row_bytes_expr

    full = read_held(held)
    return full.with_columns(row_bytes_expr().alias(ROW_BYTES)).select(INDEX_COLUMNS)


def _empty_index() -> pl.DataFrame:
    return (
        empty(WORK)
        .with_columns(
            pl.lit(None, pl.Utf8).alias("exact_hash"),
            pl.lit(None, pl.List(pl.UInt32)).alias("minhash"),
            pl.lit(None, pl.Int64).alias(ROW_BYTES),
            pl.lit(None, pl.Utf8).alias(ROW_FILE),
        )
        .select(*INDEX_COLUMNS, ROW_FILE)
    )


def _taken_uids(state: State, keys: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Split new runs whose ``source_uid`` is already taken (published by an earlier run, or carried
    by an earlier input of this run: a shard re-published under its key with new content, two
    inputs with one name) from the rest. They are dropped as ``traj_dedup/duplicate_uid``, so a uid names
    exactly one published run."""
    held = state.published(columns=["source_uid"])
    earlier = pl.col("source_uid").is_in(held.get_column("source_uid") if held is not None else [])
    repeat = pl.int_range(pl.len()).over("source_uid") > 0
    marked = keys.with_columns(earlier.alias("__earlier"), repeat.alias("__repeat"))
    bad = pl.col("__earlier") | pl.col("__repeat")
    taken = drops_from(
        marked.filter(bad),
        "traj_dedup",
        "duplicate_uid",
        pl.when(pl.col("__earlier"))
        .then(pl.lit("source_uid already published by an earlier run"))
        .otherwise(pl.lit("source_uid carried by another input of this run")),
    )
    return marked.filter(~bad).drop("__earlier", "__repeat"), taken
