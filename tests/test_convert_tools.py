"""Given a tool call and what the harness printed, the published turn is exactly this."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from pipeline.convert import SUBMIT_COMMAND, Converted, convert_episode
from pipeline.core.episode import Bash, ConvertError, Episode, Meta, Step, Task, ToolCall


def episode(*steps: Step, root: str | None = "/workspace/proj") -> Episode:
    return Episode(
        Task("o__proj-1", "o__proj", "Fix it.", "swelego", "python"),
        Meta("SWE-Lego", "openhands", "m", "uid", "openhands", repo_root=root),
        list(steps),
    )


def call(name: str, obs: str = "", rc: int | None = None, thought: str = "t", **args: Any) -> Step:
    return Step(thought, ToolCall(name, args), obs, rc)


def one(step: Step) -> tuple[str, str, int, Converted]:
    conv = convert_episode(episode(step))
    return conv.commands[0], conv.outputs[0], conv.returncodes[0], conv


def sh(cmd: str, cwd: Path) -> tuple[int, str]:
    res = subprocess.run(
        check=False, args=["bash", "-c", cmd], cwd=cwd, capture_output=True, text=True, timeout=20
    )
    return res.returncode, res.stdout + res.stderr


# ------------------------------------------------------------------ bash


@pytest.mark.parametrize(
    ("raw", "command"),
    [
        ("bash -lc 'cd /workspace/proj && pytest -q tests'", "pytest -q tests"),
        ("timeout 60 python run.py", "python run.py"),
        ('cd /workspace/proj && timeout -s KILL 30s bash -c "ls -la"', "ls -la"),
        ("grep -rn 'x' /workspace/proj/src", "grep -rn 'x' /testbed/src"),
    ],
)
def test_bash_wrappers_are_peeled(raw: str, command: str) -> None:
    for name in ("bash", "execute_bash", "Bash", "run"):
        cmd, *_ = one(call(name, "ok\n", 0, command=raw, is_input=False, timeout=120))
        assert cmd == command


def test_openhands_exit_marker_is_the_returncode_and_not_output() -> None:
    obs = "Traceback ...\nValueError\n[The command completed with exit code 1.]\n[Current working directory: /workspace/proj]"
    _cmd, out, rc, conv = one(call("execute_bash", obs, command="python a.py"))
    assert (out, rc) == ("Traceback ...\nValueError\n", 1)
    assert conv.sources[0].rc_from == "record"


def test_a_missing_returncode_is_inferred_by_a_measured_rule_or_left_unknown() -> None:
    _, _, rc, conv = one(call("bash", "hi\n", command="echo hi"))
    assert (rc, conv.sources[0].rc_from) == (0, "rule:loud_success")
    assert conv.counters["convert/returncode_inferred/loud_success"] == 1
    # a traceback does not tell the exit status (a script may print one and go on): no code is guessed
    tb = 'Traceback (most recent call last):\n  File "repro.py", line 1\nValueError: x\n'
    _, _, rc, conv = one(call("bash", tb, command="python repro.py"))
    assert (rc, conv.sources[0].rc_from) == (None, "unknown")
    assert conv.counters["convert/returncode_unknown"] == 1


def test_interrupts_are_removed_and_their_thought_folds_forward() -> None:
    conv = convert_episode(
        episode(
            call("execute_bash", "^C", thought="stop it", command="C-c", is_input=True),
            call("execute_bash", "ok\n", 0, thought="again", command="ls"),
        )
    )
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
        f"{i:6}\tline {i}\n" for i in range(10, 13)
    )
    cmd, out, _rc, _ = one(
        call("str_replace_editor", obs, command="view", path=f"{tmp_path}/b.py", view_range=[10, 12])
    )
    assert cmd == f"cat -n '{tmp_path}/b.py' | sed -n '10,12p'"
    assert sh(cmd, tmp_path) == (0, out)


def test_view_directory_is_find(tmp_path: Path) -> None:
    # openhands-aci's listing: sorted, directories marked with "/", a note on hidden entries
    obs = (
        "Here's the files and directories up to 2 levels deep in /workspace/proj, excluding hidden items:\n"
        "/workspace/proj/\n/workspace/proj/a.py\n/workspace/proj/sub/\n/workspace/proj/sub/b.py\n\n"
        "1 hidden files/directories in this directory are excluded. You can use 'ls -la /workspace/proj' to see them."
    )
    cmd, out, _, _ = one(call("str_replace_editor", obs, command="view", path="/workspace/proj"))
    assert cmd.startswith(
        "find -L '/testbed' -maxdepth 2 -not \\( -path '/testbed/.*' -o -path '/testbed/*/.*' \\)"
    )
    assert out == "/testbed/\n/testbed/a.py\n/testbed/sub/\n/testbed/sub/b.py\n"
    (tmp_path / "sub").mkdir()
    (tmp_path / ".git").mkdir()
    (tmp_path / "a.py").write_text("")
    (tmp_path / "sub" / "b.py").write_text("")
    rc, printed = sh(cmd.replace("/testbed", str(tmp_path)), tmp_path)
    assert (rc, printed.replace(str(tmp_path), "/testbed")) == (0, out)
    # SWE-agent's listing is find's own output: sorted here, so sorted by the command
    obs = (
        "Here's the files and directories up to 2 levels deep in /workspace/proj, excluding hidden items:\n"
        "/workspace/proj\n/workspace/proj/a.py\n"
    )
    cmd, out, _, _ = one(call("str_replace_editor", obs, command="view", path="/workspace/proj"))
    assert (cmd, out) == (
        "find '/testbed' -maxdepth 2 -not -path '*/.*' | LC_ALL=C sort",
        "/testbed\n/testbed/a.py\n",
    )


_HEAD = "Here's the files and directories up to 2 levels deep in /workspace/proj, excluding hidden items:\n"
_CLIP = (
    "<response clipped><NOTE>To save on context only part of this file has been shown to you. You should "
    "retry this tool after you have searched inside the file with `grep -n` in order to find the line "
    "numbers of what you are looking for.</NOTE>"
)


def _tree(tmp_path: Path, names: list[str]) -> Path:
    root = tmp_path / "testbed"
    for n in names:
        (root / n).parent.mkdir(parents=True, exist_ok=True)
        if not n.endswith("/"):
            (root / n).write_text("")
    (root / ".git").mkdir(parents=True, exist_ok=True)
    return root


def _replayed(cmd: str, root: Path) -> tuple[int, str]:
    rc, printed = sh(cmd.replace("/testbed", str(root)), root)
    return rc, printed.replace(str(root), "/testbed")


def test_view_of_a_symlinked_checkout_is_its_root_alone(tmp_path: Path) -> None:
    # OpenHands 0.15 (real run, django__django-10097): the checkout was a symlink find -P does not
    # follow, so the listing is the root alone; find -maxdepth 2 would print the whole tree
    obs = _HEAD + "/workspace/proj"
    cmd, out, rc, _ = one(call("str_replace_editor", obs, command="view", path="/workspace/proj"))
    assert (cmd, out, rc) == ("find '/testbed' -maxdepth 0", "/testbed\n", 0)
    root = _tree(tmp_path, ["a.py", "sub/b.py"])
    assert _replayed(cmd, root) == (0, out)


def test_view_in_a_locale_order_is_sorted_by_that_order(tmp_path: Path) -> None:
    # sort under en_US.UTF-8 ignores "_" and "." and case: "_dev" sorts between "CITATION" and "conf"
    names = ["CITATION", "__init__.py", "_dev/", "_dev/scm.py", "conf.py", "Zeta.py"]
    listing = ["/workspace/proj/", "/workspace/proj/CITATION", "/workspace/proj/conf.py"]
    listing += ["/workspace/proj/_dev/", "/workspace/proj/_dev/scm.py", "/workspace/proj/__init__.py"]
    listing += ["/workspace/proj/Zeta.py"]
    obs = _HEAD + "\n".join(listing)
    cmd, out, _, _ = one(call("str_replace_editor", obs, command="view", path="/workspace/proj"))
    assert out == "\n".join(listing).replace("/workspace/proj", "/testbed") + "\n"
    assert "LC_ALL=C" not in cmd
    assert _replayed(cmd, _tree(tmp_path, names)) == (0, out)


def test_view_in_no_reproducible_order_drops(tmp_path: Path) -> None:
    obs = _HEAD + "/workspace/proj/\n/workspace/proj/b.py\n/workspace/proj/a.py"
    with pytest.raises(ConvertError, match="unverifiable_listing"):
        one(call("str_replace_editor", obs, command="view", path="/workspace/proj"))


def test_clipped_listing_is_the_sorted_listing_cut_at_the_same_byte(tmp_path: Path) -> None:
    # a sorted listing the editor clipped mid-line, then its clip note (harness text): the
    # command is cut with head -c, the note is gone
    root = _tree(tmp_path, [f"m{i:02}.py" for i in range(30)])
    _, full = sh(f"find {root} -maxdepth 2 -not -path '*/.*' | LC_ALL=C sort", root)
    shown = full[: len(full) - 5]
    head = _HEAD.replace("/workspace/proj", str(root))
    step = call("str_replace_editor", head + shown + _CLIP, command="view", path=str(root))
    conv = convert_episode(episode(step, root=None))
    cmd, out, rc = conv.commands[0], conv.outputs[0], conv.returncodes[0]
    assert (out, rc) == (shown, 0)
    assert cmd.endswith(f"| LC_ALL=C sort | head -c {len(shown)}") and "<NOTE>" not in out
    assert sh(cmd, root) == (0, out)


def test_a_listing_in_the_disks_own_order_is_the_editors_own_find() -> None:
    # OpenHands 0.15 (real run, django__django-10554): find's own order, a directory created
    # during the run listed last: what the editor's find printed on the run's checkout
    listing = "/workspace/proj\n/workspace/proj/django\n/workspace/proj/django/views\n/workspace/proj/django/__pycache__"
    cmd, out, rc, _ = one(call("str_replace_editor", _HEAD + listing, command="view", path="/workspace/proj"))
    assert cmd == "find '/testbed' -maxdepth 2 -not -path '*/.*'"
    assert (out, rc) == (listing.replace("/workspace/proj", "/testbed") + "\n", 0)


@pytest.mark.parametrize(
    "listing",
    [
        # (real run, astropy__astropy-14369): the view of /workspace lists the checkout, which the
        # root rewrite turns into /testbed, outside the listed folder
        "/workspace\n/workspace/proj",
    ],
)
def test_listings_no_command_reproduces_drop(listing: str) -> None:
    path = "/workspace" if listing.startswith("/workspace\n") else "/workspace/proj"
    obs = _HEAD.replace("/workspace/proj", path) + listing
    with pytest.raises(ConvertError, match="unverifiable_listing"):
        one(call("str_replace_editor", obs, command="view", path=path))


def test_str_replace_runs_and_prints_the_editors_message(tmp_path: Path) -> None:
    f = tmp_path / "c.py"
    f.write_text("def f():\n    return 1\n")
    msg = f"The file {f} has been edited. Review the changes and make sure they are as expected."
    cmd, out, rc, _ = one(
        call(
            "str_replace_editor",
            msg,
            command="str_replace",
            path=str(f),
            old_str="return 1",
            new_str="return 2",
        )
    )
    assert (out, rc) == (msg, 0)
    assert sh(cmd, tmp_path) == (0, msg)
    assert f.read_text() == "def f():\n    return 2\n"


def test_failed_str_replace_exits_1_with_the_editors_message(tmp_path: Path) -> None:
    f = tmp_path / "d.py"
    f.write_text("x = 1\n")
    msg = f"No replacement was performed, old_str `y = 1` did not appear verbatim in {f}."
    cmd, out, rc, _ = one(
        call("str_replace_editor", msg, command="str_replace", path=str(f), old_str="y = 1", new_str="y = 2")
    )
    assert (out, rc) == (msg, 1)
    assert sh(cmd, tmp_path) == (1, msg)
    assert f.read_text() == "x = 1\n"


def test_create_and_insert_reproduce_the_files(tmp_path: Path) -> None:
    f = tmp_path / "pkg" / "new.py"
    conv = convert_episode(
        episode(
            call(
                "str_replace_editor",
                f"File created successfully at: {f}",
                command="create",
                path=str(f),
                file_text="a\nb\n",
            ),
            call(
                "str_replace_editor", "inserted", command="insert", path=str(f), insert_line=1, new_str="mid"
            ),
        )
    )
    for cmd, out, rc in zip(conv.commands, conv.outputs, conv.returncodes, strict=True):
        assert sh(cmd, tmp_path) == (rc, out)
    assert f.read_text() == "a\nmid\nb\n"


def test_undo_edit_policy() -> None:
    with pytest.raises(ConvertError) as err:
        one(
            call("str_replace_editor", "Last edit to /x undone successfully.", command="undo_edit", path="/x")
        )
    assert err.value.reason == "undo_edit"
    conv = convert_episode(
        episode(
            call(
                "str_replace_editor", "ERROR: No edit history found for /x.", command="undo_edit", path="/x"
            ),
            call("bash", "", 0, command="ls"),
        )
    )
    assert conv.commands == ["ls"] and conv.counters["convert/undo_edit_noop_removed"] == 1


# ------------------------------------------------------------------ other harnesses


def test_bash_harness_edit_and_pi_tools(tmp_path: Path) -> None:
    f = tmp_path / "e.py"
    f.write_text("a = 'x'\n")
    conv = convert_episode(
        episode(
            call("edit", "Edited.", path=str(f), old_str="'x'", new_str="'y'"),
            call("read", "a = 'y'\n", path=str(f)),
            call("write", f"Successfully wrote 6 bytes to {f}", path=str(f), content="b = 1\n"),
            call("edit", "ok", path=str(f), oldText="b = 1", newText="b = 2"),
        )
    )
    assert conv.commands[1] == f"cat '{f}'"
    for cmd, out, rc in zip(conv.commands, conv.outputs, conv.returncodes, strict=True):
        assert sh(cmd, tmp_path) == (rc, out)
    assert f.read_text() == "b = 2\n"


@pytest.mark.parametrize("tool", ["read", "read_file"])
def test_a_read_of_a_file_whose_text_holds_a_failure_hint_is_the_files_text(
    tmp_path: Path, tool: str
) -> None:
    # Rust's ``Error::new`` holds "Error:", a comment "not found": hints of a failed tool only on
    # the first line of an output with no return code, never in the text of a file
    f = tmp_path / "core.rs"
    text = 'use crate::error::Error;\n\n// not found: an empty list\npub fn f() -> Result<(), Error> {\n    Err(Error::new("empty"))\n}\n'
    f.write_text(text)
    cmd, out, rc, _ = one(call(tool, text, path=str(f)))
    assert (cmd, out, rc) == (f"cat '{f}'", text, 0)
    assert sh(cmd, tmp_path) == (rc, out)


def test_claude_code_tools(tmp_path: Path) -> None:
    f = tmp_path / "g.py"
    f.write_text("one\ntwo\nthree\n")
    read_obs = "     2\u2192two\n     3\u2192three\n\n<system-reminder>\nmalware check\n</system-reminder>\n"
    conv = convert_episode(
        episode(
            call("Read", read_obs, file_path=str(f), offset=2, limit=2),
            call(
                "MultiEdit",
                "Applied 2 edits",
                file_path=str(f),
                edits=[
                    {"old_string": "one", "new_string": "1"},
                    {"old_string": "t", "new_string": "T", "replace_all": True},
                ],
            ),
            call("Grep", f"Found 1 file\n{f}\n", pattern="Thr", path=str(tmp_path)),
            call("TodoWrite", "Todos updated", todos=[{"content": "x"}]),
            call("Glob", f"{f}\n", pattern="*.py", path=str(tmp_path)),
        )
    )
    assert conv.outputs[0] == "     2\ttwo\n     3\tthree\n"
    assert conv.commands[2] == f"grep -rlE -- 'Thr' '{tmp_path}'"
    assert len(conv.commands) == 4 and conv.counters["convert/todo_removed"] == 1
    assert conv.outputs[3] == "g.py\n"
    for cmd, out, rc in zip(conv.commands, conv.outputs, conv.returncodes, strict=True):
        assert sh(cmd, tmp_path) == (rc, out)
    assert f.read_text() == "1\nTwo\nThree\n"


def test_sweagent_window_commands(tmp_path: Path) -> None:
    f = tmp_path / "r.py"
    conv = convert_episode(
        episode(
            call("create", f"[File: {f} (1 lines total)]\n1:\n", args="r.py"),
            call(
                "edit",
                f"[File: {f} (2 lines total)]\n1:print(1)\n2:print(2)\n"
                "File updated. Please review the changes.\n",
                args="1:1",
                body="print(1)\nprint(2)\n",
            ),
            call("goto", f"[File: {f} (2 lines total)]\n(1 more lines above)\n2:print(2)\n", args="2"),
            call(
                "search_file",
                f'Found 1 matches for "2" in {f}:\nLine 2:print(2)\nEnd of matches for "2" in {f}\n',
                args='"2"',
            ),
        )
    )
    for cmd, out, rc in zip(conv.commands, conv.outputs, conv.returncodes, strict=True):
        assert sh(cmd, tmp_path) == (rc, out)
    assert f.read_text() == "print(1)\nprint(2)\n"
    assert conv.outputs[3] == "2:print(2)\n"


def window(path: Path | str, lines: list[str], first: int = 1, total: int | None = None) -> str:
    """SWE-agent's window text for ``lines`` starting at line ``first``."""
    total = total if total is not None else first - 1 + len(lines)
    above = f"({first - 1} more lines above)\n" if first > 1 else ""
    last = first + len(lines) - 1
    below = f"({total - last} more lines below)\n" if last < total else ""
    body = "".join(f"{first + i}:{ln}\n" for i, ln in enumerate(lines))
    return f"[File: {path} ({total} lines total)]\n{above}{body}{below}"


