"""File edits as shell commands that are safe for any content and readable as training data.

Edits become a ``python3`` script fed by a quoted heredoc (``python3 - <<'EOF'``): the heredoc
passes its body byte for byte (no expansion of ``$``, backticks or backslashes), and the delimiter
is chosen so that no line of the body equals it. Inside the script, old/new texts are Python
literals built by :func:`py_str`:

* readable form: a triple-quoted (non-raw) string with the text's real line breaks, so a code
  edit reads like the code; only ``\\`` , quote runs, CR, non-printable characters and a backtick
  at the start of a line are escaped;
* a backtick at the start of a line is written ``\\x60`` so the command never contains a line
  starting with three backticks, which would end mini-swe-agent's ```` ```bash ```` block early.

Files are read and written with ``newline=''`` and ``errors='surrogateescape'``, so CRLF, unicode
and undecodable bytes outside the edited text survive byte for byte. A replace needs exactly one
occurrence (``replace_all``: at least one), like the editors; otherwise the script prints the
failure message and exits 1 without touching the file.

Messages: every command prints exactly one of two texts, the success message or the failure
message. The converter passes the harness's recorded result text for the outcome the run
actually had (so the observation is exactly what the command prints) and a short default for the
other branch.
"""

from __future__ import annotations

import posixpath
import re
import unicodedata

DEFAULT_DIR = "/testbed"


def _escape_char(c: str) -> str:
    code = ord(c)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def _safe_char(c: str) -> bool:
    return c.isprintable() and unicodedata.category(c) not in ("Zl", "Zp")


# a quote that could close a ``'''`` literal: one followed by another, or the text's last
_CLOSING_QUOTE = re.compile(r"'(?='|\Z)")


def py_str(text: str) -> str:
    """A Python string literal equal to ``text``, multi-line and readable, never a fence line."""
    # _safe_char(c) is c.isprintable(): Python counts the Zl and Zp separators as unprintable
    if "\n" not in text and "`" not in text and text.isprintable():
        return repr(text)
    if text.replace("\n", "").replace("\t", "").isprintable():
        # no character to escape (the usual file text): the loop below, as whole-text edits
        body = text.replace("\\", "\\\\")
        if "'" in body:
            body = _CLOSING_QUOTE.sub(r"\\'", body)
        if "`" in body:
            body = ("\\x60" + body[1:] if body.startswith("`") else body).replace("\n`", "\n\\x60")
        return "'''" + body + "'''"
    out: list[str] = []
    n = len(text)
    for i, c in enumerate(text):
        if c == "\\":
            out.append("\\\\")
        elif c == "'":
            # only quotes that could close the literal: part of a run, or the last character
            out.append("\\'" if i == n - 1 or text[i + 1] == "'" else "'")
        elif c == "\n" or c == "\t":
            out.append(c)
        elif c == "\r":
            out.append("\\r")
        elif c == "`" and (i == 0 or text[i - 1] == "\n"):
            out.append("\\x60")
        elif not _safe_char(c):
            out.append(_escape_char(c))
        else:
            out.append(c)
    return "'''" + "".join(out) + "'''"


def shell_quote(text: str) -> str:
    """Single-quoted shell word for ``text``. A backtick starting a line is written ``'\\`'``
    (close quote, escaped backtick, reopen) so no line of the command starts with a backtick
    (mini-swe-agent fence safety)."""
    body = text.replace("'", "'\\''").replace("\n`", "\n'\\`'")
    if body.startswith("`"):
        body = "'\\`'" + body[1:]
    return f"'{body}'"


def print_command(text: str) -> str | None:
    """A command printing exactly ``text`` (None for empty text)."""
    if not text:
        return None
    if text.endswith("\n"):
        return f"printf '%s\\n' {shell_quote(text[:-1])}"
    return f"printf '%s' {shell_quote(text)}"


def heredoc_delimiter(body: str, base: str = "EOF") -> str:
    """``base`` or ``base_N``: a word no line of ``body`` equals."""
    lines = set(body.split("\n"))
    delim, k = base, 0
    while delim in lines:
        k += 1
        delim = f"{base}_{k}"
    return delim


def python_heredoc(script: str, then: str | None = None) -> str:
    """``python3 - <<'EOF'`` with ``script`` as its body; ``then`` runs after it succeeds."""
    delim = heredoc_delimiter(script)
    tail = f" && {then}" if then else ""
    return f"python3 - <<'{delim}'{tail}\n{script}\n{delim}"


_OPEN_R = "encoding='utf-8', errors='surrogateescape', newline=''"


def _read(path_lit: str) -> str:
    return f"with open({path_lit}, {_OPEN_R}) as f:\n    text = f.read()\n"


def _write() -> str:
    return f"with open(path, 'w', {_OPEN_R}) as f:\n    f.write(text)\n"


def _print_lit(msg: str) -> str:
    return f"print({py_str(msg)}, end='')\n" if msg else ""


def default_ok(path: str) -> str:
    return f"The file {path} has been edited.\n"


