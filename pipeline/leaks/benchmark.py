"""Benchmark-leak detection: the benchmark index (built once per worker) and one detector per reason.

* ``instance_id``: a benchmark id as a whole token (other than the run's own instance);
* ``gold_patch``: >= ``GOLD_MIN_LINES`` (all of them for a 2-line patch) distinctive added lines of a
  gold patch and >= 50% of them, found as diff additions (``+line``) anywhere or verbatim in the
  agent's own actions. A patch with one distinctive added line (common in SWE-bench) only matches
  as a printed diff: its ``+`` line as an addition in a text that also names the patch's file, never
  by the added line alone (template-like one-liners recur across repositories). Plain lines of
  observations never count: a ``cat`` of a later checkout (or an installed copy) of the same library
  is the repository's unchanged source, corpus material;
* ``problem_statement``: word 8-gram containment of a statement >= ``STATEMENT_CONTAINMENT`` (0.5;
  PaLM used 70% of 8-grams, we go lower because statements carry reformatted code blocks), counting
  only 8-grams that occur in at most ``MAX_GRAM_DF`` statements so issue-template boilerplate
  ("Describe the bug ... Expected behavior") matches nothing.

Per batch, one compiled pass over the run texts (:mod:`pipeline.leaks.scan`) finds the statement
n-grams (tokenise, rolling n-gram hash over windows of statement-vocabulary tokens, bitmap probe,
exact check) and the few lines the id and gold-patch rules must read; those rules run on them only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np
import numpy.typing as npt
import orjson
import polars as pl

from pipeline.dedup.hashing import LINE_SEED, MIN_DISTINCTIVE_CHARS
from pipeline.leaks.ngrams import (
    U64,
    bloom,
    gram_hashes,
    gram_starts,
    hash_set,
    hash_strings,
    pair_hashes,
    sorted_unique,
    token_hashes,
)
from pipeline.leaks.scan import GOLD_LINE, ID_LINE, KEY_WORDS, NEVER, PLUS_LINE, STMT_WORDS, ScanIndex
from pipeline.leaks.text import diff_side, norm_line, norm_lines_expr
from pipeline.reference.cache import cached_dir

GOLD_MIN_LINES = 3
GOLD_CONTAINMENT = 0.5
STATEMENT_NGRAM = 8
STATEMENT_CONTAINMENT = 0.5
STATEMENT_MIN_NGRAMS = 12
MAX_GRAM_DF = 2
ID_TOKEN = r"[A-Za-z0-9][A-Za-z0-9_\-]*__[A-Za-z0-9_.\-]*?-\d+"
REASON_ORDER = {"gold_patch": 0, "problem_statement": 1, "instance_id": 2}  # the first one reported
_HIT_SCHEMA = {"doc": pl.UInt32, "inst": pl.UInt32, "reason": pl.Utf8, "score": pl.Float64}


def repo_key(repo: str) -> str:
    """``owner__name`` of a repository, SWE-smith's mirror prefix and hash suffix removed."""
    r = repo.removeprefix("swesmith/")
    r = r.replace("/", "__")
    return re.split(r"\.[0-9a-f]{8}$", r)[0].lower()


