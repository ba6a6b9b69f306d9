"""Validate drops every run that breaks mini-swe-agent v1's format, naming the rule and turn."""

from __future__ import annotations

import copy
from typing import Any

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.convert import SUBMIT_COMMAND, Converted, convert_episode
from pipeline.convert.render import SENTINELS, is_sentinel_output, render_observation, render_reply
from pipeline.convert.roots import find_foreign_roots
from pipeline.core.config import Config, Limits
from pipeline.core.episode import Episode, Meta, Step, Task, ToolCall
from pipeline.stages.context import Context
from pipeline.stages.validate import (
    _RESIDUE,
    Validate,
    _has_residue,
    _is_sentinel,
    _rendered_reply,
    check_messages,
    first_foreign_root,
    maybe_roots_in,
    validate_messages,
)
from schemas.miniswe import TRUNCATION_WARNING
from schemas.run import DROPS, WORK, empty

TASK = "Fix f."


def converted(n: int = 2, submit: bool = True) -> Converted:
    steps = [Step(f"step {i}", ToolCall("bash", {"command": f"echo {i}"}), f"{i}\n", 0) for i in range(n)]
    if submit:
        steps.append(Step("done", ToolCall("submit", {}), "diff --git a/f b/f\n", None))
    return convert_episode(
        Episode(
            Task("i", "o__r", TASK, "swesmith", "python"),
            Meta("Affine corpus", "bash", "m", "u", "qwen_json"),
            steps,
        )
    )


def problems(conv: Converted, **over: Any) -> list[tuple[str, str]]:
    kw: dict[str, Any] = dict(
        outputs=conv.outputs, returncodes=conv.returncodes, problem_statement=TASK, submitted=conv.submitted
    )
    kw.update(over)
    return check_messages(conv.messages, conv.commands, **kw)


def test_converted_runs_are_valid() -> None:
    assert problems(converted()) == []
    assert problems(converted(submit=False)) == []
    assert validate_messages(converted().messages, converted().commands) == []


def mutate(conv: Converted, index: int, content: str) -> Converted:
    c = copy.deepcopy(conv)
    c.messages[index]["content"] = content
    return c


@pytest.mark.parametrize(
    ("index", "content", "rule"),
    [
        (0, "You are a bot.", "templates"),
        (1, "Other task", "templates"),
        (2, "THOUGHT: x\n\n```bash\necho 0\n```\n```bash\nls\n```", "action_count"),
        (2, "THOUGHT: x, no block", "action_count"),
        (2, "THOUGHT: x\n\n```bash\necho 9\n```", "action_mismatch"),
        (2, '<tool_call>{"name": "bash"}</tool_call>\n\n```bash\necho 0\n```', "residue"),
        (2, "THOUGHT: <function=bash>\n\n```bash\necho 0\n```", "residue"),
        (3, "<returncode>0</returncode>\n<output>\nwrong\n</output>", "observation_shape"),
        (3, "<returncode>0</returncode>\n<output>\n/repo/x\n</output>", "foreign_root"),
        (7, "not the patch", "submit"),
    ],
)
def test_each_rule_is_named_with_its_turn(index: int, content: str, rule: str) -> None:
    found = problems(mutate(converted(), index, content))
    assert found and found[0][0] == rule
    if index >= 2:
        assert f"turn {(index - 2) // 2}" in found[0][1]


def test_roles_and_step_limit_and_early_sentinel() -> None:
    conv = converted()
    bad = copy.deepcopy(conv)
    bad.messages[3]["role"] = "tool"
    assert problems(bad)[0] == ("roles", "message 3: tool")
    assert ("step_limit", "3 turns > 2") in problems(conv, step_limit=2)
    early = copy.deepcopy(converted(submit=False))
    early.outputs[0] = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n"
    early.messages[3]["content"] = (
        "<returncode>0</returncode>\n<output>\nCOMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n</output>"
    )
    assert problems(early)[0] == ("observation_shape", "turn 0: output starts with the sentinel")
    assert problems(conv, submitted=False)[0][0] == "submit"


