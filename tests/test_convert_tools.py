"""Given a tool call and what the harness printed, the published turn is exactly this."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from pipeline.convert import SUBMIT_COMMAND, Converted, convert_episode
from pipeline.episode import Bash, ConvertError, Episode, Meta, Step, Task, ToolCall


def episode(*steps: Step, root: str | None = "/workspace/proj") -> Episode:
    return Episode(Task("o__proj-1", "o__proj", "Fix it.", "swelego", "python"),
                   Meta("SWE-Lego", "openhands", "m", "uid", "openhands", repo_root=root), list(steps))


def call(name: str, obs: str = "", rc: int | None = None, thought: str = "t", **args: Any) -> Step:
    return Step(thought, ToolCall(name, args), obs, rc)


def one(step: Step) -> tuple[str, str, int, Converted]:
    conv = convert_episode(episode(step))
    return conv.commands[0], conv.outputs[0], conv.returncodes[0], conv


def sh(cmd: str, cwd: Path) -> tuple[int, str]:
    res = subprocess.run(["bash", "-c", cmd], cwd=cwd, capture_output=True, text=True, timeout=20)
    return res.returncode, res.stdout + res.stderr


# ------------------------------------------------------------------ bash


@pytest.mark.parametrize(("raw", "command"), [
    ("bash -lc 'cd /workspace/proj && pytest -q tests'", "pytest -q tests"),
    ("timeout 60 python run.py", "python run.py"),
    ('cd /workspace/proj && timeout -s KILL 30s bash -c "ls -la"', "ls -la"),
    ("grep -rn 'x' /workspace/proj/src", "grep -rn 'x' /testbed/src"),
])
def test_bash_wrappers_are_peeled(raw: str, command: str) -> None:
    for name in ("bash", "execute_bash", "Bash", "run"):
        cmd, *_ = one(call(name, "ok\n", 0, command=raw, is_input=False, timeout=120))
        assert cmd == command


def test_openhands_exit_marker_is_the_returncode_and_not_output() -> None:
    obs = "Traceback ...\nValueError\n[The command completed with exit code 1.]\n[Current working directory: /workspace/proj]"
    cmd, out, rc, conv = one(call("execute_bash", obs, command="python a.py"))
    assert (out, rc) == ("Traceback ...\nValueError\n", 1)
    assert conv.counters["convert/returncode_inferred"] == 0


def test_unknown_returncode_is_inferred_and_counted() -> None:
    _, _, rc, conv = one(call("bash", "hi\n", command="echo hi"))
    assert rc == 0 and conv.counters["convert/returncode_inferred"] == 1


def test_interrupts_are_removed_and_their_thought_folds_forward() -> None:
    conv = convert_episode(episode(call("execute_bash", "^C", thought="stop it", command="C-c", is_input=True),
                                   call("execute_bash", "ok\n", 0, thought="again", command="ls")))
    assert conv.commands == ["ls"]
    assert conv.messages[2]["content"] == "THOUGHT: stop it\n\nagain\n\n```bash\nls\n```"
    with pytest.raises(ConvertError) as err:
        convert_episode(episode(call("execute_bash", "", command="y", is_input=True)))
    assert err.value.reason == "interactive_input"


# ------------------------------------------------------------------ str_replace_editor


def test_view_file_is_cat_n_and_matches_the_editor(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("import os\n\tx = 1\n")
    obs = f"Here's the result of running `cat -n` on {tmp_path}/a.py:\n     1\timport os\n     2\t\tx = 1\n     3\t\n"
    cmd, out, rc, _ = one(call("str_replace_editor", obs, command="view", path=f"{tmp_path}/a.py"))
    assert cmd == f"cat -n '{tmp_path}/a.py'"
    assert (rc, out) == (0, "     1\timport os\n     2\t\tx = 1\n")
    assert sh(cmd, tmp_path) == (0, out)


def test_view_range_is_numbered_like_the_editor(tmp_path: Path) -> None:
    (tmp_path / "b.py").write_text("".join(f"line {i}\n" for i in range(1, 30)))
    obs = f"Here's the result of running `cat -n` on {tmp_path}/b.py:\n" + "".join(
        f"{i:6}\tline {i}\n" for i in range(10, 13))
    cmd, out, rc, _ = one(call("str_replace_editor", obs, command="view", path=f"{tmp_path}/b.py",
                               view_range=[10, 12]))
    assert cmd == f"cat -n '{tmp_path}/b.py' | sed -n '10,12p'"
    assert sh(cmd, tmp_path) == (0, out)


def test_view_directory_is_find() -> None:
    obs = ("Here's the files and directories up to 2 levels deep in /workspace/proj, excluding hidden items:\n"
           "/workspace/proj/\n/workspace/proj/a.py\n")
    cmd, out, _, _ = one(call("str_replace_editor", obs, command="view", path="/workspace/proj"))
    assert cmd == "find '/testbed' -maxdepth 2 -not -path '*/.*'"
    assert out == "/testbed/\n/testbed/a.py\n"


def test_str_replace_runs_and_prints_the_editors_message(tmp_path: Path) -> None:
    f = tmp_path / "c.py"
    f.write_text("def f():\n    return 1\n")
    msg = f"The file {f} has been edited. Review the changes and make sure they are as expected."
    cmd, out, rc, _ = one(call("str_replace_editor", msg, command="str_replace", path=str(f),
                               old_str="return 1", new_str="return 2"))
    assert (out, rc) == (msg, 0)
    assert sh(cmd, tmp_path) == (0, msg)
    assert f.read_text() == "def f():\n    return 2\n"


def test_failed_str_replace_exits_1_with_the_editors_message(tmp_path: Path) -> None:
    f = tmp_path / "d.py"
    f.write_text("x = 1\n")
    msg = f"No replacement was performed, old_str `y = 1` did not appear verbatim in {f}."
    cmd, out, rc, _ = one(call("str_replace_editor", msg, command="str_replace", path=str(f),
                               old_str="y = 1", new_str="y = 2"))
    assert (out, rc) == (msg, 1)
    assert sh(cmd, tmp_path) == (1, msg)
    assert f.read_text() == "x = 1\n"


def test_create_and_insert_reproduce_the_files(tmp_path: Path) -> None:
    f = tmp_path / "pkg" / "new.py"
    conv = convert_episode(episode(
        call("str_replace_editor", f"File created successfully at: {f}", command="create", path=str(f),
             file_text="a\nb\n"),
        call("str_replace_editor", "inserted", command="insert", path=str(f), insert_line=1, new_str="mid"),
    ))
    for cmd, out, rc in zip(conv.commands, conv.outputs, conv.returncodes, strict=True):
        assert sh(cmd, tmp_path) == (rc, out)
    assert f.read_text() == "a\nmid\nb\n"


def test_undo_edit_policy() -> None:
    with pytest.raises(ConvertError) as err:
        one(call("str_replace_editor", "Last edit to /x undone successfully.", command="undo_edit", path="/x"))
    assert err.value.reason == "undo_edit"
    conv = convert_episode(episode(
        call("str_replace_editor", "ERROR: No edit history found for /x.", command="undo_edit", path="/x"),
        call("bash", "", 0, command="ls")))
    assert conv.commands == ["ls"] and conv.counters["convert/undo_edit_noop_removed"] == 1


# ------------------------------------------------------------------ other harnesses


def test_bash_harness_edit_and_pi_tools(tmp_path: Path) -> None:
    f = tmp_path / "e.py"
    f.write_text("a = 'x'\n")
    conv = convert_episode(episode(
        call("edit", "Edited.", path=str(f), old_str="'x'", new_str="'y'"),
        call("read", "a = 'y'\n", path=str(f)),
        call("write", f"Successfully wrote 6 bytes to {f}", path=str(f), content="b = 1\n"),
        call("edit", "ok", path=str(f), oldText="b = 1", newText="b = 2"),
    ))
    assert conv.commands[1] == f"cat '{f}'"
    for cmd, out, rc in zip(conv.commands, conv.outputs, conv.returncodes, strict=True):
        assert sh(cmd, tmp_path) == (rc, out)
    assert f.read_text() == "b = 2\n"


def test_claude_code_tools(tmp_path: Path) -> None:
    f = tmp_path / "g.py"
    f.write_text("one\ntwo\nthree\n")
    read_obs = "     2\u2192two\n     3\u2192three\n\n<system-reminder>\nmalware check\n</system-reminder>\n"
    conv = convert_episode(episode(
        call("Read", read_obs, file_path=str(f), offset=2, limit=2),
        call("MultiEdit", "Applied 2 edits", file_path=str(f),
             edits=[{"old_string": "one", "new_string": "1"}, {"old_string": "t", "new_string": "T",
                                                               "replace_all": True}]),
        call("Grep", f"Found 1 file\n{f}\n", pattern="Thr", path=str(tmp_path)),
        call("TodoWrite", "Todos updated", todos=[{"content": "x"}]),
        call("Glob", f"{f}\n", pattern="*.py", path=str(tmp_path)),
    ))
    assert conv.outputs[0] == "     2\ttwo\n     3\tthree\n"
    assert conv.commands[2] == f"grep -rlE -- 'Thr' '{tmp_path}'"
    assert len(conv.commands) == 4 and conv.counters["convert/todo_removed"] == 1
    assert conv.outputs[3] == "g.py\n"
    for cmd, out, rc in zip(conv.commands, conv.outputs, conv.returncodes, strict=True):
        assert sh(cmd, tmp_path) == (rc, out)
    assert f.read_text() == "1\nTwo\nThree\n"


def test_sweagent_window_commands(tmp_path: Path) -> None:
    f = tmp_path / "r.py"
    conv = convert_episode(episode(
        call("create", f"[File: {f} (1 lines total)]\n1:\n", args="r.py"),
        call("edit", f"[File: {f} (2 lines total)]\n1:print(1)\n2:print(2)\n"
                     "File updated. Please review the changes.\n", args="1:1", body="print(1)\nprint(2)\n"),
        call("goto", f"[File: {f} (2 lines total)]\n(1 more lines above)\n2:print(2)\n", args="2"),
        call("search_file", f'Found 1 matches for "2" in {f}:\nLine 2:print(2)\nEnd of matches for "2" in {f}\n',
             args='"2"'),
    ))
    for cmd, out, rc in zip(conv.commands, conv.outputs, conv.returncodes, strict=True):
        assert sh(cmd, tmp_path) == (rc, out)
    assert f.read_text() == "print(1)\nprint(2)\n"
    assert conv.outputs[3] == "2:print(2)\n"
    with pytest.raises(ConvertError) as err:
        one(call("edit", "Your proposed edit has introduced new syntax error(s).", args="1:1", body="x"))
    assert err.value.reason == "sweagent_edit_rejected"


# ------------------------------------------------------------------ turn rules


def test_think_folds_into_the_next_thought_and_finish_submits() -> None:
    conv = convert_episode(episode(
        Step("", ToolCall("think", {"thought": "Root cause: off by one."}), "", None),
        call("bash", "ok\n", 0, thought="Check", command="ls"),
        call("finish", thought="All done", message="Fixed the bug."),
        call("bash", "late\n", 0, command="echo late"),
    ))
    assert conv.commands == ["ls", SUBMIT_COMMAND] and conv.submitted
    assert conv.messages[2]["content"] == "THOUGHT: Root cause: off by one.\n\nCheck\n\n```bash\nls\n```"
    assert conv.messages[4]["content"].startswith("THOUGHT: All done\n\nFixed the bug.\n\n```bash\n")
    assert conv.messages[-1] == {"role": "user", "content": ""}
    assert conv.counters["convert/after_submit_dropped"] == 1
    assert conv.counters["convert/submission_unknown"] == 1


def test_mini_swe_submit_command_keeps_its_patch() -> None:
    patch = "diff --git a/x b/x\n+y\n"
    conv = convert_episode(episode(Step("submit", Bash(SUBMIT_COMMAND),
                                        f"COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n{patch}", 0)))
    assert conv.messages[-1]["content"] == patch and conv.submitted


def test_unknown_tool_is_a_counted_drop_with_its_name() -> None:
    with pytest.raises(ConvertError) as err:
        one(call("browser", "page", url="https://x"))
    assert (err.value.stage, err.value.reason, err.value.detail) == ("convert", "unknown_tool", "browser")


def test_fence_in_command_drops_and_fence_in_thought_is_rewritten() -> None:
    with pytest.raises(ConvertError) as err:
        one(call("bash", "", 0, command="cat > R.md <<'X'\n```bash\nls\n```\nX"))
    assert err.value.reason == "fence_in_command"
    conv = convert_episode(episode(call("bash", "", 0, thought="Run ```ls```", command="ls")))
    assert conv.messages[2]["content"] == "THOUGHT: Run ~~~ls~~~\n\n```bash\nls\n```"
    assert conv.counters["convert/thought_fence_rewritten"] == 1


def test_step_limit_cuts_the_run_unsubmitted() -> None:
    steps = [call("bash", f"{i}\n", 0, command=f"echo {i}") for i in range(5)] + [call("submit")]
    conv = convert_episode(episode(*steps), step_limit=3)
    assert conv.commands == ["echo 0", "echo 1", "echo 2"] and not conv.submitted
    assert conv.counters["convert/step_limit_truncated"] == 1
    assert conv.counters["convert/turns"] == 3
