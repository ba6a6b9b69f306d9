"""An independent checker of published runs against their source records: the wild judge's rules.

It imports nothing from ``pipeline`` or ``schemas`` (only mini-swe-agent 1.17.5, for its own action
parser), so a bug shared by the converter and its validator cannot hide here. Given one published run
(its mini-swe-agent v1 ``messages``) and the source record it came from, :func:`check_run` returns, per
rule, a list of short examples of each violation (an empty list: none found).

Rules, method and limits
------------------------
``exec``
    A harness tool name run as a bash command. Each ```bash block is cut into simple commands: heredoc
    bodies are removed, then the text is split outside quotes on newlines, ``;``, ``&``, ``&&``, ``|``,
    ``||``, ``(``, ``)`` and backticks (so ``$( … )`` bodies and subshells count); each piece is read with
    ``shlex``; compound keywords (``if then else elif do while until ! { time``), ``NAME=value``
    assignments and wrappers (``sudo``, ``timeout N``, ``env``, ``nohup``, ``nice``, ``stdbuf``,
    ``command``, ``exec``, ``xargs``) are skipped, ``bash -c``/``sh -c`` bodies are read again; ``for``,
    ``case``, ``select`` and function headers are skipped. The first word is a violation when it is one of
    :data:`TOOL_NAMES` (SWE-agent's bundles, OpenHands', Claude Code's) and no command of the run defines a
    shell function of that name. A path (``./open``) is never a tool. Limits: a command substitution inside
    double quotes is not split; ``case`` arms are not read; ``edit``/``open`` exist as programs on some
    distributions (run-mailcap, openvt) but are still counted: the rules forbid the harness names.
``submission``
    Where the source says it: SWE-agent ``info.submission``/``info.exit_status`` (``submitted`` in the
    status, or a non-empty submission: submitted; a status or a null submission otherwise: not
    submitted), mini-swe-agent ``info.exit_status == "Submitted"`` with ``info.submission`` (another
    status: not submitted), an OpenHands eval record's non-empty ``test_result.git_patch`` with a finish
    action (submitted; the evaluation diffs every run's workspace, so a patch without a finish, and an
    empty or absent patch, say nothing). A submitted run must end with a command printing mini's sentinel
    (``COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT``) and a last user message equal to the patch (the sentinel
    line aside; compared with trailing spaces, blank edge lines and CRs removed, the source's checkout
    roots rewritten to ``/testbed``); a run the source says did not submit must not end so. Examples name
    the sub-reason: ``missing_submit``, ``patch_mismatch``, ``unexpected_submit``; a patch equal but for the ``<REDACTED:kind>``
    placeholders the scrub step wrote into it is no violation (the pipeline's one documented change to
    a submission).
``decoration``
    An observation holding harness decoration (:data:`DECORATIONS`: SWE-agent's viewer header, ``(N more
    lines above/below)``, its prompt lines and templates; OpenHands' ``<response clipped>``, ``cat -n``
    note, interpreter/exit-code/working-directory notes; ...). Not a violation when the command of that
    turn or any earlier command of the run holds the pattern's key fragment (the command prints it: e.g.
    the ``awk`` a converter emits to reproduce a viewer's header, or a file the run itself wrote). Limit
    (false positives): a ``cat`` of a file of the repository that really holds such text is counted.
``rc_guess``
    ``<returncode>0</returncode>`` on an output that is only a Python traceback, or only ``command not
    found`` lines, when the source recorded no return code for it: the output's last line is looked up
    in the source record's strings; a return code recorded with it (an ``exit_code``/``returncode`` key of
    the object holding the string, of its ``extras``/``metadata``, or a ``<returncode>`` tag in the string)
    clears it when it is 0. Limit: other failure shapes (``No such file``, test failures) are not judged.
``roots``
    A path under the source's original checkout root remains in a published message (the system prompt
    aside). The roots are read from the source: SWE-agent's ``(Current directory: /x)``, ``<uploaded_files>
    /x``, ``/workspace/<name>`` paths, ``cd /x`` as the first command, ``cwd``/``working_dir``/``repo_root``
    values; ``/testbed``, ``/``, ``/tmp``, home and bare ``/workspace`` are never roots. A root counts when
    it stands as a whole path component (``/repo`` in ``/repo/x`` or ``/repo`` alone, not in ``/repos`` or
    ``/testbed/repo``). Limit: a root that is also a real system path (``/app``) may be counted.
``format``
    mini-swe-agent 1.17.5's own ``DefaultAgent.parse_action`` rejects an assistant message (zero or several
    ```bash blocks); the roles are not system, user, then assistant/user pairs; or an observation is not
    one of mini's shapes (``<returncode>N</returncode>\\n<output>\\n…</output>`` under 10,000 characters, the
    truncated form with its warning, head, elided count and tail, the timeout message, the format-error
    message); the final message after a submit is free.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import shlex
from collections.abc import Iterator
from functools import cache
from typing import Any

RULES = ("exec", "submission", "decoration", "rc_guess", "roots", "format")

SENTINELS = ("COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT", "MINI_SWE_AGENT_FINAL_OUTPUT")
ACTION_RE = re.compile(r"```bash\s*\n(.*?)\n```", re.DOTALL)

SWEAGENT_TOOLS = {
    # windowed viewer/editor, search, filemap, submit, review, forfeit, cursors (SWE-agent 0.x and 1.x)
    "open", "goto", "scroll_up", "scroll_down", "create", "edit", "insert", "append", "search_dir",
    "search_file", "find_file", "filemap", "submit", "str_replace_editor", "exit_cost", "exit_context",
    "exit_api", "exit_format", "exit_error", "exit_forfeit", "set_cursors", "_state", "state",
    "windowed_edit_linting", "windowed_edit_replace", "windowed_edit_rewrite", "view_image",
    # CTF bundles
    "decompile", "disassemble", "debug_start", "debug_add_breakpoint", "debug_continue", "debug_step",
    "debug_exec", "debug_stop", "connect_start", "connect_sendline", "connect_exec", "connect_stop",
}  # fmt: skip
OPENHANDS_TOOLS = {
    "execute_bash", "execute_ipython_cell", "execute_powershell", "str_replace_based_edit_tool",
    "think", "finish", "browser", "web_read", "task_tracker", "edit_file", "file_editor", "delegate",
    "str_replace_editor",
}  # fmt: skip
CLAUDE_CODE_TOOLS = {
    "Read", "Edit", "MultiEdit", "Write", "Grep", "Glob", "LS", "TodoWrite", "TodoRead", "Task", "Bash",
    "BashOutput", "KillShell", "KillBash", "NotebookEdit", "NotebookRead", "WebFetch", "WebSearch",
    "ExitPlanMode", "SlashCommand",
}  # fmt: skip
TOOL_NAMES = frozenset(SWEAGENT_TOOLS | OPENHANDS_TOOLS | CLAUDE_CODE_TOOLS)

KEYWORDS = {
    "if",
    "then",
    "else",
    "elif",
    "fi",
    "do",
    "done",
    "while",
    "until",
    "!",
    "{",
    "}",
    "time",
    "esac",
    "in",
}
SKIP_SEGMENT = {"for", "case", "select", "function"}
WRAPPERS = {"sudo", "nohup", "command", "exec", "builtin", "stdbuf", "nice", "timeout", "env", "xargs"}
SHELLS = {"bash", "sh", "zsh", "dash"}

# (name, pattern, key fragment a command printing it would hold)
DECORATIONS: tuple[tuple[str, re.Pattern[str], str], ...] = (
    ("viewer_header", re.compile(r"\[File: [^\n]* \(\d+ lines total\)\]"), "lines total"),
    ("more_lines", re.compile(r"\(\d+ more lines (?:above|below)\)"), "more lines"),
    ("response_clipped", re.compile(r"<response clipped>"), "response clipped"),
    ("save_context_note", re.compile(r"<NOTE>To save on context"), "To save on context"),
    ("cat_n_note", re.compile(r"Here's the result of running `cat -n`"), "result of running"),
    ("python_interpreter", re.compile(r"\[(?:Jupyter )?Python [Ii]nterpreter:"), "Python Interpreter"),
    ("command_finished", re.compile(r"\[Command finished with exit code"), "Command finished"),
    ("exit_code_note", re.compile(r"\[The command completed with exit code"), "completed with exit code"),
    ("cwd_note", re.compile(r"\[(?:Jupyter )?[Cc]urrent working directory:"), "working directory:"),
    ("open_file_prompt", re.compile(r"\(Open file: [^\n]*\)"), "Open file:"),
    ("current_dir_prompt", re.compile(r"\(Current directory: [^\n]*\)"), "Current directory:"),
    ("bash_prompt", re.compile(r"(?m)^bash-\$\s*$"), "bash-$"),
    ("no_output_template", re.compile(r"Your command ran successfully and did not produce any output"), "ran successfully"),
    ("file_updated_template", re.compile(r"File updated\. Please review the changes"), "Please review the changes"),
    ("edited_template", re.compile(r"has been edited\. Here's the result of running"), "has been edited"),
    ("review_template", re.compile(r"Review the changes and make sure they are as expected"), "Review the changes"),
    ("no_new_output", re.compile(r"\[The command has no new output after"), "no new output"),
    ("below_output", re.compile(r"\[Below is the output of the previous command\.\]"), "Below is the output"),
    ("execution_result", re.compile(r"EXECUTION RESULT of \["), "EXECUTION RESULT"),
)  # fmt: skip

OBS_RE = re.compile(r"<returncode>(-?\d+)</returncode>\n<output>\n(.*)</output>", re.DOTALL)
TRUNC_RE = re.compile(
    r"<returncode>(-?\d+)</returncode>\n<warning>\nThe output of your last command was too long\.\n.*?</warning>"
    r"<output_head>\n.*\n</output_head>\n<elided_chars>\n\d+ characters elided\n</elided_chars>\n"
    r"<output_tail>\n.*\n</output_tail>",
    re.DOTALL,
)
TIMEOUT_RE = re.compile(
    r"The last command <command>.*</command> timed out and has been killed\.\nThe output of the command was:\n"
    r".*\nPlease try another command and make sure to avoid those requiring interactive input\.",
    re.DOTALL,
)
FORMAT_ERROR = "Please always provide EXACTLY ONE action in triple backticks"

TRACEBACK_RE = re.compile(
    r"Traceback \(most recent call last\):\n.*\n[\w.]+(?:Error|Exception|Exit|Interrupt|Warning)\b[^\n]*",
    re.DOTALL,
)
NOT_FOUND_RE = re.compile(r"(?:[\w/.-]+: )?(?:line \d+: )?(?:\d+: )?[^\s:]+: (?:command )?not found")


# --------------------------------------------------------------------------------------------
# the source record


def source_record(data: bytes, where: str) -> Any:
    """The run a source_uid's ``row=<n>`` (JSON document) or ``L<i>`` (JSON Lines, 1-based) names."""
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    if where.startswith("L"):
        return json.loads(data.split(b"\n")[int(where[1:]) - 1])
    doc = json.loads(data)
    n = int(where.removeprefix("row=") or 0)
    if (
        isinstance(doc, list)
        and doc
        and all(isinstance(x, dict) for x in doc)
        and not any("role" in x or "action" in x or "observation" in x for x in doc[:20])
    ):
        return doc[n]
    return doc


