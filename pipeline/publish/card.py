"""The dataset card (README.md) of one dataset, section by section in the card's fixed order.

Every number is computed from what is passed in: the dataset's rows, the ledger's drops and the
build's stats.json. Nothing is read from logs or hard-coded.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import polars as pl
import pyarrow as pa
from huggingface_hub import DatasetCardData

from pipeline.core.config import VERSION
from pipeline.parsers import machine_text
from pipeline.publish.shards import published_table
from pipeline.store.ledger import Stats
from schemas.datasets import license_text, pool_name
from schemas.run import COLUMN_MEANINGS, PUBLISHED, PUBLISHED_NAMES

TAGS = ["software-engineering", "code", "agent-trajectories", "albedo"]
DATA_GLOB = "data/train-*.parquet"
NUMBER_WORDS = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
]
AFFINE_UID = re.compile(r"^(?P<base>.+?)/(?P<kind>views|traces)/(?P<rest>[^#]*)")
# Contents tables: (heading, column), in the card's order.
CONTENTS = [
    ("Resolved", "resolved"),
    ("Harness", "harness"),
    ("Task pool", "affine_source"),
    ("Language", "language"),
]


# the two names the card uses before a reader can know them, said once where first used
GLOSSARY = (
    "Albedo is the training-data collection these datasets are made for (it keeps a catalog of tasks "
    "and runs); `mini-coder` is its source of coding-agent runs in mini-swe-agent's text format."
)
# the per-run steps in funnel order, as the summary sentence names their drops: stage → (one, several)
SUMMARY_STEPS = [
    ("quarantine", ("unreadable", "unreadable")),
    ("parse", ("not parsable", "not parsable")),
    ("convert", ("not convertible", "not convertible")),
    ("verify", ("not proven faithful", "not proven faithful")),
    ("task_dedup", ("benchmark task", "benchmark tasks")),
    ("solution_leak", ("solution leak", "solution leaks")),
    ("benchmark_leak", ("benchmark leak", "benchmark leaks")),
    ("validate", ("invalid", "invalid")),
    ("traj_dedup", ("duplicate", "duplicates")),
]


def fmt(n: int) -> str:
    return f"{n:,}"


def runs(n: int, noun: str = "run") -> str:
    """``1 run``, ``2 runs``: a count with its noun agreeing."""
    return f"{fmt(n)} {noun}{'' if n == 1 else 's'}"


def size_category(n: int) -> str:
    """The Hub's size_categories bucket for ``n`` rows."""
    if n < 1_000:
        return "n<1K"
    buckets = [
        (10**4, "1K<n<10K"),
        (10**5, "10K<n<100K"),
        (10**6, "100K<n<1M"),
        (10**7, "1M<n<10M"),
        (10**8, "10M<n<100M"),
        (10**9, "100M<n<1B"),
    ]
    for limit, label in buckets:
        if n < limit:
            return label
    return (
        "n>1T" if n >= 10**12 else "1B<n<10B" if n < 10**10 else "10B<n<100B" if n < 10**11 else "100B<n<1T"
    )


def feature_yaml(dtype: pa.DataType) -> dict[str, object]:
    """One Arrow type in the card's ``dataset_info.features`` form (the form ``datasets`` writes)."""
    if pa.types.is_list(dtype) or pa.types.is_large_list(dtype):
        inner = dtype.value_type
        if pa.types.is_struct(inner):
            return {"list": [{"name": f.name, **feature_yaml(f.type)} for f in inner]}
        return {"list": feature_yaml(inner)}
    if pa.types.is_struct(dtype):
        return {"struct": [{"name": f.name, **feature_yaml(f.type)} for f in dtype]}
    names = {
        pa.string(): "string",
        pa.large_string(): "large_string",
        pa.bool_(): "bool",
        pa.int32(): "int32",
        pa.int64(): "int64",
        pa.float32(): "float32",
        pa.float64(): "float64",
    }
    if dtype not in names:
        raise ValueError(f"no card dtype for {dtype}")
    return {"dtype": names[dtype]}