REPLACED = (
    "Text replaced. Please review the changes and make sure they are correct:\n\n"
    "1. The edited file is correctly indented\n2. The edited file does not contain duplicate lines\n"
    "3. The edit does not break existing functionality\n\nEdit the file again if necessary.\n"
)


@pytest.mark.parametrize(
    ("name", "text", "structured"),
    [
        ("find_file", {"args": '"m.py" src'}, {"file_name": "m.py", "dir": "src"}),
        ("search_dir", {"args": "TODO src"}, {"search_term": "TODO", "dir": "src"}),
        ("search_file", {"args": "x m.py"}, {"search_term": "x", "file": "m.py"}),
        ("open", {"args": "m.py 3"}, {"path": "m.py", "line_number": 3}),
        ("goto", {"args": "3"}, {"line_number": "3"}),
        ("scroll_down", {"args": ""}, {}),
        ("create", {"args": "m.py"}, {"filename": "m.py"}),
        (
            "edit",
            {"args": "1:2", "body": "a\nb"},
            {"start_line": 1, "end_line": 2, "replacement_text": "a\nb"},
        ),
    ],
)
def test_sweagent_tools_convert_the_same_in_text_and_structured_shape(
    name: str, text: dict[str, Any], structured: dict[str, Any]
) -> None:
    obs = {
        "find_file": 'Found 1 matches for "m.py" in /testbed/src:\n/testbed/src/m.py\n',
        "search_dir": 'Found 2 matches for "TODO" in /testbed/src:\n/testbed/src/m.py (2 matches)\n'
        'End of matches for "TODO" in /testbed/src\n',
        "search_file": 'Found 1 matches for "x" in /testbed/m.py:\nLine 2:x = 1\nEnd of matches\n',
    }.get(name, window("/testbed/m.py", ["a", "b", "c"]))
    a = one(call(name, obs, args=text["args"], body=text.get("body", "")))
    b = one(call(name, obs, **structured))
    assert (a[0], a[1], a[2]) == (b[0], b[1], b[2])