def _strings(obj: Any, limit: int = 200_000) -> Iterator[tuple[str, dict[str, Any] | None]]:
    """Every string of a record with the object holding it (bounded walk)."""
    stack: list[tuple[Any, dict[str, Any] | None]] = [(obj, None)]
    seen = 0
    while stack and seen < limit:
        cur, parent = stack.pop()
        seen += 1
        if isinstance(cur, str):
            yield cur, parent
        elif isinstance(cur, dict):
            stack.extend((v, cur) for v in cur.values())
        elif isinstance(cur, list):
            stack.extend((v, parent) for v in cur)


def _recorded_rc(text: str, holder: dict[str, Any] | None) -> int | None:
    m = re.search(r"<returncode>\s*(-?\d+)\s*</returncode>", text)
    if m:
        return int(m.group(1))
    if holder is None:
        return None
    for d in (holder, holder.get("extras"), holder.get("metadata")):
        if isinstance(d, dict):
            for k in ("exit_code", "returncode", "return_code", "exitcode"):
                if isinstance(d.get(k), int) and not isinstance(d.get(k), bool):
                    return int(d[k])
            md = d.get("metadata")
            if isinstance(md, dict) and isinstance(md.get("exit_code"), int):
                return int(md["exit_code"])
    return None


_EXCLUDED_ROOTS = {
    "/",
    "/testbed",
    "/tmp",
    "/root",
    "/home",
    "/workspace",
    "/usr",
    "/etc",
    "/bin",
    "/var",
    "/opt",
}
_ROOT_PATTERNS = (  # (a substring every match holds, the pattern): the substring test is the fast path
    ("Current directory", re.compile(r"\(Current directory: (/[^)\s]+)\)")),
    ("<uploaded_files>", re.compile(r"<uploaded_files>\s*(/[^\s<]+)")),
    ("/workspace/", re.compile(r"(?<![\w/])(/workspace/[\w.\-]*__[\w.\-]+)")),
)