@dataclass
class BenchmarkIndex:
    """The benchmark instances as lookup tables: ids, gold-patch line hashes, statement n-grams."""

    inst: pl.DataFrame  # inst, instance_id, benchmark, repo, base_commit, problem_statement, patch, repo_key
    ids: pl.DataFrame  # instance_id, inst
    gold: pl.DataFrame  # inst, h: hashed lines of patches with >= 2 distinctive added lines
    gold_total: pl.DataFrame  # inst, total
    small: pl.DataFrame  # inst, h: the one line of one-line patches
    small_paths: dict[int, list[str]]  # inst of a one-line patch (``small``) -> files its patch touches
    stmt: pl.DataFrame  # inst, g: statement n-grams kept (df <= MAX_GRAM_DF)
    stmt_total: pl.DataFrame  # inst, total
    probe: ScanIndex  # what the compiled scan looks up: statement n-grams, gold lines' key runs

    @cached_property
    def line_hashes(self) -> U64:
        """Sorted hashes of every indexed gold line (``gold`` and ``small``): a run line hashing to none of
        them joins nothing, so the gold rules drop it before any polars query."""
        return sorted_unique(np.concatenate([self.gold["h"].to_numpy(), self.small["h"].to_numpy()]))

    @classmethod
    def cached(cls, benchmarks: pl.DataFrame, cache: Path | None, key: str) -> BenchmarkIndex:
        """The index of ``benchmarks`` (whose table files have content key ``key``): built once per
        content into ``cache`` (the user-level reference cache) and memory-mapped by every process
        after (workers, later runs, other work dirs); built in memory when there is no cache or key,
        or the cache cannot be written."""
        if cache is None or not key:
            return cls.build(benchmarks)
        try:
            return cls.load(
                cached_dir(
                    cache, f"leak-index-{_INDEX_VERSION}-{key}", lambda tmp: cls.build(benchmarks).save(tmp)
                )
            )
        except OSError:
            return cls.build(benchmarks)

    def save(self, folder: Path) -> None:
        """Write the index as memory-mappable files (Arrow IPC frames, .npy arrays, a JSON rest)."""
        for name in _FRAMES:
            getattr(self, name).write_ipc(folder / f"{name}.arrow", compression="uncompressed")
        for name in _ARRAYS:
            np.save(folder / f"{name}.npy", getattr(self.probe, name))
        meta = {"n": self.probe.n, "tail_min": self.probe.tail_min, "small_paths": self.small_paths}
        (folder / "index.json").write_bytes(orjson.dumps(meta, option=orjson.OPT_NON_STR_KEYS))

    @classmethod
    def load(cls, folder: Path) -> BenchmarkIndex:
        """An index :meth:`save` wrote, memory-mapped (nothing is parsed or copied but the JSON)."""
        meta = orjson.loads((folder / "index.json").read_bytes())
        arrays = {name: np.asarray(np.load(folder / f"{name}.npy", mmap_mode="r")) for name in _ARRAYS}
        return cls(
            **{name: pl.read_ipc(folder / f"{name}.arrow") for name in _FRAMES},
            small_paths={int(k): v for k, v in meta["small_paths"].items()},
            probe=ScanIndex(n=meta["n"], tail_min=meta["tail_min"], **arrays),
        )

    @classmethod
    def build(cls, benchmarks: pl.DataFrame) -> BenchmarkIndex:
        """Index a benchmarks table (benchmark, instance_id, repo, base_commit, problem_statement, patch)."""
        b = (
            benchmarks.select(
                pl.col("benchmark").cast(pl.Utf8).fill_null(""),
                pl.col("instance_id").cast(pl.Utf8),
                pl.col("repo").cast(pl.Utf8).fill_null(""),
                pl.col("base_commit").cast(pl.Utf8).fill_null(""),
                pl.col("problem_statement").cast(pl.Utf8).fill_null(""),
                pl.col("patch").cast(pl.Utf8).fill_null(""),
            )
            .drop_nulls("instance_id")
            .group_by("instance_id", maintain_order=True)
            .agg(
                pl.col("benchmark").unique(maintain_order=True).str.join(","),
                pl.col("repo").first(),
                pl.col("base_commit").first(),
                pl.col("problem_statement").sort_by(pl.col("problem_statement").str.len_bytes()).last(),
                pl.col("patch").sort_by(pl.col("patch").str.len_bytes()).last(),
            )
        )
        inst = b.with_row_index("inst").with_columns(
            pl.col("repo").map_elements(repo_key, return_dtype=pl.Utf8).alias("repo_key")
        )
        # Gold patch: distinctive added lines, hashed exactly like run lines.
        patches = inst["patch"].to_list()
        gold = [(i, ln) for i, p in enumerate(patches) for ln in diff_side(p, "+")]
        g = pl.DataFrame(
            {"inst": [i for i, _ in gold], "x": [x for _, x in gold]},
            schema={"inst": pl.UInt32, "x": pl.Utf8},
        )
        g = g.select("inst", norm_lines_expr(pl.lit("+") + pl.col("x")).alias("x"))
        key_runs, pairs, tail_min = gold_keys(g["x"])
        g = g.select("inst", pl.col("x").hash(seed=LINE_SEED).alias("h")).unique()
        gold_total = g.group_by("inst").len("total").filter(pl.col("total") >= 2)
        # One distinctive added line is too weak alone: such a patch matches only as a diff, its line as
        # an addition (``+line``) in a text that also names the gold patch's file (a printed patch).
        one = g.group_by("inst").len("total").filter(pl.col("total") == 1).select("inst")
        # Statements: 8-gram hashes; boilerplate n-grams (in > MAX_GRAM_DF statements) are dropped.
        h, counts = token_hashes(inst["problem_statement"])
        doc = np.repeat(np.arange(len(counts), dtype=np.uint32), counts)
        pos = gram_starts(doc, STATEMENT_NGRAM)
        at = pl.DataFrame({"inst": doc[pos], "g": gram_hashes(h, pos, STATEMENT_NGRAM)})
        s = at.select("inst", "g").unique()
        df = s.group_by("g").len("df")
        s = s.join(df.filter(pl.col("df") <= MAX_GRAM_DF).select("g"), on="g")
        stmt_total = s.group_by("inst").len("total").filter(pl.col("total") >= STATEMENT_MIN_NGRAMS)
        stmt = s.join(stmt_total.select("inst"), on="inst")
        stmt_grams = stmt["g"].unique().sort().to_numpy()
        return cls(
            inst=inst,
            ids=inst.select("instance_id", "inst"),
            gold=g.join(gold_total.select("inst"), on="inst"),
            gold_total=gold_total,
            small=g.join(one, on="inst"),
            small_paths={i: patch_paths(patches[i]) for i in one["inst"].to_list()},
            stmt=stmt,
            stmt_total=stmt_total,
            probe=ScanIndex(
                n=STATEMENT_NGRAM,
                stmt_bloom=bloom(stmt_grams, STMT_WORDS),
                stmt_set=hash_set(stmt_grams),
                key_bloom=bloom(key_runs, KEY_WORDS),
                key_set=hash_set(key_runs),
                pair_set=hash_set(pairs),
                tail_min=tail_min,
            ),
        )


