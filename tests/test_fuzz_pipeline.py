"""Hostile records through the whole per-unit path: nothing crashes, nothing is lost.

Records are mutations of a valid view record (keys deleted, values of the wrong type, random
node graphs, huge or NUL-laden strings); every line of the chunk must come out either kept or
in the ledger with a reason."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import polars as pl
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline.core.config import Config
from pipeline.orchestration.process import process_unit
from pipeline.sources import affine
from tests.corpus_kit import add_epoch, view_record
from tests.fuzzing import examples

junk = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.text(max_size=40),
    st.lists(st.integers(0, 5), max_size=3),
    st.dictionaries(st.text(max_size=5), st.none(), max_size=2),
    st.just("\x00" * 10),
    st.just("é\r\n" * 500),
)


@st.composite
def hostile_record(draw: st.DrawFn) -> dict[str, Any]:
    rec = copy.deepcopy(view_record(f"r{draw(st.integers(0, 10**6))}"))
    for _ in range(draw(st.integers(0, 4))):
        action = draw(st.sampled_from(["drop_key", "retype", "node_retype", "parent", "content"]))
        if action == "drop_key" and rec:
            rec.pop(draw(st.sampled_from(sorted(rec))), None)
        elif action == "retype" and rec:
            rec[draw(st.sampled_from(sorted(rec)))] = draw(junk)
        elif isinstance(rec.get("nodes"), list) and rec["nodes"]:
            i = draw(st.integers(0, len(rec["nodes"]) - 1))
            node = rec["nodes"][i]
            if action == "node_retype":
                rec["nodes"][i] = draw(junk)
            elif action == "parent" and isinstance(node, dict):
                node["parent"] = draw(st.one_of(st.none(), st.integers(-3, len(rec["nodes"]) + 3), junk))
            elif isinstance(node, dict):
                node["content"] = draw(junk)
    return rec


@settings(
    max_examples=examples(30),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(records=st.lists(hostile_record(), min_size=1, max_size=6))
def test_every_hostile_record_is_kept_or_explained(tmp_path_factory, records: list[dict[str, Any]]) -> None:
    root = tmp_path_factory.mktemp("fz")
    add_epoch(root / "c", 1, [records])
    (unit,), _ = affine.list_units(str(root / "c"))
    cfg = Config(affine=(str(root / "c"),), workdir=str(root / "w"), no_benchmarks=True, workers=1)
    meta = process_unit(unit, cfg, cfg.workdir)
    cache = Path(cfg.workdir) / "state" / "cache"
    (d,) = list(cache.iterdir())
    kept = pl.read_ipc(d / "kept.arrow")
    drops = pl.read_parquet(d / "drops.parquet")
    assert kept.height + drops.height == len(records) == sum(meta["ingested"].values())
    assert drops.filter(pl.col("reason") == "crash").height == 0, drops.filter(pl.col("reason") == "crash")[
        "detail"
    ]
    assert (drops["reason"].str.len_chars() > 0).all()