def test_sweagent_1x_function_calls_replay_on_the_file(tmp_path: Path) -> None:
    """find_file → open → edit(search, replace) → insert, as SWE-agent 1.x records them: the
    output has lost its final newline (restored: the printer prints it)."""
    f = tmp_path / "tests" / "m.py"
    f.parent.mkdir()
    f.write_text("def f()\n    return 1\n\n")
    conv = convert_episode(
        episode(
            call(
                "find_file",
                f'Found 1 matches for "m.py" in {tmp_path}:\n{f}',
                file_name="m.py",
                dir=str(tmp_path),
            ),
            call(
                "open", window("tests/m.py", ["def f()", "    return 1", ""]).rstrip("\n"), path="tests/m.py"
            ),
            call(
                "edit",
                REPLACED + window(f, ["def f():", "    return 1", ""]).rstrip("\n"),
                search="def f()",
                replace="def f():",
            ),
            call(
                "edit",
                "Your edit was not applied (file not modified): Text 'zzz' not found in displayed lines "
                "(or anywhere in the file).\n",
                search="zzz",
                replace="y",
            ),
            call("insert", window(f, ["def f():", "    return 1", "", "g = f()"]), text="g = f()\n"),
        )
    )
    assert conv.commands[0] == f"find '{tmp_path}' -type f -name 'm.py'"
    assert conv.outputs[0] == f"{f}\n"
    assert conv.returncodes == [0, 0, 0, 1, 0]
    assert conv.counters["convert/sweagent_newline_restored"] == 2
    for cmd, out, rc in zip(conv.commands, conv.outputs, conv.returncodes, strict=True):
        assert sh(cmd, tmp_path) == (rc, out)
    assert f.read_text() == "def f():\n    return 1\n\ng = f()"


