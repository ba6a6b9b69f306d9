"""Leak stages (issue 5; research/dedup.md §3-§4, input-formats.md §1.5 and §3.2).

``SolutionLeak`` drops runs that obtained the fix from outside their own work, in two steps:

1. rules over the normalised commands (heredoc bodies cut, ``&&``/``;``/``|`` chains split, leading
   ``cd``/env assignments/``timeout``/``sudo`` peeled) name an *attempt* of one kind:
   ``git_history``, ``foreign_object``, ``bug_patch``, ``network_fetch``, ``package_fetch``,
   ``site_packages``;
2. the observation of that command must show the fix was delivered: containment of the task's fix
   lines (the gold patch's added lines, or for SWE-smith tasks — whose ``patch`` introduces the bug —
   its removed lines) >= ``FIX_CONTAINMENT``; or the run's own final diff found in it before the run
   wrote it (research §4.3: >= 0.8 of its added lines, each block seen *with its context* as one
   contiguous post-image, so a one-line fix counts and a stray equal line does not); the task's PR
   number in a history listing; a SWE-smith "Bug Patch"/"Remove F2P Tests" commit shown with its
   diff; a fetch or install that returned content, not an error (for ``git fetch/pull/clone``: git's
   own transfer output).

Confirmed -> drop ``solution_leak/<kind>`` (first confirmed turn). Unconfirmed -> kept, counter
``solution_leak_attempt/<kind>`` once per run and kind. Only runs whose commands match one combined
Rust regex (polars, vectorised) reach the Python rules.

Containment is measured over *normalised lines* (whitespace collapsed; diff markers, ``cat -n`` and
``grep -n`` prefixes stripped) — a line is the natural n-gram of a patch, and it matches a ``git
show`` hunk, a ``curl``'d raw file and a ``.patch`` URL alike.

``BenchmarkLeak`` drops runs on non-benchmark tasks whose text carries a benchmark instance:

* ``instance_id``: a benchmark id as a whole token (other than the run's own instance);
* ``gold_patch``: >= ``GOLD_MIN_LINES`` (all of them for a 2-line patch) distinctive added lines of a
  gold patch and >= 50% of them, found as diff additions (``+line``) anywhere or verbatim in the
  agent's own actions. A patch with one distinctive added line (common in SWE-bench) only matches
  as a printed diff: its ``+`` line as an addition in a text that also names the patch's file, never
  by the added line alone (template-like one-liners recur across repositories). Plain lines of
  observations never count: a ``cat`` of a later checkout (or an installed copy) of the same library
  is the repository's unchanged source, corpus material (marin#6852, research §3.1);
* ``problem_statement``: word 8-gram containment of a statement >= ``STATEMENT_CONTAINMENT`` (0.5;
  PaLM used 70% of 8-grams, we go lower because statements carry reformatted code blocks), counting
  only 8-grams that occur in at most ``MAX_GRAM_DF`` statements so issue-template boilerplate
  ("Describe the bug ... Expected behavior") matches nothing.

The n-gram index is built once per worker. Per batch, every distinct line is stored, tokenised and
normalised once (:class:`BatchLines`: agents print the same files and logs again and again); n-grams
are hashed (numpy) only over windows of statement-vocabulary tokens and looked up through a bitmap
before the exact sorted-array check. Only commands that can name an attempt reach shlex.
"""

from __future__ import annotations

import re
import shlex
from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import polars as pl
import pyarrow as pa

from pipeline.context import Context
from pipeline.hashing import GRAM_MIX, LINE_SEED, MIN_DISTINCTIVE_CHARS, TOKEN_SEED
from pipeline.stages.base import Stage, StageOutput
from schemas.miniswe import SUBMIT_SENTINEL
from schemas.run import DROPS, empty

FIX_CONTAINMENT = 0.5
OWN_DIFF_CONTAINMENT = 0.8
GOLD_MIN_LINES = 3
GOLD_CONTAINMENT = 0.5
STATEMENT_NGRAM = 8
STATEMENT_CONTAINMENT = 0.5
STATEMENT_MIN_NGRAMS = 12
MAX_GRAM_DF = 2
DETAIL_CMD_CHARS = 200
SUBMIT_MARK = SUBMIT_SENTINEL

# ----------------------------------------------------------------------------------------------
# Shared text helpers


_LINE_PREFIX = re.compile(r"^(?:\S+?:\d+[:-]|\s*\d+\t)?\s*[+-]?")
_WS = re.compile(r"\s+")
_TRIVIAL = re.compile(
    r"^(?:(?:from\s+\S+\s+)?import\s.*|#include.*|using\s.*|package\s.*|require\(.*|"
    r"[\[\](){}<>;,:.\s\\/*#\"'`-]*|(?:return|pass|break|continue|else|try|finally|end|fi|done)\b.{0,12}|"
    r"(?:\"\"\"|''')|(?:\}|\))\s*(?:else|catch|finally)?.{0,6})$"
)


def norm_line(line: str) -> str:
    """A line as compared across formats: marker/numbering prefix removed, whitespace collapsed."""
    return _WS.sub(" ", _LINE_PREFIX.sub("", line, count=1)).strip()


def distinctive(line: str) -> bool:
    """Lines that can identify a patch: long enough, not imports, braces, keywords or blanks."""
    return len(line) >= MIN_DISTINCTIVE_CHARS and not _TRIVIAL.match(line)


def diff_side(patch: str, sign: str) -> list[str]:
    """Normalised distinctive lines of one side (``+`` added, ``-`` removed) of a unified diff."""
    out: list[str] = []
    header = sign * 3
    for raw in patch.splitlines():
        if raw.startswith(sign) and not raw.startswith(header):
            n = _WS.sub(" ", raw[1:]).strip()
            if distinctive(n):
                out.append(n)
    return list(dict.fromkeys(out))


def line_set(text: str) -> set[str]:
    return {norm_line(x) for x in text.splitlines()}


def containment(fix: list[str], text_lines: set[str]) -> float:
    if not fix:
        return 0.0
    return sum(1 for x in fix if x in text_lines) / len(fix)


# ----------------------------------------------------------------------------------------------
# Command normalisation

_HEREDOC = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\1([^\n]*)\n(.*?)(?:\n[ \t]*\2[ \t]*(?=\n|$)|\Z)",
                      re.S)
_OPS = {"&&", "||", ";", "|", "&", ";;", "|&", "\n", "(", ")"}
_ENV = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_PEEL = {"sudo", "timeout", "env", "nohup", "time", "command", "exec", "xargs", "stdbuf"}
# No quotes, escapes, operators, comments or tabs: shlex would just split on spaces (``git status``).
_PLAIN = re.compile(r"[A-Za-z0-9_./=:,+@%~ -]*")


