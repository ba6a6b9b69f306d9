"""Every wrong invocation gets its exit code and ONE line on stderr naming the option and the problem.

The table below is the specification: (arguments, exit code, the line). ``{w}`` is a finished
build's work dir, ``{c}`` its corpus, ``{t}`` a scratch folder. A case fails if stderr holds a
traceback or more than the one line.
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pipeline.cli import app
from tests.conftest import REAL
from tests.corpus_kit import add_epoch
from tests.test_runner import distinct


@pytest.fixture(scope="module")
def build(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A finished two-run build (epoch 1), and scratch files the cases refer to."""
    t = tmp_path_factory.mktemp("cli")
    add_epoch(t / "c", 1, [[distinct(1)], [distinct(2)]])  # two chunks
    res = CliRunner().invoke(
        app, ["run", "--affine", str(t / "c"), "--workdir", str(t / "w"), "--no-benchmarks", "--workers", "1"]
    )
    assert res.exit_code == 0, res.output
    (t / "bench").mkdir()
    (t / "emptydir").mkdir()
    (t / "empty.traj").write_bytes(b"")
    (t / "not-json.traj").write_text("this is not a trajectory\n")
    (t / "task.json").write_bytes((REAL / "swesmith-task-instance-pandas-pr_53652.json").read_bytes())
    (t / "a-file").write_text("x")
    toml = {
        "bands0.toml": "[dedup]\nbands = 0\n",
        "threshold5.toml": "[dedup]\nthreshold = 5\n",
        "bandsrows.toml": "[dedup]\nbands = 32\nrows = 8\n",
        "typo.toml": "[dedup]\nbandz = 3\n",
        "wrongtype.toml": '[limits]\nstep_limit = "many"\n',
        "bool.toml": "[limits]\nbatch_runs = true\n",
        "topkey.toml": 'affine = ["x"]\nworkerz = 2\n',
        "workers-str.toml": 'workers = "two"\n',
        "broken.toml": "affine = [\n",
        "both.toml": f'benchmarks = "{t / "bench"}"\nno_benchmarks = true\n',
    }
    for name, text in toml.items():
        (t / name).write_text(text)
    (t / "damaged").mkdir()
    (t / "damaged" / "ledger").mkdir()
    (t / "damaged" / "ledger" / "stats.json").write_text("{not json")
    return {"t": t, "w": t / "w", "c": t / "c"}


