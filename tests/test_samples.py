"""End to end on the real samples in tests/fixtures/real: file → RawRun → Episode → published mini-swe v1 messages.

Every sample that holds runs converts (no convert-stage drop), passes the strict validator and is
read back by the real mini-swe-agent 1.17.5 parser; at least two files per format (one for
OpenHands, the only such sample) are checked turn by turn against text written by hand.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("MSWEA_SILENT_STARTUP", "1")
os.environ.setdefault("MSWEA_GLOBAL_CONFIG_DIR", tempfile.mkdtemp(prefix="mswea-"))

from pipeline.convert import SUBMIT_COMMAND, Converted, convert_episode
from pipeline.core.episode import ConvertError, Episode, RawRun
from pipeline.parsers import parse_raw
from pipeline.parsers.files import iter_trajectory_file
from pipeline.stages.validate import validate_messages
from tests.conftest import REAL, SAMPLE_FILES

SAMPLES = REAL
FILES = sorted(SAMPLE_FILES)
NOT_RUNS = {"swesmith-task-instance-pandas-pr_53652.json"}  # a task record, quarantined by design
# runs whose conversion is a counted drop (none: SWE-agent's abbreviated view of a large file, once
# dropped, is the awk that prints it)
DROPPED: dict[str, str] = {}


def episode_of(samples: Path, name: str, row: int = 0) -> Episode:
    runs = [r for r in iter_trajectory_file(samples / name) if isinstance(r, RawRun)]
    return parse_raw(runs[row])


def converted(samples: Path, name: str, row: int = 0) -> Converted:
    return convert_episode(episode_of(samples, name, row))


def real_agent() -> Any:
    yaml = pytest.importorskip("yaml")
    mini_config = pytest.importorskip("minisweagent.config")
    mini_agent = pytest.importorskip("minisweagent.agents.default")
    from minisweagent.environments.local import LocalEnvironment
    from minisweagent.models.test_models import DeterministicModel

    cfg = yaml.safe_load(mini_config.get_config_path("swebench").read_text())["agent"]
    return mini_agent.DefaultAgent(DeterministicModel(outputs=[]), LocalEnvironment(), **cfg)


@pytest.fixture(scope="module")
def samples() -> Path:
    return SAMPLES


@pytest.mark.parametrize("name", FILES)
def test_every_sample_converts_validates_and_parses_with_mini_swe_agent(samples: Path, name: str) -> None:
    runs = list(iter_trajectory_file(samples / name))
    raws = [r for r in runs if isinstance(r, RawRun)]
    if name in NOT_RUNS:
        assert not raws and [q.reason for q in runs] == ["unknown_format"]  # type: ignore[union-attr]
        return
    assert raws and len(raws) == len(runs)
    agent = real_agent()
    for r in raws:
        ep = parse_raw(r)
        if name in DROPPED:
            with pytest.raises(ConvertError) as err:
                convert_episode(ep)
            assert err.value.reason == DROPPED[name]
            continue
        conv = convert_episode(ep)  # raises ConvertError on any convert drop: none accepted
        assert (
            validate_messages(
                conv.messages,
                conv.commands,
                outputs=conv.outputs,
                returncodes=conv.returncodes,
                problem_statement=ep.task.problem_statement,
                submitted=conv.submitted,
            )
            == []
        )
        for t, cmd in enumerate(conv.commands):
            assert agent.parse_action({"content": conv.messages[2 + 2 * t]["content"]})["action"] == cmd
        # every sample submits; one whose record holds no patch ends, unsubmitted, before its submit
        if conv.counters["convert/submission_unknown"]:
            assert not conv.submitted and SUBMIT_COMMAND not in conv.commands
        else:
            assert conv.submitted and conv.commands[-1] == SUBMIT_COMMAND


def test_mini_swe_v1_first_published_turns(samples: Path) -> None:
    conv = converted(samples, "mini-swe-agent-v1-github-issue.traj.json")
    assert conv.messages[2]["content"] == (
        "THOUGHT: I'll help you solve this issue. Let me first examine the content of the file that's causing "
        "the syntax error.\n\n```bash\ncat /Users/fuchur/Documents/24/git_sync/swe-agent-test-repo/tests/./"
        "missing_colon.py\n```"
    )
    assert conv.messages[3]["content"] == (
        "<returncode>1</returncode>\n<output>\ncat: /Users/fuchur/Documents/24/git_sync/swe-agent-test-repo/"
        "tests/./missing_colon.py: No such file or directory\n</output>"
    )
    assert conv.messages[4]["content"] == (
        "THOUGHT: I need to find the correct path to the file. Let me check "
        "the current directory structure:\n\n```bash\nls -la\n```"
    )
    assert conv.commands[:3] == [
        "cat /Users/fuchur/Documents/24/git_sync/swe-agent-test-repo/tests/./missing_colon.py",
        "ls -la",
        "ls -la tests/",
    ]
    assert conv.returncodes[:3] == [1, 0, 0]
    assert conv.submitted


def test_mini_swe_v2_fence_is_published_as_bash(samples: Path) -> None:
    v1 = converted(samples, "mini-swe-agent-v1-github-issue.traj.json")
    v2 = converted(samples, "mini-swe-agent-v2-github-issue.traj.json")
    assert v2.messages[2:6] == v1.messages[2:6]
    assert "mswea_bash_command" not in "".join(m["content"] for m in v2.messages[2:])


def test_swesmith_xml_first_published_turns(samples: Path) -> None:
    conv = converted(samples, "swesmith-ft-xml-example.jsonl", 2)
    assert conv.commands[0] == 'find /testbed -type f -name "*.py" | grep -i alias'
    assert conv.messages[2]["content"].startswith(
        "THOUGHT: I'll help you implement the necessary changes to fix the `to_snake` alias generator bug"
    )
    assert conv.messages[2]["content"].endswith(
        '```bash\nfind /testbed -type f -name "*.py" | grep -i alias\n```'
    )
    assert conv.messages[3]["content"].startswith(
        "<returncode>0</returncode>\n<output>\n/testbed/pydantic/alias_generators.py\n/testbed/pydantic/aliases.py\n"
    )
    assert conv.messages[4]["content"].endswith(
        "```bash\ncat -n '/testbed/pydantic/alias_generators.py'\n```"
    )
    assert not conv.submitted and conv.counters["convert/submission_unknown"] == 1  # the row holds no patch


def test_sweagent_1x_first_turns_and_the_abbreviated_view(samples: Path) -> None:
    ep = episode_of(samples, "sweagent-swesmith-pandas-pr_53856.traj")
    assert ep.steps[0].observation.startswith("/testbed/asv_bench/benchmarks/io/sql.py\n")
    assert "OBSERVATION:" not in ep.steps[0].observation
    assert "<response clipped>" in ep.steps[1].observation  # the abbreviated view of pandas/io/sql.py
    conv = convert_episode(ep)
    assert conv.commands[1].startswith("awk -v E='98-105 ")
    assert conv.outputs[1].startswith('     1 """\n') and "<NOTE>" not in conv.outputs[1]