@dataclass
class Segment:
    argv: list[str]
    text: str  # the segment as written, for URL/regex checks
    heredoc: str = ""  # body fed to this command, if any


def split_command(cmd: str) -> list[Segment]:
    """Split a bash command into simple commands with wrappers peeled (cd, env, timeout, bash -c)."""
    bodies: list[str] = []

    def cut(m: re.Match[str]) -> str:
        bodies.append(m.group(4))
        return f"<<{m.group(2)}{m.group(3)}\n"

    flat = _HEREDOC.sub(cut, cmd)
    segs: list[Segment] = []
    lines = flat.split("\n")
    body_i = 0
    for line in lines:
        toks = line.split() if _PLAIN.fullmatch(line) else _shlex_split(line)
        cur: list[str] = []
        for t in [*toks, ";"]:
            if t in _OPS or (t and set(t) <= set(";&|()")):
                if cur:
                    heredoc = ""
                    if any(x.startswith("<<") for x in cur) and body_i < len(bodies):
                        heredoc = bodies[body_i]
                        body_i += 1
                    segs.extend(_peel(cur, heredoc))
                cur = []
            else:
                cur.append(t)
    return segs


def _shlex_split(line: str) -> list[str]:
    try:
        lex = shlex.shlex(line, posix=True, punctuation_chars=";&|()")
        lex.whitespace_split = True
        lex.commenters = "#"
        return list(lex)
    except ValueError:
        return line.split()


def _peel(argv: list[str], heredoc: str) -> list[Segment]:
    while argv:
        a = argv[0]
        if _ENV.match(a) or a in _PEEL:
            argv = argv[1:]
            if a == "timeout" and argv and re.match(r"^-|^\d", argv[0]):
                argv = argv[1:] if not argv[0].startswith("-") else argv[1:]
                while argv and re.match(r"^\d", argv[0]):
                    argv = argv[1:]
            continue
        if a == "cd":
            return []
        if a in ("bash", "sh", "zsh") and len(argv) >= 3 and argv[1] in ("-c", "-lc", "-ic"):
            return split_command(argv[2])
        break
    return [Segment(argv, " ".join(argv), heredoc)] if argv else []


# ----------------------------------------------------------------------------------------------
# Rules


_PRE = (
    r"git\s|git$|curl|wget|https?://|urlopen|urllib|requests\.|httpx|aiohttp|http\s|pip[0-9.]*\s|"
    r"uv\s+pip|poetry\s+add|conda\s+install|site-packages|dist-packages"
)
_SHA = re.compile(r"^[0-9a-f]{7,40}$")
_TAG = re.compile(r"^v?\d+(?:\.\d+)+(?:[-.]?\w+)?$")
_REMOTE = re.compile(r"^(?:origin|upstream|remotes?|refs)/")
_RELATIVE = re.compile(r"^(?:HEAD|@)(?:[~^]\d*)+$")
_SPECIAL = {"ORIG_HEAD", "FETCH_HEAD", "MERGE_HEAD", "CHERRY_PICK_HEAD", "REBASE_HEAD"}
_UPSTREAM = re.compile(
    r"https?://(?:[\w.-]+\.)?(?:github\.com|githubusercontent\.com|gitlab\.com|bitbucket\.org|pypi\.org|"
    r"pythonhosted\.org)\S*|https?://\S+\.(?:patch|diff)\b",
    re.I,
)
_FETCH_VERB = re.compile(r"\b(?:curl|wget|http|https|urlopen|urlretrieve|requests\.get|httpx\.get|"
                         r"urllib|aiohttp|fetch)\b", re.I)
_PY_FETCH = re.compile(r"urlopen|urlretrieve|requests\.(?:get|post)|httpx\.(?:get|Client)|aiohttp|http\.client")
_HISTORY_FLAG = re.compile(r"^(?:--all|--branches\b.*|--remotes\b.*|--tags\b.*|--reflog|-g|--walk-reflogs|"
                           r"-S.*|-G.*|--grep\b.*|--pickaxe.*|--glob=.*)$")
_GIT_GLOBAL_ARG = {"-C", "-c", "--git-dir", "--work-tree"}
_READERS = {"cat", "sed", "head", "tail", "less", "more", "grep", "rg", "diff", "cp", "rsync", "awk", "nl",
            "view", "vim", "vi", "python", "python3", "bat", "ag", "colordiff", "cmp"}
_PIP_NAMES = {"scikit-learn": "sklearn", "pillow": "PIL", "pyyaml": "yaml", "python-dateutil": "dateutil",
              "beautifulsoup4": "bs4", "attrs": "attr", "pytest-dev": "pytest", "scikit-image": "skimage",
              "opencv-python": "cv2", "protobuf": "google", "msgpack-python": "msgpack"}


@dataclass
class Task:
    instance_id: str
    repo: str
    base_commit: str
    fix: list[str]  # normalised fix lines (empty when the task has no patch)
    swesmith: bool
    pr_number: str
    own_shas: set[str] = field(default_factory=set)
    submitted: list[str] = field(default_factory=list)  # the run's own final added lines
    own_blocks: list[OwnBlock] = field(default_factory=list)  # the run's own final diff, as post-image windows
    written: str = ""  # the run's commands so far (whitespace collapsed): what it has typed itself

    @property
    def packages(self) -> set[str]:
        name = (self.repo or self.instance_id).split("/")[-1].split("__")[-1]
        name = re.split(r"\.[0-9a-f]{8}", name)[0].lower()
        name = re.sub(r"-\d+$", "", name)
        out = {name, name.replace("-", "_"), name.replace("_", "-")}
        if name in _PIP_NAMES:
            out.add(_PIP_NAMES[name].lower())
        return {x for x in out if x}


_SWESMITH_ID = re.compile(r"^[\w-]+__[\w.-]+\.[0-9a-f]{8}\.")


def make_task(row: dict[str, object]) -> Task:
    iid = str(row.get("instance_id") or "")
    repo = str(row.get("repo") or "")
    patch = str(row.get("patch") or "")
    swesmith = bool(_SWESMITH_ID.match(iid)) or repo.startswith("swesmith/")
    # SWE-smith's patch introduces the bug: its removed lines are the fix (input-formats §3.1).
    fix = diff_side(patch, "-" if swesmith else "+")
    m = re.search(r"(?:\.pr_|-)(\d+)$", iid)
    return Task(iid, repo, str(row.get("base_commit") or ""), fix, swesmith, m.group(1) if m else "")


