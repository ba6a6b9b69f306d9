"""Sources: manifests, epochs, sha256 verification and quarantine, SWE-Lego files, HTTP."""

from __future__ import annotations

import functools
import gzip
import http.server
import threading
from pathlib import Path

import orjson
import polars as pl
import pytest

from pipeline.core.config import Limits
from pipeline.core.episode import Quarantined, RawRun
from pipeline.io.http import UnsafeKey, resolve_key
from pipeline.sources import affine, swelego
from pipeline.sources.base import ShardVerdict
from tests.corpus_kit import VIEW_DIR, add_epoch, jsonl, view_record, write_chunk, write_epoch


def read_all(unit):
    return list(affine.read_unit(unit, Limits()))


def test_epoch_of_a_shard_is_the_oldest_revision_listing_it(tmp_path: Path) -> None:
    shards = add_epoch(tmp_path, 83, [[view_record("r1")]])
    shards = add_epoch(tmp_path, 84, [[view_record("r2")]], keep=shards)
    units, refused = affine.list_units(str(tmp_path))
    assert refused == []
    assert [(u.key, u.epoch) for u in units] == [
        (f"{VIEW_DIR}/view_0083_0000.jsonl.gz", 83),
        (f"{VIEW_DIR}/view_0084_0000.jsonl.gz", 84),
    ]


def test_inactive_shards_are_not_listed(tmp_path: Path) -> None:
    shards = add_epoch(tmp_path, 1, [[view_record("a")], [view_record("b")]])
    shards[0]["active"] = False
    write_epoch(tmp_path, 2, shards)
    units, _ = affine.list_units(str(tmp_path))
    assert [u.key.rsplit("/", 1)[1] for u in units] == ["view_0001_0001.jsonl.gz"]


def test_source_uid_is_base_url_key_and_line(tmp_path: Path) -> None:
    add_epoch(tmp_path, 5, [[view_record("a"), view_record("b")]])
    (unit,), _ = affine.list_units(str(tmp_path))
    items = read_all(unit)
    runs = [i for i in items if isinstance(i, RawRun)]
    assert [r.source_uid for r in runs] == [
        f"file://{tmp_path.resolve()}/{VIEW_DIR}/view_0005_0000.jsonl.gz#L1",
        f"file://{tmp_path.resolve()}/{VIEW_DIR}/view_0005_0000.jsonl.gz#L2",
    ]
    assert all(r.epoch == 5 and r.origin == "Affine corpus" and r.kind == "view" for r in runs)
    assert items[-1] == ShardVerdict(True)


def test_bad_lines_are_quarantined_with_chunk_and_line(tmp_path: Path) -> None:
    good = view_record("ok")
    missing = {k: v for k, v in view_record("m").items() if k != "nodes"}
    raw = jsonl([good, b"{not json", b"[1, 2]", missing])
    sha = write_chunk(tmp_path, f"{VIEW_DIR}/view_0001_0000.jsonl.gz", raw)
    write_epoch(tmp_path, 1, [{"key": f"{VIEW_DIR}/view_0001_0000.jsonl.gz", "sha256": sha}])
    (unit,), _ = affine.list_units(str(tmp_path))
    items = read_all(unit)
    q = [i for i in items if isinstance(i, Quarantined)]
    assert [(x.reason, x.source_uid.rsplit("#", 1)[1]) for x in q] == [
        ("bad_json", "L2"),
        ("not_object", "L3"),
        ("missing_field", "L4"),
    ]
    assert all("view_0001_0000.jsonl.gz line" in x.detail for x in q)
    assert "nodes" in q[2].detail
    assert items[-1].ok