def _fail_branch(fail_message: str | None, default_expr: str, indent: str = "    ") -> str:
    """The body of the failure branch: print the message, exit 1."""
    if fail_message is None:
        body = f"{indent}print({default_expr})\n"
    else:
        body = indent + _print_lit(fail_message) if fail_message else ""
    return body + f"{indent}sys.exit(1)\n"


def replace_command(
    path: str,
    edits: list[tuple[str, str, bool]],
    ok_message: str,
    fail_message: str | None = None,
    then: str | None = None,
    reject_message: str | None = None,
    count: int | None = None,
) -> str:
    """Replace exact text in ``path``: ``edits`` are (old, new, replace_all), applied in order.

    Each old text must occur exactly once (at least once with replace_all; exactly ``count``
    times when the editor reported its count), else the script prints ``fail_message`` (default:
    a message with the count) and exits 1, file untouched. When the run recorded a failure
    (``fail_message``) and the old text equals the new one, the script refuses it too: editors
    refuse a replace that changes nothing, and the file would otherwise be "edited" on replay.
    """
    lines = ["import sys", f"path = {py_str(path)}"]
    script = "\n".join(lines) + "\n"
    if len(edits) == 1:
        old, new, replace_all = edits[0]
        script += f"old = {py_str(old)}\nnew = {py_str(new)}\n" + _read("path")
        script += "n = text.count(old)\n"
        cond = f"n != {int(count)}" if count is not None else "n == 0" if replace_all else "n != 1"
        cond = f"old == new or {cond}" if old == new and fail_message is not None else cond
        script += f"if {cond}:\n" + _fail_branch(
            fail_message,
            "f'No replacement was performed: old_str occurs {n} times in {path}, expected exactly once.'",
        )
        script += "text = text.replace(old, new)\n" if replace_all else "text = text.replace(old, new, 1)\n"
    else:
        items = "".join(f"    ({py_str(o)},\n     {py_str(n)}, {r}),\n" for o, n, r in edits)
        script += f"edits = [\n{items}]\n" + _read("path")
        script += "for i, (old, new, replace_all) in enumerate(edits, 1):\n"
        script += "    n = text.count(old)\n"
        script += "    if n == 0 or (n > 1 and not replace_all):\n"
        script += _fail_branch(
            fail_message,
            "f'No replacement was performed: old_str of edit {i} occurs {n} times in {path}, expected exactly once.'",
            indent="        ",
        )
        script += "    text = text.replace(old, new) if replace_all else text.replace(old, new, 1)\n"
    script += _syntax_gate(reject_message) + _write() + _print_lit(ok_message)
    return python_heredoc(script.rstrip("\n"), then)


def insert_command(
    path: str, insert_line: int, new: str, ok_message: str, fail_message: str | None = None
) -> str:
    """Insert ``new`` after line ``insert_line`` (0 = top), the str_replace_editor way."""
    script = f"import sys\npath = {py_str(path)}\nline = {int(insert_line)}\nnew = {py_str(new)}\n"
    script += _read("path") + "lines = text.split('\\n')\n"
    script += "if not 0 <= line <= len(lines):\n" + _fail_branch(
        fail_message, "f'Invalid insert_line {line}: the file has {len(lines)} lines.'"
    )
    script += "text = '\\n'.join(lines[:line] + new.split('\\n') + lines[line:])\n"
    script += _write() + _print_lit(ok_message)
    return python_heredoc(script.rstrip("\n"))


def view_range_command(path: str, start: int, end: int, fail_message: str) -> str:
    """``cat -n``-style view of lines ``start``..``end`` (-1: to the end) that first applies the
    editor's ``view_range`` checks (str_replace_editor: the first line within the file, the last
    not past it nor before the first) and, when one fails, prints the editor's recorded error and
    exits 1: a failed ``view`` whose command prints exactly what the run showed."""
    script = f"import sys\npath = {py_str(path)}\na, b = {int(start)}, {int(end)}\n"
    script += _read("path") + "lines = text.split('\\n')\n"
    script += "if not 1 <= a <= len(lines) or b > len(lines) or (b != -1 and b < a):\n"
    script += _fail_branch(fail_message, "''")
    script += "for i, line in enumerate(lines[a - 1:None if b == -1 else b], a):\n"
    script += "    print(f'{i:6}\\t{line}')"
    return python_heredoc(script)


def _syntax_gate(reject_message: str | None) -> str:
    """SWE-agent lints a ``.py`` edit and restores the file when it no longer compiles: the
    candidate text is compiled first and, when it fails, the recorded rejection is printed."""
    if reject_message is None:
        return ""
    return "try:\n    compile(text, path, 'exec')\nexcept (SyntaxError, ValueError):\n" + _fail_branch(
        reject_message, "''"
    )


