"""The held store's row reads, against the polars reads they replaced (the specification).

Units are written through the real UnitWriter in uneven batches (several row groups per dataset,
rows out of order across batches), held by a commit, and read back for any set of runs: the
Arrow read (row groups chosen by their statistics, one ``take``) returns exactly the rows, in
exactly the order, that a polars scan of every held file filtered by source_uid returns.
"""

from __future__ import annotations

import itertools
import random
import re
from pathlib import Path

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline.core.config import DedupParams
from pipeline.dedup.keys import add_dedup_keys
from pipeline.orchestration.process import STAGE_ONLY
from pipeline.publish.shards import ORDER
from pipeline.store import state as state_module
from pipeline.store import unitfiles
from pipeline.store.held import INDEX_COLUMNS, ROW_FILE, read_held
from pipeline.store.records import UnitMeta
from pipeline.store.rowbytes import ROW_BYTES
from pipeline.store.state import State
from pipeline.store.unitfiles import KEPT_NAME, KEPT_NAMES
from schemas.run import DROPS, PUBLISHED, PUBLISHED_NAMES, WORK, empty, polars_schema
from tests.builders import published_row, work_frame

DATASETS = ["mini-coder-affine-bash", "mini-coder-affine-pi", "mini-coder-swe-lego-openhands"]


def spec_rows(state: State, index: pl.DataFrame, columns: list[str]) -> pl.DataFrame:
    """The former State.held_rows: per held file (in path order) a polars scan filtered by the
    runs' source_uids, concatenated."""
    frames = []
    for (rel,), keys in sorted(index.group_by(ROW_FILE), key=lambda kv: str(kv[0][0])):
        uids = keys.get_column("source_uid")
        path = state.root / str(rel)
        frames.append(
            (pl.scan_parquet(path) if path.suffix == ".parquet" else pl.scan_ipc(path))
            .filter(pl.col("source_uid").is_in(uids))
            .select(columns)
            .collect()
        )
    return pl.concat(frames, how="vertical_relaxed")


def held_store(
    tmp_path: Path,
    units: list[list[list[int]]],
    seed: int,
    buffer: int = unitfiles.KEPT_BUFFER_BYTES,
    formats: list[str] | None = None,
) -> tuple[State, pl.DataFrame]:
    """A state whose commit 0 holds ``units`` (per unit, its batches of run numbers), and its index;
    the unit writers hold ``buffer`` bytes of rows before writing them. ``formats``: per unit, the
    kept file it is written as (one of KEPT_NAMES: the Parquet of work dirs written before, or
    today's), by default today's."""
    state = State(tmp_path)
    rng = random.Random(seed)
    files: dict[str, str] = {}
    index = []
    for u, batches in enumerate(units):
        key = f"unit-{u}"
        writer = state.unit_writer(key, "cfg", formats[u] if formats else None)
        written = []
        for batch in batches:
            rows = [
                published_row(i, dataset=rng.choice(DATASETS), pad=rng.choice([0, 10, 3000])) for i in batch
            ]
            for r in rows:  # distinct per unit: the uid names the unit
                r["source_uid"] = f"{key}/{r['source_uid']}"
                r["model"] = rng.choice(["m-1", "m-2"])
            frame = work_frame(rows).with_columns(pl.lit(None, pl.Utf8).alias("problem_statement"))
            written.append(add_dedup_keys(frame, state_dedup()).drop(STAGE_ONLY))
            saved, unitfiles.KEPT_BUFFER_BYTES = unitfiles.KEPT_BUFFER_BYTES, buffer
            try:
                writer.write(written[-1])
            finally:
                unitfiles.KEPT_BUFFER_BYTES = saved
        writer.finish(
            add_dedup_keys(empty(WORK), state_dedup()).drop(STAGE_ONLY), empty(DROPS), unit_meta(key)
        )
        # the cache holds exactly the rows written, each with its publishing size
        kept = read_held(state.unit_file(key, "cfg", writer.kept_name))
        if written:
            assert kept.drop(ROW_BYTES).sort("source_uid").equals(pl.concat(written).sort("source_uid"))
        rel, sha = state.hold_unit_rows(0, key, "cfg")
        assert rel.endswith(Path(writer.kept_name).suffix)
        files[rel] = sha
        kept = read_held(state.root / rel, INDEX_COLUMNS)
        index.append(kept.with_columns(pl.lit(rel).alias(ROW_FILE)))
    frame = pl.concat(index)
    files = state.write_parts(0, [frame], empty(DROPS), files)
    state.write_record(0, [f"unit-{u}" for u in range(len(units))], files, {})
    return state, frame


