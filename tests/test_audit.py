"""Audit: the funnel per dataset and epoch from the ledger and the trees, explain, HTML report."""

from __future__ import annotations

import os

os.environ["HF_HUB_OFFLINE"] = "1"

import re
from pathlib import Path

import orjson
import polars as pl
import pytest
from rich.console import Console

from pipeline.report.audit import STAGES, build_report, explain, render_report, write_html
from pipeline.store.state import State
from schemas.run import DROPS, empty
from tests.builders import BASH, LEGO, build

VIEW = "https://data.affine.io/views/duel_turns@v4/chunks/view_0084_0001.jsonl.gz"


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    frame, _, _ = build(tmp_path)
    # the state's run store says which epoch each published run came from (shards carry no epoch)
    state = State(tmp_path)
    state.commit(0, ["unit-a"], [frame], empty(DROPS), {})
    # a killed run's uncommitted part is ignored
    frame.with_columns(pl.lit(99).cast(pl.Int32).alias("epoch")).write_parquet(
        tmp_path / "state" / "published" / "000001.parquet"
    )
    return tmp_path


def stage_counts(**kw: int) -> dict[str, int]:
    return {s: kw.get(s, 0) for s in STAGES}


def test_funnel_totals_and_invariant(workdir: Path) -> None:
    report = build_report(workdir)
    totals = report["totals"]
    assert totals["ingested"] == 23 and totals["published"] == 11
    assert totals["dropped"] == stage_counts(
        quarantine=1,
        parse=1,
        convert=1,
        task_dedup=1,
        solution_leak=4,
        benchmark_leak=1,
        validate=1,
        traj_dedup=2,
    )
    # runs left after each stage, in funnel order; the last stage leaves exactly the published runs
    assert [totals["after"][s] for s in STAGES] == [22, 21, 20, 20, 19, 15, 14, 14, 13, 11]
    assert report["invariant"] == {
        "ingested": 23,
        "published": 11,
        "dropped": 11,
        "quarantined": 1,
        "ok": True,
        "stats_ingested": 23,
        "stats": report["invariant"]["stats"],
    }
    assert report["invariant"]["stats"]["ok"] is True


def test_funnel_per_dataset_and_epoch(workdir: Path) -> None:
    report = build_report(workdir)
    by_ds = report["by_dataset"]
    assert list(by_ds) == ["(unknown)", BASH, LEGO]
    assert by_ds[BASH]["ingested"] == 18 and by_ds[BASH]["published"] == 8
    assert by_ds[BASH]["dropped"] == stage_counts(
        parse=1, convert=1, task_dedup=1, solution_leak=3, benchmark_leak=1, validate=1, traj_dedup=2
    )
    assert by_ds[LEGO]["dropped"] == stage_counts(solution_leak=1) and by_ds[LEGO]["published"] == 3
    assert by_ds["(unknown)"]["dropped"] == stage_counts(quarantine=1)
    by_epoch = report["by_epoch"]
    assert list(by_epoch) == ["0", "84", "85"]
    assert [(by_epoch[e]["ingested"], by_epoch[e]["published"]) for e in by_epoch] == [
        (4, 3),
        (11, 6),
        (8, 2),
    ]
    assert report["published"][BASH] == {"rows": 8, "shards": [f"{BASH}/data/train-00000-of-00001.parquet"]}


def test_reasons_and_counters(workdir: Path) -> None:
    report = build_report(workdir)
    assert report["reasons"]["solution_leak"] == {"git_history": 2, "network_fetch": 1, "package_fetch": 1}
    assert report["reasons"]["traj_dedup"] == {"exact": 1, "near": 1}
    assert report["reasons"]["quarantine"] == {"bad_json": 1}
    assert report["counters"]["parse/dialect"] == {"bash": 9, "openhands": 4}
    assert report["counters"]["convert/tool"] == {"bash": 20, "str_replace_editor": 3}
    assert report["counters"]["scrub"] == {"aws_access_key": 1, "github_token": 2}
    assert report["counters"]["other"] == {"convert/turns": 40}
    orjson.dumps(report)  # --json: the report is plain JSON


def test_one_epoch_only(workdir: Path) -> None:
    report = build_report(workdir, epoch=85)
    assert report["totals"]["ingested"] == 8 and report["totals"]["published"] == 2
    assert report["totals"]["dropped"] == stage_counts(
        solution_leak=2, benchmark_leak=1, validate=1, traj_dedup=2
    )
    assert list(report["by_epoch"]) == ["85"]
    assert report["invariant"]["ok"] and report["invariant"]["stats_ingested"] == 8


def test_epochs_from_stats_without_run_store(tmp_path: Path) -> None:
    build(tmp_path)
    by_epoch = build_report(tmp_path)["by_epoch"]
    assert [(e, f["published"]) for e, f in by_epoch.items()] == [("0", 3), ("84", 6), ("85", 2)]


