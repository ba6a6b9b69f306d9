"""The held store's row reads, against the polars reads they replaced (the specification).

Units are written through the real UnitWriter in uneven batches (several row groups per dataset,
rows out of order across batches), held by a commit, and read back for any set of runs: the
Arrow read (row groups chosen by their statistics, one ``take``) returns exactly the rows, in
exactly the order, that a polars scan of every held file filtered by source_uid returns.
"""

from __future__ import annotations

import itertools
import random
from pathlib import Path

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline.core import state as state_module
from pipeline.core.config import DedupParams
from pipeline.core.state import INDEX_COLUMNS, ROW_BYTES, ROW_FILE, State, UnitMeta
from pipeline.dedup.keys import add_dedup_keys
from pipeline.orchestration.process import STAGE_ONLY
from pipeline.publish.shards import ORDER
from schemas.run import DROPS, PUBLISHED, PUBLISHED_NAMES, WORK, empty
from tests.builders import published_row, work_frame

DATASETS = ["mini-coder-affine-bash", "mini-coder-affine-pi", "mini-coder-swe-lego-openhands"]


def spec_rows(state: State, index: pl.DataFrame, columns: list[str]) -> pl.DataFrame:
    """The former State.held_rows: per held file (in path order) a polars scan filtered by the
    runs' source_uids, concatenated."""
    frames = []
    for (rel,), keys in sorted(index.group_by(ROW_FILE), key=lambda kv: str(kv[0][0])):
        uids = keys.get_column("source_uid")
        frames.append(
            pl.scan_parquet(state.root / str(rel))
            .filter(pl.col("source_uid").is_in(uids))
            .select(columns)
            .collect()
        )
    return pl.concat(frames, how="vertical_relaxed")


def held_store(
    tmp_path: Path, units: list[list[list[int]]], seed: int, buffer: int = state_module.KEPT_BUFFER_BYTES
) -> tuple[State, pl.DataFrame]:
    """A state whose commit 0 holds ``units`` (per unit, its batches of run numbers), and its index;
    the unit writers hold ``buffer`` bytes of rows before writing them."""
    state = State(tmp_path)
    rng = random.Random(seed)
    files: dict[str, str] = {}
    index = []
    for u, batches in enumerate(units):
        key = f"unit-{u}"
        writer = state.unit_writer(key, "cfg")
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
            saved, state_module.KEPT_BUFFER_BYTES = state_module.KEPT_BUFFER_BYTES, buffer
            try:
                writer.write(written[-1])
            finally:
                state_module.KEPT_BUFFER_BYTES = saved
        writer.finish(
            add_dedup_keys(empty(WORK), state_dedup()).drop(STAGE_ONLY), empty(DROPS), unit_meta(key)
        )
        # the cache holds exactly the rows written, each with its publishing size
        kept = pl.read_parquet(state.unit_file(key, "cfg", "kept.parquet"))
        if written:
            assert kept.drop(ROW_BYTES).sort("source_uid").equals(pl.concat(written).sort("source_uid"))
        rel, sha = state.hold_unit_rows(0, key, "cfg")
        files[rel] = sha
        kept = pl.read_parquet(state.root / rel, columns=INDEX_COLUMNS)
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
    buffer=st.sampled_from([1, 20_000, state_module.KEPT_BUFFER_BYTES]),
)
def test_held_table_reads_exactly_the_rows_the_polars_scan_did(
    tmp_path_factory: pytest.TempPathFactory, units: list[list[list[int]]], seed: int, pick: int, buffer: int
) -> None:
    # run numbers are unique within a unit (one uid per run), batches may be empty
    seen: set[int] = set()
    units = [[[i for i in b if not (i in seen or seen.add(i))] for b in u] for u in units]  # type: ignore[func-returns-value]
    seen.clear()
    state, index = held_store(tmp_path_factory.mktemp("held"), units, seed, buffer)
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
    from pipeline.core.state import StateDamaged

    state, index = held_store(tmp_path, [[[1, 2, 3]]], 0)
    stray = index.with_columns(pl.lit("published/000000/elsewhere.parquet").alias(ROW_FILE))
    with pytest.raises(StateDamaged, match="no commit holds"):
        state.held_table(stray, PUBLISHED_NAMES)