def source_roots(record: Any) -> set[str]:
    """The checkout roots the source run used (see the module docstring)."""
    roots: set[str] = set()
    for text, holder in _strings(record, 50_000):
        if len(text) > 2_000_000:
            continue
        for needle, pat in _ROOT_PATTERNS:
            if needle in text:
                roots.update(m.rstrip("/.") for m in pat.findall(text))
        if holder is not None:
            for k in ("cwd", "working_dir", "repo_root", "repo_path", "workspace_dir"):
                v = holder.get(k)
                if v is text and text.startswith("/") and "\n" not in text:
                    roots.add(text.rstrip("/"))
    roots = {
        r
        for r in roots
        if r not in _EXCLUDED_ROOTS and len(r) > 2 and not r.startswith(("/testbed/", "/tmp/"))
    }
    # the prompt shows the working directory, which moves: only the outermost of nested ones is a root
    return {r for r in roots if not any(r.startswith(o + "/") for o in roots)}


def source_submission(record: Any) -> tuple[str, str | None, str]:
    """(status, patch, note): status ``submitted`` / ``not_submitted`` / ``unknown``."""
    if not isinstance(record, dict):
        return "unknown", None, ""
    info = record.get("info") if isinstance(record.get("info"), dict) else None
    sweagent = isinstance(record.get("history"), list) and info is not None and "test_result" not in record
    if isinstance(record.get("messages"), list | str) and info is not None and not sweagent:  # mini-swe-agent
        status = info.get("exit_status")
        if status == "Submitted":
            sub = info.get("submission")
            return "submitted", sub if isinstance(sub, str) else "", "mini"
        if isinstance(status, str):
            return "not_submitted", None, f"exit_status {status}"
        return "unknown", None, ""
    if sweagent and info is not None:  # SWE-agent (a record may also carry a `messages` copy)
        sub = info.get("submission")
        status = str(info.get("exit_status") or "")
        if isinstance(sub, str) and sub.strip():
            return "submitted", sub, f"exit_status {status}"
        if "submitted" in status.lower():
            return "submitted", sub if isinstance(sub, str) else "", f"exit_status {status}"
        if "exit_status" in info or "submission" in info:
            return "not_submitted", None, f"exit_status {status or None}"
        return "unknown", None, ""
    tr = record.get("test_result")
    patch = tr.get("git_patch") if isinstance(tr, dict) else record.get("git_patch")
    # OpenHands' evaluation diffs the workspace of every run, finished or not: the patch is the
    # agent's submission only when it called finish
    if isinstance(patch, str) and patch.strip() and _has_finish(record):
        return "submitted", patch, "openhands"
    return "unknown", None, ""