RUN = ["run", "--affine", "{c}", "--workdir", "{t}/w2"]
CASES: list[tuple[list[str], int, str]] = [
    # run: options and config keys, validated before any work
    ([*RUN, "--no-benchmarks", "--catalog", "/typo"], 2, "error: --catalog: /typo does not exist"),
    (
        [*RUN, "--no-benchmarks", "--catalog", "{t}/emptydir"],
        2,
        "error: --catalog: {t}/emptydir has neither tasks.parquet nor runs/",
    ),
    (
        [*RUN, "--no-benchmarks", "--benchmarks", "{t}/bench"],
        2,
        "error: --no-benchmarks: cannot be combined with --benchmarks {t}/bench",
    ),
    ([*RUN, "--benchmarks", "/nonexistent"], 2, "error: --benchmarks: /nonexistent does not exist"),
    ([*RUN, "--no-benchmarks", "--config", "{t}/bands0.toml"], 2, "error: [dedup] bands: must be at least 1"),
    (
        [*RUN, "--no-benchmarks", "--config", "{t}/threshold5.toml"],
        2,
        "error: [dedup] threshold: must be in (0, 1], not 5.0 (near-duplicate detection would be off)",
    ),
    (
        [*RUN, "--no-benchmarks", "--config", "{t}/bandsrows.toml"],
        2,
        "error: [dedup] bands: bands × rows = 256 exceeds num_perm = 128",
    ),
    (
        [*RUN, "--no-benchmarks", "--config", "{t}/typo.toml"],
        2,
        "error: [dedup] bandz: unknown key (known: bands, num_perm, rows, seed, shingle, threshold)",
    ),
    (
        [*RUN, "--no-benchmarks", "--config", "{t}/wrongtype.toml"],
        2,
        "error: [limits] step_limit: must be a whole number, not 'many'",
    ),
    (
        [*RUN, "--no-benchmarks", "--config", "{t}/bool.toml"],
        2,
        "error: [limits] batch_runs: must be a whole number, not True",
    ),
    (
        [*RUN, "--no-benchmarks", "--config", "{t}/topkey.toml"],
        2,
        "error: config key 'workerz': unknown (known: "
        "affine, affine_base_url, benchmarks, cache_dir, catalog, dedup, executor, limits, no_benchmarks, ray_address, "
        "swelego, "
        "workdir, workers)",
    ),
    (
        [*RUN, "--no-benchmarks", "--config", "{t}/workers-str.toml"],
        2,
        "error: --workers: must be a whole number, not 'two'",
    ),
    (
        [*RUN, "--no-benchmarks", "--config", "{t}/broken.toml"],
        2,
        "error: --config: {t}/broken.toml is not valid TOML: Invalid value (at end of document)",
    ),
    (
        ["run", "--config", "{t}/both.toml", "--affine", "{c}"],
        2,
        "error: --no-benchmarks: cannot be combined with --benchmarks {t}/bench",
    ),
    (
        [*RUN, "--no-benchmarks", "--config", "{t}/nope.toml"],
        2,
        "error: --config: {t}/nope.toml does not exist",
    ),
    (
        [*RUN, "--no-benchmarks", "--workers", "x"],
        2,
        "error: trajpipe run: Invalid value for '--workers': Input should be a valid integer, unable to parse string as an integer (see `trajpipe run -h`)",
    ),
    ([*RUN, "--no-benchmarks", "--workers", "0"], 2, "error: --workers: must be at least 1, not 0"),
    (
        [*RUN, "--no-benchmarks", "--executor", "spark"],
        2,
        "error: --executor: must be 'local' or 'ray', not 'spark'",
    ),
    (
        [*RUN, "--no-benchmarks", "--frobnicate"],
        2,
        "error: trajpipe run: No such option: --frobnicate (see `trajpipe run -h`)",
    ),
    (
        [*RUN, "--no-benchmarks", "--affine-base-url", "data.affine.io"],
        2,
        "error: --affine-base-url: 'data.affine.io' is not an http(s):// or file:// URL",
    ),
    (
        [*RUN, "--affine", "{c}", "--no-benchmarks", "--affine-base-url", "https://data.affine.io"],
        2,
        "error: --affine-base-url: give one per --affine (2 corpora, 1 base URLs)",
    ),
    (["run", "--affine", "{t}/nope", "--no-benchmarks"], 2, "error: --affine: {t}/nope does not exist"),
    (
        ["run", "--affine", "{t}/a-file", "--no-benchmarks"],
        2,
        "error: --affine: {t}/a-file is a file, not a folder",
    ),
    (
        ["run", "--swelego", "{t}/nope.parquet", "--no-benchmarks"],
        2,
        "error: --swelego: {t}/nope.parquet does not exist",
    ),
    (
        ["run", "--affine", "{c}", "--no-benchmarks", "--workdir", "{t}/a-file"],
        2,
        "error: --workdir: {t}/a-file is a file, not a folder",
    ),
    (
        ["run", "--affine", "{c}", "--workdir", "{t}/w3"],
        2,
        "error: no benchmark tables given: pass --benchmarks DIR (see `trajpipe benchmarks pull`) or --no-benchmarks "
        "to skip the benchmark checks (the card will say so)",
    ),
    # publish
    (
        ["publish", "--workdir", "{w}", "--to", "{t}/out", "--hub", "someorg"],
        2,
        "error: --to and --hub: give one of them, not both",
    ),
    (["publish", "--workdir", "{w}"], 2, "error: give --to DIR or --hub ORG"),
    (
        ["publish", "--workdir", "{w}", "--hub", "someorg", "--dry-run"],
        2,
        "error: the Hub could not be reached: HF_HUB_OFFLINE is set, so https://huggingface.co is not contacted "
        "(unset it to go online)",
    ),
    (
        ["publish", "--workdir", "{t}", "--to", "{t}/out"],
        2,
        "error: {t}/ledger/stats.json not found: run `trajpipe run` first",
    ),
    (
        ["benchmarks", "pull", "--to", "{t}/b"],
        2,
        "error: the Hub could not be reached: HF_HUB_OFFLINE is set, so https://huggingface.co is not contacted "
        "(unset it to go online)",
    ),
    # synth
    (
        ["synth", "--out", "{t}/s", "--runs", "0"],
        2,
        "error: trajpipe synth: Invalid value for '--runs': Input should be "
        "greater than or equal to 1 (see `trajpipe synth -h`)",
    ),
    (
        ["synth", "--out", "{t}/s", "--runs", "-5"],
        2,
        "error: trajpipe synth: Invalid value for '--runs': Input should be "
        "greater than or equal to 1 (see `trajpipe synth -h`)",
    ),
    (
        ["synth", "--out", "{t}/s", "--epochs", "0"],
        2,
        "error: trajpipe synth: Invalid value for '--epochs': Input should "
        "be greater than or equal to 1 (see `trajpipe synth -h`)",
    ),
    # convert
    (["convert", "{t}/missing.traj", "--out", "{t}/o.jsonl"], 2, "error: {t}/missing.traj does not exist"),
    (
        ["convert", "{t}/emptydir", "--out", "{t}/o.jsonl"],
        2,
        "error: {t}/emptydir is a folder with no trajectory files (.traj, .json, .jsonl, .parquet, .gz)",
    ),
    (
        ["convert", "{t}/task.json", "--out", "{t}/emptydir"],
        2,
        "error: --out: {t}/emptydir is a folder; give a file name",
    ),
    # audit
    (
        ["audit", "--workdir", "{w}", "--epoch", "99"],
        2,
        "error: --epoch 99: no such epoch in this build (epochs: 1)",
    ),
    (
        ["audit", "--workdir", "{w}", "--html", "/proc/no/such/report.html"],
        2,
        "error: --html: cannot write /proc/no/such/report.html: No such file or directory",
    ),
    (
        ["audit", "--workdir", "{t}/damaged"],
        2,
        "error: damaged work dir: {t}/damaged/ledger/stats.json cannot be read (JSONDecodeError); run `trajpipe run` "
        "again",
    ),
    (["audit", "--workdir", "{t}/nowhere"], 2, "error: no ledger in {t}/nowhere: run `trajpipe run` first"),
]


