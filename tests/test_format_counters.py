"""Per-input-format counters: runs read and drops per (format, stage/reason), shown by
``trajpipe audit`` (+ ``--json``) and summarised by ``trajpipe convert``."""

from __future__ import annotations

import os

os.environ["HF_HUB_OFFLINE"] = "1"

from collections import Counter
from pathlib import Path

import orjson
from typer.testing import CliRunner

from pipeline.cli import app
from pipeline.core.config import Config
from pipeline.orchestration.convert_files import convert_files, format_summary
from pipeline.orchestration.runner import run_pipeline
from tests.corpus_kit import add_epoch, view_record

REAL = Path(__file__).parent / "fixtures" / "real"


def test_audit_shows_drops_per_input_format(tmp_path: Path) -> None:
    corpus, work = tmp_path / "corpus", tmp_path / "work"
    ok = view_record("roll-1", commands=[("grep -rn alpha /testbed/src", "src/a.py:1: alpha\n")])
    fetch = view_record(
        "roll-2",
        commands=[
            (
                "pip download flask==9.9 --no-deps -d /tmp/x",
                "Saved /tmp/x/flask-9.9.tar.gz\nSuccessfully downloaded flask\n",
            )
        ],
    )
    no_nodes = {**view_record("roll-3"), "nodes": []}
    add_epoch(corpus, 1, [[ok, fetch, no_nodes]])
    run_pipeline(Config(affine=(str(corpus),), workdir=str(work), no_benchmarks=True, workers=1))
    res = CliRunner().invoke(app, ["audit", "--workdir", str(work), "--json"])
    assert res.exit_code == 0, res.output
    counters = orjson.loads(res.stdout)["counters"]
    assert counters["format_runs"] == {"Affine corpus": 3}
    drops = orjson.loads(res.stdout)["reasons"]
    # every per-run drop is counted under its format, with the same stage/reason as the ledger
    assert sum(counters["format_drops"].values()) == sum(n for s in drops.values() for n in s.values())
    # a parse drop and a later stage's drop alike
    assert counters["format_drops"] == {
        "Affine corpus/parse/no_steps": 1,
        "Affine corpus/solution_leak/package_fetch": 1,
    }
    text = CliRunner().invoke(app, ["audit", "--workdir", str(work), "--counters"]).stdout
    assert "format_drops" in text and "Affine corpus" in text


def test_convert_summarises_each_format(tmp_path: Path) -> None:
    files = sorted(
        f
        for f in REAL.iterdir()
        if f.is_file() and f.suffix in (".traj", ".json", ".jsonl") and f.name != "EXPECTATIONS.json"
    )
    result = convert_files(files, tmp_path / "out.jsonl")
    tally, n_ok, n_drop = result.by_format, result.converted, result.dropped
    lines = [orjson.loads(x) for x in (tmp_path / "out.jsonl").read_bytes().splitlines()]
    expect: Counter[str] = Counter()
    for rec in lines:
        fmt = rec["format"] or "unknown"
        expect[
            f"{fmt}/converted"
            if "messages" in rec
            else f"{fmt}/{rec['drop']['stage']}/{rec['drop']['reason']}"
        ] += 1
    assert tally == expect and sum(tally.values()) == n_ok + n_drop == len(lines)
    summary = format_summary(tally)
    assert len(summary) == len({k.split("/", 1)[0] for k in tally})
    res = CliRunner().invoke(app, ["convert", *map(str, files), "--out", str(tmp_path / "cli.jsonl")])
    assert res.exit_code == 0, res.output
    for line in summary:
        if not line.startswith("unknown:"):  # files of no known format are listed, not summarised
            assert line in res.output