def test_missing_runs_break_the_invariant(workdir: Path) -> None:
    stats = orjson.loads((workdir / "ledger" / "stats.json").read_bytes())
    stats["ingested"]["total"] += 2  # two runs came in that neither the ledger nor the trees account for
    (workdir / "ledger" / "stats.json").write_bytes(orjson.dumps(stats))
    inv = build_report(workdir)["invariant"]
    assert not inv["ok"] and inv["stats_ingested"] == 25 and inv["ingested"] == 23


def test_explain_each_fate(workdir: Path) -> None:
    published = "https://data.affine.io/views/duel_turns@v4/chunks/view_0085_0000.jsonl.gz#L8"
    assert explain(workdir, published) == {
        "source_uid": published,
        "fate": "published",
        "dataset": BASH,
        "shard": f"{BASH}/data/train-00000-of-00001.parquet",
        "row": 7,
    }
    leak = explain(workdir, f"{VIEW}#L7")
    assert (
        leak["fate"],
        leak["stage"],
        leak["reason"],
        leak["evidence"],
        leak["epoch"],
        leak["dataset"],
    ) == ("dropped", "solution_leak", "network_fetch", "curl github.com/owner/repo/pull/3.diff", 85, BASH)
    bad = explain(workdir, f"{VIEW}#L1")
    assert (bad["fate"], bad["reason"], bad["evidence"], bad["dataset"]) == (
        "quarantined",
        "bad_json",
        "line 1: unexpected character",
        None,
    )
    assert explain(workdir, "nowhere#L1") == {"source_uid": "nowhere#L1", "fate": "unknown"}


def test_rich_tables_show_the_funnel(workdir: Path) -> None:
    console = Console(record=True, width=250)
    render_report(build_report(workdir), console, counters=True)
    text = console.export_text()
    assert "Funnel by dataset" in text and "Funnel by epoch" in text
    assert re.search(
        r"TOTAL\s*│\s*23\s*│\s*1\s*│\s*1\s*│\s*1\s*│\s*0\s*│\s*1\s*│\s*4\s*│\s*1\s*│\s*0\s*│\s*1\s*│\s*2\s*│\s*11",
        text,
    )
    assert "Invariant ok: ingested 23 = published 11 + dropped 11 + quarantined 1" in text
    assert "network_fetch" in text and "github_token" in text


def test_html_is_self_contained_and_holds_the_funnel(workdir: Path, tmp_path: Path) -> None:
    report = build_report(workdir)
    path = tmp_path / "report" / "audit.html"
    write_html(report, path)
    page = path.read_text()
    assert page.startswith("<!DOCTYPE html>")
    # no external assets: no scripts, stylesheets or images fetched from anywhere
    assert not re.search(r"<script|<link|<img|@import|url\(", page)
    assert page.count("<svg") == 2
    funnel_svg = page[page.index("<svg") : page.index("</svg>")]
    bar_numbers = [
        int(n.replace(",", "")) for n in re.findall(r'<text class="n"[^>]*>([\d,]+)</text>', funnel_svg)
    ]
    assert bar_numbers == [23, *[report["totals"]["after"][s] for s in STAGES], 11]
    trend_svg = page[page.index("<svg", page.index("</svg>")) :]
    assert [t for t in re.findall(r"<title>epoch (\d+) (\w+): (\d+)</title>", trend_svg) if t[0] == "85"] == [
        ("85", "solution_leak", "2"),
        ("85", "benchmark_leak", "1"),
        ("85", "validate", "1"),
        ("85", "traj_dedup", "2"),
    ]
    assert "ingested 23 = published 11 + dropped 11" in page
    cells = re.findall(r"<tr><td>TOTAL</td>(.*?)</tr>", page)[0]
    assert [int(c) for c in re.findall(r"<td class=n>([\d,]+)</td>", cells)] == [
        23,
        *(report["totals"]["dropped"][s] for s in STAGES),
        11,
    ]
    # dataset names lose the shared prefix (the caption says so), never their distinguishing part
    assert "<caption>(names without “mini-coder-”)</caption>" in page
    assert pl.Series(re.findall(r"<tr><td>((?:affine|swe)-[\w-]+)</td>", page)).unique().sort().to_list() == [
        BASH.removeprefix("mini-coder-"),
        LEGO.removeprefix("mini-coder-"),
    ]


@pytest.mark.parametrize("width", [100, 120])
def test_narrow_terminals_never_cut_the_dataset_column(workdir: Path, width: int) -> None:
    console = Console(record=True, width=width)
    render_report(build_report(workdir), console)
    text = console.export_text()
    assert "Funnel by dataset (names without “mini-coder-”)" in text
    rows = [line for line in text.splitlines() if line.startswith("│ ")]
    names = {line.split("│")[1].strip() for line in rows}
    assert {BASH.removeprefix("mini-coder-"), LEGO.removeprefix("mini-coder-"), "TOTAL"} <= names
    assert not any("…" in line.split("│")[1] for line in rows)
    assert all(len(line) <= width for line in text.splitlines())
