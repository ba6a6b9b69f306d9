"""File tools other than the viewers: the editor's create/replace/insert, Claude Code's Read, Grep,
Glob and LS, the read/list/search/patch tools of other harnesses, SWE-agent's review-on-submit."""

from __future__ import annotations

import re
import shlex
from typing import Any

from pipeline.convert import claude_search, codex_patch, edits
from pipeline.convert.actions import Action, ToolState, _failed, _s
from pipeline.convert.bash import split_exit_marker
from pipeline.convert.sweagent_window import (
    convert_window,
)
from pipeline.convert.views import (
    _ARROW_NUMBER,
    _CAT_N_HEADER,
    _NUMBERED_EMPTY_TAIL,
    _REMINDER,
    _arrows_at_numbers,
    _cat_n_body,
    _missing,
    _tab_number,
    convert_view,
    view_command,
)
from pipeline.core.episode import ConvertError


def _edit_action(path: str, pairs: list[tuple[str, str, bool]], obs: str, rc: int | None) -> Action:
    if _failed(obs, rc):
        cmd = edits.replace_command(path, pairs, edits.default_ok(path), fail_message=obs)
        return Action("run", cmd, obs, 1)
    return Action("run", edits.replace_command(path, pairs, obs), obs, 0)


# openhands-aci's refusal to create over an existing file (nothing is written)
_EXISTS = re.compile(r"File already exists at: [^\n]*\. Cannot overwrite files using command `create`")


def _create_action(path: str, content: str, obs: str, rc: int | None, turn: int) -> Action:
    # the refusal is the editor's whole output, whether or not the harness recorded a status
    # (SWE-agent records none; its words are not among the failure hints)
    refused = _EXISTS.match(obs.lstrip()) is not None and rc in (None, 1)
    if (refused or _failed(obs, rc)) and _EXISTS.search(obs):
        ok = f"File created successfully at: {path}"
        return Action("run", edits.create_unless_exists_command(path, content, obs, ok), obs, 1)
    if _failed(obs, rc):
        # e.g. "File already exists … cannot overwrite": the file was not written
        raise ConvertError("failed_create", f"turn {turn}: {obs.strip()[:80]}")
    return Action("run", edits.create_command(path, content, obs), obs, 0)


def convert_editor(args: dict[str, Any], obs: str, rc: int | None, turn: int, state: ToolState) -> Action:
    command = _s(args, "command", default="")
    path = _s(args, "path", default="") or ""
    if command == "view":
        return convert_view(path, args.get("view_range"), obs, rc, turn)
    if command == "create":
        return _create_action(path, _s(args, "file_text", "content", default="") or "", obs, rc, turn)
    if command == "str_replace":
        old = _s(args, "old_str", default="") or ""
        new = _s(args, "new_str", default="") or ""
        return _edit_action(path, [(old, new, False)], obs, rc)
    if command == "insert":
        line = int(args.get("insert_line", 0) or 0)
        new = _s(args, "new_str", default="") or ""
        if _failed(obs, rc):
            return Action("run", edits.insert_command(path, line, new, edits.default_ok(path), obs), obs, 1)
        return Action("run", edits.insert_command(path, line, new, obs), obs, 0)
    if command == "undo_edit":
        if _failed(obs, rc):
            state.counters["convert/undo_edit_noop_removed"] += 1
            return Action("remove", text="convert/undo_edit_noop_removed")
        raise ConvertError("undo_edit", f"turn {turn}: {path}")
    raise ConvertError("unknown_tool", f"{args.get('_tool', 'str_replace_editor')}.{command}")


def _claude_read_body(obs: str, to_end: bool = False) -> str:
    """Claude Code's numbered read as ``cat -n`` prints it. Read numbers the empty string after a
    file's final newline as one more line; ``cat -n`` does not: on a read that reached the end of
    the file (``to_end``) a numbered empty last line is that artifact and goes."""
    body = (_REMINDER.sub("\n", obs) if "<system-reminder>" in obs else obs).rstrip("\n")
    arrows = body.count("\u2192")
    if arrows:
        # when every arrow is a line number's (the usual case), replacing them all is the same
        # edit as the per-line substitution, without a Python call per line
        at_numbers = _arrows_at_numbers(body)
        body = body.replace("\u2192", "\t") if at_numbers == arrows else _ARROW_NUMBER.sub(_tab_number, body)
    if to_end and (m := _NUMBERED_EMPTY_TAIL.search(body, max(body.rfind("\n", 0, len(body) - 1), 0))):
        body = body[: m.start()]
    return body + "\n" if body else ""


def _range(offset: Any, limit: Any) -> list[int] | None:
    if offset is None and limit is None:
        return None
    a = int(offset or 1)
    return [a, a + int(limit) - 1] if limit is not None else [a, -1]