def _git_parts(argv: list[str]) -> tuple[str, list[str]]:
    """(subcommand, its args) of a git argv, global options skipped."""
    i = 1
    while i < len(argv) and argv[i].startswith("-"):
        i += 2 if argv[i] in _GIT_GLOBAL_ARG else 1
    if i >= len(argv):
        return "", []
    return argv[i], argv[i + 1:]


def _refs_of(arg: str) -> list[str]:
    base = arg.split(":", 1)[0]
    return [r for r in re.split(r"\.{2,3}", base) if r]


def foreign_ref(arg: str, task: Task) -> bool:
    """Does ``arg`` name an object other than the run's own checkout and own commits?"""
    for ref in _refs_of(arg):
        core = re.sub(r"(?:[~^]\d*)+$", "", ref)
        if _RELATIVE.match(ref) or ref in _SPECIAL or core in _SPECIAL:
            return True
        if _REMOTE.match(core) or _TAG.match(core):
            return True
        if _SHA.match(core):
            own = (task.base_commit and task.base_commit.startswith(core)) or any(
                s.startswith(core) or core.startswith(s) for s in task.own_shas)
            if not own or core != re.sub(r"(?:[~^]\d*)+$", "", ref):  # <own sha>~1 is beyond it
                return True
    return False


def classify(seg: Segment, task: Task) -> str | None:
    """The leak kind a simple command attempts, or None."""
    argv = seg.argv
    prog = argv[0].rsplit("/", 1)[-1]
    if prog == "git":
        sub, args = _git_parts(argv)
        opts = [a for a in args if a.startswith("-")]
        pos = [a for a in args[: args.index("--")] if not a.startswith("-")] if "--" in args else \
            [a for a in args if not a.startswith("-")]
        if sub in ("log", "rev-list", "shortlog", "whatchanged"):
            if any(_HISTORY_FLAG.match(o) for o in opts) or any(_REMOTE.match(p) or _TAG.match(p) for p in pos):
                return "git_history"
            return None
        if sub == "reflog":
            return "git_history"
        if sub == "branch":
            if any(o in ("--all", "--remotes") or (re.match(r"^-[a-zA-Z]+$", o) and set(o[1:]) & {"a", "r"})
                   for o in opts):
                return "git_history"
            return None
        if sub in ("fetch", "pull", "clone"):
            if sub == "clone" and not any("://" in p or p.startswith("git@") for p in pos):
                return None  # a local copy of the own checkout
            return "network_fetch"
        if sub == "remote" and args and args[0] in ("add", "update"):  # set-url/-v transfer nothing
            return "network_fetch"
        if sub == "cherry-pick":
            return "foreign_object" if pos else None
        if sub in ("show", "diff", "checkout", "format-patch", "cat-file", "switch", "reset", "merge",
                   "rebase", "archive"):
            return "foreign_object" if any(foreign_ref(p, task) for p in pos) else None
        if sub == "restore":
            src = [a.split("=", 1)[1] for a in args if a.startswith("--source=")]
            src += [args[i + 1] for i, a in enumerate(args[:-1]) if a in ("--source", "-s")]
            return "foreign_object" if any(foreign_ref(s, task) for s in src) else None
        return None
    if prog in ("pip", "pip3") or re.match(r"^pip[0-9.]*$", prog) or (
            prog.startswith("python") and argv[1:3] == ["-m", "pip"]) or (prog == "uv" and argv[1:2] == ["pip"]):
        rest = argv[argv.index("pip") + 1:] if "pip" in argv[1:] else argv[1:]
        if not rest:
            return None
        if rest[0] == "download":
            return "package_fetch"
        if rest[0] == "install":
            pkgs = [a for a in rest[1:] if not a.startswith("-")]
            if any(a.startswith(("git+", "hg+")) or _UPSTREAM.search(a) for a in pkgs):
                return "package_fetch"
            names = {re.split(r"[<>=!~\[;@ ]", a, maxsplit=1)[0].lower().replace("_", "-") for a in pkgs}
            if names & {p.replace("_", "-") for p in task.packages}:
                return "package_fetch"
        return None
    if prog in ("poetry", "conda") and len(argv) > 2 and argv[1] in ("add", "install"):
        names = {re.split(r"[<>=!~\[@ ]", a, maxsplit=1)[0].lower() for a in argv[2:] if not a.startswith("-")}
        return "package_fetch" if names & task.packages else None
    text = seg.text + "\n" + seg.heredoc
    if _UPSTREAM.search(text) and (prog in ("curl", "wget", "http", "https", "httpie", "aria2c")
                                   or (prog.startswith("python") and _PY_FETCH.search(text))
                                   or (prog in ("node", "ruby", "perl") and _FETCH_VERB.search(text))):
        return "network_fetch"
    if prog in _READERS and re.search(r"(?:site|dist)-packages/([A-Za-z0-9_.-]+)", seg.text):
        found = {m.lower() for m in re.findall(r"(?:site|dist)-packages/([A-Za-z0-9_-]+)", seg.text)}
        return "site_packages" if found & set(task.packages) else None
    return None


# ----------------------------------------------------------------------------------------------
# Confirmation


_FETCH_ERROR = re.compile(
    r"(?i)404[: ]+not found|\b(?:401|403|404|429|500|502|503)\b[^\n]{0,40}(?:error|forbidden|not found|unauthori)|"
    r"could not resolve|failed to connect|connection (?:refused|timed out|reset)|temporary failure in name|"
    r"network is unreachable|name or service not known|urlopen error|max retries exceeded|connectionerror|"
    r"^fatal:|^error:|^curl: \(\d+\)|unable to access|repository not found|could not read from remote|"
    r"rate limit exceeded|bad credentials|permission denied|\"message\":\s*\"not found\"|no such file|"
    r"command not found|ERROR: |Traceback \(most recent call last\)|timed out", re.M)
_PKG_OK = re.compile(r"Successfully (?:installed|downloaded)|^Saved \S+|^Installed \d+ package", re.M)
_BUG_SUBJECT = re.compile(
    r"(?m)^(?:[*|\\/ ]*(?:commit )?[0-9a-f]{7,40}\s+(?:\([^)\n]*\)\s+)?|\s{4})(?:Bug Patch|Remove F2P Tests)\s*$")