def _has_finish(record: Any) -> bool:
    return any(
        text == "finish" and holder is not None and holder.get("action") == "finish"
        for text, holder in _strings(record, 100_000)
    )


# --------------------------------------------------------------------------------------------
# commands


_HEREDOC_RE = re.compile(r"<<-?\s*(['\"]?)([\w.\-]+)\1")


def _strip_heredocs(cmd: str) -> str:
    out: list[str] = []
    pending: list[str] = []
    for line in cmd.split("\n"):
        if pending:
            if line.strip() == pending[0]:
                pending.pop(0)
            continue
        out.append(line)
        pending += [m.group(2) for m in _HEREDOC_RE.finditer(line)]
    return "\n".join(out)


def _segments(cmd: str) -> list[str]:
    """Simple-command texts: split outside quotes on command separators and grouping characters."""
    segs: list[str] = []
    cur: list[str] = []
    quote = ""
    i = 0
    text = _strip_heredocs(cmd).replace("\\\n", " ")
    while i < len(text):
        c = text[i]
        if quote:
            cur.append(c)
            if c == "\\" and quote == '"' and i + 1 < len(text):
                cur.append(text[i + 1])
                i += 1
            elif c == quote:
                quote = ""
        elif c == "\\" and i + 1 < len(text):
            cur += [c, text[i + 1]]
            i += 1
        elif c in "'\"":
            quote = c
            cur.append(c)
        elif c == "#" and (not cur or cur[-1].isspace()):
            while i < len(text) and text[i] != "\n":
                i += 1
            continue
        elif c in "\n;|()`" or (c == "&" and not (cur and cur[-1] in "<>") and text[i + 1 : i + 2] != ">"):
            segs.append("".join(cur))
            cur = []
        else:
            cur.append(c)
        i += 1
    segs.append("".join(cur))
    return [s.strip() for s in segs if s.strip()]


