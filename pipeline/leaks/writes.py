"""What a run wrote itself: the second way to confirm a solution leak.

A run cut by the step limit has no final diff, yet reading the fix from history and typing it in is a
leak all the same. Every command is read for the text it writes into the tree:

* converted edits (``python3 - <<'EOF'`` scripts: ``old``/``new`` strings, ``edits = [(old, new, …)]``,
  ``text = …`` of a create) and agents' own scripts (``s.replace('a', 'b')``, ``.write('…')``);
* ``sed -i`` (``s/old/new/``, ``a\\``, ``i\\``, ``c\\``);
* ``cat > f <<EOF`` / ``cat >> f`` / ``tee f <<EOF`` bodies, ``echo … > f`` / ``printf … > f`` / ``echo … | tee f``;
* ``git apply`` / ``patch`` inputs (a heredoc, or a diff the run wrote to a file first).

Each write becomes its post-image lines, the ones it introduced flagged (an edit's new lines that
differ from its old text; every line of a file body; a patch's ``+`` lines). A fragment replacement
(``sed -i 's/> 51/>= 51/'``, ``s.replace('> 51', '>= 51')``) is widened to the whole line using the lines
the run had printed before the write.

An attempt at turn ``i`` is confirmed by a write at turn ``j > i`` when the attempt's observation shows
the write's introduced lines as the run later typed them — the same normalised lines and the same rule
as for the final diff: each line seen *with its context* (its neighbours in the written post-image, up to
``OWN_CONTEXT`` on one side, as consecutive lines of the observation's post-image), a block counting when
``OWN_DIFF_CONTAINMENT`` of its lines are seen, the write confirmed when seen blocks hold that share of its
introduced lines. An edit that carries no unchanged line takes its neighbours from where the run had
printed the old text (``cat -n`` before ``str_replace``; when that text is printed in several places, each
distinct surrounding, the latest first); a lone line without neighbours never confirms, except as a change:
an observed diff whose removed lines are exactly the edit's old text and whose added lines exactly its new
text (``-    return x[:11]`` / ``+    return x[:n]``, then ``old='    return x[:11]'``) is the edit itself,
whatever context the diff was cut from. Lines the run had already printed or typed before the attempt are
the checkout's or its own, never delivered by the attempt.
"""

from __future__ import annotations

import ast
import difflib
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from pipeline.leaks.confirm import OWN_DIFF_CONTAINMENT
from pipeline.leaks.text import OWN_CONTEXT, distinctive, has_run, norm_line, obs_lines
from pipeline.text.shell import Segment, simple_commands

_PY = re.compile(r"^python[0-9.]*$")
_REDIRECT = re.compile(r"^(?:\d?>>?|&>)(.*)$")
CONTEXTS = 4  # surroundings of a printed old text tried for an edit that carries no unchanged line
_SED_INPLACE = re.compile(r"^(?:-i\S*|--in-place\S*|-[a-hj-zA-Z]*i\S*)$")


@dataclass
class Write:
    """One piece of text the run wrote at ``turn``: its post-image, the lines it introduced flagged."""

    turn: int
    post: list[str]  # normalised non-empty post-image lines
    new: list[bool]  # per post line: introduced by this write
    old: tuple[str, ...] = ()  # the lines a replacement removed (normalised), when it is one


@dataclass
class WriteMatch:
    """The evidence of a confirmation: the write's turn and the lines the attempt had shown."""

    turn: int
    lines: list[str]
    seen: int
    total: int


# ---------------------------------------------------------------------------------------------- parsing


def _lines(text: str) -> list[str]:
    return [n for n in (norm_line(" " + x) for x in text.split("\n")) if n]


def _content(turn: int, text: str) -> Write | None:
    """A file body: a diff (a patch the run will apply) or plain lines, all introduced."""
    if "\n@@ " in "\n" + text:
        return _patch(turn, text)
    post = _lines(text)
    return Write(turn, post, [True] * len(post)) if post else None


def _patch(turn: int, diff: str) -> Write | None:
    post: list[str] = []
    new: list[bool] = []
    for hunk in re.split(r"(?m)^@@[^\n]*\n", diff)[1:]:
        for raw in hunk.split("\n"):
            if raw.startswith("diff --git"):
                break
            if raw.startswith(("+", " ")) and not raw.startswith("+++"):
                n = norm_line(" " + raw[1:])
                if n:
                    post.append(n)
                    new.append(raw[0] == "+")
    return Write(turn, post, new) if any(new) else None