def test_a_held_file_unreadable_as_parquet_is_state_damage(tmp_path: Path) -> None:
    from pipeline.core.state import StateDamaged

    state, index = held_store(tmp_path, [[[1, 2, 3]]], 0)
    (state.root / str(index.get_column(ROW_FILE)[0])).write_bytes(b"PAR1 not a parquet file PAR1")
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

    from pipeline.core.state import _gather

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


def test_a_processed_unit_is_loaded_with_its_kept_rows_hashed_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The driver verifies a unit's kept.parquet by the hash it takes while copying it into the held
    store, not by a second hash before: the copy holds the cache's bytes, and the index is the
    cache's index columns."""
    from pipeline.io import fileio
    from pipeline.orchestration.runner import _load_unit

    held_store(tmp_path, [[[1, 2, 3], [4]]], 0)
    state = State(tmp_path)  # nothing verified yet in this process
    kept = state.cache_dir("unit-0", "cfg") / "kept.parquet"
    hashed: list[Path] = []

    def counting(path: Path) -> str:
        hashed.append(path)
        return fileio.file_sha256(path)

    monkeypatch.setattr(state_module, "file_sha256", counting)
    loaded = _load_unit(state, 1, "unit-0", "cfg")
    assert kept not in hashed and (kept.parent / "drops.parquet") in hashed
    copy = state.root / loaded.rel
    assert loaded.rel == "published/000001/unit-0-cfg.parquet"
    assert copy.read_bytes() == kept.read_bytes() and loaded.sha == fileio.file_sha256(kept)
    assert loaded.index.equals(pl.read_parquet(kept, columns=INDEX_COLUMNS))


@pytest.mark.parametrize("damage", ["bitflip", "delete"])
def test_a_damaged_kept_file_of_a_processed_unit_is_refused_and_not_copied(
    tmp_path: Path, damage: str
) -> None:
    from pipeline.core.state import StateDamaged
    from pipeline.orchestration.runner import _load_unit

    held_store(tmp_path, [[[1, 2, 3]]], 0)
    state = State(tmp_path)
    kept = state.cache_dir("unit-0", "cfg") / "kept.parquet"
    if damage == "delete":
        kept.unlink()
    else:
        data = bytearray(kept.read_bytes())
        data[len(data) // 2] ^= 0x01
        kept.write_bytes(bytes(data))
    with pytest.raises(StateDamaged, match=r"kept\.parquet.*--rebuild"):
        _load_unit(state, 1, "unit-0", "cfg")
    assert not list((state.root / "published").glob("000001/*"))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    units=st.lists(batches, min_size=1, max_size=3),
    seed=st.integers(0, 2**16),
    cuts=st.lists(st.integers(1, 2**16), max_size=6),
    buffer=st.sampled_from([1, 20_000, state_module.KEPT_BUFFER_BYTES]),
)
def test_consecutive_ranges_read_with_a_carry_are_the_plain_reads_each_group_decoded_once(
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    units: list[list[list[int]]],
    seed: int,
    cuts: list[int],
    buffer: int,
) -> None:
    """How the publisher reads a dataset: consecutive source_uid ranges, one shard row group each.
    With a carry, every range holds exactly the rows the plain read returns, and no held row
    group is decoded twice (one that straddles two ranges is taken from the carry)."""
    seen: set[int] = set()
    units = [[[i for i in b if not (i in seen or seen.add(i))] for b in u] for u in units]  # type: ignore[func-returns-value]
    state, index = held_store(tmp_path_factory.mktemp("held"), units, seed, buffer)
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
    """``State._read_groups`` that logs the (file, row group) pairs it decodes (not those carried)."""

    def spy(path, meta, want, columns, groups, hi, carry, kept):  # type: ignore[no-untyped-def]
        if carry is not None:
            log.extend((str(path), g) for g in want if (str(path), g) not in carry)
        return read_groups(path, meta, want, columns, groups, hi, carry, kept)  # type: ignore[operator]

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
    assert sorted(p.name for p in state.cache_dir("unit-0", "cfg").iterdir()) == [
        "drops.parquet",
        "kept.parquet",
        "meta.json",
    ]
