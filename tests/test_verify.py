"""The verify step: a converted run that breaks a rule is dropped as verify/<rule>, never published.

Each rule is checked on a run that breaks it and on the same run made good; every case goes
through the real converter (``convert_turns``) so what is checked is what would be published.
"""

from __future__ import annotations

from collections import Counter

import pytest

from pipeline.convert import convert_turns
from pipeline.core.episode import Bash, Episode, Meta, Step, Task, ToolCall
from pipeline.stages.verify import Verify
from pipeline.text.shell import split_command
from pipeline.verify import RULES, verify
from pipeline.verify.decoration import decoration_in
from pipeline.verify.effects import edit_violation
from pipeline.verify.programs import programs_of, unknown_programs

DIFF = "diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b\n"


def episode(steps: list[Step], *, root: str | None = "/testbed", submission: str | None = None) -> Episode:
    task = Task("o__r-1", "o/r", "Fix it.", "pool", "python")
    meta = Meta("test", "sweagent", "m", "uid", "bash", repo_root=root, submission=submission)
    return Episode(task, meta, steps)


def run(*cmds: tuple[str, str, int | None]) -> list[Step]:
    return [Step(f"step {i}", Bash(c), out, rc) for i, (c, out, rc) in enumerate(cmds)]


def reason(ep: Episode) -> str | None:
    v = verify(ep, convert_turns(ep))
    return None if v is None else v.rule


def test_every_rule_is_on_and_declared() -> None:
    assert [name for name, _ in RULES] == [
        "executable",
        "effect",
        "observations",
        "returncodes",
        "submission",
        "roots",
    ]
    assert "verify" in [s.name for s in __import__("pipeline.stages", fromlist=["STEPS"]).STEPS]


# ---------------------------------------------------------------- executable


@pytest.mark.parametrize(
    "command",
    [
        "open src/app.py",
        "cd /testbed && goto 120",
        "scroll_down",
        "search_dir 'def foo' src",
        "find_file setup.py",
        "ls && filemap x.py",
        "if true; then str_replace_editor view /testbed/x; fi",
        "echo $(execute_bash ls)",
    ],
)
def test_a_harness_tool_run_as_a_command_is_dropped(command: str) -> None:
    ep = episode(run((command, "", 0)))
    assert reason(ep) == "harness_tool"


@pytest.mark.parametrize(
    "command",
    [
        "ls -la",
        "python -m pytest tests/ -x 2>&1 | tail -20",
        "for f in $(ls *.py); do wc -l $f; done",
        "{ git log --oneline -3; } && sed -n '1,5p' setup.py",
        'f() { grep -n x "$1"; }; f a.py',
        "pip install -q attrs-strict && attrs-strict --help",
        "./reproduce.sh",
        "X=1 timeout 10 python3 reproduce.py",
        "cat > a.py <<'EOF'\nopen('x')\ngoto = 1\nEOF\npython a.py",
        "printf '%s\\n' 'line one\n1. not a command\n2. nor this' && git status",
    ],
)
def test_standard_programs_and_what_the_run_made_pass(command: str) -> None:
    assert reason(episode(run((command, "", 0)))) is None


def test_an_unknown_program_fails_closed_and_an_installed_one_does_not() -> None:
    assert unknown_programs(["frobnicate --all"], "o/r") == [(0, "frobnicate", "unknown_program")]
    assert unknown_programs(["pip install frobnicate", "frobnicate --all"], "o/r") == []
    # the task's own repository provides its console scripts
    assert unknown_programs(["sphinx-build -b html doc out"], "sphinx-doc/sphinx") == []


def test_programs_are_read_through_compound_commands() -> None:
    progs, _ = programs_of("while read l; do echo $l | grep -q x && goto 3; done < f")
    assert progs == ["read", "echo", "grep", "goto"]


# ---------------------------------------------------------------- observations


@pytest.mark.parametrize(
    "output, name",
    [
        ("[File: /testbed/a.py (120 lines total)]\n1:import os\n", "viewer_header"),
        ("x\n(20 more lines below)\n", "viewer_more_lines"),
        ("a\n<response clipped><NOTE>To save on context only part of this file has been shown", "clipped"),
        ("Here's the result of running `cat -n` on /testbed/a.py:\n     1\tx\n", "editor_header"),
        ("ok\n[Python Interpreter: /usr/bin/python]\n", "openhands_note"),
        ("<tool_use_error>File has not been read yet.</tool_use_error>", "tool_error"),
        ("Your command ran successfully and did not produce any output.\n", "sweagent_no_output"),
    ],
)
def test_harness_decoration_in_an_output_is_dropped(output: str, name: str) -> None:
    assert decoration_in(output, "cat a.py") == name
    assert reason(episode(run(("cat a.py", output, 0)))) == "harness_decoration"


