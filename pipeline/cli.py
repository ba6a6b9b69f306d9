"""Command line: ``trajpipe synth|run|publish|audit|benchmarks pull|convert``.

Every user mistake (a wrong option, a missing file, an unreachable Hub, a damaged work dir) ends in
one line on stderr starting with ``error:`` and exit code 2 (3: the build's books do not balance);
never in a traceback.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections import Counter
from pathlib import Path
from typing import Annotated, Any

import orjson
import typer
from rich.console import Console

# typer ships its own copy of click; its usage errors are only exported from here
from typer._click import exceptions as usage
from typer.core import TyperGroup

from pipeline.core.config import VERSION

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 110}


def _console() -> Console:
    # off a terminal (logs, make, CI) never fold a line in the middle of a path
    return Console(stderr=True, soft_wrap=not sys.stderr.isatty(), highlight=False)


err = _console()


def _say(msg: str) -> None:
    """One plain line on stderr (no markup: paths may hold brackets)."""
    err.print(msg, markup=False)


STOPPED = "stopped: interrupted (finished units are kept; run the same command again to resume)"


class _OneLineErrors(TyperGroup):
    """Click's usage errors, interrupts and unexpected OS errors as one line each, never a traceback."""

    def main(  # type: ignore[override]
        self,
        args: Any = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        try:
            rv = super().main(
                args=args, prog_name=prog_name, complete_var=complete_var, standalone_mode=False, **extra
            )
        except usage.NoArgsIsHelpError as exc:
            sys.stderr.write((exc.ctx.get_help() if exc.ctx else "") + "\n")
            sys.exit(2)
        except usage.UsageError as exc:
            where = exc.ctx.command_path if exc.ctx else "trajpipe"
            _say(f"error: {where}: {exc.format_message()} (see `{where} -h`)")
            sys.exit(2)
        except usage.ClickException as exc:
            _say(f"error: {exc.format_message()}")
            sys.exit(exc.exit_code)
        except (KeyboardInterrupt, typer.Abort):
            _say(STOPPED)
            sys.exit(130)
        except OSError as exc:
            if os.environ.get("TRAJPIPE_DEBUG"):
                raise
            where = f": {exc.filename}" if getattr(exc, "filename", None) else ""
            _say(f"error: {exc.strerror or exc}{where}")
            sys.exit(2)
        if rv == 130:  # typer turns KeyboardInterrupt into exit code 130
            _say(STOPPED)
        sys.exit(rv if isinstance(rv, int) else 0)


app = typer.Typer(
    cls=_OneLineErrors,
    add_completion=False,
    no_args_is_help=True,
    context_settings=CONTEXT,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    help="Turn raw coding-agent runs into clean mini-swe-agent training datasets.",
)
bench_app = typer.Typer(
    no_args_is_help=True,
    context_settings=CONTEXT,
    rich_markup_mode=None,
    help="Benchmark tables used for leak filtering.",
)
app.add_typer(bench_app, name="benchmarks")


def _version(value: bool) -> None:
    if value:
        typer.echo(f"trajpipe {VERSION}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="print the version and exit")
    ] = False,
) -> None:
    """Turn raw coding-agent runs into clean mini-swe-agent training datasets."""


def _fail(msg: str, code: int = 2) -> None:
    _say(f"error: {msg}")
    raise typer.Exit(code)


@app.command()
def synth(
    out: Annotated[
        Path, typer.Option(metavar="PATH", help="folder to write affine/, swelego/, catalog/ into")
    ],
    runs: Annotated[int, typer.Option(min=1, metavar="N", help="distinct runs per epoch")] = 300,
    epochs: Annotated[int, typer.Option(min=1, metavar="N", help="corpus epochs")] = 2,
    seed: Annotated[int, typer.Option(metavar="N", help="random seed (same seed → same bytes)")] = 7,
    benchmarks: Annotated[
        Path | None,
        typer.Option(
            metavar="DIR", help="real benchmark tables to plant cases from [default: a synthetic table]"
        ),
    ] = None,
) -> None:
    """Write a realistic, deterministic synthetic corpus: an Affine corpus (manifests, view and
    trace chunks), SWE-Lego files, a catalog, and labels.jsonl saying what must happen to each run."""
    from pipeline.devkit.synth.corpus import synth as make

    if benchmarks is not None and not benchmarks.is_dir():
        _fail(f"--benchmarks: {benchmarks} is not a folder")
    if out.exists() and not out.is_dir():
        _fail(f"--out: {out} is a file, not a folder")
    summary = make(out, runs=runs, epochs=epochs, seed=seed, benchmarks=benchmarks)
    _say(f"wrote synthetic corpus to {out}")
    sys.stdout.write(orjson.dumps(summary, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS).decode() + "\n")


