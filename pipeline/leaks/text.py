"""Diff and patch text as normalised lines: the unit every solution-leak containment is measured in.

A line is the natural n-gram of a patch: it matches a ``git show`` hunk, a ``curl``'d raw file and a
``.patch`` URL alike once its diff marker, ``cat -n``/``grep -n`` prefix and whitespace are removed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import polars as pl

OWN_CONTEXT = 2  # context lines kept on each side of an added block

_LINE_PREFIX = re.compile(r"^(?:\S+?:\d+[:-]|\s*\d+\t)?\s*[+-]?")
WS = re.compile(r"\s+")
_TRIVIAL = re.compile(
    r"^(?:(?:from\s+\S+\s+)?import\s.*|#include.*|using\s.*|package\s.*|require\(.*|"
    r"[\[\](){}<>;,:.\s\\/*#\"'`-]*|(?:return|pass|break|continue|else|try|finally|end|fi|done)\b.{0,12}|"
    r"(?:\"\"\"|''')|(?:\}|\))\s*(?:else|catch|finally)?.{0,6})$"
)


def norm_line(line: str) -> str:
    """A line as compared across formats: marker/numbering prefix removed, whitespace collapsed."""
    return WS.sub(" ", _LINE_PREFIX.sub("", line, count=1)).strip()


def distinctive(line: str) -> bool:
    """Lines that can identify a patch: long enough, not imports, braces, keywords or blanks."""
    return len(line) >= 12 and not _TRIVIAL.match(line)


def diff_side(patch: str, sign: str) -> list[str]:
    """Normalised distinctive lines of one side (``+`` added, ``-`` removed) of a unified diff."""
    out: list[str] = []
    header = sign * 3
    for raw in patch.splitlines():
        if raw.startswith(sign) and not raw.startswith(header):
            # ``WS.sub(" ", x).strip()``: ``re``'s ``\s`` and ``str.split`` agree on what is whitespace
            n = " ".join(raw[1:].split())
            if len(n) >= 12 and not _TRIVIAL.match(n):  # distinctive(n), inlined: the index's hot loop
                out.append(n)
    return list(dict.fromkeys(out))


def line_set(text: str) -> set[str]:
    """The normalised lines of a text, as a set."""
    return {norm_line(x) for x in text.splitlines()}


def containment(fix: list[str], text_lines: set[str]) -> float:
    """Share of ``fix`` lines found in ``text_lines`` (0 for an empty fix)."""
    if not fix:
        return 0.0
    return sum(1 for x in fix if x in text_lines) / len(fix)


@dataclass
class OwnBlock:
    """A run of added lines with the post-image around it: what a copy of the fixed file shows as
    consecutive lines, and what the unfixed checkout does not."""

    added: list[str]  # normalised distinctive added lines of the block
    window: list[
        str
    ]  # normalised post-image: <= OWN_CONTEXT context lines, the added lines, <= OWN_CONTEXT after
    removed: list[str] | None = None  # the pre-image lines it replaced, when known (a written edit)


def blocks_of(post: list[tuple[str, bool]], removed: list[list[str]] | None = None) -> list[OwnBlock]:
    """Blocks of a post-image given as (normalised line, added?) pairs; ``removed[k]`` is the pre-image
    of the k-th run of added lines, when known."""
    blocks: list[OwnBlock] = []
    i = k = 0
    while i < len(post):
        if not post[i][1]:
            i += 1
            continue
        j = i
        while j < len(post) and post[j][1]:
            j += 1
        added = [x for x, _ in post[i:j] if distinctive(x)]
        if added:
            window = [x for x, _ in post[max(0, i - OWN_CONTEXT) : min(len(post), j + OWN_CONTEXT)]]
            blocks.append(
                OwnBlock(added, window, removed[k] if removed is not None and k < len(removed) else None)
            )
        i, k = j, k + 1
    return blocks


def own_blocks(diff: str) -> list[OwnBlock]:
    """A unified diff as post-image windows: each run of added lines with the context around it."""
    blocks: list[OwnBlock] = []
    for hunk in re.split(r"(?m)^@@[^\n]*\n", diff)[1:]:
        post: list[tuple[str, bool]] = []
        for raw in hunk.split("\n"):
            if raw.startswith("diff --git"):
                break
            if raw.startswith(("+", " ")) and not raw.startswith("+++"):
                n = norm_line(" " + raw[1:])
                if n:
                    post.append((n, raw[0] == "+"))
        blocks.extend(blocks_of(post))
    return blocks


def obs_lines(output: str) -> list[str]:
    """Normalised non-empty lines of an observation; in a diff, removed lines are dropped so that the
    post-image (context + added) reads as consecutive lines."""
    is_diff = "\n@@ " in output or output.startswith("@@ ")
    out: list[str] = []
    for raw in output.split("\n"):
        if is_diff and raw.startswith("-") and not raw.startswith("---"):
            continue
        n = norm_line(raw)
        if n:
            out.append(n)
    return out


def has_run(seq: list[str], window: list[str]) -> bool:
    """Does ``window`` occur in ``seq`` as consecutive items?"""
    k = len(window)
    first = window[0]
    return any(seq[i : i + k] == window for i, x in enumerate(seq) if x == first)


_PY_QUOTE_HEAD = r"^[A-Za-z_][A-Za-z0-9_]*\s*=\s*[rbuRBU]?(?:\'\'\'|\"\"\")"
_PY_QUOTE_TAIL = r"(?:\'\'\'|\"\"\")[),]*$"


# ``\s+`` -> " " in Rust, touching only the runs that change: two or more whitespace characters, or
# one that is not a space (most lines hold single spaces only; replacing each costs ~4x the search).
WS_RUN_RS = r"\s{2,}|[^\S ]"


def norm_lines_expr(x: pl.Expr) -> pl.Expr:
    """Polars twin of :func:`norm_line`, also peeling the triple quotes that wrap an edit heredoc's text."""
    return (
        x.str.replace(r"^(?:\S+?:\d+[:-]|\s*\d+\t)?\s*[+-]?", "")
        .str.replace_all(WS_RUN_RS, " ")
        .str.strip_chars()
        .str.replace(_PY_QUOTE_HEAD, "")
        .str.replace(_PY_QUOTE_TAIL, "")
        .str.strip_chars()
    )
