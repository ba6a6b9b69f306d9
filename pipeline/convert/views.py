"""File and directory views as ``cat -n``/``sed -n``/``ls`` print them: editor headers, Claude Code's
line arrows and reminders, clipped views and hidden-file notes taken off or reproduced."""

from __future__ import annotations

import re
from typing import Any

from pipeline.convert import edits
from pipeline.convert.actions import Action, _failed
from pipeline.core.episode import ConvertError

_CAT_N_HEADER = re.compile(r"^Here's the result of running `cat -n` on [^\n]*:\n")
_DIR_HEADER = re.compile(r"^Here's the files and directories up to 2 levels deep in [^\n]*:\n")
_REMINDER = re.compile(r"\s*<system-reminder>.*?</system-reminder>\s*", re.S)
_NUMBERED_EMPTY_TAIL = re.compile(r"(^|\n) *\d+\t\n?\Z")
_ARROW_NUMBER = re.compile(r"^( *\d+)\u2192", re.M)
# _ARROW_NUMBER's line starts after a newline (and, by match, at the start): led by a literal, the
# search jumps from newline to newline instead of testing a multiline ^ at every character
# (its empty group: findall then lists the shared empty string, not a copy of each match)
_NL_ARROW_AT_NUMBER = re.compile(r"\n *\d+\u2192()")
_ARROW_AT_START = re.compile(r" *\d+\u2192")
# a line (after the first) that does not start with a line number's arrow: usually there is none
_NL_NOT_AT_NUMBER = re.compile(r"\n(?! *\d+\u2192)")


def _arrows_at_numbers(body: str) -> int:
    """How many lines of ``body`` start with a line number's arrow (the line starts ``_ARROW_NUMBER`` finds).
    When every line does (the usual case) that is its line count: one search for a line that
    does not, without a match object per line."""
    if _NL_NOT_AT_NUMBER.search(body) is None and _ARROW_AT_START.match(body):
        return body.count("\n") + 1
    return len(_NL_ARROW_AT_NUMBER.findall(body)) + bool(_ARROW_AT_START.match(body))


def _tab_number(m: re.Match[str]) -> str:
    """Claude Code's ``  12→`` line number as ``cat -n`` prints it (a function: faster than a
    ``\\1`` template, which re expands in Python for each of a file's lines)."""
    return m.group(1) + "\t"


def _cat_n_body(obs: str, to_end: bool = True) -> str:
    """The editor's view output as ``cat -n`` prints it (header gone, no numbered empty tail)."""
    body = _CAT_N_HEADER.sub("", obs, count=1)
    if to_end:
        # the editor numbers the empty string after the file's final newline; cat -n does not.
        # That line is the last one (bar a final newline): search from the newline before it.
        m = _NUMBERED_EMPTY_TAIL.search(body, max(body.rfind("\n", 0, len(body) - 1), 0))
        if m:
            body = body[: m.start()] + m.group(1)
    return body


def _to_end(view_range: Any) -> bool:
    return not (isinstance(view_range, (list, tuple)) and len(view_range) == 2 and int(view_range[1]) != -1)


def view_command(path: str, view_range: Any = None) -> str:
    q = edits.shell_quote(path)
    if view_range and isinstance(view_range, (list, tuple)) and len(view_range) == 2:
        a, b = int(view_range[0]), int(view_range[1])
        return f"cat -n {q} | sed -n '{a},{'$' if b == -1 else b}p'"
    return f"cat -n {q}"


def _missing(path: str, command: str, obs: str = "No such file", turn: int = 0) -> tuple[str, int]:
    """What ``cat`` prints for a missing file (a ``| sed`` pipeline still exits 0), when the
    recorded error says the file is missing; any other read failure has no ``cat`` equivalent
    and is a counted drop (``convert/unverifiable_view``)."""
    if not _NO_PATH.search(obs):
        raise ConvertError("unverifiable_view", f"turn {turn}: {obs.strip()[:80]}")
    return f"cat: {path}: No such file or directory\n", 0 if "|" in command else 1


# a failed view's error that says the path is not there (cat prints its own message for that)
_NO_PATH = re.compile(r"does not exist|No such file|not found|[Nn]o file", re.I)
# str_replace_editor clips a long file's text at its limit and appends this note (OpenHands,
# SWE-agent 1.x); the numbering is applied after the clip
_CLIPPED = re.compile(r"<response clipped><NOTE>[^\n]*</NOTE>\n?\Z")


