"""The wild judge's checker (bench/wild_check.py): each rule catches a hand-built bad run and passes a good one."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import wild_check

SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached"
PATCH = "diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b\n"


def turn(command: str, output: str, rc: int = 0) -> list[dict[str, str]]:
    return [
        {"role": "assistant", "content": f"THOUGHT: go.\n\n```bash\n{command}\n```"},
        {"role": "user", "content": f"<returncode>{rc}</returncode>\n<output>\n{output}</output>"},
    ]


def run(*turns: list[dict[str, str]], submit: str | None = PATCH) -> list[dict[str, str]]:
    msgs = [{"role": "system", "content": "sys"}, {"role": "user", "content": "Fix the bug in /testbed."}]
    for t in turns:
        msgs += t
    if submit is not None:
        msgs += [
            {"role": "assistant", "content": f"THOUGHT: done.\n\n```bash\n{SUBMIT}\n```"},
            {"role": "user", "content": submit},
        ]
    return msgs


def mini_record(status: str = "Submitted", submission: str = PATCH) -> dict[str, Any]:
    return {
        "info": {"exit_status": status, "submission": submission, "mini_version": "1.17.5"},
        "messages": [],
    }


def violations(msgs: list[dict[str, str]], record: Any) -> dict[str, list[str]]:
    return {k: v for k, v in wild_check.check_run(msgs, record).items() if v}


GOOD = run(turn("cd /testbed && grep -n foo x.py", "1:foo\n"), turn("python3 x.py", "ok\n"))


def test_a_clean_run_breaks_no_rule() -> None:
    assert violations(GOOD, mini_record()) == {}


@pytest.mark.parametrize(
    "command",
    [
        "open x.py",
        "cd /testbed && goto 20",
        "ls | xargs -n1 search_file foo",
        "timeout 10 str_replace_editor view /testbed/x.py",
        "if true; then scroll_down; fi",
        "bash -lc 'find_file x.py'",
        "X=1 submit",
        "echo $(execute_bash ls)",
        "Read x.py",
    ],
)
def test_exec_catches_a_tool_name_run_as_a_program(command: str) -> None:
    got = violations(run(turn(command, "")), mini_record())
    assert list(got) == ["exec"]


@pytest.mark.parametrize(
    "command",
    [
        "python3 - <<'EOF'\nopen('x.py').read()\nsubmit = 1\nEOF",
        "echo 'open x.py; goto 3' && grep -rn 'edit' .",
        "./open x.py",
        "for f in open edit; do echo $f; done",
        "submit() { echo hi; }; submit",
        "cat > /tmp/a.sh <<EOF\ncreate foo\nEOF\nls 2>&1 | head",
    ],
)
def test_exec_passes_words_that_are_not_programs(command: str) -> None:
    assert "exec" not in violations(run(turn(command, "")), mini_record())


def test_submission_rules() -> None:
    assert violations(run(turn("ls", "x.py\n"), submit=None), mini_record())["submission"][0].startswith(
        "missing_submit"
    )
    other = PATCH.replace("+b", "+c")
    assert violations(GOOD, mini_record(submission=other))["submission"][0].startswith("patch_mismatch")
    assert violations(GOOD, mini_record(status="LimitsExceeded"))["submission"][0].startswith(
        "unexpected_submit"
    )
    # the sentinel line and whitespace at the edges do not count; a run the record does not judge passes
    sentinel_first = run(
        turn("ls", "x.py\n"), submit="COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n" + PATCH + "\n\n"
    )
    assert "submission" not in violations(sentinel_first, mini_record())
    assert "submission" not in violations(
        run(turn("ls", "x.py\n"), submit=None), {"messages": [], "instance_id": "x"}
    )


def test_submission_reads_sweagent_and_openhands_records() -> None:
    swe = {"history": [], "info": {"exit_status": "submitted", "submission": PATCH}}
    assert "submission" not in violations(GOOD, swe)
    swe_no = {"history": [], "info": {"exit_status": "exit_cost", "submission": None}}
    assert violations(GOOD, swe_no)["submission"][0].startswith("unexpected_submit")
    # OpenHands' evaluation diffs every run's workspace: without a finish the patch says nothing
    oh = {"history": [{"action": "run", "args": {}}], "instruction": "x", "test_result": {"git_patch": PATCH}}
    assert "submission" not in violations(run(turn("ls", ""), submit=None), oh)
    oh["history"].append({"action": "finish", "args": {}})
    assert violations(run(turn("ls", ""), submit=None), oh)["submission"][0].startswith("missing_submit")


def test_decoration_caught_unless_the_command_prints_it() -> None:
    header = "[File: /testbed/x.py (3 lines total)]\n1:a\n"
    assert violations(run(turn("cat -n x.py", header)), mini_record())["decoration"][0].startswith(
        "msg 3: viewer_header"
    )
    awk = 'awk \'BEGIN{print "[File: x.py (" n " lines total)]"}\' x.py'
    assert "decoration" not in violations(run(turn(awk, header)), mini_record())
    clipped = "1\ta\n<response clipped><NOTE>To save on context only part of this file has been shown to you.</NOTE>"
    assert {"decoration"} == set(violations(run(turn("cat -n x.py", clipped)), mini_record()))


def test_rc_guess_only_where_the_record_has_no_return_code() -> None:
    tb = "Traceback (most recent call last):\n  File \"x.py\", line 1, in <module>\nNameError: name 'q' is not defined\n"
    bad = run(turn("python3 x.py", tb, rc=0))
    no_rc = {"history": [{"content": tb}], "info": {"exit_status": "submitted", "submission": PATCH}}
    assert violations(bad, no_rc)["rc_guess"][0].startswith("msg 3: rc 0, none recorded")
    recorded = {
        "history": [{"observation": {"content": tb, "extras": {"exit_code": 0}}}],
        "info": no_rc["info"],
    }
    assert "rc_guess" not in violations(bad, recorded)
    assert "rc_guess" not in violations(run(turn("python3 x.py", tb, rc=1)), no_rc)
    missing = run(turn("foo", "bash: line 1: foo: command not found\n", rc=0))
    assert "rc_guess" in violations(missing, no_rc)


def test_roots_from_the_source_must_not_remain() -> None:
    record = mini_record() | {
        "messages": [{"role": "user", "content": "(Current directory: /pydicom__pydicom)"}]
    }
    left = run(turn("cat /pydicom__pydicom/x.py", "a\n"))
    assert violations(left, record)["roots"][0].startswith("msg 2: /pydicom__pydicom")
    assert "roots" not in violations(run(turn("cat /testbed/x.py /pydicom__pydicom_old", "a\n")), record)
    oh = {"instruction": "<uploaded_files>\n/workspace/django__django__3.0\n</uploaded_files>", "history": []}
    assert "roots" in violations(run(turn("ls /workspace/django__django__3.0", "")), oh)


def test_format_uses_mini_swe_agent_own_parser_and_observation_shapes() -> None:
    two_blocks = run(turn("ls", ""))
    two_blocks[2]["content"] += "\n```bash\npwd\n```"
    assert violations(two_blocks, mini_record())["format"][0].startswith("msg 2: mini parse_action refuses")
    bad_obs = run(turn("ls", ""))
    bad_obs[3]["content"] = "x.py"
    assert violations(bad_obs, mini_record())["format"][0].startswith("msg 3: observation shape")
    assert wild_check.mini_accepts("```bash\nls\n```") and not wild_check.mini_accepts("no block")


def test_source_record_reads_rows_and_lines() -> None:
    runs = [{"history": [], "info": {"n": 0}}, {"history": [], "info": {"n": 1}}]
    assert wild_check.source_record(json.dumps(runs).encode(), "row=1")["info"]["n"] == 1
    lines = b"\n".join(json.dumps(r).encode() for r in runs)
    assert wild_check.source_record(lines, "L2")["info"]["n"] == 1
    events = [{"action": "message", "args": {}}, {"observation": "run"}]
    assert wild_check.source_record(json.dumps(events).encode(), "row=0") == events


def test_a_patch_changed_only_by_redactions_is_no_violation() -> None:
    secret = PATCH.replace("+b", "+password=hunter2")
    redacted = run(turn("ls", ""), submit=PATCH.replace("+b", "+password=<REDACTED:env_secret>"))
    assert "submission" not in violations(redacted, mini_record(submission=secret))
    other = run(turn("ls", ""), submit=PATCH.replace("+b", "+password=<REDACTED:env_secret>\n+c"))
    assert violations(other, mini_record(submission=secret))["submission"][0].startswith("patch_mismatch")


def test_roots_keep_only_the_outermost_working_directory() -> None:
    record = {
        "history": [
            {"content": "(Current directory: /django__django)"},
            {"content": "(Current directory: /django__django/tests)"},
        ],
        "info": {},
    }
    assert wild_check.source_roots(record) == {"/django__django"}
    assert wild_check.source_roots({"history": [{"content": "(Current directory: /testbed/proj)"}]}) == set()


def test_wild_families_and_sets() -> None:
    import wild

    mini = {"info": {"mini_version": "1.15.0"}, "messages": [{"role": "user", "content": "x"}]}
    assert wild.family_of(json.dumps(mini).encode()) == "mini-v1"
    swe = {"history": [{"role": "assistant", "content": "x", "tool_calls": [{"id": "1"}]}], "info": {}}
    assert wild.family_of(json.dumps(swe).encode()) == "sweagent-1x"
    line = {"instance_id": "a", "instruction": "x", "history": [{"action": "run"}], "test_result": {}}
    assert wild.family_of((json.dumps(line) + "\n" + json.dumps(line)).encode()) == "openhands-eval"
    log = {"messages": [{"role": "user", "content": "x"}], "response": {}}  # one model call, not a run
    assert wild.family_of(json.dumps(log).encode()) is None
    sets = wild.assign_sets([("a/big", "f")] * 5 + [("b/mid", "f")] * 3 + [("c/small", "f")] * 2)
    assert sets == {"a/big": "dev", "b/mid": "held-out", "c/small": "held-out"}
