"""SWE-agent runs as their records end them: harness exits, autosubmissions, the submitted patch
(``Meta.submission``), multi-agent handoffs and the viewer's refusals.

Given a real run (tests/fixtures/real/, MIT) ended or extended the way real runs of a wider
harvest are (a trailing ``exit_cost`` action, an ``info.exit_status`` of ``submitted (exit_cost)``,
a manager's ``plan`` and its agents' ``succeed``, ``open`` of a missing file, ``goto`` past the end),
the published turns are exactly these. The wider harvest's own files (a multi-agent fork without a
licence) are not vendored: each test rebuilds the shape on a vendored run, in the test.
"""

from __future__ import annotations

import copy
import subprocess
from pathlib import Path
from typing import Any

import orjson
import pytest

from pipeline.convert import SUBMIT_COMMAND, Converted, convert_episode
from pipeline.core.episode import ConvertError, Episode, RawRun
from pipeline.parsers import parse_raw
from pipeline.parsers.files import iter_trajectory_file
from pipeline.parsers.sweagent import submit_argument

REAL = Path(__file__).resolve().parent / "fixtures" / "real"
# SWE-agent 0.x demo run (text actions, windowed editor), ends with ``submit`` and its diff
DEMO = REAL / "sweagent-0x-2024-04-demo-default-marshmallow-1867.traj"
# SWE-agent 1.x run on a pty: its recorded submission has ``\r\n`` line ends and a leading one
TESTREPO = REAL / "sweagent-1x-testrepo-6e44b9-edit-replace.traj"


def load(path: Path) -> dict[str, Any]:
    run = orjson.loads(path.read_bytes())
    assert isinstance(run, dict)
    return run


def parse(run: dict[str, Any], tmp_path: Path, name: str = "run.traj") -> Episode:
    f = tmp_path / name
    f.write_bytes(orjson.dumps(run))
    raws = [r for r in iter_trajectory_file(f) if isinstance(r, RawRun)]
    return parse_raw(raws[0])


def sh(cmd: str, root: Path) -> tuple[int, str]:
    """Run a converted command with ``/testbed`` mapped to ``root``."""
    res = subprocess.run(
        ["bash", "-c", cmd.replace("/testbed", str(root))],
        check=False,
        cwd=root,
        capture_output=True,
        text=True,
        timeout=30,
    )
    return res.returncode, res.stdout.replace(str(root), "/testbed")


def demo_cut(at: int) -> dict[str, Any]:
    """The demo run with its trajectory cut before step ``at`` (13 is its submit)."""
    run = copy.deepcopy(load(DEMO))
    run["trajectory"] = run["trajectory"][:at]
    return run


EXIT_STEP = {"action": "exit_cost", "observation": "", "thought": "Exit due to cost limit", "state": "{}"}


# ------------------------------------------------------------------ harness exits (0.x)


@pytest.mark.parametrize("exit_action", ["exit_cost", "exit_context", "exit_format", "exit_error"])
def test_a_run_stopped_by_its_harness_is_kept_as_not_submitted(tmp_path: Path, exit_action: str) -> None:
    """A 0.x run whose last action is the harness's exit and whose record says it did not
    submit: the exit is no turn, the run is kept and does not end with a submit."""
    run = demo_cut(13)
    run["trajectory"].append({**EXIT_STEP, "action": exit_action})
    run["info"] = {"exit_status": exit_action, "submission": None}
    ep = parse(run, tmp_path)
    assert ep.counters["parse/sweagent_exit_removed"] == 1
    assert not ep.meta.submitted and ep.meta.submission is None
    conv = convert_episode(ep)
    assert not conv.submitted and SUBMIT_COMMAND not in conv.commands
    assert conv.commands[-1] == "rm reproduce.py" and len(conv.commands) == 13
    assert not any(c.split()[0].startswith("exit_") for c in conv.commands)


def test_an_autosubmitted_run_ends_with_the_patch_its_record_holds(tmp_path: Path) -> None:
    """``submitted (exit_cost)``: the harness ran ``git add -A && git diff --cached`` after the
    exit. The run ends with mini's submit (that same command) and its final message is the
    record's patch."""
    patch = load(DEMO)["info"]["submission"]
    run = demo_cut(13)
    run["trajectory"].append(dict(EXIT_STEP))
    run["info"] = {"exit_status": "submitted (exit_cost)", "submission": patch}
    ep = parse(run, tmp_path)
    assert ep.counters["parse/sweagent_autosubmission"] == 1
    conv = convert_episode(ep)
    assert conv.submitted and conv.commands[-1] == SUBMIT_COMMAND and len(conv.commands) == 14
    assert conv.messages[-1]["content"] == patch.lstrip("\n") == ep.meta.submission
    assert conv.messages[-2]["content"].count("```bash") == 1