def test_stage_drops_with_rule_and_detail() -> None:
    good, bad = converted(), mutate(converted(), 2, "THOUGHT: none")
    rows = []
    for uid, c in (("a", good), ("b", bad)):
        rows.append(
            {
                "source_uid": uid,
                "epoch": 84,
                "dataset": "mini-coder-affine-bash",
                "messages": c.messages,
                "commands": c.commands,
                "outputs": c.outputs,
                "returncodes": c.returncodes,
                "problem_statement": TASK,
                "submitted": c.submitted,
            }
        )
    batch = pl.concat([empty(WORK), pl.DataFrame(rows)], how="diagonal_relaxed")
    stage = Validate(Context(Config(limits=Limits(step_limit=250)), None, None))
    out = stage(batch)
    assert out.kept["source_uid"].to_list() == ["a"]
    assert out.dropped.select("source_uid", "stage", "reason", "detail").rows() == [
        ("b", "validate", "action_count", "turn 0: 0 bash blocks")
    ]
    assert out.counters["validate/action_count"] == 1
    assert SUBMIT_COMMAND in out.kept["commands"][0].to_list()


# -- the fast paths must decide exactly what the plain rules decide -------------------------------

# fragments that make and break roots: boundaries, look-alikes, dunder names, sentinels, line breaks
FRAGMENTS = [
    "/",
    "/workspace/",
    "/repo",
    "/app",
    "/apps",
    "/testbed",
    "x",
    "_",
    "__",
    ".",
    "-",
    "~",
    " ",
    "\n",
    "\r",
    "\x1c",
    "\u2028",
    "\t",
    "é",
    "½",
    "owner__repo",
    "/a__b",
    "__init__",
    ".git",
    "https://",
    "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT",
    "MINI_SWE_AGENT_FINAL_OUTPUT",
]
texts = st.lists(st.sampled_from(FRAGMENTS), max_size=14).map("".join)


@settings(max_examples=300, deadline=None)
@given(texts)
def test_root_prefilters_never_miss_a_foreign_root(text: str) -> None:
    roots = find_foreign_roots(text)
    assert first_foreign_root(text) == (roots[0] if roots else None)
    flags = (
        pl.DataFrame({"messages": [[{"role": "user", "content": text}]]})
        .select(maybe_roots_in(pl.col("messages")))
        .item()
        .to_list()
    )
    assert flags == [True] or not roots


# leading whitespace (line breaks included), then maybe a sentinel, then anything
outputs = st.tuples(
    st.lists(st.sampled_from([" ", "\n", "\t", "\x1c", "\u2028", "\r\n"]), max_size=3).map("".join),
    st.sampled_from(["", "x", *SENTINELS]),
    texts,
).map("".join)


@settings(max_examples=300, deadline=None)
@given(outputs)
def test_sentinel_shortcut_agrees_with_mini(text: str) -> None:
    assert _is_sentinel(text) == is_sentinel_output(text)


def row(uid: str, conv: Converted) -> dict[str, Any]:
    return {
        "source_uid": uid,
        "epoch": 84,
        "dataset": "mini-coder-affine-bash",
        "messages": conv.messages,
        "commands": conv.commands,
        "outputs": conv.outputs,
        "returncodes": conv.returncodes,
        "problem_statement": TASK,
        "submitted": conv.submitted,
    }


def with_output(conv: Converted, turn: int, output: str) -> Converted:
    c = copy.deepcopy(conv)
    c.outputs[turn] = output
    c.messages[3 + 2 * turn]["content"] = render_observation(output, c.returncodes[turn])
    return c


def test_stage_finds_a_root_deep_in_a_long_observation_and_only_there() -> None:
    """Look-alikes (dunder paths, /apps, URLs) pass; a /app root 30 KB into a truncated output is
    found in the shown tail, and one in the elided middle is not (mini never showed it)."""
    filler = "src/pkg/__init__.py /apps/x https://github.com/o/repo /testbed/a\n" * 500
    clean = with_output(converted(), 1, filler)
    tail = with_output(converted(), 1, filler + "cd /app && ls\n")
    elided = with_output(converted(), 1, filler[:15_000] + "cd /app && ls\n" + filler[:15_000])
    batch = pl.concat(
        [empty(WORK), pl.DataFrame([row("clean", clean), row("tail", tail), row("elided", elided)])],
        how="diagonal_relaxed",
    )
    out = Validate(Context(Config(), None, None))(batch)
    assert out.kept["source_uid"].to_list() == ["clean", "elided"]
    assert out.dropped.select("source_uid", "reason", "detail").rows() == [
        ("tail", "foreign_root", "turn 1: /app")
    ]
    assert out.dropped.schema == empty(DROPS).schema
    only_clean = Validate(Context(Config(), None, None))(batch.head(1))
    assert only_clean.kept.height == 1 and only_clean.dropped.schema == empty(DROPS).schema


