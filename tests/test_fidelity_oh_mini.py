"""Conversion fidelity for OpenHands and mini-swe-agent runs.

Each class: given its repro input (tests/fixtures/repro/, README there), the converted messages
are exactly these, or the drop is exactly this; and the real public runs that show it
(tests/fixtures/real/ and tests/fixtures/fidelity/, PROVENANCE.md in each) convert the same way.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.convert import SUBMIT_COMMAND, convert_episode
from pipeline.convert.render import render_instance
from pipeline.convert.roots import find_foreign_roots, rewrite_roots
from pipeline.core.episode import Bash, Episode, Meta, RawRun, Step, Task, ToolCall
from pipeline.orchestration.convert_files import convert_files
from pipeline.parsers import parse_raw
from pipeline.parsers.files import detect_format, iter_trajectory_file

FIXTURES = Path(__file__).parent / "fixtures"
REPRO = FIXTURES / "repro"
REAL = FIXTURES / "real"  # the conformance corpus (PROVENANCE.md there)
OWN = FIXTURES / "fidelity"  # a real run not in it (PROVENANCE.md there)
TIMEOUT_TAIL = "Please try another command and make sure to avoid those requiring interactive input."


def convert(path: Path, tmp_path: Path) -> list[dict[str, Any]]:
    """``trajpipe convert`` on one file: one dict per run (its messages, or its drop)."""
    out = tmp_path / f"{path.name}.jsonl"
    convert_files([path], out)
    return [orjson.loads(line) for line in out.read_bytes().splitlines()]


def turns(run: dict[str, Any]) -> list[str]:
    """The run's messages after the system prompt and the task, as text."""
    assert "drop" not in run, run.get("drop")
    return [m["content"] for m in run["messages"][2:]]


def obs(output: str, rc: int = 0) -> str:
    return f"<returncode>{rc}</returncode>\n<output>\n{output}</output>"


def one(path: Path, tmp_path: Path) -> dict[str, Any]:
    runs = convert(path, tmp_path)
    assert len(runs) == 1
    return runs[0]


def episode(task: str, *steps: Step, repo: str = "", root: str | None = None) -> Episode:
    return Episode(
        Task("i", repo, task, "p", "python"), Meta("o", "h", "m", "uid", "bash", repo_root=root), list(steps)
    )


# --------------------------------------------------------------------------- 3. roots


def test_R3_only_the_checkout_becomes_testbed(tmp_path: Path) -> None:
    assert turns(one(REPRO / "R3_openhands_workspace_file.json", tmp_path)) == [
        "```bash\nls /testbed\n```",
        obs("a.py"),
        '```bash\necho "int main(){return 0;}" > /workspace/test.c && gcc /workspace/test.c -o /workspace/t\n```',
        obs(""),
    ]


def test_real_openhands_root_is_the_working_dir_when_the_task_names_none(tmp_path: Path) -> None:
    # "Please rename game_2048.py to 2048.py": no checkout line; OpenHands ran in /workspace
    run = one(REAL / "openhands-events-wrong-initial-state.json", tmp_path)
    assert (
        turns(run)[2]
        == "THOUGHT: Great, I found the file. Now I'll use the bash command `mv` to rename it.\n\n"
        "```bash\nmv /testbed/game_2048.py /testbed/2048.py\n```"
    )


def test_real_eval_run_keeps_scratch_files_outside_the_checkout(tmp_path: Path) -> None:
    first = convert(REAL / "openhands-eval-multi-swe-bench-ponyc-output.jsonl", tmp_path)[0]
    commands = [t.split("```bash\n", 1)[1] for t in turns(first)[::2]]
    assert 'echo "int main() { return 0; }" > /workspace/test.c\n```' in commands
    assert "cd /workspace && /testbed/build/bin/ponyc test.pony -o . && ./test\n```" in commands
    assert not any("ponylang__ponyc__0.1/src" in c for c in commands)


def test_roots_in_the_task_message_and_in_file_urls() -> None:
    task = "The repository is checked out at /repo. Make `f` return 2."
    ep = episode(
        task,
        Step("", Bash("cd /repo && pip install -e ."), "Obtaining file:///repo\n", 0),
        Step("", Bash("cat /tmp/notes /repo/a.py"), "x\n", 0),
        root="/repo",
    )
    conv = convert_episode(ep)
    assert conv.messages[1]["content"] == render_instance(
        "The repository is checked out at /testbed. Make `f` return 2."
    )
    assert conv.problem_statement == "The repository is checked out at /testbed. Make `f` return 2."
    assert conv.commands == ["pip install -e .", "cat /tmp/notes /testbed/a.py"]
    assert conv.outputs[0] == "Obtaining file:///testbed\n"
    assert rewrite_roots("Obtaining file:///workspace/x", "/workspace/x") == "Obtaining file:///testbed"
    assert rewrite_roots("see https://h/workspace/x", "/workspace/x") == "see https://h/workspace/x"