def _clipped_view(path: str, body: str, turn: int) -> Action:
    """A whole-file view the editor clipped: ``head -c N FILE | cat -n`` prints the same numbered
    prefix (N: the bytes of the file's text that were shown). The clip note is harness text, like
    the view's header. A clip inside a ``view_range`` is a counted drop."""
    m = _CLIPPED.search(body)
    if m is None:  # more text after the clip (SWE-agent's abbreviated view): not a prefix of the file
        raise ConvertError("clipped_view", f"turn {turn}: {path}")
    shown = body[: m.start()]
    lines = shown.split("\n")
    if not all(re.match(r" *\d+\t", ln) for ln in lines if ln):
        raise ConvertError("clipped_view", f"turn {turn}: {path}")
    raw = "\n".join(ln.split("\t", 1)[1] if ln else "" for ln in lines)
    cmd = f"head -c {len(raw.encode('utf-8', 'surrogateescape'))} {edits.shell_quote(path)} | cat -n"
    return Action("run", cmd, shown, 0)


# the editor's note on the hidden entries it left out (with "in this directory" since 2025-01)
def _clipped_range(path: str, view_range: Any, body: str, turn: int) -> Action:
    """A range view the editor clipped: it cut the range's text at its limit, then numbered
    the lines from the range's first; that is the same-length byte prefix of the range's
    numbered view (``cat -n FILE | sed -n 'a,bp' | head -c N``). The clip note is harness text."""
    m = _CLIPPED.search(body)
    if m is None:
        raise ConvertError("clipped_view", f"turn {turn}: {path} {view_range}")
    shown = body[: m.start()]
    numbers = [int(ln.split("\t", 1)[0]) for ln in shown.split("\n") if ln]
    first = int(view_range[0])
    if not all(re.match(r" *\d+\t", ln) for ln in shown.split("\n") if ln) or numbers != list(
        range(first, first + len(numbers))
    ):
        raise ConvertError("clipped_view", f"turn {turn}: {path} {view_range}")
    size = len(shown.encode("utf-8", "surrogateescape"))
    return Action("run", f"{view_command(path, view_range)} | head -c {size}", shown, 0)


_HIDDEN_NOTE = re.compile(
    r"\n+\d+ hidden files/directories (?:in this directory )?are excluded\. "
    r"You can use 'ls -la [^\n]*' to see them\.\s*\Z"
)
# the orders a listing can be printed in by a command that reads the file system: byte order
# (``LC_ALL=C sort``), and a locale's order (``sort`` under en_US.UTF-8: letters and digits
# only, case folded), reproduced by a python3 filter where no two entries tie under it
_LOCALE_SORT = (
    "python3 -c 'import re, sys; print(*sorted(sys.stdin.read().splitlines(), "
    'key=lambda p: re.sub(r"[^0-9a-z]", "", p.lower())), sep="\\n")\''
)


_SORTED_CLIP_LINES = 20


def _locale_key(line: str) -> str:
    return re.sub(r"[^0-9a-z]", "", line.lower())


def _sorter(lines: list[str], key_of: Any = lambda x: x) -> str | None:
    """The ``| sort`` stage that prints ``lines`` in their recorded order, or None."""
    keys = [key_of(x) for x in lines]
    if keys == sorted(keys, key=lambda k: k.encode()):
        return "LC_ALL=C sort"
    loc = [_locale_key(k) for k in keys]
    if all(k.isascii() for k in keys) and loc == sorted(loc) and len(set(loc)) == len(loc):
        return _LOCALE_SORT
    return None


def _hidden_filter(root: str) -> str:
    """find's test for openhands-aci's hidden entries: a name starting with "." at depth 1 or 2."""
    hidden = edits.shell_quote(f"{root}/.*") + " -o -path " + edits.shell_quote(f"{root}/*/.*")
    return f"-not \\( -path {hidden} \\)"


def _marked_listing(path: str, lines: list[str]) -> Action | None:
    """openhands-aci's directory view since 2025-01: ``find -L P -maxdepth 2`` without hidden
    entries, sorted, directories marked with ``/`` (``P/`` first). The command below prints the
    same lines when their recorded order is one ``_sorter`` reproduces, else the listing cannot be
    replayed (``convert/unverifiable_listing``); None for other listings."""
    root = path.rstrip("/") or "/"
    if lines[0] != root + "/":
        return None
    sort = _sorter(lines, lambda x: x.rstrip("/"))
    if sort is None:
        raise ConvertError("unverifiable_listing", f"{path}: in no order a sort reproduces")
    cmd = (
        f"find -L {edits.shell_quote(root)} -maxdepth 2 {_hidden_filter(root)} | {sort} | "
        'while IFS= read -r p; do if [ -d "$p" ]; then echo "$p/"; else echo "$p"; fi; done'
    )
    return Action("run", cmd, "\n".join(lines) + "\n", 0)


