"""Scrub stage: redact credentials before publishing; never drops a run.

Every secret found anywhere in a run (messages, commands or outputs) is replaced by
``<REDACTED:<kind>>`` in ALL of that run's text, so a command and the output echoing it, and the
rendered messages holding both, stay consistent even where only one of them gives the context that
identifies the value (``export API_KEY=…`` in a command, the bare value printed by ``echo``).
Counters ``scrub/<kind>`` count distinct secret values per run (summed over runs), not occurrences:
the same token shows up three times (command, output, message) and is one leak.

Engine choice, measured by ``bench/leaks.py --runs 3000`` (34 MB of text, 30% of runs carrying
planted secrets, 30% look-alikes; 2 shared vCPUs; bench/results/leaks.md):

* ``detect-secrets`` 1.5.0 (installable from the index, NOT a dependency; timed in a separate venv):
  249 s = 0.14 MB/s with its default plugins (line-by-line Python, entropy plugins that fire on
  SHAs and base64 fixtures), and no detectors for Anthropic, OpenAI project, Hugging Face or GCP keys;
* polars ``str.replace_all`` of every pattern over whole columns: 54-99 MB/s, but without
  validators it redacts placeholders (``PASSWORD=changeme``, ``${TOKEN}``) and cannot keep a value
  consistent between a command and the output that echoes it;
* chosen: one combined Rust-regex pre-filter per string (polars ``list.eval`` + ``str.contains``)
  and exact Python matching with validators only on the strings it hits: 14-41 MB/s on that
  secret-dense corpus (the cost scales with the share of strings holding a secret; clean runs cost
  only the pre-filter).

The pre-filter is ``PREFILTER`` (every pattern's own regex, relaxed so that it matches wherever
Python's does): ``TRIGGER`` alone let ``token=None`` in source code through, ~2% of all strings and
most of the bytes, into the Python search, and its Unicode ``\\b`` kept Rust off its fast engine; the
stage cost ~20x the decode floor. ``TRIGGER`` still decides, on PREFILTER's few hits, which strings
are searched, so the output is exactly what it was (tests/test_scrub_prefilter.py).
"""

from __future__ import annotations

import operator
from collections import Counter
from functools import reduce

import polars as pl
import pyarrow as pa

from pipeline.convert.render import render_instance, render_reply, submission_of
from pipeline.reference.secrets import PREFILTER_GROUPS, TRIGGER, find_secrets, redact
from pipeline.stages.base import Stage, StageOutput
from schemas.run import DROPS, PUBLISHED, empty

# Every other text column a run carries into the output or the ledger (a token in a chunk key or a
# file name reaches ``source_uid``; a patch or a task id can hold one too). ``problem_statement``
# is not published but the task message is rendered from it, so both are redacted alike.
TEXT_COLUMNS: tuple[str, ...] = (
    *(n for n, t in zip(PUBLISHED.names, PUBLISHED.types, strict=True) if pa.types.is_string(t)),
    "problem_statement",
)


def _hit(e: pl.Expr, pattern: str | tuple[str, ...] = TRIGGER) -> pl.Expr:
    if isinstance(pattern, str):
        return e.str.contains(pattern).fill_null(False)
    return reduce(operator.or_, [e.str.contains(p) for p in pattern]).fill_null(False)


def string_flags(batch: pl.DataFrame, pattern: str | tuple[str, ...] = TRIGGER) -> pl.DataFrame:
    """Per string, does ``pattern`` match (cheap, vectorised Rust regex over whole columns); a tuple of
    patterns matches where one of them does (their alternation)."""
    return batch.select(
        pl.col("commands").list.eval(_hit(pl.element(), pattern)).alias("cf"),
        pl.col("outputs").list.eval(_hit(pl.element(), pattern)).alias("of"),
        pl.col("messages").list.eval(_hit(pl.element().struct.field("content"), pattern)).alias("mf"),
        pl.concat_list([_hit(pl.col(c), pattern) for c in TEXT_COLUMNS if c in batch.columns]).alias("tf"),
    )