def test_a_submit_the_trajectory_lost_is_restored_from_the_record(tmp_path: Path) -> None:
    """The record says ``submitted`` with a patch but the steps stop before any submit (the fork's
    trajectory ends with its cost exit): the run still ends with the submit of that patch."""
    patch = load(DEMO)["info"]["submission"]
    run = demo_cut(13)
    run["trajectory"].append(dict(EXIT_STEP))
    run["info"] = {"exit_status": "submitted", "submission": patch}
    conv = convert_episode(parse(run, tmp_path))
    assert conv.submitted and conv.messages[-1]["content"] == patch.lstrip("\n")


# ------------------------------------------------------------------ Meta.submission


def test_meta_submission_is_the_recorded_patch_as_the_final_message_shows_it(tmp_path: Path) -> None:
    """0.x: the patch after SWE-agent's leading newline; 1.x on a pty: its ``\\r\\n`` undone as in
    the run's observations. Either way it is exactly the published final message."""
    for path in (DEMO, TESTREPO):
        ep = parse(load(path), tmp_path, path.name)
        conv = convert_episode(ep)
        assert ep.meta.submission is not None and ep.meta.submission.startswith("diff --git ")
        assert "\r" not in ep.meta.submission
        assert conv.submitted and conv.messages[-1]["content"] == ep.meta.submission


def test_meta_submission_is_none_where_the_record_says_nothing(tmp_path: Path) -> None:
    """A run without ``info`` that never submitted: the record does not say."""
    run = demo_cut(13)
    del run["info"]
    ep = parse(run, tmp_path)
    assert ep.meta.submission is None and not ep.meta.submitted


def test_the_submit_turn_shows_meta_submission_when_it_is_set(tmp_path: Path) -> None:
    """The final message is the patch the record says was submitted, not whatever diff the step
    printed (the verify step holds the run to ``Meta.submission``)."""
    ep = parse(load(DEMO), tmp_path)
    recorded = "diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b\n"
    ep.meta.submission = recorded
    assert convert_episode(ep).messages[-1]["content"] == recorded


# ------------------------------------------------------------------ multi-agent handoffs


def multi_agent(run: dict[str, Any]) -> dict[str, Any]:
    """The demo run as a manager/programmer fork records it: a second agent's prompt, the
    manager's ``plan`` first, the programmer's ``succeed`` before the submit."""
    run = copy.deepcopy(run)
    hist = run["history"]
    system = next(m for m in hist if m["role"] == "system")
    manager = {**system, "agent": "Manager", "content": "SETTING: You are the Manager.\n"}
    for m in hist:
        m["agent"] = "Programmer"
    run["history"] = [manager, *hist]
    plan = {
        "action": 'plan\n{\n  "entry": "Programmer"\n}\n',
        "observation": "\nIn order to solve this issue, the manager has planned for several roles:\nProgrammer\n",
        "thought": "DISCUSSION\nThe Programmer can fix this on its own.",
        "state": "{}",
    }
    succeed = {"action": "succeed\n", "observation": "", "thought": "The fix works.", "state": "{}"}
    traj = run["trajectory"]
    run["trajectory"] = [plan, *traj[:-1], succeed, traj[-1]]
    return run


def test_handoffs_of_a_multi_agent_run_are_no_commands(tmp_path: Path) -> None:
    """``plan``/``succeed`` are the fork's orchestration tools, not programs: their turns go,
    their thoughts are carried to the next turn, the other turns are unchanged."""
    plain = convert_episode(parse(load(DEMO), tmp_path, "plain.traj"))
    ep = parse(multi_agent(load(DEMO)), tmp_path)
    conv = convert_episode(ep)
    assert conv.counters["convert/sweagent_handoff_removed"] == 2
    assert conv.commands == plain.commands
    assert not any(c.split()[0] in ("plan", "succeed", "fail") for c in conv.commands)
    assert conv.thoughts[0].startswith("DISCUSSION\nThe Programmer can fix this on its own.\n\n")
    assert conv.thoughts[-1].startswith("The fix works.\n\n")


