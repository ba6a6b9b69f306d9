"""Validate's vectorised fast path proves only what the Python rules accept: a run proven valid is one
``check_messages`` finds nothing in, so the stage drops exactly the runs (with the same first rule and
detail) that the rules over every run drop."""

from __future__ import annotations

from typing import Any

import polars as pl
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline.convert.render import (
    SUBMIT_COMMAND,
    TRUNCATE_AT,
    TRUNCATION_WARNING,
    is_truncated_render,
    render_messages,
    render_observation,
    render_system,
)
from pipeline.core.config import Config, Limits
from pipeline.core.context import Context
from pipeline.stages.base import StageOutput
from pipeline.stages.validate import _TRUNCATED_RS, Validate, check_messages, maybe_roots_in, proven_valid
from schemas.run import DROPS, WORK, empty
from tests.builders import run_row as base_row
from tests.builders import work_frame

TASK = "Fix f."
STEP_LIMIT = 6

# an output mini-swe-agent had already cut: passed through as mini showed it
MINI_CUT = (
    f"{TRUNCATION_WARNING}<output_head>\nhead\n</output_head>\n<elided_chars>\n12 characters elided\n"
    "</elided_chars>\n<output_tail>\ntail\n</output_tail>"
)
OUTPUTS = [
    "",
    "ok\n",
    "a\x1cb\n",  # Python's whitespace, not Rust's
    "x" * (TRUNCATE_AT - 1),
    "y" * TRUNCATE_AT,
    "é" * 6000 + "z" * 6000,  # long, multi-byte: cut by characters
    MINI_CUT,
    MINI_CUT.replace("12", "١٢"),  # Unicode digits: left to the Python rules
    MINI_CUT.replace("12", "\U00010d40"),  # a digit Rust's \d knows and Python's does not
    TRUNCATION_WARNING + "not a cut render",
    "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\nearly\n",
    "  MINI_SWE_AGENT_FINAL_OUTPUT\n",
    "see /repo/x and /app\n",
    "/workspace/widget/src\n",
    "<tool_call>\n",
]
COMMANDS = [
    "ls",
    "echo 1",
    "cat a.py",
    "  padded  ",
    "",
    "a\x1fb",
    "echo <function=x>",
    "cd /repo",
    SUBMIT_COMMAND,
]
THOUGHTS = ["", "look", "THOUGHT: check", "<tool_", "call>", "\x1c", "```bash\nls\n```"]


def valid_row(turns: list[tuple[str, str, str, int | None]], submitted: bool) -> dict[str, Any]:
    """A run rendered as the converter renders it (valid unless its pieces break a rule)."""
    thoughts, cmds, outs, rcs = (list(x) for x in zip(*turns, strict=True)) if turns else ([], [], [], [])
    if submitted:
        thoughts.append("done")
        cmds.append(SUBMIT_COMMAND)
        outs.append("COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\ndiff --git a/f b/f\n")
        rcs.append(0)
    messages = render_messages(TASK, thoughts, cmds, outs, rcs, submitted)
    return base_row(
        cmds, outs, messages=messages, returncodes=rcs, submitted=submitted, problem_statement=TASK
    )


def mutate(row: dict[str, Any], how: int, where: int, text: str) -> dict[str, Any]:
    """One of the ways a run goes wrong (or stays right) around the fast path's edges."""
    row = {**row, "messages": [dict(m) for m in row["messages"]]}
    msgs = row["messages"]
    i = where % len(msgs)
    if how == 0:
        msgs[i]["content"] = (msgs[i]["content"] or "") + text
    elif how == 1:
        msgs[i]["content"] = text + (msgs[i]["content"] or "")
    elif how == 2:
        msgs[i]["role"] = "assistant" if msgs[i]["role"] == "user" else "user"
    elif how == 3:
        del msgs[i]
    elif how == 4:
        row["submitted"] = not row["submitted"]
    elif how == 5:
        row["returncodes"] = [
            None if k == where % max(1, len(row["returncodes"])) else r
            for k, r in enumerate(row["returncodes"])
        ]
    elif how == 6:
        row["problem_statement"] = None if where % 2 else TASK + text
    elif how == 7:
        row["commands"] = row["commands"][:-1]
    elif how == 8:
        msgs[i]["content"] = None
    return row


turn = st.tuples(
    st.sampled_from(THOUGHTS),
    st.sampled_from(COMMANDS),
    st.sampled_from(OUTPUTS),
    st.sampled_from([0, 1, 2, -1, None]),
)
run = st.builds(
    lambda turns, submitted, muts: _apply(valid_row(turns, submitted), muts),
    st.lists(turn, min_size=0, max_size=7),
    st.booleans(),
    st.lists(
        st.tuples(
            st.integers(-1, 8),
            st.integers(0, 30),
            st.sampled_from(["", "x", "\x1c", "/repo", "<tool_call>", "```bash\nls\n```"]),
        ),
        max_size=2,
    ),
)


