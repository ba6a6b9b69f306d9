"""Replay converted runs with bash and compare every observation.

The core shared by ``bench/replay.py`` (upstream base trees) and ``tests/test_replay_local.py``
(files rebuilt from the run's own displays). A converted run is read back from its published
messages, never from the converter's internals: what is checked is what a model is trained on.

Execution model: mini-swe-agent's SWE-bench environment (``extra/swebench.yaml``, docker
``exec -w /testbed … bash -lc CMD``): every command is a fresh ``bash -lc`` in ``/testbed``, stdout
and stderr merged, ``PAGER=cat`` and friends set, 60 s timeout. ``/testbed`` is mapped to a
scratch tree by one of two shells:

* :class:`NamespaceShell` (root): ``unshare --mount`` builds a private root in a tmpfs (read-only
  binds of ``/usr``, ``/etc``, ``/opt``, ``/var`` and the ``/lib*``/``/bin`` links; fresh
  ``/dev``, ``/proc``), binds the tree on ``/testbed`` and private ``/tmp`` and ``/root`` dirs of
  the run, then ``chroot``s. Nothing leaks between runs or onto the host, and paths are exactly
  the ones the run used. The mounts vanish with the namespace.
* :class:`RewriteShell` (no root): runs in the tree itself with the literal ``/testbed`` in the
  command replaced by the tree's path and mapped back in the output. Good enough for the
  converter's edit and display commands; ``/tmp`` and ``$HOME`` are the host's.

A command is compared by rendering what it printed through the same templates the converter
uses (``render_observation``, the timeout template, the submit's final message) and comparing
the text with the converted observation byte for byte.
"""

from __future__ import annotations

import ast
import difflib
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.convert.render import (  # render_timeout: re-exported, its one home is the renderer
    SENTINELS,
    parse_actions,
    render_observation,
    render_timeout,
    submission_of,
)
from pipeline.convert.roots import TESTBED
from pipeline.text.shell import split_command

TIMEOUT_S = 60  # mini-swe-agent extra/swebench.yaml environment.timeout
ENV = {"PAGER": "cat", "MANPAGER": "cat", "LESS": "-R", "PIP_PROGRESS_BAR": "off", "TQDM_DISABLE": "1"}
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

# Commands that reach the network or a package index: never run (the base tree cannot get
# what they fetched), counted, and the turns after them flagged as possibly diverged.
_NETWORK = frozenset({"curl", "wget", "aria2c", "http", "https", "ssh", "scp", "rsync", "nc", "ping"})
_PACKAGE = frozenset(
    {
        "pip",
        "pip3",
        "conda",
        "mamba",
        "micromamba",
        "apt",
        "apt-get",
        "aptitude",
        "yum",
        "dnf",
        "apk",
        "brew",
        "npm",
        "yarn",
        "pnpm",
        "poetry",
        "pipx",
        "easy_install",
        "gem",
        "cargo-install",
        "go-get",
    }
)
_GIT_NETWORK = frozenset({"clone", "fetch", "pull", "push", "ls-remote", "submodule"})
# Programs whose output depends on the task's runtime (interpreters, test runners, build tools):
# a difference there is the machine's, not the converter's.
_RUNTIME = frozenset(
    {
        "pytest",
        "py.test",
        "tox",
        "nox",
        "nosetests",
        "make",
        "cmake",
        "node",
        "npx",
        "go",
        "cargo",
        "rustc",
        "gcc",
        "g++",
        "cc",
        "clang",
        "javac",
        "java",
        "mvn",
        "gradle",
        "ruby",
        "rake",
        "bundle",
        "php",
        "composer",
        "perl",
        "Rscript",
        "julia",
        "dotnet",
        "sphinx-build",
        "coverage",
        "mypy",
        "flake8",
        "pylint",
        "black",
        "ruff",
        "isort",
        "django-admin",
        "pre-commit",
        "jest",
        "tsc",
        "bazel",
        "meson",
        "ninja",
    }
)
_PY = re.compile(r"^python(?:[23](?:\.\d+)?)?$")
_TIMEOUT_HEAD = "The last command <command>"


