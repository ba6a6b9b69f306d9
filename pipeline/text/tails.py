"""Searches bounded to the tail of a text.

Harness trailers are anchored at the end of an output (``\\s*\\Z``) but ``Pattern.search`` tries
every position of a 50 KB output. These helpers bound where a match can start, so only the tail
is scanned; each caller states why its pattern cannot match earlier."""

from __future__ import annotations

import re

# Harness trailers are anchored at the end of an output (``\s*\Z``) but ``Pattern.search`` tries
# every position of a 50 KB output. These helpers bound where a match can start, so only the tail
# is scanned; each caller states why its pattern cannot match earlier.


def rstripped_len(text: str) -> int:
    """``len(text.rstrip())`` without copying a long text: only its tail is stripped."""
    cut = max(len(text) - 64, 0)
    tail = text[cut:].rstrip()
    return cut + len(tail) if tail or not cut else len(text[:cut].rstrip())


def tail_line_start(text: str, lines: int, end: int | None = None) -> int:
    """Index of the newline before the last ``lines`` lines of ``text`` without its trailing
    whitespace (``end``: its length when known), or 0 when it has fewer lines."""
    end = rstripped_len(text) if end is None else end
    for _ in range(lines):
        end = text.rfind("\n", 0, end)
        if end <= 0:
            return 0
    return end


def newline_run_start(text: str, i: int) -> int:
    """Start of the run of newlines that ends at ``i`` (``i`` itself when none precedes it)."""
    while i > 0 and text[i - 1] == "\n":
        i -= 1
    return i


def tail_search(
    pattern: re.Pattern[str], text: str, lines: int, end: int | None = None
) -> re.Match[str] | None:
    """``pattern.search(text)`` for an end-anchored pattern whose matches are chains of one-line
    items, each item optionally led by one newline: any match starting before the window also
    matches from the window's first newline, so only that case needs the whole text (``end``:
    ``rstripped_len(text)`` when known)."""
    start = tail_line_start(text, lines, end)
    m = pattern.search(text, start)
    if start and m is not None and m.start() == start:
        return pattern.search(text)
    return m
