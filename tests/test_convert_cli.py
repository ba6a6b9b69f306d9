"""``trajpipe convert FILE… --out FILE.jsonl`` on every real sample: one JSON line per run, each
either the published messages or a drop with its stage and reason; the format comes from content."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest
from typer.testing import CliRunner

from pipeline.cli import app
from pipeline.stages.validate import validate_messages
from tests.conftest import REAL, SAMPLE_FILES

EXPECTED_FORMAT = {  # sample file -> the format detected from its content
    "mini-swe-agent-v1-github-issue.traj.json": "mini-swe-agent",
    "mini-swe-agent-v2-github-issue.traj.json": "mini-swe-agent",
    "openhands-events-basic.json": "OpenHands",
    "sweagent-0x-gpt4-pydicom-1458.traj": "SWE-agent",
    "sweagent-demo-function-calling-simple.traj": "SWE-agent",
    "sweagent-demo-textaction-window-marshmallow-1867.traj": "SWE-agent",
    "sweagent-swesmith-pandas-pr_53856.traj": "SWE-agent",
    "swesmith-ft-xml-example.jsonl": "SWE-smith",
    "swesmith-task-instance-pandas-pr_53652.json": None,  # a task record, not a run
}


def run_convert(files: list[Path], out: Path, code: int = 0) -> list[dict[str, Any]]:
    res = CliRunner().invoke(app, ["convert", *map(str, files), "--out", str(out)])
    assert res.exit_code == code, res.output
    return [orjson.loads(line) for line in out.read_bytes().splitlines()]


@pytest.fixture(scope="module")
def lines(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    samples = sorted(REAL / name for name in SAMPLE_FILES)
    assert {p.name for p in samples} == set(EXPECTED_FORMAT)
    return run_convert(samples, tmp_path_factory.mktemp("cli") / "out.jsonl")


def test_every_run_is_one_line_with_messages_or_a_drop(lines: list[dict[str, Any]]) -> None:
    by_file: dict[str, list[dict[str, Any]]] = {}
    for line in lines:
        assert set(line) in ({"source_uid", "format", "messages"}, {"source_uid", "format", "drop"})
        by_file.setdefault(line["source_uid"].split("#")[0], []).append(line)
    assert set(by_file) == set(EXPECTED_FORMAT)
    # (drops are listed before converted runs: which come first depends on what converts)
    assert sorted(ln["source_uid"] for ln in by_file["swesmith-ft-xml-example.jsonl"]) == [
        f"swesmith-ft-xml-example.jsonl#L{i}" for i in (1, 2, 3)
    ]
    for name, fmt in EXPECTED_FORMAT.items():
        assert {ln["format"] for ln in by_file[name]} == {fmt}


def test_every_real_run_converts_or_is_listed_with_its_reason(lines: list[dict[str, Any]]) -> None:
    drops = [ln for ln in lines if "drop" in ln]
    assert sorted(drops, key=lambda d: d["source_uid"]) == [
        # SWE-agent's abbreviated view of a large file converts (an awk prints it); a `pip install`
        # whose output ends in its root-user warning has a code no rule gives (SWE-agent records none)
        {
            "source_uid": "sweagent-swesmith-pandas-pr_53856.traj#row=0",
            "format": "SWE-agent",
            "drop": {"stage": "verify", "reason": "returncode_unknown", "detail": "turn 8: bash"},
        },
        # a harness-clipped output (SWE-smith's clipping note), and a turn no rule gives a code
        # (a `pip install -e .` whose output ends in its root-user warning): the verify step drops both
        {
            "source_uid": "swesmith-ft-xml-example.jsonl#L2",
            "format": "SWE-smith",
            "drop": {"stage": "verify", "reason": "harness_decoration", "detail": "turn 0: clipped"},
        },
        {
            "source_uid": "swesmith-ft-xml-example.jsonl#L3",
            "format": "SWE-smith",
            "drop": {"stage": "verify", "reason": "returncode_unknown", "detail": "turn 4: bash"},
        },
        {
            "source_uid": "swesmith-task-instance-pandas-pr_53652.json#row=0",
            "format": None,
            "drop": {
                "stage": "quarantine",
                "reason": "unknown_format",
                "detail": "a task record (instance_id, patch, tests), not a trajectory",
            },
        },
    ]
    published = [ln for ln in lines if "messages" in ln]
    assert len(published) == 7
    for ln in published:
        msgs = ln["messages"]
        assert [m["role"] for m in msgs[:2]] == ["system", "user"]
        commands = [m["content"].rsplit("```bash\n", 1)[1].removesuffix("\n```") for m in msgs[2::2]]
        assert validate_messages(msgs, commands) == []


def test_published_lines_carry_the_converted_turns(lines: list[dict[str, Any]]) -> None:
    demo = next(ln for ln in lines if ln["source_uid"] == "sweagent-demo-function-calling-simple.traj#row=0")
    assert demo["messages"][2]["content"].endswith(
        "```bash\nfind '/testbed' -type f -name 'missing_colon.py'\n```"
    )
    assert demo["messages"][3]["content"] == (
        "<returncode>0</returncode>\n<output>\n/testbed/tests/missing_colon.py\n</output>"
    )


def test_format_is_detected_from_content_not_the_file_name(tmp_path: Path) -> None:
    src = REAL
    renamed = [tmp_path / "a.dat", tmp_path / "b.txt"]
    shutil.copyfile(src / "sweagent-0x-gpt4-pydicom-1458.traj", renamed[0])
    shutil.copyfile(src / "openhands-events-basic.json", renamed[1])
    got = run_convert(renamed, tmp_path / "o.jsonl")
    assert [(ln["source_uid"], ln["format"], "messages" in ln) for ln in got] == [
        ("a.dat#row=0", "SWE-agent", True),
        ("b.txt#row=0", "OpenHands", True),
    ]


def test_unreadable_and_unconvertible_runs_are_listed_not_skipped(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    unknown = tmp_path / "unknown.json"
    unknown.write_bytes(
        orjson.dumps(
            {
                "history": [
                    {"role": "system", "content": "sys"},
                    {"role": "user", "content": "Fix the bug."},
                    {
                        "role": "assistant",
                        "content": "go",
                        "tool_calls": [
                            {
                                "id": "c1",
                                "function": {"name": "browser_navigate", "arguments": '{"url": "https://x"}'},
                            }
                        ],
                    },
                    {"role": "tool", "tool_call_id": "c1", "content": "page"},
                ],
                "trajectory": [],
            }
        )
    )
    got = run_convert([bad, unknown], tmp_path / "o.jsonl", code=1)  # bad.json is unusable: exit 1
    assert [(ln["source_uid"], ln["drop"]["stage"], ln["drop"]["reason"]) for ln in got] == [
        ("bad.json#row=0", "quarantine", "bad_json"),
        ("unknown.json#row=0", "convert", "unknown_tool"),
    ]
    assert got[1]["format"] == "SWE-agent" and got[1]["drop"]["detail"] == "browser_navigate"


def test_same_file_name_in_two_folders_gets_two_uids_and_folders_are_expanded(tmp_path: Path) -> None:
    sample = REAL / "mini-swe-agent-v1-github-issue.traj.json"
    for sub in ("alice", "bob"):
        (tmp_path / "runs" / sub).mkdir(parents=True)
        shutil.copy(sample, tmp_path / "runs" / sub / "run.traj.json")
    got = run_convert([tmp_path / "runs"], tmp_path / "o.jsonl")  # a folder: both files inside it
    assert [ln["source_uid"] for ln in got] == ["alice/run.traj.json#row=0", "bob/run.traj.json#row=0"]
    assert got[0]["messages"] == got[1]["messages"]


def test_a_swelego_parquet_is_read_as_parquet_not_text(tmp_path: Path) -> None:
    from pipeline.devkit.synth.corpus import synth

    synth(tmp_path / "c", runs=6, epochs=1, seed=4)
    parquet = sorted((tmp_path / "c" / "swelego").rglob("*.parquet"))[0]
    got = run_convert([parquet], tmp_path / "o.jsonl")
    assert got and all(ln["format"] == "SWE-Lego" for ln in got)
    assert not any(ln.get("drop", {}).get("reason") == "bad_json" for ln in got)
    assert all(ln["source_uid"].startswith(f"data:{parquet.name}#row=") for ln in got)