def test_openhands_events_first_published_turn(samples: Path) -> None:
    conv = converted(samples, "openhands-events-basic.json")
    assert conv.messages[2]["content"].startswith(
        "THOUGHT: I'll help you create a simple 2048 game in Python. I'll use the str_replace_editor to create "
        "the file.\n\n```bash\n"
    )
    assert "/testbed/game_2048.py" in conv.commands[0] and "/workspace" not in conv.commands[0]
    assert conv.outputs[0] == "File created successfully at: /testbed/game_2048.py"
    # the session finishes without a recorded patch: it ends, unsubmitted, before the finish
    assert not conv.submitted and conv.counters["convert/submission_unknown"] == 1


# ------------------------------------------------------------------ SWE-agent (4 files, 3 shapes)


def test_sweagent_function_calling_published_turns(samples: Path) -> None:
    """1.x structured windowed tools: find_file(file_name), open(path), edit(search, replace)."""
    conv = converted(samples, "sweagent-demo-function-calling-simple.traj")
    assert conv.commands[0] == "find '/testbed' -type f -name 'missing_colon.py'"
    assert conv.messages[2]["content"].startswith(
        "THOUGHT: The `SyntaxError` in `missing_colon.py` is likely"
    )
    assert conv.messages[3]["content"] == (
        "<returncode>0</returncode>\n<output>\n/testbed/tests/missing_colon.py\n</output>"
    )
    window = (
        "[File: tests/missing_colon.py (10 lines total)]\n1:#!/usr/bin/env python3\n2:\n3:\n"
        "4:def division(a: float, b: float) -> float\n5:    return a/b\n6:\n7:\n"
        '8:if __name__ == "__main__":\n9:    print(division(123, 15))\n10:\n'
    )
    assert conv.commands[1].startswith("awk 'NR>=1&&NR<=10{l[NR]=$0}") and conv.commands[1].endswith(
        "'tests/missing_colon.py'"
    )
    assert conv.outputs[1] == window
    assert conv.commands[2].startswith("python3 - <<'EOF' && awk ")
    assert (
        "old = 'def division(a: float, b: float) -> float'\nnew = 'def division(a: float, b: float) -> float:'"
        in conv.commands[2]
    )
    assert conv.outputs[2].startswith(
        "Text replaced. Please review the changes and make sure they are correct:\n"
    )
    assert conv.outputs[2].endswith(
        "4:def division(a: float, b: float) -> float:\n5:    return a/b\n6:\n7:\n"
        '8:if __name__ == "__main__":\n9:    print(division(123, 15))\n10:\n'
    )
    assert (conv.commands[3], conv.outputs[3]) == (
        "python tests/missing_colon.py",
        "8.2\n",
    )  # newline restored
    assert conv.messages[-1]["content"].startswith(
        "diff --git a/tests/missing_colon.py b/tests/missing_colon.py\n"
    )