_OTHER = st.builds(
    "/".join,
    st.tuples(
        st.sampled_from(["/workspace", "/tmp", "/home/u", "/tmp/tmpab12cd34"]),
        st.sampled_from(["test.c", "notes", "proj", "other__repo2", "build"]),
    ),
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(
            _OTHER,
            st.sampled_from(
                [" ", "\n", "&&", "/workspace/proj__repo", "/workspace/proj__repo/a.py", "file://", "=", ":"]
            ),
        ),
        max_size=10,
    ).map(" ".join)
)
def test_with_a_known_root_only_that_root_is_rewritten(text: str) -> None:
    out = rewrite_roots(text, "/workspace/proj__repo", "proj__repo")
    assert out.replace("/testbed", "/workspace/proj__repo") == text
    assert "/workspace/proj__repo" not in out.replace("/workspace/proj__repo2", "")
    # and validate agrees: what is left under /workspace is not a foreign root
    assert not any(r.startswith("/workspace") for r in find_foreign_roots(out, "proj__repo"))


def test_foreign_root_is_the_repo_checkout_not_any_workspace_path() -> None:
    assert find_foreign_roots("gcc /workspace/test.c", "proj__repo") == []
    assert find_foreign_roots("ls /workspace/proj__repo/a", "proj__repo") == ["/workspace/proj__repo"]


# --------------------------------------------------------------------------- 4. formats


def test_R4_eval_output_line_is_one_run(tmp_path: Path) -> None:
    run = one(REPRO / "R4_openhands_eval_output.jsonl", tmp_path)
    assert (
        run["format"] == "OpenHands" and run["source_uid"] == "R4_openhands_eval_output.jsonl#row=0"
    )  # one line: one JSON document
    assert turns(run) == ["```bash\nls /testbed\n```", obs("a.py")]


