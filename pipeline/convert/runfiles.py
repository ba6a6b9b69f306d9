"""The repository's files as the run itself wrote or displayed them, and the run's edit scripts run on them.

Two readers share this one tracker: the verify step (``pipeline.verify``) replays the converter's
edits on the files the run displayed, and the return-code rules (``pipeline.convert.returncodes``)
read the text of a script the run wrote before it ran it (:class:`RunFiles`).

The converter's edits are ``python3 -`` heredocs (``pipeline.convert.edits``) that read one file,
replace exact text, write it back and print the editor's report. Where the run displayed the
whole file earlier (a ``cat``/``cat -n`` of it, a file it created), that script is *run* here, in
process, on the displayed text: what it prints, its exit status and the text it leaves are the
command's, and must be what the converted run shows. Running it in process keeps the proof cheap
(no interpreter started per edit); the script sees only a file store and a print buffer: its
``open``, ``print``, ``sys`` and ``os`` are stand-ins, its other builtins a short list, an
import of anything else fails the proof, and a script naming a dunder or a formatter (the ways out
of a restricted namespace) is not run at all.

Knowledge is conservative: for the verify step (:class:`Files`), a command the run ran itself,
other than a read-only display, may change any file, so it forgets every file; a file is known
again once displayed whole. :class:`RunFiles` forgets by what a command can write (see there).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import pairwise

from pipeline.convert.editrun import _abs, edit_script, run_edit
from pipeline.convert.roots import TESTBED
from pipeline.text.shell import Segment, split_command

_CAT_N_LINE = re.compile(r"^ {0,5}\d+\t", re.M)
# programs that only read: a command made of these alone (no redirection) changes no file
_READ_ONLY = frozenset(
    [
        "cat",
        "ls",
        "grep",
        "egrep",
        "fgrep",
        "rg",
        "find",
        "head",
        "tail",
        "wc",
        "nl",
        "sed",
        "awk",
        "sort",
        "uniq",
        "cut",
        "tr",
        "expand",
        "echo",
        "printf",
        "pwd",
        "diff",
        "cmp",
        "stat",
        "file",
        "which",
        "tree",
        "du",
        "df",
        "date",
        "env",
        "true",
        "false",
        "test",
        "[",
        "git",
    ]
)
_GIT_READ = frozenset({"status", "diff", "log", "show", "grep", "blame", "ls-files", "rev-parse", "branch"})


@dataclass
class Files:
    """Known file texts by absolute path (a display is decoded when an edit first reads it)."""

    known: dict[str, str | Callable[[], str | None]] = field(default_factory=dict)

    def text(self, path: str) -> str | None:
        """The file's known text, or None."""
        value = self.known.get(path)
        if callable(value):
            value = value()
            if value is None:
                del self.known[path]
            else:
                self.known[path] = value
        return value

    def after(
        self, command: str, output: str, returncode: int | None, synthesised: bool, segments: list[Segment]
    ) -> None:
        """Learn from, or forget because of, one converted turn that is not a replayed edit
        (``segments``: the command's ``split_command``)."""
        if returncode == 0 and (shown := whole_display(command, output, segments)) is not None:
            self.known[shown[0]] = shown[1]
            return
        if synthesised and (created := created_file(command)) is not None:
            self.known[created[0]] = created[1]
            return
        if self.known and not synthesised and not read_only(command, segments):
            self.known.clear()


# SWE-agent's window as the converter prints it: lines FIRST..LAST of one file, then its total
_WINDOW_CMD = re.compile(r"\Aawk 'NR>=(\d+)&&NR<=(\d+)\{l\[NR\]=\$0\} END\{[^\n]*\}' ('(?:[^']|'\\'')*')\Z")
_WINDOW_OUT = re.compile(r"\A\[File: [^\n]+ \((\d+) lines total\)\]\n((?:\d+:[^\n]*\n)*)\Z")


_WINDOW_HEAD = re.compile(r"^\[File: ([^\n]+) \((\d+) lines total\)\]$", re.M)
_WINDOW_LINES = re.compile(r"(?:\d+:[^\n]*(?:\n|\Z))*")


