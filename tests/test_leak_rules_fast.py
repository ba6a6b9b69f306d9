"""The benchmark-leak line rules' shortcuts equal the plain queries they skip: the gold rules drop the
candidate lines whose hash is no gold line before any join (``BenchmarkIndex.line_hashes``), and the
stage ranks nothing when a batch has no hit. The previous code is the specification here."""

from __future__ import annotations

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.dedup.hashing import LINE_SEED
from pipeline.leaks import benchmark as B
from pipeline.leaks.benchmark import BenchmarkIndex, gold_patch_hits
from pipeline.leaks.scan import GOLD_LINE, PARTS, PLUS_LINE, scan
from pipeline.leaks.text import diff_side, norm_lines_expr
from tests.test_leak_scan import GOLD_LINES, _index, raw_lines

ONE_LINE = "value = resolve_one_line_fix(config, strict=False)"
PATCHES = [
    "--- a/f\n+++ b/f\n@@ -1 +1 @@\n" + "".join(f"+{x}\n" for x in GOLD_LINES),
    f"--- a/g.py\n+++ b/g.py\n@@ -1 +1 @@\n-old\n+{ONE_LINE}\n",
    "",
]


def reference_gold_patch_hits(
    index: BenchmarkIndex, lines: pl.DataFrame, texts: pl.DataFrame, batch: pl.DataFrame | None = None
) -> list[pl.DataFrame]:
    """``gold_patch_hits`` before the hash prefilter: every candidate line goes through the joins."""
    normed = (
        lines.filter((pl.col("flag") & GOLD_LINE) != 0)
        .select("doc", "flag", norm_lines_expr(pl.col("x")).alias("x"))
        .filter(pl.col("x").str.len_chars() >= 12)
        .select("doc", "flag", pl.col("x").hash(seed=LINE_SEED).alias("h"))
    )
    hits: list[pl.DataFrame] = []
    if index.gold.height:
        found = normed.select("doc", "h").unique().join(index.gold, on="h")
        quoted = B.quoted_from_checkout(found, batch) if batch is not None else None
        if quoted is not None and quoted.height:
            found = found.join(quoted, on=["doc", "h"], how="anti")
        m = (
            found.group_by("doc", "inst")
            .len("n")
            .join(index.gold_total, on="inst")
            .filter(
                (pl.col("n") >= pl.min_horizontal(pl.col("total"), pl.lit(B.GOLD_MIN_LINES)))
                & (pl.col("n") / pl.col("total") >= B.GOLD_CONTAINMENT)
            )
        )
        hits.append(m.select(B._hits("doc", "inst", "gold_patch", pl.col("n") / pl.col("total"))))
    if index.small.height:
        cand = (
            normed.filter((pl.col("flag") & PLUS_LINE) != 0)
            .select("doc", "h")
            .unique()
            .join(index.small, on="h")
            .select("doc", "inst")
            .unique()
        )
        rows = {d: texts.row(d) for d in cand["doc"].unique().to_list()}
        pairs = [
            (d, i)
            for d, i in cand.iter_rows()
            if any(
                B._printed_in_patch(x, index.small_paths[i], diff_side(index.inst["patch"][i], "+"))
                for x in rows[d]
            )
        ]
        hits.append(
            pl.DataFrame(
                {
                    "doc": [d for d, _ in pairs],
                    "inst": [i for _, i in pairs],
                    "reason": ["gold_patch"] * len(pairs),
                    "score": [1.0] * len(pairs),
                },
                schema=B._HIT_SCHEMA,
            )
        )
    return hits


@st.composite
def part_lines(draw: st.DrawFn) -> list[str]:
    """Lines of one part: random and gold lines (raw_lines), the one-line fix as a printed patch or not."""
    out = draw(st.lists(raw_lines(), max_size=6))
    if draw(st.booleans()):
        out += draw(st.sampled_from([["+++ b/g.py", f"+{ONE_LINE}"], [f"+{ONE_LINE}"], [ONE_LINE]]))
    return out


def _sorted(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.sort(frame.columns)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(*(part_lines(),) * 3), min_size=1, max_size=4),
    st.sampled_from([[0, 1], [0], [1], [2]]),
)
def test_gold_rules_with_the_hash_prefilter_equal_the_plain_joins(
    runs: list[tuple[list[str], ...]], patches: list[int]
) -> None:
    """Same hit frames (rows, columns, dtypes) with and without the prefilter, for indexes with multi-line
    gold patches, one-line patches, both or none; with and without the run rows (checkout quotes)."""
    index = _index(["s"] * len(patches), [PATCHES[i] for i in patches])
    texts = pl.DataFrame([{p: "\n".join(lines) for p, lines in zip(PARTS, r, strict=True)} for r in runs])
    lines = scan(texts, index.probe).lines
    got = gold_patch_hits(index, lines, texts)
    want = reference_gold_patch_hits(index, lines, texts)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.schema == w.schema
        assert _sorted(g).equals(_sorted(w))


def reference_statement_hits(index: BenchmarkIndex, found: pl.DataFrame) -> pl.DataFrame:
    """``statement_hits`` before the distinct-n-gram bound: always the joins."""
    m = (
        found.unique()
        .join(index.stmt, on="g")
        .group_by("doc", "inst")
        .len("n")
        .join(index.stmt_total, on="inst")
        .with_columns(score=pl.col("n") / pl.col("total"))
        .filter(pl.col("score") >= B.STATEMENT_CONTAINMENT)
    )
    return m.select(B._hits("doc", "inst", "problem_statement", pl.col("score")))


STATEMENTS = [
    " ".join(f"w{i}x{j}" for j in range(k)) for i, k in enumerate([19, 20, 21, 24, 40])
]  # 12, 13, 14, 17, 33 n-grams


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_statement_rule_with_the_ngram_bound_equals_the_plain_joins(data: st.DataObject) -> None:
    """Same hit frame with and without the early exit, around the threshold (5, 6, 7 ... shared n-grams
    of statements with 12 to 33 n-grams), with repeated rows and n-grams of no statement."""
    index = _index(STATEMENTS)
    grams = index.stmt["g"].to_list()
    rows = data.draw(
        st.lists(
            st.tuples(st.integers(0, 3), st.one_of(st.sampled_from(grams), st.integers(0, 2**64 - 1))),
            max_size=60,
        )
    )
    found = pl.DataFrame(
        {"doc": [d for d, _ in rows], "g": [g for _, g in rows]}, schema={"doc": pl.UInt32, "g": pl.UInt64}
    )
    got, want = B.statement_hits(index, found), reference_statement_hits(index, found)
    assert got.schema == want.schema
    assert _sorted(got).equals(_sorted(want))


def test_statement_rule_hits_at_the_bound_and_not_below() -> None:
    """6 of a 12-n-gram statement's n-grams are a hit (0.5), 5 are not: the bound is no stricter."""
    index = _index(STATEMENTS)
    twelve = index.stmt.filter(pl.col("inst") == 0)["g"].to_list()
    assert len(twelve) == 12
    for k, hit in ((5, False), (6, True)):
        found = pl.DataFrame({"doc": [0] * k, "g": twelve[:k]}, schema={"doc": pl.UInt32, "g": pl.UInt64})
        assert B.statement_hits(index, found).height == int(hit)