def test_decoration_the_command_prints_itself_passes() -> None:
    out = "docs/x.md:3:(Open file: /a)\n"
    assert decoration_in("(Open file: /a)\n", "grep -rn '(Open file: ' docs") is None
    assert reason(episode(run(("grep -rn '(Open file: ' docs", out, 0)))) is None


# ---------------------------------------------------------------- return codes


def test_a_return_code_the_record_lacks_is_never_guessed() -> None:
    ep = episode(run(("python reproduce.py", "Traceback (most recent call last):\nValueError: x\n", None)))
    conv = convert_turns(ep)
    assert conv.sources[0].rc_from == "unknown"
    assert reason(ep) == "returncode_unknown"


def test_a_recorded_return_code_or_exit_note_passes() -> None:
    assert reason(episode(run(("ls", "a\n", 0)))) is None
    ep = episode(
        [Step("", ToolCall("execute_bash", {"command": "ls"}), "a\n[Command finished with exit code 0]")]
    )
    conv = convert_turns(ep)
    assert (conv.outputs, conv.returncodes, conv.sources[0].rc_from) == (["a\n"], [0], "record")
    assert verify(ep, conv) is None


# ---------------------------------------------------------------- submission


def submit_run(observation: str) -> list[Step]:
    return [*run(("ls", "x.py\n", 0)), Step("done", ToolCall("submit", {}), observation)]


def test_a_submitted_run_ends_with_the_recorded_patch() -> None:
    ep = episode(submit_run(DIFF), submission=DIFF)
    conv = convert_turns(ep)
    assert conv.submitted and conv.outputs[-1].endswith(DIFF)
    assert verify(ep, conv) is None


def test_a_final_message_that_is_not_the_recorded_patch_is_dropped() -> None:
    other = DIFF.replace("+b", "+c")
    ep = episode(submit_run(other), submission=DIFF)
    conv = convert_turns(ep)
    conv.submission = DIFF
    # the converter takes the record's patch; a final message that differs is caught
    conv.outputs[-1] = conv.outputs[-1].replace("+b", "+c")
    v = verify(ep, conv)
    assert v is not None and v.rule == "submission"


def test_a_submit_whose_patch_is_unknown_ends_the_run_unsubmitted() -> None:
    ep = episode(submit_run("Submitted."))
    conv = convert_turns(ep)
    assert not conv.submitted and conv.counters["convert/submission_unknown"] == 1
    assert verify(ep, conv) is None


def test_a_lost_submit_is_dropped() -> None:
    ep = episode(run(("ls", "x.py\n", 0)), submission=DIFF)
    assert reason(ep) == "submission_lost"


# ---------------------------------------------------------------- roots


def test_the_original_root_left_anywhere_is_dropped() -> None:
    ep = episode(run(("ls /work/proj", "a\n", 0)), root="/work/proj")
    conv = convert_turns(ep)
    assert conv.commands == ["ls /testbed"]
    assert verify(ep, conv) is None
    conv.thoughts[0] = "the code is in /work/proj/src"
    v = verify(ep, conv)
    assert v is not None and v.rule == "original_root"


# ---------------------------------------------------------------- effect


REFUSED = "<tool_use_error>File has not been read yet. Read it first before writing to it.</tool_use_error>"


def test_a_refused_edit_never_becomes_a_command_that_writes() -> None:
    from pipeline.convert import edits

    cmd = edits.replace_command("/testbed/a.py", [("a", "b", False)], REFUSED)
    assert edit_violation(cmd, REFUSED, 0, REFUSED) == "the harness refused the call, the command writes"
    ok = "The file /testbed/a.py has been updated successfully."
    cmd = edits.replace_command("/testbed/a.py", [("a", "b", False)], ok)
    assert edit_violation(cmd, ok, 0, ok) is None


def test_a_failed_edit_passes_only_when_its_failure_is_the_files_content() -> None:
    from pipeline.convert import edits

    nf = "No replacement was performed, old_str `a` did not appear verbatim in /testbed/a.py."
    cmd = edits.replace_command("/testbed/a.py", [("a", "b", False)], "ok", fail_message=nf)
    assert edit_violation(cmd, nf, 1, nf) is None
    other = "Error: the editor crashed"
    cmd = edits.replace_command("/testbed/a.py", [("a", "b", False)], "ok", fail_message=other)
    assert edit_violation(cmd, other, 1, other) is not None


def test_the_step_drops_with_its_reason_and_counts_it() -> None:
    from pipeline.core.episode import RawRun
    from pipeline.stages.convert import Convert
    from pipeline.stages.parse import Parsed
    from tests.builders import ctx

    bad = episode(run(("goto 3", "", 0)))
    good = episode(run(("ls", "a\n", 0)))
    raw = RawRun("uid", "test", "sweagent", 1, {}, 0)
    items = Convert(ctx())([Parsed(raw, ep) for ep in (bad, good)]).kept
    out = Verify(ctx())(items)
    assert out.kept.height == 1
    assert out.dropped.select("stage", "reason").rows() == [("verify", "harness_tool")]
    assert out.counters == Counter({"verify/harness_tool": 1, "dialect_drops/bash/verify/harness_tool": 1})


