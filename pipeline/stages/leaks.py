"""Leak stages: solution leaks (the fix taken from outside the run) and benchmark leaks.

``SolutionLeak`` drops runs that obtained the fix from outside their own work, in two steps:

1. rules over every simple command a command runs (:func:`pipeline.text.shell.simple_commands`: chains,
   compound commands, substitutions, ``bash -c`` and ``eval`` scripts walked, wrappers peeled) name an
   *attempt* of one kind: ``git_history``,
   ``foreign_object``, ``bug_patch``, ``network_fetch``, ``package_fetch``, ``site_packages``;
2. the observation of that command must show the fix was delivered (:mod:`pipeline.leaks.confirm`:
   the task's fix lines, the run's own final diff seen before it wrote it, the PR number, a SWE-smith
   bug commit, a fetch that returned content, an applied ``cherry-pick``), or what the run later wrote
   itself (:mod:`pipeline.leaks.writes`: edits, ``sed -i``, ``cat > f``, ``git apply`` inputs), or what a
   ``git checkout SHA -- f``/``stash apply`` wrote into the tree (lines of the final diff never typed).

Confirmed -> drop ``solution_leak/<kind>`` (first confirmed turn). Unconfirmed -> kept, counter
``solution_leak_attempt/<kind>`` once per run and kind. Only runs whose commands match one combined
Rust regex (polars, vectorised) reach the Python rules.

``BenchmarkLeak`` drops runs on non-benchmark tasks whose text carries a benchmark instance
(``instance_id``, ``gold_patch``, ``problem_statement``: :mod:`pipeline.leaks.benchmark`). The index
is built once per content of the benchmark tables and memory-mapped by every process after.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import polars as pl

from pipeline.leaks.benchmark import (
    BenchmarkIndex,
    best_hits,
    gold_patch_hits,
    instance_id_hits,
    statement_hits,
)
from pipeline.leaks.rules import PRE
from pipeline.leaks.scan import scan_batch
from pipeline.leaks.solution import LazyTexts, pre_mask, prefilters, scan_run
from pipeline.stages.base import Stage, StageOutput
from pipeline.stages.context import Context
from schemas.run import DROPS, empty


class SolutionLeak(Stage):
    name = "solution_leak"
    reasons = (
        "git_history",
        "foreign_object",
        "bug_patch",
        "network_fetch",
        "package_fetch",
        "site_packages",
    )
    namespaces = ("solution_leak_attempt",)  # attempted, unconfirmed, kept
    corpus_level = True

    def process(self, batch: pl.DataFrame) -> StageOutput[pl.DataFrame]:
        counters: Counter[str] = Counter()
        if batch.height == 0:
            return StageOutput(batch, empty(DROPS), counters)
        flags = prefilters(batch)
        # A run none of whose commands can be classified has neither a leak nor an attempt.
        cand = pre_mask(batch, PRE) & flags["maybe"].list.any().fill_null(False)
        reasons = [""] * batch.height
        details = [""] * batch.height
        drop = np.zeros(batch.height, dtype=bool)
        cols = ["instance_id", "repo", "base_commit", "patch", "problem_statement", "commands", "returncodes"]
        idx = cand.arg_true().to_list()
        rows = batch.select(cols)[idx].iter_rows(named=True)  # gather only the columns read
        outputs = LazyTexts.per_run(batch.get_column("outputs")[idx])  # converted when read
        for i, row, texts, fl in zip(idx, rows, outputs, flags[idx].iter_rows(named=True), strict=True):
            v = scan_run({**row, "outputs": texts}, fl["maybe"], fl["lines"])
            if v.kind:
                drop[i], reasons[i], details[i] = True, v.kind, v.detail
            else:
                counters.update(f"solution_leak_attempt/{k}" for k in v.attempts)
        out = self.split(batch, pl.Series(drop), pl.Series(reasons), pl.Series(details))
        out.counters.update(counters)
        return out


class BenchmarkLeak(Stage):
    name = "benchmark_leak"
    reasons = ("gold_patch", "problem_statement", "instance_id")
    corpus_level = True

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx)
        self.enabled = ctx.benchmarks is not None and ctx.benchmarks.height > 0
        self.index = (
            BenchmarkIndex.cached(ctx.benchmarks, ctx.cache, ctx.benchmarks_key)  # type: ignore[arg-type]
            if self.enabled
            else None
        )

    def process(self, batch: pl.DataFrame) -> StageOutput[pl.DataFrame]:
        counters: Counter[str] = Counter()
        if batch.height == 0:
            return StageOutput(batch, empty(DROPS), counters)
        if self.index is None:
            counters["benchmark_leak/skipped"] += batch.height
            return StageOutput(batch, empty(DROPS), counters)
        found = scan_batch(batch, self.index.probe)  # one compiled pass: statement n-grams, candidate lines
        hits = [
            instance_id_hits(self.index, found.lines),
            *gold_patch_hits(self.index, found.lines, None, batch),
        ]
        if self.index.stmt.height and found.stmt.height:
            hits.append(statement_hits(self.index, found.stmt))
        reason = [""] * batch.height
        detail = [""] * batch.height
        drop = np.zeros(batch.height, dtype=bool)
        if not any(h.height for h in hits):  # most batches: no hit, nothing to rank (polars overhead)
            return self.split(batch, pl.Series(drop), pl.Series(reason), pl.Series(detail))
        best = best_hits(self.index, batch, hits)
        for d, r, bench, bid, score in best.select("doc", "reason", "benchmark", "b_id", "score").iter_rows():
            drop[d], reason[d] = True, r
            detail[d] = f"benchmark={bench} instance={bid} score={score:.2f}"
        return self.split(batch, pl.Series(drop), pl.Series(reason), pl.Series(detail))