def _announce_stop(signum: int, frame: object) -> None:
    signal.signal(signal.SIGINT, signal.default_int_handler)  # a second Ctrl-C stops at once
    _say("stopping: waiting for the workers to let go (finished units are kept) …")
    raise KeyboardInterrupt


@app.command()
def run(
    config: Annotated[
        Path | None,
        typer.Option(
            metavar="FILE",
            help="TOML file whose keys are these options (see data/sample.toml); options given here win",
        ),
    ] = None,
    affine: Annotated[
        list[str] | None,
        typer.Option(
            metavar="DIR|URL", help="Affine corpus folder or https:// base URL (repeat for several)"
        ),
    ] = None,
    affine_base_url: Annotated[
        list[str] | None,
        typer.Option(
            metavar="URL",
            help="public base URL of each --affine corpus, used in source_uids and the card "
            "[default: where it is read from]",
        ),
    ] = None,
    swelego: Annotated[
        list[str] | None,
        typer.Option(
            metavar="PATH|URL",
            help="SWE-Lego Parquet/JSONL file or folder, or "
            "hf://datasets/ORG/NAME[/PATH] (repeat for several)",
        ),
    ] = None,
    catalog: Annotated[
        str | None,
        typer.Option(
            metavar="DIR",
            help="catalog folder (tasks.parquet, runs/) of tasks and runs already held [default: none]",
        ),
    ] = None,
    benchmarks: Annotated[
        str | None,
        typer.Option(metavar="DIR", help="folder of benchmark tables (`trajpipe benchmarks pull`)"),
    ] = None,
    no_benchmarks: Annotated[
        bool, typer.Option("--no-benchmarks", help="skip the benchmark checks (the card says so)")
    ] = False,
    workdir: Annotated[
        str | None, typer.Option(metavar="DIR", help="work dir: state, ledger, publish [default: data]")
    ] = None,
    cache_dir: Annotated[
        str | None,
        typer.Option(
            metavar="DIR",
            help="cache of what is derived from the benchmark tables and the catalog, shared by work dirs "
            "[default: $TRAJPIPE_CACHE, else $XDG_CACHE_HOME/trajpipe, else ~/.cache/trajpipe]",
        ),
    ] = None,
    executor: Annotated[
        str | None, typer.Option(metavar="local|ray", help="local or ray [default: local]")
    ] = None,
    workers: Annotated[int | None, typer.Option(metavar="N", help="worker processes [default: 2]")] = None,
    ray_address: Annotated[
        str | None,
        typer.Option(
            metavar="ADDRESS", help="ray.init address, e.g. auto (ray executor) [default: a local Ray]"
        ),
    ] = None,
    rebuild: Annotated[
        bool,
        typer.Option(
            "--rebuild", help="forget earlier decisions and rebuild (cached per-unit work is reused)"
        ),
    ] = False,
) -> None:
    """Ingest new shards, convert, filter, deduplicate and write the dataset trees."""
    from pipeline.core.config import Config, ConfigError
    from pipeline.orchestration.process import CodeChanged
    from pipeline.orchestration.progress import Reporter
    from pipeline.orchestration.runner import NoBenchmarks, run_pipeline
    from pipeline.publish.publisher import PublishRefused
    from pipeline.sources import SOURCES, check_inputs, locations
    from pipeline.sources.affine import ManifestError
    from pipeline.sources.swelego import SourceUnavailable
    from pipeline.store.ledger import InvariantError
    from pipeline.store.lock import WorkdirLocked
    from pipeline.store.records import StateDamaged

    try:
        cfg = Config.load(
            config,
            affine=affine or None,
            affine_base_url=affine_base_url or None,
            swelego=swelego or None,
            catalog=catalog,
            benchmarks=benchmarks,
            no_benchmarks=no_benchmarks or None,
            workdir=workdir,
            cache_dir=cache_dir,
            executor=executor,
            workers=workers,
            ray_address=ray_address,
        )
        check_inputs(cfg)
        cfg.check_inputs()
    except ConfigError as exc:
        _fail(str(exc))
    if not any(locations(cfg, source) for source in SOURCES):
        _fail("nothing to ingest: give --affine and/or --swelego (or a --config naming them)")
    previous = signal.signal(signal.SIGINT, _announce_stop)
    try:
        summary = run_pipeline(cfg, rebuild=rebuild, reporter=Reporter(err))
    except (
        NoBenchmarks,
        WorkdirLocked,
        ManifestError,
        SourceUnavailable,
        FileNotFoundError,
        CodeChanged,
    ) as exc:
        _fail(str(exc))
    except (InvariantError, StateDamaged, PublishRefused) as exc:
        _fail(str(exc), code=3)
    except OSError as exc:  # disk full, permissions: the state is as the last whole run left it
        _fail(
            f"{exc.strerror or exc} ({exc.filename or 'work dir'}); nothing was committed: free space or "
            "fix the cause, then rerun the same command"
        )
    finally:
        signal.signal(signal.SIGINT, previous)
    assert summary.stats is not None
    inv = summary.stats["invariant"]
    _say(f"units: {summary.units_total} listed, {summary.units_new} new, {summary.units_processed} processed")
    _say(
        f"ingested {inv['ingested']} = published {inv['published']} + dropped {inv['dropped']} "
        f"+ quarantined {inv['quarantined']}"
    )
    for ds in summary.datasets:
        _say(f"  wrote {Path(cfg.workdir) / 'publish' / ds}")
    for line in summary.deferred:
        _say(f"not fetched, retried by the next run: {line}")
    _say(f"`trajpipe audit --workdir {cfg.workdir}` explains every drop")


