"""Kimi CLI's file tools whose semantics the shared converters do not have (``kimi_code``).

Kimi's status part (``<system>…</system>``) is removed before these run (``split_system_status``
in ``pipeline.convert.tools``): what is left is the tool's own output.

* ``ReadFile(path, line_offset, n_lines)`` prints ``cat -n``'s own lines (``{n:6d}\\t{line}``)
  from ``line_offset``: ``cat -n FILE`` or ``cat -n FILE | sed -n 'a,bp'``, output as shown (no
  editor's numbered empty tail to remove: Kimi numbers only real lines).
* ``StrReplaceFile(path, edit)``: each edit replaces the first occurrence of ``old`` (every one
  with ``replace_all``), in order; the call fails, writing nothing, only when the text did not
  change at all. The command is a python3 script doing exactly that; on success Kimi prints
  nothing but its status, so neither does the script.
* ``WriteFile`` in ``append`` mode has no create equivalent: ``convert/bad_tool_args``.
"""

from __future__ import annotations

from typing import Any

from pipeline.convert import edits
from pipeline.core.episode import ConvertError

_OPEN = "encoding='utf-8', errors='surrogateescape', newline=''"


def kimi_replace_command(path: str, pairs: list[tuple[str, str, bool]], fail_message: str | None) -> str:
    items = "".join(f"    ({edits.py_str(o)},\n     {edits.py_str(n)}, {r}),\n" for o, n, r in pairs)
    script = f"import sys\npath = {edits.py_str(path)}\nedits = [\n{items}]\n"
    script += f"with open(path, {_OPEN}) as f:\n    text = f.read()\n"
    script += "before = text\nfor old, new, replace_all in edits:\n"
    script += "    text = text.replace(old, new) if replace_all else text.replace(old, new, 1)\n"
    fail = edits.py_str(
        fail_message or "No replacements were made. The old string was not found in the file."
    )
    script += f"if text == before:\n    print({fail}, end='')\n    sys.exit(1)\n"
    script += f"with open(path, 'w', {_OPEN}) as f:\n    f.write(text)"
    return edits.python_heredoc(script)


def replace_pairs(args: dict[str, Any], turn: int) -> list[tuple[str, str, bool]]:
    raw = args.get("edit")
    items = raw if isinstance(raw, list) else [raw]
    pairs: list[tuple[str, str, bool]] = []
    for e in items:
        if not isinstance(e, dict) or not isinstance(e.get("old"), str) or not isinstance(e.get("new"), str):
            raise ConvertError("bad_tool_args", f"turn {turn}: StrReplaceFile edit without old/new")
        pairs.append((e["old"], e["new"], bool(e.get("replace_all", False))))
    if not pairs:
        raise ConvertError("bad_tool_args", f"turn {turn}: StrReplaceFile without edits")
    return pairs