def card_data(dataset: str, frame: pl.DataFrame, num_bytes: int | None = None) -> DatasetCardData:
    """The YAML header. ``num_bytes`` (the rows' uncompressed size) is measured from ``frame``
    unless given: a publisher that streamed the shards passes the figure its plan computed."""
    if num_bytes is None:
        num_bytes = int(published_table(frame).nbytes)
    return DatasetCardData(
        license="other",
        language=["en"],
        pretty_name=dataset,
        tags=TAGS,
        size_categories=[size_category(frame.height)],
        configs=[
            {"config_name": "default", "default": True, "data_files": [{"split": "train", "path": DATA_GLOB}]}
        ],
        dataset_info={
            "features": [{"name": f.name, **feature_yaml(f.type)} for f in PUBLISHED],
            "splits": [{"name": "train", "num_bytes": num_bytes, "num_examples": frame.height}],
        },
    )


def _mode(frame: pl.DataFrame, column: str) -> str:
    """Most common value (ties: smallest), so the choice does not depend on row order."""
    counts = value_counts(frame, column)
    return counts[0][0] if counts else ""


def value_counts(frame: pl.DataFrame, column: str) -> list[tuple[str, int]]:
    """(value, rows) sorted by rows descending, then value; empty/null shown as ``(none)``."""
    if frame.height == 0:
        return []
    counted = (
        frame.select(pl.col(column).cast(pl.Utf8).fill_null("").alias("v"))
        .group_by("v")
        .len()
        .sort(["len", "v"], descending=[True, False])
    )
    return [(v if v else "(none)", int(n)) for v, n in counted.iter_rows()]


