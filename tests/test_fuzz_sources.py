"""Hostile input for the chunk readers: arbitrary bytes never crash a read, and every read
ends with a verdict; nothing is lost (every line is a run or a quarantine entry)."""

from __future__ import annotations

import gzip
import hashlib
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline.core.config import Limits
from pipeline.core.episode import Quarantined, RawRun
from pipeline.sources import affine, swelego
from pipeline.sources.base import ShardVerdict, Unit
from tests.fuzzing import examples

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False)
    | st.text(max_size=30)
)
json_values = st.recursive(
    json_scalars,
    lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=8), c, max_size=4),
    max_leaves=20,
)
FUZZ = settings(
    max_examples=examples(100),
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def unit_for(path: Path, raw: bytes, *, sha: str | None = None) -> Unit:
    return Unit(
        "affine-view",
        "file:///x",
        path.name,
        sha or hashlib.sha256(raw).hexdigest(),
        1,
        "raw",
        location=str(path),
    )


@FUZZ
@given(data=st.binary(max_size=4000))
def test_arbitrary_bytes_as_a_chunk(tmp_path_factory, data: bytes) -> None:
    p = tmp_path_factory.mktemp("f") / "c.jsonl.gz"
    p.write_bytes(data)
    items = list(affine.read_unit(unit_for(p, data), Limits(max_record_bytes=1000, max_chunk_bytes=100_000)))
    assert isinstance(items[-1], ShardVerdict)
    assert all(isinstance(i, RawRun | Quarantined) for i in items[:-1])


@FUZZ
@given(
    lines=st.lists(
        st.one_of(
            json_values.map(lambda v: __import__("orjson").dumps(v)),
            st.binary(max_size=200).filter(lambda b: b"\n" not in b),
        ),
        max_size=20,
    )
)
def test_arbitrary_lines_in_a_valid_gzip_chunk(tmp_path_factory, lines: list[bytes]) -> None:
    raw = b"\n".join(lines) + b"\n"
    p = tmp_path_factory.mktemp("f") / "c.jsonl.gz"
    p.write_bytes(gzip.compress(raw, mtime=0))
    items = list(affine.read_unit(unit_for(p, raw), Limits(max_record_bytes=150)))
    verdict = items[-1]
    assert verdict.ok, verdict
    body = items[:-1]
    # every non-blank line is accounted for, once, in order
    expected = [i + 1 for i, ln in enumerate(raw.split(b"\n")[:-1]) if ln.strip() or len(ln) > 150]
    got = [int(i.source_uid.rsplit("#L", 1)[1]) for i in body]
    assert got == expected


@FUZZ
@given(rows=st.lists(json_values, max_size=10))
def test_arbitrary_swelego_jsonl(tmp_path_factory, rows: list) -> None:
    import orjson

    d = tmp_path_factory.mktemp("s") / "data"
    d.mkdir()
    (d / "resolved-00000-of-00001.jsonl").write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    (unit,) = swelego.list_units(str(d.parent))
    items = list(swelego.read_unit(unit, Limits()))
    assert items[-1].ok
    assert len(items) - 1 == len(rows)
