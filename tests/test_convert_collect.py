"""The convert step's kept batch: the WORK frame built column by column through Arrow is the frame
polars builds from the same row dicts, value for value and type for type. A kept row holds its
messages' contents only; the rows polars reads hold the messages (``_messages``)."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import polars as pl

from pipeline.stages.convert import Convert, _frame, _messages, work_frame
from schemas.run import WORK, empty
from tests.builders import CTX


def _row(i: int, **over: Any) -> dict[str, Any]:
    row: dict[str, Any] = {f.name: f"{f.name}-{i}" for f in WORK if str(f.type) in ("string", "large_string")}
    row.update(
        messages=["s", "é\u2192\x00", "a", "b", "c", "d"],
        verified=i % 2 == 0,
        submitted=True,
        affine_fold_group=None,
        epoch=None if i % 3 == 0 else i,
        commands=["ls", ""],
        outputs=["a\n", ""],
        returncodes=[0, None],
        raw_bytes=2**40 + i,
    )
    row.update(over)
    if "messages" not in over:  # system, task, then two messages per turn
        row["messages"] = row["messages"][: 2 + 2 * len(row["commands"])]
    return row


def _plain(rows: list[dict[str, Any]]) -> pl.DataFrame:
    """The frame polars builds from the rows with their messages."""
    return pl.DataFrame([{**row, "messages": _messages(row)} for row in rows], schema=empty(WORK).schema)


def test_kept_rows_become_the_frame_polars_would_build_from_them() -> None:
    rows = [_row(i) for i in range(5)] + [_row(5, commands=[], outputs=[], returncodes=[])]
    got = work_frame(rows)
    want = _plain(rows)
    assert got.schema == want.schema
    assert got.to_arrow().equals(want.to_arrow())


def test_the_fast_build_is_that_frame_without_falling_back() -> None:
    rows = [_row(i) for i in range(5)] + [_row(5, commands=[], outputs=[], returncodes=[])]
    rows.append(
        _row(
            6,
            commands=["a"] * 4,
            outputs=["b"] * 4,
            returncodes=[-1, 2**31 - 1, None, -(2**31)],
            messages=[f"m{i}" for i in range(10)],
        )
    )
    got = _frame(rows)  # called directly: a fallback cannot hide a difference
    want = _plain(rows)
    assert got.schema == want.schema
    assert got.to_arrow().equals(want.to_arrow())


def test_collecting_rows_imports_no_pandas() -> None:
    """pa.array over Python objects imports pandas where it is installed (~0.6 CPU-s per worker)."""
    code = (
        "import sys\n"
        "from pipeline.stages.convert import _frame\n"
        "from tests.test_convert_collect import _row\n"
        "_frame([_row(0), _row(1)])\n"
        "print('pandas' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_a_value_arrow_refuses_is_left_to_polars() -> None:
    # a return code as text: Arrow refuses it for int32, polars' own conversion decides
    rows = [_row(0, returncodes=["7"])]
    try:
        want: pl.DataFrame | None = _plain(rows)
    except Exception as exc:  # polars refuses it too: the same error reaches the step's boundary
        want, error = None, type(exc)
    if want is not None:
        assert work_frame(rows).to_arrow().equals(want.to_arrow())
    else:
        try:
            work_frame(rows)
        except Exception as exc:
            assert type(exc) is error
        else:
            raise AssertionError("collect accepted a row polars refuses")


def test_no_kept_runs_is_the_empty_work_frame() -> None:
    assert work_frame([]).schema == empty(WORK).schema


def test_the_collector_stays_paused_until_the_batch_is_built(monkeypatch: Any) -> None:
    import gc

    seen: list[bool] = []

    def collect(self: Convert, kept: list[Any]) -> pl.DataFrame:
        seen.append(gc.isenabled())
        return empty(WORK)

    monkeypatch.setattr(Convert, "one", lambda self, item, counters: {})
    monkeypatch.setattr(Convert, "collect", collect)
    assert gc.isenabled()
    Convert(CTX)([object()])
    assert seen == [False]
    assert gc.isenabled()