def _fill(text: str, build: dict[str, Path]) -> str:
    return text.format(**{k: str(v) for k, v in build.items()})


@pytest.mark.parametrize(("args", "code", "line"), CASES, ids=[" ".join(a[:1] + a[-2:]) for a, _, _ in CASES])
def test_wrong_invocation_gets_its_exit_code_and_one_line(
    build: dict[str, Path], args: list[str], code: int, line: str
) -> None:
    res = CliRunner().invoke(app, [_fill(a, build) for a in args], prog_name="trajpipe")
    assert ("Traceback" not in res.stderr and res.exception is None) or isinstance(res.exception, SystemExit)
    assert (res.exit_code, res.stderr.splitlines()) == (code, [_fill(line, build)])


# convert: inputs that exist but give nothing exit 1, with the per-file reason and one error line
CONVERT_CASES: list[tuple[list[str], list[str]]] = [
    (
        ["{t}/empty.traj"],
        [
            "0 converted, 1 not converted (listed with their reason) → {t}/o.jsonl",
            "not usable: {t}/empty.traj: unreadable: empty file",
            "error: some inputs could not be used",
        ],
    ),
    (
        ["{t}/not-json.traj"],
        [
            "0 converted, 1 not converted (listed with their reason) → {t}/o.jsonl",
            "not usable: {t}/not-json.traj: bad_json: {t}/not-json.traj: neither JSON nor JSON Lines",
            "error: some inputs could not be used",
        ],
    ),
    (
        ["{t}/task.json"],
        [
            "0 converted, 1 not converted (listed with their reason) → {t}/o.jsonl",
            "error: nothing was converted",
        ],
    ),
]


@pytest.mark.parametrize(("inputs", "lines"), CONVERT_CASES, ids=[c[0][0] for c in CONVERT_CASES])
def test_convert_exits_1_when_an_input_gives_nothing(
    build: dict[str, Path], inputs: list[str], lines: list[str]
) -> None:
    res = CliRunner().invoke(
        app, ["convert", *(_fill(a, build) for a in inputs), "--out", _fill("{t}/o.jsonl", build)]
    )
    assert "Traceback" not in res.stderr
    assert (res.exit_code, res.stderr.splitlines()) == (1, [_fill(x, build) for x in lines])


def test_explain_unknown_uid_exits_1_with_a_sentence(build: dict[str, Path]) -> None:
    res = CliRunner().invoke(app, ["audit", "--workdir", str(build["w"]), "--explain", "no-such-run#L9"])
    assert res.exit_code == 1
    assert res.stdout == (
        "no run matches 'no-such-run#L9' in this build (give a source_uid or a unique end of one)\n"
    )