def _join_words(items: list[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def _epochs_text(epochs: list[int]) -> str:
    es = sorted(set(epochs))
    if not es:
        return ""
    if len(es) == 1:
        return f"corpus epoch {es[0]}"
    if es == list(range(es[0], es[-1] + 1)):
        return f"corpus epochs {es[0]}–{es[-1]}"
    return "corpus epochs " + ", ".join(str(e) for e in es)


def origin_text(origin: str, source_uids: Iterable[str], epochs: list[int]) -> str:
    """The card's Origin sentence, from where the rows' source_uids point."""
    uids = sorted(set(source_uids))
    if origin == "Affine corpus":
        bases: set[str] = set()
        views: set[str] = set()
        traces = False
        for uid in uids:
            m = AFFINE_UID.match(uid)
            if not m:
                continue
            bases.add(m["base"])
            if m["kind"] == "views":
                views.add(m["rest"].split("/")[0])
            else:
                traces = True
        parts = [", ".join(f"`{b}`" for b in sorted(bases))] if bases else []
        if views:
            parts.append(
                ("view " if len(views) == 1 else "views ") + ", ".join(f"`{v}`" for v in sorted(views))
            )
        if traces:
            parts.append("raw traces")
        if epochs:
            parts.append(_epochs_text(epochs))
        return "Affine's public training corpus" + (f" ({', '.join(parts)})" if parts else "") + "."
    if origin == "SWE-Lego":
        names = sorted({u.split(":", 1)[0] for u in uids if ":" in u})
        files = sorted({u.split(":", 1)[1].split("#", 1)[0] for u in uids if ":" in u})
        where = ", ".join(f"`{n}`" for n in names)
        return (
            f"the SWE-Lego dataset ({where}: {len(files)} file{'s' if len(files) != 1 else ''}, "
            + ", ".join(f"`{f}`" for f in files)
            + ")."
        )
    return f"`{origin}` trajectory files ({fmt(len(uids))} runs)."


def _stage_counts(drops: pl.DataFrame, stages: tuple[str, ...]) -> list[tuple[str, int]]:
    part = drops.filter(pl.col("stage").is_in(list(stages)))
    if part.height == 0:
        return []
    counted = part.group_by("reason").len().sort(["len", "reason"], descending=[True, False])
    return [(r, int(n)) for r, n in counted.iter_rows()]


def _drop_note(counts: list[tuple[str, int]]) -> str:
    total = sum(n for _, n in counts)
    if total == 0:
        return "(none dropped here)"
    detail = ", ".join(f"{fmt(n)} `{r}`" for r, n in counts)
    return f"({fmt(total)} run{'s' if total != 1 else ''} dropped: {detail})"


def _prefixed(mapping: dict[str, int], prefix: str) -> int:
    return sum(int(v) for k, v in mapping.items() if k.startswith(prefix))


def _stages(drops: dict[str, int]) -> dict[str, int]:
    """Drops per stage from stats.json's ``stage/reason`` counts."""
    out: dict[str, int] = {}
    for key, n in drops.items():
        out[key.split("/", 1)[0]] = out.get(key.split("/", 1)[0], 0) + int(n)
    return out


def dataset_line(dataset: str, stats: Stats) -> str:
    """How many runs this dataset ingested and what became of them (stats.json)."""
    ingested = int(stats.get("ingested", {}).get("by_dataset", {}).get(dataset, 0))
    published = int(stats.get("published", {}).get("by_dataset", {}).get(dataset, 0))
    dropped = int(stats.get("dropped", {}).get("by_dataset", {}).get(dataset, 0))
    return (
        f"This dataset: {runs(ingested)} ingested, {fmt(dropped)} dropped, {fmt(published)} published "
        "(unreadable input belongs to no dataset and is counted in the summary below)."
    )


def across_all(stats: Stats, *, benchmarks_checked: bool) -> str:
    """The across-all-datasets sentence, every number from stats.json; it adds up: exported minus
    every drop named in it equals published."""
    drops: dict[str, int] = stats.get("drops", {})
    ingested = int(stats.get("ingested", {}).get("total", 0))
    published = stats.get("published", {})
    n_sets = len([d for d, n in published.get("by_dataset", {}).items() if n])
    if n_sets == 1:
        lead = "Across the whole build (one dataset)"
    elif n_sets == 2:
        lead = "Across both datasets"
    else:
        lead = f"Across all {NUMBER_WORDS[n_sets] if n_sets < len(NUMBER_WORDS) else fmt(n_sets)} datasets"
    named = {stage for stage, _ in SUMMARY_STEPS}
    # quarantined input from the quarantine block: it is counted there even without a reason entry
    steps = [
        (
            words,
            int(stats.get("quarantined", {}).get("total", 0))
            if stage == "quarantine"
            else _prefixed(drops, stage + "/"),
        )
        for stage, words in SUMMARY_STEPS
    ]
    steps += [
        ((f"dropped by {stage}",) * 2, n) for stage, n in sorted(_stages(drops).items()) if stage not in named
    ]
    parts = [f"{fmt(n)} {words[n != 1]}" for words, n in steps if n]
    dropped = sum(n for _, n in steps)
    sentence = (
        f"{lead}: {runs(ingested)} exported, {fmt(dropped)} dropped ("
        + ("; ".join(parts) if parts else "none")
        + f"), {fmt(int(published.get('total', 0)))} published."
    )
    if not benchmarks_checked:
        sentence += " The benchmark check was skipped."
    secrets = {
        k.split("/", 1)[1]: int(v)
        for k, v in stats.get("counters", {}).items()
        if k.startswith("scrub/") and int(v)
    }
    if secrets:
        kinds = ", ".join(
            f"{fmt(n)} `{k}`" for k, n in sorted(secrets.items(), key=lambda kv: (-kv[1], kv[0]))
        )
        sentence += f" Secrets redacted: {fmt(sum(secrets.values()))} ({kinds})."
    return sentence


def _carry(n: int) -> str:
    return f"{fmt(n)} {'row here carries' if n == 1 else 'rows here carry'} albedo's id"


def how_it_was_built(
    frame: pl.DataFrame, drops: pl.DataFrame, stats: Stats, *, benchmarks_checked: bool
) -> list[str]:
    albedo_ids = frame.filter(pl.col("id_kind") == "albedo").height if frame.height else 0
    tables = stats.get("benchmarks", {}).get("tables", []) or []
    if benchmarks_checked:
        step1 = (
            f"1. **Task-level dedup:** tasks matching one of our benchmarks were dropped "
            f"{_drop_note(_stage_counts(drops, ('task_dedup',)))}. Runs on tasks albedo already has "
            f"were kept, under albedo's own task id when that id points at the same checkout the run had "
            f"({_carry(albedo_ids)})."
        )
        on = f" against {', '.join(f'`{t}`' for t in tables)}" if tables else ""
        step5 = (
            f"5. **Benchmark leaks dropped**{on}: gold patches, problem statements and instance ids "
            f"of benchmark tasks {_drop_note(_stage_counts(drops, ('benchmark_leak',)))}."
        )
    else:
        step1 = (
            f"1. **Task-level dedup:** the benchmark task check was skipped (no benchmark tables, "
            f"`--no-benchmarks`). Runs on tasks albedo already has were kept, under albedo's own task id "
            f"when that id points at the same checkout the run had ({_carry(albedo_ids)})."
        )
        step5 = (
            "5. **Benchmark leaks:** the benchmark check was skipped for this build (`--no-benchmarks`); "
            "no run was compared with benchmark tasks."
        )
    return [
        f"From `trajpipe` {VERSION}:",
        "",
        step1,
        "2. **Trajectory-level dedup:** runs whose actions repeat another run's, exactly or nearly (MinHash "
        "estimate of their similarity), or a run albedo already has, were dropped, so no two runs left are alike "
        f"{_drop_note(_stage_counts(drops, ('traj_dedup',)))}.",
        "3. **Conversion:** every tool call became one bash command with what that command prints; edits became a "
        "`python3` heredoc that replaces the exact text; harness wrappers, to-do and memory tools were removed "
        f"{_drop_note(_stage_counts(drops, ('parse', 'convert')))}.",
        "4. **Solution leaks dropped:** runs that got the fix from outside their own work (SWE-smith's `Bug Patch` "
        "history, the task's own PR in `git log --all`, fetching upstream code over the network) "
        f"{_drop_note(_stage_counts(drops, ('solution_leak',)))}.",
        step5,
        "6. **Validated** against mini-coder's format with mini-swe-agent's own parser and format checks "
        f"{_drop_note(_stage_counts(drops, ('validate',)))}.",
        "",
        across_all(stats, benchmarks_checked=benchmarks_checked),
    ]


def render_card(
    dataset: str,
    frame: pl.DataFrame,
    stats: Stats,
    drops: pl.DataFrame,
    *,
    benchmarks_checked: bool,
    epochs: list[int],
    num_bytes: int | None = None,
) -> str:
    """README.md for ``dataset``: ``frame`` holds its rows (``messages`` and ``patch`` may be left
    out when ``num_bytes`` is given), ``drops`` the ledger (any datasets)."""
    data = card_data(dataset, frame, num_bytes)
    own_drops = drops.filter(pl.col("dataset") == dataset)
    origin = _mode(frame, "origin")
    harness = _mode(frame, "harness")
    pools = [pool_name(p) for p, _ in value_counts(frame, "affine_source")]
    tasks = frame.select(pl.col("instance_id").n_unique()).item() if frame.height else 0
    lines = [
        f"# {dataset}",
        "",
        f"{fmt(frame.height)} coding-agent {'trajectory' if frame.height == 1 else 'trajectories'} on {fmt(tasks)} "
        f"{_join_words(pools)} task{'' if tasks == 1 else 's'}, converted to "
        "the format of albedo's `mini-coder` source (mini-swe-agent: one ```bash command per assistant turn, "
        "`<returncode>`/`<output>` observations, mini-coder's system prompt and task template). " + GLOSSARY,
        "",
        dataset_line(dataset, stats),
        "",
        f"- **Origin:** {origin_text(origin, frame['source_uid'].to_list(), epochs)}",
        f"- **Machine:** {machine_text(harness)}. Albedo tells machines apart by source name, so each kind of "
        "machine is its own dataset.",
        "- **Repository root:** rewritten to `/testbed` in every command and output.",
        "",
        "## How it was built",
        "",
        *how_it_was_built(frame, own_drops, stats, benchmarks_checked=benchmarks_checked),
        "",
        "## Contents",
        "",
    ]
    for heading, column in CONTENTS:
        lines += [f"| {heading} | Rows |", "|---|---:|"]
        lines += [f"| {v} | {fmt(n)} |" for v, n in value_counts(frame, column)]
        lines.append("")
    lines += ["## Columns", "", "| Column | Meaning |", "|---|---|"]
    lines += [f"| `{name}` | {COLUMN_MEANINGS[name]} |" for name in PUBLISHED_NAMES]
    lines += ["", "## License", "", license_text(origin), ""]
    return "---\n" + data.to_yaml() + "\n---\n\n" + "\n".join(lines)
