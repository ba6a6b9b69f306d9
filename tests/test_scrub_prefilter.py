"""The scrub's fast pre-filter loses nothing: every text in which a secret pattern can match (in
Python, which does the exact search) matches the Rust PREFILTER, so the stage redacts exactly what the
search over every TRIGGER-flagged string (the stage as it was before the pre-filter) redacts."""

from __future__ import annotations

import re
import sys
from collections import Counter

import polars as pl
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline.reference.secrets import _I, _WS, PATTERNS, PREFILTER, PREFILTER_GROUPS, TRIGGER, find_secrets
from pipeline.stages.scrub import TEXT_COLUMNS, Scrub, _hit, candidates, scrub_row, string_flags
from schemas.run import DROPS, empty
from tests.builders import ctx, work_frame
from tests.builders import run_row as work_row
from tests.test_scrub import CASES, LOOKALIKES

_CODE_POINTS = [chr(i) for i in range(sys.maxunicode + 1) if not 0xD800 <= i <= 0xDFFF]


def _rust(pattern: str, texts: list[str]) -> list[bool]:
    return pl.Series(texts, dtype=pl.Utf8).str.contains(pattern).to_list()


def test_rust_spelling_of_python_whitespace_and_case_covers_every_code_point() -> None:
    """Python's ``\\s`` and ``(?i)`` match a few characters Rust's do not; the prefilters' spellings
    of them (``_WS``, ``_I``, Rust's own ``(?i)`` for the other letters) match all of them."""
    py_ws = [c for c in _CODE_POINTS if re.fullmatch(r"\s", c)]
    assert all(_rust(f"^{_WS}$", py_ws))
    # negated: Rust's [^\s] keeps everything Python's keeps
    py_not_ws = [c for c in _CODE_POINTS if re.fullmatch(r"[^\s]", c)]
    assert all(_rust(r"^[^\s]$", py_not_ws))
    py_letters = [c for c in _CODE_POINTS if re.fullmatch(r"(?i)[a-z_]", c)]
    assert all(_rust("^(?i:[a-z_İı])$", py_letters))
    for letter in "abcdefghijklmnopqrstuvwxyz":
        py = [c for c in py_letters if re.fullmatch(f"(?i){letter}", c)]
        rust = f"^(?i:{_I})$" if letter == "i" else f"^(?i:{letter})$"
        assert all(_rust(rust, py)), letter


# Pieces that random texts are made of: secrets and their contexts, look-alikes, names and
# separators around the patterns' edges (boundaries, quotes, Python-only whitespace and case).
_PIECES = [
    *(t for _, t, _ in CASES),
    *(s for _, _, s in CASES),
    *LOOKALIKES,
    *"=:'\" \n\t\x1c\x1f@/$<;&|()-_.+~",
    "İ",
    "ı",
    "é",
    "ſ",
    "K",
    "token",
    "TOKEN=",
    "ApİKey=",
    "api_key=",
    "PRİVATE_KEY=",
    "db_password=",
    "authorİzation: Bearer ",
    "Proxy-Authorization=basic ",
    "aws_secret_access_key",
    "AZURE_STORAGE_KEY=",
    "AccountKey=",
    "https://",
    "user:",
    "sk-",
    "sk-ant-api03-",
    "hf_",
    "ghp_",
    "eyJ",
    "xoxb-",
    "-----BEGIN RSA PRIVATE KEY-----",
    "Q~",
    "q8Zr2LmX7vTp",
    "Zx81Lq0Pw7NvAb3dE5gH7jK9mN1pQ3sT",
    "Z2hwX1I3eGsyUXBMOW1adDRXdkI4blljM0hkSjZmR3MxQWU1VW8waQ==",
    "None, ",
]
texts = st.lists(st.sampled_from(_PIECES), min_size=1, max_size=8).map("".join)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(texts, min_size=1, max_size=20))
def test_every_text_a_pattern_can_match_passes_the_prefilter(batch: list[str]) -> None:
    for p in PATTERNS:
        # find_secrets runs a pattern where its trigger matches and keeps what its regex matches
        rx, trig = re.compile(p.regex), re.compile(p.trigger)
        can = [bool(trig.search(t) and rx.search(t)) for t in batch]
        passed = _rust(p.prefilter, batch)
        assert all(pf for c, pf in zip(can, passed, strict=True) if c), (p.kind, batch)
    combined = _rust(PREFILTER, batch)
    assert all(ok for t, ok in zip(batch, combined, strict=True) if find_secrets(t)), batch


def test_prefilter_groups_split_the_patterns_once_each() -> None:
    """The groups hold every pattern's prefilter once: their alternations OR-ed are PREFILTER."""
    for p in PATTERNS:
        assert sum(f"(?:{p.prefilter})" in g for g in PREFILTER_GROUPS) == 1, p.kind
    assert len("|".join(PREFILTER_GROUPS)) == len(PREFILTER)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(texts, min_size=1, max_size=20))
def test_prefilter_groups_flag_the_strings_prefilter_flags(batch: list[str]) -> None:
    frame = pl.DataFrame({"x": [*batch, None]}, schema={"x": pl.Utf8})
    grouped = frame.select(_hit(pl.col("x"), PREFILTER_GROUPS))["x"].to_list()
    assert grouped == frame.select(_hit(pl.col("x"), PREFILTER))["x"].to_list()


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(texts, texts, texts, st.sampled_from(TEXT_COLUMNS)), min_size=1, max_size=6))
def test_a_run_with_a_flagged_string_is_a_candidate(runs: list[tuple[str, str, str, str]]) -> None:
    """The run-level pre-filter (text columns searched as one joined string) flags every run one of
    whose strings :func:`string_flags` flags."""
    batch = work_frame(
        [
            work_row([cmd, "ls"], [out, ""], **{"source_uid": f"u{i}", column: field})
            for i, (cmd, out, field, column) in enumerate(runs)
        ]
    )
    flagged = string_flags(batch, PREFILTER_GROUPS).select(
        pl.any_horizontal(pl.all().list.any().fill_null(False))
    )
    assert all(c for c, f in zip(candidates(batch), flagged.to_series(), strict=True) if f)


def _stage_before_prefilter(batch: pl.DataFrame) -> tuple[pl.DataFrame, Counter[str]]:
    """The scrub as it was: every run with a TRIGGER-flagged string searched and rebuilt."""
    flags = string_flags(batch, TRIGGER)
    counters: Counter[str] = Counter()
    rows = []
    for row, fl in zip(batch.iter_rows(named=True), flags.iter_rows(named=True), strict=True):
        new, c = scrub_row(row, fl)
        rows.append(new)
        counters.update(c)
    return pl.DataFrame(rows, schema=batch.schema), counters


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(texts, texts, texts), min_size=1, max_size=6))
def test_stage_equals_the_search_over_every_trigger_flagged_string(runs: list[tuple[str, str, str]]) -> None:
    batch = work_frame(
        [
            work_row([f"echo {cmd}", "ls"], [out, ""], patch=patch, source_uid=f"u{i}")
            for i, (cmd, out, patch) in enumerate(runs)
        ]
    )
    want, want_counters = _stage_before_prefilter(batch)
    out = Scrub(ctx())(batch)
    assert out.kept.equals(want)
    assert out.kept.schema == batch.schema
    assert out.dropped.equals(empty(DROPS))
    assert Counter(out.counters) == want_counters
