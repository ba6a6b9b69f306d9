"""Solution leaks confirmed from the run's own writes.

A run cut by the step limit has no final diff: when it reads a fix from history (or fetches it) and
later types that fix in, the later write is the evidence.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from pipeline.convert.edits import create_command, insert_command, replace_command
from pipeline.leaks.writes import Write, writes_of
from pipeline.report.audit import explain
from pipeline.stages.leaks import SolutionLeak
from tests.test_leaks import one
from tests.test_scrub import ctx, work_frame, work_row

SRC = """def parse_header(raw, strict=False):
    fields = raw.split(";")
    if not fields:
        raise HeaderError("empty header")
    name = fields[0].strip()
    value = fields[1] if len(fields) > 1 else ""
    return Header(name, value)
"""
OLD = '    value = fields[1] if len(fields) > 1 else ""\n'
NEW = (
    '    value = ";".join(fields[1:]).strip() if len(fields) > 1 else ""\n'
    "    value = unquote_header_value(value, strict=strict)\n"
)
FIXED = SRC.replace(OLD, NEW)
FIX_DIFF = (
    "diff --git a/src/hdr.py b/src/hdr.py\n--- a/src/hdr.py\n+++ b/src/hdr.py\n"
    "@@ -3,5 +3,6 @@ def parse_header(raw, strict=False):\n"
    '     if not fields:\n         raise HeaderError("empty header")\n     name = fields[0].strip()\n'
    '-    value = fields[1] if len(fields) > 1 else ""\n'
    '+    value = ";".join(fields[1:]).strip() if len(fields) > 1 else ""\n'
    "+    value = unquote_header_value(value, strict=strict)\n"
    "     return Header(name, value)\n"
)
HISTORY = (
    "commit 9f1e2d3c4b5a69788776655443322110ffeeddcc\nAuthor: dev <d@x>\nDate:   Mon Jan 1 2024\n\n"
    "    Keep header values that contain semicolons\n\n"
    + FIX_DIFF
    + "\ncommit 1234567890abcdef1234567890abcdef12345678\nAuthor: dev <d@x>\n\n    Initial import\n"
)
CAT_N = "".join(f"{i:6d}\t{line}\n" for i, line in enumerate(SRC.splitlines(), 1))
EDIT = replace_command(
    "/testbed/src/hdr.py", [(OLD, NEW, False)], "The file /testbed/src/hdr.py has been edited.\n"
)
OTHER_EDIT = replace_command(
    "/testbed/src/hdr.py",
    [(OLD, '    value = fields[-1] if fields else ""\n', False)],
    "The file /testbed/src/hdr.py has been edited.\n",
)
PYTEST = "python -m pytest -q tests/test_hdr.py"


def cut_run(commands: list[str], outputs: list[str] | None = None) -> dict[str, object]:
    """A pool task (no gold patch) cut by the step limit: no submission, no final diff."""
    outputs = outputs if outputs is not None else [""] * len(commands)
    return work_row(
        commands,
        outputs,
        instance_id="acme__hdr-77",
        repo="acme__hdr",
        patch="",
        base_commit="",
        submitted=False,
    )


def detail_fields(detail: str) -> dict[str, str]:
    head, _, cmd = detail.partition(" cmd=")
    fields = dict(x.split("=", 1) for x in head.split(" match=")[0].split())
    if " match=" in head:
        fields["match"] = head.split(" match=", 1)[1]
    fields["cmd"] = cmd
    return fields


# ---- the must-show cases -------------------------------------------------------------------------------


def test_history_read_then_written_in_a_heredoc_edit_is_dropped() -> None:
    row = cut_run(
        ["cat -n src/hdr.py", "git log --all -p -- src/hdr.py", EDIT, PYTEST],
        [CAT_N, HISTORY, "The file /testbed/src/hdr.py has been edited.\n", "1 passed\n"],
    )
    reason, detail, counters = one(row)
    assert reason == "git_history" and counters == {"solution_leak/git_history": 1}
    f = detail_fields(detail)
    assert (f["turn"], f["write_turn"], f["lines"]) == ("1", "2", "2/2")
    assert json.loads(f["match"]) == [
        'value = ";".join(fields[1:]).strip() if len(fields) > 1 else ""',
        "value = unquote_header_value(value, strict=strict)",
    ]
    assert f["cmd"] == "git log --all -p -- src/hdr.py"


def test_history_read_then_something_else_written_is_an_attempt() -> None:
    row = cut_run(
        ["cat -n src/hdr.py", "git log --all -p -- src/hdr.py", OTHER_EDIT, PYTEST],
        [CAT_N, HISTORY, "ok\n", "1 failed\n"],
    )
    assert one(row) == (None, "", {"solution_leak_attempt/git_history": 1})


def test_oneline_listing_then_show_sha_then_written_is_dropped() -> None:
    listing = "9f1e2d3 Keep header values that contain semicolons\n1234567 Initial import\n"
    row = cut_run(
        ["git log --oneline --all", "git show 9f1e2d3", EDIT],
        [listing, HISTORY.split("\ncommit 1234567")[0], "ok\n"],
    )
    reason, detail, _ = one(row)
    assert reason == "foreign_object"
    assert (detail_fields(detail)["turn"], detail_fields(detail)["write_turn"]) == ("1", "2")


def test_curl_of_the_upstream_file_then_cat_over_the_file_is_dropped() -> None:
    # the fetched file mentions a traceback in a docstring, so the fetch alone is not taken as content
    fetched = '"""Raises on a bad header: Traceback (most recent call last) shows HeaderError."""\n' + FIXED
    cat_over = f"cat > src/hdr.py <<'EOF'\n{FIXED}EOF"
    row = cut_run(
        [
            "cat -n src/hdr.py",
            "curl -s https://raw.githubusercontent.com/acme/hdr/main/src/hdr.py",
            cat_over,
            PYTEST,
        ],
        [CAT_N, fetched, "", "1 passed\n"],
    )
    reason, detail, _ = one(row)
    assert reason == "network_fetch"
    f = detail_fields(detail)
    assert (f["turn"], f["write_turn"], f["lines"]) == ("1", "2", "2/2")


def test_curl_that_failed_then_cat_over_the_file_is_an_attempt() -> None:
    cat_over = f"cat > src/hdr.py <<'EOF'\n{FIXED}EOF"
    row = cut_run(
        ["curl -s https://raw.githubusercontent.com/acme/hdr/main/src/hdr.py", cat_over],
        ["curl: (6) Could not resolve host: raw.githubusercontent.com\n", ""],
    )
    assert one(row) == (None, "", {"solution_leak_attempt/network_fetch": 1})


@pytest.mark.parametrize(
    "wrapped",
    [
        "timeout -s KILL 30 git log --all -p -- src/hdr.py",
        "timeout -k 5 30 git log --all -p -- src/hdr.py",
        "env GIT_PAGER=cat git log --all -p -- src/hdr.py",
        "env -u PAGER A=B git log --all -p -- src/hdr.py",
        "sudo git log --all -p -- src/hdr.py",
        "sudo -u dev git log --all -p -- src/hdr.py",
        "nice -n 5 git log --all -p -- src/hdr.py",
        "stdbuf -oL git log --all -p -- src/hdr.py",
        "bash -c 'git log --all -p -- src/hdr.py'",
        "sh -lc 'git log --all -p -- src/hdr.py'",
        "cd /work/repo && git log --all -p -- src/hdr.py",
    ],
)
def test_every_wrapper_form_of_the_history_read_is_dropped(wrapped: str) -> None:
    row = cut_run(["cat -n src/hdr.py", wrapped, EDIT], [CAT_N, HISTORY, "ok\n"])
    assert one(row)[0] == "git_history"


# ---- the write forms -------------------------------------------------------------------------------------

WRITES = {
    "converted_replace": EDIT,
    "converted_create": create_command(
        "/testbed/src/hdr.py", FIXED, "File created successfully at: /testbed/src/hdr.py\n"
    ),
    "converted_insert": insert_command("/testbed/src/hdr.py", 5, NEW.rstrip("\n"), "ok\n"),
    "cat_heredoc": f"cat > src/hdr.py <<'EOF'\n{FIXED}EOF",
    "cat_append_heredoc": f"cat >> src/hdr.py << EOF\n{NEW}EOF",
    "tee_heredoc": f"tee src/hdr.py > /dev/null <<'EOF'\n{FIXED}EOF",
    "echo_redirect": "echo -e '" + NEW.replace("\n", "\\n") + "' > src/patch_part.py",
    "printf_tee": "printf '%s\\n' '" + NEW.rstrip("\n").replace("\n", "' '") + "' | tee -a src/hdr.py",
    "git_apply_heredoc": f"git apply <<'EOF'\n{FIX_DIFF}EOF",
    "patch_heredoc": f"patch -p1 <<'EOF'\n{FIX_DIFF}EOF",
    "patch_file_then_apply": f"cat > /tmp/fix.patch <<'EOF'\n{FIX_DIFF}EOF\ngit apply /tmp/fix.patch",
    "agent_python_replace": (
        "python3 - <<'PY'\nfrom pathlib import Path\np = Path('src/hdr.py')\n"
        f"p.write_text(p.read_text().replace({OLD!r}, {NEW!r}))\nPY"
    ),
    "python_c_write": "python3 -c " + shlex.quote(f"open('src/hdr.py', 'w').write({FIXED!r})"),
}


@pytest.mark.parametrize("name", sorted(WRITES))
def test_each_write_form_yields_the_written_lines(name: str) -> None:
    known = [ln.strip() for ln in SRC.splitlines() if ln.strip()]
    writes: list[Write] = writes_of(3, WRITES[name], [[" ".join(x.split()) for x in known]])
    introduced = {x for w in writes for x, f in zip(w.post, w.new, strict=True) if f}
    assert {
        'value = ";".join(fields[1:]).strip() if len(fields) > 1 else ""',
        "value = unquote_header_value(value, strict=strict)",
    } <= introduced
    assert all(w.turn == 3 for w in writes)


@pytest.mark.parametrize("name", sorted(WRITES))
def test_each_write_form_confirms_the_history_read(name: str) -> None:
    row = cut_run(["cat -n src/hdr.py", "git log --all -p -- src/hdr.py", WRITES[name]], [CAT_N, HISTORY, ""])
    assert one(row)[0] == "git_history"


def test_sed_fragment_is_widened_to_the_printed_line_and_its_context() -> None:
    """`sed -i 's/> 51/>= 51/'` names a fragment: the line and neighbours come from the earlier `cat -n`."""
    src = (
        "def collect(items):\n    out = []\n    for item in items:\n        if len(item) > 51:\n"
        "            out.append(item)\n    return out\n"
    )
    fixed = src.replace("> 51", ">= 51")
    hist = (
        "commit 9f1e2d3c4b5a69788776655443322110ffeeddcc\n\n    boundary\n\n@@ -2,4 +2,4 @@\n"
        "     out = []\n     for item in items:\n-        if len(item) > 51:\n+        if len(item) >= 51:\n"
        "             out.append(item)\n     return out\n"
    )
    cat_n = "".join(f"{i:6d}\t{line}\n" for i, line in enumerate(src.splitlines(), 1))
    sed = "sed -i 's/len(item) > 51/len(item) >= 51/' src/c.py"
    assert one(cut_run(["cat -n src/c.py", "git log --all -p", sed], [cat_n, hist, ""]))[0] == "git_history"
    # without the earlier print the one-line fragment has no neighbours: only an attempt
    assert one(cut_run(["git log --all -p", sed], [hist, ""]))[0] is None
    assert fixed.count(">= 51") == 1


# ---- benign look-alikes ------------------------------------------------------------------------------------


def test_own_history_and_head_are_not_attempts() -> None:
    row = cut_run(
        ["git log --oneline -5", "git show HEAD --stat", "pip install -e .", EDIT],
        ["1234567 Initial import\n", HISTORY, "Successfully installed hdr-0.1\n", "ok\n"],
    )
    assert one(row) == (None, "", {})


def test_written_before_the_history_read_is_not_a_leak() -> None:
    """The run typed its fix first; `git log --all -p` then shows its own commit."""
    row = cut_run(
        ["cat -n src/hdr.py", EDIT, "git commit -qam wip", "git log --all -p -1", PYTEST],
        [CAT_N, "ok\n", "", HISTORY, "1 passed\n"],
    )
    assert one(row) == (None, "", {"solution_leak_attempt/git_history": 1})


def test_a_stray_equal_line_without_its_context_is_not_a_leak() -> None:
    """History shows the written line in another file, among other neighbours."""
    other = (
        "commit 9f1e2d3c4b5a69788776655443322110ffeeddcc\n\n    cookies\n\n@@ -1,3 +1,4 @@\n"
        " def parse_cookie(raw):\n+    value = unquote_header_value(value, strict=strict)\n     return raw\n"
    )
    row = cut_run(["cat -n src/hdr.py", "git log --all -p", EDIT], [CAT_N, other, "ok\n"])
    assert one(row) == (None, "", {"solution_leak_attempt/git_history": 1})


def test_curl_of_documentation_is_not_an_attempt() -> None:
    row = cut_run(
        ["curl -s https://docs.python.org/3/library/email.header.html | head", EDIT],
        ["<html>Header docs</html>\n", "ok\n"],
    )
    assert one(row) == (None, "", {})


# ---- audit --explain -----------------------------------------------------------------------------------------


def test_audit_explain_shows_the_attempt_the_confirming_write_and_the_matching_lines(tmp_path: Path) -> None:
    row = cut_run(
        ["cat -n src/hdr.py", "git log --all -p -- src/hdr.py", EDIT, PYTEST],
        [CAT_N, HISTORY, "ok\n", "1 passed\n"],
    )
    out = SolutionLeak(ctx())(work_frame([row]))
    (tmp_path / "ledger").mkdir()
    out.dropped.write_parquet(tmp_path / "ledger" / "drops.parquet")
    fate = explain(tmp_path, str(row["source_uid"]))
    assert (fate["stage"], fate["reason"]) == ("solution_leak", "git_history")
    assert fate["solution_leak"] == {
        "attempt_turn": 1,
        "attempted_command": "git log --all -p -- src/hdr.py",
        "write_turn": 2,
        "lines_seen": "2/2",
        "matching_lines": [
            'value = ";".join(fields[1:]).strip() if len(fields) > 1 else ""',
            "value = unquote_header_value(value, strict=strict)",
        ],
    }


def test_audit_explain_of_a_drop_confirmed_by_the_output_itself(tmp_path: Path) -> None:
    row = cut_run(["git log --all -p -S unquote_header_value"], ["Fixes #77\n" + HISTORY])
    out = SolutionLeak(ctx())(work_frame([row]))
    (tmp_path / "ledger").mkdir()
    out.dropped.write_parquet(tmp_path / "ledger" / "drops.parquet")
    assert explain(tmp_path, str(row["source_uid"]))["solution_leak"] == {
        "attempt_turn": 0,
        "attempted_command": "git log --all -p -S unquote_header_value",
        "confirmed_by": "the attempt's own output",
    }