_GIT_TRANSFER = re.compile(
    r"(?m)^From \S+$|^\s*\* \[new (?:branch|tag|ref)\]|^\s*[0-9a-f]{7,}\.\.[0-9a-f]{7,}\s+\S+\s+->|"
    r"^Cloning into |^Receiving objects: |^Unpacking objects: |^Updating [0-9a-f]{7,}\.\.[0-9a-f]{7,}$|^Fast-forward$")
_OWN_COMMIT = re.compile(r"(?m)^\[[^\]\s]+(?: \(root-commit\))? ([0-9a-f]{7,40})\]")


OWN_CONTEXT = 2  # context lines kept on each side of an added block


@dataclass
class OwnBlock:
    added: list[str]  # normalised distinctive added lines of the block
    window: list[str]  # normalised post-image: <= OWN_CONTEXT context lines, the added lines, <= OWN_CONTEXT after


def own_blocks(diff: str) -> list[OwnBlock]:
    """The run's own diff as post-image windows: each run of added lines with the context around it.

    A window is what a copy of the fixed file (an installed copy, a later commit, a fetched file) shows
    as consecutive lines, and what the unfixed checkout does not.
    """
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
        i = 0
        while i < len(post):
            if not post[i][1]:
                i += 1
                continue
            j = i
            while j < len(post) and post[j][1]:
                j += 1
            added = [x for x, _ in post[i:j] if distinctive(x)]
            if added:
                window = [x for x, _ in post[max(0, i - OWN_CONTEXT):min(len(post), j + OWN_CONTEXT)]]
                blocks.append(OwnBlock(added, window))
            i = j
    return blocks


def _obs_lines(output: str) -> list[str]:
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


def _has_run(seq: list[str], window: list[str]) -> bool:
    k = len(window)
    first = window[0]
    return any(seq[i:i + k] == window for i, x in enumerate(seq) if x == first)


def own_fix_seen(task: Task, output: str) -> bool:
    """Did this observation show the run's own final fix before the run typed it (research §4.3)?"""
    blocks = [b for b in task.own_blocks if not all(x in task.written for x in b.added)]
    total = sum(len(b.added) for b in task.own_blocks)
    if not blocks or not output:
        return False
    seq = _obs_lines(output)
    seen = sum(len(b.added) for b in blocks if _has_run(seq, b.window))
    return seen > 0 and seen / total >= OWN_DIFF_CONTAINMENT


_PLAIN_DIFF = re.compile(r"^git (?:--no-pager )?diff(?: (?:HEAD|--cached|--staged|--no-color|-U\d+))*$")


def own_final_diff(commands: list[str], outputs: list[str]) -> str:
    """The run's own final diff: the submission's output, else the last plain ``git diff`` it printed."""
    if commands and SUBMIT_MARK in commands[-1] and len(outputs) >= len(commands):
        sub = outputs[len(commands) - 1] or ""
        if "\n@@ " in sub:
            return sub
    for cmd, out in zip(reversed(commands), reversed(outputs[:len(commands)]), strict=False):
        if out and "\n@@ " in out and any(_PLAIN_DIFF.match(" ".join(seg.argv)) for seg in split_command(cmd)):
            return out
    return ""


def delivered_content(output: str, rc: int | None) -> bool:
    return (rc is None or rc == 0) and bool(output.strip()) and not _FETCH_ERROR.search(output)


def confirm(kind: str, seg: Segment, output: str, rc: int | None, task: Task) -> tuple[bool, str]:
    """(confirmed, final kind) for one attempted command and its observation."""
    if _BUG_SUBJECT.search(output):
        return "diff --git" in output or containment(task.fix, line_set(output)) >= FIX_CONTAINMENT, "bug_patch"
    lines = line_set(output) if output else set()
    fix_hit = bool(task.fix) and containment(task.fix, lines) >= FIX_CONTAINMENT
    own_hit = own_fix_seen(task, output)
    if kind == "git_history":
        pr = bool(task.pr_number) and re.search(
            rf"(?:#|pull/|PR[ -]?|pull request #?){task.pr_number}\b", output) is not None
        return pr or fix_hit or own_hit, kind
    if kind == "foreign_object":
        if task.swesmith and fix_hit and any(_RELATIVE.match(r) for a in seg.argv for r in _refs_of(a)):
            return True, "bug_patch"
        if fix_hit or own_hit:
            return True, kind
        # checkout/restore/cherry-pick print nothing: the object landed in the tree if the final diff has the fix.
        sub = _git_parts(seg.argv)[0]
        writes = sub in ("checkout", "restore", "cherry-pick", "reset", "merge", "rebase", "switch")
        if writes and bool(task.fix) and not _FETCH_ERROR.search(output):
            return containment(task.fix, set(task.submitted)) >= FIX_CONTAINMENT, kind
        return False, kind
    if kind == "network_fetch":
        if seg.argv[0] == "git":  # other commands of the chain print too (`git remote -v`): git's own words count
            return (rc in (None, 0) and bool(_GIT_TRANSFER.search(output))) or fix_hit or own_hit, kind
        return delivered_content(output, rc) or fix_hit or own_hit, kind
    if kind == "package_fetch":
        return bool(_PKG_OK.search(output)) and not re.search(r"(?m)^ERROR:", output), kind
    if kind == "site_packages":
        copies = seg.argv[0] in ("cp", "rsync") and rc in (None, 0) and not _FETCH_ERROR.search(output)
        if seg.argv[0] in ("diff", "colordiff", "cmp") and rc == 1:
            rc = 0  # diff's "the files differ": its output is the difference
        return (delivered_content(output, rc) and (fix_hit or own_hit)) or copies, kind
    return False, kind


@dataclass
class Verdict:
    kind: str | None = None
    detail: str = ""
    attempts: set[str] = field(default_factory=set)


# A command can only be classified as an attempt if one of its simple commands is git, a package
# manager, a URL fetch or a site-packages reader. shlex only *removes* quotes and backslashes, so
# these words survive in the command with those characters deleted: an exact pre-filter that spares
# the (slow, pure-Python) shlex split of the ~90% of commands that are ls/cat/sed/python/pytest.
_MAYBE_ATTEMPT = re.compile(r"git|pip|poetry|conda|://|-packages/")
_UNQUOTE = str.maketrans("", "", "'\"\\")


def maybe_attempt(cmd: str) -> bool:
    """False only when no simple command of ``cmd`` can be classified (see :func:`classify`)."""
    return _MAYBE_ATTEMPT.search(cmd.translate(_UNQUOTE)) is not None


