"""Builders shared by the tests (test modules import from here, never from each other).

Hand-built WORK rows, ledgers and stats for the publish, card and audit tests; corpora of distinct
runs for the driver tests; scrub/leak rows rendered from commands.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import polars as pl

from pipeline.core.config import Config
from pipeline.publish.publisher import publish_tree, write_manifest
from pipeline.stages.context import Context
from schemas.run import DROPS, WORK, polars_schema
from tests.corpus_kit import view_record

# a context with no reference tables (what `trajpipe convert` and most stage tests use)
CTX = Context(Config(no_benchmarks=True), benchmarks=None, catalog_tasks=None)


def ledger_batch(n: int, epoch: int = 3, dataset: str = "d") -> pl.DataFrame:
    """``n`` runs with just the columns a ledger row needs (source_uid u0…, epoch, dataset)."""
    return pl.DataFrame(
        {"source_uid": [f"u{i}" for i in range(n)], "epoch": [epoch] * n, "dataset": [dataset] * n},
        schema={"source_uid": pl.Utf8, "epoch": pl.Int32, "dataset": pl.Utf8},
    )


# ---- corpora of distinct runs (driver, CLI and crash tests)
def tree_bytes(root: Path) -> dict[str, str]:
    """sha256 of every file under publish/ and ledger/ (the user-visible outputs)."""
    out = {}
    for sub in ("publish", "ledger"):
        for p in sorted((root / sub).rglob("*")):
            if p.is_file():
                out[str(p.relative_to(root))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


WORDS = [
    "alpha",
    "bravo",
    "charlie",
    "delta",
    "echo",
    "foxtrot",
    "golf",
    "hotel",
    "india",
    "juliet",
    "kilo",
    "lima",
    "mike",
    "november",
    "oscar",
    "papa",
    "quebec",
    "romeo",
    "sierra",
    "tango",
]


def word(i: int) -> str:
    """A number spelled in words: dedup masks digits, so runs must differ in letters."""
    return "".join(WORDS[int(d)] for d in str(i))


def distinct(i: int) -> dict:
    """A run with its own action stream (so trajectory dedup keeps it)."""
    w = word(i)
    cmds = [
        (f"grep -rn '{w}_{WORDS[j]}' /testbed/src/{w}.py", f"/testbed/src/{w}.py:{j}: {w}_{WORDS[j]}\n")
        for j in range(4)
    ]
    cmds.append((f"python -m pytest tests/test_{w}.py -q", f"{i} passed in 0.{i}s\n"))
    return view_record(
        f"roll-{i}", instance_id=f"pallets__flask.a1b2c3d4.func_pm_op_swap__k{i}", commands=cmds
    )


# ---- a hand-built build: WORK rows, ledger, stats (shards, card, publisher, audit)
SYSTEM = "You are a helpful assistant that can interact with a computer."


AFFINE = "https://data.affine.io"


def messages(task: str, commands: list[str], outputs: list[str], submitted: bool) -> list[dict[str, str]]:
    """A mini-swe-agent v1 trajectory: system, task, (assistant, observation)*, optional submit."""
    msgs = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": f"<pr_description>\n{task}\n</pr_description>"},
    ]
    for cmd, out in zip(commands, outputs, strict=True):
        msgs.append({"role": "assistant", "content": f"THOUGHT: run it.\n\n```bash\n{cmd}\n```"})
        msgs.append({"role": "user", "content": f"<returncode>0</returncode>\n<output>\n{out}</output>"})
    if submitted:
        msgs.append(
            {
                "role": "assistant",
                "content": "THOUGHT: done.\n\n```bash\necho COMPLETE_TASK_AND_SUBMIT_"
                "FINAL_OUTPUT && git add -A && git diff --cached\n```",
            }
        )
    return msgs


def published_row(
    i: int,
    *,
    dataset: str = "mini-coder-affine-bash",
    epoch: int = 84,
    resolved: str = "unknown",
    language: str = "python",
    pool: str = "swesmith",
    harness: str = "bash",
    id_kind: str = "pool",
    pad: int = 0,
) -> dict[str, Any]:
    affine = dataset.startswith("mini-coder-affine")
    uid = (
        f"{AFFINE}/views/duel_turns@v4/chunks/view_{epoch:04d}_0000.jsonl.gz#L{i + 1}"
        if affine
        else f"swelego:resolved-00000-of-00003.parquet#row={i}"
    )
    iid = f"owner__repo{i % 5}.abcdef12.func_pm_op_swap__{i:04x}"
    commands = ["ls", "cat setup.py"]
    outputs = ["setup.py\n", "x" * pad + "\n"]
    return {
        "instance_id": iid,
        "messages": messages(f"Fix bug {i}", commands, outputs, submitted=i % 4 != 3),
        "family": "mechanical",
        "repo": f"owner__repo{i % 5}",
        "language": language,
        "verified": resolved == "resolved",
        "resolved": resolved,
        "patch": "",
        "model": "m-1",
        "harness": harness,
        "id_kind": id_kind,
        "upstream_id": iid,
        "affine_source": pool,
        "origin": "Affine corpus" if affine else "SWE-Lego",
        "source_uid": uid,
        "submitted": i % 4 != 3,
        "affine_fold_group": "completion" if affine else "",
        "epoch": epoch,
        "dialect": "bash",
        "dataset": dataset,
        "base_commit": "",
        "problem_statement": f"Fix bug {i}",
        "commands": commands,
        "outputs": outputs,
        "returncodes": [0, 0],
        "raw_bytes": 1000 + pad,
    }


def work_frame(rows: list[dict[str, Any]]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=polars_schema(WORK))


def sample_rows() -> list[dict[str, Any]]:
    """Two datasets over two epochs, with varied resolved/language/pool/id_kind values."""
    langs = ["python"] * 5 + ["java"] * 2 + ["rust"]
    affine = [
        published_row(
            i,
            epoch=84 if i < 6 else 85,
            language=langs[i],
            resolved=["unknown", "unknown", "resolved", "not resolved"][i % 4],
            id_kind="albedo" if i in (1, 2) else "pool",
        )
        for i in range(8)
    ]
    lego = [
        published_row(
            100 + i,
            dataset="mini-coder-swe-lego-openhands",
            epoch=0,
            harness="openhands",
            pool="SWE-Lego",
            resolved="resolved",
        )
        for i in range(3)
    ]
    return affine + lego


def sample_drops() -> pl.DataFrame:
    def d(uid: str, epoch: int, dataset: str, stage: str, reason: str, detail: str) -> dict[str, Any]:
        return {
            "source_uid": uid,
            "epoch": epoch,
            "dataset": dataset,
            "stage": stage,
            "reason": reason,
            "detail": detail,
        }

    view = f"{AFFINE}/views/duel_turns@v4/chunks/view_0084_0001.jsonl.gz"
    bash = "mini-coder-affine-bash"
    rows = [
        d(f"{view}#L1", 84, "", "quarantine", "bad_json", "line 1: unexpected character"),
        d(f"{view}#L2", 84, bash, "parse", "no_steps", "no assistant turn"),
        d(f"{view}#L3", 84, bash, "convert", "unknown_tool", "tool `browser`"),
        d(f"{view}#L4", 84, bash, "task_dedup", "benchmark_task", "swebench_lite django__django-11099"),
        d(f"{view}#L5", 84, bash, "solution_leak", "git_history", "git log --all shows the fix commit"),
        d(f"{view}#L6", 85, bash, "solution_leak", "git_history", "git log --all shows the fix commit"),
        d(f"{view}#L7", 85, bash, "solution_leak", "network_fetch", "curl github.com/owner/repo/pull/3.diff"),
        d(
            f"{view}#L8",
            85,
            bash,
            "benchmark_leak",
            "gold_patch",
            "patch of swebench_lite astropy__astropy-12907",
        ),
        d(f"{view}#L9", 85, bash, "validate", "submit", "submit command not last"),
        d(f"{view}#L10", 85, bash, "traj_dedup", "near", f"kept={AFFINE}/views/x#L1 jaccard=0.912"),
        d(f"{view}#L11", 85, bash, "traj_dedup", "exact", f"kept={AFFINE}/views/x#L2 jaccard=1.000"),
        d(
            "swelego:resolved-00001-of-00003.parquet#row=5",
            0,
            "mini-coder-swe-lego-openhands",
            "solution_leak",
            "package_fetch",
            "pip download requests==2.31",
        ),
    ]
    return pl.DataFrame(rows, schema=polars_schema(DROPS))


def sample_stats(frame: pl.DataFrame, drops: pl.DataFrame, *, checked: bool = True) -> dict[str, Any]:
    """stats.json as the ledger would write it for this frame + drops (ARCHITECTURE.md format)."""
    quarantined = drops.filter(pl.col("stage") == "quarantine")
    dropped = drops.filter(pl.col("stage") != "quarantine")

    def by(df: pl.DataFrame, col: str) -> dict[str, int]:
        return {str(k): int(n) for k, n in df.group_by(col).len().sort(col).iter_rows() if k != ""}

    every = pl.concat([frame.select("epoch", "dataset"), drops.select("epoch", "dataset")])
    n_in, n_pub, n_drop, n_q = every.height, frame.height, dropped.height, quarantined.height
    reasons = Counter(f"{s}/{r}" for s, r in dropped.select("stage", "reason").iter_rows())
    return {
        "ingested": {"total": n_in, "by_epoch": by(every, "epoch"), "by_dataset": by(every, "dataset")},
        "published": {"total": n_pub, "by_epoch": by(frame, "epoch"), "by_dataset": by(frame, "dataset")},
        "dropped": {"total": n_drop, "by_epoch": by(dropped, "epoch"), "by_dataset": by(dropped, "dataset")},
        "quarantined": {"total": n_q, "by_epoch": by(quarantined, "epoch"), "by_dataset": {}},
        "drops": dict(sorted(reasons.items())),
        "counters": {
            "parse/dialect/bash": 9,
            "parse/dialect/openhands": 4,
            "convert/tool/bash": 20,
            "convert/tool/str_replace_editor": 3,
            "scrub/github_token": 2,
            "scrub/aws_access_key": 1,
            "convert/turns": 40,
        },
        "benchmarks": {
            "checked": checked,
            "tables": ["swebench_lite", "swebench_verified"] if checked else [],
        },
        "invariant": {
            "ok": n_in == n_pub + n_drop + n_q,
            "ingested": n_in,
            "published": n_pub,
            "dropped": n_drop,
            "quarantined": n_q,
        },
    }


# ---- reading a card
def table(card: str, header: str) -> dict[str, str]:
    """The rows of the markdown table under ``header`` as {first cell: second cell}."""
    lines = card.splitlines()
    start = lines.index(header) + 2
    out: dict[str, str] = {}
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split(" | ")]
        out[cells[0]] = cells[1]
    return out


# ---- a finished build in a work dir
BASH = "mini-coder-affine-bash"


LEGO = "mini-coder-swe-lego-openhands"


def build(
    workdir: Path, rows: list[dict[str, Any]] | None = None, *, checked: bool = True
) -> tuple[pl.DataFrame, pl.DataFrame, dict[str, Any]]:
    """A finished build in ``workdir``: publish/ trees plus ledger/ (drops.parquet, stats.json)."""
    frame = work_frame(rows if rows is not None else sample_rows())
    drops = sample_drops()
    stats = sample_stats(frame, drops, checked=checked)
    publish_tree(frame, drops, stats, workdir / "publish", benchmarks_checked=checked)
    write_manifest(workdir / "publish", stats)  # sealed, as `run` seals every build
    (workdir / "ledger").mkdir(parents=True, exist_ok=True)
    drops.write_parquet(workdir / "ledger" / "drops.parquet")
    (workdir / "ledger" / "stats.json").write_bytes(orjson.dumps(stats))
    return frame, drops, stats


# ---- rows rendered from commands (scrub and leak tests)
SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached"


def run_row(commands: list[str], outputs: list[str] | None = None, **fields: object) -> dict[str, object]:
    """One WORK-schema row whose messages are rendered from the commands and outputs."""
    outputs = outputs if outputs is not None else [""] * len(commands)
    statement = str(fields.pop("problem_statement", "Fix the bug."))
    messages = [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": f"<pr_description>\n{statement}\n</pr_description>"},
    ]
    for c, o in zip(commands, outputs, strict=True):
        messages.append({"role": "assistant", "content": f"THOUGHT: next step.\n\n```bash\n{c}\n```"})
        messages.append({"role": "user", "content": f"<returncode>0</returncode>\n<output>\n{o}</output>"})
    row: dict[str, object] = {name: None for name in WORK.names}
    row.update(
        instance_id="acme__widget-1",
        messages=messages,
        family="pr",
        repo="acme__widget",
        language="python",
        verified=False,
        resolved="unknown",
        patch="",
        model="m",
        harness="bash",
        id_kind="pool",
        upstream_id="acme__widget-1",
        affine_source="swesmith",
        origin="Affine corpus",
        source_uid="file:///c/x.jsonl.gz#L1",
        submitted=True,
        affine_fold_group="",
        epoch=1,
        dialect="bash",
        dataset="mini-coder-affine-bash",
        base_commit="",
        problem_statement=statement,
        commands=commands,
        outputs=outputs,
        returncodes=[0] * len(commands),
        raw_bytes=100,
    )
    row.update(fields)
    return row


def ctx(benchmarks: pl.DataFrame | None = None) -> Context:
    return Context(config=Config(), benchmarks=benchmarks, catalog_tasks=None)
