"""SWE-agent 1.x's abbreviated view of a large Python file (its "filemap"), as a command that prints it.

For a ``.py`` file over 16,000 characters, SWE-agent's ``str_replace_editor view`` prints a note,
then the file with every function body of five lines or more replaced by one line, then another
note. Its code (``tools/edit_anthropic/bin/str_replace_editor``, ``Filemap.show_filemap``)::

    elide_messages = [(start, "... eliding lines {}-{} ...".format(start+1, end+1)) for ...]
    for i, line in sorted(elide_messages + [(i, line) for i, line in enumerate(lines) if i not in elide_lines]):
        out.append("{:6d} {}".format(i+1, line))
    print(maybe_truncate("\\n".join(out).expandtabs()))  # cut at 16,000 characters + a clip note

No plain command finds function bodies, but the elided ranges are printed in the view itself, so
an ``awk`` built from them prints the same text: every line ``%6d %s`` except those in a range,
and each range's message at its first line. ``awk`` splits lines where Python's ``splitlines``
does (its ``RS``); ``expand`` expands tabs as ``expandtabs`` does, except after a non-ASCII
character (``expand`` counts bytes, Python characters): a view where an expanded tab may
follow one is expanded by Python's own ``expandtabs`` instead. A clipped view is the same command cut at the shown bytes
(``| head -c N``). The two notes are the editor's, not the command's: the observation is
the view between them.

A view whose numbering does not follow the rules above (a line out of order, a message for a range
that does not start where the previous text ended) is not a filemap the command reproduces, and is
a counted drop (``convert/unverifiable_view``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pipeline.convert import edits
from pipeline.core.episode import ConvertError

HEAD_NOTE = (
    "<NOTE>This file is too large to display entirely. Showing abbreviated version. "
    "Please use `str_replace_editor view` with the `view_range` parameter to show selected lines next.</NOTE>\n"
)
TAIL_NOTE = (
    "<IMPORTANT><NOTE>The above file has been abbreviated. Please use `str_replace editor view` with "
    "`view_range` to look at relevant files in detail.</NOTE></IMPORTANT>"
)
_CLIP = re.compile(r"<response clipped><NOTE>[^\n]*</NOTE>\n\Z")
_LINE = re.compile(r"( *\d+) (.*)\Z", re.S)
_MESSAGE = re.compile(r"\.\.\. eliding lines (\d+)-(\d+) \.\.\.\Z")
_NUMBER_WIDTH = 6

# the separators Python's str.splitlines splits at (read_text already turned \r\n and \r into \n),
# as a regular expression over the UTF-8 bytes awk reads
_RS = r"\r\n|[\n\r\v\f\034\035\036]|\302\205|\342\200[\250\251]"
_PROGRAM = (
    'BEGIN{RS="' + _RS.replace("\\", "\\\\") + '";n=split(E,r," ");'
    'for(i=1;i<=n;i++){split(r[i],b,"-");for(j=b[1]+0;j<=b[2]+0;j++)x[j]=1;'
    'm[b[1]+0]=m[b[1]+0] sprintf("%6d ... eliding lines %s ...\\n",b[1],r[i])}} '
    'NR in m{printf "%s",m[NR]} !(NR in x){printf "%6d %s\\n",NR,$0}'
)


@dataclass(frozen=True)
class Filemap:
    command: str
    output: str


def is_filemap(obs: str) -> bool:
    return obs.startswith(HEAD_NOTE[:60])


def _number(n: int) -> str:
    return f"{n:{_NUMBER_WIDTH}d} "


def _expand_may_differ(line: str) -> bool:
    """Whether a run of spaces that ``expandtabs`` may have made from a tab (one ending at a
    multiple of 8 columns) follows a non-ASCII character: there ``expand``, counting bytes,
    would stop at another column."""
    first = next((i for i, ch in enumerate(line) if not ch.isascii()), None)
    return first is not None and any(m.start() > first and m.end() % 8 == 0 for m in re.finditer(" +", line))


def _ranges(
    lines: list[str], path: str, turn: int
) -> tuple[list[tuple[int, int]], int, tuple[int, int] | None]:
    """The elided ranges the full ``lines`` show, in order; the number of the next line outside
    them; the range the last line opened (None when it was a kept line)."""

    def bad(why: str) -> ConvertError:
        return ConvertError("unverifiable_view", f"turn {turn}: abbreviated view of {path}: {why}")

    ranges: list[tuple[int, int]] = []
    pos, open_range = 1, None
    for line in lines:
        m = _LINE.match(line)
        if m is None or len(m.group(1)) < _NUMBER_WIDTH:
            raise bad(f"line {line[:40]!r} is not numbered")
        k, text = int(m.group(1)), m.group(2)
        if m.group(1) != _number(k)[:-1]:
            raise bad(f"line {line[:40]!r} is not numbered as the editor numbers")
        msg = _MESSAGE.match(text)
        if msg is not None and int(msg.group(1)) == k:
            start, end = k, int(msg.group(2))
            if end < start:
                raise bad(f"range {start}-{end}")
            if start == pos:
                pos, open_range = end + 1, (start, end)
            elif open_range is not None and open_range[0] < start and end <= open_range[1]:
                pass  # a function inside an elided one: its own message, inside the outer range
            else:
                raise bad(f"range {start}-{end} after line {pos - 1}")
            ranges.append((start, end))
            continue
        if k != pos:
            raise bad(f"line {k} after line {pos - 1}")
        pos, open_range = k + 1, None
    return ranges, pos, open_range


def _cut_line_ok(
    partial: str, pos: int, open_range: tuple[int, int] | None, ranges: list[tuple[int, int]]
) -> bool:
    """Whether the command prints ``partial`` where the clip cut a line (adding the range of a
    cut message to ``ranges``). It prints line ``pos`` there, kept or as its range's message;
    right after an elided range a nested function's message may come first (a lower number), so
    there the cut must show the whole number. A cut message shows its range's start and perhaps
    part of its end: the command elides from that start to the end shown (the start itself when
    none is), which prints the same bytes up to the cut."""
    if len(partial) <= _NUMBER_WIDTH + 1:
        return _number(pos).startswith(partial) and (open_range is None or len(partial) >= _NUMBER_WIDTH)
    m = _LINE.match(partial)
    if m is None or m.group(1) != _number(int(m.group(1)))[:-1]:
        return False
    start, rest = int(m.group(1)), m.group(2)
    marker = "... eliding lines "
    if not (marker.startswith(rest) or rest.startswith(marker)):
        return start == pos  # a kept line: the file's own text
    if start != pos and not (open_range is not None and open_range[0] < start <= open_range[1]):
        return False
    shown_end = re.match(rf"{re.escape(marker)}{start}-(\d+)", rest)
    end = int(shown_end.group(1)) if shown_end else start
    if end < start or not (_number(start) + f"... eliding lines {start}-{end} ...").startswith(partial):
        return False
    ranges.append((start, end))
    return True


# Python's own tab expansion (by characters), for a view where ``expand`` (by bytes) may differ
_EXPANDTABS = (
    'python3 -c \'import sys; t = sys.stdin.buffer.read().decode("utf-8", "surrogateescape"); '
    'sys.stdout.buffer.write(t.expandtabs().encode("utf-8", "surrogateescape"))\''
)


def _command(path: str, ranges: list[tuple[int, int]], shown: str) -> str:
    spec = " ".join(f"{a}-{b}" for a, b in ranges)
    expand = _EXPANDTABS if any(_expand_may_differ(ln) for ln in shown.split("\n")) else "expand"
    return f"awk -v E='{spec}' '{_PROGRAM}' {edits.shell_quote(path)} | {expand}"


def convert_filemap(path: str, obs: str, turn: int) -> Filemap:
    """The command printing the abbreviated view ``obs`` of ``path`` and what it prints."""
    if not obs.startswith(HEAD_NOTE):
        raise ConvertError("unverifiable_view", f"turn {turn}: abbreviated view of {path}: another header")
    body = obs[len(HEAD_NOTE) :].rstrip("\n")
    if not body.endswith(TAIL_NOTE):
        raise ConvertError("unverifiable_view", f"turn {turn}: abbreviated view of {path}: no closing note")
    shown = body[: -len(TAIL_NOTE)]
    if not shown.endswith("\n"):
        raise ConvertError(
            "unverifiable_view", f"turn {turn}: abbreviated view of {path}: note inside a line"
        )
    clip = _CLIP.search(shown)
    if clip is not None:
        shown = shown[: clip.start()]
        if not shown:
            raise ConvertError("unverifiable_view", f"turn {turn}: abbreviated view of {path}: nothing shown")
        full, partial = shown.split("\n")[:-1], shown.rsplit("\n", 1)[-1]
    else:
        full, partial = shown.split("\n")[:-1], ""
    if not full:
        raise ConvertError("unverifiable_view", f"turn {turn}: abbreviated view of {path}: no line shown")
    ranges, pos, open_range = _ranges(full, path, turn)
    if clip is None:
        return Filemap(_command(path, ranges, shown), shown)
    if partial and not _cut_line_ok(partial, pos, open_range, ranges):
        raise ConvertError("unverifiable_view", f"turn {turn}: abbreviated view of {path}: the clipped line")
    size = len(shown.encode("utf-8", "surrogateescape"))
    return Filemap(f"{_command(path, ranges, shown)} | head -c {size}", shown)


__all__ = ["Filemap", "convert_filemap", "is_filemap"]