_RUN = r"[A-Za-z0-9_]+"


_INDEX_VERSION = "v3"  # of the cached files (v2: pair_set; v3: a 512 kB n-gram bloom)
_FRAMES = ("inst", "ids", "gold", "gold_total", "small", "stmt", "stmt_total")
_ARRAYS = ("stmt_bloom", "stmt_set", "key_bloom", "key_set", "pair_set")


_NEW_FILE = re.compile(r"\+\+\+ b/(\S+)")


def patch_paths(patch: str) -> list[str]:
    r"""``re.findall(r"(?m)^\+\+\+ b/(\S+)", patch)``: the files a patch writes. ``str.find`` jumps to
    the few ``+++`` lines (the multiline regex tries every position of ~7 MB of patches)."""
    text = "\n" + patch  # a path (\S+) never holds the "\n" put in front
    out: list[str] = []
    at = text.find("\n+++ b/")
    while at >= 0:
        m = _NEW_FILE.match(text, at + 1)
        if m:
            out.append(m.group(1))
        at = text.find("\n+++ b/", at + 1)
    return out


def gold_keys(normed: pl.Series) -> tuple[U64, U64, int]:
    """(sorted token hashes of each normalised gold line's longest ASCII word run, the pair hashes of
    (longest run, last run) of each such line, the scan's ``tail_min``): a raw line normalising to a gold
    line holds both runs as maximal runs, the last one last (:mod:`pipeline.leaks.scan`). A gold line
    without such a run is found by the bytes after a line's last run instead."""
    lines = normed.filter(normed.str.len_chars() >= MIN_DISTINCTIVE_CHARS)
    runs = (
        pl.DataFrame({"x": lines})
        .with_row_index("row")
        .select("row", pl.col("x").str.extract_all(_RUN).alias("run"))
        .explode("run")
        .drop_nulls("run")
    )
    longest = runs.sort(pl.col("run").str.len_bytes(), "run", descending=[True, False]).unique(
        "row", keep="first"
    )
    last = runs.unique("row", keep="last", maintain_order=True)
    both = longest.join(last, on="row", suffix="_last")
    keys = sorted_unique(hash_strings(longest["run"].str.to_lowercase()))
    pairs = pair_hashes(
        hash_strings(both["run"].str.to_lowercase()), hash_strings(both["run_last"].str.to_lowercase())
    )
    return keys, sorted_unique(pairs), (MIN_DISTINCTIVE_CHARS if longest.height < lines.len() else int(NEVER))