def test_real_eval_output_runs_end_with_their_git_patch(tmp_path: Path) -> None:
    path = REAL / "openhands-eval-multi-swe-bench-ponyc-output.jsonl"
    raw = [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]
    runs = convert(path, tmp_path)
    assert [r["source_uid"] for r in runs] == [f"{path.name}#L{i}" for i in (1, 2, 3)]
    assert [len(turns(r)) // 2 for r in runs] == [22, 29, 47]  # refused editor calls removed (L2: 4, L3: 1)
    for rec, run, finished in zip(raw, runs, (True, True, False), strict=True):
        last_command = turns(run)[-2]
        assert last_command.endswith(f"```bash\n{SUBMIT_COMMAND}\n```") is finished
        if finished:  # the submission is the recorded patch, with git diff's final newline
            assert turns(run)[-1] == rec["test_result"]["git_patch"] + "\n"


def test_real_eval_output_metadata() -> None:
    path = REAL / "openhands-eval-multi-swe-bench-ponyc-output.jsonl"
    raw = next(r for r in iter_trajectory_file(path) if isinstance(r, RawRun))
    ep = parse_raw(raw)
    assert (ep.task.instance_id, ep.task.repo, ep.meta.repo_root) == (
        "ponylang__ponyc-4595",
        "ponylang/ponyc",
        "/workspace/ponylang__ponyc__0.1",
    )
    assert ep.task.base_commit and ep.meta.model == "meta-llama/llama-4-maverick"


def test_real_resolver_output_is_read_and_its_ipython_tools_are_a_counted_drop(tmp_path: Path) -> None:
    runs = convert(REAL / "openhands-resolver-mock-output.jsonl", tmp_path)
    assert [(r["format"], r["drop"]) for r in runs] == [
        ("OpenHands", {"stage": "convert", "reason": "unknown_tool", "detail": "execute_ipython_cell"})
    ] * 2
    raw = next(
        r
        for r in iter_trajectory_file(REAL / "openhands-resolver-mock-output.jsonl")
        if isinstance(r, RawRun)
    )
    ep = parse_raw(raw)
    assert ep.task.problem_statement.startswith(
        "Please fix the following issue for the repository in /workspace."
    )
    assert ep.steps[0].call.args == {"command": "touch LICENSE"}  # type: ignore[union-attr]
    assert ep.steps[-1].observation.endswith("+SOFTWARE.\n\\ No newline at end of file\n")  # pty CRLF undone


def test_action_observation_pair_history_reads_like_events(tmp_path: Path) -> None:
    rec = orjson.loads((REPRO / "R4_openhands_eval_output.jsonl").read_bytes().splitlines()[0])
    user, action, observation = rec["history"]
    bare = {k: v for k, v in observation.items() if k not in ("id", "cause")}
    rec["history"] = [[user, {"observation": "null", "content": ""}], [dict(action, id=None), bare]]
    assert detect_format(rec) == "OpenHands"
    (tmp_path / "pairs.jsonl").write_bytes(orjson.dumps(rec) + b"\n")
    assert turns(one(tmp_path / "pairs.jsonl", tmp_path)) == ["```bash\nls /testbed\n```", obs("a.py")]


# --------------------------------------------------------------------------- 5. observations never invented


def replay(command: str, files: dict[str, str], tmp_path: Path) -> tuple[str, int]:
    """Run a converted command with /testbed mapped to a scratch dir holding ``files``."""
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    res = subprocess.run(
        ["bash", "-c", command.replace("/testbed", str(tmp_path))],
        check=False,
        capture_output=True,
        text=True,
        timeout=30,
    )
    return res.stdout + res.stderr, res.returncode


def test_R5_refused_view_range_prints_the_editors_error(tmp_path: Path) -> None:
    error = (
        "ERROR:\nInvalid `view_range` parameter: [1, 50]. Its second element `50` should be smaller "
        "than the number of lines in the file: `3`."
    )
    t = turns(one(REPRO / "R5_openhands_invalid_view_range.json", tmp_path))
    assert t[:2] == ["```bash\ncat -n '/testbed/a.py'\n```", obs("     1\tx = 1\n     2\tprint(x)\n")]
    assert t[3] == obs(error, 1)
    command = t[2].removeprefix("```bash\n").removesuffix("\n```")
    assert command.startswith("python3 - <<'EOF'\n")
    # replayed on the file the run had (rebuilt from its own view), it prints exactly that
    assert replay(command, {"a.py": "x = 1\nprint(x)\n"}, tmp_path) == (error, 1)


def test_R11_clipped_view_is_the_clipped_prefix(tmp_path: Path) -> None:
    t = turns(one(REPRO / "R11_openhands_clipped_view.json", tmp_path))
    assert t == [
        "THOUGHT: look\n\n```bash\nhead -c 23 '/testbed/big.py' | cat -n\n```",
        obs("     1\tline 1\n     2\tline 2\n     3\tline 3\n     4\tli"),
    ]
    shown = "     1\tline 1\n     2\tline 2\n     3\tline 3\n     4\tli"
    assert replay(
        "head -c 23 '/testbed/big.py' | cat -n",
        {"big.py": "line 1\nline 2\nline 3\nline 4\nline 5\n"},
        tmp_path,
    ) == (shown, 0)


def test_real_clipped_views_and_refused_range(tmp_path: Path) -> None:
    runs = convert(REAL / "openhands-eval-multi-swe-bench-ponyc-output.jsonl", tmp_path)
    texts = [t for r in runs for t in turns(r)]
    assert not any("<response clipped>" in t for t in texts)
    assert sum("head -c 16000 '/testbed/src/libponyc/ast/parser.c' | cat -n" in t for t in texts) == 3
    refused = [texts[i + 1] for i, t in enumerate(texts) if "a, b = 100, 150" in t]
    assert refused == [
        obs(
            "ERROR:\nInvalid `view_range` parameter: [100, 150]. Its second element `150` should "
            "be smaller than the number of lines in the file: `122`.",
            1,
        )
    ]


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        ("ERROR:\nThe path /testbed/x.py does not exist. Please provide a valid path.", None),
        ("ERROR:\nPermission denied while reading /testbed/x.py", "unverifiable_view"),
    ],
)
def test_a_failed_view_gets_cats_message_only_for_a_missing_file(error: str, reason: str | None) -> None:
    from pipeline.convert.actions import ToolState
    from pipeline.convert.tools import convert_call
    from pipeline.core.episode import ConvertError

    args = {"command": "view", "path": "/testbed/x.py"}
    if reason is None:
        action = convert_call("str_replace_editor", args, error, None, 0, ToolState())
        assert (action.command, action.output, action.returncode) == (
            "cat -n '/testbed/x.py'",
            "cat: /testbed/x.py: No such file or directory\n",
            1,
        )
    else:
        with pytest.raises(ConvertError) as err:
            convert_call("str_replace_editor", args, error, None, 0, ToolState())
        assert err.value.reason == reason


