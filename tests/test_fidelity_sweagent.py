"""SWE-agent / SWE-smith conversion fidelity: given this raw run, the converted turns
are exactly these, or the drop is exactly this.

Each defect class has a test built from its minimal repro input (tests/fixtures/repro/) and tests
on the real runs that show it (tests/fixtures/real/). Edits are proved by replay: the converted
commands run with bash on files rebuilt from the run's own windows, and print what the run showed.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import orjson
import pytest

from pipeline.convert import SUBMIT_COMMAND, Converted, convert_episode
from pipeline.core.episode import ConvertError, Episode, Meta, PipelineDrop, RawRun, Step, Task, ToolCall
from pipeline.parsers import parse_raw
from pipeline.parsers.files import iter_trajectory_file

FIXTURES = Path(__file__).resolve().parent / "fixtures"
REPRO = FIXTURES / "repro"
REAL = FIXTURES / "real"


def episode_of(path: Path, row: int = 0) -> Episode:
    runs = [r for r in iter_trajectory_file(path) if isinstance(r, RawRun)]
    return parse_raw(runs[row])


def convert_file(path: Path) -> Converted:
    return convert_episode(episode_of(path))


def drop_of(path: Path) -> tuple[str, str]:
    with pytest.raises(PipelineDrop) as err:
        convert_file(path)
    return err.value.stage, err.value.reason


def sh(cmd: str, root: Path) -> tuple[int, str]:
    """Run a converted command with ``/testbed`` mapped to ``root``; output mapped back."""
    res = subprocess.run(
        ["bash", "-c", cmd.replace("/testbed", str(root))],
        check=False,
        cwd=root,
        capture_output=True,
        text=True,
        timeout=30,
    )
    return res.returncode, res.stdout.replace(str(root), "/testbed")


WINDOW = re.compile(
    r"^\[File: (?P<path>[^\n]+) \((?P<total>\d+) lines total\)\]\n(?P<body>(?:\d+:[^\n]*\n)+)", re.M
)


def whole_file_from_window(output: str) -> tuple[str, str]:
    """(path, text) of a file SWE-agent showed whole (lines 1..total): the window prints
    ``text.split('\\n')`` up to ``len(text.splitlines())`` lines, so the text is those lines, each
    ending in a newline."""
    m = WINDOW.search(output)
    assert m is not None
    lines = [ln.split(":", 1)[1] for ln in m.group("body").splitlines()]
    assert len(lines) == int(m.group("total")), "the window does not show the whole file"
    return m.group("path"), "".join(ln + "\n" for ln in lines)


def git_repo(root: Path, files: dict[str, str], executable: frozenset[str] = frozenset()) -> None:
    for rel, text in files.items():
        f = root / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(text)
        if rel in executable:
            f.chmod(0o755)
    for cmd in ("git init -q", "git add -A", "git -c user.name=t -c user.email=t@t commit -qm base"):
        subprocess.run(cmd, shell=True, cwd=root, check=True)


def sweagent_step(name: str, obs: str, **args: Any) -> Step:
    return Step("t", ToolCall(name, args), obs, None)


def sweagent_episode(*steps: Step) -> Episode:
    return Episode(
        Task("o__r-1", "o__r", "Fix it.", "swe-agent", "python"),
        Meta("community", "swe-agent", "m", "uid", "tool_calls", repo_root="/repo"),
        list(steps),
    )


# ------------------------------------------------------------------ class 1: tool arguments under other names


def test_r1_edit_with_replace_all_hyphen_is_a_replace_on_the_open_file(tmp_path: Path) -> None:
    """R1: ``edit {search, replace, "replace-all"}`` after ``open``. The result says "Replaced 1
    occurrences" (SWE-agent ran the replace-all branch), so the command replaces every occurrence
    in the open file and checks there was exactly one; nothing is empty."""
    conv = convert_file(REPRO / "R1_sweagent_edit_replace_all_hyphen.traj")
    assert conv.commands[1] == (
        "python3 - <<'EOF' && " + conv.commands[0] + "\n"
        "import sys\npath = '/testbed/a.py'\nold = 'x = 1'\nnew = 'x = 2'\n"
        "with open(path, encoding='utf-8', errors='surrogateescape', newline='') as f:\n    text = f.read()\n"
        "n = text.count(old)\nif n != 1:\n"
        "    print(f'No replacement was performed: old_str occurs {n} times in {path}, expected exactly once.')\n"
        "    sys.exit(1)\n"
        "text = text.replace(old, new)\n"
        "with open(path, 'w', encoding='utf-8', errors='surrogateescape', newline='') as f:\n    f.write(text)\n"
        "print('''Replaced 1 occurrences. Please review the changes and make sure they are correct\n"
        "(correct indentation, no duplicate lines, etc). Edit the file again if necessary.\n''', end='')\nEOF"
    )
    assert conv.outputs[:2] == [
        "[File: /testbed/a.py (2 lines total)]\n1:x = 1\n2:print(x)\n",
        "Replaced 1 occurrences. Please review the changes and make sure they are correct\n"
        "(correct indentation, no duplicate lines, etc). Edit the file again if necessary.\n"
        "[File: /testbed/a.py (2 lines total)]\n1:x = 2\n2:print(x)\n",
    ]
    assert conv.returncodes == [0, 0, 0]
    assert conv.commands[2] == SUBMIT_COMMAND
    assert (
        conv.messages[-1]["content"]
        == "diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"
    )
    # replay on the file rebuilt from the open window: every output as recorded, the submitted change
    path, text = whole_file_from_window(conv.outputs[0])
    git_repo(tmp_path, {path.removeprefix("/testbed/"): text})
    assert [sh(c, tmp_path) for c in conv.commands[:2]] == list(
        zip(conv.returncodes[:2], conv.outputs[:2], strict=True)
    )
    assert (tmp_path / "a.py").read_text() == "x = 2\nprint(x)\n"


def test_real_1x_edit_replace_run_replays_to_its_recorded_patch(tmp_path: Path) -> None:
    """The real run behind R1 (SWE-agent test-repo, 1.x, ``edit … False`` run as replace-all): the
    open window rebuilds the file byte for byte (its blob is the diff's ``index 20edef5``), every
    converted command prints what the run showed, and ``git diff`` is the submitted patch."""
    conv = convert_file(REAL / "sweagent-1x-testrepo-6e44b9-edit-replace.traj")
    assert "path = '/testbed/tests/missing_colon.py'" in conv.commands[2]
    assert "old = 'def division(a: float, b: float) -> float'" in conv.commands[2]
    path, text = whole_file_from_window(conv.outputs[1])
    rel = path.removeprefix("/testbed/")
    git_repo(tmp_path, {rel: text}, executable=frozenset({rel}))
    for t in range(3):
        assert sh(conv.commands[t], tmp_path) == (conv.returncodes[t], conv.outputs[t])
    diff = subprocess.run(["git", "diff"], cwd=tmp_path, capture_output=True, text=True, check=True).stdout
    assert diff.startswith(
        "diff --git a/tests/missing_colon.py b/tests/missing_colon.py\nindex 20edef5..5857437 100755\n"
    )
    assert "-def division(a: float, b: float) -> float\n+def division(a: float, b: float) -> float:\n" in diff


REPLACED_ONE = (
    "Text replaced. Please review the changes and make sure they are correct:\n\n"
    "1. The edited file is correctly indented\n2. The edited file does not contain duplicate lines\n"
    "3. The edit does not break existing functionality\n\nEdit the file again if necessary.\n"
)


def test_replace_all_flag_false_that_ran_the_window_replace_stays_in_the_window(tmp_path: Path) -> None:
    """Which branch ran is what the result says: "Text replaced." is the window replace, whatever
    the flag; the other occurrence outside the window is untouched on replay."""
    (tmp_path / "w.py").write_text("x = 1\ny = 2\nx = 1\n")
    win = "[File: /testbed/w.py (3 lines total)]\n(2 more lines above)\n3:x = 1\n"
    conv = convert_episode(
        sweagent_episode(
            sweagent_step("goto", win, line_number=3),
            sweagent_step(
                "edit",
                REPLACED_ONE + win.replace("3:x = 1", "3:x = 9"),
                search="x = 1",
                replace="x = 9",
                **{"replace-all": False},
            ),
        )
    )
    for cmd, out, rc in zip(conv.commands, conv.outputs, conv.returncodes, strict=True):
        assert sh(cmd, tmp_path) == (rc, out)
    assert (tmp_path / "w.py").read_text() == "x = 1\ny = 2\nx = 9\n"


def test_search_equal_to_replace_is_refused_on_replay(tmp_path: Path) -> None:
    """SWE-agent refuses a search equal to its replacement; the command must not claim a success
    (or perform an edit) the tool refused."""
    (tmp_path / "s.py").write_text("a = 1\n")
    refused = (
        "Your search and replace strings are the same. No changes were made. Please modify your "
        "search or replace strings."
    )
    conv = convert_episode(
        sweagent_episode(
            sweagent_step("open", "[File: /testbed/s.py (1 lines total)]\n1:a = 1\n", path="/testbed/s.py"),
            sweagent_step("edit", refused, search="a = 1", replace="a = 1"),
        )
    )
    assert (conv.outputs[1], conv.returncodes[1]) == (refused, 1)
    assert sh(conv.commands[1], tmp_path) == (1, refused)
    assert (tmp_path / "s.py").read_text() == "a = 1\n"


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("edit", {"text": "x = 2\n"}),  # SWE-agent's windowed_edit_rewrite: no replay of the displayed span
        ("edit", {"search": "a", "replacement": "b"}),
        ("edit", {"file_path": "/testbed/a.py", "old_string": "a"}),  # pi/Claude-style without the new text
        ("create", {"filename": "a.py", "content": "x"}),
        ("str_replace_editor", {"command": "create", "path": "/testbed/a.py"}),
        ("str_replace_editor", {"command": "str_replace", "path": "/testbed/a.py", "new_str": "b"}),
        ("str_replace_editor", {"command": "insert", "path": "/testbed/a.py", "new_str": "b"}),
        ("Write", {"file_path": "/testbed/a.py"}),
        ("Edit", {"file_path": "/testbed/a.py", "old_str": "a", "new_str": "b"}),
        ("write_file", {"content": "x"}),
        ("read_file", {"target": "/testbed/a.py"}),
    ],
)
def test_unknown_argument_sets_are_bad_tool_args(name: str, args: dict[str, Any]) -> None:
    """Never an edit, write or read whose path or text is empty because the harness named it
    differently: the run is dropped with ``convert/bad_tool_args``."""
    with pytest.raises(ConvertError) as err:
        convert_episode(sweagent_episode(sweagent_step(name, "File updated.", **args)))
    assert err.value.reason == "bad_tool_args"


# ------------------------------------------------------------------ class 2: review-on-submit, trajectory-only submits


REVIEW_HEAD = (
    "Thank you for your work on this issue. Please carefully follow the steps below to help review your "
    "changes.\n\n1. ...\n2. Remove your reproduction script (if you haven't done so already).\n"
    "4. Run the submit command again to confirm.\n\nHere is a list of all of your changes:\n\n<diff>\n"
)


def without_index_lines(diff: str) -> str:
    return re.sub(r"^index [0-9a-f]+\.\.[0-9a-f]+(?: \d+)?\n", "", diff, flags=re.M)


def test_r2_review_on_submit_ends_at_the_last_submit_with_the_submitted_diff(tmp_path: Path) -> None:
    """R2: submit → review notice → cleanup → submit → diff. The first submit is the review stage
    (its command stages and diffs like the tool did, and prints the notice around the diff); the
    run ends at the second submit, whose reply is the submitted patch."""
    ep = episode_of(REPRO / "R2_sweagent_review_on_submit.traj")
    assert ep.counters["parse/sweagent_review_submit"] == 1
    conv = convert_episode(ep)
    assert conv.commands == [
        "sed -i 's/x = 1/x = 2/' a.py && echo 'print(1)' > repro.py",
        "printf '%s\\n' '" + REVIEW_HEAD[:-1].replace("'", "'\\''") + "' && git add -A && git diff --cached"
        " && printf '%s\\n' '\n</diff>'",
        "rm /testbed/repro.py",
        SUBMIT_COMMAND,
    ]
    assert conv.outputs[1] == REVIEW_HEAD + "diff --git a/repro.py b/repro.py\n...\n</diff>\n"
    assert conv.submitted and conv.returncodes == [0, 0, 0, 0]
    submission = "diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"
    assert conv.messages[-1] == {"role": "user", "content": submission}
    # replay: the review prints its notice around the real staged diff; the final diff is the patch
    git_repo(tmp_path, {"a.py": "x = 1\n"})
    assert sh(conv.commands[0], tmp_path) == (0, "")
    rc, out = sh(conv.commands[1], tmp_path)
    assert (
        rc == 0
        and out.startswith(REVIEW_HEAD + "diff --git a/a.py b/a.py\n")
        and out.endswith(
            "diff --git a/repro.py b/repro.py\nnew file mode 100644\n"
            + out.split("new file mode 100644\n")[1].split("\n", 1)[0]
            + "\n--- /dev/null\n+++ b/repro.py\n"
            "@@ -0,0 +1 @@\n+print(1)\n\n</diff>\n"
        )
    )
    assert sh(conv.commands[2], tmp_path) == (0, "")
    rc, out = sh(conv.commands[3], tmp_path)
    assert rc == 0 and without_index_lines(out) == "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n" + submission


def test_real_swesmith_review_on_submit_run_ends_at_its_second_submit() -> None:
    """SWE-smith's pydantic run (SWE-agent 1.0.1, review_on_submit_m): 22 turns, the review stage
    kept as a turn, the cleanup kept, and the final reply is ``info.submission``."""
    path = REAL / "sweagent-swesmith-pydantic-pr_8316-review-on-submit.traj"
    conv = convert_file(path)
    submission = orjson.loads(path.read_bytes())["info"]["submission"]
    assert len(conv.commands) == 22 and conv.submitted
    assert conv.commands[-3].endswith(" && git add -A && git diff --cached && printf '%s\\n' '\n</diff>'")
    assert conv.outputs[-3].startswith("Thank you for your work on this issue.")
    assert "+++ b/reproduce_error.py\n" in conv.outputs[-3] and conv.outputs[-3].endswith("\n</diff>\n")
    assert conv.commands[-2] == "rm /testbed/reproduce_error.py /testbed/test_edge_cases.py"
    assert conv.messages[-1]["content"] == submission and submission.startswith("diff --git a/pydantic/")


@pytest.mark.parametrize(("row", "turns"), [(0, 36), (1, 43), (2, 21)])
def test_real_swesmith_ft_rows_keep_the_review_stage_and_end_before_the_unrecorded_submit(
    row: int, turns: int
) -> None:
    """SWE-smith's SFT rows carry the same review exchange, but no patch: a final submit would
    claim an empty diff, so the run ends, unsubmitted, with the command before it."""
    ep = episode_of(REAL / "swesmith-ft-xml-example.jsonl", row)
    assert ep.counters["parse/sweagent_review_submit"] == 1
    conv = convert_episode(ep)
    assert len(conv.commands) == turns and not conv.submitted
    assert conv.counters["convert/submission_unknown"] == 1
    assert conv.outputs[-2].startswith("Thank you for your work on this issue.")
    assert conv.commands[-1].startswith("rm ") or conv.commands[-1].startswith("cd /testbed && rm ")


def test_real_trajectory_only_submit_is_kept_with_its_patch() -> None:
    """SWE-agent test-repo run (1.x): the saved history stops before the submit, which only the
    trajectory has. It is kept, and its reply is the recorded diff (pty line ends undone)."""
    path = REAL / "sweagent-1x-testrepo-6e44b9-edit-replace.traj"
    ep = episode_of(path)
    assert ep.counters["parse/trajectory_submit_recovered"] == 1
    conv = convert_episode(ep)
    submission = orjson.loads(path.read_bytes())["info"]["submission"]
    assert conv.submitted and len(conv.commands) == 5
    assert conv.messages[-2]["content"].startswith("THOUGHT: The script `missing_colon.py` ran successfully")
    assert conv.messages[-1]["content"] == submission.replace("\r\n", "\n").lstrip("\n")


def test_submit_that_printed_no_patch_gets_the_records_submission(tmp_path: Path) -> None:
    """An autosubmitted run: the submit step printed ``Exited (autosubmitted)``; the reply is the
    patch in ``info.submission``, never an empty final message."""
    patch = "diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"
    run = orjson.loads((REPRO / "R1_sweagent_edit_replace_all_hyphen.traj").read_bytes())
    run["history"][-1]["content"] = "Exited (autosubmitted)"
    run["info"] = {"submission": patch, "exit_status": "submitted (exit_cost)"}
    f = tmp_path / "auto.traj"
    f.write_bytes(orjson.dumps(run))
    ep = episode_of(f)
    assert ep.counters["parse/submission_from_info"] == 1
    assert convert_episode(ep).messages[-1]["content"] == patch


# ------------------------------------------------------------------ class 7: non-SWE runs, CTF tool bundles


def test_r10_ctf_tools_are_an_unknown_tool_drop() -> None:
    """R10: ``decompile`` is a SWE-agent CTF tool, not a program: never passed through as bash."""
    with pytest.raises(ConvertError) as err:
        convert_file(REPRO / "R10_sweagent_ctf_tools.traj")
    assert (err.value.reason, err.value.detail) == ("unknown_tool", "decompile")


def test_r10_submit_with_a_flag_is_not_the_patch_submit(tmp_path: Path) -> None:
    """R10 without its decompile step: ``submit 'flag{…}'`` submits a flag, not a patch; there is
    no shell command for it, so the run is an unknown_tool drop (never a "submitted" run)."""
    run = orjson.loads((REPRO / "R10_sweagent_ctf_tools.traj").read_bytes())
    run["trajectory"] = [
        {"action": "ls\n", "observation": "rock\n", "thought": "Look.", "state": "{}"},
        *run["trajectory"][1:],
    ]
    f = tmp_path / "flag.traj"
    f.write_bytes(orjson.dumps(run))
    ep = episode_of(f)
    assert not ep.meta.submitted
    with pytest.raises(ConvertError) as err:
        convert_episode(ep)
    assert (err.value.reason, err.value.detail) == ("unknown_tool", "submit <argument>")


@pytest.mark.parametrize(
    ("name", "detail"),
    [
        ("sweagent-ctf-rock.traj", "decompile"),
        ("sweagent-ctf-warmup.traj", "disassemble"),
        ("sweagent-ctf-networking_1.traj", "submit <argument>"),
        ("sweagent-ctf-2024-09-i_got_id_demo.traj", "submit <argument>"),
        ("sweagent-ctf-BabyEncryption.traj", "submit <argument>"),  # its `edit 2:2 decrypt.py` is `edit 2:2`
    ],
)
def test_real_ctf_runs_are_unknown_tool_drops(name: str, detail: str) -> None:
    with pytest.raises(ConvertError) as err:
        convert_file(REAL / name)
    assert (err.value.reason, err.value.detail) == ("unknown_tool", detail)


def test_tools_documented_in_the_system_prompt_are_known_in_both_doc_styles() -> None:
    from pipeline.parsers.sweagent_tools import declared_tools

    rock = orjson.loads((REAL / "sweagent-ctf-rock.traj").read_bytes())["history"][0]["content"]
    assert declared_tools(rock) == {
        "open",
        "goto",
        "scroll_down",
        "scroll_up",
        "create",
        "search_dir",
        "search_file",
        "find_file",
        "edit",
        "submit",
        "decompile",
    }
    cursors = orjson.loads((REAL / "sweagent-demo-cursors-marshmallow-1867.traj").read_bytes())["history"][0][
        "content"
    ]
    assert declared_tools(cursors) == {
        "set_cursors",
        "open",
        "scroll_down",
        "scroll_up",
        "goto",
        "get_symbols",
        "create",
        "submit",
        "edit",
        "search_dir",
        "search_file",
        "find_file",
        "summarize",
    }
    assert declared_tools("You are a helpful assistant.") == frozenset()


def test_a_documented_tool_run_from_the_shell_is_that_tool_not_a_program() -> None:
    """A SWE-agent 1.x run calling a tool of its bundles through ``bash`` (they are on the PATH):
    the tool is dropped as unknown, not replayed as a shell command that does not exist."""
    run = orjson.loads((REPRO / "R1_sweagent_edit_replace_all_hyphen.traj").read_bytes())
    run["history"][0]["content"] = "COMMANDS:\ncheck_flag <flag> - checks a flag\n\n\n"
    run["history"][2]["tool_calls"][0]["function"] = {
        "name": "bash",
        "arguments": '{"command": "check_flag x"}',
    }
    raw = RawRun("uid", "community", "sweagent", None, run, 0)
    ep = parse_raw(raw)
    assert ep.counters["parse/sweagent_tool_in_shell"] == 1
    with pytest.raises(ConvertError) as err:
        convert_episode(ep)
    assert (err.value.reason, err.value.detail) == ("unknown_tool", "check_flag")


def test_swesmith_bare_fence_rows_run_sweagent_tools_as_tools() -> None:
    """SWE-smith's ``ticks`` rows (SWE-agent text actions in a bare fence): ``open`` is the
    windowed tool, converted to the window printer, never passed to the shell as ``open``."""
    row = {
        "instance_id": "o__r.12345678.x",
        "messages": [
            {"role": "system", "content": "sys"},
            {"role": "user", "content": "Fix the bug."},
            {"role": "assistant", "content": "Look.\n```\nopen a.py\n```"},
            {
                "role": "user",
                "content": "[File: /testbed/a.py (1 lines total)]\n1:x = 1\n"
                "(Open file: /testbed/a.py)\n(Current directory: /testbed)\nbash-$",
            },
            {"role": "assistant", "content": "Done.\n```\nsubmit\n```"},
            {"role": "user", "content": "diff --git a/a.py b/a.py\n"},
        ],
    }
    ep = parse_raw(RawRun("uid", "SWE-smith", "swesmith", None, row, 0))
    conv = convert_episode(ep)
    assert conv.commands[0].startswith("awk ") and conv.commands[0].endswith("'/testbed/a.py'")
    assert conv.outputs[0] == "[File: /testbed/a.py (1 lines total)]\n1:x = 1\n"
    assert conv.submitted and conv.commands[1] == SUBMIT_COMMAND


def cat_n_text(output: str) -> str:
    """The file a whole-file ``cat -n`` printed."""
    return "".join(line.split("\t", 1)[1] + "\n" for line in output.splitlines())


def test_real_swesmith_run_replays_edits_review_and_patch(tmp_path: Path) -> None:
    """SWE-smith's pydantic run, replayed without the repository: the module rebuilt from the run's
    own whole-file view; every editor turn (view, two creates, six str_replace edits), the review stage
    and the cleanup run with bash and print exactly the converted observation; the review's diff is
    git's, and the final ``git diff --cached`` is ``info.submission`` byte for byte (same blobs).
    Turns running python, pip or find need the whole tree or environment: bench/replay.py."""
    path = REAL / "sweagent-swesmith-pydantic-pr_8316-review-on-submit.traj"
    conv = convert_file(path)
    assert conv.commands[1] == "cat -n '/testbed/pydantic/alias_generators.py'"
    git_repo(tmp_path, {"pydantic/alias_generators.py": cat_n_text(conv.outputs[1])})
    # the checkout ignores root ``test_*.py`` scratch files: the run's own review diff lists its
    # reproduce_error.py but not its test_edge_cases.py
    (tmp_path / ".git" / "info" / "exclude").write_text("/test_*.py\n")
    replayed = 0
    for cmd, out, rc in zip(conv.commands, conv.outputs, conv.returncodes, strict=True):
        if cmd.startswith(("python ", "pip ", "find ")):  # need the whole tree or the environment
            continue
        if cmd == SUBMIT_COMMAND:
            res = sh(cmd, tmp_path)
            assert res == (
                0,
                "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n"
                + orjson.loads(path.read_bytes())["info"]["submission"],
            )
            assert conv.messages[-1]["content"] == res[1].split("\n", 1)[1]
            continue
        assert sh(cmd, tmp_path) == (rc, out), cmd[:80]
        replayed += 1
    assert replayed == 11


# ------------------------------------------------------------------ class 9: final newlines SWE-agent 1.x stripped


@pytest.mark.parametrize(
    ("command", "newline"),
    [
        ("python reproduce.py", True),
        ("cd /testbed && python reproduce.py", True),
        ("python -m pytest -q tests/test_x.py 2>&1 | tail -5", True),
        ("grep -n x a.py | head -3", True),
        ("find . -name '*.py' | sort", True),
        ("ls -F", True),
        ("echo hi", True),
        ("printf '%s\\n' x", True),
        ("python3 - <<'EOF'\nprint(1)\nEOF", True),
        ("python -c \"print(1, end='')\"", False),
        ("python -c 'import sys; sys.stdout.write(\"x\")'", False),
        ("echo -n hi", False),
        ("printf '%s' x", False),
        ("cat a.py", False),
        ("cat a.py | head -5", False),
        ("sed -n 1,5p a.py", False),
        ("./rock", False),
        ("python x.py &> log; cat log", False),
    ],
)
def test_final_newline_policy_is_decided_from_the_command(command: str, newline: bool) -> None:
    from pipeline.parsers.sweagent_outputs import prints_final_newline

    assert prints_final_newline(command) is newline


def test_real_1x_outputs_get_back_the_newline_the_command_printed(tmp_path: Path) -> None:
    """The real run behind R1: ``python3 …missing_colon.py`` printed ``8.2\\n``, recorded ``8.2``;
    the tool outputs lost theirs too. Restored, every turn replays exactly on the rebuilt file."""
    ep = episode_of(REAL / "sweagent-1x-testrepo-6e44b9-edit-replace.traj")
    assert ep.counters["parse/sweagent_newline_restored"] == 4
    conv = convert_episode(ep)
    assert (conv.commands[3], conv.outputs[3]) == ("python3 /testbed/tests/missing_colon.py", "8.2\n")
    path, text = whole_file_from_window(conv.outputs[1])
    git_repo(tmp_path, {path.removeprefix("/testbed/"): text})
    for t in range(4):
        assert sh(conv.commands[t], tmp_path) == (conv.returncodes[t], conv.outputs[t])


def test_a_stripped_output_of_a_byte_copying_command_is_left_as_recorded() -> None:
    """``cat`` of a file may end without a newline: the recorded output stays as it is."""
    run = orjson.loads((REPRO / "R2_sweagent_review_on_submit.traj").read_bytes())
    run["history"][2]["tool_calls"][0]["function"]["arguments"] = '{"command": "cat /repo/a.py"}'
    run["history"][3]["content"] = "x = 1"
    ep = parse_raw(RawRun("uid", "community", "sweagent", None, run, 0))
    assert ep.steps[0].observation == "x = 1"


# ------------------------------------------------------------------ timeouts


@pytest.mark.parametrize(
    ("observation", "shown"),
    [
        ("\nEXECUTION TIMED OUT", ""),
        (
            "partial line\nEXECUTION TIMED OUT BECAUSE NO OUTPUT WAS PRODUCED FOR MORE THAN 60.0 SECONDS.\n"
            "PLEASE REFINE YOUR RUNNING COMMAND SO IT WILL PRODUCE OUTPUT IN THE SPECIFIED TIME FRAME.",
            "partial line",
        ),
        ("\nEXECUTION TIMED OUT BECAUSE THE COMMAND WAS RUNNING FOR MORE THAN 500 SECONDS.", ""),
        (
            "The command 'python serve.py' was cancelled because it took more than 30 seconds. Please try a different "
            "command that completes more quickly. Note: A common source of this error is if the command is interactive "
            "or requires user input (it is impossible to receive user input in the current environment, so the command "
            "will never complete).",
            "",
        ),
    ],
)
def test_sweagent_timeouts_mark_the_step_timed_out(observation: str, shown: str) -> None:
    """SWE-agent's "EXECUTION TIMED OUT" (0.x) and cancel message (1.x): the step never finished;
    its observation is what the command printed before it was killed, with no return code."""
    run = orjson.loads((REPRO / "R2_sweagent_review_on_submit.traj").read_bytes())
    run["history"][3]["content"] = observation
    ep = parse_raw(RawRun("uid", "community", "sweagent", None, run, 0))
    st = ep.steps[0]
    assert (st.timed_out, st.returncode, st.observation) == (True, None, shown)
    assert ep.counters["parse/timed_out"] == 1 and not any(s.timed_out for s in ep.steps[1:])


def test_real_0x_timeout_is_marked() -> None:
    ep = episode_of(REAL / "sweagent-ctf-rock.traj")
    assert (ep.steps[0].timed_out, ep.steps[0].observation) == (True, "")


def test_real_abbreviated_editor_view_is_not_cat_n() -> None:
    """SWE-smith's pandas run views pandas/io/sql.py whole; SWE-agent's editor printed an
    abbreviated file (function bodies elided, then clipped). ``cat -n`` would claim the whole
    file: the view is the awk that prints the abbreviation (tests/test_filemap.py proves it)."""
    conv = convert_file(REAL / "sweagent-swesmith-pandas-pr_53856.traj")
    assert not conv.commands[1].startswith("cat -n") and conv.commands[1].startswith("awk ")


# ------------------------------------------------------------------ class 4: SWE-agent 0.x cursor editor


def window_lines(output: str) -> dict[int, str]:
    """Line number → text of every numbered line a window shows."""
    return {int(n): t for n, t in re.findall(r"^(\d+):(.*)$", output, re.M)}


@pytest.mark.parametrize(
    "name", ["sweagent-demo-cursors-marshmallow-1867.traj", "sweagent-demo-xml-cursors-marshmallow-1867.traj"]
)
def test_real_cursor_editor_runs_replay_with_their_cursor_marks(name: str, tmp_path: Path) -> None:
    """SWE-agent's 0.x cursor editor (``set_cursors``, ``edit`` between the cursors): each window
    is printed with the START/END marks where the run showed them, the cursor edit replaces the
    lines between the cursors, the lint-rejected one fails without touching the file. Replayed on
    reproduce.py (created by the run) and fields.py rebuilt from the run's window (1374-1574 of its
    1997 lines; the rest blank), every editor turn prints exactly its observation and the final
    diff is the submitted one."""
    conv = convert_file(REAL / name)
    assert len(conv.commands) == 12 and conv.submitted
    assert conv.outputs[0] == (
        "[File: /testbed/reproduce.py (1 lines total)]\n<<<<< START CURSOR >>>>>\n1:\n"
        "<<<<< END CURSOR >>>>>\nSTART_CURSOR moved to 1\nEND_CURSOR moved to 1\n\n"
    )
    shown = window_lines(conv.outputs[5])
    assert (min(shown), max(shown)) == (1374, 1574)
    fields = [shown.get(i, "") for i in range(1, 1998)]
    git_repo(tmp_path, {"src/marshmallow/fields.py": "".join(line + "\n" for line in fields)})
    replayed = 0
    for cmd, out, rc in zip(conv.commands, conv.outputs, conv.returncodes, strict=True):
        if cmd.startswith(("python ", "ls ", "find ")) or cmd == SUBMIT_COMMAND:
            continue
        assert sh(cmd, tmp_path) == (rc, out), cmd[:80]
        replayed += 1
    assert replayed == 7 and conv.returncodes[7] == 1
    diff = subprocess.run(["git", "diff"], cwd=tmp_path, capture_output=True, text=True, check=True).stdout
    assert without_index_lines(diff) == without_index_lines(conv.messages[-1]["content"])


def test_a_thought_quoting_the_demonstrations_checkout_gets_testbed() -> None:
    """SWE-agent 1.x demo runs work in /testbed, but the model's thought quotes the in-context
    demonstration's ``/marshmallow-code__marshmallow``: SWE-agent's checkout form always becomes
    /testbed (validate would drop it as a foreign root)."""
    conv = convert_file(
        REAL / "sweagent-1x-2024-11-demo-function-calling-replace-trajectory-only-submit.traj"
    )
    assert 'I see that "Current directory" is still `/testbed`' in conv.messages[18]["content"]
    assert "__marshmallow" not in "".join(m["content"] for m in conv.messages)


def test_terminal_ls_columns_get_ls_C_and_replay(tmp_path: Path) -> None:
    """SWE-agent 1.x ran ``ls -F`` on a terminal: the recorded listing is in columns. Without a
    terminal ``ls`` prints a name a line, so the command becomes ``ls -C -F``, which prints the same
    columns: replayed on a directory holding the names the listing shows."""
    ep = episode_of(REAL / "sweagent-demo-function-calling-marshmallow-1867.traj")
    assert ep.counters["parse/terminal_ls_columns"] == 1
    conv = convert_episode(ep)
    t = conv.commands.index("ls -C -F")
    for name in re.split(r"\s+", conv.outputs[t].strip()):
        (tmp_path / name.rstrip("/")).mkdir() if name.endswith("/") else (tmp_path / name).touch()
    assert sh(conv.commands[t], tmp_path) == (0, conv.outputs[t])


def test_ls_one_name_a_line_is_left_alone() -> None:
    run = orjson.loads((REPRO / "R2_sweagent_review_on_submit.traj").read_bytes())
    run["history"][2]["tool_calls"][0]["function"]["arguments"] = '{"command": "ls -F"}'
    run["history"][3]["content"] = "a.py\nsrc/"
    ep = parse_raw(RawRun("uid", "community", "sweagent", None, run, 0))
    assert ep.steps[0].call.args["command"] == "ls -F" and ep.steps[0].observation == "a.py\nsrc/\n"


@pytest.mark.parametrize(
    ("action", "after"),
    [
        ("edit 2:2\nend_of_edit", "a\nc\n"),  # no line: line 2 deleted (the window then shows 2 lines)
        ("edit 2:2\n\nend_of_edit", "a\n\nc\n"),  # one empty line
        ("edit 2:2\nB\n\nend_of_edit", "a\nB\n\nc\n"),  # a trailing empty line is a line
    ],
)
def test_a_text_edit_writes_exactly_its_heredoc_lines(action: str, after: str, tmp_path: Path) -> None:
    """SWE-agent's edit reads its replacement line by line from a heredoc: the converted command
    leaves the file with exactly those lines in the range (replayed with bash)."""
    from pipeline.convert.tools import ToolState, convert_call
    from pipeline.parsers.sweagent import text_action

    (tmp_path / "a.py").write_text("a\nb\nc\n")
    n = after.count("\n")
    shown = "".join(f"{i}:{line}\n" for i, line in enumerate(after.split("\n")[:-1], 1))
    obs = f"[File: /testbed/a.py ({n} lines total)]\n{shown}File updated. Please review the changes."
    call = text_action(action)
    assert isinstance(call, ToolCall)
    act = convert_call(call.name, dict(call.args), obs, None, 0, ToolState())
    code, out = sh(act.command, tmp_path)
    assert (code, (tmp_path / "a.py").read_text()) == (0, after)
    assert out == act.output


def test_a_create_the_editor_refused_writes_nothing_though_no_status_was_recorded(tmp_path: Path) -> None:
    """SWE-agent's ``str_replace_editor create`` on an existing path prints its refusal and writes
    nothing; SWE-agent records no exit status, so the refusal's words alone say it failed: the
    command refuses the same way (exit 1, the file untouched), it does not overwrite the file."""
    from pipeline.convert.tools import ToolState, convert_call

    refusal = "File already exists at: /testbed/r.py. Cannot overwrite files using command `create`."
    (tmp_path / "r.py").write_text("old\n")
    args = {"command": "create", "path": "/testbed/r.py", "file_text": "new\n"}
    act = convert_call("str_replace_editor", args, refusal, None, 0, ToolState())
    assert act.returncode == 1
    code, out = sh(act.command, tmp_path)
    assert (code, out, (tmp_path / "r.py").read_text()) == (1, refusal, "old\n")