def _window(command: str, output: str) -> tuple[str, str] | None:
    """A window that starts at line 1 and shows every line: the whole file."""
    m, w = _WINDOW_CMD.match(command), _WINDOW_OUT.match(output)
    if m is None or w is None or m.group(1) != "1":
        return None
    n, body = int(w.group(1)), w.group(2).split("\n")[:-1]
    if int(m.group(2)) < n or len(body) != n or not all(b.startswith(f"{i}:") for i, b in enumerate(body, 1)):
        return None
    words = split_command(f"cat {m.group(3)}")[0].argv
    texts = [b.split(":", 1)[1] for b in body]
    return _abs(words[1]), ("\n".join(texts) + "\n") if texts != [""] else "\n"


def whole_display(
    command: str, output: str, segments: list[Segment] | None = None
) -> tuple[str, Callable[[], str | None]] | None:
    """``(path, text)`` when a plain ``cat FILE``, ``cat -n FILE`` or a SWE-agent window
    covering every line printed the whole file; ``text`` decodes the display when called (None:
    the display is not the whole file after all), so a file never edited costs no decoding."""
    if command.startswith("awk 'NR>="):
        shown = _window(command, output)
        return None if shown is None else (shown[0], lambda: shown[1])
    if not command.startswith("cat ") or "|" in command or ">" in command or "\n" in command:
        return None
    segs = split_command(command) if segments is None else segments
    if len(segs) != 1 or segs[0].heredoc:
        return None
    argv = segs[0].argv
    if len(argv) == 2 and argv[0] == "cat" and not argv[1].startswith("-"):
        return _abs(argv[1]), lambda: output
    if len(argv) == 3 and argv[:2] == ["cat", "-n"]:
        return _abs(argv[2]), lambda: _cat_n_text(output)
    return None


def _cat_n_text(output: str) -> str | None:
    """The file ``cat -n`` printed, or None when its lines are not numbered 1, 2, ... in order."""
    lines = output.split("\n")
    body = lines[:-1] if lines[-1] == "" else lines
    if all(_CAT_N_LINE.match(line) for line in body) and [int(b.split("\t", 1)[0]) for b in body] == list(
        range(1, len(body) + 1)
    ):
        return _CAT_N_LINE.sub("", output)
    return None


def created_file(command: str) -> tuple[str, str] | None:
    """``(path, text)`` of a converter's create: a quoted ``cat > FILE <<'EOF'`` (the heredoc's
    final newline cut again by ``&& truncate -s -1 FILE`` for a text without one), or SWE-agent's
    ``create`` (one empty line, then its window)."""
    e = re.match(r"\Aprintf '\\n' > ('(?:[^']|'\\'')*'|\S+) && awk ", command)
    if e is not None:
        return _abs(split_command(f"cat {e.group(1)}")[0].argv[1]), "\n"
    m = re.match(r"\A(?:mkdir -p \S+ && )?cat > (\S+) <<'(\w+)'([^\n]*)\n(.*)\n\2\Z", command, re.S)
    if m is None:
        return None
    path = m.group(1).strip("'")
    # the converter's own cut: the file's path again, right after the heredoc's opening line
    cut = re.match(r" && truncate -s -1 (\S+)(?: && |$)", m.group(3))
    if cut is not None and cut.group(1).strip("'") == path:
        return _abs(path), m.group(4)
    if m.group(3) and not m.group(3).startswith(" && printf "):
        return None  # something else runs after the heredoc: not one of the converter's creates
    return _abs(path), m.group(4) + "\n"


def read_only(command: str, segments: list[Segment] | None = None) -> bool:
    """Whether ``command`` can change no file (only read-only programs, no redirection)."""
    if ">" in command or "<<" in command:
        return False
    for seg in split_command(command) if segments is None else segments:
        if not seg.argv:
            continue
        prog = seg.argv[0]
        if prog not in _READ_ONLY:
            return False
        if prog == "sed" and any(a.startswith("-i") or a == "--in-place" for a in seg.argv[1:]):
            return False
        if prog == "git" and (len(seg.argv) < 2 or seg.argv[1] not in _GIT_READ):
            return False
        if prog == "find" and any(a in ("-delete", "-exec", "-execdir", "-ok") for a in seg.argv):
            return False
    return True


