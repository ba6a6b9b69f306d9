"""``scan_run`` reads the run's own final diff (``task.submitted``, ``task.own_blocks``) at its first
attempt only; the verdict is the one of reading it up front (the previous code, the specification)."""

from __future__ import annotations

import pytest

from pipeline.leaks import solution as S
from pipeline.leaks.rules import Task
from pipeline.leaks.solution import Verdict, read_own_diff, scan_run
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