def _words(seg: str) -> list[str]:
    try:
        return shlex.split(seg)
    except ValueError:
        return seg.split()


_ASSIGN_RE = re.compile(r"^[A-Za-z_]\w*(\[[^\]]*\])?\+?=")


def _first_words(cmd: str, depth: int = 0) -> Iterator[str]:
    for seg in _segments(cmd):
        words = _words(seg[:400])  # the first words are all a rule reads
        while words and (
            words[0] in KEYWORDS or _ASSIGN_RE.match(words[0]) or words[0] in {"$", "$((", "[["}
        ):
            words = words[1:]
        if not words or words[0] in SKIP_SEGMENT or re.match(r"^[\w.\-]+\(\)$", words[0]):
            continue
        while words and words[0] in WRAPPERS:
            w = words.pop(0)
            while words and (words[0].startswith("-") or _ASSIGN_RE.match(words[0])):
                opt = words.pop(0)
                if (
                    w in {"timeout", "nice", "xargs", "sudo"}
                    and opt in {"-s", "-k", "-n", "-I", "-u", "-P", "-d", "-L"}
                    and words
                ):
                    words.pop(0)
            if w == "timeout" and words and re.match(r"^\d+(\.\d+)?[smhd]?$", words[0]):
                words.pop(0)
        if not words:
            continue
        if words[0] in SHELLS and depth < 3:
            for j, w in enumerate(words[1:-1], 1):
                if w.startswith("-") and "c" in w:
                    yield from _first_words(words[j + 1], depth + 1)
                    break
            continue
        yield words[0]