@app.command()
def publish(
    workdir: Annotated[Path, typer.Option(metavar="DIR", help="work dir of a finished run")] = Path("data"),
    to: Annotated[
        Path | None, typer.Option(metavar="DIR", help="copy the dataset trees to this folder")
    ] = None,
    hub: Annotated[
        str | None, typer.Option(metavar="ORG", help="push to this Hugging Face org or user")
    ] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="print the plan, change nothing")] = False,
    private: Annotated[bool, typer.Option("--private", help="create Hub repos as private")] = False,
    create_pr: Annotated[bool, typer.Option("--create-pr", help="open a PR instead of pushing")] = False,
) -> None:
    """Send the dataset trees of a finished run to a folder (--to) or the Hub (--hub)."""
    from pipeline.publish.publisher import PublishRefused, check_publishable
    from pipeline.store.lock import WorkdirLocked, workdir_lock

    if to is not None and hub:
        _fail("--to and --hub: give one of them, not both")
    if to is None and not hub:
        _fail("give --to DIR or --hub ORG")
    stats_path = workdir / "ledger" / "stats.json"
    if not stats_path.exists():
        _fail(f"{stats_path} not found: run `trajpipe run` first")
    # the shared lock: no run can switch or rewrite the build while it is verified and sent
    with contextlib.ExitStack() as stack:
        try:
            stack.enter_context(workdir_lock(workdir, shared=True))
            check_publishable(orjson.loads(stats_path.read_bytes()))
        except (WorkdirLocked, PublishRefused, ValueError, OSError) as exc:
            _fail(
                f"refusing to publish: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}", code=3
            )
        _publish_locked(workdir / "publish", to, hub, dry_run, private, create_pr)


def _publish_locked(
    src: Path, to: Path | None, hub: str | None, dry_run: bool, private: bool, create_pr: bool
) -> None:
    from pipeline.publish.publisher import PublishRefused, publish_to_dir, publish_to_hub

    if hub:
        import httpx
        from huggingface_hub.errors import HfHubHTTPError, OfflineModeIsEnabled

        from pipeline.io.hub import HubUnreachable, check_reachable

        try:
            check_reachable()
            plans = publish_to_hub(src, hub, dry_run=dry_run, private=private, create_pr=create_pr)
        except PublishRefused as exc:
            _fail(f"refusing to publish: {exc}", code=3)
        except HubUnreachable as exc:
            _fail(f"the Hub could not be reached: {exc}")
        except (HfHubHTTPError, OfflineModeIsEnabled, httpx.HTTPError, OSError) as exc:
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            _fail(f"the Hub refused or could not be reached: {first}")
        for plan in plans:
            _say(str(plan))
    else:
        if to is None:
            _fail("give --to DIR or --hub ORG")
            return
        if dry_run:
            _say(f"would copy {sorted(p.name for p in src.iterdir())} to {to}")
            return
        try:
            copied = publish_to_dir(src, to)
        except PublishRefused as exc:
            _fail(f"refusing to publish: {exc}", code=3)
        for ds in copied:
            _say(f"copied {ds} → {to / ds}")


