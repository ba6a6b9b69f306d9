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


def split_command(cmd: str) -> list[Segment]:
    """Split a bash command into simple commands with wrappers peeled (cd, env, timeout, bash -c)."""
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
                    peeled = peel(cur, heredoc)
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


def peel(argv: list[str], heredoc: str = "") -> list[Segment]:
    """The simple commands ``argv`` runs, wrappers peeled; ``cd X`` alone runs nothing."""
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
        if prog in SHELLS:
            script = _shell_script(argv)
            if script is not None:
                return split_command(script)
        break
    return [Segment(argv, " ".join(argv), heredoc)] if argv else []


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