def line_edit_command(
    path: str,
    start: int,
    end: int,
    new: str | None,
    ok_message: str,
    fail_message: str | None = None,
    then: str | None = None,
    reject_message: str | None = None,
) -> str:
    """Replace lines ``start``..``end`` (1-based, inclusive) with ``new`` (SWE-agent ``edit N:M``);
    ``None``: delete them.

    ``reject_message``: the edit is syntax-checked before writing (see :func:`_syntax_gate`).
    """
    replacement = "[]" if new is None else "new.split('\\n')"
    script = f"import sys\npath = {py_str(path)}\n" + ("" if new is None else f"new = {py_str(new)}\n")
    script += _read("path") + "lines = text.split('\\n')\n"
    script += f"if not 1 <= {int(start)} <= max(len(lines), 1):\n" + _fail_branch(
        fail_message, f"f'Invalid edit range {int(start)}:{int(end)}: the file has {{len(lines)}} lines.'"
    )
    script += f"lines[{int(start) - 1}:{int(end)}] = {replacement}\n"
    script += "text = '\\n'.join(lines)\n" + _syntax_gate(reject_message) + _write() + _print_lit(ok_message)
    return python_heredoc(script.rstrip("\n"), then)


def window_replace_command(
    path: str,
    first: int,
    last: int,
    old: str,
    new: str,
    ok_message: str,
    fail_message: str | None = None,
    then: str | None = None,
    reject_message: str | None = None,
) -> str:
    """SWE-agent 1.x ``edit(search, replace)``: replace the one occurrence of ``old`` inside the
    displayed lines ``first``..``last`` (1-based); none or several there, or (when the run recorded
    a failure) a search equal to its replacement, which the tool refuses: fail, file untouched."""
    refused = old == new and fail_message is not None
    script = (
        f"import sys\npath = {py_str(path)}\nold = {py_str(old)}\nnew = {py_str(new)}\n"
        + _read("path")
        + "lines = text.split('\\n')\n"
        f"lo = sum(len(line) + 1 for line in lines[:{int(first) - 1}])\n"
        f"hi = lo + len('\\n'.join(lines[{int(first) - 1}:{int(last)}]))\n"
        f"if {'old == new or ' if refused else ''}not old or text.count(old, lo, hi) != 1:\n"
    )
    script += _fail_branch(
        fail_message, f"f'Text {{old!r}} not found once in lines {int(first)}-{int(last)}.'"
    )
    script += "i = text.find(old, lo, hi)\ntext = text[:i] + new + text[i + len(old):]\n"
    script += _syntax_gate(reject_message) + _write() + _print_lit(ok_message)
    return python_heredoc(script.rstrip("\n"), then)


def window_insert_command(
    path: str, line: int | None, new: str, ok_message: str, then: str | None = None
) -> str:
    """SWE-agent 1.x ``insert(text, line)``: after line ``line`` (None: at the end), one trailing
    newline of the text dropped, as its WindowedFile.insert does."""
    script = f"path = {py_str(path)}\nnew = {py_str(new.removesuffix(chr(10)))}\n" + _read("path")
    if line is None:
        script += "text = (text.removesuffix('\\n') + '\\n' + new) if text else new\n"
    else:
        script += f"lines = text.split('\\n')\nlines.insert({int(line)}, new)\ntext = '\\n'.join(lines)\n"
    script += _write() + _print_lit(ok_message)
    return python_heredoc(script.rstrip("\n"), then)


def _heredoc_safe(text: str) -> bool:
    """Text a quoted ``cat`` heredoc can carry into a mini-swe block unchanged."""
    if "\x00" in text or "\n```" in text or text.startswith("```"):
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def create_command(path: str, content: str, message: str) -> str:
    """Write ``content`` to ``path`` exactly (parents created), then print ``message``.

    A quoted ``cat`` heredoc when the content allows it (trailing newline handled with
    ``truncate -s -1``), else a python3 writer with an escaped literal.
    """
    parent = posixpath.dirname(path)
    mkdir = f"mkdir -p {shell_quote(parent)} && " if parent not in ("", "/", DEFAULT_DIR) else ""
    qpath = shell_quote(path)
    printer = print_command(message)
    if _heredoc_safe(content):
        if content == "":
            cmd = f"{mkdir}: > {qpath}"
            return f"{cmd} && {printer}" if printer else cmd
        body = content[:-1] if content.endswith("\n") else content
        delim = heredoc_delimiter(body)
        head = f"{mkdir}cat > {qpath} <<'{delim}'"
        if not content.endswith("\n"):
            head += f" && truncate -s -1 {qpath}"
        if printer:
            head += f" && {printer}"
        return f"{head}\n{body}\n{delim}"
    script = f"import os\npath = {py_str(path)}\nos.makedirs(os.path.dirname(path) or '.', exist_ok=True)\n"
    script += f"text = {py_str(content)}\n" + _write() + _print_lit(message)
    return python_heredoc(script.rstrip("\n"))


def create_unless_exists_command(path: str, content: str, exists_message: str, ok_message: str) -> str:
    """The editor's ``create``, which refuses an existing path: print ``exists_message`` and
    exit 1 (nothing written) when ``path`` exists, else write ``content`` (parents created) and
    print ``ok_message``."""
    script = f"import os, sys\npath = {py_str(path)}\nif os.path.exists(path):\n"
    script += _fail_branch(exists_message, "''")
    script += "os.makedirs(os.path.dirname(path) or '.', exist_ok=True)\n"
    script += f"text = {py_str(content)}\n" + _write() + _print_lit(ok_message)
    return python_heredoc(script.rstrip("\n"))