def test_single_agent_runs_have_no_handoff_tools(tmp_path: Path) -> None:
    """In a one-agent run ``plan`` is whatever the shell runs (no tool of that name)."""
    run = copy.deepcopy(load(DEMO))
    run["trajectory"][0] = {**run["trajectory"][0], "action": "plan\n"}
    ep = parse(run, tmp_path)
    assert convert_episode(ep).commands[0] == "plan"


def test_a_tool_documented_as_a_signature_block_of_another_agent_is_a_tool(tmp_path: Path) -> None:
    """The fork documents some tools as ``name:\\n  signature: …`` in one agent's prompt only:
    such a word is that tool (an unknown_tool drop), never passed through as bash."""
    run = multi_agent(load(DEMO))
    run["history"][0]["content"] += (
        "COMMANDS:\nstackoverflow_search:\n  signature: stackoverflow_search\n  docstring: searches\n\n\n"
    )
    run["trajectory"][1] = {**run["trajectory"][1], "action": "stackoverflow_search\n"}
    with pytest.raises(ConvertError) as err:
        convert_episode(parse(run, tmp_path))
    assert (err.value.reason, err.value.detail) == ("unknown_tool", "stackoverflow_search")


# ------------------------------------------------------------------ the viewer's refusals


def converted_with(tmp_path: Path, step: int, action: str, observation: str) -> Converted:
    run = copy.deepcopy(load(DEMO))
    run["trajectory"].insert(
        step, {"action": action, "observation": observation, "thought": "Look.", "state": "{}"}
    )
    return convert_episode(parse(run, tmp_path))


def test_open_of_a_missing_file_prints_the_viewers_message_and_changes_nothing(tmp_path: Path) -> None:
    """0.x ``open`` of a path that is not there prints ``File P not found``: the command tests for
    the path and prints exactly that when it is missing; the run is kept."""
    conv = converted_with(tmp_path, 1, "open src/fields.py\n", "File src/fields.py not found\n")
    cmd, out, rc = conv.commands[1], conv.outputs[1], conv.returncodes[1]
    assert out == "File src/fields.py not found\n" and rc == 0
    root = tmp_path / "repo"
    root.mkdir()
    assert sh(cmd, root) == (0, out)
    (root / "src").mkdir()
    (root / "src" / "fields.py").write_text("x = 1\n")
    assert sh(cmd, root) == (0, "")  # the message is the file's absence, not a constant
    assert conv.commands[2].startswith("awk ") and "setup.py" in conv.commands[2]


def test_goto_past_the_end_prints_the_viewers_error_from_the_open_file(tmp_path: Path) -> None:
    """``goto 2091`` in a 1997-line file: the viewer refused it; the command prints the same error,
    computed from the open file, and the later edit of that file still converts."""
    conv = converted_with(tmp_path, 9, "goto 2091\n", "Error: <line> must be less than or equal to 1997\n")
    cmd, out = conv.commands[9], conv.outputs[9]
    assert out == "Error: <line> must be less than or equal to 1997\n"
    root = tmp_path / "repo"
    (root / "src" / "marshmallow").mkdir(parents=True)
    (root / "src" / "marshmallow" / "fields.py").write_text("x\n" * 1997)
    assert sh(cmd, root) == (0, out)
    (root / "src" / "marshmallow" / "fields.py").write_text("x\n" * 2100)
    assert sh(cmd, root) == (0, "")
    assert conv.commands[-1] == SUBMIT_COMMAND


def test_a_goto_error_that_does_not_fit_the_call_stays_a_window_drop(tmp_path: Path) -> None:
    """The error says the file is longer than the line asked for: not the viewer's refusal."""
    with pytest.raises(ConvertError) as err:
        converted_with(tmp_path, 9, "goto 12\n", "Error: <line> must be less than or equal to 1997\n")
    assert err.value.reason == "sweagent_window"


