"""Converted edits, run with bash, reproduce the post-edit file byte for byte."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline.convert.edits import create_command, insert_command, py_str, replace_command
from pipeline.convert.render import parse_actions, render_assistant
from tests.fuzzing import examples

# text that stresses quoting: quotes, backslashes, $, backticks, fences, CR, heredoc words
_ATOMS = st.sampled_from(
    [
        "'",
        '"',
        "\\",
        "$",
        "$(id)",
        "`",
        "```",
        "\n```\n",
        "EOF",
        "\nEOF\n",
        "\r\n",
        "\t",
        "é",
        "日本",
        "\u2028",
        "'''",
        '"""',
        "\x1b",
        "{x}",
        "%s",
        "\n",
    ]
)
TEXT = st.lists(
    st.one_of(
        _ATOMS, st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=8)
    ),
    max_size=12,
).map("".join)


def run(cmd: str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(check=False, args=["bash", "-c", cmd], cwd=cwd, capture_output=True, timeout=20)


def assert_one_block(cmd: str) -> None:
    # the command survives mini-swe-agent's fence: exactly one block, equal to the command
    assert parse_actions(render_assistant("edit", cmd)) == [cmd.strip()]


@settings(
    max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(before=TEXT, old=TEXT, new=TEXT, after=TEXT)
def test_replace_reproduces_post_edit_file(
    tmp_path: Path, before: str, old: str, new: str, after: str
) -> None:
    path = tmp_path / "f.txt"
    content = before + old + after
    path.write_bytes(content.encode("utf-8"))
    cmd = replace_command(str(path), [(old, new, False)], "Edited.\n")
    assert_one_block(cmd)
    res = run(cmd, tmp_path)
    if content.count(old) == 1:
        assert res.returncode == 0, res.stdout + res.stderr
        assert res.stdout == b"Edited.\n"
        assert path.read_bytes() == content.replace(old, new, 1).encode("utf-8")
    else:
        # not unique (or empty): exit 1 with the message, file untouched
        assert res.returncode == 1
        n = content.count(old)
        assert res.stdout.decode() == (
            f"No replacement was performed: old_str occurs {n} times in {path}, expected exactly once.\n"
        )
        assert path.read_bytes() == content.encode("utf-8")


@settings(
    max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(content=TEXT, old=TEXT, message=TEXT)
def test_failing_replace_prints_the_tools_message(
    tmp_path: Path, content: str, old: str, message: str
) -> None:
    path = tmp_path / "g.txt"
    body = content.replace(old, "") if old else content
    path.write_bytes(body.encode("utf-8"))
    cmd = replace_command(str(path), [(old + "\x01unique", "x", False)], "ok", fail_message=message)
    res = run(cmd, tmp_path)
    assert res.returncode == 1
    assert res.stdout == message.encode("utf-8")
    assert path.read_bytes() == body.encode("utf-8")


@settings(
    max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(content=TEXT, message=TEXT)
def test_create_writes_exact_bytes_and_prints_message(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "sub" / "new.py"
    cmd = create_command(str(path), content, message)
    assert_one_block(cmd)
    res = run(cmd, tmp_path)
    assert res.returncode == 0, res.stderr
    assert path.read_bytes() == content.encode("utf-8")
    assert res.stdout == message.encode("utf-8")


def test_binary_ish_file_outside_the_edit_survives(tmp_path: Path) -> None:
    path = tmp_path / "b.bin"
    raw = b"\xff\xfe head \x80\x81\r\nkey = 1\r\n\xc3\x28 tail"
    path.write_bytes(raw)
    res = run(replace_command(str(path), [("key = 1", "key = 2", False)], ""), tmp_path)
    assert res.returncode == 0, res.stdout
    assert path.read_bytes() == raw.replace(b"key = 1", b"key = 2")


def test_multi_edit_applies_in_order_and_replace_all(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_text("a = 1\nb = a\nc = a\n")
    cmd = replace_command(str(path), [("a = 1", "x = 1", False), ("= a\n", "= x\n", True)], "done\n")
    res = run(cmd, tmp_path)
    assert (res.returncode, res.stdout) == (0, b"done\n")
    assert path.read_text() == "x = 1\nb = x\nc = x\n"


def test_insert_after_line_like_the_editor(tmp_path: Path) -> None:
    path = tmp_path / "i.py"
    path.write_text("one\ntwo\n")
    res = run(insert_command(str(path), 1, "inserted", "ok\n"), tmp_path)
    assert (res.returncode, res.stdout) == (0, b"ok\n")
    assert path.read_text() == "one\ninserted\ntwo\n"
    res = run(insert_command(str(path), 99, "x", "ok\n"), tmp_path)
    assert res.returncode == 1 and b"Invalid insert_line 99" in res.stdout


def test_literals_stay_readable_for_code() -> None:
    code = 'def f(x):\n    return "a" + x\n'
    lit = py_str(code)
    assert lit == "'''def f(x):\n    return \"a\" + x\n'''"
    assert eval(lit) == code
    # a fence line is escaped so no line of the command starts with ```
    lit = py_str("doc\n```python\nx\n```\n")
    assert not re.search(r"^```", lit, re.M) and eval(lit) == "doc\n```python\nx\n```\n"


def test_create_heredoc_is_the_plain_readable_form() -> None:
    cmd = create_command(
        "/testbed/pkg/a.py", "print('hi $USER')\n", "File created successfully at: /testbed/pkg/a.py"
    )
    assert cmd == (
        "mkdir -p '/testbed/pkg' && cat > '/testbed/pkg/a.py' <<'EOF' && "
        "printf '%s' 'File created successfully at: /testbed/pkg/a.py'\nprint('hi $USER')\nEOF"
    )