# --------------------------------------------------------------------------- 6. return codes


def test_R7_unfinished_command_gets_minis_timeout_message(tmp_path: Path) -> None:
    assert turns(one(REPRO / "R7_openhands_exit_minus1.json", tmp_path)) == [
        "```bash\npython3 -m http.server 8000\n```",
        "The last command <command>python3 -m http.server 8000</command> timed out and has been killed.\n"
        "The output of the command was:\n<output>\nServing HTTP on 0.0.0.0 port 8000 (http://0.0.0.0:8000/) ...\n"
        f"</output>\n{TIMEOUT_TAIL}",
    ]


def test_real_openhands_timeout_drops_its_wait_note(tmp_path: Path) -> None:
    t = turns(one(REAL / "openhands-events-basic-gui-mode.json", tmp_path))
    assert len(t) == 8 and t[-2].endswith("```bash\ncd /testbed/todo-app && python3 -m http.server 8000\n```")
    assert t[-1] == (
        "The last command <command>cd /testbed/todo-app && python3 -m http.server 8000</command> timed out and "
        "has been killed.\nThe output of the command was:\n<output>\nServing HTTP on 0.0.0.0 port 8000 "
        f"(http://0.0.0.0:8000/) ...\n</output>\n{TIMEOUT_TAIL}"
    )
    assert "<returncode>" not in t[-1]


def test_minis_own_timeout_message_is_read_back_as_a_timeout() -> None:
    msgs = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "Please solve this issue: Fix x"},
        {"role": "assistant", "content": "Wait.\n\n```bash\nsleep 100\n```"},
        {
            "role": "user",
            "content": "The last command <command>sleep 100</command> timed out and has been "
            f"killed.\nThe output of the command was:\n <output>\npart\n\n</output>\n"
            f"{TIMEOUT_TAIL}",
        },
    ]
    ep = parse_raw(RawRun("u", "mini-swe-agent", "miniswe", None, {"messages": msgs}, 0))
    assert (ep.steps[0].observation, ep.steps[0].returncode, ep.steps[0].timed_out) == ("part\n", None, True)
    conv = convert_episode(ep)
    assert conv.returncodes == [None]
    assert conv.messages[-1]["content"] == (
        "The last command <command>sleep 100</command> timed out and has been killed.\n"
        f"The output of the command was:\n<output>\npart\n\n</output>\n{TIMEOUT_TAIL}"
    )


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (
            "The command timed out. Please change your command and make sure it doesn't require input.",
            "timeout_output_unknown",
        ),
        (
            "The last command <command>x</command> timed out and has been killed.\nThe output of the command was:\n"
            "<warning>Output was too long and has been truncated.</warning>\n<output_head>\n",
            "elided_output",
        ),
    ],
)
def test_a_timeout_whose_output_is_not_kept_is_a_counted_drop(text: str, reason: str) -> None:
    from pipeline.core.episode import ParseError

    msgs = [
        {"role": "user", "content": "Please solve this issue: Fix x"},
        {"role": "assistant", "content": "```bash\nx\n```"},
        {"role": "user", "content": text},
    ]
    with pytest.raises(ParseError) as err:
        parse_raw(RawRun("u", "mini-swe-agent", "miniswe", None, {"messages": msgs}, 0))
    assert err.value.reason == reason


# --------------------------------------------------------------------------- 8. mini-swe-agent before 1.0


def test_R6_pre1_streams_and_sentinel(tmp_path: Path) -> None:
    assert turns(one(REPRO / "R6_mini_pre1_stdout_stderr.traj.json", tmp_path)) == [
        "THOUGHT: Look.\n\n```bash\ncat a.py\n```",
        obs("x = 1\n"),
        f"THOUGHT: Done.\n\n```bash\n{SUBMIT_COMMAND}\n```",
        "diff --git a/a.py b/a.py\n",
    ]