def _grep(args: dict[str, Any], obs: str) -> Action:
    pattern = _s(args, "pattern", default="") or ""
    where = _s(args, "path", default="/testbed") or "/testbed"
    mode = _s(args, "output_mode", default="files_with_matches") or "files_with_matches"
    flags = claude_search.grep_flags(mode, pattern, bool(args.get("-i")))
    inc = f" --include={edits.shell_quote(g)}" if (g := _s(args, "glob")) else ""
    lines = [
        ln
        for ln in obs.splitlines()
        if ln.strip() and not re.match(r"^(Found \d+ (files?|matches)|No (files|matches) found)", ln)
    ]
    where = claude_search.search_root(where, lines)
    target = f" {edits.shell_quote(where)}" if where else ""
    cmd = f"grep {flags}{inc} -- {edits.shell_quote(pattern)}{target}"
    cmd, lines = claude_search.sorted_result(cmd, lines, mode)
    out = "".join(ln + "\n" for ln in lines)
    return Action("run", cmd, out, 0 if out else 1)


def _glob(args: dict[str, Any], obs: str) -> Action:
    pattern = _s(args, "pattern", default="*") or "*"
    where = _s(args, "path", default="/testbed") or "/testbed"
    cmd = claude_search.glob_command(pattern, where)
    base = where.rstrip("/") + "/"
    paths = [
        ln.removeprefix(base) for ln in obs.splitlines() if ln.strip() and not ln.startswith("No files found")
    ]
    out = "".join(p + "\n" for p in sorted(paths)) or "\n"
    return Action("run", cmd, out, 0)


def _ls(args: dict[str, Any], obs: str) -> Action:
    where = _s(args, "path", default="/testbed") or "/testbed"
    names = sorted(m.group(1) for m in re.finditer(r"^  - (.+)$", obs, re.M))
    return Action("run", f"ls -1p {edits.shell_quote(where)}", "".join(n + "\n" for n in names), 0)


def convert_claude(name: str, args: dict[str, Any], obs: str, rc: int | None, turn: int) -> Action:
    path = _s(args, "file_path", "path", default="") or ""
    if name == "Read":
        rng = _range(args.get("offset"), args.get("limit"))
        cmd = view_command(path, rng)
        if _failed(obs, rc) and "\u2192" not in obs:
            out, code = _missing(path, cmd, obs, turn)
            return Action("run", cmd, out, code)
        # the read reached the file's end: no limit, or fewer lines shown than it allowed
        shown = _arrows_at_numbers(obs.split("<system-reminder>", 1)[0].rstrip("\n"))
        to_end = rng is None or rng[1] == -1 or shown < rng[1] - rng[0] + 1
        return Action("run", cmd, _claude_read_body(obs, to_end), 0)
    if name == "Write":
        return _create_action(path, _s(args, "content", default="") or "", obs, rc, turn)
    if name == "Edit":
        pair = (
            _s(args, "old_string", default="") or "",
            _s(args, "new_string", default="") or "",
            bool(args.get("replace_all", False)),
        )
        return _edit_action(path, [pair], obs, rc)
    if name == "MultiEdit":
        pairs = [
            (str(e.get("old_string", "")), str(e.get("new_string", "")), bool(e.get("replace_all", False)))
            for e in args.get("edits", []) or []
        ]
        if not pairs:
            raise ConvertError("bad_tool_args", f"turn {turn}: MultiEdit without edits")
        return _edit_action(path, pairs, obs, rc)
    if name == "Grep":
        return _grep(args, obs)
    if name == "Glob":
        return _glob(args, obs)
    return _ls(args, obs)


_CAT_N_LINE = re.compile(r"^ *\d+\t", re.M)
_GREP_LINE = re.compile(r"^[^\n:]+:\d+:")
_NO_MATCH = re.compile(r"^\s*(No (matches|files|results) found|Found 0 matches)", re.I)


def _read_file(args: dict[str, Any], obs: str, rc: int | None, turn: int = 0) -> Action:
    """``read_file(path[, offset, limit])``: numbered (``cat -n``) or plain (``cat``/``sed``) text."""
    path = _s(args, "path", "file_path", "filename", default="") or ""
    # Kimi's ReadFile names its range line_offset/n_lines
    first = next((args[k] for k in ("offset", "start_line", "line_offset") if args.get(k) is not None), None)
    rng = _range(first, args.get("limit", args.get("n_lines")))
    if _failed(obs, rc) and not _CAT_N_LINE.match(obs):
        cmd = view_command(path, rng)
        out, code = _missing(path, cmd, obs, turn)
        return Action("run", cmd, out, code)
    if _CAT_N_LINE.match(obs) or _CAT_N_HEADER.match(obs):
        return Action("run", view_command(path, rng), _cat_n_body(obs, rng is None or rng[1] == -1), 0)
    if rng is None:
        return Action("run", f"cat {edits.shell_quote(path)}", obs, 0)
    end = "$" if rng[1] == -1 else rng[1]
    return Action("run", f"sed -n '{rng[0]},{end}p' {edits.shell_quote(path)}", obs, 0)