def unit_meta(key: str) -> UnitMeta:
    """The meta of an ok affine unit with nothing ingested (what these tests finish units with)."""
    return {
        "unit": key,
        "source": "affine",
        "key": key,
        "url": "",
        "epoch": None,
        "verdict": "ok",
        "ingested": {},
        "counters": {},
        "raw_bytes": 0,
    }


def state_dedup() -> DedupParams:
    return DedupParams()


batches = st.lists(st.lists(st.integers(0, 60), min_size=0, max_size=9, unique=True), min_size=1, max_size=4)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    units=st.lists(batches, min_size=1, max_size=3),
    seed=st.integers(0, 2**16),
    pick=st.integers(0, 2**16),
    buffer=st.sampled_from([1, 20_000, unitfiles.KEPT_BUFFER_BYTES]),
    formats=st.lists(st.sampled_from(KEPT_NAMES), min_size=3, max_size=3),
)
def test_held_table_reads_exactly_the_rows_the_polars_scan_did(
    tmp_path_factory: pytest.TempPathFactory,
    units: list[list[list[int]]],
    seed: int,
    pick: int,
    buffer: int,
    formats: list[str],
) -> None:
    """Units held as today's Arrow IPC files, as the Parquet files of work dirs written before, or
    both (a work dir upgraded between two epochs): the same rows, in the same order."""
    # run numbers are unique within a unit (one uid per run), batches may be empty
    seen: set[int] = set()
    units = [[[i for i in b if not (i in seen or seen.add(i))] for b in u] for u in units]  # type: ignore[func-returns-value]
    seen.clear()
    state, index = held_store(tmp_path_factory.mktemp("held"), units, seed, buffer, formats)
    if not index.height:
        return
    rng = random.Random(pick)
    # what the publisher asks: one dataset's runs, a source_uid range of them; and any subset
    ds = rng.choice(index.get_column("dataset").unique().to_list())
    ordered = index.filter(pl.col("dataset") == ds).sort(ORDER)
    a = rng.randrange(ordered.height)
    b = rng.randrange(a, ordered.height) + 1
    subset = index.filter(pl.Series([rng.random() < 0.6 for _ in range(index.height)]))
    for keys in (ordered.slice(a, b - a), subset, index):
        if not keys.height:
            continue
        want = spec_rows(state, keys, PUBLISHED_NAMES)
        got = state.held_table(keys, PUBLISHED_NAMES, order=ORDER)
        assert got.num_rows == keys.height
        assert got.cast(PUBLISHED).equals(want.sort(ORDER, maintain_order=True).to_arrow().cast(PUBLISHED)), (
            "sorted rows differ"
        )
        unordered = state.held_rows(keys, ["source_uid", "messages", "dataset"])
        assert unordered.equals(spec_rows(state, keys, ["source_uid", "messages", "dataset"]))


def test_a_held_file_named_by_no_commit_is_refused(tmp_path: Path) -> None:
    from pipeline.store.records import StateDamaged

    state, index = held_store(tmp_path, [[[1, 2, 3]]], 0)
    stray = index.with_columns(pl.lit("published/000000/elsewhere.parquet").alias(ROW_FILE))
    with pytest.raises(StateDamaged, match="no commit holds"):
        state.held_table(stray, PUBLISHED_NAMES)


@pytest.mark.parametrize("kept_name", KEPT_NAMES)
def test_a_held_file_unreadable_in_its_format_is_state_damage(tmp_path: Path, kept_name: str) -> None:
    from pipeline.store.records import StateDamaged

    state, index = held_store(tmp_path, [[[1, 2, 3]]], 0, formats=[kept_name])
    junk = b"PAR1 not a parquet file PAR1" if kept_name.endswith(".parquet") else b"ARROW1\0\0 not IPC ARROW1"
    (state.root / str(index.get_column(ROW_FILE)[0])).write_bytes(junk)
    with pytest.raises(StateDamaged, match="--rebuild"):
        State(tmp_path).held_table(index, PUBLISHED_NAMES)