def first_words(cmd: str) -> list[str]:
    """The program each simple command of a bash command runs (its first word)."""
    return list(_first_words(cmd))


_FUNC_RE = re.compile(r"(?:^|[\s;&|(])(?:function\s+([\w.\-]+)|([\w.\-]+)\s*\(\)\s*\{)")


def defined_functions(commands: list[str]) -> set[str]:
    return {a or b for c in commands for a, b in _FUNC_RE.findall(c)}


# --------------------------------------------------------------------------------------------
# mini-swe-agent 1.17.5's own parser


@cache
def _mini_parser() -> Any:
    os.environ.setdefault("MSWEA_SILENT_STARTUP", "1")
    from minisweagent.agents.default import AgentConfig, DefaultAgent, FormatError

    class _Shim:
        config = AgentConfig()

        def render_template(self, template: str, **kwargs: Any) -> str:
            return template

    shim = _Shim()

    def parse(content: str) -> bool:
        try:
            DefaultAgent.parse_action(shim, {"content": content})  # type: ignore[arg-type]
        except FormatError:
            return False
        return True

    return parse


def mini_accepts(content: str) -> bool:
    """Whether mini-swe-agent 1.17.5's DefaultAgent.parse_action accepts an assistant message."""
    return bool(_mini_parser()(content))


# --------------------------------------------------------------------------------------------
# the rules


def _norm_patch(text: str, roots: set[str]) -> str:
    for r in sorted(roots, key=len, reverse=True):
        text = text.replace(r, "/testbed")
    lines = [ln.rstrip() for ln in text.replace("\r", "").split("\n")]
    while lines and not lines[0]:
        lines.pop(0)
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines)


_REDACTED_RE = re.compile(r"<REDACTED:\w+>")


def _only_redacted(final: str, recorded: str) -> bool:
    """The final message is the recorded patch but for secret redactions (``<REDACTED:kind>``)."""
    if "<REDACTED:" not in final or len(final) > 200_000:
        return False
    parts = [re.escape(p) for p in _REDACTED_RE.split(final)]
    return re.fullmatch("[^\n]*?".join(parts), recorded) is not None


def _after_sentinel(text: str) -> str:
    lines = text.lstrip().splitlines(keepends=True)
    if lines and lines[0].strip() in SENTINELS:
        return "".join(lines[1:])
    return text


def _short(s: str, n: int = 160) -> str:
    s = s.replace("\n", "\\n")
    return s if len(s) <= n else s[: n - 1] + "…"


