"""Claude Code's Grep and Glob → commands that print the shown result, in an order they reproduce.

Claude Code runs ripgrep and lists matching files newest first (by modification time), an
order no command on a fresh checkout prints. The converted command therefore sorts what it
finds (``LC_ALL=C sort``: byte order), and its output is the recorded result in that order:
the same set, as the command prints it. One line needs no sort.

* Grep ``files_with_matches`` / ``count``: ``grep -rl`` / ``grep -rc``; ``content``: ``grep -rn``,
  sorted by path only (a stable sort keeps each file's lines in file order);
* ripgrep's pattern syntax is Perl's, not POSIX ERE: a pattern with a class POSIX lacks
  (``\\d``, ``\\D``) or a group construct (``(?``) is run with ``grep -P``, others with ``-E``;
* paths shown relative to the checkout (newer Claude Code) are searched by the relative path
  from the checkout, where the command runs, so ``grep`` prints them the same way;
* Glob: Python's ``glob`` with ``**`` recursion; a ``{a,b}`` alternation (ripgrep's, which
  ``glob`` lacks) is expanded into one pattern per alternative, the union printed sorted.
"""

from __future__ import annotations

import re

from pipeline.convert import edits
from pipeline.convert.roots import TESTBED

_PERL_ONLY = re.compile(r"\\[dD]|\(\?")
_BRACES = re.compile(r"\{([^{}]*)\}")


def grep_flags(mode: str, pattern: str, ignore_case: bool) -> str:
    """``-r`` and the mode's flag (``l``, ``c`` or ``n``), the regex dialect, ``i``."""
    base = {"content": "-rn", "count": "-rc"}.get(mode, "-rl")
    return base + ("P" if _PERL_ONLY.search(pattern) else "E") + ("i" if ignore_case else "")


def search_root(where: str, lines: list[str]) -> str:
    """The path to give ``grep`` so that it prints paths as shown: Claude Code prints them
    relative to its working directory (the checkout) in newer versions, absolute in older ones;
    ``grep`` prints them as it was given its path, so a relative result is searched from the
    checkout by the relative path (the command runs there)."""
    if (
        not lines
        or any(ln.startswith("/") for ln in lines)
        or not (where == TESTBED or where.startswith(TESTBED + "/"))
    ):
        return where
    # the checkout itself: no path (``grep -r`` then searches "." and prints no "./" prefix)
    return where[len(TESTBED) :].lstrip("/")


def sorted_result(command: str, lines: list[str], mode: str) -> tuple[str, list[str]]:
    """The command and lines in the order it prints them once sorted (unchanged for one line)."""
    if len(lines) < 2:
        return command, lines
    if mode == "content":
        key = [ln.split(":", 1)[0].encode("utf-8", "surrogateescape") for ln in lines]
        order = sorted(range(len(lines)), key=lambda i: key[i])  # stable: a file's lines in order
        return f"{command} | LC_ALL=C sort -s -t: -k1,1", [lines[i] for i in order]
    return f"{command} | LC_ALL=C sort", sorted(lines, key=lambda ln: ln.encode("utf-8", "surrogateescape"))


def expand_braces(pattern: str) -> list[str]:
    """``src/*.{ts,js}`` → ``["src/*.ts", "src/*.js"]`` (nested alternations too)."""
    m = _BRACES.search(pattern)
    if m is None or "," not in m.group(1):
        return [pattern]
    out: list[str] = []
    for alt in m.group(1).split(","):
        out.extend(expand_braces(pattern[: m.start()] + alt + pattern[m.end() :]))
    return out


def glob_command(pattern: str, where: str) -> str:
    """A python3 one-liner printing the sorted union of the pattern's matches under ``where``."""
    pats = expand_braces(pattern)
    if len(pats) == 1:
        script = f"import glob; print(*sorted(glob.glob({pattern!r}, root_dir={where!r}, recursive=True)), sep='\\n')"
    else:
        script = (
            f"import glob; print(*sorted({{p for g in {pats!r} for p in glob.glob(g, root_dir={where!r}, "
            "recursive=True)}), sep='\\n')"
        )
    return f"python3 -c {edits.shell_quote(script)}"
