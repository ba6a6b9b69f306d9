"""``scan_run`` reads the run's own final diff (``task.submitted``, ``task.own_blocks``) at its first
attempt only; the verdict is the one of reading it up front (the previous code, the specification)."""

from __future__ import annotations

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.leaks import solution as S
from pipeline.leaks.confirm import BUG_SUBJECT, OWN_COMMIT
from pipeline.leaks.rules import Task
from pipeline.leaks.solution import LazyTexts, Verdict, prefilters, read_own_diff, scan_run
from pipeline.stages.leaks import SolutionLeak
from tests.builders import ctx, work_frame
from tests.test_leaks import ATTEMPTS, BENIGN, CONFIRMED, FIX_COMMIT, FIXED_SRC, OWN, leak_run, own_run


def eager_scan_run(row: dict[str, object], monkeypatch: pytest.MonkeyPatch) -> Verdict:
    """``scan_run`` with the own diff read into the task before the first command, as before."""
    make = S.make_task

    def make_task(r: dict[str, object]) -> Task:
        task = make(r)
        read_own_diff(task, list(r.get("commands") or []), list(r.get("outputs") or []))  # type: ignore[call-overload]
        return task

    with monkeypatch.context() as m:
        m.setattr(S, "make_task", make_task)
        m.setattr(S, "read_own_diff", lambda *_: None)
        return scan_run(row)


def _rows() -> list[dict[str, object]]:
    rows = [leak_run(c[1], c[2]) for c in (*CONFIRMED, *ATTEMPTS, *BENIGN)]
    own = [
        (["git log --all -p -S collect_items -1"], [FIX_COMMIT + OWN]),
        (["git show x:w/core.py"], [FIXED_SRC]),
    ]
    rows += [own_run(c, o) for c, o in own]
    rows += [own_run(c, o, submission="") for c, o in own]  # the own diff from the last plain `git diff`
    return rows


@pytest.mark.parametrize("row", _rows())
def test_the_own_diff_read_at_the_first_attempt_gives_the_same_verdict(
    row: dict[str, object], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert scan_run(row) == eager_scan_run(row, monkeypatch)


# ---- the stage's batch path: outputs read lazily from Arrow, pre-filters in Rust ------------------------

PIECES = [
    "[",
    "]",
    "[main ",
    "5d4c3b2",
    "a1b2c3d4e5",
    " (root-commit)",
    "\n",
    " ",
    "\x1c",
    "\u00a0",
    "\t",
    "commit ",
    "* ",
    "| ",
    "    ",
    "Bug Patch",
    "Remove F2P Tests",
    "(HEAD -> main) ",
    "x",
    "é",
]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.lists(st.sampled_from(PIECES), max_size=14).map("".join), max_size=6))
def test_the_rust_prefilters_match_wherever_the_python_patterns_do(outputs: list[str]) -> None:
    """A pre-filter may pass more outputs than the Python pattern matches, never fewer."""
    batch = pl.DataFrame(
        {"commands": [["ls"] * len(outputs)], "outputs": [outputs]},
        schema={"commands": pl.List(pl.Utf8), "outputs": pl.List(pl.Utf8)},
    )
    flags = prefilters(batch).row(0, named=True)
    for out, may in zip(outputs, flags["lines"], strict=True):
        assert may or not (OWN_COMMIT.search(out) or BUG_SUBJECT.search(out)), out


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.one_of(st.none(), st.lists(st.one_of(st.none(), st.text(max_size=5)), max_size=4)),
        min_size=1,
        max_size=4,
    ),
    st.integers(0, 2),
)
def test_lazy_texts_read_as_the_lists(lists: list[list[str | None] | None], cut: int) -> None:
    column = pl.Series("outputs", lists, dtype=pl.List(pl.Utf8))[cut:]
    for lazy, plain in zip(LazyTexts.per_run(column), column.to_list(), strict=True):
        want = plain or []
        assert len(lazy) == len(want)
        assert [lazy[i] for i in range(len(want))] == want == lazy[:] == list(reversed(lazy))[::-1]
        assert all(lazy[-i] == want[-i] for i in range(1, len(want) + 1))
        with pytest.raises(IndexError):
            lazy[len(want)]


@pytest.mark.parametrize("row", _rows())
def test_the_stage_gives_each_run_the_verdict_of_the_plain_scan(row: dict[str, object]) -> None:
    """SolutionLeak (pre-filters, lazily read outputs) drops and counts what ``scan_run`` of the plain
    row (every output a string, nothing pre-filtered) decides."""
    plain = scan_run(row)
    out = SolutionLeak(ctx())(work_frame([row]))
    if plain.kind:
        assert out.dropped.row(0, named=True)["reason"] == plain.kind
        assert out.dropped.row(0, named=True)["detail"] == plain.detail
    else:
        assert not out.dropped.height
        assert dict(out.counters) == {f"solution_leak_attempt/{k}": 1 for k in plain.attempts}
