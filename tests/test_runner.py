"""The driver end to end on hand-built corpora: incremental epochs, idempotence, quarantine."""

from __future__ import annotations

import gzip
import hashlib
from pathlib import Path

import orjson
import polars as pl
import pytest

from pipeline.core.config import Config
from pipeline.io.fileio import file_sha256
from pipeline.orchestration.runner import NoBenchmarks, RunSummary, run_pipeline
from pipeline.store.lock import WorkdirLocked, workdir_lock
from pipeline.store.records import seal_record
from tests.builders import distinct, tree_bytes
from tests.corpus_kit import VIEW_DIR, add_epoch, jsonl, write_chunk, write_epoch


def config(corpus: Path, work: Path, **kw) -> Config:
    return Config(affine=(str(corpus),), workdir=str(work), no_benchmarks=True, workers=1, **kw)


def test_runs_without_benchmarks_fail_loudly_unless_skipped(tmp_path: Path) -> None:
    add_epoch(tmp_path / "c", 1, [[distinct(1)]])
    with pytest.raises(NoBenchmarks, match="--no-benchmarks"):
        run_pipeline(Config(affine=(str(tmp_path / "c"),), workdir=str(tmp_path / "w")))


def test_two_epochs_then_rerun_then_a_third_epoch(tmp_path: Path) -> None:
    corpus, work = tmp_path / "corpus", tmp_path / "work"
    shards = add_epoch(corpus, 1, [[distinct(i) for i in range(3)], [distinct(i) for i in range(3, 5)]])
    shards = add_epoch(corpus, 2, [[distinct(i) for i in range(5, 8)]], keep=shards)

    first = run_pipeline(config(corpus, work))
    assert (first.units_total, first.units_new, first.units_processed) == (3, 3, 3)
    inv = first.stats["invariant"]
    assert inv["ok"] and inv["ingested"] == 8 == inv["published"] + inv["dropped"] + inv["quarantined"]
    assert first.stats["ingested"]["by_epoch"] == {"1": 5, "2": 3}
    snapshot = tree_bytes(work)
    assert any(k.startswith("publish/mini-coder-affine-textbased/data/train-") for k in snapshot)
    mtimes = {p: p.stat().st_mtime_ns for p in (work / "publish").rglob("*") if p.is_file()}

    again = run_pipeline(config(corpus, work))
    assert (again.units_new, again.units_processed) == (0, 0)  # no work
    assert tree_bytes(work) == snapshot  # no byte changed
    assert {p: p.stat().st_mtime_ns for p in mtimes} == mtimes  # not even rewritten

    # epoch 3 re-exports run 0 under a new rollout id and adds one new run
    reexport = distinct(0) | {"rollout_id": "roll-0-again", "traj_id": "t-again"}
    add_epoch(corpus, 3, [[reexport, distinct(100)]], keep=shards)
    third = run_pipeline(config(corpus, work))
    assert (third.units_total, third.units_new, third.units_processed) == (4, 1, 1)
    stats = third.stats
    assert stats["ingested"]["by_epoch"] == {"1": 5, "2": 3, "3": 2}
    assert stats["drops"].get("traj_dedup/exact") == 1
    drops = pl.read_parquet(work / "ledger" / "drops.parquet")
    dup = drops.filter(pl.col("reason") == "exact").row(0, named=True)
    assert dup["source_uid"].endswith("view_0003_0000.jsonl.gz#L1") and dup["epoch"] == 3
    assert "view_0001_0000.jsonl.gz#L1" in dup["detail"]  # kept the run published earlier
    assert stats["invariant"]["ok"]