def _replacement(turn: int, old: str, new: str, known: Sequence[list[str]]) -> list[Write]:
    """An ``old`` -> ``new`` replacement; a one-line fragment is widened to the printed line holding it."""
    if "\n" not in old.strip("\n") and "\n" not in new.strip("\n") and old.strip():
        frag = norm_line(" " + old)
        whole = [x for obs in known for x in obs if frag and frag in x]
        if whole and not any(frag in obs for obs in known):
            line = whole[-1]
            return _replacement_lines(
                turn, [line], [norm_line(" " + line.replace(frag, norm_line(" " + new), 1))], known
            )
    return _replacement_lines(turn, _lines(old), _lines(new), known)


def _replacement_lines(turn: int, old: list[str], new: list[str], known: Sequence[list[str]]) -> list[Write]:
    """The post-image ``new`` with its introduced lines flagged. An edit that carries no unchanged line
    (``old = 'x > 51'``, ``new = 'x >= 51'``) borrows its context from where the run had printed the
    old text: the lines around it are the neighbours the new text lands between. The old text may
    have been printed in several places (the file, a traceback quoting the line): one write per
    distinct surrounding, the latest first, up to ``CONTEXTS``."""
    flags = [False] * len(new)
    for tag, _i1, _i2, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if tag in ("replace", "insert"):
            flags[j1:j2] = [True] * (j2 - j1)
    if not any(flags):
        return []
    if not (all(flags) and old):
        return [Write(turn, new, flags, tuple(old))]
    k = len(old)
    out: list[Write] = []
    seen: set[tuple[tuple[str, ...], tuple[str, ...]]] = set()
    for obs in reversed(known):  # the latest print of the old text first
        for p in reversed([p for p in range(len(obs) - k + 1) if obs[p] == old[0] and obs[p : p + k] == old]):
            before, after = obs[max(0, p - OWN_CONTEXT) : p], obs[p + k : p + k + OWN_CONTEXT]
            if (key := (tuple(before), tuple(after))) in seen:
                continue
            seen.add(key)
            out.append(
                Write(
                    turn,
                    [*before, *new, *after],
                    [False] * len(before) + flags + [False] * len(after),
                    tuple(old),
                )
            )
            if len(out) == CONTEXTS:
                return out
    return out or [Write(turn, new, flags, tuple(old))]


