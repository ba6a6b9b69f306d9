"""The compiled benchmark-leak scan equals its specification: regex tokens and numpy n-grams for the
statement rule, and "every line the gold and id rules could match is a candidate" for the line rules."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.core.config import Config
from pipeline.dedup.hashing import LINE_SEED
from pipeline.leaks.benchmark import STATEMENT_NGRAM, BenchmarkIndex, run_texts
from pipeline.leaks.ngrams import gram_hashes, gram_starts, hash_strings, token_hashes, token_hashes_regex
from pipeline.leaks.scan import GOLD_LINE, ID_LINE, PARTS, PLUS_LINE, scan, scan_batch
from pipeline.leaks.text import norm_lines_expr
from pipeline.orchestration.process import load_context
from pipeline.reference.benchmarks import tables_key
from pipeline.stages.context import reference_cache
from pipeline.stages.leaks import BenchmarkLeak
from tests.conftest import BENCH

# words of statements and runs: ASCII, mixed case, and the two characters whose lowercase is ASCII
WORDS = [
    "alpha",
    "Bravo",
    "CHARLIE",
    "delta_9",
    "echo",
    "fox",
    "golf",
    "\u212aelvin",
    "\u0130nd",
    "caf\u00e9",
]
SEP = [" ", "  ", "\n", ", ", ".\n", "\t", " \u00a0", "-"]


def _text(draw: st.DrawFn, n_max: int) -> str:
    words = draw(st.lists(st.sampled_from(WORDS), max_size=n_max))
    seps = draw(st.lists(st.sampled_from(SEP), min_size=len(words), max_size=len(words)))
    return "".join(w + s for w, s in zip(words, seps, strict=True))


@st.composite
def statements(draw: st.DrawFn) -> list[str]:
    return [_text(draw, 40) for _ in range(draw(st.integers(1, 4)))]


def _index(statements: list[str], patches: list[str] | None = None) -> BenchmarkIndex:
    n = len(statements)
    return BenchmarkIndex.build(
        pl.DataFrame(
            {
                "benchmark": ["b"] * n,
                "instance_id": [f"o{i}__r-{i}" for i in range(n)],
                "repo": ["o/r"] * n,
                "base_commit": [""] * n,
                "problem_statement": statements,
                "patch": patches or [""] * n,
            }
        )
    )


def reference_statement_grams(index: BenchmarkIndex, texts: pl.DataFrame) -> list[tuple[int, int]]:
    """(run, n-gram) of every window of the run's whole text whose n-gram is a kept statement n-gram:
    the regex tokens of ``task\\nactions\\noutputs``, numpy n-gram hashes."""
    whole = texts.select(pl.concat_str([pl.col(p).fill_null("") for p in PARTS], separator="\n")).to_series()
    h, counts = token_hashes_regex(whole)
    doc = np.repeat(np.arange(len(counts)), counts)
    pos = gram_starts(doc, STATEMENT_NGRAM)
    g = gram_hashes(h, pos, STATEMENT_NGRAM)
    keep = np.isin(g, index.stmt["g"].to_numpy())
    return sorted(zip(doc[pos][keep].tolist(), g[keep].tolist(), strict=True))


@settings(max_examples=120, deadline=None)
@given(statements(), st.data())
def test_scan_finds_exactly_the_statement_ngrams_of_the_regex_specification(
    stmts: list[str], data: st.DataObject
) -> None:
    """Runs made of statement fragments, other words, non-ASCII and nulls: the scan's n-grams are the
    reference's, occurrence for occurrence (n-grams cross lines and parts, never runs)."""
    index = _index(stmts)
    pool = [*stmts, *WORDS]
    runs = []
    for _ in range(data.draw(st.integers(1, 4))):
        run = []
        for _ in PARTS:
            pieces = data.draw(st.lists(st.sampled_from(pool), max_size=4))
            cut = data.draw(st.sampled_from([0, 0, 0, 1, 6, 17]))
            run.append(None if data.draw(st.integers(0, 9)) == 0 else " ".join(pieces)[cut:])
        runs.append(run)
    texts = pl.DataFrame(
        [dict(zip(PARTS, r, strict=True)) for r in runs], schema=dict.fromkeys(PARTS, pl.Utf8)
    )
    found = scan(texts, index.probe).stmt
    got = sorted(zip(found["doc"].to_list(), found["g"].to_list(), strict=True))
    assert got == reference_statement_grams(index, texts)


