"""The command line: clear errors, exit codes, and the commands wired to the library."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from pipeline.cli import app
from tests.builders import distinct
from tests.corpus_kit import add_epoch

runner = CliRunner()


def test_run_without_inputs_or_benchmarks_explains_itself(tmp_path: Path) -> None:
    res = runner.invoke(app, ["run", "--workdir", str(tmp_path / "w")])
    assert res.exit_code == 2 and "nothing to ingest" in res.output
    add_epoch(tmp_path / "c", 1, [[distinct(1)]])
    res = runner.invoke(app, ["run", "--affine", str(tmp_path / "c"), "--workdir", str(tmp_path / "w")])
    assert res.exit_code == 2 and "--no-benchmarks" in res.output


def test_run_publish_and_offline_hub(tmp_path: Path) -> None:
    add_epoch(tmp_path / "c", 1, [[distinct(1), distinct(2)]])
    work = tmp_path / "w"
    res = runner.invoke(
        app,
        ["run", "--affine", str(tmp_path / "c"), "--workdir", str(work), "--no-benchmarks", "--workers", "1"],
    )
    assert res.exit_code == 0, res.output
    assert "ingested 2 = published 2 + dropped 0 + quarantined 0" in res.output
    res = runner.invoke(app, ["publish", "--workdir", str(work), "--to", str(tmp_path / "out")])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "out" / "mini-coder-affine-textbased" / "README.md").exists()
    # HF_HUB_OFFLINE=1 (conftest): the Hub cannot be reached, and the user is told so plainly
    res = runner.invoke(app, ["publish", "--workdir", str(work), "--hub", "someorg", "--dry-run"])
    assert res.exit_code == 2 and "could not be reached" in res.output
    assert "Traceback" not in res.output


def test_publish_before_any_run(tmp_path: Path) -> None:
    res = runner.invoke(app, ["publish", "--workdir", str(tmp_path), "--to", str(tmp_path / "o")])
    assert res.exit_code == 2 and "run `trajpipe run` first" in res.output


def test_benchmarks_pull_offline_fails_at_once_with_one_line(tmp_path: Path) -> None:
    res = runner.invoke(app, ["benchmarks", "pull", "--to", str(tmp_path / "b")])
    assert res.exit_code == 2
    assert res.output.splitlines() == [
        "error: the Hub could not be reached: HF_HUB_OFFLINE is set, so "
        "https://huggingface.co is not contacted (unset it to go online)"
    ]


def test_missing_inputs_are_named(tmp_path: Path) -> None:
    for flag in ("--swelego", "--affine"):
        res = runner.invoke(
            app, ["run", flag, str(tmp_path / "nope"), "--workdir", str(tmp_path / "w"), "--no-benchmarks"]
        )
        assert res.exit_code == 2, res.output
        assert "nope" in res.output and "Traceback" not in res.output


def test_bad_options_are_a_config_error(tmp_path: Path) -> None:
    res = runner.invoke(app, ["run", "--affine", str(tmp_path), "--executor", "spark", "--no-benchmarks"])
    assert res.exit_code == 2 and "--executor: must be 'local' or 'ray'" in res.output
    res = runner.invoke(app, ["run", "--affine", str(tmp_path), "--workers", "0", "--no-benchmarks"])
    assert res.exit_code == 2 and "--workers: must be at least 1" in res.output


def test_the_committed_sample_config_loads() -> None:
    from pipeline.core.config import Config, DedupParams, Limits

    cfg = Config.load(Path(__file__).parents[1] / "data" / "sample.toml", workers=1)
    assert cfg.affine == ("data/sample/affine",) and cfg.workers == 1  # CLI overrides the file
    assert cfg.limits == Limits() and cfg.dedup == DedupParams()  # the file spells out the defaults