def test_sweagent_function_calling_replays_on_the_demo_file(samples: Path, tmp_path: Path) -> None:
    """Run every converted command (root mapped to a temp dir) on the file the windows show: each
    prints exactly its observation and the edit yields the submitted fix."""
    conv = converted(samples, "sweagent-demo-function-calling-simple.traj")
    f = tmp_path / "tests" / "missing_colon.py"
    f.parent.mkdir()
    lines = [ln.split(":", 1)[1] for ln in conv.outputs[1].splitlines()[1:]]
    f.write_text("\n".join(lines) + "\n")
    for cmd, out, rc in zip(conv.commands[:3], conv.outputs[:3], conv.returncodes[:3], strict=True):
        res = subprocess.run(
            check=False,
            args=["bash", "-c", cmd.replace("/testbed", str(tmp_path))],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=20,
        )
        assert (res.returncode, res.stdout) == (rc, out.replace("/testbed", str(tmp_path)))
    assert "def division(a: float, b: float) -> float:\n" in f.read_text()
    run = subprocess.run(
        ["python3", "tests/missing_colon.py"], check=False, cwd=tmp_path, capture_output=True, text=True
    )
    assert run.stdout == conv.outputs[3]  # SWE-agent 1.x recorded it without the final newline: restored


def test_sweagent_0x_pydicom_published_turns(samples: Path) -> None:
    """0.x text actions: create, edit N:M, python, find_file; three linter-rejected edits replayed."""
    conv = converted(samples, "sweagent-0x-gpt4-pydicom-1458.traj")
    assert conv.commands[0].startswith("printf '\\n' > '/testbed/reproduce_bug.py' && awk ")
    assert conv.messages[3]["content"] == (
        "<returncode>0</returncode>\n<output>\n[File: /testbed/reproduce_bug.py (1 lines total)]\n1:\n</output>"
    )
    assert conv.commands[2] == "python reproduce_bug.py"
    assert conv.outputs[2].startswith(
        'Traceback (most recent call last):\n  File "/testbed/reproduce_bug.py", line 17'
    )
    assert conv.commands[3] == "find '/testbed' -type f -name 'numpy_handler.py'"
    assert conv.outputs[3] == (
        "/testbed/pydicom/overlays/numpy_handler.py\n"
        "/testbed/pydicom/pixel_data_handlers/numpy_handler.py\n"
        "/testbed/pydicom/waveforms/numpy_handler.py\n"
    )
    for t in (5, 6, 7):  # "Your proposed edit has introduced new syntax error(s)" x3
        assert conv.returncodes[t] == 1
        assert conv.outputs[t].startswith("Your proposed edit has introduced new syntax error(s).")
        assert "except (SyntaxError, ValueError):" in conv.commands[t]
    assert conv.counters["convert/sweagent_edit_rejected_replayed"] == 3
    assert conv.returncodes[8] == 0 and conv.commands[8].startswith("python3 - <<'EOF' && awk ")