def test_sweagent_search_edit_replaces_only_inside_the_displayed_lines(tmp_path: Path) -> None:
    f = tmp_path / "w.py"
    f.write_text("x = 1\ny = 2\nx = 1\n")
    conv = convert_episode(
        episode(
            call("goto", window(f, ["x = 1"], first=3, total=3), line_number=3),
            call("edit", REPLACED + window(f, ["x = 9"], first=3, total=3), search="x = 1", replace="x = 9"),
        )
    )
    for cmd, out, rc in zip(conv.commands, conv.outputs, conv.returncodes, strict=True):
        assert sh(cmd, tmp_path) == (rc, out)
    assert f.read_text() == "x = 1\ny = 2\nx = 9\n"


LINT = (
    "Your proposed edit has introduced new syntax error(s). Please understand the fixes and retry your "
    "edit commmand.\n\nERRORS:\n- {code}\n\nThis is how your edit would have looked if applied\n"
    "-------------------------------------------------\n{after}"
    "-------------------------------------------------\n\nThis is the original code before your edit\n"
    "-------------------------------------------------\n{before}"
    "-------------------------------------------------\nYour changes have NOT been applied. Please fix your "
    "edit command and try again.\n"
)


def test_lint_rejected_edit_replays_as_a_failing_syntax_checked_edit(tmp_path: Path) -> None:
    """E999: the command applies the edit in memory, fails to compile it, prints exactly the
    recorded rejection, exits 1 and leaves the file as it was."""
    f = tmp_path / "t.py"
    f.write_text("def g():\n    return 1\n")
    obs = LINT.format(
        code="E999 IndentationError: unexpected indent",
        after=window(f, ["def g():", "return 2"]),
        before=window(f, ["def g():", "    return 1"]),
    )
    conv = convert_episode(
        episode(
            call("edit", obs, args="2:2", body="return 2"),
            call("edit", window(f, ["def g():", "    return 2"]), args="2:2", body="    return 2"),
        )
    )
    assert (conv.outputs[0], conv.returncodes[0]) == (obs, 1)
    assert "compile(text, path, 'exec')" in conv.commands[0]
    assert conv.counters["convert/sweagent_edit_rejected_replayed"] == 1
    assert sh(conv.commands[0], tmp_path) == (1, obs)
    assert f.read_text() == "def g():\n    return 1\n"
    assert sh(conv.commands[1], tmp_path) == (0, conv.outputs[1])
    assert f.read_text() == "def g():\n    return 2\n"