def run_texts(batch: pl.DataFrame) -> pl.DataFrame:
    """All text of a run except the system prompt; observations once (outputs, untruncated)."""
    role = pl.element().struct.field("role")
    content = pl.element().struct.field("content")
    return batch.select(
        actions=pl.concat_str(
            [
                pl.col("messages").list.eval(content.filter(role == "assistant")).list.join("\n"),
                pl.col("commands").list.join("\n"),
            ],
            separator="\n",
            ignore_nulls=True,
        ),
        task=pl.col("messages").list.eval(content.filter(role != "system")).list.first().fill_null(""),
        outputs=pl.col("outputs").list.join("\n").fill_null(""),
    )


def _hits(doc: pl.Expr | str, inst: pl.Expr | str, reason: str, score: pl.Expr | float) -> list[pl.Expr]:
    return [
        pl.col(doc) if isinstance(doc, str) else doc,
        pl.col(inst) if isinstance(inst, str) else inst,
        pl.lit(reason).alias("reason"),
        (pl.lit(score) if isinstance(score, float) else score).alias("score"),
    ]


def _printed_in_patch(text: str, paths: list[str], added: list[str]) -> bool:
    """Is one of ``added`` a ``+`` line of ``text`` under a ``+++`` header naming one of ``paths``
    (a printed patch of that file, not a ``path.orig`` backup or another file)?"""
    if not any(path in text for path in paths):
        return False
    current = ""
    for raw in text.split("\n"):
        if raw.startswith("+++ "):
            current = raw[4:].strip().split("\t")[0].removeprefix("b/")
        elif raw.startswith("+") and current in paths and norm_line(raw) in added:
            return True
    return False


def instance_id_hits(index: BenchmarkIndex, lines: pl.DataFrame) -> pl.DataFrame:
    """(doc, inst, reason, score) of benchmark ids found as tokens in the scan's candidate ``lines`` (an
    id never spans a line; every id holds "__", so only ``ID_LINE`` lines are read)."""
    ids = (
        lines.filter((pl.col("flag") & ID_LINE) != 0)
        .select("doc", pl.col("x").str.extract_all(ID_TOKEN).alias("tok"))
        .explode("tok")
        .drop_nulls()
        .join(index.ids, left_on="tok", right_on="instance_id")
        .select("doc", "inst")
        .unique()
    )
    return ids.select(_hits("doc", "inst", "instance_id", 1.0))