_HEREDOC_OPENER = re.compile(r"<<-?[ \t]*(['\"]?)([A-Za-z_][\w.-]*)\1")
_SHELL_EXPANDS = re.compile(r"[$`\\]")  # what bash rewrites in an unquoted heredoc's body
# programs that write only the paths their words name
_NAMED_WRITERS = frozenset(
    {
        "mkdir",
        "touch",
        "cp",
        "mv",
        "rm",
        "chmod",
        "ln",
        "rmdir",
        "sed",
        "tee",
        "truncate",
        "cd",
        "echo",
        "printf",
    }
)
# test runners: they run the repository's tests, which do not rewrite the run's own scripts
_TEST_RUNNERS = frozenset({"pytest", "py.test", "tox", "runtests.py", "manage.py", "nosetests"})
_QUIET_TOOLS = frozenset({"pip", "pip3", "which", "env", "export", "sleep", "wait", "python3-config"})
_GIT_WRITES_NAMED = frozenset({"add", "rm", "mv", "commit", "diff", "status", "log", "show"})


def _names(text: str, name: str) -> bool:
    """The text names the file ``name`` as a word of its own (``x.py``, ``'a/x.py'``, not ``x.py.bak``)."""
    at = text.find(name)
    while at >= 0:
        before = text[at - 1] if at else " "
        after = text[at + len(name)] if at + len(name) < len(text) else " "
        if not (before.isalnum() or before in "_.-") and not (after.isalnum() or after in "_.-"):
            return True
        at = text.find(name, at + 1)
    return False


def _write_error(output: str, name: str) -> bool:
    """An error about writing the file named ``name`` (a missing directory, no permission)."""
    return any(
        name in line and ("No such file" in line or "Permission denied" in line or "Is a directory" in line)
        for line in output.splitlines()
    )


_CD = re.compile(r"(?:^|[;&|(\n]|\bthen|\bdo)[ \t]*(?:cd|pushd|popd)\b(?:[ \t]+([^\s;&|)]+))?")


def command_cwd(command: str) -> str | None:
    """The directory the command's relative paths are in: ``/testbed``, or DIR of one ``cd DIR``
    that starts the command; None when another ``cd`` may move it (the lexer peels ``cd`` off,
    so its place is read from the text)."""
    dirs = [m.group(1) for m in _CD.finditer(command)] if "cd" in command else []
    dirs = [d.strip("'\"") if d else "" for d in dirs]
    moving = [d for d in dirs if posixpath.normpath(d or "/") != TESTBED]
    if not moving:
        return TESTBED
    m = re.match(r"[ \t]*cd[ \t]+([^\s;&|)]+)[ \t]*&&", command)
    if len(dirs) == 1 and m is not None and "$" not in m.group(1) and not m.group(1).startswith("~"):
        return _abs_in(TESTBED, m.group(1).strip("'\""))
    return None


def _abs_in(cwd: str, path: str) -> str:
    return posixpath.normpath(path if path.startswith("/") else posixpath.join(cwd, path))


def _prog(seg: Segment) -> str:
    return seg.argv[0].rsplit("/", 1)[-1] if seg.argv else ""


def _is_python_prog(name: str) -> bool:
    return name == "python" or (name.startswith("python") and name[6:].replace(".", "").isdigit())


def heredoc_target(seg: Segment) -> tuple[str, bool] | None:
    """``(path, append)`` when the segment writes its heredoc to one file: ``cat > f <<EOF``,
    ``cat <<EOF >> f``, ``tee [-a] f <<EOF`` (no other output file)."""
    if not seg.heredoc or _prog(seg) not in ("cat", "tee"):
        return None
    argv = seg.argv
    targets: list[tuple[str, bool]] = []
    for i, a in enumerate(argv[1:], 1):
        for op in (">>", ">"):
            if a == op and i + 1 < len(argv):
                targets.append((argv[i + 1], op == ">>"))
                break
            if a.startswith(op) and len(a) > len(op) and a[len(op)] not in "&>":
                targets.append((a[len(op) :], op == ">>"))
                break
    if _prog(seg) == "tee":
        files = [a for a in argv[1:] if not a.startswith(("-", "<<", ">"))]
        append = any(a in ("-a", "--append") for a in argv[1:])
        targets += [(f, append) for f in files if all(f != t for t, _ in targets)]
    return targets[0] if len(targets) == 1 else None