def test_lint_rejection_without_a_compile_error_removes_only_that_turn() -> None:
    obs = LINT.format(
        code="F821 undefined name 'h'",
        after=window("/testbed/t.py", ["h()"]),
        before=window("/testbed/t.py", ["g()"]),
    )
    conv = convert_episode(
        episode(
            call("edit", obs, thought="Call h", args="1:1", body="h()"),
            call("bash", "ok\n", 0, thought="Run it", command="python t.py"),
        )
    )
    assert conv.commands == ["python t.py"]
    assert conv.messages[2]["content"] == "THOUGHT: Call h\n\nRun it\n\n```bash\npython t.py\n```"
    assert conv.counters["convert/sweagent_edit_rejected_removed"] == 1
    assert conv.counters["convert/todo_removed"] == 0


def test_sweagent_search_overflow_is_a_counted_drop_unless_it_is_the_calls_own() -> None:
    """The tool's "More than N files matched" refusal converts to a count that prints it (see
    test_sweagent_records); one that names another term than the call's has no such command."""
    msg = 'More than 101 files matched for "x" in /testbed. Please narrow your search.\n'
    assert one(call("search_dir", msg, search_term="x"))[0].startswith("n=$(grep -rlI ")
    with pytest.raises(ConvertError) as err:
        one(call("search_dir", msg, search_term="y"))
    assert err.value.reason == "sweagent_search_overflow"