def test_explain_accepts_a_unique_suffix_and_speaks_human_unless_json(build: dict[str, Path]) -> None:
    import polars as pl

    uid = pl.read_parquet(next((build["w"] / "publish").glob("*/data/*.parquet")))["source_uid"][0]
    tail = uid.rsplit("/", 1)[1]  # e.g. "chunk-00001.jsonl.gz#L1": unique in this build
    res = CliRunner().invoke(app, ["audit", "--workdir", str(build["w"]), "--explain", tail])
    assert res.exit_code == 0, res.output
    first, second = res.stdout.splitlines()
    assert first == uid
    assert second.startswith("  published in mini-coder-affine-") and ", row " in second
    res = CliRunner().invoke(app, ["audit", "--workdir", str(build["w"]), "--explain", tail, "--json"])
    assert res.exit_code == 0 and '"fate": "published"' in res.stdout
    res = CliRunner().invoke(app, ["audit", "--workdir", str(build["w"]), "--explain", "#L1", "--json"])
    assert res.exit_code == 1 and '"fate": "ambiguous"' in res.stdout and '"count": 2' in res.stdout


def test_version_and_short_help() -> None:
    from pipeline.core.config import VERSION

    res = CliRunner().invoke(app, ["--version"])
    assert (res.exit_code, res.stdout) == (0, f"trajpipe {VERSION}\n")
    res = CliRunner().invoke(app, ["run", "-h"])
    assert res.exit_code == 0
    text = " ".join(res.stdout.split())
    for default in (
        "[default: data]",
        "[default: local]",
        "[default: 2]",
        "[default: where it is read from]",
    ):
        assert default in text
    assert "§" not in text and "DESIGN" not in text


def test_no_help_text_points_to_files_users_do_not_have() -> None:
    for cmd in ("run", "synth", "publish", "audit", "convert"):
        res = CliRunner().invoke(app, [cmd, "-h"])
        assert res.exit_code == 0 and "§" not in res.stdout and "DESIGN" not in res.stdout, cmd


def test_an_unreachable_hub_fails_at_the_first_lookup_without_calling_the_hub(
    build: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """No offline flag, no network: the DNS failure is one line and the Hub client is never reached."""
    import huggingface_hub.constants as hc

    import pipeline.publish.publisher
    import pipeline.reference.benchmarks

    monkeypatch.setattr(hc, "HF_HUB_OFFLINE", False)
    for key in ("https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(key, raising=False)

    def no_dns(*args: object, **kwargs: object) -> None:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("the Hub client was called after the probe failed")

    monkeypatch.setattr(socket, "getaddrinfo", no_dns)
    monkeypatch.setattr(pipeline.publish.publisher, "publish_to_hub", never)
    monkeypatch.setattr(pipeline.reference.benchmarks, "pull_benchmarks", never)
    want = [
        "error: the Hub could not be reached: cannot reach huggingface.co: name lookup failed (Name or service "
        "not known); is this machine offline?"
    ]
    for args in (
        ["publish", "--workdir", str(build["w"]), "--hub", "someorg", "--dry-run"],
        ["benchmarks", "pull", "--to", str(build["t"] / "b")],
    ):
        res = CliRunner().invoke(app, args)
        assert (res.exit_code, res.stderr.splitlines()) == (2, want)


def test_a_worker_whose_code_changed_mid_run_is_refused_in_one_line(
    build: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The code fingerprint is taken per process: a worker that started after trajpipe's sources
    changed (an upgrade or an edit while a run is going) would cache its unit under a hash the
    driver never looks at. Simulated here: the stage hash the per-unit work computes differs from
    the driver's. The run stops with one line, exit 2, and commits nothing."""
    import pipeline.orchestration.runner as runner
    from pipeline.core.config import Config
    from pipeline.orchestration.process import process_unit

    real_hash = Config.stage_hash
    in_worker = {"now": False}

    def stage_hash(self: Config) -> str:
        return "0" * 16 if in_worker["now"] else real_hash(self)

    def worker(*args: object) -> object:
        in_worker["now"] = True
        try:
            return process_unit(*args)  # type: ignore[arg-type]
        finally:
            in_worker["now"] = False

    monkeypatch.setattr(Config, "stage_hash", stage_hash)
    monkeypatch.setattr(runner, "process_unit", worker)
    work = build["t"] / "w-code-changed"
    res = CliRunner().invoke(
        app, ["run", "--affine", str(build["c"]), "--workdir", str(work), "--no-benchmarks", "--workers", "1"]
    )
    assert (res.exit_code, res.stderr.splitlines()) == (
        2,
        [
            "error: trajpipe's code changed while this run was going (a worker's code fingerprint is not "
            "the driver's): nothing of this run was committed; run the same command again"
        ],
    )
    assert not list((work / "state" / "commits").glob("*.json"))
    assert not list((work / "state" / "cache").glob("*/meta.json"))
