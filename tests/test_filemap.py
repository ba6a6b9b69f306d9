"""SWE-agent 1.x's abbreviated view of a large Python file (its filemap) becomes a command that prints it.

Given the real SWE-smith pandas run, its view of ``pandas/io/sql.py`` (function bodies elided,
then clipped) is published as an ``awk`` over the file; run with bash on a file that has the
view's lines at the view's numbers, that command prints exactly the published observation.
"""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

import pytest

from pipeline.convert import convert_episode
from pipeline.convert.filemap import HEAD_NOTE, TAIL_NOTE, convert_filemap
from pipeline.core.episode import ConvertError, RawRun
from pipeline.parsers import parse_raw
from pipeline.parsers.files import iter_trajectory_file

REAL = Path(__file__).resolve().parent / "fixtures" / "real"
CLIP = (
    "<response clipped><NOTE>To save on context only part of this file has been shown to you. You should "
    "retry this tool after you have searched inside the file with `grep -n` in order to find the line "
    "numbers of what you are looking for.</NOTE>"
)


def rebuilt_file(view: str, extra: int = 5) -> str:
    """A file with each kept line of ``view`` at its number, other lines filler (never shown)."""
    lines: dict[int, str] = {}
    last = 0
    for ln in view.split("\n"):
        m = re.match(r"( *\d+) (.*)\Z", ln)
        if m is None:
            continue
        k = int(m.group(1))
        e = re.match(r"\.\.\. eliding lines (\d+)-(\d+) \.\.\.\Z", m.group(2))
        if e is not None and int(e.group(1)) == k:
            last = max(last, int(e.group(2)))
            continue
        lines[k], last = m.group(2), max(last, k)
    return "".join(lines.get(i, "        x = 1  # an elided line") + "\n" for i in range(1, last + extra + 1))


def run_on(command: str, path: str, text: str, tmp: Path) -> str:
    (tmp / "f.py").write_text(text)
    local = command.replace(f"'{path}'", f"'{tmp / 'f.py'}'")
    assert local != command
    return subprocess.run(["bash", "-c", local], capture_output=True, check=True).stdout.decode()


def test_real_clipped_filemap_is_an_awk_that_prints_it(tmp_path: Path) -> None:
    runs = [
        r
        for r in iter_trajectory_file(REAL / "sweagent-swesmith-pandas-pr_53856.traj")
        if isinstance(r, RawRun)
    ]
    ep = parse_raw(runs[0])
    conv = convert_episode(ep)
    obs = ep.steps[1].observation
    cmd, out = conv.commands[1], conv.outputs[1]
    assert cmd.startswith("awk -v E='98-105 111-132 136-153 ") and cmd.endswith(
        "'/testbed/pandas/io/sql.py' | expand | head -c 16000"  # the editor's 16,000-character cut (ASCII)
    )
    # the observation is the view between the editor's notes, cut where the editor clipped it
    assert obs.startswith(HEAD_NOTE) and out == obs[len(HEAD_NOTE) : obs.index("<response clipped>")]
    assert out.endswith("  1520 \n  1521 \n  15") and "<NOTE>" not in out
    assert (conv.returncodes[1], conv.sources[1].rc_from) == (0, "converter")
    assert run_on(cmd, "/testbed/pandas/io/sql.py", rebuilt_file(out), tmp_path) == out


def view(body: str, clipped: bool = False) -> str:
    return HEAD_NOTE + body + (CLIP + "\n" if clipped else "") + TAIL_NOTE + "\n"


NESTED = (
    "     1 def outer():\n"
    "     2 ... eliding lines 2-12 ...\n"
    "     4 ... eliding lines 4-10 ...\n"
    "    13 \n"
    "    14 x = 'tab\there'\n"
)


def test_nested_ranges_tabs_and_line_breaks_python_splits_at(tmp_path: Path) -> None:
    """A function inside an elided one has its own message inside the outer range; tabs were
    expanded by the editor (``| expand``); a form feed breaks a line for Python's splitlines."""
    shown = (NESTED + "    15 a\n    16 b\n").expandtabs()  # as the editor prints it
    fm = convert_filemap("/testbed/m.py", view(shown), 3)
    assert fm.output == shown and "E='2-12 4-10'" in fm.command
    text = "def outer():\n" + "    y = 1\n" * 11 + "\nx = 'tab\there'\na\fb\n"
    assert run_on(fm.command, "/testbed/m.py", text, tmp_path) == shown


@pytest.mark.parametrize(
    ("body", "clipped", "why"),
    [
        ("     1 a\n     3 b\n", False, "line 3 after line 1"),
        ("     1 a\n     5 ... eliding lines 5-9 ...\n", False, "range 5-9 after line 1"),
        ("     1 a\n    2 b\n", False, "is not numbered"),
        # the cut shows part of a number that is not the next line's
        ("     1 a\n     2 b\n     7", True, "the clipped line"),
        # after an elided range the cut must show the whole number (a nested message may come first)
        ("     1 def f():\n     2 ... eliding lines 2-9 ...\n    ", True, "the clipped line"),
    ],
)
def test_views_the_command_would_not_print_are_counted_drops(body: str, clipped: bool, why: str) -> None:
    with pytest.raises(ConvertError) as err:
        convert_filemap("/testbed/m.py", view(body, clipped), 2)
    assert err.value.reason == "unverifiable_view" and why in err.value.detail


def test_a_tab_after_a_non_ascii_letter_is_expanded_by_characters(tmp_path: Path) -> None:
    """``expand`` counts bytes: after "é" it would stop a column later than the editor's
    ``expandtabs``, so such a view is expanded by Python's own."""
    text = "s = 'é'\t# é\n"
    shown = ("     1 " + text).expandtabs()
    fm = convert_filemap("/testbed/m.py", view(shown), 0)
    assert "| expand" not in fm.command and "expandtabs()" in fm.command
    assert run_on(fm.command, "/testbed/m.py", text, tmp_path) == shown
    assert (
        subprocess.run(  # (what `expand` would have printed)
            ["bash", "-c", f"printf '%s' {shlex.quote('     1 ' + text)} | expand"],
            capture_output=True,
            check=True,
        ).stdout.decode()
        != shown
    )


def test_a_cut_message_elides_from_its_start(tmp_path: Path) -> None:
    """The clip cut a message: its range's start is shown, its end perhaps not; the command elides
    from the start to the end shown, which prints the same bytes up to the cut."""
    shown = "     1 def f():\n     2 ... eliding lines 2-"
    fm = convert_filemap("/testbed/m.py", view(shown, clipped=True), 0)
    assert "E='2-2'" in fm.command and fm.command.endswith(f"| head -c {len(shown)}")
    text = "def f():\n" + "    y = 1\n" * 8
    assert run_on(fm.command, "/testbed/m.py", text, tmp_path) == shown


def test_the_view_changes_no_file_the_run_knows() -> None:
    """The filemap command only reads: a script the run wrote before stays known after it (the
    return-code rules read it), as after any other view."""
    from pipeline.convert.runfiles import RunFiles

    files = RunFiles()
    files.learn("cat > '/testbed/repro.py' <<'EOF'\nprint('hi')\nEOF", "", 0)
    fm = convert_filemap("/testbed/m.py", view(NESTED.expandtabs()), 0)
    files.learn(fm.command, fm.output, 0)
    assert files.script("repro.py") == "print('hi')\n"