def test_hermes_and_kimi_style_file_tools(tmp_path: Path) -> None:
    """read_file (numbered), write_file, patch, todo and memory, as the hermes_agent harness calls them."""
    f = tmp_path / "h.py"
    f.write_text("a = 1\nb = 2\n")
    conv = convert_episode(
        episode(
            call("read_file", "     1\ta = 1\n     2\tb = 2\n", thought="Read", path=str(f)),
            call("todo", "Todo list updated (2 items)", thought="Plan", todos=[{"content": "fix"}]),
            call(
                "patch",
                f"Patched {f}: 1 replacement",
                thought="Fix",
                path=str(f),
                old_string="b = 2",
                new_string="b = 3",
            ),
            call("memory", "Memory saved.", thought="Note", action="add", content="b lives in h.py"),
            call(
                "write_file", f"Wrote 6 bytes to {tmp_path}/n.py", path=f"{tmp_path}/n.py", content="n = 1\n"
            ),
            call("read_file", "     2\tb = 3\n", path=str(f), offset=2, limit=1),
        )
    )
    assert conv.commands[0] == f"cat -n '{f}'"
    assert conv.commands[3] == f"cat -n '{f}' | sed -n '2,2p'"
    assert conv.messages[4]["content"].startswith("THOUGHT: Plan\n\nFix\n\n```bash\npython3 - <<'EOF'")
    assert conv.counters["convert/todo_removed"] == 2
    for cmd, out, rc in zip(conv.commands, conv.outputs, conv.returncodes, strict=True):
        assert sh(cmd, tmp_path) == (rc, out)
    assert f.read_text() == "a = 1\nb = 3\n" and (tmp_path / "n.py").read_text() == "n = 1\n"