def test_a_pasted_statement_is_found_in_each_run_and_never_across_runs() -> None:
    stmt = " ".join(f"word{i}" for i in range(30))
    words = stmt.split()
    index = _index([stmt, "unrelated text " * 5])
    texts = pl.DataFrame(
        {
            "task": ["fix it", stmt, " ".join(words[20:])],
            "actions": ["cat issue", "ls", "cat x"],
            "outputs": [stmt.upper(), "word1 word3 " * 20, " ".join(words[:20])],
        }
    )
    found = scan(texts, index.probe).stmt
    per_run = found.group_by("doc").len().sort("doc")
    windows = 30 - STATEMENT_NGRAM + 1
    # run 2 holds the statement's two halves out of order: only the windows inside each half
    assert per_run.rows() == [(0, windows), (1, windows), (2, 20 - 7 + 10 - 7)]


def test_every_code_point_tokenises_like_polars_unicode_lowercasing() -> None:
    """All of Unicode, each code point between two ASCII letters: the byte tokeniser gives the
    regex specification's tokens (only KELVIN SIGN and DOTTED I lowercase to ASCII)."""
    cps = [c for c in range(sys.maxunicode + 1) if not 0xD800 <= c < 0xE000]
    s = pl.Series([f"a{chr(c)}B" for c in cps])
    h, counts = token_hashes(s)
    want_h, want_counts = token_hashes_regex(s)
    assert np.array_equal(counts, want_counts) and np.array_equal(h, want_h)


def test_token_hash_is_the_hash_of_the_lowercased_token() -> None:
    h, counts = token_hashes(pl.Series(["Foo_BAR baz9", "\u212aelvin x", "", "caf\u00e9 OK", "\u0130x"]))
    assert counts.tolist() == [2, 2, 0, 2, 2]
    want = hash_strings(pl.Series(["foo_bar", "baz9", "kelvin", "x", "caf", "ok", "i", "x"]))
    assert h.tolist() == want.tolist()
    # 8-byte packing: tokens of 7, 8, 9 and 16 bytes all differ from their neighbours
    toks = ["abcdefg", "abcdefgh", "abcdefghi", "abcdefghabcdefgh", "abcdefgha"]
    assert len(set(hash_strings(pl.Series(toks)).tolist())) == len(toks)


GOLD_LINES = [
    "width = frame.width if frame.width is not None else default_width(frame)",
    "return layout(frame, width, height=height)",
    "self._cache[key] = compute(key, strict=True)",
    "==================== \u00e9\u00e9\u00e9",  # no ASCII word run: found by the bytes after a line's last run
    "x = \u212aelvin_scale(t) * 2.0",
]
PREFIXES = ["+", "", "  ", "src/a.py:12:", "  12\t", "+    ", "-", "a.py-3-", "x = '''", "\u00a0"]
SUFFIXES = ["", "  ", "'''", '"""),', "\r", " # note"]


@st.composite
def raw_lines(draw: st.DrawFn) -> str:
    if draw(st.integers(0, 3)) == 0:
        return draw(st.text(alphabet="ab_ _+-=:\t\u00e9\u212a1", max_size=30))
    line = draw(st.sampled_from(GOLD_LINES))
    if draw(st.booleans()):  # whitespace runs collapse
        line = line.replace(" ", draw(st.sampled_from(["  ", "\t", " \u2003"])))
    return draw(st.sampled_from(PREFIXES)) + line + draw(st.sampled_from(SUFFIXES))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(*(st.lists(raw_lines(), max_size=5),) * 3), min_size=1, max_size=3))
