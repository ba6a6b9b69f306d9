"""End to end on ../shared/corpus-samples: file → RawRun → Episode → published mini-swe v1 messages."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.convert import Converted, convert_episode
from pipeline.episode import ConvertError, RawRun
from pipeline.parsers import parse_raw
from pipeline.parsers.files import iter_trajectory_file

SAMPLES = Path(__file__).resolve().parents[2] / "shared" / "corpus-samples"
FILES = sorted(p.name for p in SAMPLES.glob("*") if p.suffix != ".md") if SAMPLES.is_dir() else []


def converted(samples: Path, name: str, row: int = 0) -> Converted:
    runs = [r for r in iter_trajectory_file(samples / name) if isinstance(r, RawRun)]
    return convert_episode(parse_raw(runs[row]))


@pytest.fixture(scope="module")
def samples(shared: Path) -> Path:
    return shared / "corpus-samples"


@pytest.mark.parametrize("name", FILES)
def test_every_sample_converts_or_drops_with_a_convert_reason(samples: Path, name: str) -> None:
    for r in iter_trajectory_file(samples / name):
        if not isinstance(r, RawRun):
            continue
        ep = parse_raw(r)
        try:
            conv = convert_episode(ep)
        except ConvertError as e:
            assert e.stage == "convert" and e.reason
            continue
        roles = [m["role"] for m in conv.messages]
        assert roles[:2] == ["system", "user"]
        assert roles[2:] == ["assistant", "user"] * ((len(roles) - 2) // 2)
        assert len(conv.commands) == len(conv.outputs) == len(conv.returncodes) == (len(roles) - 2) // 2


def test_mini_swe_v1_first_published_turns(samples: Path) -> None:
    conv = converted(samples, "mini-swe-agent-v1-github-issue.traj.json")
    assert conv.messages[2]["content"] == (
        "THOUGHT: I'll help you solve this issue. Let me first examine the content of the file that's causing "
        "the syntax error.\n\n```bash\ncat /Users/fuchur/Documents/24/git_sync/swe-agent-test-repo/tests/./"
        "missing_colon.py\n```")
    assert conv.messages[3]["content"] == (
        "<returncode>1</returncode>\n<output>\ncat: /Users/fuchur/Documents/24/git_sync/swe-agent-test-repo/"
        "tests/./missing_colon.py: No such file or directory\n</output>")
    assert conv.messages[4]["content"] == ("THOUGHT: I need to find the correct path to the file. Let me check "
                                           "the current directory structure:\n\n```bash\nls -la\n```")
    assert conv.commands[:3] == ["cat /Users/fuchur/Documents/24/git_sync/swe-agent-test-repo/tests/./missing_colon.py",
                                 "ls -la", "ls -la tests/"]
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
        "THOUGHT: I'll help you implement the necessary changes to fix the `to_snake` alias generator bug")
    assert conv.messages[2]["content"].endswith(
        '```bash\nfind /testbed -type f -name "*.py" | grep -i alias\n```')
    assert conv.messages[3]["content"].startswith(
        "<returncode>0</returncode>\n<output>\n/testbed/pydantic/alias_generators.py\r\n/testbed/pydantic/aliases.py\r\n")
    assert conv.messages[4]["content"].endswith("```bash\ncat -n '/testbed/pydantic/alias_generators.py'\n```")
    assert conv.submitted


def test_sweagent_1x_first_published_turns(samples: Path) -> None:
    conv = converted(samples, "sweagent-swesmith-pandas-pr_53856.traj")
    assert conv.commands[0] == 'find /testbed -type f -name "*.py" | grep -v "__pycache__" | grep -E "sql|arrow" | sort'
    assert conv.commands[1] == "cat -n '/testbed/pandas/io/sql.py'"
    assert conv.messages[3]["content"].startswith(
        "<returncode>0</returncode>\n<output>\n/testbed/asv_bench/benchmarks/io/sql.py\r\n")
    assert "OBSERVATION:" not in conv.messages[3]["content"]
    assert conv.submitted


def test_openhands_events_first_published_turn(samples: Path) -> None:
    conv = converted(samples, "openhands-events-basic.json")
    assert conv.messages[2]["content"].startswith(
        "THOUGHT: I'll help you create a simple 2048 game in Python. I'll use the str_replace_editor to create "
        "the file.\n\n```bash\n")
    assert "/testbed/game_2048.py" in conv.commands[0] and "/workspace" not in conv.commands[0]
    assert conv.outputs[0] == "File created successfully at: /testbed/game_2048.py"
    assert conv.submitted