@settings(max_examples=60, deadline=None)
@given(
    chunks=st.lists(st.integers(0, 6), min_size=1, max_size=5),
    picks=st.lists(st.integers(0, 10_000), max_size=150),
    stretch=st.booleans(),
)
def test_gather_is_take_in_one_chunk(chunks: list[int], picks: list[int], stretch: bool) -> None:
    """_gather (slices of ascending stretches, or a take when rows are scattered) returns exactly
    ``take`` of the rows, as one chunk per column, over any chunking."""
    import numpy as np
    import pyarrow as pa

    from pipeline.store.unitfiles import _gather

    start = 0
    parts = []
    for n in chunks:
        values = [f"r{i}" * (i % 3) for i in range(start, start + n)]
        numbers = pa.array(range(start, start + n), pa.int64())
        parts.append(pa.table({"v": pa.array(values, pa.string()), "n": numbers}))
        start += n
    table = pa.concat_tables(parts)
    if not table.num_rows:
        return
    if stretch:  # sorted runs, as read from sorted files: a few ascending stretches
        rows = np.array(sorted({p % table.num_rows for p in picks}), dtype=np.int64)
    else:
        rows = np.array([p % table.num_rows for p in picks], dtype=np.int64)
    got = _gather(table, rows)
    assert got.equals(table.take(pa.array(rows, pa.int64())))
    assert all(col.num_chunks <= 1 for col in got.columns)


@pytest.mark.parametrize("kept_name", KEPT_NAMES)
def test_a_processed_unit_is_loaded_with_its_kept_rows_hashed_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kept_name: str
) -> None:
    """The driver verifies a unit's kept file by the hash it takes while copying it into the held
    store, not by a second hash before: the copy holds the cache's bytes (in the cache's format),
    and the index is the cache's index columns."""
    from pipeline.io import fileio
    from pipeline.orchestration.commit import _load_unit

    held_store(tmp_path, [[[1, 2, 3], [4]]], 0, formats=[kept_name])
    state = State(tmp_path)  # nothing verified yet in this process
    kept = state.cache_dir("unit-0", "cfg") / kept_name
    hashed: list[Path] = []

    def counting(path: Path) -> str:
        hashed.append(path)
        return fileio.file_sha256(path)

    monkeypatch.setattr(state_module, "file_sha256", counting)
    loaded = _load_unit(state, 1, "unit-0", "cfg")
    assert kept not in hashed and (kept.parent / "drops.parquet") in hashed
    copy = state.root / loaded.rel
    assert loaded.rel == f"published/000001/unit-0-cfg{kept.suffix}"
    assert copy.read_bytes() == kept.read_bytes() and loaded.sha == fileio.file_sha256(kept)
    spec = pl.read_parquet(kept) if kept.suffix == ".parquet" else pl.read_ipc(kept)
    assert loaded.index.equals(spec.select(INDEX_COLUMNS))


