"""Hostile input: whatever the record holds, parse_raw returns an Episode or raises ParseError."""

from __future__ import annotations

import gzip
import itertools
import time
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.core.episode import Episode, ParseError, Quarantined, RawRun
from pipeline.parsers import PARSERS, parse_raw
from pipeline.parsers.affine_view import longest_path
from pipeline.parsers.files import iter_trajectory_file
from tests.fuzzing import examples

FRAGMENTS = [
    "<tool_call>",
    "</tool_call>",
    "<function=bash>",
    "<parameter=command>",
    "</parameter>",
    "</function>",
    "```bash\n",
    "\n```",
    "<returncode>",
    "</returncode>",
    "<output>",
    "</output>",
    "<tool_response>",
    "</tool_response>",
    "<arg_key>",
    "</arg_key>",
    "<arg_value>",
    "</arg_value>",
    "{",
    "}",
    '"name"',
    ":",
    "EXECUTION RESULT of [x]:\n",
    "<think>",
    "</think>",
    "\n",
    "ls",
]

texts = st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=8)), max_size=12).map("".join)
scalars = st.one_of(st.none(), st.booleans(), st.integers(-3, 12), st.floats(allow_nan=True), texts)
json_values = st.recursive(
    scalars,
    lambda c: st.one_of(
        st.lists(c, max_size=4),
        st.dictionaries(
            st.sampled_from(
                [
                    "role",
                    "content",
                    "parent",
                    "name",
                    "arguments",
                    "tool_calls",
                    "function",
                    "text",
                    "type",
                    "id",
                ]
            ),
            c,
            max_size=4,
        ),
    ),
    max_leaves=12,
)
roles = st.sampled_from(["system", "user", "assistant", "tool", "ai", 3, None])
nodes = st.lists(
    st.fixed_dictionaries(
        {
            "parent": st.one_of(st.none(), st.integers(-2, 10), texts),
            "role": roles,
            "content": st.one_of(texts, json_values),
        }
    ),
    max_size=8,
)


def check(run: RawRun) -> None:
    try:
        ep = parse_raw(run)
    except ParseError as e:
        assert e.reason and e.stage == "parse"
        return
    assert isinstance(ep, Episode) and ep.steps


@settings(max_examples=examples(200), deadline=None)
@given(
    kind=st.sampled_from(sorted(PARSERS)),
    payload=st.dictionaries(
        st.sampled_from(
            [
                "nodes",
                "messages",
                "history",
                "trajectory",
                "trace",
                "task",
                "events",
                "instance_id",
                "policy",
                "stratum",
                "replay_config",
                "info",
                "sid",
            ]
        ),
        json_values,
        max_size=6,
    ),
)
def test_any_payload_only_raises_parse_error(kind: str, payload: dict[str, Any]) -> None:
    check(RawRun("u", "x", kind, None, payload, 0))


@settings(max_examples=examples(200), deadline=None)
@given(ns=nodes)
def test_random_view_graphs_only_raise_parse_error(ns: list[dict[str, Any]]) -> None:
    check(RawRun("u", "Affine corpus", "view", 1, {"instance_id": "a__b-1", "nodes": ns}, 0))
    msgs = [{"role": n["role"], "content": n["content"]} for n in ns]
    check(RawRun("u", "SWE-Lego", "swelego", None, {"instance_id": "a__b-1", "messages": msgs}, 0))
    check(
        RawRun(
            "u",
            "Affine corpus",
            "trace",
            None,
            {
                "task": {"sid": "s"},
                "trace": {
                    "nodes": [{"message": m, "parent": n["parent"]} for m, n in zip(msgs, ns, strict=True)]
                },
            },
            0,
        )
    )


@settings(max_examples=examples(200), deadline=None)
@given(parents=st.lists(st.one_of(st.none(), st.integers(0, 15)), max_size=16))
def test_longest_path_is_a_simple_parent_chain(parents: list[int | None]) -> None:
    clean = [p if p is not None and p < len(parents) and p != i else None for i, p in enumerate(parents)]
    path = longest_path(clean)
    assert len(path) == len(set(path))
    assert (path == []) == (parents == [])
    for a, b in itertools.pairwise(path):
        assert clean[b] == a


def test_huge_strings_with_unclosed_tags_do_not_hang() -> None:
    """A hang guard, not a speed measurement: a regex that rescans per unclosed tag goes quadratic
    on this input (minutes); the linear scan takes well under a second."""
    junk = ("<tool_call>" + "x" * 1000 + "<function=" + "y" * 1000) * 2000  # ~4 MB, unclosed tags
    t0 = time.perf_counter()
    check(
        RawRun(
            "u",
            "Affine corpus",
            "view",
            1,
            {
                "instance_id": "a__b-1",
                "nodes": [
                    {"parent": None, "role": "user", "content": "task"},
                    {"parent": 0, "role": "assistant", "content": junk},
                    {"parent": 1, "role": "user", "content": "<returncode>0</returncode>" + "z" * 4_000_000},
                ],
            },
            0,
        )
    )
    assert time.perf_counter() - t0 < 60, "parsing went super-linear on unclosed tags"


def test_deep_cycle_graph() -> None:
    n = 50_000
    ns = [
        {"parent": (i + 1) % n, "role": "user" if i % 2 else "assistant", "content": "```bash\nls\n```"}
        for i in range(n)
    ]
    check(RawRun("u", "Affine corpus", "view", 1, {"instance_id": "a__b-1", "nodes": ns}, 0))


def test_garbage_files_are_quarantined(tmp_path: Path) -> None:
    cases = {
        "a.json": b"{not json",
        "b.jsonl": b'{"x": 1}\nnot json\n[1, 2]\n"str"\n',
        "c.gz": gzip.compress(b"[]")[:10],
        "d.json": b"42",
    }
    for name, data in cases.items():
        (tmp_path / name).write_bytes(data)
    reasons = {
        name: [r.reason for r in iter_trajectory_file(tmp_path / name) if isinstance(r, Quarantined)]
        for name in cases
    }
    assert reasons == {
        "a.json": ["bad_json"],
        "b.jsonl": ["unknown_format", "bad_json", "unknown_format", "not_object"],
        "c.gz": ["unreadable"],
        "d.json": ["unknown_format"],
    }
    assert [r.source_uid for r in iter_trajectory_file(tmp_path / "b.jsonl")] == [
        "b.jsonl#L1",
        "b.jsonl#L2",
        "b.jsonl#L3",
        "b.jsonl#L4",
    ]
