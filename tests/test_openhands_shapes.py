"""Given an OpenHands run as its harness recorded it, the published turns are exactly these.

The observation texts are quoted from a real run: OpenHands 0.15.0's SWE-bench Verified
evaluation (All-Hands-AI/OpenHands, ``evaluation/evaluation_outputs/outputs/princeton-nlp__SWE-
bench_Verified-test/CodeActAgent/claude-3-5-sonnet-20241022_maxiter_50_N_v0.15.0-no-hint-no-
condensation-run_1/llm_completions/astropy__astropy-12907/``, commit 4ce8594d), whose bash tool
recorded the terminal around each output; the events around them are built here.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from pipeline.convert import SUBMIT_COMMAND, convert_episode
from pipeline.core.episode import RawRun
from pipeline.parsers.openhands import parse_openhands

TASK = "<uploaded_files>\n/workspace/astropy__astropy__4.3\n</uploaded_files>\nFix separability_matrix."
PROMPT = "[Python Interpreter: /opt/miniconda3/envs/testbed/bin/python]\nroot@openhands-workspace:/workspace/astropy__astropy__4.3 # \n"


def events(
    *pairs: tuple[str, dict[str, Any], str, int | None], extra: dict[str, Any] | None = None
) -> RawRun:
    evs: list[dict[str, Any]] = [{"id": 0, "source": "user", "action": "message", "args": {"content": TASK}}]
    for name, args, content, code in pairs:
        n = len(evs)
        action = {"execute_bash": "run", "finish": "finish"}.get(name, name)
        evs.append({"id": n, "source": "agent", "action": action, "args": {**args, "thought": f"step {n}"}})
        if name != "finish":
            md = {"exit_code": code} if code is not None else {}
            evs.append(
                {
                    "id": n + 1,
                    "source": "agent",
                    "observation": "run",
                    "cause": n,
                    "content": content,
                    "extras": {"metadata": md},
                }
            )
    payload: dict[str, Any] = {"instance_id": "astropy__astropy-12907", "history": evs, **(extra or {})}
    return RawRun("uid", "community", "openhands", None, payload, 0)


def published(raw: RawRun) -> list[tuple[str, str, int | None]]:
    conv = convert_episode(parse_openhands(raw))
    return list(zip(conv.commands, conv.outputs, conv.returncodes, strict=True))


def test_the_terminals_echo_and_prompt_are_not_output() -> None:
    cmd = "python /workspace/reproduce_separability.py"
    out = "Test case 1 - Simple compound model:\n[[ True False]\n [False  True]]"
    raw = events(
        ("execute_bash", {"command": cmd}, f"{cmd}\n{out}{PROMPT}[Command finished with exit code 0]", None),
        (
            "execute_bash",
            {"command": "rm /workspace/reproduce_wcs_issue.py"},
            f"rm /workspace/reproduce_wcs_issue.py{PROMPT}[Command finished with exit code 0]",
            None,
        ),
    )
    # python printing lines ends its output with the newline the prompt replaced; rm prints nothing
    assert published(raw) == [(cmd, out + "\n", 0), ("rm /workspace/reproduce_wcs_issue.py", "", 0)]
    assert parse_openhands(raw).counters["parse/openhands_pty_frame_removed"] == 2


def test_output_that_merely_ends_like_a_prompt_is_kept() -> None:
    text = "user@host:/x # \n"  # no interpreter line before it: not OpenHands' prompt
    raw = events(("execute_bash", {"command": "cat notes.txt"}, text, 0))
    assert published(raw) == [("cat notes.txt", text, 0)]


def test_refused_create_of_an_existing_file_writes_nothing_and_prints_the_refusal(tmp_path: Path) -> None:
    # 15 of the 50 runs of that evaluation hit this refusal once (convert/failed_create before)
    refusal = (
        "ERROR:\nInvalid `path` parameter: /workspace/reproduce.py. File already exists at: "
        "/workspace/reproduce.py. Cannot overwrite files using command `create`."
    )
    raw = events(
        ("execute_bash", {"command": "ls"}, "a.py\n", 0),
        (
            "str_replace_editor",
            {"command": "create", "path": "/workspace/reproduce.py", "file_text": "new\n"},
            refusal,
            None,
        ),
    )
    (cmd, out, rc) = published(raw)[1]
    assert (out, rc) == (refusal, 1)
    target = tmp_path / "reproduce.py"
    target.write_text("old\n")
    run = subprocess.run(
        ["bash", "-c", cmd.replace("/workspace", str(tmp_path))], capture_output=True, text=True, check=False
    )
    assert (run.returncode, run.stdout.replace(str(tmp_path), "/workspace")) == (1, refusal)
    assert target.read_text() == "old\n"  # the refused call changed nothing
    target.unlink()
    run = subprocess.run(
        ["bash", "-c", cmd.replace("/workspace", str(tmp_path))], capture_output=True, text=True, check=False
    )
    assert run.returncode == 0 and target.read_text() == "new\n"  # the editor's create otherwise


def test_submission_is_the_recorded_patch_of_a_finished_run() -> None:
    patch = "diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b"
    ls = ("execute_bash", {"command": "ls"}, "x.py\n", 0)
    finished = events(
        ls, ("finish", {"final_thought": "done"}, "", None), extra={"test_result": {"git_patch": patch}}
    )
    ep = parse_openhands(finished)
    assert ep.meta.submission == patch + "\n"
    conv = convert_episode(ep)
    assert conv.commands[-1] == SUBMIT_COMMAND and conv.outputs[-1].endswith(patch + "\n")
    empty = events(
        ls, ("finish", {"final_thought": "done"}, "", None), extra={"test_result": {"git_patch": ""}}
    )
    assert parse_openhands(empty).meta.submission == ""
    # stopped at its iteration limit: OpenHands still diffed the workspace, but nothing was submitted
    stopped = events(ls, extra={"test_result": {"git_patch": patch}})
    assert parse_openhands(stopped).meta.submission is None
    assert parse_openhands(events(ls, ("finish", {}, "", None))).meta.submission is None


def test_calls_without_effect_fold_away() -> None:
    raw = events(
        ("request_condensation", {}, "", None),
        ("delegate", {"agent": "BrowsingAgent", "inputs": {"task": "read the docs page"}}, "", None),
        ("execute_bash", {"command": "ls"}, "x.py\n", 0),
    )
    conv = convert_episode(parse_openhands(raw))
    assert conv.commands == ["ls"]
    assert conv.thoughts == ["step 1\n\nstep 3\n\nread the docs page\n\nstep 5"]


def test_an_editor_call_missing_its_argument_that_crashed_the_editor_folds_away() -> None:
    # the real run django__django-11265 (same evaluation): create with new_str instead of
    # file_text; openhands-aci raised inside its IPython cell and nothing was written
    crash = (
        "---------------------------------------------------------------------------\n"
        "RuntimeError                              Traceback (most recent call last)\n"
        "Cell In[1], line 1\n----> 1 print(file_editor(**{'path': '/workspace/reproduce2.py', 'new_str': 'x'}))\n"
    )
    raw = events(
        (
            "str_replace_editor",
            {"command": "create", "path": "/workspace/reproduce2.py", "new_str": "x"},
            crash,
            None,
        ),
        ("execute_bash", {"command": "ls"}, "x.py\n", 0),
    )
    conv = convert_episode(parse_openhands(raw))
    assert (conv.commands, conv.thoughts) == (["ls"], ["step 1\n\nstep 3"])
    assert conv.counters["convert/refused_call_removed"] == 1


def test_a_wait_note_without_an_exit_code_is_a_command_that_never_finished() -> None:
    note = (
        "[The command has no new output after 30 seconds. You may wait longer to see additional output by "
        "sending empty command '', send other commands to interact with the current process, or send keys "
        "to interrupt/kill the command.]"
    )
    raw = events(("execute_bash", {"command": "python server.py"}, f"Serving on :8000\n{note}", None))
    ep = parse_openhands(raw)
    assert (ep.steps[0].observation, ep.steps[0].timed_out) == ("Serving on :8000\n", True)
    conv = convert_episode(ep)
    assert conv.returncodes == [None] and "has no new output" not in conv.messages[-1]["content"]
