"""Parsers on the real community files in tests/fixtures/real, checked turn by turn by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.core.episode import Bash, Episode, Quarantined, RawRun, ToolCall
from pipeline.parsers import parse_raw
from pipeline.parsers.files import detect_format, iter_trajectory_file
from tests.conftest import REAL, SAMPLE_FILES

SAMPLES = REAL
FILES = sorted(SAMPLE_FILES)


@pytest.fixture(scope="module")
def samples() -> Path:
    return SAMPLES


def runs(samples: Path, name: str) -> list[RawRun | Quarantined]:
    return list(iter_trajectory_file(samples / name))


def episode(samples: Path, name: str, row: int = 0) -> Episode:
    r = runs(samples, name)[row]
    assert isinstance(r, RawRun)
    return parse_raw(r)


@pytest.mark.parametrize("name", FILES)
def test_every_sample_file_is_read(samples: Path, name: str) -> None:
    got = runs(samples, name)
    assert got, name
    for r in got:
        if name == "swesmith-task-instance-pandas-pr_53652.json":
            # a SWE-smith task record, not a run: quarantined with its reason, never parsed
            assert isinstance(r, Quarantined) and r.reason == "unknown_format"
            assert "task record" in r.detail
            continue
        assert isinstance(r, RawRun)
        ep = parse_raw(r)
        assert ep.steps and ep.task.problem_statement
        assert ep.meta.submitted, "every sample ends with its submit/finish call"


def test_detected_formats(samples: Path) -> None:
    expected = {
        "mini-swe-agent-v1-github-issue.traj.json": ("mini-swe-agent", "miniswe"),
        "mini-swe-agent-v2-github-issue.traj.json": ("mini-swe-agent", "miniswe"),
        "openhands-events-basic.json": ("OpenHands", "openhands"),
        "sweagent-0x-gpt4-pydicom-1458.traj": ("SWE-agent", "sweagent"),
        "sweagent-demo-function-calling-simple.traj": ("SWE-agent", "sweagent"),
        "sweagent-demo-textaction-window-marshmallow-1867.traj": ("SWE-agent", "sweagent"),
        "sweagent-swesmith-pandas-pr_53856.traj": ("SWE-agent", "sweagent"),
        "swesmith-ft-xml-example.jsonl": ("SWE-smith", "swesmith"),
    }
    for name, (origin, kind) in expected.items():
        got = runs(samples, name)
        assert all(
            isinstance(r, RawRun) and r.origin == origin and r.kind == kind and r.epoch is None for r in got
        ), name
    assert [r.source_uid for r in runs(samples, "swesmith-ft-xml-example.jsonl")] == [
        "swesmith-ft-xml-example.jsonl#L1",
        "swesmith-ft-xml-example.jsonl#L2",
        "swesmith-ft-xml-example.jsonl#L3",
    ]
    assert runs(samples, "openhands-events-basic.json")[0].source_uid == "openhands-events-basic.json#row=0"
    assert detect_format({"instance_id": "x", "patch": "", "FAIL_TO_PASS": []}) is None


# --------------------------------------------------------------------------- mini-swe-agent


@pytest.mark.parametrize(
    "name", ["mini-swe-agent-v1-github-issue.traj.json", "mini-swe-agent-v2-github-issue.traj.json"]
)
def test_mini_swe_v1_and_v2_turn_by_turn(samples: Path, name: str) -> None:
    ep = episode(samples, name)
    assert ep.meta.dialect == "bash" and ep.meta.harness == "mini-swe-agent"
    assert ep.task.problem_statement.startswith("GitHub Issue: SyntaxError: invalid syntax\n\nI'm running")
    assert ep.task.problem_statement.endswith("SyntaxError: invalid syntax\r\n```")
    assert len(ep.steps) == 10
    s0, s1, s3 = ep.steps[0], ep.steps[1], ep.steps[3]
    assert s0.thought == (
        "I'll help you solve this issue. Let me first examine the content of the file "
        "that's causing the syntax error."
    )
    assert s0.call == Bash(
        "cat /Users/fuchur/Documents/24/git_sync/swe-agent-test-repo/tests/./missing_colon.py"
    )
    assert s0.observation == (
        "cat: /Users/fuchur/Documents/24/git_sync/swe-agent-test-repo/tests/./"
        "missing_colon.py: No such file or directory\n"
    )
    assert s0.returncode == 1
    assert s1.call == Bash("ls -la") and s1.returncode == 0 and s1.observation.startswith("total 44\n")
    assert s3.call == Bash("cat tests/missing_colon.py")
    assert s3.observation == (
        "#!/usr/bin/env python3\n\n\ndef division(a: float, b: float) -> float\n"
        '    return a/b\n\n\nif __name__ == "__main__":\n    print(division(123, 15))\n\n'
    )
    last = ep.steps[-1]
    marker = "MINI_SWE_AGENT_FINAL_OUTPUT" if "v1" in name else "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
    assert last.call == Bash(f"echo {marker} && git add -A && git diff --cached")
    assert last.observation.startswith("diff --git a/tests/missing_colon.py b/tests/missing_colon.py\n")
    assert last.returncode is None


# --------------------------------------------------------------------------- SWE-agent


def test_sweagent_0x_text_actions(samples: Path) -> None:
    ep = episode(samples, "sweagent-0x-gpt4-pydicom-1458.traj")
    assert ep.meta.dialect == "sweagent_text" and ep.meta.harness == "swe-agent"
    assert ep.meta.repo_root == "/pydicom__pydicom"
    assert ep.task.problem_statement.startswith(
        "Pixel Representation attribute should be optional for pixel data handler\n"
    )
    assert len(ep.steps) == 12
    s0, s1, s2 = ep.steps[:3]
    assert s0.thought.startswith("First, I'll create a new Python script to reproduce the bug")
    assert s0.call == ToolCall("create", {"args": "reproduce_bug.py", "body": ""})
    assert s0.observation == "[File: /pydicom__pydicom/reproduce_bug.py (1 lines total)]\n1:\n"
    assert s0.returncode is None
    assert isinstance(s1.call, ToolCall) and s1.call.name == "edit" and s1.call.args["args"] == "1:1"
    body = s1.call.args["body"]
    assert body.startswith("import numpy as np\nfrom pydicom.dataset import Dataset, FileMetaDataset\n")
    assert "end_of_edit" not in body and body.endswith("result)\n")  # its lines, each with its newline
    assert s1.observation.startswith(
        "[File: /pydicom__pydicom/reproduce_bug.py (18 lines total)]\n1:import numpy as np"
    )
    assert s2.call == Bash("python reproduce_bug.py")
    assert s2.observation.startswith(
        'Traceback (most recent call last):\n  File "/pydicom__pydicom/reproduce_bug.py"'
    )
    assert ep.steps[-1].call == ToolCall("submit", {"args": "", "body": ""})


def test_sweagent_windowed_text_actions_in_command_tags(samples: Path) -> None:
    ep = episode(samples, "sweagent-demo-textaction-window-marshmallow-1867.traj")
    assert ep.task.instance_id == "marshmallow-code__marshmallow-1867"
    assert ep.task.repo == "marshmallow-code__marshmallow"
    assert ep.task.base_commit == "bfd2593d4b416122e30cdefe0c72d322ef471611"
    assert ep.meta.model == "gpt-4o"
    assert ep.task.problem_statement.startswith("TimeDelta serialization precision\nHi there!")
    assert ep.steps[1].thought == "Now let's paste in the example code from the issue."
    assert ep.steps[1].call == ToolCall(
        "edit",
        {
            "args": "1:1",
            "body": (
                "from marshmallow.fields import TimeDelta\nfrom datetime import timedelta\n\n"
                'td_field = TimeDelta(precision="milliseconds")\n\nobj = dict()\n'
                'obj["td_field"] = timedelta(milliseconds=345)\n\nprint(td_field.serialize("td_field", obj))\n'
            ),
        },
    )
    assert ep.steps[2].call == Bash("python reproduce.py") and ep.steps[2].observation == "344\n"
    assert ep.steps[3].call == Bash("ls -F")
    assert ep.steps[-1].call == ToolCall("submit", {"args": "", "body": ""})


def test_sweagent_function_calling_history(samples: Path) -> None:
    ep = episode(samples, "sweagent-demo-function-calling-simple.traj")
    assert ep.meta.dialect == "tool_calls" and ep.meta.repo_root == "/SWE-agent__test-repo"
    calls = [s.call for s in ep.steps]
    assert calls == [
        ToolCall("find_file", {"file_name": "missing_colon.py"}, "call_PbWErNIge3YTrli3fiVvmIid"),
        ToolCall("open", {"path": "tests/missing_colon.py"}, "call_upNLxh7rBcDH9w5XiNdoAS0I"),
        ToolCall(
            "edit",
            {
                "search": "def division(a: float, b: float) -> float",
                "replace": "def division(a: float, b: float) -> float:",
            },
            "call_hIiDKXAXZl4qMHV6RRXvil4u",
        ),
        ToolCall("bash", {"command": "python tests/missing_colon.py"}, "call_5O339epJ3rKjEal3Kuvpj9bM"),
        ToolCall("submit", {}, "call_6zuFhIfpOAi1jAiD2QHMmh6S"),
    ]
    # the window footer "(Open file: …)(Current directory: …)bash-$" is SWE-agent's, not output
    # and SWE-agent 1.x stripped the final newline the tool and the script printed: put back
    assert ep.steps[0].observation == (
        'Found 1 matches for "missing_colon.py" in /SWE-agent__test-repo:\n'
        "/SWE-agent__test-repo/tests/missing_colon.py\n"
    )
    assert ep.steps[3].observation == "8.2\n"
    assert ep.counters["parse/sweagent_newline_restored"] == 4
    assert ep.steps[0].thought.startswith(
        "The `SyntaxError` in `missing_colon.py` is likely due to a missing colon"
    )


def test_sweagent_1x_swesmith_run(samples: Path) -> None:
    ep = episode(samples, "sweagent-swesmith-pandas-pr_53856.traj")
    assert ep.task.instance_id == "pandas-dev__pandas.95280573.pr_53856"
    assert ep.task.repo == "pandas-dev__pandas" and ep.task.pool == "swesmith"
    assert ep.task.base_commit == "95280573"  # the config's base_commit is a branch name, not a hash
    assert ep.meta.model == "claude-3-7-sonnet-20250219" and ep.meta.repo_root == "/testbed"
    assert ep.task.problem_statement.startswith("BUG: to_sql fails with arrow date column\n")
    s0, s1 = ep.steps[:2]
    assert s0.call == ToolCall(
        "bash",
        {
            "command": 'find /testbed -type f -name "*.py" | grep -v "__pycache__" '
            '| grep -E "sql|arrow" | sort'
        },
        "toolu_01Crr48ue2quNQaMjWM77nUH",
    )
    assert s0.observation.startswith("/testbed/asv_bench/benchmarks/io/sql.py\n")  # OBSERVATION: prefix gone
    assert s1.call == ToolCall(
        "str_replace_editor",
        {"command": "view", "path": "/testbed/pandas/io/sql.py"},
        "toolu_01Xq8TJG1DyGFqpkt8RBRSTw",
    )
    assert s1.observation.startswith("<NOTE>This file is too large to display entirely.")
    assert ep.steps[-1].call == ToolCall("submit", {}, "toolu_01QpywnCGvvqeq66pn4f8DEJ")
    assert ep.steps[-1].observation.startswith("diff --git a/pandas/io/sql.py b/pandas/io/sql.py\n")


# --------------------------------------------------------------------------- SWE-smith


def test_swesmith_xml_row_pandas(samples: Path) -> None:
    ep = episode(samples, "swesmith-ft-xml-example.jsonl", 0)
    assert ep.meta.dialect == "xml" and ep.meta.origin == "SWE-smith" and ep.meta.harness == "swe-smith"
    assert ep.task.instance_id == "pandas-dev__pandas.95280573.pr_53652" and ep.task.base_commit == "95280573"
    assert ep.task.language == "python" and ep.meta.repo_root == "/testbed"
    assert ep.task.problem_statement.startswith(
        "BUG: [pyarrow] AttributeError: 'Index' object has no attribute 'freq'\n"
    )
    assert len(ep.steps) == 37
    s0, s1 = ep.steps[:2]
    assert s0.thought.startswith("I'll help you implement the necessary changes to fix the issue described")
    assert s0.call == ToolCall(
        "bash",
        {
            "command": 'find /testbed -type f -name "*.py" | grep -v "__pycache__" | '
            'grep -v "test_" | head -20'
        },
    )
    assert s0.observation.startswith("/testbed/scripts/pandas_errors_documented.py\n")
    assert s1.thought == "Let's look at the specific file mentioned in the PR description:"
    assert s1.call == ToolCall(
        "str_replace_editor",
        {"command": "view", "path": "/testbed/pandas/core/indexes/base.py", "view_range": [6035, 6050]},
    )
    assert s1.observation.startswith(
        "Here's the result of running `cat -n` on /testbed/pandas/core/indexes/base.py:\n  6035"
    )
    edit = ep.steps[28].call
    assert isinstance(edit, ToolCall) and edit.args["command"] == "str_replace"
    # SWE-smith wraps multi-line values in one newline each side; the values are unwrapped
    assert edit.args["old_str"].startswith('        if keyarr.dtype.kind in "mM":\n')
    assert edit.args["old_str"].endswith("keyarr = keyarr._with_freq(None)")
    assert ep.steps[-1].call == ToolCall("submit", {}) and ep.steps[-1].observation == ""


def test_swesmith_xml_row_pydantic(samples: Path) -> None:
    ep = episode(samples, "swesmith-ft-xml-example.jsonl", 2)
    assert ep.task.instance_id == "pydantic__pydantic.acb0f10f.pr_8316"
    assert ep.task.problem_statement.startswith("`to_snake` alias generator bug -- great first issue\n")
    s0, s1, s2 = ep.steps[:3]
    assert s0.call == ToolCall("bash", {"command": 'find /testbed -type f -name "*.py" | grep -i alias'})
    assert s0.observation.startswith("/testbed/pydantic/alias_generators.py\n/testbed/pydantic/aliases.py\n")
    assert s1.call == ToolCall(
        "str_replace_editor", {"command": "view", "path": "/testbed/pydantic/alias_generators.py"}
    )
    assert isinstance(s2.call, ToolCall) and s2.call.args["command"] == "create"
    assert s2.call.args["path"] == "/testbed/reproduce_error.py"
    assert s2.call.args["file_text"].startswith("from pydantic.alias_generators import")
    assert (
        s2.observation == "File created successfully at: /testbed/reproduce_error.py\n"
    )  # newline SWE-agent stripped
    assert ep.steps[-1].call == ToolCall("submit", {})


def test_swesmith_moto_row_observation_prefix(samples: Path) -> None:
    ep = episode(samples, "swesmith-ft-xml-example.jsonl", 1)
    assert ep.steps[0].observation.startswith("/testbed/docs/conf.py\n/testbed/moto/__init__.py")


# --------------------------------------------------------------------------- OpenHands


def test_openhands_event_stream(samples: Path) -> None:
    ep = episode(samples, "openhands-events-basic.json")
    assert ep.meta.dialect == "events" and ep.meta.harness == "openhands"
    assert ep.meta.model == "claude-3-5-sonnet-20241022" and ep.meta.repo_root == "/workspace"
    assert ep.task.problem_statement == (
        "Please create a simple 2048 game. No need to run it. "
        "Please finish the interaction after your finish coding."
    )
    assert ep.counters["parse/problem_statement_fallback"] == 1
    create, finish = ep.steps
    assert create.thought == (
        "I'll help you create a simple 2048 game in Python. "
        "I'll use the str_replace_editor to create the file."
    )
    assert isinstance(create.call, ToolCall) and create.call.name == "str_replace_editor"
    assert create.call.call_id == "toolu_017nBp7UfiGqyrA7j77HgtFP"
    assert create.call.args["command"] == "create" and create.call.args["path"] == "/workspace/game_2048.py"
    assert create.call.args["file_text"].startswith("import random\nimport keyboard\n\nclass Game2048:\n")
    assert create.observation == "File created successfully at: /workspace/game_2048.py"
    assert finish.call == ToolCall("finish", {}, "toolu_01BUKu3B7nY574atNECkBiFk")
    assert finish.thought.startswith("I've created a simple implementation of the 2048 game")


def test_pty_newlines_are_restored_only_where_every_line_feed_follows_a_cr() -> None:
    from pipeline.core.episode import Meta, Step, Task
    from pipeline.parsers.observations import restore_pty_newlines

    obs = ["a\r\nb\r\n", "own crlf\r\r\nnext\r\n", "mixed\r\nbare\n", "one line", "progress\rdone\r\n"]
    ep = Episode(
        Task("i", "r", "t", "p", "python"),
        Meta("o", "h", "m", "u", "d"),
        [Step("", Bash("x"), o) for o in obs],
    )
    restore_pty_newlines(ep)
    assert [s.observation for s in ep.steps] == [
        "a\nb\n",
        "own crlf\r\nnext\n",
        "mixed\r\nbare\n",
        "one line",
        "progress\rdone\n",
    ]
    assert ep.counters["parse/pty_newlines_restored"] == 3


def test_sweagent_action_with_two_edit_blocks_is_its_first_edit() -> None:
    """SWE-agent ran only the first ``edit`` block of an action that holds two (its report after
    ``edit 1:1`` then ``edit 66:66`` counts the file's 66 lines: the second block, 7 lines for
    one, was not applied), so the call is the first block; the second is no text of the file."""
    from pipeline.parsers.sweagent import text_action

    action = (
        "edit 1:1\nfrom django.core.management import call_command\nend_of_edit\n\n"
        "edit 66:66\nif __name__ == '__main__':\n    test_reproduce()\nend_of_edit\n"
    )
    assert text_action(action) == ToolCall(
        "edit", {"args": "1:1", "body": "from django.core.management import call_command\n"}
    )
    assert text_action("edit 3:3\n    x = 1\nend_of_edit  ") == ToolCall(
        "edit", {"args": "3:3", "body": "    x = 1\n"}
    )
    assert text_action("edit 3:3\nend_of_edit") == ToolCall("edit", {"args": "3:3", "body": ""})


def test_sweagent_edit_body_is_its_lines_as_the_heredoc_feeds_them() -> None:
    """An edit's replacement is the lines SWE-agent's edit reads from its heredoc, each with its
    newline: no line at all (the range is deleted) is not one empty line."""
    from pipeline.parsers.sweagent import text_action

    assert text_action("edit 3:3\nend_of_edit").args["body"] == ""  # deletes line 3
    assert text_action("edit 3:3\n\nend_of_edit").args["body"] == "\n"  # one empty line
    assert text_action("edit 3:3\na\n\nend_of_edit").args["body"] == "a\n\n"  # "a", then an empty line


def test_a_runs_own_action_regex_reads_its_commands() -> None:
    """A mini-swe-agent fork whose config's ``agent.action_regex`` accepts an indented closing
    fence ran its indented final submit (the next message is the diff): read with the run's own
    regex, the run ends with that submit; a regex that is not one group around a fence is ignored."""
    from pipeline.parsers.dialects import action_regex, extract_calls

    own = action_regex("\\s*```bash\\s*\\n(.*?)\\n\\s*```")
    reply = "Submit.\n    ```bash\n    echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A\n    ```"
    assert extract_calls(reply)[1] == []  # mini's default: no action
    assert extract_calls(reply, fence_re=own)[1] == [
        Bash("    echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A")
    ]
    assert (
        action_regex("```bash(.*)(x)```") is None
        and action_regex("(unclosed") is None
        and action_regex(3) is None
    )
    ep = episode(REAL, "mini-v1-cam-indented-fence-django-12209.traj.json")
    assert (
        isinstance(ep.steps[-1].call, Bash)
        and "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT" in ep.steps[-1].call.command
    )
    assert ep.steps[-1].observation.startswith("diff --git a/django/db/models/base.py")