def test_real_pre1_run(tmp_path: Path) -> None:
    raw = orjson.loads((REAL / "mini-pre1-0709-github-issue.traj.json").read_bytes())
    t = turns(one(REAL / "mini-pre1-0709-github-issue.traj.json", tmp_path))
    assert len(t) == 20 and t[-2].endswith(f"```bash\n{SUBMIT_COMMAND}\n```")
    # stderr alone (cat of a missing file, a traceback) is the output; the submission gets its newline
    assert t[1] == obs(
        "cat: /Users/fuchur/Documents/24/git_sync/swe-agent-test-repo/tests/./missing_colon.py: "
        "No such file or directory\n",
        1,
    )
    assert t[15].startswith("<returncode>1</returncode>\n<output>\nTraceback (most recent call last):\n")
    assert t[-1] == raw[-1]["content"] + ("" if raw[-1]["content"].endswith("\n") else "\n")
    assert not any("<stdout>" in x or "<stderr>" in x for x in t)
    local = turns(one(OWN / "mini-pre1-local.traj.json", tmp_path))
    assert local == [
        "THOUGHT: Here be some dummy command:\n\n```bash\necho 'hello world'\n```",
        obs("hello world\n"),
        f"THOUGHT: OK, now let me end this run.\n\n```bash\n{SUBMIT_COMMAND}\n```",
        "",
    ]


def test_pre1_output_with_both_streams_is_a_counted_drop() -> None:
    from pipeline.core.episode import ParseError

    msgs = [
        {"role": "user", "content": "Please solve this issue: Fix x"},
        {"role": "assistant", "content": "```bash\nmake\n```"},
        {
            "role": "user",
            "content": "<returncode>\n2\n</returncode>\n<stderr>\nerr\n</stderr>\n<stdout>\nout\n</stdout>",
        },
    ]
    with pytest.raises(ParseError) as err:
        parse_raw(RawRun("u", "mini-swe-agent", "miniswe", None, {"messages": msgs}, 0))
    assert err.value.reason == "split_streams"


# --------------------------------------------------------------------------- 9. text kept as it was


def test_R9_backticks_that_cannot_form_a_block_stay(tmp_path: Path) -> None:
    assert turns(one(REPRO / "R9_mini_v1_backticks_in_thought.traj.json", tmp_path)) == [
        "THOUGHT: The code is:\n```python\nx = 1\n```\nLet me look.\n\n```bash\ncat a.py\n```",
        obs("x = 1\n"),
    ]


def test_task_keeps_its_trailing_newline() -> None:
    from pipeline.parsers.problem import extract_problem

    task = "Fix `f`.\r\nIt fails.\n"
    assert extract_problem(
        f"<pr_description>\nConsider the following PR description:\n{task}\n</pr_description>"
        "\n\n<instructions>…"
    ) == (task, False)
    assert extract_problem(f"<issue_description>\n{task}\n</issue_description>") == (task, False)
    assert extract_problem("<issue_description>\nno newline\n</issue_description>") == ("no newline", False)


FORMAT_ERROR = "Please always provide EXACTLY ONE action in triple backticks, found 2 actions."


def mini_run(reply: str) -> RawRun:
    msgs = [
        {"role": "user", "content": "Please solve this issue: Fix x"},
        {"role": "assistant", "content": "```bash\nls\n```\n```bash\npwd\n```"},
        {"role": "user", "content": FORMAT_ERROR},
        {"role": "assistant", "content": f"{reply}\n\n```bash\nls\n```"},
        {"role": "user", "content": "<returncode>0</returncode>\n<output>\na\n</output>"},
    ]
    return RawRun("u", "mini-swe-agent", "miniswe", None, {"messages": msgs}, 0)


@pytest.mark.parametrize(
    ("reply", "thought"),
    [
        ("I apologize, I must give one command only.", ""),
        ("Sorry about that. Listing first.", "Listing first."),
        ("Let me provide exactly one action.", ""),
        ("My previous response had two blocks.", ""),
    ],
)
def test_a_reply_that_refers_to_a_removed_format_error_loses_only_those_sentences(
    reply: str, thought: str
) -> None:
    ep = parse_raw(mini_run(reply))
    assert [(s.thought, s.call) for s in ep.steps] == [(thought, Bash("ls"))]
    assert (ep.counters["parse/format_error_removed"], ep.counters["parse/format_thought_repaired"]) == (1, 1)


def test_a_reply_whose_reference_also_speaks_of_the_task_drops_the_run() -> None:
    from pipeline.core.episode import ParseError

    with pytest.raises(ParseError) as err:
        parse_raw(mini_run("Sorry, I forgot to quote `a b` in my previous response."))
    assert err.value.reason == "format_error_reference"