def _str(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _python_writes(turn: int, script: str, known: Sequence[list[str]]) -> list[Write]:
    """Converted edit scripts and agents' own: old/new assignments, edits lists, replace calls, writes."""
    try:
        tree = ast.parse(script)
    except (SyntaxError, ValueError, RecursionError):
        return []
    names: dict[str, str] = {}
    out: list[Write | None] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            target = node.targets[0].id
            if (s := _str(node.value)) is not None:
                names[target] = s
            elif target == "edits" and isinstance(node.value, ast.List):
                for elt in node.value.elts:
                    if isinstance(elt, ast.Tuple) and len(elt.elts) >= 2:
                        o, n = _str(elt.elts[0]), _str(elt.elts[1])
                        if o is not None and n is not None:
                            out.extend(_replacement(turn, o, n, known))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            args = [_str(a) for a in node.args]
            if node.func.attr == "replace" and len(args) >= 2 and args[0] is not None and args[1] is not None:
                out.extend(_replacement(turn, args[0], args[1], known))
            elif node.func.attr in ("write", "write_text") and args and args[0] is not None:
                out.append(_content(turn, args[0]))
    if "new" in names:
        out.extend(_replacement(turn, names.get("old", ""), names["new"], known))
    elif "text" in names:  # a converted create's python writer
        out.append(_content(turn, names["text"]))
    return [w for w in out if w is not None]


def _bre_to_re(pattern: str) -> str:
    """A sed basic regular expression as a Python one (the common escapes)."""
    out = pattern
    for a, b in (
        ("\\(", "\0("),
        ("\\)", "\0)"),
        ("\\{", "\0{"),
        ("\\}", "\0}"),
        ("\\+", "\0+"),
        ("\\?", "\0?"),
        ("\\|", "\0|"),
    ):
        out = out.replace(a, b)
    out = re.sub(r"(?<!\0)([(){}+?|])", r"\\\1", out)
    return out.replace("\0", "")


def _sed_script_writes(turn: int, script: str, known: Sequence[list[str]], extended: bool) -> list[Write]:
    out: list[Write | None] = []
    for raw_part in re.split(r"\n|;(?=\s*(?:\d+|/[^/]*/|\$)?\s*[sacid]\b)", script):
        part = raw_part.strip()
        m = re.match(r"^(?:[0-9,$]+|/(?:[^/\\]|\\.)*/)?\s*s(.)", part)
        if m:
            d = re.escape(m.group(1))
            sm = re.match(rf"^.*?s{d}((?:[^\\]|\\.)*?){d}((?:[^\\]|\\.)*?){d}([gip0-9]*)$", part, re.S)
            if not sm:
                continue
            pat, rep, flags = sm.groups()
            try:
                rx = re.compile(pat if extended else _bre_to_re(pat), re.I if "i" in flags else 0)
            except re.error:
                continue
            repl = re.sub(r"\\(\d)", r"\\g<\1>", rep.replace("\\" + m.group(1), m.group(1))).replace(
                "&", r"\g<0>"
            )
            hits = [x for obs in known for x in obs if rx.search(x)]
            if hits:
                try:
                    line = hits[-1]
                    new = rx.sub(repl.replace("\\n", "\n"), line, count=0 if "g" in flags else 1)
                except (re.error, IndexError):
                    continue
                out.extend(_replacement_lines(turn, [line], _lines(new), known))
            continue
        m = re.match(r"^(?:[0-9,$]+|/(?:[^/\\]|\\.)*/)?\s*([aic])\\?\s*(.*)$", part, re.S)
        if m and m.group(2):
            out.append(_content(turn, m.group(2).replace("\\n", "\n")))
    return [w for w in out if w is not None]


def _sed_writes(turn: int, argv: list[str], known: Sequence[list[str]]) -> list[Write]:
    if not any(_SED_INPLACE.match(a) for a in argv[1:]):
        return []
    extended = any(
        a in ("-E", "-r", "--regexp-extended") or (re.match(r"^-[a-zA-Z]+$", a) and set(a[1:]) & {"E", "r"})
        for a in argv[1:]
    )
    scripts = [argv[i + 1] for i, a in enumerate(argv[:-1]) if a in ("-e", "--expression")]
    if not scripts:
        rest = [a for a in argv[1:] if not a.startswith("-")]
        scripts = rest[:1]
    return [w for s in scripts for w in _sed_script_writes(turn, s, known, extended)]


def _redirected(argv: list[str]) -> bool:
    return any(_REDIRECT.match(a) for a in argv[1:])


def _echo_text(argv: list[str]) -> str:
    words: list[str] = []
    skip = False
    for a in argv[1:]:
        if skip:
            skip = False
            continue
        m = _REDIRECT.match(a)
        if m:
            skip = not m.group(1)
            continue
        if a.startswith("<<"):
            continue
        words.append(a)
    if argv[0] == "echo":
        while words and re.match(r"^-[neE]+$", words[0]):
            words = words[1:]
    elif words:  # printf FORMAT ARGS: the format is reused until the args are used up
        fmt, args = words[0].replace("%%", "\0"), words[1:]
        slots = len(re.findall(r"%[-0-9.]*[sdb]", fmt))
        groups = [args[k : k + slots] for k in range(0, len(args), slots)] if slots and args else [[]]
        parts: list[str] = []
        for group in groups:
            it = iter(group)

            def fill(_m: re.Match[str], it: Iterator[str] = it) -> str:
                return next(it, "").replace("\\", "\\\\")

            parts.append(re.sub(r"%[-0-9.]*[sdb]", fill, fmt))
        words = ["".join(parts).replace("\0", "%")]
    return " ".join(words).replace("\\n", "\n").replace("\\t", "\t")


def writes_of(turn: int, cmd: str, known: Sequence[list[str]]) -> list[Write]:
    """What command ``cmd`` (at ``turn``) writes into files; ``known``: the normalised lines of each
    observation the run printed before (diffs as post-images)."""
    out: list[Write] = []
    segs = simple_commands(cmd)
    for k, seg in enumerate(segs):
        out.extend(_segment_writes(turn, seg, segs[k + 1] if k + 1 < len(segs) else None, known))
    return out


def _segment_writes(turn: int, seg: Segment, nxt: Segment | None, known: Sequence[list[str]]) -> list[Write]:
    argv = seg.argv
    prog = argv[0].rsplit("/", 1)[-1]
    if _PY.match(prog):
        script = seg.heredoc if seg.heredoc else (argv[argv.index("-c") + 1] if "-c" in argv[:-1] else "")
        return _python_writes(turn, script, known) if script else []
    if prog == "sed":
        return _sed_writes(turn, argv, known)
    if prog in ("cat", "tee") and seg.heredoc and (prog == "tee" or _redirected(argv)):
        w = _content(turn, seg.heredoc)
        return [w] if w else []
    if prog in ("echo", "printf") and (
        _redirected(argv) or (seg.op == "|" and nxt is not None and nxt.argv[0].rsplit("/", 1)[-1] == "tee")
    ):
        w = _content(turn, _echo_text(argv))
        return [w] if w else []
    if (prog == "patch" or (prog == "git" and argv[1:2] == ["apply"])) and seg.heredoc:
        w = _patch(turn, seg.heredoc)
        return [w] if w else []
    return []


# ---------------------------------------------------------------------------------------------- matching


def _with_neighbours(seq: list[str], post: list[str], i: int) -> bool:
    """Is ``post[i]`` in ``seq`` together with its written neighbours on one side (up to OWN_CONTEXT lines
    before it, or after it)? One side suffices: a copy of the fix shares the lines the run kept around it,
    and the other side may reach past what a diff hunk prints."""
    before = post[max(0, i - OWN_CONTEXT) : i + 1]
    after = post[i : i + OWN_CONTEXT + 1]
    return any(len(win) > 1 and has_run(seq, win) for win in (before, after))


def _seen_lines(w: Write, seq: list[str], skip: set[str]) -> tuple[int, int, list[str]]:
    """(introduced distinctive lines seen with context, their total, the seen lines) for one write."""
    intro = [
        i
        for i, (x, f) in enumerate(zip(w.post, w.new, strict=True))
        if f and distinctive(x) and x not in skip
    ]
    if not intro:
        return 0, 0, []
    if len(w.post) < 2:
        return 0, len(intro), []  # no neighbours: a lone line cannot be told from a stray equal line
    seen = [i for i in intro if _with_neighbours(seq, w.post, i)]
    # blocks: maximal runs of introduced lines; a block counts when most of its lines are seen
    total = len(intro)
    got: list[int] = []
    block: list[int] = []
    for i in [*intro, -2]:
        if block and i != block[-1] + 1:
            hit = [j for j in block if j in seen]
            if len(hit) >= OWN_DIFF_CONTAINMENT * len(block):
                got.extend(hit)
            block = []
        block.append(i)
    return len(got), total, [w.post[i] for i in got]


def diff_changes(output: str) -> set[tuple[tuple[str, ...], tuple[str, ...]]]:
    """Each change a unified diff shows: a run of removed lines and the added lines right after it,
    normalised (``-    return x[:11]`` / ``+    return x[:n]``)."""
    if "\n@@ " not in output and not output.startswith("@@ "):
        return set()
    out: set[tuple[tuple[str, ...], tuple[str, ...]]] = set()
    removed: list[str] = []
    added: list[str] = []
    for raw in [*output.split("\n"), ""]:
        if raw.startswith("-") and not raw.startswith("---") and not added:
            if n := norm_line(" " + raw[1:]):
                removed.append(n)
        elif raw.startswith("+") and not raw.startswith("+++"):
            if n := norm_line(" " + raw[1:]):
                added.append(n)
        else:
            if removed and added:
                out.add((tuple(removed), tuple(added)))
            removed, added = [], []
            if raw.startswith("-") and not raw.startswith("---"):
                removed = [n] if (n := norm_line(" " + raw[1:])) else []
    return out


def _same_change(w: Write, changes: set[tuple[tuple[str, ...], tuple[str, ...]]], skip: set[str]) -> bool:
    """Does the observation show this replacement itself: its removed lines replaced by exactly its
    introduced lines, one of them distinctive and new to the run?"""
    if not w.old or not changes:
        return False
    intro = tuple(x for x, f in zip(w.post, w.new, strict=True) if f)
    return (w.old, intro) in changes and any(distinctive(x) and x not in skip for x in intro)


def confirming_write(writes: list[Write], turn: int, output: str, skip: set[str]) -> WriteMatch | None:
    """The first write after ``turn`` whose introduced lines the observation ``output`` had shown;
    ``skip``: lines the run had printed or typed before (never delivered by this attempt)."""
    later = [w for w in writes if w.turn > turn]
    if not later or not output:
        return None
    seq = obs_lines(output)
    seq_set = set(seq)
    changes = diff_changes(output)
    for w in later:
        if _same_change(w, changes, skip):
            intro = [x for x, f in zip(w.post, w.new, strict=True) if f]
            return WriteMatch(w.turn, intro, len(intro), len(intro))
        if not any(x in seq_set for x, f in zip(w.post, w.new, strict=True) if f):
            continue
        seen, total, lines = _seen_lines(w, seq, skip)
        if seen and seen >= OWN_DIFF_CONTAINMENT * total:
            return WriteMatch(w.turn, lines, seen, total)
    return None
