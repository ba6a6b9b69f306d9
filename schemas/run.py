"""The one schema definition: drives the Parquet writer, the validator and the card's column table.

``PUBLISHED`` is the 17 published columns in order. ``WORK`` adds the internal columns the
stages need between ingest and publish; they are never published.
"""

from __future__ import annotations

import functools

import polars as pl
import pyarrow as pa

MESSAGE = pa.struct([("role", pa.string()), ("content", pa.string())])

# (name, arrow type, meaning for the card). Order is the published column order.
COLUMNS: list[tuple[str, pa.DataType, str]] = [
    (
        "instance_id",
        pa.string(),
        "task id, in the style albedo's repo-context service resolves to a repository and commit",
    ),
    (
        "messages",
        pa.list_(MESSAGE),
        "the trajectory: system prompt, task, then assistant turns (THOUGHT + one ```bash command) "
        "and `<returncode>`/`<output>` observations, mini-coder's format",
    ),
    (
        "family",
        pa.string(),
        "bug family: `pr` for real pull requests; SWE-smith's `lm`, `combine`, `mechanical` otherwise",
    ),
    ("repo", pa.string(), "`owner__repo`"),
    ("language", pa.string(), "repository language"),
    ("verified", pa.bool_(), "true when the run is known to have resolved the task"),
    (
        "resolved",
        pa.string(),
        "`resolved`, `not resolved` or `unknown` (Affine's own verdict where it gave one)",
    ),
    ("patch", pa.string(), "the task's reference patch where the upstream record has one, else empty"),
    ("model", pa.string(), "model that produced the run"),
    ("harness", pa.string(), "agent harness the run was recorded in"),
    (
        "id_kind",
        pa.string(),
        "where `instance_id` comes from: albedo's own id for the task, Open-SWE's, or the task pool's",
    ),
    ("upstream_id", pa.string(), "the task id in the upstream record"),
    (
        "affine_source",
        pa.string(),
        "task pool (`swesmith`, `scaleswe`, `multiswe`, `swerebench_v2`, `r2e_gym`, `swelego`, or `SWE-Lego`)",
    ),
    ("origin", pa.string(), "`Affine corpus` or `SWE-Lego`"),
    ("source_uid", pa.string(), "where the raw run is: Affine chunk URL and line, or SWE-Lego file and row"),
    ("submitted", pa.bool_(), "whether the run ends with the submit command (false: cut by the step limit)"),
    (
        "affine_fold_group",
        pa.string(),
        "Affine's reason for keeping the run (`completion`, `king_fail`, ...), when it gave one",
    ),
]

PUBLISHED: pa.Schema = pa.schema([pa.field(n, t) for n, t, _ in COLUMNS])
PUBLISHED_NAMES: list[str] = [n for n, _, _ in COLUMNS]
COLUMN_MEANINGS: dict[str, str] = {n: m for n, _, m in COLUMNS}

# Internal columns carried between stages (per-shard work tables and the state's run store).
INTERNAL: list[tuple[str, pa.DataType]] = [
    ("epoch", pa.int32()),
    ("dialect", pa.string()),  # parser that read the run (bash, qwen_json, glm, xml, openhands, ...)
    ("dataset", pa.string()),  # mini-coder-<origin>-<machine>
    ("base_commit", pa.string()),  # the run's checkout, "" when unknown
    ("problem_statement", pa.string()),
    ("commands", pa.list_(pa.string())),  # one bash command per assistant turn, in order
    ("outputs", pa.list_(pa.string())),  # the raw (untruncated) output of each command
    ("returncodes", pa.list_(pa.int32())),
    ("raw_bytes", pa.int64()),  # size of the raw record, for throughput numbers
]

WORK: pa.Schema = pa.schema([*PUBLISHED, *(pa.field(n, t) for n, t in INTERNAL)])

# Ledger rows: one per dropped or quarantined run.
DROPS: pa.Schema = pa.schema(
    [
        ("source_uid", pa.string()),
        ("epoch", pa.int32()),
        ("dataset", pa.string()),  # "" when not known (quarantined before parsing)
        ("stage", pa.string()),  # "quarantine" for bad input, else the stage that dropped the run
        ("reason", pa.string()),
        ("detail", pa.string()),
    ]
)


@functools.lru_cache(maxsize=16)
def polars_schema(schema: pa.Schema) -> pl.Schema:
    """The polars view of an Arrow schema (for building empty frames with the right dtypes).

    Cached: the Arrow conversion's first call is costly. The empty
    table is built from no batches: ``Schema.empty_table()`` and ``pa.table`` import pandas (~0.8 s
    per process) to check whether their input is a pandas frame."""
    return pl.DataFrame(pa.Table.from_batches([], schema=schema)).schema


def empty(schema: pa.Schema) -> pl.DataFrame:
    return pl.DataFrame(schema=polars_schema(schema))