def gold_patch_hits(
    index: BenchmarkIndex,
    lines: pl.DataFrame,
    texts: pl.DataFrame | None,
    batch: pl.DataFrame | None = None,
) -> list[pl.DataFrame]:
    """Gold patch added lines: diff additions anywhere, or verbatim in the agent's own actions.
    Only the scan's ``GOLD_LINE`` candidates (``+`` lines of task and outputs, lines of the actions
    that may be a gold line) are normalised. ``texts`` (:func:`run_texts` of ``batch``) is read for
    a few runs only: None reads those runs' texts from ``batch``."""
    normed = (
        lines.filter((pl.col("flag") & GOLD_LINE) != 0)
        .select("doc", "flag", norm_lines_expr(pl.col("x")).alias("x"))
        .filter(pl.col("x").str.len_chars() >= 12)
        .select("doc", "flag", pl.col("x").hash(seed=LINE_SEED).alias("h"))
    )
    normed = normed.filter(pl.Series(_known(index.line_hashes, normed["h"].to_numpy())))
    if not normed.height:  # most batches: no line of a gold patch, no hit (skip the queries below)
        empty = pl.DataFrame(schema=_HIT_SCHEMA)
        return [empty for t in (index.gold, index.small) if t.height]
    hits: list[pl.DataFrame] = []
    if index.gold.height:
        found = normed.select("doc", "h").unique().join(index.gold, on="h")
        # A gold line the run's own checkout printed as source before anything else showed it is the code
        # of a fix merged before this checkout, not a leak: those (doc, h) pairs are removed.
        quoted = quoted_from_checkout(found, batch) if batch is not None else None
        if quoted is not None and quoted.height:
            found = found.join(quoted, on=["doc", "h"], how="anti")
        m = (
            found.group_by("doc", "inst")
            .len("n")
            .join(index.gold_total, on="inst")
            .filter(
                (pl.col("n") >= pl.min_horizontal(pl.col("total"), pl.lit(GOLD_MIN_LINES)))
                & (pl.col("n") / pl.col("total") >= GOLD_CONTAINMENT)
            )
        )
        hits.append(m.select(_hits("doc", "inst", "gold_patch", pl.col("n") / pl.col("total"))))
    if index.small.height:
        cand = (
            normed.filter((pl.col("flag") & PLUS_LINE) != 0)
            .select("doc", "h")
            .unique()
            .join(index.small, on="h")
            .select("doc", "inst")
            .unique()
        )
        # few candidates; a path (no whitespace) never spans the "\n" between the parts
        rows = _text_rows(cand["doc"].unique().sort().to_list(), texts, batch)
        pairs = [
            (d, i)
            for d, i in cand.iter_rows()
            if any(
                _printed_in_patch(x, index.small_paths[i], diff_side(index.inst["patch"][i], "+"))
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
                schema=_HIT_SCHEMA,
            )
        )
    return hits


def _text_rows(
    docs: list[int], texts: pl.DataFrame | None, batch: pl.DataFrame | None
) -> dict[int, tuple[str, ...]]:
    """The (task, actions, outputs) texts of runs ``docs``: rows of ``texts``, else joined from ``batch``."""
    if texts is not None:
        return {d: texts.row(d) for d in docs}
    assert batch is not None, "gold_patch_hits needs the texts or the batch"
    return dict(zip(docs, run_texts(batch[docs]).iter_rows(), strict=True))


def _known(known: U64, h: U64) -> npt.NDArray[np.bool_]:
    """Which of ``h`` are in the sorted ``known``."""
    if not known.shape[0]:
        return np.zeros(h.shape[0], dtype=bool)
    at = np.minimum(np.searchsorted(known, h), known.shape[0] - 1)
    return np.asarray(known[at] == h)


def _line_hash(lines: list[str]) -> list[int]:
    """Hashes of lines normalised as the gold patch's lines are (:func:`norm_lines_expr`, seed 11)."""
    series = pl.Series("x", lines, dtype=pl.Utf8)
    return pl.DataFrame([series]).select(norm_lines_expr(pl.col("x")).hash(seed=LINE_SEED))["x"].to_list()


def quoted_from_checkout(found: pl.DataFrame, batch: pl.DataFrame) -> pl.DataFrame:
    """(doc, h) of matched gold lines whose first appearance in the run is plain source printed by its
    own checkout (a ``cat``, a ``grep``; not a diff's ``+`` line, not the agent's own typing): code of a fix
    merged before this checkout, which the agent may then quote, edit around or copy (``cp f f.orig``
    shows up as ``+`` lines of its own diff) without anything having leaked.

    Runs on the few candidate runs only, walking their turns in order: an action is the assistant's
    message and its command, an observation the command's full output.
    """
    out_doc: list[int] = []
    out_h: list[int] = []
    for doc, hs in found.group_by("doc").agg(pl.col("h").unique()).iter_rows():
        want = set(hs)
        row = batch.row(doc, named=True)
        thoughts = [m["content"] or "" for m in (row["messages"] or [])[2:] if m["role"] == "assistant"]
        commands, outputs = row["commands"] or [], row["outputs"] or []
        first: dict[int, bool] = {}  # h -> first seen as the checkout's plain source
        for k in range(max(len(thoughts), len(commands), len(outputs))):
            action = "\n".join(
                [thoughts[k] if k < len(thoughts) else "", commands[k] if k < len(commands) else ""]
            )
            for h in set(_line_hash(action.split("\n"))) & want:
                first.setdefault(h, False)
            obs = (outputs[k] if k < len(outputs) else "").split("\n")
            plus = [x for x in obs if x.startswith("+")]
            for h in set(_line_hash(plus)) & want:
                first.setdefault(h, False)
            for h in set(_line_hash([x for x in obs if not x.startswith("+")])) & want:
                first.setdefault(h, True)
        quoted = [h for h, plain in first.items() if plain]
        out_doc.extend([doc] * len(quoted))
        out_h.extend(quoted)
    return pl.DataFrame({"doc": out_doc, "h": out_h}, schema={"doc": pl.UInt32, "h": pl.UInt64})