def test_corrupted_chunks_are_quarantined_and_the_run_finishes(tmp_path: Path) -> None:
    corpus, work = tmp_path / "corpus", tmp_path / "work"
    good = add_epoch(corpus, 1, [[distinct(1), distinct(2)]])
    # a chunk whose sha256 does not match, one truncated, one with bad lines
    k_sha = f"{VIEW_DIR}/view_0001_0001.jsonl.gz"
    write_chunk(corpus, k_sha, jsonl([distinct(3), distinct(4)]))
    k_trunc = f"{VIEW_DIR}/view_0001_0002.jsonl.gz"
    raw = jsonl([distinct(i) for i in range(10, 40)])
    blob = gzip.compress(raw, mtime=0)
    (corpus / k_trunc).write_bytes(blob[: len(blob) // 3])
    k_lines = f"{VIEW_DIR}/view_0001_0003.jsonl.gz"
    missing = {k: v for k, v in distinct(6).items() if k != "nodes"}
    sha_lines = write_chunk(corpus, k_lines, jsonl([distinct(5), b"{broken", missing]))
    write_epoch(
        corpus,
        1,
        [
            *good,
            {"key": k_sha, "sha256": "0" * 64},
            {"key": k_trunc, "sha256": hashlib.sha256(raw).hexdigest()},
            {"key": k_lines, "sha256": sha_lines},
        ],
    )

    summary = run_pipeline(config(corpus, work))
    stats = summary.stats
    inv = stats["invariant"]
    assert inv["ok"]
    drops = pl.read_parquet(work / "ledger" / "drops.parquet").filter(pl.col("stage") == "quarantine")
    by_reason = dict(drops.group_by("reason").len().iter_rows())
    assert by_reason["bad_sha256"] == 2  # one entry per readable record
    assert by_reason["bad_json"] == 1 and by_reason["missing_field"] == 1
    assert by_reason.get("bad_gzip", 0) >= 1
    for row in drops.iter_rows(named=True):
        assert "view_0001_000" in row["detail"]  # names the chunk
        assert row["source_uid"].startswith("file://")
    lines = drops.filter(pl.col("reason").is_in(["bad_json", "missing_field"]))
    assert sorted(u.rsplit("#", 1)[1] for u in lines["source_uid"]) == ["L2", "L3"]
    assert inv["published"] >= 3  # the good runs went through
    assert inv["ingested"] == inv["published"] + inv["dropped"] + inv["quarantined"]


def test_audit_json_shows_the_invariant(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from pipeline.cli import app

    corpus, work = tmp_path / "corpus", tmp_path / "work"
    add_epoch(corpus, 1, [[distinct(1), distinct(2), b"{bad"]])
    run_pipeline(config(corpus, work))
    res = CliRunner().invoke(app, ["audit", "--workdir", str(work), "--json"])
    assert res.exit_code == 0, res.output
    report = orjson.loads(res.stdout)
    inv = report["invariant"]
    assert (inv["ingested"], inv["published"], inv["quarantined"]) == (3, 2, 1)


def test_one_run_per_workdir(tmp_path: Path) -> None:
    with workdir_lock(tmp_path), pytest.raises(WorkdirLocked, match="in use"):
        import subprocess
        import sys

        code = (
            "import sys; from pathlib import Path; from pipeline.store.lock import workdir_lock\n"
            f"with workdir_lock(Path({str(tmp_path)!r})): pass"
        )
        proc = subprocess.run(check=False, args=[sys.executable, "-c", code], capture_output=True, text=True)
        if "WorkdirLocked" in proc.stderr:
            raise WorkdirLocked("in use")
    # a lock left by a dead process is recovered
    (tmp_path / ".lock").write_text("999999")
    with workdir_lock(tmp_path):
        assert (tmp_path / ".lock").read_text() != "999999"


def test_held_signatures_from_another_scheme_are_recomputed(tmp_path: Path) -> None:
    corpus, work = tmp_path / "corpus", tmp_path / "work"
    shards = add_epoch(corpus, 1, [[distinct(1), distinct(2)]])
    run_pipeline(config(corpus, work))
    # pretend the store was written by an older release with other token hashing
    commit = work / "state" / "commits" / "000000.json"
    part = work / "state" / "published" / "000000.parquet"
    stale = pl.read_parquet(part).with_columns(
        pl.lit("stale").alias("exact_hash"),
        pl.col("minhash").list.eval(pl.element() // 2 + 1).alias("minhash"),
    )
    stale.write_parquet(part)
    record = orjson.loads(commit.read_bytes())
    record["signature_scheme"] = "an-older-scheme"
    record["files"]["published/000000.parquet"] = file_sha256(part)  # a consistent older store
    commit.write_bytes(orjson.dumps(seal_record(record)))
    add_epoch(corpus, 2, [[distinct(1) | {"rollout_id": "re-export"}]], keep=shards)
    stats = run_pipeline(config(corpus, work)).stats
    assert stats["drops"] == {"traj_dedup/exact": 1}


def test_published_trees_are_verified_from_the_files(tmp_path: Path) -> None:
    from pipeline.orchestration.build import verify_trees

    corpus, work = tmp_path / "corpus", tmp_path / "work"
    add_epoch(corpus, 1, [[distinct(1), distinct(2)]])
    stats = run_pipeline(config(corpus, work)).stats
    assert stats["validation"] == {"ok": True, "datasets": 1, "problems": []}
    ds = "mini-coder-affine-textbased"
    assert verify_trees(work / "publish", [ds], stats)["ok"]
    # a shard that lost a row, or a tree without its card, fails the build
    shard = next((work / "publish" / ds / "data").glob("train-*.parquet"))
    pl.read_parquet(shard).head(1).write_parquet(shard)
    (work / "publish" / ds / "README.md").unlink()
    problems = verify_trees(work / "publish", [ds], stats)["problems"]
    assert any("1 rows in shards, ledger says 2" in p for p in problems)
    assert any("no README.md" in p for p in problems)


def test_cached_unit_work_is_redone_when_the_reference_tables_change(tmp_path: Path) -> None:
    """Task dedup and leak checks read the benchmark tables and the catalog: a cached unit made
    with other tables must not be reused."""
    corpus, work = tmp_path / "corpus", tmp_path / "work"
    add_epoch(corpus, 1, [[distinct(1), distinct(2)]])
    bench = tmp_path / "bench"
    bench.mkdir()
    row = {
        "benchmark": "b",
        "instance_id": "other__repo-1",
        "repo": "other/repo",
        "base_commit": "a" * 40,
        "problem_statement": "unrelated",
        "patch": "",
    }
    (bench / "t.jsonl").write_bytes(orjson.dumps(row) + b"\n")
    cfg = Config(affine=(str(corpus),), workdir=str(work), benchmarks=str(bench), workers=1)
    assert run_pipeline(cfg).stats["published"]["total"] == 2
    # the benchmark now names the task of run 1: a rebuild must drop it, not reuse the cache
    row["instance_id"] = distinct(1)["instance_id"]
    (bench / "t.jsonl").write_bytes(orjson.dumps(row) + b"\n")
    again = run_pipeline(cfg, rebuild=True)
    assert again.units_processed == 1
    assert again.stats["drops"] == {"task_dedup/benchmark_task": 1}


def test_runs_already_in_the_catalog_are_duplicates_and_their_keys_are_cached(tmp_path: Path) -> None:
    import shutil

    first, work_a = tmp_path / "first", tmp_path / "a"
    add_epoch(first, 1, [[distinct(1), distinct(2)]])
    run_pipeline(config(first, work_a))
    catalog = tmp_path / "catalog" / "runs"
    catalog.mkdir(parents=True)
    for i, shard in enumerate(sorted((work_a / "publish").rglob("train-*.parquet"))):
        shutil.copy(shard, catalog / f"part-{i}.parquet")
    # a new corpus re-exports run 1 under another rollout id: it is already held by the catalog
    second, work_b = tmp_path / "second", tmp_path / "b"
    shards = add_epoch(second, 5, [[distinct(1) | {"rollout_id": "again"}, distinct(3)]])
    cfg = Config(
        affine=(str(second),),
        workdir=str(work_b),
        no_benchmarks=True,
        workers=1,
        catalog=str(tmp_path / "catalog"),
        cache_dir=str(tmp_path / "cache"),
    )
    stats = run_pipeline(cfg).stats
    assert stats["drops"] == {"traj_dedup/exact": 1}
    drops = pl.read_parquet(work_b / "ledger" / "drops.parquet")
    assert drops["detail"][0].startswith("kept=catalog:")
    cached = list((tmp_path / "cache" / "reference").glob("catalog-keys-*/keys.parquet"))
    assert len(cached) == 1
    add_epoch(second, 6, [[distinct(4)]], keep=shards)
    run_pipeline(cfg)
    assert list((tmp_path / "cache" / "reference").glob("catalog-keys-*/keys.parquet")) == cached


def test_splitting_a_swelego_file_into_row_group_units_changes_no_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pyarrow.parquet as pq

    from pipeline.devkit.synth.corpus import synth
    from pipeline.sources import swelego

    synth(tmp_path / "s", runs=12, epochs=1, seed=5)
    for f in (tmp_path / "s" / "swelego").rglob("*.parquet"):
        pq.write_table(pq.read_table(f), f, row_group_size=2)  # several row groups per file

    def run_into(work: Path) -> RunSummary:
        return run_pipeline(
            Config(
                swelego=(str(tmp_path / "s" / "swelego"),), workdir=str(work), no_benchmarks=True, workers=1
            )
        )

    whole = run_into(tmp_path / "whole")
    monkeypatch.setattr(swelego, "UNIT_ROWS", 3)
    parts = run_into(tmp_path / "parts")
    assert parts.units_total > whole.units_total
    assert whole.stats["invariant"]["ingested"] > 0
    assert tree_bytes(tmp_path / "parts") == tree_bytes(tmp_path / "whole")


def test_shards_of_unchanged_datasets_are_kept_not_encoded_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A dataset whose runs did not change keeps its shards from the build before (they were made
    from the same rows); a missing shard, or new runs, make it encode again, and the incremental
    build is the one a fresh run on the same input gives."""
    import pipeline.publish.publisher as publisher

    encoded: list[str] = []
    real = publisher.write_shards

    def counting(frame, data_dir, **kw):  # type: ignore[no-untyped-def]
        encoded.append(data_dir.parent.name)
        return real(frame, data_dir, **kw)

    monkeypatch.setattr(publisher, "write_shards", counting)
    corpus, work = tmp_path / "corpus", tmp_path / "work"
    shards = add_epoch(corpus, 1, [[distinct(i) for i in range(3)]])
    run_pipeline(config(corpus, work))
    assert encoded == ["mini-coder-affine-textbased"]
    snapshot = tree_bytes(work)

    run_pipeline(config(corpus, work))  # nothing new: nothing encoded
    assert encoded == ["mini-coder-affine-textbased"] and tree_bytes(work) == snapshot

    next((work / "publish").rglob("train-*.parquet")).unlink()  # a damaged build is rewritten
    run_pipeline(config(corpus, work))
    assert len(encoded) == 2 and tree_bytes(work) == snapshot

    add_epoch(corpus, 2, [[distinct(i) for i in range(3, 5)]], keep=shards)
    run_pipeline(config(corpus, work))
    assert len(encoded) == 3
    fresh = tmp_path / "fresh"
    run_pipeline(config(corpus, fresh))
    assert tree_bytes(work) == tree_bytes(fresh)


def test_units_are_mapped_largest_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Longest-processing-time first: a large chunk listed last would otherwise run alone at the end."""
    import pipeline.orchestration.runner as runner

    corpus = tmp_path / "corpus"
    add_epoch(corpus, 1, [[distinct(1)], [distinct(i) for i in range(2, 40)], [distinct(50), distinct(51)]])
    mapped: list[list[str]] = []
    real = runner.make_executor

    def recording(*a, **kw):
        ex = real(*a, **kw)
        inner = ex.map

        def map_(fn, items, *args, **kws):
            mapped.append([u.key for u in items])
            return inner(fn, items, *args, **kws)

        ex.map = map_
        return ex

    monkeypatch.setattr(runner, "make_executor", recording)
    summary = run_pipeline(config(corpus, tmp_path / "work"))
    assert summary.stats["invariant"]["ok"]
    (keys,) = mapped
    sizes = [(corpus / VIEW_DIR / Path(k).name).stat().st_size for k in keys]
    assert sizes == sorted(sizes, reverse=True) and sizes[0] > sizes[-1]