def _list_dir(name: str, args: dict[str, Any], obs: str, turn: int) -> Action:
    """Claude Code's tree listing, or a plain sorted one-name-a-line listing (``ls -1p``)."""
    if re.search(r"^  - ", obs, re.M):
        return _ls(args, obs)
    names = [ln for ln in obs.splitlines() if ln.strip()]
    if names and names == sorted(names) and all(" " not in n.strip() or "/" in n for n in names):
        where = _s(args, "path", "dir_path", "directory", default="/testbed") or "/testbed"
        return Action("run", f"ls -1p {edits.shell_quote(where)}", "".join(n + "\n" for n in names), 0)
    raise ConvertError("unverifiable_listing", f"turn {turn}: {name}")


def _search_tool(
    name: str, args: dict[str, Any], obs: str, rc: int | None, turn: int, state: ToolState
) -> Action:
    """R2E/SWE-agent ``search(search_term, path)`` or a grep-style ``path:line:text`` search."""
    if "search_term" in args:
        words = [str(args["search_term"])] + ([str(args["path"])] if args.get("path") else [])
        res = convert_window("search_dir", {"args": shlex.join(words), "body": ""}, obs, turn, state.window)
        return Action("run", res.command, res.output, res.returncode)
    pattern = _s(args, "pattern", "query", "regex", default=None)
    if pattern is None:
        raise ConvertError("bad_tool_args", f"turn {turn}: {name} without a pattern")
    where = _s(args, "path", "dir_path", "directory", default="/testbed") or "/testbed"
    cmd = f"grep -rnE -- {edits.shell_quote(pattern)} {edits.shell_quote(where)}"
    if _NO_MATCH.match(obs) or not obs.strip():
        return Action("run", cmd, "", 1)
    lines = [ln for ln in obs.splitlines() if ln.strip()]
    if all(_GREP_LINE.match(ln) for ln in lines):
        return Action("run", cmd, "".join(ln + "\n" for ln in lines), 0)
    raise ConvertError("unverifiable_search", f"turn {turn}: {name}")


def _apply_patch(args: dict[str, Any], obs: str, rc: int | None, turn: int) -> Action:
    """A unified diff applied by ``git apply`` from a quoted heredoc; the tool's message printed
    after it. Other patch dialects and failed applications are counted drops."""
    patch = _s(args, "patch", "input", "diff", default="") or ""
    if patch.lstrip().startswith(codex_patch.BEGIN):
        out, _ = split_exit_marker(obs)
        if (rc is not None and rc != 0) or (not codex_patch.is_success(out) and _failed(out, None)):
            raise ConvertError("apply_patch_failed", f"turn {turn}: {obs.strip()[:80]}")
        if not codex_patch.is_success(out):  # a report that is not Codex's: not what it ran
            raise ConvertError("apply_patch_format", f"turn {turn}: report {out.strip()[:60]!r}")
        workdir = _s(args, "workdir", default="/testbed") or "/testbed"
        return Action("run", codex_patch.codex_patch_command(patch, workdir, out, turn), out, 0)
    if not re.search(r"^(diff --git |--- )", patch, re.M) or "\n@@ " not in patch:
        raise ConvertError("apply_patch_format", f"turn {turn}")
    if _failed(obs, rc):
        raise ConvertError("apply_patch_failed", f"turn {turn}: {obs.strip()[:80]}")
    body = patch.removesuffix("\n")
    delim = edits.heredoc_delimiter(body)
    printer = edits.print_command(obs)
    return Action(
        "run", f"git apply <<'{delim}'{' && ' + printer if printer else ''}\n{body}\n{delim}", obs, 0
    )


_REVIEW_DIFF = re.compile(r"<diff>\n")


def _review(obs: str, state: ToolState) -> Action:
    """SWE-agent's review stage of ``submit`` (``review_on_submit_m``): it ran ``git add -A && git
    diff --cached`` and printed its review message with that diff between ``<diff>`` and
    ``</diff>``; the run went on. The command does the same: the message's text around the diff is
    printed, the diff comes from git. A message without a diff is printed as it is. The final
    newline ``print`` wrote (which SWE-agent 1.x strips) is printed too."""
    if not obs.endswith("\n"):
        obs += "\n"
        state.counters["convert/sweagent_newline_restored"] += 1
    m = _REVIEW_DIFF.search(obs)
    end = obs.rfind("\n</diff>")
    if m is None or end < m.end():
        return Action("run", edits.print_command(obs) or "true", obs, 0)
    head, tail = obs[: m.end()], obs[end:]  # the diff between them ends with git's own newline
    parts = [edits.print_command(head), "git add -A", "git diff --cached", edits.print_command(tail)]
    return Action("run", " && ".join(p for p in parts if p), obs, 0)