def test_a_reply_after_a_format_error_that_does_not_refer_to_it_is_kept_word_for_word() -> None:
    ep = parse_raw(mini_run("Let me list the files."))
    assert [(s.thought, s.call) for s in ep.steps] == [("Let me list the files.", Bash("ls"))]
    assert ep.counters["parse/format_error_removed"] == 1
    assert ep.counters["parse/format_thought_repaired"] == 0


# --------------------------------------------------------------------------- R8 chat only


@pytest.mark.parametrize(
    "path", [REPRO / "R8_openhands_chat_only.json", REAL / "openhands-events-basic-interactions.json"]
)
def test_chat_only_run_is_a_counted_drop(path: Path, tmp_path: Path) -> None:
    assert one(path, tmp_path)["drop"] == {
        "stage": "convert",
        "reason": "no_actions",
        "detail": "turn 0: finish before any command",
    }


def test_real_directory_view_is_a_listing_that_replays(tmp_path: Path) -> None:
    t = turns(one(REAL / "openhands-events-wrong-initial-state.json", tmp_path))
    command = t[0].split("```bash\n", 1)[1].removesuffix("\n```")
    assert t[1] == obs("/testbed/\n/testbed/game_2048.py\n")
    work = tmp_path / "w"
    (work / ".git").mkdir(parents=True)  # hidden: not listed
    (work / "game_2048.py").write_text("")
    res = subprocess.run(
        ["bash", "-c", command.replace("/testbed", str(work))], check=False, capture_output=True, text=True
    )
    assert (res.stdout.replace(str(work), "/testbed"), res.returncode) == (
        "/testbed/\n/testbed/game_2048.py\n",
        0,
    )


def test_an_editor_call_refused_for_its_arguments_is_removed_like_a_format_error() -> None:
    path = REAL / "openhands-eval-multi-swe-bench-ponyc-output.jsonl"
    raws = [r for r in iter_trajectory_file(path) if isinstance(r, RawRun)]
    ep = parse_raw(raws[1])
    assert ep.counters["parse/rejected_call_removed"] == 4
    assert not any(s.observation.startswith("ERROR:\nParameter `old_str` is required") for s in ep.steps)
    # the reply after it is kept unless it refers to the refused call
    from pipeline.core.episode import ParseError
    from pipeline.parsers.openhands import is_rejected_call, without_refused_calls

    refused = Step(
        "Edit.",
        ToolCall("str_replace_editor", {"command": "str_replace", "path": "/a"}),
        "ERROR:\nParameter `old_str` is required for command: str_replace.",
    )
    with pytest.raises(ParseError) as err:
        without_refused_calls(
            [refused, Step("Sorry, I forgot old_str.", Bash("ls"), "", 0)],
            ep.counters,
            lambda _n, st: is_rejected_call(st),
        )
    assert err.value.reason == "format_error_reference"


@pytest.mark.parametrize(
    ("args", "command", "output", "rc"),
    [
        ({}, "cat '/testbed/x.py'", "cat: /testbed/x.py: No such file or directory\n", 1),
        (
            {"offset": 3, "limit": 2},
            "sed -n '3,4p' '/testbed/x.py'",
            "sed: can't read /testbed/x.py: No such file or directory\n",
            2,
        ),
    ],
)
def test_a_failed_read_prints_what_cat_or_sed_print(
    args: dict[str, Any], command: str, output: str, rc: int, tmp_path: Path
) -> None:
    from pipeline.convert.actions import ToolState
    from pipeline.convert.tools import convert_call

    action = convert_call(
        "read",
        {"path": "/testbed/x.py", **args},
        "ENOENT: no such file or directory, open '/testbed/x.py'",
        1,
        0,
        ToolState(),
    )
    assert (action.command, action.output, action.returncode) == (command, output, rc)
    res = subprocess.run(
        ["bash", "-c", command.replace("/testbed", str(tmp_path))],
        check=False,
        capture_output=True,
        text=True,
    )
    assert (res.stdout + res.stderr, res.returncode) == (output.replace("/testbed", str(tmp_path)), rc)


def test_a_secret_in_a_timed_out_output_is_redacted_and_the_run_stays_valid(tmp_path: Path) -> None:
    events = orjson.loads((REPRO / "R7_openhands_exit_minus1.json").read_bytes())
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    events[2]["content"] = f"Serving with token {token} ..."
    (tmp_path / "t.json").write_bytes(orjson.dumps(events))
    t = turns(one(tmp_path / "t.json", tmp_path))
    assert token not in t[1] and "<REDACTED:github_token>" in t[1]
    assert t[1].startswith("The last command <command>python3 -m http.server 8000</command> timed out")