@dataclass
class Turn:
    """One converted action: its command and the observation the converted run shows for it."""

    index: int  # 1-based action number
    command: str
    observation: str
    submit: bool = False

    @property
    def timed_out(self) -> bool:
        return self.observation.startswith(_TIMEOUT_HEAD)


def turns_of(messages: list[dict[str, str]]) -> list[Turn]:
    """The (command, observation) pairs of converted messages, in order."""
    turns: list[Turn] = []
    for i in range(2, len(messages) - 1, 2):
        actions = parse_actions(messages[i]["content"])
        if len(actions) != 1:
            raise ValueError(f"message {i}: {len(actions)} bash blocks")
        cmd = actions[0]
        turns.append(
            Turn(len(turns) + 1, cmd, messages[i + 1]["content"], submit=SENTINELS[0] in cmd.split("&&")[0])
        )
    return turns


def render_as(turn: Turn, output: str, returncode: int, timed_out: bool) -> str:
    """The observation the converted run should show had the command printed ``output``."""
    if timed_out:
        return render_timeout(turn.command, output)
    if turn.submit:
        return submission_of(output)
    return render_observation(output, returncode)


# ---------------------------------------------------------------- command classes


def _programs(command: str) -> list[list[str]]:
    return [seg.argv for seg in split_command(command) if seg.argv]


def skip_reason(command: str) -> str | None:
    """``network`` / ``package`` for a command that fetches from outside, else None."""
    for argv in _programs(command):
        prog = os.path.basename(argv[0])
        if (
            prog in _PACKAGE
            or (_PY.match(prog) and argv[1:3] == ["-m", "pip"])
            or (prog == "uv" and argv[1:2] in (["pip"], ["add"], ["sync"]))
        ):
            return "package"
        if prog in _NETWORK or (prog == "git" and any(a in _GIT_NETWORK for a in argv[1:3])):
            return "network"
    return None