def test_sha_mismatch_and_truncated_gzip_fail_the_shard(tmp_path: Path) -> None:
    key = f"{VIEW_DIR}/view_0001_0000.jsonl.gz"
    write_chunk(tmp_path, key, jsonl([view_record("a")]))
    write_epoch(tmp_path, 1, [{"key": key, "sha256": "0" * 64}])
    (unit,), _ = affine.list_units(str(tmp_path))
    assert read_all(unit)[-1].reason == "bad_sha256"

    data = gzip.compress(jsonl([view_record(f"r{i}") for i in range(50)]), mtime=0)
    (tmp_path / key).write_bytes(data[: len(data) // 2])
    verdict = read_all(unit)[-1]
    assert not verdict.ok and verdict.reason == "bad_gzip"


def test_manifest_keys_that_escape_the_root_are_refused(tmp_path: Path) -> None:
    write_epoch(
        tmp_path,
        1,
        [
            {"key": "../../etc/passwd.jsonl.gz", "sha256": "a" * 64},
            {"key": "https://evil.example/x.jsonl.gz", "sha256": "b" * 64},
            {"key": "/abs/x.jsonl.gz", "sha256": "c" * 64},
        ],
    )
    units, refused = affine.list_units(str(tmp_path))
    assert units == []
    assert [q.reason for q in refused] == ["unsafe_key"] * 3
    with pytest.raises(UnsafeKey):
        resolve_key("file:///corpus", "views/../../x")


def test_gzip_bomb_is_refused_by_the_chunk_limit(tmp_path: Path) -> None:
    key = f"{VIEW_DIR}/view_0001_0000.jsonl.gz"
    sha = write_chunk(tmp_path, key, jsonl([view_record("a")]) + b" " * 3_000_000 + b"\n")
    write_epoch(tmp_path, 1, [{"key": key, "sha256": sha}])
    (unit,), _ = affine.list_units(str(tmp_path))
    items = list(affine.read_unit(unit, Limits(max_chunk_bytes=1_000_000)))
    assert items[-1].reason == "chunk_too_large"


def test_record_over_the_size_limit_is_quarantined_and_the_rest_read(tmp_path: Path) -> None:
    big = view_record("big")
    big["nodes"][1]["content"] = "x" * 50_000
    key = f"{VIEW_DIR}/view_0001_0000.jsonl.gz"
    sha = write_chunk(tmp_path, key, jsonl([big, view_record("small")]))
    write_epoch(tmp_path, 1, [{"key": key, "sha256": sha}])
    (unit,), _ = affine.list_units(str(tmp_path))
    items = list(affine.read_unit(unit, Limits(max_record_bytes=20_000)))
    assert isinstance(items[0], Quarantined) and items[0].reason == "record_too_large"
    assert isinstance(items[1], RawRun) and items[1].source_uid.endswith("#L2")
    assert items[-1].ok


def test_trace_chunks_listed_by_manifest_or_by_name(tmp_path: Path) -> None:
    add_epoch(tmp_path, 3, [[view_record("a")]])
    env = {
        "schema": 1,
        "rollout_id": "t1",
        "source": "swesmith",
        "task": {"uid": "u", "sid": "s", "repo": "o/r", "language": "python"},
        "policy": {"harness": "bash"},
        "trace": {"nodes": []},
    }
    data = gzip.compress(jsonl([env]), mtime=0)
    import hashlib

    sha = hashlib.sha256(data).hexdigest()
    p = tmp_path / "traces" / "chunks" / f"swesmith-20260811T120000Z-{sha[:12]}.jsonl.gz"
    p.parent.mkdir(parents=True)
    p.write_bytes(data)
    units, _ = affine.list_units(str(tmp_path))
    trace = [u for u in units if u.source == "affine-trace"]
    assert len(trace) == 1 and trace[0].epoch == 3
    items = read_all(trace[0])
    assert isinstance(items[0], RawRun) and items[0].kind == "trace" and items[-1].ok
    # with a listing, the full sha256 is checked
    (tmp_path / "traces" / "manifest.json").write_bytes(
        orjson.dumps({"chunks": [{"key": f"traces/chunks/{p.name}", "sha256": "f" * 64}]})
    )
    units, _ = affine.list_units(str(tmp_path))
    (trace,) = [u for u in units if u.source == "affine-trace"]
    assert read_all(trace)[-1].reason == "bad_sha256"


def test_https_style_base_url_served_over_http(tmp_path: Path) -> None:
    add_epoch(tmp_path, 7, [[view_record("a"), view_record("b")]])
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path))

    class Quiet(handler.func):  # type: ignore[name-defined, misc]
        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Quiet, directory=str(tmp_path))
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        (unit,), _ = affine.list_units(base)
        items = read_all(unit)
        runs = [i for i in items if isinstance(i, RawRun)]
        assert [r.source_uid for r in runs] == [
            f"{base}/{VIEW_DIR}/view_0007_0000.jsonl.gz#L{i}" for i in (1, 2)
        ]
        assert items[-1].ok
    finally:
        server.shutdown()