@pytest.mark.parametrize(
    ("action", "observation", "counter"),
    [
        ("goto 40\n", "No file open. Use the `open` command first.", "convert/sweagent_no_open_file_removed"),
        (
            "scroll_down\n",
            "No file open. Use the open command first.\n",
            "convert/sweagent_no_open_file_removed",
        ),
        (
            "edit 1\nx = 1\nend_of_edit\n",
            "Usage: edit <start_line>:<end_line>\n",
            "convert/sweagent_usage_removed",
        ),
    ],
)
def test_a_call_the_tool_refused_is_removed_with_its_thought_carried(
    tmp_path: Path, action: str, observation: str, counter: str
) -> None:
    """The 0.x tools refuse before doing anything when no file is open or the arguments fit no
    usage: nothing changed and no command prints the harness's complaint, so the turn goes (its
    thought is carried to the next turn) and the run is kept."""
    plain = convert_episode(parse(load(DEMO), tmp_path, "plain.traj"))
    conv = converted_with(tmp_path, 1, action, observation)
    assert conv.counters[counter] == 1
    assert conv.commands == plain.commands
    assert conv.thoughts[1].startswith("Look.\n\n")


def test_open_with_a_line_of_a_missing_file_drops_the_harness_scripts_errors(tmp_path: Path) -> None:
    """``open P N`` of a missing P: before its message the 0.x script's own ``awk`` and ``[``
    failed on the missing file; the command tests the path and prints the tool's message only."""
    noisy = (
        "awk: cannot open compiler.py (No such file or directory)\n"
        "/root/commands/defaults.sh: line 54: [: 347: unary operator expected\n"
        "File compiler.py not found\n"
    )
    conv = converted_with(tmp_path, 1, "open compiler.py 347\n", noisy)
    assert conv.outputs[1] == "File compiler.py not found\n"
    root = tmp_path / "repo"
    root.mkdir()
    assert sh(conv.commands[1], root) == (0, conv.outputs[1])


def test_search_file_greps_a_basic_regular_expression_as_the_tool_does(tmp_path: Path) -> None:
    """SWE-agent's search tools run ``grep -- "$search_term"`` (a basic regex, ``.`` any
    character): the listing of ``a.b`` holds ``axb`` too, and the command prints it."""
    conv = converted_with(
        tmp_path,
        2,
        "search_file a.b\n",
        'Found 2 matches for "a.b" in /marshmallow-code__marshmallow/setup.py:\n'
        "Line 2:axb = 1\nLine 3:a.b = 2\n"
        'End of matches for "a.b" in /marshmallow-code__marshmallow/setup.py\n',
    )
    root = tmp_path / "repo"
    root.mkdir()
    (root / "setup.py").write_text("import re\naxb = 1\na.b = 2\n")
    assert conv.outputs[2] == "2:axb = 1\n3:a.b = 2\n"
    assert sh(conv.commands[2], root) == (0, conv.outputs[2])


def test_search_dir_past_the_tools_limit_prints_its_refusal_from_the_count(tmp_path: Path) -> None:
    """``More than N files matched``: the command counts the matching files as the tool does
    (hidden paths skipped) and prints the same sentence, only over the tool's limit of 100."""
    where = "/marshmallow-code__marshmallow/src"
    conv = converted_with(
        tmp_path,
        2,
        "search_dir import src\n",
        f'More than 120 files matched for "import" in {where}. Please narrow your search.\n',
    )
    cmd, out = conv.commands[2], conv.outputs[2]
    assert out == 'More than 120 files matched for "import" in /testbed/src. Please narrow your search.\n'
    root = tmp_path / "repo"
    (root / "src" / ".hidden").mkdir(parents=True)
    for i in range(120):
        (root / "src" / f"m{i}.py").write_text("import os\n")
    (root / "src" / ".hidden" / "x.py").write_text("import os\n")
    assert sh(cmd, root) == (0, out)
    for i in range(30):
        (root / "src" / f"m{i}.py").unlink()
    assert sh(cmd, root) == (1, "")


def test_a_search_without_a_place_searches_where_the_tool_says_it_did(tmp_path: Path) -> None:
    """``search_dir TERM`` searches the shell's working directory, which the tool names in its
    first line (``… in /repo/src:``): the command greps there, not the repository root."""
    repo = "/marshmallow-code__marshmallow"
    conv = converted_with(
        tmp_path,
        2,
        "search_dir import\n",
        f'Found 2 matches for "import" in {repo}/src:\n{repo}/src/a.py (1 matches)\n'
        f'{repo}/src/b.py (1 matches)\nEnd of matches for "import" in {repo}/src\n',
    )
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    for name in ("src/a.py", "src/b.py", "c.py"):
        (root / name).write_text("import os\n")
    assert conv.outputs[2] == "/testbed/src/a.py:1\n/testbed/src/b.py:1\n"
    assert sh(conv.commands[2], root) == (0, conv.outputs[2])