def _stdlib_only(code: str) -> bool:
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return False
    for node in ast.walk(tree):
        names = (
            [a.name for a in node.names]
            if isinstance(node, ast.Import)
            else ([node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0 else [])
        )
        if isinstance(node, ast.ImportFrom) and node.level:
            return False
        if any(n.split(".")[0] not in sys.stdlib_module_names for n in names):
            return False
    return True


def runtime_dependent(command: str) -> bool:
    """True when the command runs the task's code or toolchain (its output is the machine's).

    A ``python3 - <<EOF`` script or ``python -c`` importing only the standard library (the
    converter's edit scripts) is not: it prints the same anywhere.
    """
    for seg in split_command(command):
        if not seg.argv:
            continue
        prog = os.path.basename(seg.argv[0])
        if prog in _RUNTIME:
            return True
        if _PY.match(prog):
            args = seg.argv[1:]
            if args[:1] == ["-"] or not args or args[0].startswith("<<"):
                if not _stdlib_only(seg.heredoc):
                    return True
            elif args[0] == "-c" and len(args) > 1:
                if not _stdlib_only(args[1]):
                    return True
            else:
                return True
    return False


# ---------------------------------------------------------------- shells


@dataclass
class Result:
    output: str
    returncode: int
    timed_out: bool = False


def _run(
    argv: list[str], timeout: float, cwd: str | None = None, env: dict[str, str] | None = None
) -> Result:
    proc = subprocess.Popen(
        argv,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        out, _ = proc.communicate(timeout=timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        timed_out = True
    # mini decodes with errors="replace"
    return Result(out.decode("utf-8", errors="replace"), proc.returncode, timed_out)


def _login_env() -> dict[str, str]:
    return {"PATH": PATH, "HOME": "/root", "LANG": "C.UTF-8", "TERM": "dumb", **ENV}


_NS_SCRIPT = r"""
set -e
R=$1 TREE=$2 TMPD=$3 HOMED=$4
mount -t tmpfs -o mode=755 replay "$R"
for d in usr etc opt var srv; do
  if [ -d "/$d" ] && [ ! -L "/$d" ]; then mkdir "$R/$d"; mount --rbind "/$d" "$R/$d"; mount -o remount,bind,ro "$R/$d"; fi
done
for l in bin sbin lib lib32 lib64 libx32; do
  if [ -L "/$l" ]; then ln -s "$(readlink "/$l")" "$R/$l";
  elif [ -d "/$l" ]; then mkdir "$R/$l"; mount --rbind "/$l" "$R/$l"; mount -o remount,bind,ro "$R/$l"; fi
done
mkdir "$R/dev" "$R/proc" "$R/tmp" "$R/root" "$R/testbed" "$R/replay-bin"
mount --rbind /dev "$R/dev"
mount -t proc proc "$R/proc"
mount --bind "$TMPD" "$R/tmp"
mount --bind "$HOMED" "$R/root"
mount --bind "$TREE" "$R/testbed"
ln -s /usr/bin/python3 "$R/replay-bin/python"
# `python` as in the task images (a read-only overlay: the login shell's PATH stays the profile's)
mount -t overlay overlay -o "lowerdir=$R/replay-bin:/usr/local/bin" "$R/usr/local/bin"
shift 4
exec chroot "$R" /usr/bin/env -i "$@"
"""


class Shell:
    """Runs one command the way mini-swe-agent's SWE-bench environment does."""

    def run(self, command: str, timeout: float = TIMEOUT_S) -> Result:  # pragma: no cover - interface
        raise NotImplementedError


class NamespaceShell(Shell):
    """``/testbed`` = ``tree`` inside a private mount namespace and root (needs root)."""

    def __init__(self, tree: Path, scratch: Path) -> None:
        self.tree = tree
        self.mnt, self.tmp, self.home = scratch / "root", scratch / "tmp", scratch / "home"
        for d in (self.mnt, self.tmp, self.home):
            d.mkdir(parents=True, exist_ok=True)
        os.chmod(self.tmp, 0o1777)

    @staticmethod
    def available() -> bool:
        if os.geteuid() != 0 or not shutil.which("unshare") or not shutil.which("chroot"):
            return False
        with tempfile.TemporaryDirectory() as d:
            probe = NamespaceShell(Path(d) / "tree", Path(d))
            (Path(d) / "tree").mkdir()
            try:
                res = probe.run("pwd", timeout=20)
            except OSError:
                return False
            return res.returncode == 0 and res.output == f"{TESTBED}\n"

    def run(self, command: str, timeout: float = TIMEOUT_S) -> Result:
        env = [f"{k}={v}" for k, v in _login_env().items()]
        argv = [
            "unshare",
            "--mount",
            "--propagation",
            "private",
            "bash",
            "-c",
            _NS_SCRIPT,
            "replay",
            str(self.mnt),
            str(self.tree),
            str(self.tmp),
            str(self.home),
            *env,
            "bash",
            "-c",
            'cd /testbed && exec bash -lc "$0"',
            command,
        ]
        return _run(argv, timeout)


class RewriteShell(Shell):
    """``/testbed`` written as the tree's own path in the command and back in the output."""

    def __init__(self, tree: Path, home: Path | None = None) -> None:
        self.tree = tree
        # a fresh $HOME: the login shell must not source the host user's profile
        self.home = home or Path(tempfile.mkdtemp(prefix="replay-home-"))

    def run(self, command: str, timeout: float = TIMEOUT_S) -> Result:
        real = str(self.tree.resolve())
        env = {**_login_env(), "PATH": os.environ.get("PATH", PATH), "HOME": str(self.home)}
        res = _run(["bash", "-lc", command.replace(TESTBED, real)], timeout, cwd=real, env=env)
        res.output = res.output.replace(real, TESTBED)
        return res


def make_shell(tree: Path, scratch: Path) -> Shell:
    """The namespace shell where it works (root, unshare), else the path-rewriting one."""
    return NamespaceShell(tree, scratch) if _NS_OK() else RewriteShell(tree, _mkdir(scratch / "home"))


def _mkdir(p: Path) -> Path:
    p.mkdir(parents=True, exist_ok=True)
    return p


_ns_cache: list[bool] = []


def _NS_OK() -> bool:
    if not _ns_cache:
        _ns_cache.append(NamespaceShell.available())
    return _ns_cache[0]


# ---------------------------------------------------------------- comparing


def short_diff(expected: str, got: str, lines: int = 12) -> str:
    """A unified diff of two observations, cut to ``lines`` lines (converted = ``-``, replay = ``+``)."""
    diff = list(
        difflib.unified_diff(
            expected.splitlines(keepends=True), got.splitlines(keepends=True), "converted", "replayed", n=1
        )
    )
    shown = [d if d.endswith("\n") else d + "\n" for d in diff[:lines]]
    more = f"… {len(diff) - lines} more diff lines\n" if len(diff) > lines else ""
    return "".join(shown) + more


@dataclass
class TurnOutcome:
    index: int
    status: str  # identical | differs | runtime (the task's code ran) | dates (file times only) | skipped
    command: str
    reason: str = ""  # skipped: network/package
    after_skip: bool = False  # a command was skipped earlier in the run: the tree may have diverged
    diff: str = ""


@dataclass
class Replay:
    turns: list[TurnOutcome] = field(default_factory=list)

    def count(self, status: str) -> int:
        return sum(t.status == status for t in self.turns)

    @property
    def first_difference(self) -> TurnOutcome | None:
        return next((t for t in self.turns if t.status in ("differs", "runtime", "dates")), None)

    @property
    def identical(self) -> bool:
        return all(t.status in ("identical", "skipped") for t in self.turns)


def replay_turn(turn: Turn, shell: Shell, timeout: float = TIMEOUT_S) -> tuple[str, Result]:
    """Run one turn; returns its rendered observation and the raw result."""
    res = shell.run(turn.command, timeout=min(timeout, 10) if turn.timed_out else timeout)
    return render_as(turn, res.output, res.returncode, res.timed_out), res


_LS_DATE = re.compile(r"\b[A-Z][a-z]{2} [ \d]\d (?:\d\d:\d\d|[ \d]\d{4})\b")


def dates_only(expected: str, got: str) -> bool:
    """True when two outputs differ only in ``ls -l`` style dates (the checkout's file times)."""
    return expected != got and _LS_DATE.sub("DATE", expected) == _LS_DATE.sub("DATE", got)


def outcome_of(turn: Turn, got: str, skipped_before: bool) -> TurnOutcome:
    if got == turn.observation:
        return TurnOutcome(turn.index, "identical", turn.command, after_skip=skipped_before)
    status = (
        "runtime"
        if runtime_dependent(turn.command)
        else "dates"
        if dates_only(turn.observation, got)
        else "differs"
    )
    return TurnOutcome(
        turn.index, status, turn.command, after_skip=skipped_before, diff=short_diff(turn.observation, got)
    )


def replay_turns(turns: list[Turn], shell: Shell, timeout: float = TIMEOUT_S) -> Replay:
    """Run every turn in order (network and package commands skipped) and compare each one."""
    out = Replay()
    skipped = False
    for turn in turns:
        reason = skip_reason(turn.command)
        if reason:
            out.turns.append(
                TurnOutcome(turn.index, "skipped", turn.command, reason=reason, after_skip=skipped)
            )
            skipped = True
            continue
        got, _ = replay_turn(turn, shell, timeout)
        out.turns.append(outcome_of(turn, got, skipped))
    return out


# ---------------------------------------------------------------- local replay (no upstream tree)
#
# Files the run displayed whole are rebuilt from its own outputs; the converted commands that
# touch only rebuilt files (edits, later displays) are then run on them and compared. Used in CI
# (tests/test_replay_local.py), where no upstream tree is at hand.

_OBS = re.compile(r"\A<returncode>(-?\d+)</returncode>\n<output>\n(.*)</output>\Z", re.S)
_NUMBERED = re.compile(r"^ *\d+\t", re.M)
_WINDOW_CMD = re.compile(r"\Aawk 'NR>=(\d+)&&NR<=(\d+)\{l\[NR\]=\$0\} END\{[^\n]*\}' ('(?:[^']|'\\'')*')\Z")
_WINDOW_OUT = re.compile(
    r"\A\[File: (?P<path>[^\n]+) \((?P<n>\d+) lines total\)\]\n(?P<body>(?:\d+:[^\n]*\n)*)\Z"
)
_PY_PATH = re.compile(r"^path = (.+)$", re.M)
# programs a local replay may run: they read or write only the files named on their command line
_SAFE = frozenset(
    {
        "cat",
        "awk",
        "sed",
        "head",
        "tail",
        "nl",
        "wc",
        "grep",
        "printf",
        "echo",
        "true",
        ":",
        "truncate",
        "mkdir",
        "touch",
        "python3",
        "python",
    }
)
# programs that can change files they do not name: every rebuilt file is forgotten after them
_WIDE = frozenset(
    {"git", "patch", "mv", "cp", "rm", "rsync", "tar", "unzip", "find", "perl", "xargs", "make"}
)


def observed(turn: Turn) -> tuple[int, str] | None:
    """(returncode, output) of a plain converted observation (None: truncated, timeout, submit)."""
    if turn.submit:
        return None
    m = _OBS.match(turn.observation)
    return (int(m.group(1)), m.group(2)) if m else None


def _word(token: str) -> str:
    try:
        words = shlex.split(token)
    except ValueError:
        return token
    return words[0] if len(words) == 1 else token


def whole_display(turn: Turn) -> tuple[str, str] | None:
    """(path, content) when the turn printed a whole file as ``cat``, ``cat -n`` or a SWE-agent
    window covering every line, with returncode 0; the content is what the file held then."""
    got = observed(turn)
    if got is None or got[0] != 0:
        return None
    out = got[1]
    segs = split_command(turn.command)
    if len(segs) == 1 and not segs[0].heredoc and "|" not in turn.command and ">" not in turn.command:
        argv = segs[0].argv
        if len(argv) == 2 and argv[0] == "cat" and not argv[1].startswith("-"):
            return argv[1], out
        if len(argv) == 3 and argv[:2] == ["cat", "-n"]:
            lines = out.split("\n")
            if all(_NUMBERED.match(ln) for ln in lines[:-1]) and (
                lines[-1] == "" or _NUMBERED.match(lines[-1])
            ):
                return argv[2], _NUMBERED.sub("", out)
    m = _WINDOW_CMD.match(turn.command)
    w = _WINDOW_OUT.match(out)
    if m and w and m.group(1) == "1":
        n = int(w.group("n"))
        body = w.group("body").split("\n")[:-1]
        if (
            int(m.group(2)) >= n
            and len(body) == n
            and all(b.startswith(f"{i}:") for i, b in enumerate(body, 1))
        ):
            texts = [b.split(":", 1)[1] for b in body]
            return _word(m.group(3)), ("\n".join(texts) + "\n") if texts != [""] else "\n"
    return None


def _abs(path: str) -> str:
    return path if path.startswith("/") else f"{TESTBED}/{path.removeprefix('./')}"


_PATTERN_FIRST = frozenset({"sed", "grep", "awk"})  # their first operand is a script or pattern
_ARG_OPTS = {
    "head": {"-n", "-c"},
    "tail": {"-n", "-c"},
    "truncate": {"-s"},
    "grep": {"-A", "-B", "-C", "-m"},
    "sed": {"-e"},
    "awk": {"-F", "-v"},
    "nl": {"-b", "-w", "-s", "-v", "-i"},
}


def touched_paths(command: str) -> tuple[set[str], set[str]] | None:
    """(read, written) /testbed paths (absolute) of a command a local replay may run: only
    :data:`_SAFE` programs, stdlib-only ``python3 -`` scripts naming one ``path``, and no path
    outside /testbed. None for any other command."""
    reads: set[str] = set()
    writes: set[str] = set()
    for seg in split_command(command):
        if not seg.argv:
            continue
        prog = seg.argv[0]
        if prog not in _SAFE:
            return None
        if prog in ("python3", "python"):
            if seg.argv[1:2] != ["-"] or not _stdlib_only(seg.heredoc):
                return None
            lits = _PY_PATH.findall(seg.heredoc)
            if len(lits) != 1:
                return None
            try:
                path = _abs(ast.literal_eval(lits[0]))
            except (ValueError, SyntaxError):
                return None
            (reads if ".read()" in seg.heredoc else writes).add(path)
            continue
        args = seg.argv[1:]
        operands: list[str] = []
        i, pattern_seen = 0, prog not in _PATTERN_FIRST
        while i < len(args):
            a = args[i]
            if a in (">", ">>"):
                if i + 1 < len(args):
                    (reads if a == ">>" else writes).add(args[i + 1])
                i += 2
                continue
            if a.startswith(">"):
                (reads if a.startswith(">>") else writes).add(a.lstrip(">"))
            elif a.startswith("<<") or a.startswith("2>") or a == "<":
                pass
            elif a in _ARG_OPTS.get(prog, ()):
                pattern_seen = pattern_seen or a == "-e"
                i += 1
            elif a.startswith("-") and a != "-":
                pass
            elif not pattern_seen:
                pattern_seen = True
            elif prog not in ("printf", "echo", "true", ":"):
                operands.append(a)
            i += 1
        if prog != "mkdir":
            (writes if prog in ("touch", "truncate") else reads).update(operands)
    out: list[set[str]] = []
    for group in (reads, writes):
        paths = set()
        for a in group:
            if a == "/dev/null":
                continue
            p = _abs(a)
            if not p.startswith(TESTBED + "/") or "/../" in p:
                return None
            paths.add(p)
        out.append(paths)
    if not out[0] and not out[1]:
        return None
    return out[0], out[1]


@dataclass
class LocalOutcome:
    index: int
    status: str  # seeded | identical | differs | not_local
    command: str
    paths: tuple[str, ...] = ()
    diff: str = ""


def _host(tree: Path, path: str) -> Path:
    return tree / path.removeprefix(TESTBED + "/")


def local_replay(turns: list[Turn], tree: Path, shell: Shell, timeout: float = 20) -> list[LocalOutcome]:
    """Rebuild whole-displayed files under ``tree`` (= /testbed) and replay what touches only them.

    A file is rebuilt at its first whole display; a later command that names only rebuilt files
    (an edit script, a display) is run and compared. A command that is not replayed forgets the
    files it names (by base name), and one that can change unnamed files (git, mv, rm …) forgets
    every file, so the next whole display rebuilds them.
    """
    known: set[str] = set()
    out: list[LocalOutcome] = []

    def forget(paths: set[str]) -> None:
        for p in paths:
            known.discard(p)
            _host(tree, p).unlink(missing_ok=True)

    for turn in turns:
        display = whole_display(turn)
        touched = touched_paths(turn.command)
        if touched and touched[0] <= known | touched[1]:
            got, _ = replay_turn(turn, shell, timeout)
            ok = got == turn.observation
            known |= touched[1]
            out.append(
                LocalOutcome(
                    turn.index,
                    "identical" if ok else "differs",
                    turn.command,
                    tuple(sorted(touched[0] | touched[1])),
                    "" if ok else short_diff(turn.observation, got),
                )
            )
            continue
        path = _abs(display[0]) if display else ""
        if display is not None and path.startswith(TESTBED + "/") and "/../" not in path:
            host = _host(tree, path)
            host.parent.mkdir(parents=True, exist_ok=True)
            host.write_bytes(display[1].encode("utf-8", errors="surrogateescape"))
            known.add(path)
            out.append(LocalOutcome(turn.index, "seeded", turn.command, (path,)))
            continue
        out.append(LocalOutcome(turn.index, "not_local", turn.command))
        progs = {os.path.basename(a[0]) for a in _programs(turn.command)}
        if progs & _WIDE or runtime_dependent(turn.command):
            forget(set(known))
        else:
            forget({p for p in known if os.path.basename(p) in turn.command})
    return out
