"""SWE-agent / SWE-smith conversion fidelity (issue 11): given this raw run, the converted turns
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
from pipeline.episode import ConvertError, Episode, Meta, PipelineDrop, RawRun, Step, Task, ToolCall
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
    res = subprocess.run(["bash", "-c", cmd.replace("/testbed", str(root))], cwd=root, capture_output=True,
                         text=True, timeout=30)
    return res.returncode, res.stdout.replace(str(root), "/testbed")


WINDOW = re.compile(r"^\[File: (?P<path>[^\n]+) \((?P<total>\d+) lines total\)\]\n(?P<body>(?:\d+:[^\n]*\n)+)", re.M)


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
    return Episode(Task("o__r-1", "o__r", "Fix it.", "swe-agent", "python"),
                   Meta("community", "swe-agent", "m", "uid", "tool_calls", repo_root="/repo"), list(steps))


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
        "(correct indentation, no duplicate lines, etc). Edit the file again if necessary.\n''', end='')\nEOF")
    assert conv.outputs[:2] == [
        "[File: /testbed/a.py (2 lines total)]\n1:x = 1\n2:print(x)\n",
        "Replaced 1 occurrences. Please review the changes and make sure they are correct\n"
        "(correct indentation, no duplicate lines, etc). Edit the file again if necessary.\n"
        "[File: /testbed/a.py (2 lines total)]\n1:x = 2\n2:print(x)\n"]
    assert conv.returncodes == [0, 0, 0]
    assert conv.commands[2] == SUBMIT_COMMAND
    assert conv.messages[-1]["content"] == "diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"
    # replay on the file rebuilt from the open window: every output as recorded, the submitted change
    path, text = whole_file_from_window(conv.outputs[0])
    git_repo(tmp_path, {path.removeprefix("/testbed/"): text})
    assert [sh(c, tmp_path) for c in conv.commands[:2]] == list(zip(conv.returncodes[:2], conv.outputs[:2], strict=True))
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
    assert diff.startswith("diff --git a/tests/missing_colon.py b/tests/missing_colon.py\nindex 20edef5..5857437 100755\n")
    assert "-def division(a: float, b: float) -> float\n+def division(a: float, b: float) -> float:\n" in diff


REPLACED_ONE = ("Text replaced. Please review the changes and make sure they are correct:\n\n"
                "1. The edited file is correctly indented\n2. The edited file does not contain duplicate lines\n"
                "3. The edit does not break existing functionality\n\nEdit the file again if necessary.\n")


def test_replace_all_flag_false_that_ran_the_window_replace_stays_in_the_window(tmp_path: Path) -> None:
    """Which branch ran is what the result says: "Text replaced." is the window replace, whatever
    the flag; the other occurrence outside the window is untouched on replay."""
    (tmp_path / "w.py").write_text("x = 1\ny = 2\nx = 1\n")
    win = "[File: /testbed/w.py (3 lines total)]\n(2 more lines above)\n3:x = 1\n"
    conv = convert_episode(sweagent_episode(
        sweagent_step("goto", win, line_number=3),
        sweagent_step("edit", REPLACED_ONE + win.replace("3:x = 1", "3:x = 9"),
                      search="x = 1", replace="x = 9", **{"replace-all": False})))
    for cmd, out, rc in zip(conv.commands, conv.outputs, conv.returncodes, strict=True):
        assert sh(cmd, tmp_path) == (rc, out)
    assert (tmp_path / "w.py").read_text() == "x = 1\ny = 2\nx = 9\n"


def test_search_equal_to_replace_is_refused_on_replay(tmp_path: Path) -> None:
    """SWE-agent refuses a search equal to its replacement; the command must not claim a success
    (or perform an edit) the tool refused."""
    (tmp_path / "s.py").write_text("a = 1\n")
    refused = ("Your search and replace strings are the same. No changes were made. Please modify your "
               "search or replace strings.")
    conv = convert_episode(sweagent_episode(
        sweagent_step("open", "[File: /testbed/s.py (1 lines total)]\n1:a = 1\n", path="/testbed/s.py"),
        sweagent_step("edit", refused, search="a = 1", replace="a = 1")))
    assert (conv.outputs[1], conv.returncodes[1]) == (refused, 1)
    assert sh(conv.commands[1], tmp_path) == (1, refused)
    assert (tmp_path / "s.py").read_text() == "a = 1\n"


@pytest.mark.parametrize(("name", "args"), [
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
])
def test_unknown_argument_sets_are_bad_tool_args(name: str, args: dict[str, Any]) -> None:
    """Never an edit, write or read whose path or text is empty because the harness named it
    differently: the run is dropped with ``convert/bad_tool_args``."""
    with pytest.raises(ConvertError) as err:
        convert_episode(sweagent_episode(sweagent_step(name, "File updated.", **args)))
    assert err.value.reason == "bad_tool_args"


# ------------------------------------------------------------------ class 2: review-on-submit, trajectory-only submits


REVIEW_HEAD = ("Thank you for your work on this issue. Please carefully follow the steps below to help review your "
               "changes.\n\n1. ...\n2. Remove your reproduction script (if you haven't done so already).\n"
               "4. Run the submit command again to confirm.\n\nHere is a list of all of your changes:\n\n<diff>\n")


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
        SUBMIT_COMMAND]
    assert conv.outputs[1] == REVIEW_HEAD + "diff --git a/repro.py b/repro.py\n...\n</diff>\n"
    assert conv.submitted and conv.returncodes == [0, 0, 0, 0]
    submission = "diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"
    assert conv.messages[-1] == {"role": "user", "content": submission}
    # replay: the review prints its notice around the real staged diff; the final diff is the patch
    git_repo(tmp_path, {"a.py": "x = 1\n"})
    assert sh(conv.commands[0], tmp_path) == (0, "")
    rc, out = sh(conv.commands[1], tmp_path)
    assert rc == 0 and out.startswith(REVIEW_HEAD + "diff --git a/a.py b/a.py\n") and out.endswith(
        "diff --git a/repro.py b/repro.py\nnew file mode 100644\n"
        + out.split("new file mode 100644\n")[1].split("\n", 1)[0] + "\n--- /dev/null\n+++ b/repro.py\n"
        "@@ -0,0 +1 @@\n+print(1)\n\n</diff>\n")
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


@pytest.mark.parametrize(("row", "turns"), [(0, 37), (1, 44), (2, 22)])
def test_real_swesmith_ft_rows_keep_the_review_stage_and_end_at_the_last_submit(row: int, turns: int) -> None:
    """SWE-smith's SFT rows carry the same review exchange; the row ends with the second submit
    (no patch recorded in the row, so none is shown)."""
    ep = episode_of(REAL / "swesmith-ft-xml-example.jsonl", row)
    assert ep.counters["parse/sweagent_review_submit"] == 1
    conv = convert_episode(ep)
    assert len(conv.commands) == turns and conv.submitted and conv.commands[-1] == SUBMIT_COMMAND
    assert conv.outputs[-3].startswith("Thank you for your work on this issue.")
    assert conv.commands[-2].startswith("rm ") or conv.commands[-2].startswith("cd /testbed && rm ")


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
