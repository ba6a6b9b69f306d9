"""Codex's ``apply_patch`` (``*** Begin Patch`` … ``*** End Patch``) → the edit it made.

Codex applies its own patch language, not a unified diff, so ``git apply`` cannot run it. A
patch the record says applied (Codex's ``Success. Updated the following files:`` report) becomes
the converter's own edit commands, which print that report:

* ``*** Add File: P`` → a create of ``P`` with the ``+`` lines (``edits.create_command``);
* ``*** Update File: P`` → an exact replace per hunk (``edits.replace_command``): the hunk's
  context and ``-`` lines, joined with their newlines, become its context and ``+`` lines; each
  must occur once in the file as it is when the hunk applies, else the script fails and writes
  nothing. Codex also matches ignoring trailing or surrounding whitespace and anchors a hunk
  after its ``@@ line``: a hunk that matched only that way fails on replay, so the verify
  step's replay of a displayed file catches it.

Paths are relative to the call's working directory. Dropped with a counted reason
(``convert/apply_patch_format``): a patch that touches several files, deletes or moves one, a
hunk with no old lines (an insertion Codex places at the end of the file), ``*** End of File``
hunks (whose last line's newline the patch does not say); ``convert/apply_patch_failed``: a
patch the record says failed (Codex verifies a patch before applying it: a failed one changed
nothing, but its report is Codex's, which no command prints).
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field

from pipeline.convert import edits
from pipeline.core.episode import ConvertError

BEGIN, END = "*** Begin Patch", "*** End Patch"
_ADD, _DELETE, _UPDATE, _MOVE = "*** Add File: ", "*** Delete File: ", "*** Update File: ", "*** Move to: "
_EOF = "*** End of File"
SUCCESS = "Success. Updated the following files:"


@dataclass
class FileOp:
    kind: str  # "add" | "update"
    path: str
    added: list[str] = field(default_factory=list)  # add: the file's lines
    hunks: list[tuple[list[str], list[str]]] = field(default_factory=list)  # update: (old, new) lines


def parse_patch(patch: str, turn: int) -> list[FileOp]:
    """The patch's file operations; a construct this converter does not reproduce raises."""
    lines = patch.replace("\r\n", "\n").split("\n")
    while lines and lines[-1].strip() == "":
        lines.pop()
    if not lines or lines[0].strip() != BEGIN or lines[-1].strip() != END:
        raise ConvertError("apply_patch_format", f"turn {turn}: no Begin/End Patch envelope")
    ops: list[FileOp] = []
    cur: FileOp | None = None
    old: list[str] = []
    new: list[str] = []

    def close_hunk() -> None:
        if cur is not None and cur.kind == "update" and (old or new):
            if not old:
                raise ConvertError("apply_patch_format", f"turn {turn}: a hunk with no old lines")
            cur.hunks.append((list(old), list(new)))
        old.clear()
        new.clear()

    for ln in lines[1:-1]:
        if ln.startswith((_DELETE, _MOVE)):
            raise ConvertError("apply_patch_format", f"turn {turn}: {ln.split(':', 1)[0][4:]}")
        if ln.startswith((_ADD, _UPDATE)):
            close_hunk()
            kind = "add" if ln.startswith(_ADD) else "update"
            cur = FileOp(kind, ln.split(": ", 1)[1].strip())
            ops.append(cur)
            continue
        if cur is None:
            raise ConvertError("apply_patch_format", f"turn {turn}: a line before any file: {ln[:40]!r}")
        if cur.kind == "add":
            if not ln.startswith("+"):
                raise ConvertError("apply_patch_format", f"turn {turn}: an added file's line without '+'")
            cur.added.append(ln[1:])
            continue
        if ln.startswith("@@"):
            close_hunk()
            continue
        if ln.strip() == _EOF:
            raise ConvertError("apply_patch_format", f"turn {turn}: an End of File hunk")
        if ln.startswith("-"):
            old.append(ln[1:])
        elif ln.startswith("+"):
            new.append(ln[1:])
        elif ln.startswith(" ") or ln == "":
            old.append(ln[1:])
            new.append(ln[1:])
        else:
            raise ConvertError("apply_patch_format", f"turn {turn}: a hunk line {ln[:40]!r}")
    close_hunk()
    if len(ops) != 1:
        raise ConvertError("apply_patch_format", f"turn {turn}: {len(ops)} files in one patch")
    if ops[0].kind == "update" and not ops[0].hunks:
        raise ConvertError("apply_patch_format", f"turn {turn}: an update with no hunk")
    return ops


def _joined(lines: list[str]) -> str:
    return "".join(x + "\n" for x in lines)


def codex_patch_command(patch: str, workdir: str, report: str, turn: int) -> str:
    """The command that makes the patch's edit and prints ``report`` (Codex's success text)."""
    (op,) = parse_patch(patch, turn)
    path = op.path if op.path.startswith("/") else posixpath.normpath(posixpath.join(workdir, op.path))
    if op.kind == "add":
        return edits.create_command(path, _joined(op.added), report)
    pairs = [(_joined(o), _joined(n), False) for o, n in op.hunks]
    return edits.replace_command(path, pairs, report)


def is_success(report: str) -> bool:
    return report.startswith(SUCCESS)
