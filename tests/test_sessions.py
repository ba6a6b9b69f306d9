"""Agent session transcripts as input: Claude Code project JSONL and Codex CLI rollouts.

The Claude Code sessions are real public transcripts (tests/fixtures/real/sessions, provenance in
tests/fixtures/real/PROVENANCE.md). The Codex rollouts below are built line by line in the
rollout's own shape (``session_meta``, ``response_item`` with ``function_call`` /
``custom_tool_call`` and their outputs), each one exercising one rule.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pipeline.convert import convert_episode
from pipeline.core.episode import ConvertError, ParseError, RawRun
from pipeline.orchestration.convert_files import convert_files
from pipeline.parsers import parse_raw
from pipeline.parsers.files import iter_trajectory_file

REAL = Path(__file__).parent / "fixtures" / "real" / "sessions"


def _raw(path: Path) -> RawRun:
    (raw,) = list(iter_trajectory_file(path))
    assert isinstance(raw, RawRun), raw
    return raw


def _turns(path: Path) -> tuple[list[str], list[str], list[int | None]]:
    conv = convert_episode(parse_raw(_raw(path)))
    return conv.commands, conv.outputs, conv.returncodes


def _published(tmp_path: Path, *files: Path) -> list[dict[str, Any]]:
    out = tmp_path / "out.jsonl"
    convert_files(list(files), out)
    return [json.loads(ln) for ln in out.read_text().splitlines()]


# ------------------------------------------------------------------ Claude Code, real sessions


def test_a_claude_code_transcript_is_one_run_whose_task_is_the_first_human_message() -> None:
    raw = _raw(REAL / "claude-hello-world-script.jsonl")
    assert raw.kind == "claude_code" and raw.source_uid == "claude-hello-world-script.jsonl#session"
    ep = parse_raw(raw)
    assert (
        ep.task.problem_statement
        == 'Write a shell script called hello.sh that prints "Hello world" and run it.'
    )
    assert ep.meta.repo_root == "/tmp/tmp74wiyiny" and ep.meta.harness == "claude_code"
    assert ep.counters["parse/claude_meta_skipped"] == 1  # the stop hook's feedback is the harness's


def test_claude_write_and_bash_become_the_commands_that_made_them_under_testbed() -> None:
    commands, outputs, codes = _turns(REAL / "claude-hello-world-script.jsonl")
    assert commands == [
        "cat > '/testbed/hello.sh' <<'EOF' && printf '%s' 'File created successfully at: /testbed/hello.sh'\n"
        '#!/bin/bash\necho "Hello world"\nEOF',
        "chmod +x /testbed/hello.sh && /testbed/hello.sh",
    ]
    assert outputs == ["File created successfully at: /testbed/hello.sh", "Hello world"]
    assert codes == [0, 0]


def test_a_whole_file_read_prints_what_cat_n_prints_without_reads_numbered_empty_tail() -> None:
    commands, outputs, _ = _turns(REAL / "claude-stop-hook-uncommitted-changes.jsonl")
    assert commands[0] == "cat -n '/testbed/src/main.py'"
    # Claude Code showed "     2→" for the empty string after the final newline; cat -n does not
    assert outputs[0] == '     1\tprint("hello")\n'


def test_parallel_reads_get_their_own_results_though_the_results_hang_off_each_other() -> None:
    commands, outputs, _ = _turns(REAL / "claude-coverage-test-fix.jsonl")
    assert commands[1:3] == [
        "cat -n '/testbed/src/math_utils.py'",
        "cat -n '/testbed/tests/test_math_utils.py'",
    ]
    assert outputs[1] == (
        '     1\t"""Math utility functions."""\n     2\t\n     3\t\n     4\tdef add_numbers(a: int, b: int) -> int:\n'
        '     5\t    """Add two numbers together."""\n     6\t    return a + b\n'
    )
    assert outputs[2].startswith('     1\t"""Tests for math_utils."""\n')


def test_a_second_human_prompt_ends_the_run_where_the_person_spoke_again() -> None:
    # the session: "create hello.py, md and js", then "update py with one liner comment", then "delete js"
    ep = parse_raw(_raw(REAL / "claude-codemie-two-prompts.jsonl"))
    assert ep.task.problem_statement == "create hello.py, md and js"
    assert ep.counters["parse/second_prompt_cut"] == 1 and ep.meta.repo_root == "/tmp/private"
    conv = convert_episode(ep)
    assert [c.split("\n", 1)[0] for c in conv.commands] == [
        "cat > '/testbed/hello.py' <<'EOF' && printf '%s' 'File created successfully at: /testbed/hello.py'",
        "python3 - <<'EOF'",
        "cat > '/testbed/hello.js' <<'EOF' && printf '%s' 'File created successfully at: /testbed/hello.js'",
    ]
    assert not conv.submitted


def test_real_claude_sessions_pass_verify(tmp_path: Path) -> None:
    files = sorted(REAL.glob("claude-*.jsonl"))
    by_file = {ln["source_uid"].split("#")[0]: ln for ln in _published(tmp_path, *files)}
    assert {n: "messages" in ln for n, ln in by_file.items()} == {
        "claude-codemie-two-prompts.jsonl": True,
        "claude-coverage-test-fix.jsonl": True,
        "claude-hello-world-script.jsonl": True,
        "claude-stop-hook-uncommitted-changes.jsonl": True,
    }


# ------------------------------------------------------------------ Codex CLI rollouts


def _rollout(tmp_path: Path, items: list[dict[str, Any]], cwd: str = "/Users/dev/proj") -> Path:
    lines = [
        {"type": "session_meta", "payload": {"id": "s-1", "cwd": cwd, "cli_version": "0.125.0"}},
        {"type": "turn_context", "payload": {"cwd": cwd, "model": "gpt-5-codex"}},
        {
            "type": "response_item",
            "payload": {
                "type": "message",
                "role": "user",
                "content": [
                    {
                        "type": "input_text",
                        "text": f"<environment_context>\n  <cwd>{cwd}</cwd>\n</environment_context>",
                    }
                ],
            },
        },
        {
            "type": "response_item",
            "payload": {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "Fix the greeting."}],
            },
        },
        *({"type": "response_item", "payload": it} for it in items),
    ]
    path = tmp_path / "rollout-2026-01-01T00-00-00-s-1.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def _exec(call_id: str, cmd: str, workdir: str = "/Users/dev/proj") -> dict[str, Any]:
    return {
        "type": "function_call",
        "name": "exec_command",
        "call_id": call_id,
        "arguments": json.dumps({"cmd": cmd, "workdir": workdir, "yield_time_ms": 1000}),
    }


def _out(call_id: str, text: str) -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id, "output": text}


def _unified(body: str, code: int | None = 0, session: int | None = None) -> str:
    state = (
        f"Process exited with code {code}"
        if session is None
        else f"Process running with session ID {session}"
    )
    return f"Chunk ID: ab12\nWall time: 0.1 seconds\n{state}\nOriginal token count: 3\nOutput:\n{body}"


def test_codex_exec_command_is_its_command_with_the_recorded_code_and_no_harness_wrapping(
    tmp_path: Path,
) -> None:
    path = _rollout(
        tmp_path,
        [
            _exec("c1", "cat hello.py"),
            _out("c1", _unified("print('helo')\n")),
            _exec("c2", "ls", workdir="/Users/dev/proj/src"),
            _out("c2", _unified("ls: cannot access 'x'\n", code=2)),
        ],
    )
    ep = parse_raw(_raw(path))
    assert ep.task.problem_statement == "Fix the greeting." and ep.meta.repo_root == "/Users/dev/proj"
    commands, outputs, codes = _turns(path)
    assert commands == ["cat hello.py", "cd '/testbed/src' && ls"]
    assert outputs == ["print('helo')\n", "ls: cannot access 'x'\n"]
    assert codes == [0, 2]


def test_a_running_process_read_by_empty_polls_is_one_command_printing_every_chunk(tmp_path: Path) -> None:
    poll = {
        "type": "function_call",
        "name": "write_stdin",
        "call_id": "p1",
        "arguments": json.dumps({"session_id": 7, "chars": ""}),
    }
    path = _rollout(
        tmp_path,
        [
            _exec("c1", "pytest -q"),
            _out("c1", _unified("..", session=7)),
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "Waiting for the tests."}],
            },
            poll,
            _out("p1", _unified("F\n1 failed\n", code=1)),
        ],
    )
    ep = parse_raw(_raw(path))
    assert ep.counters["parse/codex_poll_merged"] == 1
    conv = convert_episode(ep)
    assert (conv.commands, conv.outputs, conv.returncodes) == (["pytest -q"], ["..F\n1 failed\n"], [1])


def test_input_written_to_a_running_process_drops_the_run(tmp_path: Path) -> None:
    poll = {
        "type": "function_call",
        "name": "write_stdin",
        "call_id": "p1",
        "arguments": json.dumps({"session_id": 7, "chars": "y\n"}),
    }
    path = _rollout(
        tmp_path, [_exec("c1", "python3 ask.py"), _out("c1", _unified("Continue? ", session=7)), poll]
    )
    with pytest.raises(ParseError) as err:
        parse_raw(_raw(path))
    assert err.value.reason == "interactive_input"


def test_a_second_human_message_ends_the_rollouts_run_there(tmp_path: Path) -> None:
    again = {
        "type": "message",
        "role": "user",
        "content": [{"type": "input_text", "text": "Also fix the farewell."}],
    }
    path = _rollout(
        tmp_path,
        [
            _exec("c1", "ls"),
            _out("c1", _unified("a\n")),
            again,
            _exec("c2", "rm -rf x"),
            _out("c2", _unified("")),
        ],
    )
    ep = parse_raw(_raw(path))
    assert ep.counters["parse/second_prompt_cut"] == 1
    assert convert_episode(ep).commands == ["ls"]


PATCH = "*** Begin Patch\n*** Update File: hello.py\n@@\n-print('helo')\n+print('hello')\n*** End Patch\n"
REPORT = "Success. Updated the following files:\nM hello.py\n"


def test_codex_apply_patch_is_a_command_that_makes_exactly_that_edit_and_prints_codexs_report(
    tmp_path: Path,
) -> None:
    path = _rollout(
        tmp_path,
        [
            {
                "type": "custom_tool_call",
                "name": "apply_patch",
                "call_id": "c1",
                "input": PATCH,
                "status": "completed",
            },
            {
                "type": "custom_tool_call_output",
                "call_id": "c1",
                "output": json.dumps({"output": REPORT, "metadata": {"exit_code": 0}}),
            },
        ],
    )
    (command,), (output,), (code,) = _turns(path)
    assert (output, code) == (REPORT, 0)
    # run it on a checkout holding the file: the edit is made and the report printed
    work = tmp_path / "testbed"
    work.mkdir()
    (work / "hello.py").write_text("import os\nprint('helo')\n")
    ran = subprocess.run(
        ["bash", "-c", command.replace("/testbed", str(work))], capture_output=True, text=True, check=False
    )
    assert (ran.returncode, ran.stdout) == (0, REPORT)
    assert (work / "hello.py").read_text() == "import os\nprint('hello')\n"
    # on a file without the hunk's old lines the same command fails and writes nothing
    (work / "hello.py").write_text("print('bye')\n")
    ran = subprocess.run(
        ["bash", "-c", command.replace("/testbed", str(work))], capture_output=True, text=True, check=False
    )
    assert ran.returncode == 1 and (work / "hello.py").read_text() == "print('bye')\n"


def test_a_shell_apply_patch_heredoc_is_read_as_the_patch_it_carries(tmp_path: Path) -> None:
    shell = {
        "type": "function_call",
        "name": "shell",
        "call_id": "c1",
        "arguments": json.dumps(
            {"command": ["bash", "-lc", f"apply_patch <<'EOF'\n{PATCH}EOF"], "workdir": "/Users/dev/proj"}
        ),
    }
    path = _rollout(
        tmp_path, [shell, _out("c1", json.dumps({"output": REPORT, "metadata": {"exit_code": 0}}))]
    )
    (command,), (output,), _ = _turns(path)
    assert (
        command.startswith("python3 - <<'EOF'\nimport sys\npath = '/testbed/hello.py'\n") and output == REPORT
    )


@pytest.mark.parametrize(
    ("patch", "reason"),
    [
        ("*** Begin Patch\n*** Delete File: a.py\n*** End Patch\n", "apply_patch_format"),
        (
            "*** Begin Patch\n*** Update File: a.py\n@@\n-x\n+y\n*** Update File: b.py\n@@\n-x\n+y\n*** End Patch\n",
            "apply_patch_format",
        ),
        ("*** Begin Patch\n*** Update File: a.py\n@@\n+only added\n*** End Patch\n", "apply_patch_format"),
    ],
)
def test_patches_the_converter_does_not_reproduce_are_counted_drops(
    tmp_path: Path, patch: str, reason: str
) -> None:
    path = _rollout(
        tmp_path,
        [
            {"type": "custom_tool_call", "name": "apply_patch", "call_id": "c1", "input": patch},
            {"type": "custom_tool_call_output", "call_id": "c1", "output": REPORT},
        ],
    )
    with pytest.raises(ConvertError) as err:
        convert_episode(parse_raw(_raw(path)))
    assert err.value.reason == reason


def test_an_output_codex_shortened_for_the_model_drops_the_run(tmp_path: Path) -> None:
    path = _rollout(
        tmp_path, [_exec("c1", "cat big.log"), _out("c1", _unified("head\n…1200 tokens truncated…\ntail\n"))]
    )
    with pytest.raises(ParseError) as err:
        parse_raw(_raw(path))
    assert err.value.reason == "elided_output"


def test_a_sub_agent_that_may_edit_drops_the_run_and_a_read_only_one_is_folded() -> None:
    from pipeline.convert.actions import ToolState
    from pipeline.convert.tools import convert_call

    state = ToolState()
    folded = convert_call(
        "Task", {"subagent_type": "Explore", "prompt": "Find the parser"}, "Report", None, 0, state
    )
    assert (folded.kind, folded.text) == ("fold", "Find the parser")
    with pytest.raises(ConvertError) as err:
        convert_call("Task", {"subagent_type": "general-purpose", "prompt": "Fix it"}, "Done", None, 1, state)
    assert err.value.reason == "subagent_effect"


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))


# ------------------------------------------------------------------ pi sessions


def _pi_session(tmp_path: Path, entries: list[dict[str, Any]]) -> Path:
    header = {"type": "session", "version": 3, "id": "p-1", "cwd": "/home/dev/app", "timestamp": "t"}
    lines, parent = [header], None
    for i, m in enumerate(entries):
        lines.append({"type": "message", "id": f"e{i}", "parentId": parent, "message": m})
        parent = f"e{i}"
    path = tmp_path / "2026-01-01T00-00-00_p-1.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def _pi_call(i: str, name: str, **args: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": [{"type": "toolCall", "id": i, "name": name, "arguments": args}]}


def _pi_result(i: str, text: str) -> dict[str, Any]:
    return {
        "role": "toolResult",
        "toolCallId": i,
        "content": [{"type": "text", "text": text}],
        "isError": False,
    }


def test_a_pi_session_reads_its_tools_and_the_code_pi_noted_or_did_not(tmp_path: Path) -> None:
    path = _pi_session(
        tmp_path,
        [
            {"role": "user", "content": [{"type": "text", "text": "/model"}]},
            {"role": "user", "content": [{"type": "text", "text": "Make the test pass."}]},
            _pi_call("t1", "read", path="src/app.py"),
            _pi_result("t1", "def f():\n    return 1\n"),
            _pi_call("t2", "bash", command="pytest -q"),
            _pi_result("t2", "1 failed\n\nCommand exited with code 1"),
            _pi_call("t3", "bash", command="ls"),
            _pi_result("t3", "src\n"),
        ],
    )
    ep = parse_raw(_raw(path))
    assert ep.task.problem_statement == "Make the test pass." and ep.counters["parse/pi_command_skipped"] == 1
    assert ep.meta.harness == "pi" and ep.meta.repo_root == "/home/dev/app"
    commands, outputs, codes = _turns(path)
    assert commands == ["cat 'src/app.py'", "pytest -q", "ls"]
    assert outputs == ["def f():\n    return 1\n", "1 failed\n", "src\n"]
    assert codes == [0, 1, 0]  # pi notes every nonzero exit: no note is an exit of 0


def test_a_pi_read_shortened_for_the_model_drops_the_run(tmp_path: Path) -> None:
    path = _pi_session(
        tmp_path,
        [
            {"role": "user", "content": [{"type": "text", "text": "Read it."}]},
            _pi_call("t1", "read", path="big.txt"),
            _pi_result("t1", "line 1\n\n[1999 more lines in file. Use offset=2 to continue]"),
        ],
    )
    with pytest.raises(ParseError) as err:
        parse_raw(_raw(path))
    assert err.value.reason == "elided_output"


# ------------------------------------------------------------------ the same session as an Affine trace envelope


def _envelope_of(path: Path) -> dict[str, Any]:
    """The session's messages re-wrapped, unchanged, as an Affine trace envelope: the harness's
    system prompt declaring the working directory, the task, each reply's calls as OpenAI tool
    calls, each result as a tool message."""
    ep_msgs: list[dict[str, Any]] = []
    cwd = ""
    for ln in path.read_text().splitlines():
        e = json.loads(ln)
        if e.get("type") not in ("user", "assistant") or e.get("isMeta"):
            continue
        cwd = cwd or e["cwd"]
        content = e["message"]["content"]
        if e["type"] == "user" and isinstance(content, str):
            ep_msgs.append({"role": "user", "content": content})
            continue
        for b in content:
            if b["type"] == "tool_use":
                call = {
                    "id": b["id"],
                    "type": "function",
                    "function": {"name": b["name"], "arguments": json.dumps(b["input"])},
                }
                ep_msgs.append({"role": "assistant", "content": "", "tool_calls": [call]})
            elif b["type"] == "tool_result":
                ep_msgs.append({"role": "tool", "tool_call_id": b["tool_use_id"], "content": b["content"]})
            elif b["type"] == "text" and e["type"] == "assistant":
                ep_msgs.append({"role": "assistant", "content": b["text"]})
    system = {
        "role": "system",
        "content": f"You are Claude Code.\n<env>\nWorking directory: {cwd}\nPlatform: linux\n</env>",
    }
    nodes = [{"message": m, "parent": i - 1 if i else None} for i, m in enumerate([system, *ep_msgs])]
    return {
        "schema": 1,
        "rollout_id": "r-1",
        "source": "sessions",
        "task": {"uid": "u-1", "sid": "s-1", "repo": "", "language": "unknown"},
        "policy": {"harness": "claude_code", "model": "claude"},
        "trace": {"nodes": nodes, "rewards": {}},
    }


@pytest.mark.parametrize(
    "name", ["claude-hello-world-script.jsonl", "claude-stop-hook-uncommitted-changes.jsonl"]
)
def test_the_session_as_an_affine_trace_envelope_converts_to_the_same_messages(
    tmp_path: Path, name: str
) -> None:
    env = tmp_path / "envelope.json"
    env.write_text(json.dumps(_envelope_of(REAL / name)))
    (raw_env,) = list(iter_trajectory_file(env))
    assert isinstance(raw_env, RawRun) and raw_env.kind == "trace"
    from_envelope = convert_episode(parse_raw(raw_env)).messages
    from_session = convert_episode(parse_raw(_raw(REAL / name))).messages
    assert from_envelope == from_session


# ------------------------------------------------------------------ Claude Code's Grep and Glob, run


def _run(cmd: str, cwd: Path) -> tuple[int, str]:
    res = subprocess.run(
        ["bash", "-c", cmd], cwd=cwd, capture_output=True, text=True, check=False, timeout=20
    )
    return res.returncode, res.stdout


def test_grep_and_glob_print_the_shown_result_in_an_order_the_command_reproduces(tmp_path: Path) -> None:
    from pipeline.convert.actions import ToolState
    from pipeline.convert.tools import convert_call

    for name, text in {
        "b.ts": "class FooRegistry {}\n",
        "a.ts": "x\nclass BarRegistry {}\n",
        "c.js": "n = 42\n",
    }.items():
        (tmp_path / name).write_text(text)
    state = ToolState()
    # ripgrep listed the files newest first; the converted command sorts them, and so does its output
    files = convert_call(
        "Grep",
        {"pattern": r"class \w+Registry", "path": str(tmp_path), "output_mode": "files_with_matches"},
        f"Found 2 files\n{tmp_path}/b.ts\n{tmp_path}/a.ts",
        None,
        0,
        state,
    )
    assert files.output == f"{tmp_path}/a.ts\n{tmp_path}/b.ts\n"
    assert _run(files.command, tmp_path) == (files.returncode, files.output)
    content = convert_call(
        "Grep",
        {"pattern": r"\d+", "path": str(tmp_path), "output_mode": "content", "-n": True},
        f"{tmp_path}/c.js:1:n = 42",
        None,
        1,
        state,
    )
    assert content.command.startswith("grep -rnP ") and _run(content.command, tmp_path) == (0, content.output)
    glob = convert_call(
        "Glob",
        {"pattern": "*.{ts,js}", "path": str(tmp_path)},
        "\n".join(f"{tmp_path}/{n}" for n in ("c.js", "b.ts", "a.ts")),
        None,
        2,
        state,
    )
    assert glob.output == "a.ts\nb.ts\nc.js\n" and _run(glob.command, tmp_path) == (0, glob.output)


def test_a_call_the_person_declined_never_ran_and_ends_the_run(tmp_path: Path) -> None:
    path = _rollout(
        tmp_path,
        [
            _exec("c1", "ls"),
            _out("c1", _unified("a\n")),
            _exec("c2", "rm -rf build"),
            _out("c2", "exec command rejected by user"),
            _exec("c3", "ls build"),
            _out("c3", _unified("x\n")),
        ],
    )
    ep = parse_raw(_raw(path))
    assert ep.counters["parse/interrupted_call_removed"] == 1
    assert convert_episode(ep).commands == ["ls"]


# ------------------------------------------------------------------ Kimi CLI context files


def _kimi_context(tmp_path: Path, records: list[dict[str, Any]]) -> Path:
    head = [
        {
            "role": "_system_prompt",
            "content": "You are Kimi.\n\n## Working Directory\n\nThe current working directory is `/home/dev/app`. This should be considered as the project root.",
        },
        {"role": "_checkpoint", "id": 0},
        {"role": "user", "content": [{"type": "text", "text": "Rename greet to hello."}]},
    ]
    path = tmp_path / "context.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in [*head, *records]))
    return path


def _kimi_call(i: str, name: str, **args: Any) -> dict[str, Any]:
    fn = {"name": name, "arguments": json.dumps(args)}
    return {
        "role": "assistant",
        "content": [{"type": "think", "think": "hm"}, {"type": "text", "text": ""}],
        "tool_calls": [{"type": "function", "id": i, "function": fn}],
    }


def _kimi_result(i: str, status: str, output: str = "") -> dict[str, Any]:
    parts = [{"type": "text", "text": f"<system>{status}</system>"}] + (
        [{"type": "text", "text": output}] if output else []
    )
    return {"role": "tool", "tool_call_id": i, "content": parts}


def test_a_kimi_context_is_one_run_rooted_where_its_system_prompt_says(tmp_path: Path) -> None:
    path = _kimi_context(
        tmp_path,
        [
            _kimi_call("t1", "Shell", command="grep -rn greet ."),
            _kimi_result("t1", "Command executed successfully.", "./app.py:1:def greet(): pass\n"),
            _kimi_call("t2", "ReadFile", path="/home/dev/app/app.py"),
            _kimi_result(
                "t2",
                "2 lines read from file starting from line 1. Total lines in file: 2. End of file reached.",
                "     1\tdef greet(): pass\n     2\tgreet()\n",
            ),
            _kimi_call(
                "t3",
                "StrReplaceFile",
                path="/home/dev/app/app.py",
                edit={"old": "greet", "new": "hello", "replace_all": True},
            ),
            _kimi_result("t3", "File successfully edited. Applied 1 edit(s) with 2 total replacement(s)."),
            _kimi_call("t4", "Shell", command="python3 app.py"),
            _kimi_result("t4", "ERROR: Command failed with exit code: 1.", "NameError\n"),
        ],
    )
    raw = _raw(path)
    assert raw.kind == "kimi"
    ep = parse_raw(raw)
    assert ep.task.problem_statement == "Rename greet to hello." and ep.meta.repo_root == "/home/dev/app"
    commands, outputs, codes = _turns(path)
    assert commands[:2] == ["grep -rn greet .", "cat -n '/testbed/app.py'"]
    assert outputs == [
        "./app.py:1:def greet(): pass\n",
        "     1\tdef greet(): pass\n     2\tgreet()\n",
        "",
        "NameError\n",
    ]
    assert codes == [0, 0, 0, 1]  # Kimi's status states every code; its text is never an output
    work = tmp_path / "testbed"
    work.mkdir()
    (work / "app.py").write_text("def greet(): pass\ngreet()\n")
    assert _run(commands[2].replace("/testbed", str(work)), tmp_path) == (0, "")
    assert (work / "app.py").read_text() == "def hello(): pass\nhello()\n"


def test_kimi_replaces_the_first_occurrence_and_fails_only_when_nothing_changed(tmp_path: Path) -> None:
    from pipeline.convert.kimi_tools import kimi_replace_command

    f = tmp_path / "a.txt"
    f.write_text("x x\n")
    cmd = kimi_replace_command(str(f), [("x", "y", False)], None)
    assert _run(cmd, tmp_path) == (0, "") and f.read_text() == "y x\n"
    failed = "ERROR: No replacements were made. The old string was not found in the file."
    cmd = kimi_replace_command(str(f), [("zzz", "q", False)], failed)
    assert _run(cmd, tmp_path) == (1, failed) and f.read_text() == "y x\n"


def test_kimis_own_glob_form_is_a_counted_unknown_tool(tmp_path: Path) -> None:
    path = _kimi_context(
        tmp_path,
        [
            _kimi_call("t1", "Glob", pattern="*.py"),
            _kimi_result("t1", "Found 1 matches for pattern `*.py`.", "app.py"),
        ],
    )
    with pytest.raises(ConvertError) as err:
        convert_episode(parse_raw(_raw(path)))
    assert (err.value.reason, err.value.detail) == ("unknown_tool", "kimi.Glob")


@pytest.mark.parametrize(
    ("args", "obs", "reason"),
    [
        (
            {"command": "npm run dev", "run_in_background": True},
            "Command running in background with ID: b1",
            "background_process",
        ),
        ({"command": "sleep 999", "timeout": 1000}, "Command timed out after 1s", "timeout_output_unknown"),
    ],
)
def test_claude_bash_runs_no_one_shot_command_stands_for_are_counted_drops(
    args: dict[str, Any], obs: str, reason: str
) -> None:
    from pipeline.convert.actions import ToolState
    from pipeline.convert.tools import convert_call

    with pytest.raises(ConvertError) as err:
        convert_call("Bash", args, obs, None, 0, ToolState())
    assert err.value.reason == reason


def test_a_grep_result_shown_relative_to_the_checkout_is_searched_from_it(tmp_path: Path) -> None:
    from pipeline.convert.actions import ToolState
    from pipeline.convert.tools import convert_call

    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.ts").write_text("track session\n")
    (tmp_path / "b.ts").write_text("session track\n")
    args = {"pattern": "track", "path": "/testbed", "output_mode": "files_with_matches"}
    act = convert_call("Grep", args, "Found 2 files\nsrc/a.ts\nb.ts", None, 0, ToolState())
    assert act.command == "grep -rlE -- 'track' | LC_ALL=C sort" and act.output == "b.ts\nsrc/a.ts\n"
    assert _run(act.command, tmp_path) == (0, act.output)
    sub = convert_call(
        "Grep", {**args, "path": "/testbed/src"}, "Found 1 file\nsrc/a.ts", None, 1, ToolState()
    )
    assert sub.command == "grep -rlE -- 'track' 'src'" and _run(sub.command, tmp_path) == (0, "src/a.ts\n")


def test_an_output_zsh_printed_drops_the_session(tmp_path: Path) -> None:
    path = _rollout(
        tmp_path,
        [_exec("c1", "ls *.nope"), _out("c1", _unified("(eval):1: no matches found: *.nope\n", code=1))],
    )
    with pytest.raises(ParseError) as err:
        parse_raw(_raw(path))
    assert err.value.reason == "foreign_shell"


def test_a_fenced_block_in_an_agents_reply_is_narration_not_a_command(tmp_path: Path) -> None:
    shown = {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "Run it with:\n```bash\nrm -rf /\n```"}],
    }
    path = _rollout(tmp_path, [_exec("c1", "ls"), _out("c1", _unified("a\n")), shown])
    assert convert_episode(parse_raw(_raw(path))).commands == ["ls"]


def test_in_a_claude_code_trace_envelope_too_a_fenced_block_in_a_reply_is_not_a_command(
    tmp_path: Path,
) -> None:
    env = _envelope_of(REAL / "claude-hello-world-script.jsonl")
    nodes = env["trace"]["nodes"]
    shown = {"role": "assistant", "content": "To run it again:\n```bash\nrm -rf /tmp/x\n```"}
    nodes.append({"message": shown, "parent": len(nodes) - 1})
    path = tmp_path / "envelope.json"
    path.write_text(json.dumps(env))
    (raw,) = list(iter_trajectory_file(path))
    assert isinstance(raw, RawRun)
    commands = convert_episode(parse_raw(raw)).commands
    assert commands[-1] == "chmod +x /testbed/hello.sh && /testbed/hello.sh" and len(commands) == 2


def _claude_lines(tmp_path: Path, result: dict[str, Any]) -> Path:
    base = {"sessionId": "s", "cwd": "/Users/me/proj", "isSidechain": False, "userType": "external"}
    lines = [
        {
            **base,
            "type": "user",
            "uuid": "u1",
            "parentUuid": None,
            "message": {"role": "user", "content": "Run the tests."},
        },
        {
            **base,
            "type": "assistant",
            "uuid": "a1",
            "parentUuid": "u1",
            "message": {
                "id": "m1",
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "pytest -q"}}
                ],
            },
        },
        {
            **base,
            "type": "user",
            "uuid": "r1",
            "parentUuid": "a1",
            "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", **result}]},
        },
    ]
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def test_a_claude_bash_error_gives_its_noted_code_and_one_without_a_note_drops_the_run(
    tmp_path: Path,
) -> None:
    failed = _claude_lines(tmp_path, {"content": "Exit code 2\nno tests ran", "is_error": True})
    assert _turns(failed)[1:] == (["no tests ran"], [2])
    harness = _claude_lines(tmp_path, {"content": "Error: spawn /bin/sh ENOENT", "is_error": True})
    with pytest.raises(ParseError) as err:
        parse_raw(_raw(harness))
    assert err.value.reason == "unknown_returncode"


def test_a_bash_call_made_where_claude_codes_shell_was_left_runs_there(tmp_path: Path) -> None:
    base = {"sessionId": "s", "isSidechain": False}
    lines = [
        {
            **base,
            "cwd": "/Users/me/proj",
            "type": "user",
            "uuid": "u1",
            "parentUuid": None,
            "message": {"role": "user", "content": "Test it."},
        },
        {
            **base,
            "cwd": "/Users/me/proj",
            "type": "assistant",
            "uuid": "a1",
            "parentUuid": "u1",
            "message": {
                "id": "m1",
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "cd pkg"}}],
            },
        },
        {
            **base,
            "cwd": "/Users/me/proj",
            "type": "user",
            "uuid": "r1",
            "parentUuid": "a1",
            "message": {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t1", "content": ""}],
            },
        },
        {
            **base,
            "cwd": "/Users/me/proj/pkg",
            "type": "assistant",
            "uuid": "a2",
            "parentUuid": "r1",
            "message": {
                "id": "m2",
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t2", "name": "Bash", "input": {"command": "ls"}}],
            },
        },
        {
            **base,
            "cwd": "/Users/me/proj/pkg",
            "type": "user",
            "uuid": "r2",
            "parentUuid": "a2",
            "message": {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t2", "content": "mod.py"}],
            },
        },
    ]
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    assert _turns(path)[0] == ["cd pkg", "cd /testbed/pkg && ls"]


def test_a_codex_rollout_with_its_apply_patch_passes_verify(tmp_path: Path) -> None:
    path = _rollout(
        tmp_path,
        [
            _exec("c1", "cat hello.py"),
            _out("c1", _unified("print('helo')\n")),
            {"type": "custom_tool_call", "name": "apply_patch", "call_id": "c2", "input": PATCH},
            {
                "type": "custom_tool_call_output",
                "call_id": "c2",
                "output": json.dumps({"output": REPORT, "metadata": {"exit_code": 0}}),
            },
            _exec("c3", "python3 hello.py"),
            _out("c3", _unified("hello\n")),
        ],
    )
    (line,) = _published(tmp_path, path)
    assert "drop" not in line, line.get("drop")
    assert [m["content"].split("\n", 2)[1] for m in line["messages"][2::2]] == [
        "cat hello.py",
        "python3 - <<'EOF'",
        "python3 hello.py",
    ]