@dataclass
class RunFiles(Files):
    """The files a run wrote or displayed, learned turn by turn, for the return-code rules.

    Fed each converted turn in order (:meth:`learn`), it knows a file's text after the run
    displayed it whole (``cat f``, ``cat -n f``, a full SWE-agent window), wrote it with a heredoc
    (``cat > f <<'EOF'``, ``cat <<EOF >> f``, ``tee f <<EOF``, the converter's creates) or edited
    a known file with one of the converter's edit scripts (run in process, as the verify step
    does). It forgets what a command may have written: the known files a quiet file program
    (``mv``, ``sed -i``, ``cp``, a redirection...) or a known script names, and every file after a
    command that may write anything (an unknown script, ``git checkout``, ``patch``, ``make``...).
    Paths are absolute; relative ones are taken from ``/testbed`` or the ``cd DIR`` that starts
    the command (:func:`command_cwd`; a write elsewhere forgets its file name). A directory a
    persistent shell (OpenHands) entered in an earlier turn is not followed.
    """

    pending: list[tuple[str, str, int | None]] = field(default_factory=list)

    def script(self, path: str, cwd: str = TESTBED) -> str | None:
        """The known text of ``path`` (relative to ``cwd``), or None."""
        while (
            self.pending
        ):  # turns are read when a rule first asks: a run that records every code costs nothing
            self._learn(*self.pending.pop(0))
        return self.text(_abs_in(cwd, path))

    def learn(self, command: str, output: str, returncode: int | None) -> None:
        """Take one turn, in the run's order: its command, output and code (None: unknown)."""
        self.pending.append((command, output, returncode))

    def _learn(self, command: str, output: str, returncode: int | None) -> None:
        """Learn from, or forget because of, one turn."""
        segs = split_command(command)
        if returncode == 0 and (shown := whole_display(command, output, segs)) is not None:
            self.known[shown[0]] = shown[1]
            return
        failed = returncode not in (0, None)
        if not failed and (created := created_file(command)) is not None:
            self.known[created[0]] = created[1]
            return
        if (edit := edit_script(command)) is not None:
            # run on the known text, the converter's script writes what the editor wrote, or
            # nothing when the editor refused (it exits 1): trusted when it ends as the run did
            # and the window the run then showed agrees with the text it leaves
            outcome = run_edit(edit[0], self)
            if outcome is None or (returncode is not None and (outcome.code == 0) != (returncode == 0)):
                self._forget_named(command)
            self._check_windows(output)
            return
        self._check_windows(output)
        if read_only(command, segs):
            return
        writes = self._heredoc_writes(command, output, segs)
        self._forget(command, segs, writes)
        for path, text in writes.items():
            if text is None:
                self.known.pop(path, None)
            else:
                self.known[path] = text

    def _check_windows(self, output: str) -> None:
        """Forget a known file that a SWE-agent window in the output shows otherwise: the run's
        own view of the file outranks what was inferred of it."""
        if "lines total)]" not in output or not self.known:
            return
        for m in _WINDOW_HEAD.finditer(output):
            if "would have looked" in output[max(0, m.start() - 120) : m.start()]:
                continue  # SWE-agent's preview of an edit it refused: not the file
            path = _abs(m.group(1))
            text = self.text(path)
            if text is None:
                continue
            lines = text.split("\n")
            if text.endswith("\n"):
                lines.pop()
            shown = _WINDOW_LINES.match(output, m.end() + 1)
            numbered = shown.group(0).splitlines() if shown else []
            body = len(lines)
            while body and not lines[body - 1]:
                body -= 1  # (trailing blank lines: counted alike or not by SWE-agent's window)
            if not body <= int(m.group(2)) <= len(lines) + 1 or any(
                (i := int(n)) > len(lines) or lines[i - 1] != line
                for n, line in (ln.split(":", 1) for ln in numbered)
            ):
                del self.known[path]

    def _heredoc_writes(self, command: str, output: str, segs: list[Segment]) -> dict[str, str | None]:
        """The texts the command's heredocs wrote, by path (None: written, its text not known).
        A write counts when nothing before it in its list could have stopped it (only ``;``,
        newlines, ``cd`` and ``mkdir`` and other heredoc writes before it) and no error names
        its file; the status of the whole command does not matter (a script run after the write
        may fail)."""
        out: dict[str, str | None] = {}
        unquoted = any(not m.group(1) for m in _HEREDOC_OPENER.finditer(command))
        cwd = command_cwd(command)
        sure = True  # every earlier item of this list ran and succeeded
        for seg in segs:
            target = heredoc_target(seg)
            if target is not None:
                if cwd is None and not target[0].startswith("/"):
                    self._forget_named(posixpath.basename(target[0]) or "/")  # written where, is not known
                    continue
                path = _abs_in(cwd or TESTBED, target[0])
                name = posixpath.basename(path)
                if not sure or not name or _write_error(output, name):
                    out[path] = None
                elif unquoted and _SHELL_EXPANDS.search(seg.heredoc):
                    out[path] = None  # bash expanded the body: the file is not the text shown
                else:
                    body = seg.heredoc + "\n"
                    before = (out[path] if path in out else self.text(path)) if target[1] else ""
                    out[path] = None if before is None else before + body
            elif seg.op in ("&&", "||", "|", "|&") and _prog(seg) != "mkdir":
                sure = False
            if seg.op in (";", "\n", ""):
                sure = True
            elif seg.op in ("||", "|", "|&"):
                sure = False
        return out

    def _forget_named(self, text: str) -> None:
        """Forget every known file whose name the text holds."""
        for path in [p for p in self.known if _names(text, posixpath.basename(p))]:
            del self.known[path]

    def _forget(self, command: str, segs: list[Segment], writes: dict[str, str | None]) -> None:
        """Forget what the command's simple commands may have written (see the class doc);
        ``writes``: what its heredocs wrote (a script it writes and then runs is known)."""
        cwd = command_cwd(command)
        for seg in segs:
            if not self.known:
                return
            name = _prog(seg)
            words = seg.argv[1:]
            script = next((w for w in words if not w.startswith("-")), "")
            # the repository's own test runner (``python tests/runtests.py``), not a script of the run's
            runs_runner = (
                _is_python_prog(name)
                and posixpath.basename(script) in _TEST_RUNNERS
                and self.text(_abs_in(cwd or TESTBED, script)) is None
            )
            if (
                _is_python_prog(name)
                and not seg.heredoc
                and "-c" not in words
                and "-m" not in words
                and not runs_runner
            ):
                if not script:
                    continue  # python --version: no program runs
                path = _abs_in(cwd or TESTBED, script)
                text = writes.get(path) if path in writes else self.text(path)
                if text is None or (cwd is None and not script.startswith("/")):
                    self.known.clear()  # a script not known may write any file
                    return
                self._forget_named(text + " ".join(w for w in words if w != script))
                continue
            if name in _TEST_RUNNERS or runs_runner or (_is_python_prog(name) and "-m" in words):
                # a test runner or a module: it does not write the files it is given; its redirections may
                self._forget_named(" ".join(a for a in words if a.startswith((">", "1>", "2>", "&>"))))
                self._forget_named(" ".join(b for a, b in pairwise(words) if a in (">", ">>", "2>", "&>")))
                continue
            if name == "cp" and len(words) >= 2:
                dest = words[-1]
                self._forget_named(dest if "." in posixpath.basename(dest) else " ".join(words))
                continue
            # a heredoc fed to cat or tee is the text written, not code: its words name nothing
            self._forget_named(seg.text + ("" if name in ("cat", "tee") else "\n" + seg.heredoc))
            if name == "git" and words and words[0] not in _GIT_READ | _GIT_WRITES_NAMED:
                paths = [w for w in words[1:] if not w.startswith("-")]
                if (
                    words[0] == "checkout"
                    and paths
                    and all("/" in w or "." in w for w in paths)
                    and "." not in paths
                ):
                    continue  # git checkout FILE...: those files only (forgotten by name above)
                self.known.clear()  # a branch, stash, reset, apply, clean: any tracked file
                return
            if not name or name in _NAMED_WRITERS or name in _READ_ONLY:
                continue
            if _is_python_prog(name) or name in _QUIET_TOOLS:
                continue  # inline code (its names forgotten above) or a tool: pip, which
            self.known.clear()  # it may write any file
            return