def scan_run(row: dict[str, object], maybe: list[bool] | None = None, bracket: list[bool] | None = None
             ) -> Verdict:
    """Both steps for one run (a dict with instance_id, repo, base_commit, patch, commands, outputs).

    ``maybe`` (per command, :func:`maybe_attempt`) and ``bracket`` (per output, a line starts with
    ``[``) are the batch's vectorised pre-filters; computed here when not given.
    """
    task = make_task(row)
    commands: list[str] = list(row.get("commands") or [])  # type: ignore[call-overload]
    outputs: list[str] = list(row.get("outputs") or [])  # type: ignore[call-overload]
    rcs: list[int | None] = list(row.get("returncodes") or [])  # type: ignore[call-overload]
    if commands and SUBMIT_MARK in commands[-1] and len(outputs) >= len(commands):
        task.submitted = diff_side(outputs[len(commands) - 1] or "", "+")
    task.own_blocks = own_blocks(own_final_diff(commands, outputs))
    verdict = Verdict()
    written: list[str] = []  # raw; whitespace-collapsed into task.written only when a rule needs it
    for i, cmd in enumerate(commands):
        out = (outputs[i] if i < len(outputs) else "") or ""
        rc = rcs[i] if i < len(rcs) else None
        if not cmd or SUBMIT_MARK in cmd:
            continue
        written.append(cmd)
        may = maybe[i] if maybe is not None else maybe_attempt(cmd)
        for seg in split_command(cmd) if may else ():
            kind = classify(seg, task)
            is_git = seg.argv[0] == "git"
            if kind is None and not (is_git and _BUG_SUBJECT.search(out)):
                continue
            task.written = "\n".join(_WS.sub(" ", c) for c in written)
            ok, final = confirm(kind or "bug_patch", seg, out, rc, task)
            if ok:
                verdict.kind = final
                verdict.detail = f"turn={i} cmd={cmd[:DETAIL_CMD_CHARS]}"
                return verdict
            verdict.attempts.add(final)
        # _OWN_COMMIT needs a line starting with "[": skip its (slow, line-anchored) scan elsewhere
        if bracket[i] if bracket is not None and i < len(bracket) else (out.startswith("[") or "\n[" in out):
            task.own_shas.update(_OWN_COMMIT.findall(out))
    return verdict


def _pre_mask(batch: pl.DataFrame, pattern: str) -> pl.Series:
    return batch.select(
        pl.col("commands").list.eval(pl.element().str.contains(pattern).fill_null(False)).list.any()
        .fill_null(False).alias("m"))["m"]


def _prefilters(batch: pl.DataFrame) -> pl.DataFrame:
    """Per command :func:`maybe_attempt` and per output "a line starts with ``[``", in Rust over the batch."""
    return batch.select(
        pl.col("commands").list.eval(pl.element().str.replace_all(r"['\"\\]", "")
                                     .str.contains(_MAYBE_ATTEMPT.pattern).fill_null(False)).alias("maybe"),
        pl.col("outputs").list.eval(pl.element().str.contains(r"(?m)^\[").fill_null(False)).alias("bracket"),
    )


class SolutionLeak(Stage):
    name = "solution_leak"
    reasons = ("git_history", "foreign_object", "bug_patch", "network_fetch", "package_fetch", "site_packages")
    namespaces = ("solution_leak_attempt",)  # attempted, unconfirmed, kept
    corpus_level = True

    def process(self, batch: pl.DataFrame) -> StageOutput[pl.DataFrame]:
        counters: Counter[str] = Counter()
        flags = _prefilters(batch)
        # A run none of whose commands can be classified has neither a leak nor an attempt.
        cand = _pre_mask(batch, _PRE) & flags["maybe"].list.any().fill_null(False)
        reasons = [""] * batch.height
        details = [""] * batch.height
        drop = np.zeros(batch.height, dtype=bool)
        cols = ["instance_id", "repo", "base_commit", "patch", "commands", "outputs", "returncodes"]
        idx = cand.arg_true().to_list()
        rows = batch[idx].select(cols).iter_rows(named=True)
        for i, row, fl in zip(idx, rows, flags[idx].iter_rows(named=True), strict=True):
            v = scan_run(row, fl["maybe"], fl["bracket"])
            if v.kind:
                drop[i], reasons[i], details[i] = True, v.kind, v.detail
            else:
                counters.update(f"solution_leak_attempt/{k}" for k in v.attempts)
        out = self.split(batch, pl.Series(drop), pl.Series(reasons), pl.Series(details))
        out.counters.update(counters)
        return out


# ----------------------------------------------------------------------------------------------
# Benchmark leaks


_ID_TOKEN = r"[A-Za-z0-9][A-Za-z0-9_\-]*__[A-Za-z0-9_.\-]*?-\d+"
_WORD = r"[a-z0-9_]+"
_MULT = GRAM_MIX


def _repo_key(repo: str) -> str:
    r = repo.removeprefix("swesmith/")
    r = r.replace("/", "__")
    return re.split(r"\.[0-9a-f]{8}$", r)[0].lower()


def _token_hashes_regex(texts: pl.Series) -> tuple[np.ndarray, np.ndarray]:
    """(hashes of all word tokens in order, token count per text): lowercase ``[a-z0-9_]+`` runs.

    The specification of :func:`_token_hashes`, and its path for texts with non-ASCII characters
    (Unicode lowercasing turns some of them into ASCII letters: ``K`` (Kelvin) -> ``k``)."""
    toks = texts.fill_null("").str.to_lowercase().str.extract_all(_WORD)
    counts = toks.list.len().fill_null(0).to_numpy().astype(np.int64)
    flat = toks.explode().drop_nulls()  # an empty list explodes to one null: not a token
    return flat.hash(seed=TOKEN_SEED).to_numpy(), counts


def _utf8_buffers(texts: pl.Series) -> tuple[np.ndarray, np.ndarray]:
    """The UTF-8 bytes of all texts back to back and their offsets (nulls are empty); zero copy."""
    arr = texts.cast(pl.Utf8).fill_null("").rechunk().to_arrow()
    if arr.type != pa.large_string():
        arr = arr.cast(pa.large_string())
    bufs = arr.buffers()
    off = np.frombuffer(bufs[1], dtype=np.int64)[arr.offset: arr.offset + len(arr) + 1]
    data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None else np.zeros(0, dtype=np.uint8)
    return data[off[0]: off[-1]], off - off[0]


