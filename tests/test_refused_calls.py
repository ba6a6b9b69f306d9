"""Given an Affine trace of a Claude Code or Kimi Code run, the published turns are exactly these.

The refusals and statuses are the harnesses' own texts, as real sessions show them (Claude Code
transcripts exported to text: ``<tool_use_error>File has not been read yet. Read it first before
writing to it.</tool_use_error>``, ``<tool_use_error>String to replace not found in file.\\nString:
…</tool_use_error>``; Kimi CLI tool messages: a ``<system>Command executed successfully.</system>``
text part before the output). No raw trace of such a session was found to vendor: the envelopes
are built here around those texts, with the tool calls of such a session (an Edit refused, a Read,
the Edit again).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from pipeline.convert import convert_episode
from pipeline.core.episode import RawRun
from pipeline.parsers.affine_trace import parse_trace

NOT_READ = "<tool_use_error>File has not been read yet. Read it first before writing to it.</tool_use_error>"
NOT_FOUND = "<tool_use_error>String to replace not found in file.\nString: return 1</tool_use_error>"
EDITED = "The file /testbed/app.py has been updated successfully."


def trace(harness: str, *calls: tuple[str, dict[str, Any], Any]) -> RawRun:
    msgs: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Fix app.py in /testbed."},
    ]
    for i, (name, args, result) in enumerate(calls):
        call = {"id": f"c{i}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
        msgs.append({"role": "assistant", "content": f"thought {i}", "tool_calls": [call]})
        msgs.append({"role": "tool", "tool_call_id": f"c{i}", "name": name, "content": result})
    msgs.append({"role": "assistant", "content": "Done."})
    nodes = [{"message": m, "parent": i - 1 if i else None} for i, m in enumerate(msgs)]
    env = {
        "trace": {"nodes": nodes},
        "task": {"sid": "t-1", "repo": "o/app"},
        "policy": {"harness": harness, "model": "m"},
    }
    return RawRun("uid", "Affine corpus", "trace", 1, env, 0)


def turns(raw: RawRun) -> tuple[list[str], list[str], list[int | None], list[str]]:
    conv = convert_episode(parse_trace(raw))
    return conv.commands, conv.outputs, conv.returncodes, conv.thoughts


def sh(cmd: str, cwd: Path) -> tuple[int, str]:
    res = subprocess.run(
        ["bash", "-c", cmd.replace("/testbed", str(cwd))], capture_output=True, text=True, check=False
    )
    return res.returncode, (res.stdout + res.stderr).replace(str(cwd), "/testbed")


def test_a_refused_edit_has_no_command_and_the_accepted_one_edits(tmp_path: Path) -> None:
    edit = {"file_path": "/testbed/app.py", "old_string": "return 1", "new_string": "return 2"}
    read = "     1\u2192def f():\n     2\u2192    return 1\n"
    raw = trace(
        "claude_code",
        ("Edit", edit, NOT_READ),
        ("Read", {"file_path": "/testbed/app.py"}, read),
        ("Edit", edit, EDITED),
    )
    commands, outputs, rcs, thoughts = turns(raw)
    assert len(commands) == 2 and commands[0] == "cat -n '/testbed/app.py'"
    assert (outputs, rcs) == (["     1\tdef f():\n     2\t    return 1\n", EDITED], [0, 0])
    assert thoughts[0] == "thought 0\n\nthought 1"  # the refused call's thought, carried
    (tmp_path / "app.py").write_text("def f():\n    return 1\n")
    assert [sh(c, tmp_path) for c in commands] == [(0, outputs[0]), (0, EDITED)]
    assert (tmp_path / "app.py").read_text() == "def f():\n    return 2\n"


def test_refused_edit_glob_grep_and_read_fold_away() -> None:
    raw = trace(
        "claude_code",
        ("Edit", {"file_path": "/testbed/app.py", "old_string": "return 1", "new_string": "x"}, NOT_FOUND),
        ("Glob", {"pattern": "["}, "<tool_use_error>Invalid glob pattern</tool_use_error>"),
        ("Grep", {"pattern": "("}, "<tool_use_error>Invalid regular expression</tool_use_error>"),
        (
            "Read",
            {"file_path": "/testbed/big.bin"},
            "<tool_use_error>File content exceeds maximum allowed size</tool_use_error>",
        ),
        ("Bash", {"command": "ls"}, "app.py"),
    )
    commands, outputs, _, thoughts = turns(raw)
    assert commands == ["ls"] and outputs == ["app.py"]
    assert thoughts == ["thought 0\n\nthought 1\n\nthought 2\n\nthought 3\n\nthought 4"]
    assert (
        parse_trace(raw) and convert_episode(parse_trace(raw)).counters["convert/refused_call_removed"] == 4
    )


def test_kimi_status_is_not_output_and_gives_the_return_code() -> None:
    ok = [
        {"type": "text", "text": "<system>Command executed successfully.</system>"},
        {"type": "text", "text": "app.py\n"},
    ]
    failed = "<system>ERROR: Command failed with exit code: 2.</system>\nls: cannot access 'nope': No such file or directory\n"
    raw = trace("kimi_code", ("Shell", {"command": "ls"}, ok), ("Shell", {"command": "ls nope"}, failed))
    commands, outputs, rcs, _ = turns(raw)
    assert commands == ["ls", "ls nope"]
    assert outputs == ["app.py\n", "ls: cannot access 'nope': No such file or directory\n"]
    assert rcs == [0, 2]


def test_a_read_of_a_line_range_prints_that_range(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    body = "".join(f"{i:6}\tline {i}\n" for i in range(4, 7))
    status = "<system>3 lines read from file starting from line 4.</system>"
    raw = trace(
        "kimi_code", ("ReadFile", {"path": "/testbed/app.py", "line_offset": 4, "n_lines": 3}, status + body)
    )
    commands, outputs, rcs, _ = turns(raw)
    assert (commands, outputs, rcs) == (["cat -n '/testbed/app.py' | sed -n '4,6p'"], [body], [0])
    assert sh(commands[0], tmp_path) == (0, body)
    claude = trace(
        "claude_code",
        ("Read", {"file_path": "/testbed/app.py", "offset": 4, "limit": 3}, body.replace("\t", "\u2192")),
    )
    commands, outputs, _, _ = turns(claude)
    assert commands == ["cat -n '/testbed/app.py' | sed -n '4,6p'"] and sh(commands[0], tmp_path) == (
        0,
        outputs[0],
    )