def test_every_line_the_gold_and_id_rules_could_match_is_a_candidate(
    runs: list[tuple[list[str], ...]],
) -> None:
    """Whatever surrounds a gold line (diff marker, grep/cat -n prefixes, quotes, whitespace), a line
    that normalises to a gold line is a GOLD_LINE candidate where the rule reads it (actions; ``+``
    lines of task and outputs, also PLUS_LINE); a line holding "__" is an ID_LINE candidate."""
    patch = "--- a/f\n+++ b/f\n@@ -1 +1 @@\n" + "".join(f"+{x}\n" for x in GOLD_LINES)
    index = _index(["s"], [patch])
    texts = pl.DataFrame([{p: "\n".join(lines) for p, lines in zip(PARTS, r, strict=True)} for r in runs])
    cand = scan(texts, index.probe).lines
    gold_h = set(index.gold["h"].to_list()) | set(index.small["h"].to_list())
    got = {(d, p, x): f for d, p, f, x in cand.select("doc", "part", "flag", "x").iter_rows()}
    for d, r in enumerate(runs):
        for p, lines in enumerate(r):
            for x in lines:
                norm = pl.select(norm_lines_expr(pl.lit(x))).item()
                hit = len(norm) >= 12 and pl.Series([norm]).hash(seed=LINE_SEED)[0] in gold_h
                plus = x.startswith("+") and not x.startswith("+++")
                if hit and (p == 1 or plus):
                    assert got.get((d, p, x), 0) & GOLD_LINE, (p, x)
                    assert bool(got[(d, p, x)] & PLUS_LINE) == (plus and p != 1)
                if "__" in x:
                    assert got.get((d, p, x), 0) & ID_LINE, x
    # candidates are real lines of their part, flagged only where a rule reads them
    for d, p, f, x in cand.select("doc", "part", "flag", "x").iter_rows():
        assert x in runs[d][p]
        if f & GOLD_LINE and p != 1:
            assert x.startswith("+") and not x.startswith("+++")


def test_a_line_holding_a_key_run_but_another_last_run_is_no_gold_candidate() -> None:
    """The pair (key run, last run) is what makes a candidate: a line sharing a gold line's longest run
    but ending on another run cannot normalise to it (normalising never cuts a word byte at the end)."""
    patch = "--- a/f\n+++ b/f\n@@ -1 +1 @@\n+width = frame.width if frame.width is not None else default_width(frame)\n"
    index = _index(["s"], [patch])
    lines = [
        "x = default_width(frame)",  # key run, last run "frame": a candidate (the gold line's pair)
        "y = default_width(other_frame_name)",  # key run, another last run: not one
        "  12\twidth = frame.width if frame.width is not None else default_width(frame)  ",  # the gold line
        "default_width + a + b + c + d + e",  # key run then 5 other runs: not one
    ]
    texts = pl.DataFrame({"task": [""], "actions": ["\n".join(lines)], "outputs": [""]})
    got = {x: f for x, f in scan(texts, index.probe).lines.select("x", "flag").iter_rows()}
    assert {x for x, f in got.items() if f & GOLD_LINE} == {lines[0], lines[2]}


# ---- scan_batch: the batch's list columns read as they are, not joined ------------------------------

_MESSAGE = pl.Struct({"role": pl.Utf8, "content": pl.Utf8})
_ROLES = ["system", "user", "assistant", "assistant", "tool"]


@st.composite
def _texts(draw: st.DrawFn) -> list[str | None] | None:
    """A list column's value: null, empty, or texts (null, empty, gold-like lines, statement words)."""
    if draw(st.integers(0, 7)) == 0:
        return None
    pool = st.one_of(
        st.none(),
        st.just(""),
        raw_lines(),
        st.builds(" ".join, st.lists(st.sampled_from(WORDS), max_size=12)),
    )
    return draw(
        st.lists(
            st.builds(
                lambda xs: "\n".join(x for x in xs if x is not None) if xs else None,
                st.lists(pool, max_size=4),
            ),
            max_size=4,
        )
    )


@st.composite
def work_batches(draw: st.DrawFn) -> pl.DataFrame:
    rows = []
    for _ in range(draw(st.integers(1, 4))):
        texts = draw(_texts()) or []
        messages = [{"role": draw(st.sampled_from(_ROLES)), "content": x} for x in texts]
        rows.append(
            {
                "messages": None if draw(st.integers(0, 9)) == 0 else messages,
                "commands": draw(_texts()),
                "outputs": draw(_texts()),
            }
        )
    return pl.DataFrame(
        rows,
        schema={"messages": pl.List(_MESSAGE), "commands": pl.List(pl.Utf8), "outputs": pl.List(pl.Utf8)},
    )


@settings(max_examples=200, deadline=None)
@given(work_batches(), st.integers(0, 3))
def test_scan_batch_equals_the_scan_of_the_joined_run_texts(batch: pl.DataFrame, cut: int) -> None:
    """Reading the messages, commands and outputs as lists (each text ending a line) finds what the scan
    of ``run_texts`` (the lists joined by line breaks) finds: the same n-grams and candidate lines, in the
    same order; also on a slice of the batch (Arrow offsets not starting at 0)."""
    patch = "--- a/f\n+++ b/f\n@@ -1 +1 @@\n" + "".join(f"+{x}\n" for x in GOLD_LINES)
    index = _index(
        [" ".join(WORDS) * 2, "alpha bravo charlie delta_9 echo fox golf alpha bravo charlie"], [patch, ""]
    )
    for part in (batch, batch[cut:]):
        got, want = scan_batch(part, index.probe), scan(run_texts(part), index.probe)
        assert got.stmt.equals(want.stmt)
        assert got.lines.equals(want.lines)


