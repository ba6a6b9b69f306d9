"""Parsers, per dialect: given this small literal raw run, the Episode is exactly this."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from pipeline.core.episode import Bash, ParseError, RawRun, Step, ToolCall
from pipeline.parsers import parse_raw
from pipeline.parsers.affine_view import longest_path
from pipeline.parsers.dialects import extract_calls, split_tool_responses
from pipeline.parsers.problem import extract_problem

SYSTEM = "You are a helpful assistant. Use bash."
TASK = (
    "<uploaded_files>\n/workspace/django\n</uploaded_files>\nI've uploaded a python code repository "
    "in the directory /workspace/django. Consider the following issue description:\n\n"
    "<issue_description>\nQuerySet.count() is wrong\n</issue_description>\n\nFix it."
)


def chain(*msgs: tuple[str, str]) -> list[dict[str, Any]]:
    return [{"parent": i - 1 if i else None, "role": r, "content": c} for i, (r, c) in enumerate(msgs)]


def view(nodes: list[dict[str, Any]], **over: Any) -> RawRun:
    rec: dict[str, Any] = {
        "view": "duel_turns@v4",
        "rollout_id": "r1",
        "traj_id": "t1",
        "instance_id": "django__django.1a2b3c4d.pr_12345",
        "repo": "django__django",
        "model": "engy/qwen3.8-27b",
        "policy": {"id": "teacher_bashtool", "harness": "bash", "action_kind": "tool_call"},
        "source": "swesmith",
        "language": "python",
        "stratum": "king_fail:0042",
        "nodes": nodes,
    }
    rec.update(over)
    return RawRun(
        source_uid="file:///c/views/v.jsonl.gz#L3",
        origin="Affine corpus",
        kind="view",
        epoch=84,
        payload=rec,
        raw_bytes=100,
    )


# --------------------------------------------------------------------------- bash fences


def test_bash_fence_with_mini_swe_observations() -> None:
    ep = parse_raw(
        view(
            chain(
                ("system", SYSTEM),
                ("user", TASK),
                ("assistant", "THOUGHT: list the repo.\n\n```bash\ncd /workspace/django && ls\n```"),
                ("user", "<returncode>0</returncode>\n<output>\nsetup.py\n</output>"),
                ("assistant", "Run the tests.\n\n```mswea_bash_command\npytest -x\n```"),
                ("user", "<returncode>1</returncode>\n<output>\nFAILED\n</output>"),
                (
                    "assistant",
                    "Submit.\n```sh\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached\n```",
                ),
                ("user", "diff --git a/x b/x\n"),
            )
        )
    )
    assert ep.steps == [
        Step("list the repo.", Bash("cd /workspace/django && ls"), "setup.py\n", 0),
        Step("Run the tests.", Bash("pytest -x"), "FAILED\n", 1),
        Step(
            "Submit.",
            Bash("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached"),
            "diff --git a/x b/x\n",
            None,
        ),
    ]
    assert ep.meta.dialect == "bash"
    assert ep.meta.submitted is True
    assert ep.meta.repo_root == "/workspace/django"
    assert ep.meta.fold_group == "king_fail"
    assert ep.meta.harness == "bash" and ep.meta.epoch == 84
    assert ep.task.problem_statement == "QuerySet.count() is wrong"
    assert ep.task.base_commit == "1a2b3c4d"  # SWE-smith id prefix when the record has none
    assert ep.counters["parse/dialect/bash"] == 1


def test_shell_fence_and_truncated_observation_kept_as_observed() -> None:
    trunc = (
        "<returncode>0</returncode>\n<warning>\nThe output of your last command was too long.\n</warning>"
        "<output_head>\nAAAA\n</output_head>\n<elided_chars>\n12000 characters elided\n</elided_chars>\n"
        "<output_tail>\nZZZZ\n</output_tail>"
    )
    ep = parse_raw(
        view(
            chain(
                ("system", SYSTEM),
                ("user", TASK),
                ("assistant", "```shell\nfind / -name '*.py'\n```"),
                ("user", trunc),
            )
        )
    )
    (step,) = ep.steps
    assert step.call == Bash("find / -name '*.py'")
    assert step.returncode == 0
    assert step.observation == trunc.split("</returncode>\n", 1)[1]
    assert ep.counters["parse/truncated_observation"] == 1


def test_format_error_turn_is_not_a_step_and_its_text_is_not_carried() -> None:
    ep = parse_raw(
        view(
            chain(
                ("system", SYSTEM),
                ("user", TASK),
                ("assistant", "I will look around but forgot the fence"),
                ("user", "Please always provide EXACTLY ONE action in triple backticks, found 0 actions."),
                ("assistant", "```bash\nls\n```\nand also\n```bash\npwd\n```"),
                ("user", "Please always provide EXACTLY ONE action in triple backticks, found 2 actions."),
                ("assistant", "Look.\n```bash\nls\n```"),
                ("user", "<returncode>0</returncode>\n<output>\na\n</output>"),
            )
        )
    )
    assert ep.steps == [Step("Look.", Bash("ls"), "a\n", 0)]
    assert ep.counters["parse/format_error_removed"] == 2  # the reply without a block, the one with two


# --------------------------------------------------------------------------- <tool_call> dialects


def test_qwen_json_parallel_calls_and_tool_responses_in_order() -> None:
    asst = (
        "<think>Need two facts.</think>\nChecking both.\n"
        '<tool_call>\n{"name": "bash", "arguments": {"command": "ls"}}\n</tool_call>\n'
        '<tool_call>\n{"name": "edit", "arguments": "{\\"path\\": \\"a.py\\", \\"old_str\\": \\"x\\", '
        '\\"new_str\\": \\"y\\"}"}\n</tool_call>'
    )
    resp = "<tool_response>\na.py\n</tool_response>\n<tool_response>\nEdited a.py\n</tool_response>"
    ep = parse_raw(view(chain(("system", SYSTEM), ("user", TASK), ("assistant", asst), ("user", resp))))
    assert ep.steps == [
        Step("Need two facts.\n\nChecking both.", ToolCall("bash", {"command": "ls"}), "a.py", None),
        Step("", ToolCall("edit", {"path": "a.py", "old_str": "x", "new_str": "y"}), "Edited a.py", None),
    ]
    assert ep.meta.dialect == "qwen_json"


def test_glm_tool_call_with_tools_system_message() -> None:
    asst = (
        "I'll fix it.<tool_call>edit\n<arg_key>path</arg_key>\n<arg_value>/repo/a.py</arg_value>\n"
        "<arg_key>old_str</arg_key>\n<arg_value>return 1\n</arg_value>\n"
        "<arg_key>new_str</arg_key>\n<arg_value>return 2\n</arg_value>\n</tool_call>"
    )
    ep = parse_raw(
        view(
            chain(
                ("system", SYSTEM),
                ("system", "# Tools\n<tools>{...}</tools>"),
                ("user", "<pr_description>\nFix a\n</pr_description>"),
                ("assistant", asst),
                ("user", "<tool_response>\nok\n</tool_response>"),
                (
                    "assistant",
                    "<tool_call>bash<arg_key>command</arg_key><arg_value>cd /repo && pytest</arg_value></tool_call>",
                ),
                ("user", "<tool_response>\n1 passed\n</tool_response>"),
            )
        )
    )
    assert ep.steps == [
        Step(
            "I'll fix it.",
            ToolCall("edit", {"path": "/repo/a.py", "old_str": "return 1\n", "new_str": "return 2\n"}),
            "ok",
            None,
        ),
        Step("", ToolCall("bash", {"command": "cd /repo && pytest"}), "1 passed", None),
    ]
    assert ep.meta.dialect == "glm"
    assert ep.meta.repo_root == "/repo"


def test_xml_function_inside_and_outside_tool_call() -> None:
    inside = (
        "Viewing.\n<tool_call>\n<function=str_replace_editor>\n<parameter=command>\nview\n</parameter>\n"
        "<parameter=path>\n/testbed/a.py\n</parameter>\n<parameter=view_range>\n[1, 20]\n</parameter>\n"
        "</function>\n</tool_call>"
    )
    outside = (
        "Replacing.\n<function=str_replace_editor>\n<parameter=command>str_replace</parameter>\n"
        "<parameter=path>/testbed/a.py</parameter>\n<parameter=old_str>\n  x = 1\n  y = 2\n</parameter>\n"
        "<parameter=new_str>\n  x = 3\n\n</parameter>\n</function>"
    )
    ep = parse_raw(
        view(
            chain(
                ("system", SYSTEM),
                ("user", TASK),
                ("assistant", inside),
                ("user", "<tool_response>\n1\tx\n</tool_response>"),
                ("assistant", outside),
                ("user", "The file has been edited."),
            )
        )
    )
    assert ep.steps[0].call == ToolCall(
        "str_replace_editor", {"command": "view", "path": "/testbed/a.py", "view_range": [1, 20]}
    )
    assert ep.steps[0].observation == "1\tx"
    assert ep.steps[1] == Step(
        "Replacing.",
        ToolCall(
            "str_replace_editor",
            {
                "command": "str_replace",
                "path": "/testbed/a.py",
                "old_str": "  x = 1\n  y = 2",
                "new_str": "  x = 3\n",
            },
        ),
        "The file has been edited.",
        None,
    )


def test_openhands_text_execution_result_and_exit_code() -> None:
    row = {
        "instance_id": "astropy__astropy-12907",
        "messages": [
            {"role": "system", "content": "You are OpenHands agent."},
            {"role": "user", "content": TASK},
            {
                "role": "assistant",
                "content": "Let me look.\n<function=execute_bash>\n<parameter=command>ls /workspace/django</parameter>\n</function>",
            },
            {
                "role": "user",
                "content": "EXECUTION RESULT of [execute_bash]:\nsetup.py\n[The command completed with exit code 0.]\n[Current working directory: /workspace/django]\n[Python interpreter: /usr/bin/python]\n[Command finished with exit code 2]",
            },
            {
                "role": "assistant",
                "content": "<function=think>\n<parameter=thought>Plan</parameter>\n</function>",
            },
            {"role": "user", "content": "EXECUTION RESULT of [think]:\nYour thought has been logged."},
            {"role": "assistant", "content": "Done.\n<function=finish>\n<parameter=message>ok</parameter>\n"},
        ],
    }
    ep = parse_raw(
        RawRun(
            "swelego:resolved-00000-of-00003.parquet#row=7",
            "SWE-Lego",
            "swelego",
            None,
            {**row, "messages": orjson.dumps(row["messages"]).decode()},
            10,
            resolved_hint="resolved",
        )
    )
    assert ep.steps == [
        Step(
            "Let me look.",
            ToolCall("execute_bash", {"command": "ls /workspace/django"}),
            "setup.py\n[The command completed with exit code 0.]",
            2,
        ),
        Step("", ToolCall("think", {"thought": "Plan"}), "Your thought has been logged.", None),
        Step("Done.", ToolCall("finish", {"message": "ok"}), "", None),  # stop word ate </function>
    ]
    assert ep.meta.dialect == "openhands" and ep.meta.harness == "openhands"
    assert ep.meta.resolved == "resolved" and ep.meta.submitted is True
    assert ep.task.repo == "astropy__astropy" and ep.task.pool == "SWE-Lego"
    assert ep.task.base_commit is None


def test_extract_calls_thought_is_text_before_the_call() -> None:
    thought, calls, dialect = extract_calls("THOUGHT: a\nb\n\n```bash\nls -la\n```\ntrailing words")
    assert (thought, calls, dialect) == ("a\nb", [Bash("ls -la")], "bash")
    assert extract_calls("just talking") == ("just talking", [], "none")
    assert extract_calls("t\n```\necho hi\n```", bare_fence=True) == ("t", [Bash("echo hi")], "ticks")
    assert extract_calls("t\n```\necho hi\n```")[1] == []  # bare fences only for SWE-smith ticks


def test_split_tool_responses() -> None:
    assert split_tool_responses("no blocks") is None
    assert split_tool_responses("<tool_response>\n\n</tool_response><tool_response>x</tool_response>") == [
        "",
        "x",
    ]


def test_malformed_tool_call_json_is_a_parse_error() -> None:
    with pytest.raises(ParseError) as e:
        parse_raw(
            view(
                chain(
                    ("system", SYSTEM),
                    ("user", TASK),
                    ("assistant", '<tool_call>{"name": "bash", "arguments": {</tool_call>'),
                    ("user", "<tool_response>x</tool_response>"),
                )
            )
        )
    assert e.value.reason == "bad_tool_call"


# --------------------------------------------------------------------------- view graphs


def test_longest_path_picks_deepest_leaf_then_highest_index() -> None:
    #     0 - 1 - 2 - 3          (leaf 3, depth 4)
    #          \- 4 - 5          (leaf 5, depth 4: tie, higher index wins)
    assert longest_path([None, 0, 1, 2, 1, 4]) == [0, 1, 4, 5]
    assert longest_path([None, 0, 1, 2, 1]) == [0, 1, 2, 3]


def test_longest_path_survives_cycles_and_bad_parents() -> None:
    assert longest_path([1, 2, 0]) != []  # a pure cycle still yields a finite path
    path = longest_path([None, 0, 3, 2, 1])
    assert len(path) == len(set(path))


def test_view_with_fork_uses_longest_branch() -> None:
    nodes = chain(
        ("system", SYSTEM),
        ("user", TASK),
        ("assistant", "```bash\nls\n```"),
        ("user", "<returncode>0</returncode>\n<output>\na\n</output>"),
    )
    nodes.append({"parent": 1, "role": "assistant", "content": "```bash\npwd\n```"})  # shorter branch
    ep = parse_raw(view(nodes))
    assert [s.call for s in ep.steps] == [Bash("ls")]


@pytest.mark.parametrize("parent", [99, -1, "x", 4])
def test_view_with_a_parent_naming_no_node_or_a_cycle_is_bad_graph(parent: object) -> None:
    """A corrupt node graph is dropped (parse/bad_graph), never repaired into a guessed path:
    a parent out of range, of the wrong type, the node itself (index 4), or a cycle."""
    nodes = chain(
        ("system", SYSTEM),
        ("user", TASK),
        ("assistant", "```bash\nls\n```"),
        ("user", "<returncode>0</returncode>\n<output>\na\n</output>"),
    )
    nodes.append({"parent": parent, "role": "assistant", "content": "```bash\npwd\n```"})
    with pytest.raises(ParseError) as exc:
        parse_raw(view(nodes))
    assert exc.value.reason == "bad_graph"
    looped = chain(("system", SYSTEM), ("user", TASK), ("assistant", "```bash\nls\n```"))
    looped[0]["parent"] = 2  # 0 -> 2 -> 1 -> 0
    with pytest.raises(ParseError) as exc:
        parse_raw(view(looped))
    assert exc.value.reason == "bad_graph" and "cycle" in exc.value.detail


# --------------------------------------------------------------------------- traces


def trace(nodes: list[dict[str, Any]], **task: Any) -> RawRun:
    env = {
        "schema": 1,
        "rollout_id": "ro1",
        "source": "scaleswe",
        "task": {
            "uid": "u1",
            "sid": "psf__requests-2317",
            "repo": "psf/requests",
            "language": "python",
            **task,
        },
        "policy": {
            "id": "teacher_bashtool",
            "model": "engy/qwen3.8-27b",
            "harness": "bash",
            "action_kind": "tool_call",
        },
        "trace": {
            "nodes": nodes,
            "rewards": {"solved": {"score": 0.0, "weight": 1}},
            "stop_condition": "agent_completed",
        },
    }
    return RawRun("file:///c/traces/chunks/a.jsonl.gz#L1", "Affine corpus", "trace", None, env, 10)


def test_trace_structured_tool_calls_both_shapes_matched_by_id() -> None:
    nodes = [
        {"message": {"role": "system", "content": "sys"}},
        {
            "message": {
                "role": "user",
                "content": [{"type": "text", "text": "<pr_description>\nFix it\n</pr_description>"}],
            }
        },
        {
            "message": {
                "role": "assistant",
                "content": "Two things.",
                "tool_calls": [
                    {"id": "c1", "name": "bash", "arguments": '{"command": "ls"}'},
                    {
                        "id": "c2",
                        "type": "function",
                        "function": {"name": "Read", "arguments": {"file_path": "/app/x.py"}},
                    },
                ],
            }
        },
        {"message": {"role": "tool", "tool_call_id": "c2", "content": "1 import os"}},
        {"message": {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": "x.py"}]}},
        {
            "message": {
                "role": "assistant",
                "content": "",
                "tool_calls": [{"id": "c3", "name": "finish", "arguments": "{}"}],
            }
        },
    ]
    ep = parse_raw(trace(nodes, base_commit="0123456789abcdef0123456789abcdef01234567"))
    assert ep.steps == [
        Step("Two things.", ToolCall("bash", {"command": "ls"}, "c1"), "x.py", None),
        Step("", ToolCall("Read", {"file_path": "/app/x.py"}, "c2"), "1 import os", None),
        Step("", ToolCall("finish", {}, "c3"), "", None),
    ]
    assert ep.meta.resolved == "not resolved"
    assert ep.task.base_commit == "0123456789abcdef0123456789abcdef01234567"
    assert ep.task.instance_id == "psf__requests-2317" and ep.task.pool == "scaleswe"
    assert ep.task.problem_statement == "Fix it"
    assert ep.meta.dialect == "tool_calls" and ep.meta.submitted is True


def test_trace_results_without_ids_match_in_order_and_rewards_resolve() -> None:
    nodes = [
        {
            "message": {
                "role": "user",
                "content": "Please solve this issue: crash on empty input\n\nYou can execute bash commands",
            }
        },
        {
            "message": {
                "role": "assistant",
                "content": "a",
                "tool_calls": [
                    {"name": "bash", "arguments": {"command": "echo 1"}},
                    {"name": "bash", "arguments": {"command": "echo 2"}},
                ],
            }
        },
        {"message": {"role": "tool", "content": "1"}},
        {"message": {"role": "tool", "content": "2"}},
    ]
    run = trace(nodes)
    run.payload["trace"]["rewards"] = {"solved": {"score": 1.0}}
    ep = parse_raw(run)
    assert [(s.call, s.observation) for s in ep.steps] == [
        (ToolCall("bash", {"command": "echo 1"}), "1"),
        (ToolCall("bash", {"command": "echo 2"}), "2"),
    ]
    assert ep.meta.resolved == "resolved"
    assert ep.task.problem_statement == "crash on empty input"


# --------------------------------------------------------------------------- problem statements


@pytest.mark.parametrize(
    ("text", "expected", "fallback"),
    [
        (
            "<pr_description>\nConsider the following PR description:\nBug X\n</pr_description>\n<instructions>",
            "Bug X",
            False,
        ),
        (TASK, "QuerySet.count() is wrong", False),
        (
            "We're currently solving the following issue within our repository. Here's the issue text:\nISSUE:\nBug Y\n\nINSTRUCTIONS:\nNow",
            "Bug Y",
            False,
        ),
        ("Please solve this issue: Bug Z\n\nYou can execute bash commands and edit files", "Bug Z", False),
        ("Make the 2048 game.", "Make the 2048 game.", True),
    ],
)
def test_problem_statement_templates(text: str, expected: str, fallback: bool) -> None:
    assert extract_problem(text) == (expected, fallback)


def test_fallback_is_counted() -> None:
    ep = parse_raw(
        view(
            chain(
                ("system", SYSTEM),
                ("user", "Make it faster."),
                ("assistant", "```bash\nls\n```"),
                ("user", "<returncode>0</returncode>\n<output>\n</output>"),
            )
        )
    )
    assert ep.task.problem_statement == "Make it faster."
    assert ep.counters["parse/problem_statement_fallback"] == 1


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("run", "reason"),
    [
        (RawRun("u", "x", "nope", None, {}, 0), "unknown_kind"),
        (view("not a list"), "bad_json"),  # type: ignore[arg-type]  # lists may come as JSON text
        (view(7), "bad_shape"),  # type: ignore[arg-type]
        (view([]), "no_steps"),
        (view(chain(("system", SYSTEM), ("user", TASK), ("assistant", "no action at all"))), "no_steps"),
        (view(chain(("system", SYSTEM), ("assistant", "```bash\nls\n```"))), "no_task"),
        (view([{"parent": None, "role": 5, "content": "x"}]), "bad_shape"),
        (view(chain(("system", SYSTEM), ("user", TASK)), instance_id=None, traj_id=None), "missing_field"),
    ],
)
def test_unreadable_runs_raise_parse_error_with_reason(run: RawRun, reason: str) -> None:
    with pytest.raises(ParseError) as e:
        parse_raw(run)
    assert e.value.reason == reason and e.value.stage == "parse"