# The fewest shared n-grams that can reach the containment: a kept statement has >= STATEMENT_MIN_NGRAMS
# n-grams, and n / total only falls as total grows.
_STMT_MIN_HIT = next(
    n for n in range(1, STATEMENT_MIN_NGRAMS + 1) if n / STATEMENT_MIN_NGRAMS >= STATEMENT_CONTAINMENT
)


def _max_distinct_per_doc(found: pl.DataFrame) -> int:
    """The most distinct n-grams (``g``) any run (``doc``) of ``found`` holds (0 when empty)."""
    if not found.height:
        return 0
    doc, g = found["doc"].to_numpy(), found["g"].to_numpy()
    order = np.lexsort((g, doc))
    doc, g = doc[order], g[order]
    new = np.ones(doc.shape[0], dtype=bool)
    new[1:] = (doc[1:] != doc[:-1]) | (g[1:] != g[:-1])
    return int(np.bincount(doc[new]).max())


def statement_hits(index: BenchmarkIndex, found: pl.DataFrame) -> pl.DataFrame:
    """Problem statement 8-gram containment >= STATEMENT_CONTAINMENT, from the scan's (doc, g) n-grams."""
    if _max_distinct_per_doc(found) < _STMT_MIN_HIT:  # most batches: too few n-grams for any hit
        return pl.DataFrame(schema=_HIT_SCHEMA)
    m = (
        found.unique()
        .join(index.stmt, on="g")
        .group_by("doc", "inst")
        .len("n")
        .join(index.stmt_total, on="inst")
        .with_columns(score=pl.col("n") / pl.col("total"))
        .filter(pl.col("score") >= STATEMENT_CONTAINMENT)
    )
    return m.select(_hits("doc", "inst", "problem_statement", pl.col("score")))


def best_hits(index: BenchmarkIndex, batch: pl.DataFrame, hits: list[pl.DataFrame]) -> pl.DataFrame:
    """One hit per run (doc, reason, benchmark, b_id, score): the first reason of REASON_ORDER, best
    score; a run's own task (same instance, or same repository at the same commit) is no leak."""
    runs = batch.select(
        pl.col("instance_id").fill_null(""),
        pl.col("base_commit").fill_null(""),
        pl.col("repo").fill_null("").map_elements(repo_key, return_dtype=pl.Utf8).alias("repo_key"),
    ).with_row_index("doc")
    allh = pl.concat(
        [
            h.with_columns(
                pl.col("doc").cast(pl.UInt32),
                pl.col("inst").cast(pl.UInt32),
                pl.col("score").cast(pl.Float64),
            )
            for h in hits
        ]
    )
    allh = allh.join(runs, on="doc").join(
        index.inst.select(
            "inst",
            pl.col("instance_id").alias("b_id"),
            "benchmark",
            pl.col("repo_key").alias("b_repo"),
            pl.col("base_commit").alias("b_commit"),
        ),
        on="inst",
    )
    # The run's own task being this instance is task_dedup's business, not a leak.
    same = (pl.col("instance_id") == pl.col("b_id")) | (
        (pl.col("base_commit") != "")
        & (pl.col("base_commit") == pl.col("b_commit"))
        & (pl.col("repo_key") == pl.col("b_repo"))
    )
    order = pl.col("reason").replace_strict(REASON_ORDER, return_dtype=pl.Int8)
    return (
        allh.filter(~same)
        .sort(["doc", order, pl.col("score")], descending=[False, False, True])
        .group_by("doc", maintain_order=True)
        .first()
    )