def check_run(messages: list[dict[str, Any]], record: Any) -> dict[str, list[str]]:
    """Per rule, examples of each violation of a published run (see the module docstring)."""
    out: dict[str, list[str]] = {r: [] for r in RULES}
    roles = [m.get("role") for m in messages]
    contents = [c if isinstance(c := m.get("content"), str) else "" for m in messages]
    expected = ["system", "user"] + ["assistant", "user"] * max(0, (len(messages) - 2) // 2)
    if roles != expected or len(messages) < 4:
        out["format"].append(f"roles {_short(' '.join(map(str, roles)), 80)}")
    commands: list[str] = []
    for i, (role, text) in enumerate(zip(roles, contents, strict=True)):
        if role == "assistant":
            if not mini_accepts(text):
                out["format"].append(
                    f"msg {i}: mini parse_action refuses ({len(ACTION_RE.findall(text))} bash blocks)"
                )
            found = ACTION_RE.findall(text)
            commands.append(found[0].strip() if len(found) == 1 else "")
    ends_in_submit = (
        len(messages) >= 4
        and roles[-1] == "user"
        and roles[-2] == "assistant"
        and any(s in commands[-1] for s in SENTINELS)
    )
    roots = source_roots(record)
    _check_exec(commands, out)
    _check_observations(messages, roles, contents, commands, ends_in_submit, record, out)
    _check_submission(contents, ends_in_submit, record, roots, out)
    _check_roots(roles, contents, roots, out)
    return out


def _check_exec(commands: list[str], out: dict[str, list[str]]) -> None:
    own = defined_functions(commands)
    for turn, cmd in enumerate(commands):
        for word in first_words(cmd):
            if word in TOOL_NAMES and word not in own:
                out["exec"].append(f"turn {turn}: {word}: {_short(cmd, 120)}")


def _check_observations(
    messages: list[dict[str, Any]],
    roles: list[Any],
    contents: list[str],
    commands: list[str],
    ends_in_submit: bool,
    record: Any,
    out: dict[str, list[str]],
) -> None:
    index: list[tuple[str, dict[str, Any] | None]] | None = None
    turn = -1
    for i in range(2, len(messages)):
        if roles[i] == "assistant":
            turn += 1
            continue
        if roles[i] != "user" or i == 1:
            continue
        text = contents[i]
        if ends_in_submit and i == len(messages) - 1:
            continue  # the submission: free text
        m = OBS_RE.fullmatch(text)
        if m and len(m.group(2)) >= 10_000:
            m = None
        if not (m or TRUNC_RE.fullmatch(text) or TIMEOUT_RE.fullmatch(text) or text.startswith(FORMAT_ERROR)):
            out["format"].append(f"msg {i}: observation shape: {_short(text, 100)}")
        earlier = "\n".join(commands[: turn + 1])
        for name, pat, fragment in DECORATIONS:
            if pat.search(text) and fragment not in earlier:
                out["decoration"].append(f"msg {i}: {name}: {_short(pat.search(text).group(0), 80)}")  # type: ignore[union-attr]
        if m and m.group(1) == "0":
            body = m.group(2).strip()
            if body and (
                TRACEBACK_RE.fullmatch(body)
                or all(NOT_FOUND_RE.fullmatch(ln.strip()) for ln in body.splitlines() if ln.strip())
            ):
                if index is None:
                    index = list(_strings(record))
                needle = body.splitlines()[-1].strip()
                recorded = [_recorded_rc(s, h) for s, h in index if needle in s]
                codes = [c for c in recorded if c is not None]
                if not codes:
                    out["rc_guess"].append(f"msg {i}: rc 0, none recorded: {_short(needle, 100)}")
                elif 0 not in codes:
                    out["rc_guess"].append(f"msg {i}: rc 0, record says {codes[0]}: {_short(needle, 100)}")


def _check_submission(
    contents: list[str], ends_in_submit: bool, record: Any, roots: set[str], out: dict[str, list[str]]
) -> None:
    status, patch, note = source_submission(record)
    if status == "submitted":
        if not ends_in_submit:
            out["submission"].append(
                f"missing_submit: the record submitted a {len(patch or '')}-character patch ({note})"
            )
        else:
            final, recorded = (
                _norm_patch(_after_sentinel(contents[-1]), roots),
                _norm_patch(patch or "", roots),
            )
            # a secret the scrub step redacted is the one documented change a patch may carry
            if final != recorded and not _only_redacted(final, recorded):
                out["submission"].append(
                    f"patch_mismatch: final message {len(contents[-1])} chars, record {len(patch or '')} ({note}): "
                    f"{_short(_after_sentinel(contents[-1]), 60)}"
                )
    elif status == "not_submitted" and ends_in_submit:
        out["submission"].append(f"unexpected_submit: the record did not submit ({note})")


def _check_roots(roles: list[Any], contents: list[str], roots: set[str], out: dict[str, list[str]]) -> None:
    if not roots:
        return
    pats = [(r, re.compile(r"(?<![\w./\-])" + re.escape(r) + r"(?![\w.\-])")) for r in sorted(roots)]
    for i, (role, text) in enumerate(zip(roles, contents, strict=True)):
        if role == "system":
            continue
        for r, pat in pats:
            m = pat.search(text)
            if m:
                out["roots"].append(
                    f"msg {i}: {r}: {_short(text[max(0, m.start() - 40) : m.end() + 40], 120)}"
                )