def candidates(batch: pl.DataFrame, pattern: tuple[str, ...] = PREFILTER_GROUPS) -> pl.Series:
    """Per run: may ``pattern`` (the anchorless PREFILTER groups) match one of its strings. Wherever
    :func:`string_flags` flags a string, and maybe elsewhere: the run's other text columns are joined
    by line breaks into one string first, one search instead of one per column (a match in a column is
    a match in the join, the patterns having no anchor; one the join makes up only adds a candidate,
    whose strings are then flagged one by one)."""
    fields = [pl.col(c) for c in TEXT_COLUMNS if c in batch.columns]
    return batch.select(
        pl.any_horizontal(
            pl.col("commands").list.eval(_hit(pl.element(), pattern)).list.any(),
            pl.col("outputs").list.eval(_hit(pl.element(), pattern)).list.any(),
            pl.col("messages").list.eval(_hit(pl.element().struct.field("content"), pattern)).list.any(),
            _hit(pl.concat_str(fields, separator="\n", ignore_nulls=True), pattern),
        ).fill_null(False)
    ).to_series()


def _both(a: dict[str, list[bool] | None], b: dict[str, list[bool] | None]) -> dict[str, list[bool]]:
    """Per string, ``a and b`` (two :func:`string_flags` rows of the same run)."""
    return {k: [bool(x) and bool(y) for x, y in zip(a[k] or [], b[k] or [], strict=True)] for k in a}


def _rerender(
    old_msgs: list[dict[str, str]],
    new_msgs: list[dict[str, str]],
    row: dict[str, object],
    outputs: list[str],
    new_outputs: list[str],
    statement: str | None,
    new_statement: str | None,
) -> None:
    """Messages that were rendered from a redacted field are rendered again from the redacted value,
    so redaction never makes a valid run invalid: an observation whose output was cut by the
    truncation (a secret split by it is redacted in the output, then re-cut), the final submission,
    and the task message."""
    returncodes = list(row.get("returncodes") or [])  # type: ignore[call-overload]
    commands = list(row.get("commands") or [])  # type: ignore[call-overload]
    if (
        statement is not None
        and new_statement != statement
        and len(old_msgs) > 1
        and old_msgs[1]["content"] == render_instance(statement)
    ):
        new_msgs[1] = {**new_msgs[1], "content": render_instance(new_statement or "")}
    for t, (out, new_out) in enumerate(zip(outputs, new_outputs, strict=False)):
        i = 3 + 2 * t
        if out == new_out or i >= len(old_msgs) or t >= len(returncodes):
            continue
        old = old_msgs[i]["content"]
        rc = None if returncodes[t] is None else int(returncodes[t])  # None: the command timed out
        cmd = commands[t] if t < len(commands) else ""
        if old == render_reply(cmd, out, rc):
            new_msgs[i] = {**new_msgs[i], "content": render_reply(cmd, new_out, rc)}
        elif old == submission_of(out):
            new_msgs[i] = {**new_msgs[i], "content": submission_of(new_out)}