def test_without_a_patch_in_info_meta_submission_is_the_diff_the_submit_printed(tmp_path: Path) -> None:
    """``info`` says ``submitted`` but holds no patch: the record's patch is the diff the submit
    step printed; with neither, the run submitted nothing ("")."""
    run = copy.deepcopy(load(DEMO))
    shown = run["trajectory"][-1]["observation"]
    run["info"] = {"exit_status": "submitted"}
    ep = parse(run, tmp_path)
    assert ep.meta.submission == shown.lstrip("\n")
    assert convert_episode(ep).messages[-1]["content"] == ep.meta.submission
    run["trajectory"][-1]["observation"] = ""
    ep = parse(run, tmp_path, "empty.traj")
    assert ep.meta.submission == "" and convert_episode(ep).messages[-1]["content"] == ""


# ------------------------------------------------------------------ tools run from the shell

PYDANTIC = REAL / "sweagent-swesmith-pydantic-pr_8316-review-on-submit.traj"


def as_shell_call(run: dict[str, Any], index: int, command: str) -> dict[str, Any]:
    """History message ``index``'s tool call made through the ``bash`` tool instead."""
    run = copy.deepcopy(run)
    call = run["history"][index]["tool_calls"][0]["function"]
    call["name"], call["arguments"] = "bash", orjson.dumps({"command": command}).decode()
    return run


def editor_args(run: dict[str, Any], index: int) -> dict[str, Any]:
    args = orjson.loads(run["history"][index]["tool_calls"][0]["function"]["arguments"])
    assert isinstance(args, dict)
    return args


def test_str_replace_editor_run_from_the_shell_converts_like_the_tools_call(tmp_path: Path) -> None:
    """SWE-agent 1.x puts ``str_replace_editor`` on the PATH: a model that calls it through
    ``bash`` (``str_replace_editor str_replace P --old_str … --new_str …``) ran the same tool, and
    the run converts to exactly the commands and outputs of the structured calls."""
    import shlex

    run = load(PYDANTIC)
    plain = convert_episode(parse(run, tmp_path, "plain.traj"))
    view, edit = editor_args(run, 4), editor_args(run, 14)
    shell = as_shell_call(run, 4, f"str_replace_editor view {view['path']}")
    words = ["str_replace_editor", "str_replace", edit["path"], "--old_str", edit["old_str"]]
    shell = as_shell_call(shell, 14, shlex.join([*words, "--new_str", edit["new_str"]]))
    conv = convert_episode(parse(shell, tmp_path))
    assert (conv.commands, conv.outputs) == (plain.commands, plain.outputs)


@pytest.mark.parametrize(
    ("command", "detail"),
    [
        ("filemap /testbed/pydantic/alias_generators.py", "filemap"),
        ("str_replace_editor view /testbed/a.py | head", "str_replace_editor <in a command line>"),
        (
            "ls && str_replace_editor view /testbed/pydantic/alias_generators.py",
            "str_replace_editor <in a command line>",
        ),
    ],
)
def test_a_bundle_tool_the_converter_cannot_reproduce_is_a_counted_drop(
    tmp_path: Path, command: str, detail: str
) -> None:
    """A tool of SWE-agent's bundles run from the shell, alone or inside a command line, is never
    passed through as a program: an unknown_tool drop named after it."""
    with pytest.raises(ConvertError) as err:
        convert_episode(parse(as_shell_call(load(PYDANTIC), 4, command), tmp_path))
    assert (err.value.reason, err.value.detail) == ("unknown_tool", detail)


def test_a_windowed_tool_after_cd_is_the_tool(tmp_path: Path) -> None:
    """``cd DIR && open P``: the tool printed its window with the absolute path; the command is
    the window's printer (the ``cd`` changes none of its output)."""
    plain = convert_episode(parse(load(DEMO), tmp_path, "plain.traj"))
    run = copy.deepcopy(load(DEMO))
    run["trajectory"][1]["action"] = "cd /marshmallow-code__marshmallow && open setup.py\n"
    conv = convert_episode(parse(run, tmp_path))
    assert conv.commands == plain.commands and conv.outputs == plain.outputs