@pytest.mark.parametrize("kept_name", KEPT_NAMES)
@pytest.mark.parametrize("damage", ["bitflip", "delete"])
def test_a_damaged_kept_file_of_a_processed_unit_is_refused_and_not_copied(
    tmp_path: Path, damage: str, kept_name: str
) -> None:
    from pipeline.orchestration.commit import _load_unit
    from pipeline.store.records import StateDamaged

    held_store(tmp_path, [[[1, 2, 3]]], 0, formats=[kept_name])
    state = State(tmp_path)
    kept = state.cache_dir("unit-0", "cfg") / kept_name
    if damage == "delete":
        kept.unlink()
    else:
        data = bytearray(kept.read_bytes())
        data[len(data) // 2] ^= 0x01
        kept.write_bytes(bytes(data))
    with pytest.raises(StateDamaged, match=re.escape(kept_name) + ".*--rebuild"):
        _load_unit(state, 1, "unit-0", "cfg")
    assert not list((state.root / "published").glob("000001/*"))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    units=st.lists(batches, min_size=1, max_size=3),
    seed=st.integers(0, 2**16),
    cuts=st.lists(st.integers(1, 2**16), max_size=6),
    buffer=st.sampled_from([1, 20_000, unitfiles.KEPT_BUFFER_BYTES]),
    formats=st.lists(st.sampled_from(KEPT_NAMES), min_size=3, max_size=3),
)
def test_consecutive_ranges_read_with_a_carry_are_the_plain_reads_each_group_decoded_once(
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    units: list[list[list[int]]],
    seed: int,
    cuts: list[int],
    buffer: int,
    formats: list[str],
) -> None:
    """How the publisher reads a dataset: consecutive source_uid ranges, one shard row group each.
    With a carry, every range holds exactly the rows the plain read returns, and no held row
    group is decoded twice (one that straddles two ranges is taken from the carry)."""
    seen: set[int] = set()
    units = [[[i for i in b if not (i in seen or seen.add(i))] for b in u] for u in units]  # type: ignore[func-returns-value]
    state, index = held_store(tmp_path_factory.mktemp("held"), units, seed, buffer, formats)
    if not index.height:
        return
    for ds in sorted(index.get_column("dataset").unique().to_list()):
        ordered = index.filter(pl.col("dataset") == ds).sort(ORDER)
        bounds = sorted({0, ordered.height, *(c % ordered.height for c in cuts)})
        carry: dict[tuple[str, int], object] = {}
        groups_read: list[tuple[str, int]] = []
        with monkeypatch.context() as m:
            m.setattr(state_module.State, "_read_groups", _spy(state_module.State._read_groups, groups_read))
            for a, b in itertools.pairwise(bounds):
                keys = ordered.slice(a, b - a)
                got = state.held_table(keys, PUBLISHED_NAMES, order=ORDER, carry=carry)  # type: ignore[arg-type]
                want = state.held_table(keys, PUBLISHED_NAMES, order=ORDER)
                assert got.equals(want)
        assert len(groups_read) == len(set(groups_read)), "a held row group was decoded twice"


def _spy(read_groups: object, log: list[tuple[str, int]]) -> object:
    """``State._read_groups`` that logs the (file, part) pairs it decodes (not those carried)."""

    def spy(held, want, columns, hi, carry, kept):  # type: ignore[no-untyped-def]
        if carry is not None:
            log.extend((str(held.path), g) for g in want if (str(held.path), g) not in carry)
        return read_groups(held, want, columns, hi, carry, kept)  # type: ignore[operator]

    return staticmethod(spy)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    q=st.lists(st.integers(0, 5), max_size=4),
    d=st.lists(st.integers(0, 5), max_size=4),
    discard_d=st.booleans(),
)
def test_unit_drops_file_holds_the_q_entries_then_the_d_ones(
    tmp_path_factory: pytest.TempPathFactory, q: list[int], d: list[int], discard_d: bool
) -> None:
    """drops.parquet of a finished unit, whichever kinds were written (one kind's file is renamed
    into place, two are copied into one): the quarantine entries, then the stage drops, in the
    order written, with the drops schema; discarded stage drops are gone."""
    state = State(tmp_path_factory.mktemp("drops"))
    writer = state.unit_writer("unit-0", "cfg")

    def frame(kind: str, batch: int, n: int) -> pl.DataFrame:
        return pl.DataFrame(
            {
                "source_uid": [f"{kind}{batch}#{i}" for i in range(n)],
                "epoch": [batch] * n,
                "dataset": [""] * n,
                "stage": ["quarantine" if kind == "q" else "parse"] * n,
                "reason": ["bad_json" if kind == "q" else "bad_shape"] * n,
                "detail": [f"detail {i}" for i in range(n)],
            }
        ).cast(empty(DROPS).schema)

    want_q = [frame("q", b, n) for b, n in enumerate(q)]
    want_d = [frame("d", b, n) for b, n in enumerate(d)]
    for a, b in itertools.zip_longest(want_q, want_d):
        for kind, f in (("q", a), ("d", b)):
            if f is not None:
                writer.write_drops(kind, f)
    if discard_d:
        writer.discard_drops("d")
    writer.finish(
        add_dedup_keys(empty(WORK), state_dedup()).drop(STAGE_ONLY), empty(DROPS), unit_meta("unit-0")
    )
    got = pl.read_parquet(state.unit_file("unit-0", "cfg", "drops.parquet"))
    want = pl.concat([empty(DROPS), *want_q, *([] if discard_d else want_d)])
    assert got.equals(want)
    assert sorted(p.name for p in state.cache_dir("unit-0", "cfg").iterdir()) == sorted(
        ["drops.parquet", KEPT_NAME, "meta.json"]
    )


