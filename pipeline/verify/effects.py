"""Same effect: a synthesised command that writes a file changes it exactly as the original call did.

The converter's edit commands are python3 heredocs (``pipeline.convert.edits``) that replace the
exact old text only when it occurs as the editor required, else print the editor's failure and
exit 1 without writing; creates are quoted ``cat`` heredocs. Without the file's content, two
outcomes are proven by construction, and only these are accepted:

* the harness reported the edit applied, and the command prints that report on its success
  path (return code 0, a read-only display chained after it aside): the same old and new text
  are replaced in the same file;
* the harness reported that the old text was not found (or not unique), and the command prints
  that report on its failure path: the script's condition is the editor's, on the same file, so
  it fails there too and writes nothing.

A call the harness *refused* for a reason that is not the file's content (a tool-use error, a
file not read first, a user's veto) changed nothing; a command that would write is therefore
never its conversion. Any other failure text needs the file's content to be proven, and fails.
"""

from __future__ import annotations

import ast
import re

REFUSAL = re.compile(
    r"<tool_use_error>|File has not been read yet|has been (?:modified|changed) since (?:it was )?read"
    r"|The user doesn't want to proceed|[Uu]ser (?:rejected|denied|declined)|Permission to use \S+ (?:has been )?denied"
)
# failures decided by the file's content (whether the old text occurs as the editor required)
# or its existence
CONTENT_FAILURE = re.compile(
    r"No replacement was performed|did not appear verbatim|String to replace not found|"
    r"not found in (?:the )?file|Found 0 matches|occurs? \d+ times|[Mm]ultiple occurrences|"
    r"[Ff]ound \d+ matches|appears? \d+ times|must be unique|[Nn]o match(?:es)? found|"
    r"old_str(?:ing)? (?:was )?not found|could not find (?:the )?(?:text|string)|"
    # SWE-agent's lint gate: the edited text does not compile, decided by the file and the edit
    r"Your proposed edit has introduced new syntax error|"
    # an editor's create refused because the path exists: decided by the file system alone
    r"File already exists at",
)
_PY_HEREDOC = re.compile(r"\Apython3 - <<'(\w+)'[^\n]*\n(.*)\n\1\Z", re.S)
_WRITES = re.compile(r"open\(path, 'w'|^cat > |&& cat > ", re.M)


def _ok_message(script: str) -> str | None:
    """The literal a script prints last at top level (its success report), "" when none."""
    try:
        tree = ast.parse(script)
    except SyntaxError:
        return None
    for node in reversed(tree.body):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            fn = node.value.func
            if isinstance(fn, ast.Name) and fn.id == "print":
                args = node.value.args
                if len(args) == 1 and isinstance(args[0], ast.Constant) and isinstance(args[0].value, str):
                    return args[0].value
                return None
        if isinstance(node, ast.With):
            return ""  # the write is the last statement: it prints nothing
    return ""


def writes(command: str) -> bool:
    """Whether a synthesised command writes a file (an edit or a create)."""
    return _WRITES.search(command) is not None


def edit_violation(command: str, output: str, returncode: int | None, source_observation: str) -> str | None:
    """Why a synthesised writing command does not have its call's effect, or None."""
    if not writes(command):
        return None
    if REFUSAL.search(source_observation):
        return "the harness refused the call, the command writes"
    m = _PY_HEREDOC.match(command)
    if m is None:
        return None  # a create: its content is the call's, verbatim
    ok = _ok_message(m.group(2))
    if ok is None:
        return "the edit script cannot be read"
    if returncode == 0:
        # the success path: the script's report, then what a display chained after it prints
        if not output.startswith(ok):
            return "the success path does not print the editor's report"
        if CONTENT_FAILURE.search(ok) or REFUSAL.search(ok):
            return "the success path prints a failure"
        return None
    if CONTENT_FAILURE.search(source_observation):
        return None
    return "a failed edit whose failure only the file's content could prove"
