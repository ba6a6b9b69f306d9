"""Progress shows runs, a rate and the time left, not only units; off a terminal it is plain lines."""

from __future__ import annotations

import pytest
from rich.console import Console

from pipeline.orchestration.progress import Reporter, status_line


def test_status_line_counts_runs_and_estimates_time_left() -> None:
    assert status_line("ingest", 0, 19, 0, 0.0) == "[ingest] 0/19 units, 0 runs"
    assert (
        status_line("ingest", 5, 19, 430, 5.0) == "[ingest] 5/19 units, 430 runs, 86 runs/s, about 0:14 left"
    )
    assert status_line("ingest", 19, 19, 1660, 20.0) == "[ingest] 19/19 units, 1,660 runs, 83 runs/s"
    assert status_line("ingest", 1, 400, 90, 30.0).endswith("about 3:19:30 left")


def test_plain_lines_off_a_terminal(capsys: pytest.CaptureFixture[str]) -> None:
    rep = Reporter(Console(stderr=True, force_terminal=False))
    with rep.stage("ingest", total=3) as advance:
        for runs in (10, 20, 30):
            advance(runs)
    lines = capsys.readouterr().err.splitlines()
    assert [ln.split(" runs")[0] for ln in lines[:3]] == [
        "[ingest] 1/3 units, 10",
        "[ingest] 2/3 units, 30",
        "[ingest] 3/3 units, 60",
    ]
    assert lines[3].startswith("[ingest] done in ")
    with rep.stage("publish", total=1) as advance:  # a one-step stage says only when it is done
        advance()
    assert capsys.readouterr().err.startswith("[publish] done in ")
