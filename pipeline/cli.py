"""Command line (DESIGN §6): ``trajpipe synth|run|publish|audit|benchmarks pull|convert``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import orjson
import typer
from rich.console import Console

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="Turn raw coding-agent runs into clean mini-swe-agent training datasets.")
bench_app = typer.Typer(no_args_is_help=True, help="Benchmark tables used for leak filtering.")
app.add_typer(bench_app, name="benchmarks")
err = Console(stderr=True)


def _fail(msg: str, code: int = 2) -> None:
    err.print(f"[bold red]error:[/] {msg}")
    raise typer.Exit(code)


@app.command()
def synth(
    out: Annotated[Path, typer.Option(help="folder to write affine/, swelego/, catalog/ into")],
    runs: Annotated[int, typer.Option(help="distinct runs per epoch")] = 300,
    epochs: Annotated[int, typer.Option(help="corpus epochs")] = 2,
    seed: Annotated[int, typer.Option(help="random seed (same seed → same bytes)")] = 7,
    benchmarks: Annotated[Path | None, typer.Option(help="real benchmark tables to plant from")] = None,
) -> None:
    """Write a realistic, deterministic synthetic corpus in the input contracts of DESIGN §2."""
    from pipeline.sources.synth import synth as make

    summary = make(out, runs=runs, epochs=epochs, seed=seed, benchmarks=benchmarks)
    err.print(f"wrote synthetic corpus to {out}")
    sys.stdout.write(orjson.dumps(summary, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS).decode() + "\n")


@app.command()
def run(
    config: Annotated[Path | None, typer.Option(help="TOML config (keys as the options)")] = None,
    affine: Annotated[list[str] | None, typer.Option(help="Affine corpus dir or https:// base URL")] = None,
    swelego: Annotated[list[str] | None, typer.Option(help="SWE-Lego file or folder")] = None,
    catalog: Annotated[str | None, typer.Option(help="catalog folder (tasks.parquet, runs/)")] = None,
    benchmarks: Annotated[str | None, typer.Option(help="folder of benchmark tables")] = None,
    no_benchmarks: Annotated[bool, typer.Option("--no-benchmarks", help="skip benchmark checks")] = False,
    workdir: Annotated[str | None, typer.Option(help="work dir (state, ledger, publish)")] = None,
    executor: Annotated[str | None, typer.Option(help="local or ray")] = None,
    workers: Annotated[int | None, typer.Option(help="worker processes")] = None,
    ray_address: Annotated[str | None, typer.Option(help="ray.init address (ray executor)")] = None,
    rebuild: Annotated[bool, typer.Option("--rebuild", help="forget earlier decisions, rebuild all")] = False,
) -> None:
    """Ingest new shards, convert, filter, deduplicate and write the dataset trees."""
    from pipeline.config import Config
    from pipeline.ledger import InvariantError
    from pipeline.progress import Reporter
    from pipeline.runner import NoBenchmarks, run_pipeline
    from pipeline.sources.affine import ManifestError
    from pipeline.state import WorkdirLocked

    try:
        cfg = Config.load(config, affine=affine or None, swelego=swelego or None, catalog=catalog,
                          benchmarks=benchmarks, no_benchmarks=no_benchmarks or None, workdir=workdir,
                          executor=executor, workers=workers, ray_address=ray_address)
    except (ValueError, OSError) as exc:
        _fail(f"bad config: {exc}")
    if not cfg.affine and not cfg.swelego:
        _fail("nothing to ingest: give --affine and/or --swelego (or a --config naming them)")
    try:
        summary = run_pipeline(cfg, rebuild=rebuild, reporter=Reporter(err))
    except (NoBenchmarks, WorkdirLocked, ManifestError, FileNotFoundError) as exc:
        _fail(str(exc))
    except InvariantError as exc:
        _fail(str(exc), code=3)
    assert summary.stats is not None
    inv = summary.stats["invariant"]
    err.print(f"units: {summary.units_total} listed, {summary.units_new} new, "
              f"{summary.units_processed} processed")
    err.print(f"ingested {inv['ingested']} = published {inv['published']} + dropped {inv['dropped']} "
              f"+ quarantined {inv['quarantined']}")
    for ds in summary.datasets:
        err.print(f"  wrote {Path(cfg.workdir) / 'publish' / ds}")


@app.command()
def publish(
    workdir: Annotated[Path, typer.Option(help="work dir of a finished run")] = Path("data"),
    to: Annotated[Path | None, typer.Option(help="copy the dataset trees to this folder")] = None,
    hub: Annotated[str | None, typer.Option(help="push to this Hugging Face org or user")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="print the plan, change nothing")] = False,
    private: Annotated[bool, typer.Option("--private", help="create Hub repos as private")] = False,
    create_pr: Annotated[bool, typer.Option("--create-pr", help="open a PR instead of pushing")] = False,
) -> None:
    """Send the dataset trees of a finished run to a folder or the Hub."""
    from pipeline.publish.publisher import check_publishable, publish_to_dir, publish_to_hub

    stats_path = workdir / "ledger" / "stats.json"
    if not stats_path.exists():
        _fail(f"{stats_path} not found: run `trajpipe run` first")
    try:
        check_publishable(orjson.loads(stats_path.read_bytes()))
    except Exception as exc:
        _fail(f"refusing to publish: {exc}", code=3)
    src = workdir / "publish"
    if hub:
        from huggingface_hub.errors import HfHubHTTPError, OfflineModeIsEnabled

        try:
            plans = publish_to_hub(src, hub, dry_run=dry_run, private=private, create_pr=create_pr)
        except (HfHubHTTPError, OfflineModeIsEnabled, OSError) as exc:
            _fail(f"the Hub refused or could not be reached: {str(exc).splitlines()[0]}")
        for plan in plans:
            err.print(str(plan))
    else:
        if to is None:
            _fail("give --to DIR or --hub ORG")
            return
        if dry_run:
            err.print(f"would copy {sorted(p.name for p in src.iterdir())} to {to}")
            return
        for ds in publish_to_dir(src, to):
            err.print(f"copied {ds} → {to / ds}")


@app.command()
def audit(
    workdir: Annotated[Path, typer.Option(help="work dir of a finished run")] = Path("data"),
    json_out: Annotated[bool, typer.Option("--json", help="machine-readable output")] = False,
    epoch: Annotated[int | None, typer.Option(help="only this corpus epoch")] = None,
    explain: Annotated[str | None, typer.Option(help="tell one run's fate by source_uid")] = None,
    html: Annotated[Path | None, typer.Option(help="write a self-contained HTML report")] = None,
) -> None:
    """Explain every drop: the funnel per dataset and epoch, reasons, and the invariant."""
    from pipeline import audit as au

    if not (workdir / "ledger" / "stats.json").exists():
        _fail(f"no ledger in {workdir}: run `trajpipe run` first")
    if explain:
        fate = au.explain(workdir, explain)
        sys.stdout.write(orjson.dumps(fate, option=orjson.OPT_INDENT_2).decode() + "\n")
        return
    report = au.build_report(workdir, epoch=epoch)
    if html:
        au.write_html(report, html)
        err.print(f"wrote {html}")
    if json_out:
        sys.stdout.write(orjson.dumps(report, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS).decode() + "\n")
    elif not html:
        # off a terminal (logs, make) rich would fold the funnel into 80 columns
        au.render_report(report, Console() if sys.stdout.isatty() else Console(width=180))


@bench_app.command("pull")
def benchmarks_pull(
    to: Annotated[Path, typer.Option(help="cache folder for the tables")] = Path("data/benchmarks"),
) -> None:
    """Download SWE-bench (full, Lite, Verified, Multimodal), GitGoodBench and others from the Hub."""
    from pipeline.benchmarks import pull_benchmarks

    try:
        paths = pull_benchmarks(to)
    except (RuntimeError, OSError) as exc:  # the tables that did come down are written already
        failures = str(exc).removeprefix("could not pull: ").split("; ")
        for failure in failures:
            err.print(f"[red]not pulled:[/] {failure.splitlines()[0][:200]}")
        _fail(f"{len(failures)} benchmark table(s) could not be pulled (network or Hub access); see above")
    for p in paths:
        err.print(f"wrote {p}")


@app.command()
def convert(
    files: Annotated[list[Path], typer.Argument(help="trajectory files of any supported format")],
    out: Annotated[Path, typer.Option(help="JSONL to write, one line per run")],
) -> None:
    """Convert trajectory files (format detected from content) to mini-coder JSONL."""
    from pipeline.convert_files import convert_files

    n_ok, n_drop = convert_files(files, out)
    err.print(f"{n_ok} converted, {n_drop} not converted (listed with their reason) → {out}")


def main() -> None:  # pragma: no cover
    app()


if __name__ == "__main__":  # pragma: no cover
    app()