def test_swelego_parquet_and_jsonl(tmp_path: Path) -> None:
    data = tmp_path / "swelego" / "data"
    data.mkdir(parents=True)
    msgs = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
    pl.DataFrame({"instance_id": ["a__b-1", "a__b-2"], "messages": [msgs, msgs]}).write_parquet(
        data / "resolved-00000-of-00002.parquet"
    )
    (data / "unresolved-00001-of-00002.jsonl").write_bytes(
        jsonl(
            [
                {"instance_id": "a__b-3", "messages": orjson.dumps(msgs).decode()},
                b"{oops",
                {"instance_id": "a__b-4", "messages": "not json"},
            ]
        )
    )
    units = swelego.list_units(str(tmp_path / "swelego"))
    assert [u.key for u in units] == [
        "data/resolved-00000-of-00002.parquet",
        "data/unresolved-00001-of-00002.jsonl",
    ]
    items = [i for u in units for i in swelego.read_unit(u, Limits())]
    runs = [i for i in items if isinstance(i, RawRun)]
    assert [(r.source_uid, r.resolved_hint) for r in runs] == [
        ("swelego:data/resolved-00000-of-00002.parquet#row=0", "resolved"),
        ("swelego:data/resolved-00000-of-00002.parquet#row=1", "resolved"),
        ("swelego:data/unresolved-00001-of-00002.jsonl#row=0", "not resolved"),
    ]
    assert runs[2].payload["messages"] == msgs
    q = [i for i in items if isinstance(i, Quarantined)]
    assert [(x.reason, x.source_uid.rsplit("#", 1)[1]) for x in q] == [
        ("bad_json", "row=1"),
        ("bad_json", "row=2"),
    ]


def test_a_large_swelego_parquet_is_split_at_row_groups_keeping_row_numbers(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    data = tmp_path / "swelego" / "data"
    data.mkdir(parents=True)
    msgs = [{"role": "user", "content": "u"}]
    table = pa.Table.from_pylist([{"instance_id": f"a__b-{i}", "messages": msgs} for i in range(6)])
    pq.write_table(table, data / "resolved-00000-of-00001.parquet", row_group_size=2)  # 3 row groups
    units = swelego.list_units(str(tmp_path / "swelego"), unit_rows=3)
    assert [(u.row_groups, u.first_row) for u in units] == [((0, 2), 0), ((2, 3), 4)]
    assert len({u.state_key for u in units}) == 2
    runs = [i for u in units for i in swelego.read_unit(u, Limits()) if isinstance(i, RawRun)]
    assert [r.source_uid.rsplit("#", 1)[1] for r in runs] == [f"row={i}" for i in range(6)]
    assert [r.payload["instance_id"] for r in runs] == [f"a__b-{i}" for i in range(6)]
    # a small file stays one unit, as before
    assert [u.row_groups for u in swelego.list_units(str(tmp_path / "swelego"))] == [None]


def test_every_source_module_is_registered_once_under_a_config_key() -> None:
    """A new source is one module with its SOURCE, one line in SOURCES and one Config field."""
    import dataclasses
    import importlib
    import pkgutil

    import pipeline.sources as sources
    from pipeline.core.config import Config

    modules = [m.name for m in pkgutil.iter_modules(sources.__path__) if m.name != "base"]
    declared = [importlib.import_module(f"pipeline.sources.{m}").SOURCE for m in modules]
    assert sorted(map(id, declared)) == sorted(map(id, sources.SOURCES))
    fields = {f.name: f.type for f in dataclasses.fields(Config)}
    for source in sources.SOURCES:
        assert fields.get(source.key) in ("tuple[str, ...]", tuple[str, ...]), source.key
        for name in source.unit_sources:
            assert sources.source_of(name) is source
    every = [name for s in sources.SOURCES for name in s.unit_sources]
    assert len(every) == len(set(every))