def scrub_row(
    row: dict[str, object], flags: dict[str, list[bool]] | None = None
) -> tuple[dict[str, object], Counter[str]]:
    """Redact one run (a dict of WORK columns); returns the new row and per-kind counts.

    ``flags`` (from :func:`string_flags`) limits the exact Python search to strings the pre-filter hit.
    """
    commands: list[str] = list(row["commands"] or [])  # type: ignore[call-overload]
    outputs: list[str] = list(row["outputs"] or [])  # type: ignore[call-overload]
    messages: list[dict[str, str]] = list(row["messages"] or [])  # type: ignore[call-overload]
    columns = [c for c in TEXT_COLUMNS if c in row]
    fields = [row[c] if isinstance(row[c], str) else "" for c in columns]
    texts = [*commands, *outputs, *(m["content"] or "" for m in messages), *fields]
    hits = (
        [True] * len(texts)
        if flags is None
        else [
            bool(x)
            for x in (
                *(flags["cf"] or []),
                *(flags["of"] or []),
                *(flags["mf"] or []),
                *(flags.get("tf") or [False] * len(fields)),
            )
        ]
    )
    found: dict[str, str] = {}  # value -> kind (first kind that claimed it)
    for text, hit in zip(texts, hits, strict=True):
        if isinstance(text, str) and text and hit:
            for kind, value in find_secrets(text):
                found.setdefault(value, kind)
    counts: Counter[str] = Counter()
    if not found:
        return row, counts
    pairs = [(k, v) for v, k in found.items()]
    counts.update(f"scrub/{k}" for k, _ in pairs)
    out = dict(row)
    out["commands"] = [redact(c, pairs) if c else c for c in commands]
    out["outputs"] = [redact(o, pairs) if o else o for o in outputs]
    new_msgs = [
        {**m, "content": redact(m["content"], pairs) if m["content"] else m["content"]} for m in messages
    ]
    for c in columns:
        if isinstance(row[c], str) and row[c]:
            out[c] = redact(row[c], pairs)  # type: ignore[arg-type]
    statement = row.get("problem_statement")
    _rerender(
        messages,
        new_msgs,
        row,
        outputs,
        out["outputs"],  # type: ignore[arg-type]
        statement if isinstance(statement, str) else None,
        out.get("problem_statement"),  # type: ignore[arg-type]
    )
    out["messages"] = new_msgs
    return out, counts


def scrub_ledger(drops: pl.DataFrame) -> pl.DataFrame:
    """The ledger's ``source_uid`` and ``detail`` with every secret redacted (a solution-leak detail
    quotes the command, ``curl -u bot:ghp_…``; a quarantine detail may quote the line)."""
    if drops.height == 0:
        return drops
    cols = [c for c in ("source_uid", "detail") if c in drops.columns]
    hit = drops.select(pl.any_horizontal([_hit(pl.col(c)) for c in cols])).to_series()
    if not hit.any():
        return drops

    def clean(text: str | None) -> str | None:
        if not text:
            return text
        return redact(text, find_secrets(text))

    return drops.with_columns(
        [
            pl.when(hit)
            .then(pl.col(c).map_elements(clean, return_dtype=pl.Utf8))
            .otherwise(pl.col(c))
            .alias(c)
            for c in cols
        ]
    )


def scrub_counter_names(counters: Counter[str]) -> Counter[str]:
    """Counter names with secrets redacted (``convert/tool/<name>`` carries a name from the input,
    and counters reach stats.json, the card and `audit`)."""
    out: Counter[str] = Counter()
    for name, n in counters.items():
        out[redact(name, find_secrets(name)) if name else name] += n
    return out


class Scrub(Stage):
    name = "scrub"
    reasons = ()  # rewrites, never drops; counts scrub/<secret kind>

    def process(self, batch: pl.DataFrame) -> StageOutput[pl.DataFrame]:
        counters: Counter[str] = Counter()
        # Candidate runs first (PREFILTER: tight and fast over whole columns), then their strings flagged
        # one by one, and on those few strings the trigger that decides which strings are searched at
        # all (slow: Unicode word boundaries).
        mask = candidates(batch)
        if not mask.any():
            return StageOutput(batch, empty(DROPS), counters)
        idx = mask.arg_true()
        cand = batch[idx]
        flags = string_flags(cand, PREFILTER_GROUPS)
        exact = string_flags(cand, TRIGGER)
        new_rows, at = [], []
        for i, row, pre, trig in zip(
            idx,
            cand.iter_rows(named=True),
            flags.iter_rows(named=True),
            exact.iter_rows(named=True),
            strict=True,
        ):
            new, c = scrub_row(row, _both(pre, trig))
            if c:  # a row where nothing was found is the row itself
                new_rows.append(new)
                at.append(i)
                counters.update(c)
        if not new_rows:
            return StageOutput(batch, empty(DROPS), counters)
        replaced = pl.DataFrame(new_rows, schema=batch.schema)
        # Put the rewritten rows back in place: order of the batch is preserved.
        kept = (
            batch.with_row_index("__i")
            .update(replaced.with_columns(pl.Series("__i", at, dtype=pl.UInt32)), on="__i")
            .drop("__i")
        )
        return StageOutput(kept, empty(DROPS), counters)