def _apply(row: dict[str, Any], muts: list[tuple[int, int, str]]) -> dict[str, Any]:
    for how, where, text in muts:
        if how >= 0 and row["messages"]:
            row = mutate(row, how, where, text)
    return row


class PythonValidate(Validate):
    """The stage as it was: the Python rules over every run."""

    def process(self, batch: pl.DataFrame) -> StageOutput[pl.DataFrame]:
        limit = self.ctx.config.limits.step_limit
        reasons, details = [], []
        cols = batch.select(
            "messages",
            "commands",
            "outputs",
            "returncodes",
            "problem_statement",
            "submitted",
            maybe_roots_in(pl.col("messages")),
            "repo",
        )
        for messages, commands, outputs, rcs, statement, submitted, maybe_roots, repo in cols.iter_rows():
            found = check_messages(
                messages or [],
                commands or [],
                outputs=outputs,
                returncodes=rcs,
                problem_statement=statement,
                submitted=submitted,
                step_limit=limit,
                maybe_roots=maybe_roots,
                repo=repo,
            )
            reasons.append(found[0][0] if found else "")
            details.append(found[0][1] if found else "")
        if not any(reasons):
            return StageOutput(batch, empty(DROPS))
        reason = pl.Series("reason", reasons, dtype=pl.Utf8)
        return self.split(batch, reason != "", reason, pl.Series("detail", details, dtype=pl.Utf8))


def _ctx() -> Context:
    return Context(config=Config(limits=Limits(step_limit=STEP_LIMIT)), benchmarks=None, catalog_tasks=None)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(run, min_size=1, max_size=8))
def test_a_run_proven_valid_is_one_the_rules_accept_and_the_stage_is_unchanged(
    rows: list[dict[str, Any]],
) -> None:
    batch = work_frame(rows)
    proven = proven_valid(batch, STEP_LIMIT).to_list()
    for ok, row in zip(proven, rows, strict=True):
        if ok:
            assert (
                check_messages(
                    row["messages"],
                    row["commands"],
                    outputs=row["outputs"],
                    returncodes=row["returncodes"],
                    problem_statement=row["problem_statement"],
                    submitted=row["submitted"],
                    step_limit=STEP_LIMIT,
                    repo=row["repo"],
                )
                == []
            )
    got, want = Validate(_ctx())(batch), PythonValidate(_ctx())(batch)
    assert got.kept.equals(want.kept)
    assert got.counters == want.counters
    if want.counters.get("validate/crash"):  # a run the rules cannot read: same runs, other traceback
        assert got.dropped.drop("detail").equals(want.dropped.drop("detail"))
    else:
        assert got.dropped.equals(want.dropped)


def test_the_usual_runs_are_proven_without_the_python_rules() -> None:
    """Not a vacuous fast path: long, multi-byte and already-cut outputs, submitted or not. A timed-out
    command (no return code: mini's timeout message) is left to the Python rules, which accept it."""
    turns = [
        ("look", "ls", "ok\n", 0),
        ("", "cat a.py", "é" * 6000 + "z" * 6000, 1),
        ("THOUGHT: x", "echo 1", MINI_CUT, 0),
        ("t", "grep -r x", "x" * TRUNCATE_AT, 2),
    ]
    timed_out = ("t", "sleep 99", "partial\n", None)
    rows = [
        valid_row(turns, True),
        valid_row(turns, False),
        valid_row(turns[:1], True),
        valid_row([timed_out], True),
    ]
    assert proven_valid(work_frame(rows), 250).to_list() == [True, True, True, False]
    assert Validate(_ctx())(work_frame(rows)).dropped.height == 0
    assert render_observation(MINI_CUT, 0).endswith(MINI_CUT)
    assert rows[0]["messages"][0]["content"] == render_system()


@given(
    st.lists(st.sampled_from(["1", "٣", "\U00010d40", "𝟘", "x", "\n", MINI_CUT[:40], MINI_CUT]), max_size=6)
)
def test_an_output_rust_takes_for_a_cut_render_is_one_python_does(parts: list[str]) -> None:
    """The already-cut render's ``\\d+`` (Rust knows newer Unicode digits than Python)."""
    for out in ("".join(parts), MINI_CUT.replace("12", "".join(parts))):
        if pl.Series([out]).str.contains(_TRUNCATED_RS).item():
            assert is_truncated_render(out)


def test_an_empty_batch_and_a_batch_of_broken_runs() -> None:
    assert proven_valid(empty(WORK), 250).len() == 0
    broken = work_frame([base_row(["ls"], ["a\n"])])  # not the real system prompt: the rules decide
    assert proven_valid(broken, 250).to_list() == [False]
    out = Validate(_ctx())(broken)
    assert out.dropped["reason"].to_list() == ["templates"]