def _nullable(values: st.SearchStrategy[object]) -> st.SearchStrategy[object]:
    return st.one_of(st.none(), values)


TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
MESSAGE = st.fixed_dictionaries(
    {"role": _nullable(st.sampled_from(["user", "assistant"])), "content": _nullable(TEXT)}
)


@st.composite
def any_rows(draw: st.DrawFn, n: int) -> list[dict[str, object]]:
    """Rows of every kept column type: strings, bools, ints, a list of structs and a list of
    uint32, each null or empty where its type allows (source_uid, the key, is never null)."""
    rows = []
    for i in range(n):
        row: dict[str, object] = {}
        for name, dtype in polars_schema(WORK).items():
            if name in STAGE_ONLY:
                continue
            if name == "source_uid":
                row[name] = f"uid-{i:03d}-" + draw(TEXT)
            elif name == "dataset":
                row[name] = draw(_nullable(st.sampled_from(DATASETS)))
            elif name == "messages":
                row[name] = draw(_nullable(st.lists(_nullable(MESSAGE), max_size=3)))
            elif dtype == pl.Boolean:
                row[name] = draw(_nullable(st.booleans()))
            elif dtype == pl.Int32:
                row[name] = draw(_nullable(st.integers(-(2**31), 2**31 - 1)))
            elif dtype == pl.Int64:
                row[name] = draw(_nullable(st.integers(-(2**63), 2**63 - 1)))
            else:
                row[name] = draw(_nullable(TEXT))
        row["exact_hash"] = draw(_nullable(TEXT))
        row["minhash"] = draw(_nullable(st.lists(st.integers(0, 2**32 - 1), max_size=4)))
        rows.append(row)
    return rows


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    data=st.data(),
    sizes=st.lists(st.integers(0, 6), min_size=1, max_size=3),
    buffer=st.sampled_from([1, 2**25]),
)
@pytest.mark.parametrize("kept_name", KEPT_NAMES)
def test_every_kept_column_type_round_trips_with_nulls_and_nested_lists(
    tmp_path_factory: pytest.TempPathFactory,
    data: st.DataObject,
    sizes: list[int],
    buffer: int,
    kept_name: str,
) -> None:
    """A unit's kept file, in either format, holds exactly the rows written (every value, null,
    empty list and nested struct), with their types; the index read is its index columns."""
    schema = {k: v for k, v in polars_schema(WORK).items() if k not in STAGE_ONLY}
    schema |= {"exact_hash": pl.String, "minhash": pl.List(pl.UInt32)}
    written, start = [], 0
    for n in sizes:
        rows = data.draw(any_rows(n))
        for r in rows:
            r["source_uid"] = f"{start:03d}{r['source_uid']}"  # unique across batches
            start += 1
        written.append(pl.DataFrame(rows, schema=schema))
    state = State(tmp_path_factory.mktemp("types"))
    writer = state.unit_writer("unit-0", "cfg", kept_name)
    saved, unitfiles.KEPT_BUFFER_BYTES = unitfiles.KEPT_BUFFER_BYTES, buffer
    try:
        for frame in written:
            writer.write(frame)
    finally:
        unitfiles.KEPT_BUFFER_BYTES = saved
    writer.finish(pl.DataFrame(schema=schema), empty(DROPS), unit_meta("unit-0"))
    path = state.unit_file("unit-0", "cfg", kept_name)
    got = read_held(path)
    want = pl.concat(written)
    assert got.drop(ROW_BYTES).sort("source_uid").equals(want.sort("source_uid"))
    assert got.drop(ROW_BYTES).schema == want.schema
    index = read_held(path, INDEX_COLUMNS)
    assert index.equals(got.select(INDEX_COLUMNS))