@app.command()
def audit(
    workdir: Annotated[Path, typer.Option(metavar="DIR", help="work dir of a finished run")] = Path("data"),
    json_out: Annotated[bool, typer.Option("--json", help="machine-readable output")] = False,
    epoch: Annotated[int | None, typer.Option(metavar="N", help="only this corpus epoch")] = None,
    explain: Annotated[
        str | None,
        typer.Option(
            metavar="UID",
            help="tell one run's fate: its source_uid or any unique "
            "end of it (e.g. chunk-00002.jsonl.gz#L17)",
        ),
    ] = None,
    html: Annotated[
        Path | None, typer.Option(metavar="FILE", help="write a self-contained HTML report to this file")
    ] = None,
    counters: Annotated[
        bool, typer.Option("--counters", help="also print the counters (per dialect, tool, secret kind)")
    ] = False,
) -> None:
    """Explain every drop: the funnel per dataset and epoch, the reasons, and the invariant."""
    from pipeline.report import audit as au

    if not (workdir / "ledger" / "stats.json").exists():
        _fail(f"no ledger in {workdir}: run `trajpipe run` first")
    try:
        if explain:
            fate = au.explain(workdir, explain)
            if json_out:
                sys.stdout.write(orjson.dumps(fate, option=orjson.OPT_INDENT_2).decode() + "\n")
            else:
                sys.stdout.write(au.explain_text(fate) + "\n")
            if fate["fate"] in ("unknown", "ambiguous"):
                raise typer.Exit(1)
            return
        known = au.known_epochs(workdir)
        if epoch is not None and epoch not in known:
            _fail(
                f"--epoch {epoch}: no such epoch in this build (epochs: "
                f"{', '.join(map(str, known)) or 'none'})"
            )
        report = au.build_report(workdir, epoch=epoch)
    except au.DamagedLedger as exc:
        _fail(f"damaged work dir: {exc}")
    if html:
        try:
            au.write_html(report, html)
        except OSError as exc:
            _fail(f"--html: cannot write {html}: {exc.strerror or exc}")
        _say(f"wrote {html}")
    if json_out:
        sys.stdout.write(
            orjson.dumps(report, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS).decode() + "\n"
        )
    elif not html:
        console = Console() if sys.stdout.isatty() else Console(width=200, soft_wrap=True)
        au.render_report(report, console, counters=counters)


@bench_app.command("pull")
def benchmarks_pull(
    to: Annotated[Path, typer.Option(metavar="DIR", help="cache folder for the tables")] = Path(
        "data/benchmarks"
    ),
) -> None:
    """Download SWE-bench (full, Lite, Verified, Multimodal), GitGoodBench and others from the Hub."""
    from pipeline.io.hub import HubUnreachable, check_reachable
    from pipeline.reference.benchmarks import pull_benchmarks

    try:
        check_reachable()
    except HubUnreachable as exc:
        _fail(f"the Hub could not be reached: {exc}")
    try:
        paths = pull_benchmarks(to)
    except (RuntimeError, OSError) as exc:  # the tables that did come down are written already
        failures = str(exc).removeprefix("could not pull: ").split("; ")
        for failure in failures:
            _say(f"not pulled: {failure.splitlines()[0][:200]}")
        _fail(f"{len(failures)} benchmark table(s) could not be pulled (network or Hub access); see above")
    for p in paths:
        _say(f"wrote {p}")


@app.command()
def convert(
    files: Annotated[
        list[Path],
        typer.Argument(
            help="trajectory files or folders (SWE-agent .traj, OpenHands "
            "events, SWE-smith, mini-swe-agent, SWE-Lego Parquet/JSONL; session transcripts of "
            "Claude Code, Codex CLI, pi and Kimi CLI, one run per file)"
        ),
    ],
    out: Annotated[Path, typer.Option(metavar="PATH", help="JSONL to write, one line per run")],
) -> None:
    """Convert trajectory files (format detected from content) to mini-coder JSONL.

    Exits 1 when an input could not be used or nothing was converted (each run's reason is in the
    output), 2 when an input does not exist."""
    from pipeline.orchestration.convert_files import InputError, convert_files, expand_inputs, format_summary

    try:
        inputs = expand_inputs(files)
    except InputError as exc:
        _fail(str(exc))
    if out.exists() and out.is_dir():
        _fail(f"--out: {out} is a folder; give a file name")
    result = convert_files(inputs, out)
    # per detected format; files of no known format are the quarantine lines listed in the output
    for line in format_summary(
        Counter({k: n for k, n in result.by_format.items() if not k.startswith("unknown/")})
    ):
        _say(line)
    _say(f"{result.converted} converted, {result.dropped} not converted (listed with their reason) → {out}")
    for problem in result.unusable:
        _say(f"not usable: {problem}")
    if result.unusable or result.converted == 0:
        _say("error: " + ("some inputs could not be used" if result.unusable else "nothing was converted"))
        raise typer.Exit(1)


def main() -> None:  # pragma: no cover
    app()


if __name__ == "__main__":  # pragma: no cover
    app()