def convert_dir_view(path: str, obs: str, turn: int) -> Action:
    """The editor's directory view: the ``find`` command that prints its lines, in their order.

    Shapes (openhands-aci's history; SWE-agent's editor prints the first): ``find P -maxdepth 2
    -not -path '*/.*'`` in the file system's own order; the same sorted; ``find -L`` sorted with
    directories marked (``_marked_listing``). A sorted listing is ``find … | sort`` in its order
    (``_sorter``). A listing that is only its root (the checkout was a symlink ``find -P`` does
    not follow) is ``find P -maxdepth 0``. A listing the editor clipped at its limit is the
    sorted command's output cut at the same byte (``| head -c N``). The clip note, the header and
    the hidden-entries note are the editor's text, not the command's.

    A listing in the file system's own order is the editor's own ``find``, which prints that order
    on the checkout it was recorded on. Dropped (``convert/unverifiable_listing``): a listing with
    an entry outside its root (the checkout's own path, rewritten to the new root)."""
    body = _DIR_HEADER.sub("", obs, count=1)
    clip = _CLIPPED.search(body)
    shown = body[: clip.start()] if clip else _HIDDEN_NOTE.sub("", body).rstrip("\n")
    lines = shown.split("\n")
    root = path.rstrip("/") or "/"
    q = edits.shell_quote(root)
    inside = root.rstrip("/") + "/"
    if not all(ln == root or ln.startswith(inside) for ln in (lines[:-1] if clip else lines)):
        raise ConvertError("unverifiable_listing", f"turn {turn}: {path}: an entry outside the listed folder")
    if not clip:
        marked = _marked_listing(path, lines)
        if marked is not None:
            return marked
        if lines == [root]:
            return Action("run", f"find {q} -maxdepth 0", root + "\n", 0)
    elif lines[0] == root + "/":  # marked after the clip: the note became a listed entry
        raise ConvertError("unverifiable_listing", f"turn {turn}: clipped marked listing of {path}")
    # a clipped listing shows a prefix: sorted, it is the sorted listing's prefix only if the
    # harness sorted; many sorted lines say it did (find's own order, a disk's, never is)
    sort = _sorter(lines[:-1] if clip else lines) if not clip or len(lines) > _SORTED_CLIP_LINES else None
    # in no sorted order: the order the file system gave the editor's own find, which that find
    # prints again on the run's checkout (the image the run was recorded in)
    find = f"find {q} -maxdepth 2 -not -path '*/.*'"
    cmd = f"{find} | {sort}" if sort is not None else find
    if clip is None:
        return Action("run", cmd, shown + "\n", 0)
    return Action("run", f"{cmd} | head -c {len(shown.encode('utf-8', 'surrogateescape'))}", shown, 0)


def convert_view(path: str, view_range: Any, obs: str, rc: int | None, turn: int = 0) -> Action:
    """An editor ``view``: ``find`` for a directory, ``cat -n`` (``| sed`` for a range) for a file.

    A failed view is never given an output it would not print: a missing path gets ``cat``'s own
    message; a ``view_range`` the editor refused becomes a script applying the editor's checks,
    which prints the recorded error (``edits.view_range_command``); any other failure is a
    counted drop (``convert/unverifiable_view``)."""
    if _DIR_HEADER.match(obs):
        return convert_dir_view(path, obs, turn)
    if "<response clipped><NOTE>" in obs:
        if not view_range or (_to_end(view_range) and int(view_range[0]) == 1):
            return _clipped_view(path, _CAT_N_HEADER.sub("", obs, count=1), turn)
        return _clipped_range(path, view_range, _CAT_N_HEADER.sub("", obs, count=1), turn)
    body = _cat_n_body(obs, _to_end(view_range))
    if _CAT_N_HEADER.match(obs) or rc == 0 or not _failed(obs, rc):
        return Action("run", view_command(path, view_range), body, 0)
    cmd = view_command(path, view_range)
    if "view_range" in obs and isinstance(view_range, (list, tuple)) and len(view_range) == 2:
        error = obs.strip("\n")
        return Action(
            "run", edits.view_range_command(path, int(view_range[0]), int(view_range[1]), error), error, 1
        )
    out, code = _missing(path, cmd, obs, turn)
    return Action("run", cmd, out, code)