def test_a_windowed_tool_chained_to_another_command_is_a_counted_drop(tmp_path: Path) -> None:
    """``open setup.py && goto 50`` printed two windows from one command line: no one window
    printer reproduces it, and neither word may pass through as a program."""
    run = copy.deepcopy(load(DEMO))
    run["trajectory"][1]["action"] = "open setup.py && goto 50\n"
    with pytest.raises(ConvertError) as err:
        convert_episode(parse(run, tmp_path))
    assert (err.value.reason, err.value.detail) == ("unknown_tool", "open <in a command line>")


def test_a_final_submit_the_record_says_did_not_submit_is_no_submit_turn(tmp_path: Path) -> None:
    """``info.exit_status`` says the run ended another way (the harness failed on its submit):
    the run is kept and does not end with a submit."""
    run = copy.deepcopy(load(DEMO))
    run["info"] = {"exit_status": "exit_error", "submission": None}
    ep = parse(run, tmp_path)
    assert ep.counters["parse/sweagent_unsubmitted_submit_removed"] == 1
    conv = convert_episode(ep)
    assert not conv.submitted and conv.commands[-1] == "rm reproduce.py"


def test_a_run_submitted_without_a_patch_ends_with_an_empty_submission(tmp_path: Path) -> None:
    """``submitted (exit_cost)`` and no patch: the record says the run submitted, so it ends with
    the submit, and what it submitted is nothing ("")."""
    run = demo_cut(13)
    run["trajectory"].append(dict(EXIT_STEP))
    for submission in ("", None):
        run["info"] = {"exit_status": "submitted (exit_cost)", "submission": submission}
        ep = parse(run, tmp_path, f"{submission}.traj")
        conv = convert_episode(ep)
        assert ep.meta.submission == "" and conv.submitted and conv.messages[-1]["content"] == ""


def test_create_of_a_file_that_exists_writes_nothing_and_shows_it(tmp_path: Path) -> None:
    """0.x ``create P`` of an existing P prints ``Error: File 'P' already exists.`` and opens P
    unchanged: the command tests for P, prints the same, and never truncates the file."""
    import re

    run = load(DEMO)
    window = re.match(r"\[File: [^\n]*\n(?:\d+:[^\n]*\n)+", run["trajectory"][4]["observation"])
    assert window is not None and "(9 lines total)" in window.group(0)
    obs = "Error: File 'reproduce.py' already exists.\n" + window.group(0)
    conv = converted_with(tmp_path, 5, "create reproduce.py\n", obs)
    cmd, out = conv.commands[5], conv.outputs[5]
    assert out == obs.replace("/marshmallow-code__marshmallow", "/testbed")
    root = tmp_path / "repo"
    root.mkdir()
    text = "".join(line.split(":", 1)[1] + "\n" for line in window.group(0).splitlines()[1:])
    (root / "reproduce.py").write_text(text)
    assert sh(cmd, root) == (0, out)
    assert (root / "reproduce.py").read_text() == text


def test_1x_create_of_a_file_that_exists_fails_without_writing(tmp_path: Path) -> None:
    """1.x ``create`` prints ``Warning: File 'P' already exists.`` and exits 1 (no window):
    the command does the same."""
    conv = converted_with(
        tmp_path, 5, "create reproduce.py\n", "Warning: File 'reproduce.py' already exists."
    )
    cmd, out, rc = conv.commands[5], conv.outputs[5], conv.returncodes[5]
    assert (out, rc) == ("Warning: File 'reproduce.py' already exists.\n", 1)
    root = tmp_path / "repo"
    root.mkdir()
    (root / "reproduce.py").write_text("x = 1\n")
    assert sh(cmd, root) == (1, out)
    assert (root / "reproduce.py").read_text() == "x = 1\n"


def test_a_ctf_runs_flag_submit_is_no_patch_submission(tmp_path: Path) -> None:
    """A CTF run (``info.exit_status`` ``submitted``) ends with ``submit 'flag{…}'``: the record's
    submission is the flag, so no patch submit is appended (the run stays an unknown_tool drop: its
    CTF tools and its flag submit have no shell command)."""
    run = load(REAL / "sweagent-ctf-warmup.traj")
    assert run["info"]["exit_status"] == "submitted"
    ep = parse(run, tmp_path)
    assert ep.counters["parse/sweagent_autosubmission"] == 0
    assert not ep.meta.submitted and ep.meta.submission is None
    with pytest.raises(ConvertError) as err:
        convert_episode(ep)
    assert err.value.reason == "unknown_tool"
    assert submit_argument(ep.steps[-1].call) == "FLAG{LET_US_BEGIN_CSAW_2016}"