def test_scan_batch_on_real_runs() -> None:
    from tests.builders import run_row, work_frame

    inst = pl.read_ndjson(BENCH / "swebench_verified.jsonl").row(0, named=True)
    batch = work_frame(
        [
            run_row(["git show HEAD~1", "ls"], [inst["patch"], "a__b-1\n"], instance_id="acme__w-1"),
            run_row(["cat x"], [inst["problem_statement"]], instance_id="acme__w-2"),
        ]
    )
    tables = pl.read_ndjson(BENCH / "swebench_verified.jsonl").head(50)
    index = BenchmarkIndex.build(tables.with_columns(benchmark=pl.lit("swebench_verified")))
    got, want = scan_batch(batch, index.probe), scan(run_texts(batch), index.probe)
    assert got.lines.height and got.stmt.height
    assert got.stmt.equals(want.stmt) and got.lines.equals(want.lines)


# ---- the index, built once per content of the benchmark tables and memory-mapped after -------------


def _leak_rows() -> pl.DataFrame:
    from tests.builders import run_row, work_frame

    inst = pl.read_ndjson(BENCH / "swebench_verified.jsonl").row(0, named=True)
    return work_frame(
        [
            run_row(["curl -s https://example.org/fix.diff"], [inst["patch"]], instance_id="acme__w-1"),
            run_row(["ls"], [f"{inst['instance_id']}.json\n"], instance_id="acme__w-2"),
            run_row(["ls"], [""], instance_id="acme__w-3", problem_statement=inst["problem_statement"]),
            run_row(["ls"], ["nothing here\n"], instance_id="acme__w-4"),
        ]
    )


def test_cached_index_equals_the_built_one_and_later_processes_only_load_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = Config(benchmarks=str(BENCH), workdir=str(tmp_path / "work"))
    ctx = load_context(cfg)
    built = BenchmarkIndex.build(ctx.benchmarks)  # type: ignore[arg-type]
    first = BenchmarkLeak(ctx)  # builds and caches
    cached = sorted(
        p.name.split("-")[0] for p in reference_cache(cfg).iterdir() if not p.name.startswith(".")
    )
    assert cached == ["leak", "tables"]
    monkeypatch.setattr(BenchmarkIndex, "build", lambda *_: pytest.fail("rebuilt"))
    again = BenchmarkLeak(load_context(cfg))  # a later process: tables and index memory-mapped
    for name in ("inst", "ids", "gold", "gold_total", "small", "stmt", "stmt_total"):
        frame, want = getattr(again.index, name), getattr(built, name)  # as sets: build order may vary
        assert frame.sort(frame.columns).equals(want.sort(want.columns))
    assert again.index is not None and again.index.small_paths == built.small_paths
    for name in ("stmt_bloom", "stmt_set", "key_bloom", "key_set", "pair_set"):
        assert np.array_equal(getattr(again.index.probe, name), getattr(built.probe, name))
    assert (again.index.probe.n, again.index.probe.tail_min) == (built.probe.n, built.probe.tail_min)
    rows = _leak_rows()
    a, b = first(rows), again(rows)
    assert a.dropped.equals(b.dropped) and a.kept.equals(b.kept)
    assert sorted(a.dropped["reason"].to_list()) == ["gold_patch", "instance_id", "problem_statement"]


def test_changed_tables_get_a_new_index_and_an_unwritable_cache_builds_in_memory(tmp_path: Path) -> None:
    tables = tmp_path / "bench"
    shutil.copytree(BENCH, tables)
    key = tables_key(tables)
    (tables / "swebench_live_ids.csv").write_text("instance_id\nacme__widget-7\n")
    assert tables_key(tables) != key
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the cache folder would be")
    ctx = load_context(Config(benchmarks=str(tables), workdir=str(tmp_path / "w"), cache_dir=str(blocked)))
    assert ctx.benchmarks is not None and "acme__widget-7" in ctx.benchmarks["instance_id"].to_list()
    out = BenchmarkLeak(ctx)(_leak_rows())
    assert sorted(out.dropped["reason"].to_list()) == ["gold_patch", "instance_id", "problem_statement"]