def test_sweagent_marshmallow_published_turns(samples: Path) -> None:
    conv = converted(samples, "sweagent-demo-textaction-window-marshmallow-1867.traj")
    assert conv.messages[2]["content"].startswith("THOUGHT: Let's first start by reproducing the results")
    assert conv.outputs[0] == "[File: /testbed/reproduce.py (1 lines total)]\n1:\n"
    assert (conv.commands[2], conv.outputs[2]) == ("python reproduce.py", "344\n")
    assert conv.commands[3] == "ls -F" and conv.outputs[3].startswith("AUTHORS.rst\nCHANGELOG.rst\n")
    assert (conv.commands[4], conv.outputs[4]) == (
        "find '/testbed/src' -type f -name 'fields.py'",
        "/testbed/src/marshmallow/fields.py\n",
    )
    assert conv.returncodes[6] == 1 and "E999 IndentationError: unexpected indent" in conv.outputs[6]
    assert conv.returncodes[7] == 0
    assert (conv.commands[8], conv.outputs[8]) == ("python reproduce.py", "345\n")


def test_marshmallow_rejected_edit_replays_without_touching_the_file(samples: Path, tmp_path: Path) -> None:
    """The original lines the rejection shows, at their line numbers: replaying the command exits 1,
    prints the rejection exactly, and the file keeps its bytes."""
    conv = converted(samples, "sweagent-demo-textaction-window-marshmallow-1867.traj")
    out = conv.outputs[6]
    original = out.split("This is the original code before your edit")[1]
    numbered = re.findall(r"^(\d+):(.*)$", original, re.M)
    first = int(numbered[0][0])
    f = tmp_path / "src" / "marshmallow" / "fields.py"
    f.parent.mkdir(parents=True)
    # filler that compiles keeps the class body (the window starts inside a method) valid
    text = "class TimeDelta:\n" + "    pass\n" * (first - 2) + "".join(t + "\n" for _, t in numbered)
    f.write_text(text)
    res = subprocess.run(
        check=False,
        args=["bash", "-c", conv.commands[6].replace("/testbed", str(tmp_path))],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=20,
    )
    assert (res.returncode, res.stdout) == (1, out.replace("/testbed", str(tmp_path)))
    assert f.read_text() == text


# ------------------------------------------------------------------ SWE-smith xml (2 rows)


def test_swesmith_xml_row0_published_turns(samples: Path) -> None:
    ep = episode_of(samples, "swesmith-ft-xml-example.jsonl", 0)
    assert ep.counters["parse/pty_newlines_restored"] > 0
    conv = convert_episode(ep)
    assert (
        conv.commands[0]
        == 'find /testbed -type f -name "*.py" | grep -v "__pycache__" | grep -v "test_" | head -20'
    )
    assert conv.messages[3]["content"].startswith(
        "<returncode>0</returncode>\n<output>\n/testbed/scripts/pandas_errors_documented.py\n"
        "/testbed/scripts/check_for_inconsistent_pandas_namespace.py\n"
    )
    assert conv.commands[1] == "cat -n '/testbed/pandas/core/indexes/base.py' | sed -n '6035,6050p'"
    assert conv.outputs[1].startswith(
        "  6035\t        --------\n  6036\t        Index.get_indexer : Computes"
    )
    assert "\r\n" not in "".join(conv.outputs)