# -- the stage reads roles and contents out of polars: it must decide what check_messages decides --

# message edits that break each rule (and some that break nothing): (index from the end or start, text)
EDITS = [
    "THOUGHT: none",
    "```bash\necho 0\n```",
    "x\n```bash\necho 0\n```\n```bash\nls\n```",
    "<tool_call>\n```bash\necho 0\n```",
    "see /repo/f\n```bash\necho 0\n```",
    "<returncode>0</returncode>\n<output>\n0\n</output>",
    "<returncode>1</returncode>\n<output>\n0\n</output>",
    "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT",
    "",
]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(1, 4),  # steps
            st.booleans(),  # submit
            st.lists(st.tuples(st.integers(0, 12), st.sampled_from(EDITS)), max_size=2),
            st.sampled_from(["system", "user", "assistant", None]),  # a role to plant
            st.integers(0, 12),
            st.booleans(),  # plant the role
            st.sampled_from([None, TASK, "other"]),  # the problem statement
            st.sampled_from([None, True, False]),  # submitted
        ),
        min_size=1,
        max_size=6,
    )
)
def test_stage_decides_what_check_messages_decides(runs: list[Any]) -> None:
    rows, want = [], []
    for k, (n, submit, edits, role, at, plant, statement, submitted) in enumerate(runs):
        c = converted(n, submit)
        messages = copy.deepcopy(c.messages)
        for i, text in edits:
            if i < len(messages):
                messages[i]["content"] = text
        if plant and at < len(messages):
            messages[at]["role"] = role
        rows.append(
            {
                "source_uid": str(k),
                "messages": messages,
                "commands": c.commands,
                "outputs": c.outputs,
                "returncodes": c.returncodes,
                "problem_statement": statement,
                "submitted": submitted,
                "repo": "o__r",
            }
        )
        found = check_messages(
            messages,
            c.commands,
            outputs=c.outputs,
            returncodes=c.returncodes,
            problem_statement=statement,
            submitted=submitted,
            step_limit=3,
            repo="o__r",
        )
        want.append((str(k), *found[0]) if found else None)
    batch = pl.concat([empty(WORK), pl.DataFrame(rows)], how="diagonal_relaxed")
    out = Validate(Context(Config(limits=Limits(step_limit=3)), None, None))(batch)
    assert out.dropped.select("source_uid", "reason", "detail").rows() == [w for w in want if w]
    assert out.kept["source_uid"].to_list() == [str(k) for k, w in enumerate(want) if not w]


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(["", TRUNCATION_WARNING, TRUNCATION_WARNING[:-3]]),
    st.sampled_from(["", "x", "é\n"]),
    st.sampled_from([0, 1, 9_999 - len(TRUNCATION_WARNING), 9_998, 9_999, 10_000, 12_000]),
    st.sampled_from([None, 0, 1, -1, 127]),
)
def test_the_usual_reply_is_rendered_as_render_reply_does(
    head: str, unit: str, n: int, rc: int | None
) -> None:
    output = head + unit * (n // max(len(unit), 1))
    assert _rendered_reply("ls", output, rc) == render_reply("ls", output, rc)


RESIDUE_FRAGMENTS = [
    "<",
    ">",
    "/",
    "=",
    '"',
    ":",
    " ",
    "\x1c",
    "\u3000",
    "\n",
    "tool_call",
    "tool_calls",
    "tool_response",
    "function",
    "parameter",
    "<tool_call>",
    '"tool_calls"',
    "x",
]


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(RESIDUE_FRAGMENTS), max_size=12).map("".join))
def test_the_residue_prefilter_agrees_with_the_regex(text: str) -> None:
    assert _has_residue(text) == (_RESIDUE.search(text) is not None)