# ---------------------------------------------------------------- effect, replayed on displayed files


def edit_run(old: str, report: str) -> Episode:
    edit = ToolCall(
        "str_replace_editor",
        {"command": "str_replace", "path": "/testbed/a.py", "old_str": old, "new_str": "y"},
    )
    return episode([Step("look", Bash("cat /testbed/a.py"), "x = 1\nz = 2\n", 0), Step("fix", edit, report)])


def test_an_edit_on_a_displayed_file_is_run_on_it_and_must_print_what_the_run_shows() -> None:
    ok = "The file /testbed/a.py has been edited."
    assert reason(edit_run("x = 1", ok)) is None
    # the harness said it applied an edit whose old text the displayed file does not hold
    v = verify(edit_run("x = 9", ok), convert_turns(edit_run("x = 9", ok)))
    assert v is not None and v.rule == "edit_effect" and "run on the file as displayed" in v.detail


def test_a_run_command_that_may_write_forgets_the_displayed_files() -> None:
    from pipeline.convert.runfiles import Files, read_only

    files = Files({"/testbed/a.py": "x\n"})
    files.after("sed -n 1p a.py", "x\n", 0, False, split_command("sed -n 1p a.py"))
    assert files.known
    files.after("sed -i s/x/y/ a.py", "", 0, False, split_command("sed -i s/x/y/ a.py"))
    assert not files.known
    assert read_only("git diff HEAD | head") and not read_only("git checkout a.py")
    assert not read_only("echo x > a.py") and not read_only("find . -delete")


def test_an_edit_script_outside_the_converters_shapes_is_not_run() -> None:
    from pipeline.convert.editrun import run_edit
    from pipeline.convert.runfiles import Files

    files = Files({"/testbed/a.py": "x\n"})
    assert run_edit("import os\nos.system('touch /tmp/pwned')", files) is None
    assert run_edit("__import__('os')", files) is None
    assert run_edit("while True:\n    pass", files) is None
    assert run_edit("for i in range(10**12):\n    pass", files) is None  # no range: loops end
    assert run_edit("x = ().__class__.__base__.__subclasses__()", files) is None
    assert run_edit("print('{0.__class__}'.format(1))", files) is None
    # the converter's own shapes do run, loops over their edits included
    edit = "path = '/testbed/a.py'\nwith open(path) as f:\n    text = f.read()\nfor o, n in [('x', 'y')]:\n    text = text.replace(o, n)\nwith open(path, 'w') as f:\n    f.write(text)\nprint('ok', end='')"
    out = run_edit(edit, files)
    assert out is not None and (out.printed, out.code, out.text) == ("ok", 0, "y\n")


def test_a_program_the_record_shows_missing_is_missing_in_the_target_too() -> None:
    # real shape (wudi-alex/mini-swe-agent-CaM runs): a model calls a patch tool its image lacks
    out = "bash: line 1: applypatch: command not found\n"
    assert reason(episode(run(("applypatch << 'PATCH'\n*** Begin Patch\nPATCH", out, 127)))) is None
    assert reason(episode(run(("applypatch < p.diff", "patched\n", 0)))) == "unknown_program"
    # a harness's tool name is never a command, whatever the record printed
    assert reason(episode(run(("goto 3", "bash: goto: command not found\n", 127)))) == "harness_tool"


@pytest.mark.parametrize("content", ["a\nb\n", "a\nb", "", "\n", "x = '''EOF'''\n"])
def test_a_converters_create_is_read_back_as_the_text_it_writes(content: str) -> None:
    from pipeline.convert import edits
    from pipeline.convert.runfiles import created_file

    cmd = edits.create_command(
        "/testbed/pkg/x.py", content, "File created successfully at: /testbed/pkg/x.py"
    )
    got = created_file(cmd)
    # a create the reader does not know is no proof, never a wrong text
    assert got is None or got == ("/testbed/pkg/x.py", content)
    if content.strip():
        assert got == ("/testbed/pkg/x.py", content)


def test_arithmetic_is_no_program() -> None:
    # real shape (SWE-agent/mini-swe-agent's deepseek runs): seq over $((LINE+1))
    progs, _ = programs_of("for i in $(seq $((LINE+1)) $((LINE+10))); do echo $i; done; ((n++))")
    assert progs == ["seq", "echo"]


def test_an_edit_of_a_file_not_known_is_not_run() -> None:
    from pipeline.convert import edits
    from pipeline.convert.editrun import edit_script, run_edit
    from pipeline.convert.runfiles import Files

    script = edit_script(edits.replace_command("/testbed/a.py", [("x", "y", False)], "ok"))
    assert script is not None
    assert run_edit(script[0], Files()) is None
    out = run_edit(script[0], Files({"/testbed/a.py": "x\n"}))
    assert out is not None and (out.printed, out.code, out.text) == ("ok", 0, "y\n")