def test_view_list_search_and_apply_patch_aliases(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    f = tmp_path / "pkg" / "m.py"
    f.write_text("x = 1\n")
    diff = "diff --git a/pkg/m.py b/pkg/m.py\n--- a/pkg/m.py\n+++ b/pkg/m.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    conv = convert_episode(
        episode(
            call("view", f"Here's the result of running `cat -n` on {f}:\n     1\tx = 1\n", path=str(f)),
            call("list_dir", "m.py\n", path=str(tmp_path / "pkg")),
            call("grep", f"{f}:1:x = 1\n", pattern="x =", path=str(tmp_path)),
            call(
                "search",
                f'Found 1 matches for "x" in {tmp_path}:\n{f} (1 matches)\nEnd of matches\n',
                search_term="x",
                path=str(tmp_path),
            ),
            call("apply_patch", "Done!", patch=diff),
            call("grep", "No matches found", pattern="x = 1", path=str(tmp_path)),
        )
    )
    assert conv.commands[1] == f"ls -1p '{tmp_path}/pkg'"
    assert conv.commands[4].startswith("git apply <<'EOF' && printf '%s' 'Done!'\ndiff --git")
    assert conv.returncodes == [0, 0, 0, 0, 0, 1]
    assert conv.outputs[3] == f"{f}:1\n"
    for cmd, out, rc in zip(conv.commands, conv.outputs, conv.returncodes, strict=True):
        assert sh(cmd, tmp_path) == (rc, out)
    assert f.read_text() == "x = 2\n"


@pytest.mark.parametrize(
    ("name", "args", "obs", "reason"),
    [
        (
            "apply_patch",
            {"input": "*** Begin Patch\n*** Update File: a.py\n@@\n-x\n+y\n*** End Patch"},
            "Done!",
            "apply_patch_format",
        ),
        ("list_dir", {"path": "/testbed"}, "b.py\na.py\n", "unverifiable_listing"),
        ("grep", {"pattern": "x"}, "Found matches in 2 files", "unverifiable_search"),
        ("mcp__browser__navigate", {"url": "https://x"}, "ok", "unknown_tool"),
    ],
)
def test_alias_outputs_no_command_would_print_are_counted_drops(
    name: str, args: dict[str, Any], obs: str, reason: str
) -> None:
    with pytest.raises(ConvertError) as err:
        one(call(name, obs, **args))
    assert err.value.reason == reason


# ------------------------------------------------------------------ turn rules


def test_think_folds_into_the_next_thought_and_finish_submits() -> None:
    conv = convert_episode(
        episode(
            Step("", ToolCall("think", {"thought": "Root cause: off by one."}), "", None),
            call("bash", "ok\n", 0, thought="Check", command="ls"),
            call("finish", thought="All done", message="Fixed the bug."),
            call("bash", "late\n", 0, command="echo late"),
        )
    )
    # the record holds no patch: a submit would claim an empty diff, so the run ends before it
    assert conv.commands == ["ls"] and not conv.submitted
    assert conv.messages[2]["content"] == "THOUGHT: Root cause: off by one.\n\nCheck\n\n```bash\nls\n```"
    assert conv.counters["convert/submission_unknown"] == 1
    assert conv.counters["convert/trailing_thought_dropped"] == 1


