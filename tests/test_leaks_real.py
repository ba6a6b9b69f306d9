"""The leak stages on real public runs: hand-checked expectations for the runs in tests/fixtures/real/leaks
(a run that took its fix from the future history, and look-alikes: own-history reads, restores, stashes,
installs, fetches), and no solution-leak drop anywhere in the real conformance corpus."""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

import pytest

from pipeline.orchestration.process import run_steps
from pipeline.parsers.files import iter_trajectory_file
from pipeline.stages import STEPS
from pipeline.stages.leaks import SolutionLeak
from tests.builders import ctx

REAL = Path(__file__).resolve().parent / "fixtures" / "real"
LEAKS = REAL / "leaks"
EXPECTATIONS: dict[str, dict[str, object]] = json.loads((LEAKS / "EXPECTATIONS.json").read_text())
RUN_SUFFIXES = (".traj", ".json", ".jsonl", ".gz")


def run_files(folder: Path) -> list[str]:
    return sorted(
        p.name
        for p in folder.iterdir()
        if p.is_file() and p.name.endswith(RUN_SUFFIXES) and p.name != "EXPECTATIONS.json"
    )


def solution_leak(path: Path) -> list[tuple[str, list[str]]]:
    """(outcome, attempts) of every run of a real file through parse -> convert -> SolutionLeak."""
    read = [step(ctx()) for step in STEPS if step.name in ("quarantine", "parse", "convert", "verify")]
    batch, _, _ = run_steps(read, list(iter_trajectory_file(path)))
    stage = SolutionLeak(ctx())
    out: list[tuple[str, list[str]]] = []
    for i in range(batch.height):
        res = stage(batch[i : i + 1])
        outcome = f"solution_leak/{res.dropped['reason'][0]}" if res.dropped.height else "kept"
        out.append(
            (
                outcome,
                sorted(k.split("/", 1)[1] for k in res.counters if k.startswith("solution_leak_attempt/")),
            )
        )
    return out


def test_every_vendored_leak_run_has_a_hand_checked_expectation() -> None:
    assert run_files(LEAKS) == sorted(EXPECTATIONS)


@pytest.mark.parametrize("name", sorted(EXPECTATIONS))
def test_real_look_alike_runs_meet_their_expectation(name: str) -> None:
    want = EXPECTATIONS[name]
    assert solution_leak(LEAKS / name) == [(want["outcome"], want["attempts"])]


def test_the_hand_labels_agree_with_the_expected_outcomes() -> None:
    """A run labelled a leak is expected dropped as one, a look-alike expected kept (the labels are the
    bench's ground truth, bench/leaks_real.py --labels)."""
    for name, want in EXPECTATIONS.items():
        assert (want["label"] == "leak") == str(want["outcome"]).startswith("solution_leak/"), name


@pytest.mark.parametrize("name", run_files(REAL))
def test_no_real_conformance_run_is_a_solution_leak(name: str) -> None:
    """None of the real corpus's runs reads a fix from outside (checked by hand, bench/results/leaks.md)."""
    assert all(outcome == "kept" for outcome, _ in solution_leak(REAL / name))


def test_every_vendored_run_has_a_provenance_row_with_its_sha256() -> None:
    """Each file names its repository, commit and path in PROVENANCE.md, with the sha256 of the file as
    copied (of the uncompressed bytes for a ``.gz``)."""
    rows = {
        line.split("|")[1].strip().strip("`"): line
        for line in (LEAKS / "PROVENANCE.md").read_text().splitlines()
        if line.startswith("| `")
    }
    for name in run_files(LEAKS):
        data = (LEAKS / name).read_bytes()
        digest = hashlib.sha256(gzip.decompress(data) if name.endswith(".gz") else data).hexdigest()
        assert name in rows and digest in rows[name], name
