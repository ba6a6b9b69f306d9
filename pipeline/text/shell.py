"""The one shell lexer and wrapper peeler (used by ``convert`` and the leak rules).

Two views of one command, both built on the same wrapper grammar (:data:`WRAPPERS`):

* :func:`peel_wrappers` (string level, for ``convert``): removes the harness's own wrappers whose
  removal leaves the output unchanged — ``bash -lc '…'`` holding one word, ``cd /testbed && …``,
  ``timeout [-s SIG] [-k N] N …`` — and keeps the rest of the text byte for byte (it is published);
* :func:`split_command` (argv level, for rules): heredoc bodies cut, ``&&``/``;``/``|`` chains split
  into simple commands, and every wrapper of :data:`WRAPPERS` peeled with its options (``timeout -s
  KILL 30``, ``env -u X A=B``, ``sudo -u u``, ``nice -n 5``, ``stdbuf -oL``, ``bash -c '…'``,
  ``cd X &&``), so ``timeout -s KILL 30 git log --all -p`` is seen as ``git log --all -p``.

A test holds the two views together: whatever :func:`peel_wrappers` removes, :func:`split_command`
peels too.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Wrapper:
    """A command that runs the rest of its argv: the options it takes before that command."""

    value_opts: frozenset[str] = frozenset()  # options whose value is the next word (``-s KILL``)
    positionals: int = 0  # words after the options that are the wrapper's own (timeout's duration)
    assignments: bool = False  # leading ``NAME=value`` words (env)


def _w(opts: str = "", positionals: int = 0, assignments: bool = False) -> Wrapper:
    return Wrapper(frozenset(opts.split()), positionals, assignments)


WRAPPERS: dict[str, Wrapper] = {
    "timeout": _w("-s --signal -k --kill-after", positionals=1),
    "env": _w("-u --unset -C --chdir -S --split-string", assignments=True),
    "sudo": _w(
        "-u --user -g --group -h --host -p --prompt -C --close-from -D --chdir -r --role -t --type "
        "-U --other-user -T --command-timeout"
    ),
    "nice": _w("-n --adjustment"),
    "ionice": _w("-c --class -n --classdata -p --pid -P --pgid -u --uid"),
    "stdbuf": _w("-i --input -o --output -e --error"),
    "nohup": _w(),
    "time": _w("-f --format -o --output"),
    "command": _w(),
    "exec": _w("-a"),
    "xargs": _w(
        "-I -i -n --max-args -P --max-procs -d --delimiter -L --max-lines -s --max-chars -E -e -a --arg-file"
    ),
}
SHELLS = frozenset({"bash", "sh", "zsh", "dash"})
# No quotes, escapes, operators, comments or tabs: shlex would just split on spaces (``git status``).
PLAIN = re.compile(r"[A-Za-z0-9_./=:,+@%~ -]*")
HEREDOC = re.compile(
    r"<<-?\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\1([^\n]*)\n(.*?)(?:\n[ \t]*\2[ \t]*(?=\n|$)|\Z)", re.S
)
OPS = frozenset({"&&", "||", ";", "|", "&", ";;", "|&", "\n", "(", ")"})
_ENV = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_OP_CHARS = set(";&|()")


@dataclass
class Segment:
    """One simple command of a bash command line, wrappers peeled."""

    argv: list[str]
    text: str  # the argv joined by spaces, for URL/regex checks
    heredoc: str = ""  # body fed to this command, if any
    op: str = ""  # the operator that follows it in the chain ("|", "&&", ";", …; "" at the end)


# A line without backslashes or "#" lexed by one regex: a word is a run of unquoted characters
# that are neither blank nor ``;&|()`` and of quoted strings, an operator a run of ``;&|()`` (as
# shlex's punctuation_chars group them). shlex gives the same tokens for such a line (a test holds
# the two together) at a tenth of the cost; any other line goes to shlex.
_FAST_TOKEN = re.compile(r"""(?:[^ \t\r\n'";&|()]+|'[^']*'|"[^"]*")+|[;&|()]+""")
_QUOTE = re.compile(r"""'([^']*)'|"([^"]*)\"""")
_BLANKS = frozenset(" \t\r\n")


def _unquote(m: re.Match[str]) -> str:
    return m.group(1) if m.group(1) is not None else m.group(2)


def shlex_split(line: str) -> list[str]:
    """POSIX words and operator tokens of one line (``#`` comments dropped); on unbalanced quotes,
    the line split on whitespace."""
    if "\\" not in line and "#" not in line:
        tokens = _FAST_TOKEN.findall(line)
        if set(_FAST_TOKEN.sub("", line)) <= _BLANKS:  # every character in a token or a blank
            return [_QUOTE.sub(_unquote, t) if ("'" in t or '"' in t) else t for t in tokens]
    try:
        lex = shlex.shlex(line, posix=True, punctuation_chars=";&|()")
        lex.whitespace_split = True
        lex.commenters = "#"
        return list(lex)
    except ValueError:
        return line.split()


def logical_lines(text: str) -> list[str]:
    """``text`` split at the newlines that end a command: not those inside quotes (a quoted
    multi-line argument, ``printf '%s\\n' 'a\\nb'``); a backslash-newline outside single quotes
    is a line continuation, which the shell removes (``a \\<newline> b`` is ``a  b``)."""
    if "\n" not in text:
        return [text]
    if "'" not in text and '"' not in text and "\\\n" not in text:
        return text.split("\n")
    lines: list[str] = []
    line: list[str] = []
    start, quote, i, n = 0, "", 0, len(text)
    while i < n:
        c = text[i]
        if c == "\\" and quote != "'":
            if text.startswith("\n", i + 1) and quote == "":
                line.append(text[start:i])  # a continuation: both characters go
                start = i + 2
            i += 2
            continue
        if quote:
            if c == quote:
                quote = ""
        elif c in "'\"":
            quote = c
        elif c == "#" and (i == start or text[i - 1] in " \t;&|("):
            j = text.find("\n", i)  # a comment: its quotes are not quotes
            i = n if j < 0 else j
            continue
        elif c == "\n":
            lines.append("".join(line) + text[start:i])
            line = []
            start = i + 1
        i += 1
    lines.append("".join(line) + text[start:])
    return lines


def split_command(cmd: str, shells: bool = True) -> list[Segment]:
    """Split a bash command into simple commands with wrappers peeled (cd, env, timeout, bash -c);
    ``shells=False`` leaves a ``bash -c SCRIPT`` whole (:func:`simple_commands` walks its script)."""
    bodies: list[str] = []

    def cut(m: re.Match[str]) -> str:
        bodies.append(m.group(4))
        return f"<<{m.group(2)}{m.group(3)}\n"

    flat = HEREDOC.sub(cut, cmd)
    segs: list[Segment] = []
    body_i = 0
    for line in logical_lines(flat):
        toks = line.split() if PLAIN.fullmatch(line) else shlex_split(line)
        cur: list[str] = []
        for t in [*toks, ";"]:
            if t in OPS or (t and set(t) <= _OP_CHARS):
                if cur:
                    heredoc = ""
                    if any(x.startswith("<<") for x in cur) and body_i < len(bodies):
                        heredoc = bodies[body_i]
                        body_i += 1
                    peeled = peel(cur, heredoc, split_command if shells else None)
                    if peeled:
                        peeled[-1].op = t
                    segs.extend(peeled)
                cur = []
            else:
                cur.append(t)
    if segs and segs[-1].op == ";":
        segs[-1].op = ""  # the sentinel that closed the last line
    return segs


def _skip_options(argv: list[str], w: Wrapper) -> list[str]:
    """The argv after a wrapper's options, ``--``, assignments and own positional words."""
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--":
            i += 1
            break
        if w.assignments and _ENV.match(a):
            i += 1
        elif a.startswith("-") and len(a) > 1:
            i += 2 if a in w.value_opts else 1
        else:
            break
    return argv[i + w.positionals :] if len(argv) > i + w.positionals else []


def _shell_script(argv: list[str]) -> str | None:
    """The script of ``bash [opts] -c SCRIPT …`` (``-lc``, ``-ec``, ``--login -c``), else None."""
    for i, a in enumerate(argv[1:], 1):
        if not a.startswith("-"):
            return None
        if not a.startswith("--") and "c" in a[1:]:
            return argv[i + 1] if i + 1 < len(argv) else None
    return None


def peel(
    argv: list[str], heredoc: str = "", script: Callable[[str], list[Segment]] | None = split_command
) -> list[Segment]:
    """The simple commands ``argv`` runs, wrappers peeled; ``cd X`` alone runs nothing; the script of
    ``bash -c SCRIPT`` is split by ``script`` (None: the shell's argv is kept)."""
    while argv:
        a = argv[0]
        if _ENV.match(a):
            argv = argv[1:]
            continue
        prog = a.rsplit("/", 1)[-1]
        if prog in WRAPPERS:
            argv = _skip_options(argv[1:], WRAPPERS[prog])
            continue
        if prog in ("cd", "pushd", "popd"):
            return []
        if prog in SHELLS and script is not None:
            text = _shell_script(argv)
            if text is not None:
                return script(text)
        break
    return [Segment(argv, " ".join(argv), heredoc)] if argv else []


# ------------------------------------------------------------------ compound commands (the walker)

# Words that open or continue a compound command and stand before the command they govern
# (``if git log``, ``then git show``, ``{ git diff; }``, ``! grep``, ``time git``, ``coproc``).
LEADING_KEYWORDS = frozenset(
    {"if", "then", "else", "elif", "do", "while", "until", "!", "{", "time", "coproc"}
)
# Words that start a segment running no command: closers, loop heads (``for x in a b``), ``case W in``.
NO_COMMAND = frozenset({"fi", "done", "esac", "}", "for", "select", "case", "in", "))", "]]"})
_REDIRECT_WORD = re.compile(r"^\d*(?:[<>]|&>)")
_REDIRECT_OPS = frozenset({"<", ">", ">>", "&>", "<<<", "<>", ">|"})
_FIND_EXEC = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
_PATTERN_ENDS = frozenset({";;", ";&", ";;&"})
MAX_DEPTH = 8  # nesting of $(...), bash -c and eval walked into (deeper text is left unread)


def join_redirects(segs: list[Segment]) -> list[Segment]:
    """``x 2>&1``, ``x >&2`` and ``x &>f`` glued back into one segment (the lexer splits at ``&``)."""
    out: list[Segment] = []
    i = 0
    while i < len(segs):
        s = segs[i]
        while s.op == "&" and i + 1 < len(segs) and s.argv and segs[i + 1].argv:
            nxt = segs[i + 1]
            if s.argv[-1].endswith(">"):  # 2>&1, >&2: the word continues after the &
                argv = [*s.argv[:-1], s.argv[-1] + "&" + nxt.argv[0], *nxt.argv[1:]]
            elif nxt.argv[0].startswith(">"):  # &>file: a redirection word of its own
                argv = [*s.argv, "&" + nxt.argv[0], *nxt.argv[1:]]
            else:
                break
            s = Segment(argv, " ".join(argv), s.heredoc or nxt.heredoc, nxt.op)
            i += 1
        out.append(s)
        i += 1
    return out


def command_words(argv: list[str]) -> list[str]:
    """``argv`` without the compound-command keywords and leading redirections before its program
    (``then git show X`` -> ``git show X``; ``> out cmd`` -> ``cmd``; ``function f {`` -> ``[]``)."""
    while argv:
        a = argv[0]
        if a in LEADING_KEYWORDS:
            argv = argv[1:]
        elif a == "function":
            argv = argv[2:]  # ``function NAME``: a definition; its body follows as commands
        elif a == "()":
            argv = argv[1:]
        elif _REDIRECT_WORD.match(a):
            # ``> file cmd``: the operator and its target; ``2>/dev/null cmd``: one word
            argv = argv[2:] if a.rstrip("0123456789&") in _REDIRECT_OPS else argv[1:]
        else:
            break
    return argv


# ``case``/``esac`` as words (inside ``$(...)`` a case pattern's ")" closes nothing)
_CASE_WORD = re.compile(r"(?<![^\s;&|(])(case|esac)(?=[\s;]|$)")


def _closing(text: str, i: int) -> int:
    """The index of the ``)`` closing the ``$(`` whose body starts at ``i`` (quotes, escapes and
    nested parentheses skipped), or -1."""
    depth, n, cases = 1, len(text), 0
    while i < n:
        c = text[i]
        if c in "ce" and (m := _CASE_WORD.match(text, i)):
            cases += 1 if m.group(1) == "case" else -1 if cases else 0
            i = m.end()
            continue
        if c == "\\":
            i += 2
            continue
        if c == "'":
            j = text.find("'", i + 1)
            if j < 0:
                return -1
            i = j + 1
            continue
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            i = j + 1
            continue
        if c == "(":
            depth += 1
        elif c == ")" and not (cases and depth == 1):  # inside ``case``: a pattern's ")"
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return -1


def _literal_spans(text: str) -> list[tuple[int, int]]:
    """The bodies of the here-documents whose delimiter is quoted: the shell expands nothing in them."""
    if "<<" not in text:
        return []
    return [m.span(4) for m in HEREDOC.finditer(text) if m.group(1)]


def lift_substitutions(text: str) -> tuple[str, list[str]]:
    """``text`` with every command substitution (``$(...)``, backticks) outside single quotes and
    quoted here-documents replaced by the word ``$_``, and the substituted scripts (outermost first).
    Arithmetic ``$((...))`` is no command and stays."""
    if "$(" not in text and "`" not in text:
        return text, []
    literal = _literal_spans(text)
    out: list[str] = []
    inner: list[str] = []
    i, start, n, dq = 0, 0, len(text), False
    while i < n:
        if literal and any(a <= i < b for a, b in literal):
            i = next(b for a, b in literal if a <= i < b)
            continue
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c == "'" and not dq:
            j = text.find("'", i + 1)
            i = n if j < 0 else j + 1
            continue
        if c == '"':
            dq = not dq
        elif c == "#" and not dq and (i == 0 or text[i - 1] in " \t\n;&|("):
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        elif c == "$" and text.startswith("(", i + 1) and not text.startswith("((", i + 1):
            end = _closing(text, i + 2)
            if end < 0:
                break
            out.append(text[start:i] + "$_")
            inner.append(text[i + 2 : end])
            i = start = end + 1
            continue
        elif c == "`":
            j = i + 1
            while j < n and text[j] != "`":
                j += 2 if text[j] == "\\" else 1
            if j >= n:
                break
            out.append(text[start:i] + "$_")
            inner.append(text[i + 1 : j].replace("\\`", "`").replace("\\$", "$").replace("\\\\", "\\"))
            i = start = j + 1
            continue
        i += 1
    out.append(text[start:])
    return "".join(out), inner


def simple_commands(cmd: str, _depth: int = 0) -> list[Segment]:
    """Every simple command ``cmd`` runs, wrappers peeled, wherever it stands: in ``&&``/``||``/``;``/
    ``|`` lists, ``if``/``while``/``until``/``for``/``case`` bodies, ``{ }`` groups, subshells, function
    bodies, command substitutions (``$(...)``, backticks), ``bash -c``/``sh -c`` scripts, ``eval``
    of a literal, ``xargs`` and ``find -exec`` commands; here-document bodies are cut off (the
    :class:`Segment` carries its body) and continuation lines joined. Substituted commands come
    first (they run before the command that holds them)."""
    if _depth > MAX_DEPTH:
        return []
    flat, inner = lift_substitutions(cmd)
    out: list[Segment] = []
    for text in inner:
        out.extend(simple_commands(text, _depth + 1))
    cases = 0  # open ``case`` commands
    pattern_next = False  # the next segment ended by ")" is a pattern: after ``case W in`` and each ``;;``
    for seg in join_redirects(split_command(flat, shells=False)):
        words = command_words(seg.argv)
        head = words[0] if words else ""
        if head == "case":
            cases += 1
            pattern_next = seg.op != ")"  # ``case W in P)``: its first pattern ends this very segment
            continue
        if head == "esac":
            cases, pattern_next = max(0, cases - 1), False
            continue
        if (
            cases
            and (pattern_next or len(seg.argv) == 1)
            and (seg.op.startswith(")") or (pattern_next and seg.op == "|"))
        ):
            pattern_next = seg.op == "|"  # ``a|b)``: alternatives of one pattern
            continue
        if seg.op.startswith("))") or (seg.op == "()" and len(seg.argv) == 1):
            continue  # arithmetic ``((...))``; ``name() {``: a definition, its body follows
        out.extend(_walk(seg.argv, seg, _depth))
        if cases and seg.op in _PATTERN_ENDS:
            pattern_next = True
    return out


def _walk(argv: list[str], seg: Segment, depth: int) -> list[Segment]:
    """The simple commands one segment's words run (keywords stripped, wrappers and shells peeled)."""
    argv = command_words(argv)
    if not argv or argv[0] in NO_COMMAND or argv[0].startswith("<<"):
        return []
    peeled = peel(argv, seg.heredoc, lambda s: simple_commands(s, depth + 1))
    if len(peeled) != 1:
        return peeled
    one = peeled[0]
    one.op = one.op or seg.op
    words = one.argv
    if command_words(words) != words:
        return _walk(words, one, depth)  # ``time { git log; }``, ``nohup if``: keywords after a wrapper
    prog = words[0].rsplit("/", 1)[-1]
    if prog == "eval" and len(words) > 1:
        return simple_commands(" ".join(words[1:]), depth + 1)
    if prog == "find":
        found: list[Segment] = [one]
        for k, w in enumerate(words):
            if w in _FIND_EXEC and k + 1 < len(words):
                rest = words[k + 1 :]
                end = next((e for e, x in enumerate(rest) if x in (";", "+")), len(rest))
                found.extend(_walk(rest[:end], Segment(rest[:end], " ".join(rest[:end])), depth))
        return found
    return [one]


# ---------------------------------------------------------------------------- string level (convert)

_WRAP_RE = re.compile(r"^(?:/bin/)?(?:ba)?sh\s+-l?c\s+(.+)$", re.S)
_CD_RE = re.compile(r"^cd\s+(?:/testbed|\"/testbed\"|'/testbed')/?\s*(?:&&|;)\s*(.+)$", re.S)
# timeout's grammar from WRAPPERS["timeout"]: value options, then the duration
_TIMEOUT_RE = re.compile(r"^timeout\s+(?:-[sk]\s+\S+\s+|--\S+\s+)*\d+(?:\.\d+)?[smhd]?\s+(.+)$", re.S)


# what each of the three wrapper patterns starts with: most commands start otherwise, and one
# startswith is cheaper than trying the three anchored patterns
_WRAPPER_HEADS = ("/bin/", "sh", "bash", "cd", "timeout")


def peel_wrappers(cmd: str) -> str:
    """Strip harness wrappers (``bash -lc '…'``, ``cd /testbed && …``, ``timeout N …``), keeping
    the inner command's text as written."""
    cmd = cmd.strip()
    while cmd.startswith(_WRAPPER_HEADS):
        m = _WRAP_RE.match(cmd)
        if m:
            script = m.group(1)
            if len(script) > 1 and script[0] == "'" == script[-1] and "'" not in script[1:-1]:
                words = [script[1:-1]]  # one single-quoted word, what shlex.split would return
            else:
                try:
                    words = shlex.split(script)
                except ValueError:
                    words = []
            if len(words) == 1:
                cmd = words[0].strip()
                continue
        m = _CD_RE.match(cmd) or _TIMEOUT_RE.match(cmd)
        if m:
            cmd = m.group(1).strip()
            continue
        break
    return cmd