def test_finish_submits_the_patch_the_record_holds() -> None:
    ep = episode(
        call("bash", "ok\n", 0, thought="Check", command="ls"),
        call("finish", thought="All done", message="Fixed the bug."),
        call("bash", "late\n", 0, command="echo late"),
    )
    ep.meta.submission = "diff --git a/x b/x\n+y\n"
    conv = convert_episode(ep)
    assert conv.commands == ["ls", SUBMIT_COMMAND] and conv.submitted
    assert conv.messages[4]["content"].startswith("THOUGHT: All done\n\nFixed the bug.\n\n```bash\n")
    assert conv.messages[-1] == {"role": "user", "content": "diff --git a/x b/x\n+y\n"}
    assert conv.counters["convert/after_submit_dropped"] == 1


def test_mini_swe_submit_command_keeps_its_patch() -> None:
    patch = "diff --git a/x b/x\n+y\n"
    conv = convert_episode(
        episode(
            call("bash", "x\n", 0, command="cat x"),
            Step("submit", Bash(SUBMIT_COMMAND), f"COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n{patch}", 0),
        )
    )
    assert conv.messages[-1]["content"] == patch and conv.submitted


def test_unknown_tool_is_a_counted_drop_with_its_name() -> None:
    with pytest.raises(ConvertError) as err:
        one(call("browser", "page", url="https://x"))
    assert (err.value.stage, err.value.reason, err.value.detail) == ("convert", "unknown_tool", "browser")


def test_fence_in_command_drops_and_fence_in_thought_is_rewritten() -> None:
    with pytest.raises(ConvertError) as err:
        one(call("bash", "", 0, command="cat > R.md <<'X'\n```bash\nls\n```\nX"))
    assert err.value.reason == "fence_in_command"
    # backticks that cannot form a second ```bash block are left as they were
    conv = convert_episode(episode(call("bash", "", 0, thought="Run ```ls```", command="ls")))
    assert conv.messages[2]["content"] == "THOUGHT: Run ```ls```\n\n```bash\nls\n```"
    assert conv.counters["convert/thought_fence_rewritten"] == 0
    # a ```bash block in the thought would be a second action: its backticks are rewritten
    conv = convert_episode(
        episode(call("bash", "", 0, thought="Not this:\n```bash\nrm x\n```", command="ls"))
    )
    assert conv.messages[2]["content"] == "THOUGHT: Not this:\n~~~bash\nrm x\n~~~\n\n```bash\nls\n```"
    assert conv.counters["convert/thought_fence_rewritten"] == 1


def test_step_limit_cuts_the_run_unsubmitted() -> None:
    steps = [call("bash", f"{i}\n", 0, command=f"echo {i}") for i in range(5)] + [call("submit")]
    conv = convert_episode(episode(*steps), step_limit=3)
    assert conv.commands == ["echo 0", "echo 1", "echo 2"] and not conv.submitted
    assert conv.counters["convert/step_limit_truncated"] == 1
    assert conv.counters["convert/turns"] == 3


def test_harness_exit_code_notes_become_return_codes() -> None:
    from pipeline.convert.bash import split_exit_marker

    assert split_exit_marker("boom\n[exit code: 2]") == ("boom\n", 2)
    assert split_exit_marker("boom\n\nCommand exited with code 127") == ("boom\n", 127)
    assert split_exit_marker("Exit code 1\nTraceback: x\n") == ("Traceback: x\n", 1)
    assert split_exit_marker("all fine\n") == ("all fine\n", None)
    # the words inside ordinary output are left alone
    assert split_exit_marker("grep: [exit code: 2] in docs\nmore\n") == (
        "grep: [exit code: 2] in docs\nmore\n",
        None,
    )


def test_clipped_range_view_is_the_ranges_numbered_prefix(tmp_path: Path) -> None:
    # openhands-aci cuts a range's text at its limit, then numbers it from the range's start
    f = tmp_path / "big.py"
    f.write_text("".join(f"line {i}\n" for i in range(1, 40)))
    text = "\n".join(f"line {i}" for i in range(10, 21))[:30]  # the range's text, cut
    numbered = "\n".join(f"{i + 10:6}\t{ln}" for i, ln in enumerate(text.split("\n")))
    obs = f"Here's the result of running `cat -n` on {f}:\n{numbered}{_CLIP}\n"
    step = call("str_replace_editor", obs, command="view", path=str(f), view_range=[10, 20])
    conv = convert_episode(episode(step, root=None))
    assert (conv.outputs[0], conv.returncodes[0]) == (numbered, 0)
    assert conv.commands[0] == f"cat -n '{f}' | sed -n '10,20p' | head -c {len(numbered)}"
    assert sh(conv.commands[0], tmp_path) == (0, numbered)