def _token_hashes(texts: pl.Series) -> tuple[np.ndarray, np.ndarray]:
    """Same result as :func:`_token_hashes_regex`, ~1.3x less CPU: pure-ASCII texts are tokenised on
    their bytes (numpy) and the tokens' lowercased bytes laid out as one Arrow string array, so each
    token is hashed by the very same polars hash; texts with non-ASCII bytes take the regex path."""
    data, off = _utf8_buffers(texts)
    n_texts = len(off) - 1
    if n_texts == 0:
        return np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=np.int64)
    lens_t = np.diff(off)
    # Largest byte of each text (a zero byte appended so every start is a valid index; an empty
    # text's reduceat value is a neighbour's byte, hence the length mask).
    top = np.maximum.reduceat(np.append(data, np.uint8(0)), off[:-1])
    other = (top >= 0x80) & (lens_t > 0)  # texts holding a non-ASCII byte
    low = data - np.uint8(65)
    np.less(low, 26, out=(upper := np.empty(len(data), dtype=bool)))
    np.add(data, upper.view(np.uint8) << np.uint8(5), out=low)  # ASCII lowercase
    isw = (low - np.uint8(97)) < 26
    isw |= (data - np.uint8(48)) < 10
    isw |= data == 95
    if other.any():  # their bytes are no word bytes here: those texts are tokenised by the regex
        isw &= ~np.repeat(other, lens_t)
    # Token = maximal run of word bytes that does not cross a text boundary.
    edge = np.empty(len(data) + 1, dtype=bool)
    edge[0] = edge[-1] = True
    np.not_equal(isw[1:], isw[:-1], out=edge[1:-1])
    edge[off] = True
    cuts = np.flatnonzero(edge)
    starts = cuts[:-1]
    word = np.take(isw, starts) if len(starts) else np.zeros(0, dtype=bool)
    starts, ends = np.compress(word, starts), np.compress(word, cuts[1:])
    lens = ends - starts
    tok_off = np.zeros(len(lens) + 1, dtype=np.int64)
    np.cumsum(lens, out=tok_off[1:])
    tokens = pa.LargeStringArray.from_buffers(len(lens), pa.py_buffer(tok_off),
                                              pa.py_buffer(np.compress(isw, low)))
    h = pl.Series(tokens, dtype=pl.Utf8).hash(seed=TOKEN_SEED).to_numpy() if len(lens) else np.zeros(0, dtype=np.uint64)
    counts = np.diff(np.searchsorted(starts, off)).astype(np.int64)
    if not other.any():
        return h, counts
    # Splice the regex path's tokens of the non-ASCII texts in, keeping text order.
    idx = np.flatnonzero(other)
    h2, c2 = _token_hashes_regex(texts.gather(idx))
    counts[idx] = c2
    first = np.cumsum(counts) - counts  # first output token of each text
    out = np.empty(int(counts.sum()), dtype=np.uint64)
    fast = ~other
    cf = counts * fast
    fast_first = np.cumsum(cf) - cf
    out[np.arange(len(h)) + np.repeat((first - fast_first)[fast], counts[fast])] = h
    c2s = np.cumsum(c2) - c2
    out[np.arange(len(h2)) + np.repeat(first[idx] - c2s, c2)] = h2
    return out, counts


def _gram_hashes(h: np.ndarray, pos: np.ndarray, n: int) -> np.ndarray:
    """Hash of the word n-gram starting at each token position ``pos`` (token hashes ``h``)."""
    with np.errstate(over="ignore"):
        g = h[pos] * _MULT[0]
        for k in range(1, n):
            g = g + h[pos + k] * _MULT[k % len(_MULT)]
            g ^= g >> np.uint64(29)
    out: np.ndarray = g
    return out


def _gram_starts(doc: np.ndarray, n: int, usable: np.ndarray | None = None) -> np.ndarray:
    """Token positions starting an n-gram inside one document (``doc`` sorted, one per token) made only
    of ``usable`` tokens (all tokens when None)."""
    m = len(doc) - n + 1
    if m <= 0:
        return np.zeros(0, dtype=np.int64)
    ok = doc[:m] == doc[n - 1:]
    if usable is not None:
        bad = np.concatenate([[0], np.cumsum(~usable)])  # unusable tokens before each position
        ok &= bad[n:n + m] == bad[:m]
    return np.flatnonzero(ok)


BITMAP_BITS = 23  # 8 MB per bitmap; ~3% of non-members pass for the 250k statement n-grams


def _bitmap(hashes: np.ndarray) -> np.ndarray:
    """A one-hash Bloom filter of 64-bit hashes: no false negatives, a few false positives."""
    bits = np.zeros(1 << BITMAP_BITS, dtype=bool)
    bits[(hashes & np.uint64((1 << BITMAP_BITS) - 1)).astype(np.int64)] = True
    return bits


def _maybe_in(bits: np.ndarray, hashes: np.ndarray) -> np.ndarray:
    return bits[(hashes & np.uint64((1 << BITMAP_BITS) - 1)).astype(np.int64)]


def _is_in_sorted(hashes: np.ndarray, sorted_set: np.ndarray) -> np.ndarray:
    if len(sorted_set) == 0:
        return np.zeros(len(hashes), dtype=bool)
    i = np.minimum(np.searchsorted(sorted_set, hashes), len(sorted_set) - 1)
    found: np.ndarray = sorted_set[i] == hashes
    return found


_PY_QUOTE_HEAD = r"^[A-Za-z_][A-Za-z0-9_]*\s*=\s*[rbuRBU]?(?:\'\'\'|\"\"\")"
_PY_QUOTE_TAIL = r"(?:\'\'\'|\"\"\")[),]*$"


def _norm_lines(x: pl.Expr) -> pl.Expr:
    """Polars twin of :func:`norm_line`, also peeling the triple quotes that wrap an edit heredoc's text."""
    return (x.str.replace(r"^(?:\S+?:\d+[:-]|\s*\d+\t)?\s*[+-]?", "")
            .str.replace_all(r"\s+", " ").str.strip_chars()
            .str.replace(_PY_QUOTE_HEAD, "").str.replace(_PY_QUOTE_TAIL, "").str.strip_chars())


TASK, ACTIONS, OUTPUTS = 0, 1, 2  # parts of a run's text, in the order they are concatenated


@dataclass
class BatchLines:
    """A batch's text as lines, each distinct line stored (and tokenised, normalised) once.

    A run's text is ``task + "\n" + actions + "\n" + outputs``; its lines are the rows of ``doc``,
    ``part`` and ``lid`` in order; ``lid`` points into ``distinct``. Agents print the same files, test
    logs and listings again and again, so a batch has ~3x fewer distinct lines than lines, and no
    rule here looks across a line break except the statement n-grams, which are rebuilt from per-line
    tokens (a line break is never part of a word, so tokens never cross one).
    """

    doc: np.ndarray  # u32 run index per line
    part: np.ndarray  # i8 TASK / ACTIONS / OUTPUTS per line
    lid: np.ndarray  # u32 distinct-line index per line
    distinct: pl.Series  # the distinct lines

    @classmethod
    def of(cls, texts: pl.DataFrame) -> BatchLines:
        lines = (texts.select(pl.concat_list("task", "actions", "outputs").alias("x"),
                              pl.lit([TASK, ACTIONS, OUTPUTS], dtype=pl.List(pl.Int8)).alias("part"))
                 .with_row_index("doc").explode("x", "part")
                 .with_columns(pl.col("x").str.split("\n")).explode("x"))
        distinct = lines.select(pl.col("x").unique(maintain_order=True)).with_row_index("lid")
        lid = lines.select("x").join(distinct, on="x", how="left", maintain_order="left")["lid"]
        return cls(lines["doc"].to_numpy(), lines["part"].to_numpy(), lid.to_numpy(), distinct["x"])

    def frame(self, mask: np.ndarray | None = None) -> pl.DataFrame:
        """(doc, lid) of the lines where ``mask`` holds (all lines when None)."""
        if mask is None:
            return pl.DataFrame({"doc": self.doc, "lid": self.lid})
        return pl.DataFrame({"doc": self.doc[mask], "lid": self.lid[mask]})

    def token_stream(self, vocab_bits: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(doc, token hash, token maybe in the vocabulary bitmap) of every word token of every run in
        order: each distinct line is tokenised once and its tokens gathered wherever the line occurs."""
        h, counts = _token_hashes(self.distinct)
        in_vocab = _maybe_in(vocab_bits, h)
        start = np.cumsum(counts) - counts  # first token of each distinct line in ``h``
        c = counts[self.lid]
        total = int(c.sum())
        out_start = np.cumsum(c) - c
        idx = np.arange(total, dtype=np.int64) + np.repeat(start[self.lid] - out_start, c)
        return np.repeat(self.doc, c), h[idx], in_vocab[idx]


class BenchmarkLeak(Stage):
    name = "benchmark_leak"
    reasons = ("gold_patch", "problem_statement", "instance_id")
    corpus_level = True

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx)
        self.enabled = ctx.benchmarks is not None and ctx.benchmarks.height > 0
        if not self.enabled:
            return
        b = (ctx.benchmarks.select(  # type: ignore[union-attr]
            pl.col("benchmark").cast(pl.Utf8).fill_null(""), pl.col("instance_id").cast(pl.Utf8),
            pl.col("repo").cast(pl.Utf8).fill_null(""), pl.col("base_commit").cast(pl.Utf8).fill_null(""),
            pl.col("problem_statement").cast(pl.Utf8).fill_null(""), pl.col("patch").cast(pl.Utf8).fill_null(""))
            .drop_nulls("instance_id")
            .group_by("instance_id", maintain_order=True).agg(
                pl.col("benchmark").unique(maintain_order=True).str.join(","),
                pl.col("repo").first(), pl.col("base_commit").first(),
                pl.col("problem_statement").sort_by(pl.col("problem_statement").str.len_bytes()).last(),
                pl.col("patch").sort_by(pl.col("patch").str.len_bytes()).last()))
        self.inst = b.with_row_index("inst").with_columns(
            pl.col("repo").map_elements(_repo_key, return_dtype=pl.Utf8).alias("repo_key"))
        self.ids = self.inst.select("instance_id", "inst")
        # Gold patch: distinctive added lines, hashed exactly like run lines.
        gold = [(i, ln) for i, p in enumerate(self.inst["patch"].to_list()) for ln in diff_side(p, "+")]
        g = pl.DataFrame({"inst": [i for i, _ in gold], "x": [x for _, x in gold]},
                         schema={"inst": pl.UInt32, "x": pl.Utf8})
        g = g.select("inst", _norm_lines(pl.lit("+") + pl.col("x")).hash(seed=LINE_SEED).alias("h")).unique()
        self.gold_total = g.group_by("inst").len("total").filter(pl.col("total") >= 2)
        self.gold = g.join(self.gold_total.select("inst"), on="inst")
        # One distinctive added line is too weak alone: such a patch matches only as a diff, its line as
        # an addition (``+line``) in a text that also names the gold patch's file (a printed patch).
        one = g.group_by("inst").len("total").filter(pl.col("total") == 1).select("inst")
        self.small = g.join(one, on="inst")
        self.small_paths = {i: re.findall(r"(?m)^\+\+\+ b/(\S+)", p)
                            for i, p in enumerate(self.inst["patch"].to_list())}
        # Statements: 8-gram hashes; boilerplate n-grams (in > MAX_GRAM_DF statements) are dropped.
        h, counts = _token_hashes(self.inst["problem_statement"])
        doc = np.repeat(np.arange(len(counts), dtype=np.uint32), counts)
        pos = _gram_starts(doc, STATEMENT_NGRAM)
        at = pl.DataFrame({"inst": doc[pos], "g": _gram_hashes(h, pos, STATEMENT_NGRAM), "p": pos})
        s = at.select("inst", "g").unique()
        df = s.group_by("g").len("df")
        s = s.join(df.filter(pl.col("df") <= MAX_GRAM_DF).select("g"), on="g")
        self.stmt_total = s.group_by("inst").len("total").filter(pl.col("total") >= STATEMENT_MIN_NGRAMS)
        self.stmt = s.join(self.stmt_total.select("inst"), on="inst")
        self.stmt_grams = self.stmt["g"].unique().sort().to_numpy()  # sorted, for exact membership
        self.stmt_bits = _bitmap(self.stmt_grams)
        # The tokens of those n-grams: a run's n-gram holding any other token cannot match, so only
        # windows of vocabulary tokens are hashed and looked up (most windows of code and logs are not).
        kept = at.join(self.stmt, on=["inst", "g"], how="semi")["p"].to_numpy()
        covered = np.zeros(len(h), dtype=bool)
        for k in range(STATEMENT_NGRAM):
            covered[kept + k] = True
        self.vocab_bits = _bitmap(h[covered])

    @staticmethod
    def _texts(batch: pl.DataFrame) -> pl.DataFrame:
        """All text of a run except the system prompt; observations once (outputs, untruncated)."""
        role = pl.element().struct.field("role")
        content = pl.element().struct.field("content")
        return batch.select(
            actions=pl.concat_str([
                pl.col("messages").list.eval(content.filter(role == "assistant")).list.join("\n"),
                pl.col("commands").list.join("\n")], separator="\n", ignore_nulls=True),
            task=pl.col("messages").list.eval(content.filter(role != "system")).list.first().fill_null(""),
            outputs=pl.col("outputs").list.join("\n").fill_null(""),
        )

    def process(self, batch: pl.DataFrame) -> StageOutput[pl.DataFrame]:
        counters: Counter[str] = Counter()
        if not self.enabled:
            counters["skipped"] += batch.height
            return StageOutput(batch, empty(DROPS), counters)
        t = self._texts(batch)
        lines = BatchLines.of(t)
        distinct = lines.distinct
        runs = batch.select(
            pl.col("instance_id").fill_null(""), pl.col("base_commit").fill_null(""),
            pl.col("repo").fill_null("").map_elements(_repo_key, return_dtype=pl.Utf8).alias("repo_key"),
        ).with_row_index("doc")
        hits: list[pl.DataFrame] = []  # doc, inst, reason, score

        # 1. instance ids as tokens (an id never spans a line; every id holds "__")
        has_id = distinct.str.contains("__", literal=True).to_numpy()
        id_lines = pl.DataFrame({"lid": np.flatnonzero(has_id).astype(np.uint32),
                                 "tok": distinct.filter(has_id).str.extract_all(_ID_TOKEN)})
        ids = (id_lines.explode("tok").drop_nulls().join(self.ids, left_on="tok", right_on="instance_id")
               .join(lines.frame(has_id[lines.lid]), on="lid").select("doc", "inst").unique())
        hits.append(ids.select("doc", "inst", pl.lit("instance_id").alias("reason"), pl.lit(1.0).alias("score")))

        # 2. gold patch added lines: diff additions anywhere, or verbatim in the agent's own actions.
        # Only those lines are normalised: ``+`` lines of task and outputs, every line of the actions.
        raw_plus = (distinct.str.starts_with("+") & ~distinct.str.starts_with("+++")).to_numpy()
        plus = raw_plus[lines.lid] & (lines.part != ACTIONS)
        wanted = plus | (lines.part == ACTIONS)
        need = np.unique(lines.lid[wanted])
        normed = (pl.DataFrame({"lid": need.astype(np.uint32), "x": distinct.gather(need)})
                  .with_columns(_norm_lines(pl.col("x")).alias("x")).filter(pl.col("x").str.len_chars() >= MIN_DISTINCTIVE_CHARS)
                  .select("lid", pl.col("x").hash(seed=LINE_SEED).alias("h")))
        if self.gold.height:
            m = (lines.frame(wanted).join(normed, on="lid").select("doc", "h").unique().join(self.gold, on="h")
                 .group_by("doc", "inst").len("n").join(self.gold_total, on="inst")
                 .filter((pl.col("n") >= pl.min_horizontal(pl.col("total"), pl.lit(GOLD_MIN_LINES)))
                         & (pl.col("n") / pl.col("total") >= GOLD_CONTAINMENT)))
            hits.append(m.select("doc", "inst", pl.lit("gold_patch").alias("reason"),
                                 (pl.col("n") / pl.col("total")).alias("score")))
        if self.small.height:
            cand = (lines.frame(plus).join(normed, on="lid").select("doc", "h").unique().join(self.small, on="h")
                    .select("doc", "inst").unique())
            # few candidates; a path (no whitespace) never spans the "\n" between the parts
            texts = {d: t.row(d) for d in cand["doc"].unique().to_list()}
            pairs = [(d, i) for d, i in cand.iter_rows()
                     if any(path in x for path in self.small_paths[i] for x in texts[d])]
            hits.append(pl.DataFrame({"doc": [d for d, _ in pairs], "inst": [i for _, i in pairs],
                                      "reason": ["gold_patch"] * len(pairs), "score": [1.0] * len(pairs)},
                                     schema={"doc": pl.UInt32, "inst": pl.UInt32, "reason": pl.Utf8,
                                             "score": pl.Float64}))

        # 3. problem statement 8-gram containment
        if self.stmt.height:
            doc, h, usable = lines.token_stream(self.vocab_bits)
            pos = _gram_starts(doc, STATEMENT_NGRAM, usable)
            g = _gram_hashes(h, pos, STATEMENT_NGRAM)
            maybe = _maybe_in(self.stmt_bits, g)  # cheap filter first: most n-grams match nothing
            doc, g = doc[pos][maybe], g[maybe]
            hit = _is_in_sorted(g, self.stmt_grams)
            grams = pl.DataFrame({"doc": doc[hit], "g": g[hit]}, schema={"doc": pl.UInt32, "g": pl.UInt64}).unique()
            m = (grams.join(self.stmt, on="g").group_by("doc", "inst").len("n").join(self.stmt_total, on="inst")
                 .with_columns(score=pl.col("n") / pl.col("total"))
                 .filter(pl.col("score") >= STATEMENT_CONTAINMENT))
            hits.append(m.select("doc", "inst", pl.lit("problem_statement").alias("reason"), "score"))

        allh = pl.concat([h.with_columns(pl.col("doc").cast(pl.UInt32), pl.col("inst").cast(pl.UInt32),
                                         pl.col("score").cast(pl.Float64)) for h in hits])
        allh = (allh.join(runs, on="doc")
                .join(self.inst.select("inst", pl.col("instance_id").alias("b_id"), "benchmark",
                                       pl.col("repo_key").alias("b_repo"), pl.col("base_commit").alias("b_commit")),
                      on="inst"))
        # The run's own task being this instance is task_dedup's business, not a leak.
        same = (pl.col("instance_id") == pl.col("b_id")) | (
            (pl.col("base_commit") != "") & (pl.col("base_commit") == pl.col("b_commit"))
            & (pl.col("repo_key") == pl.col("b_repo")))
        order = pl.col("reason").replace_strict({"gold_patch": 0, "problem_statement": 1, "instance_id": 2},
                                                return_dtype=pl.Int8)
        best = (allh.filter(~same).sort(["doc", order, pl.col("score")], descending=[False, False, True])
                .group_by("doc", maintain_order=True).first())
        reason = [""] * batch.height
        detail = [""] * batch.height
        drop = np.zeros(batch.height, dtype=bool)
        for d, r, bench, bid, score in best.select("doc", "reason", "benchmark", "b_id", "score").iter_rows():
            drop[d], reason[d] = True, r
            detail[d] = f"benchmark={bench} instance={bid} score={score:.2f}"
        return self.split(batch, pl.Series(drop), pl.Series(reason), pl.Series(detail))
