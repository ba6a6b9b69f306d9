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

The n-gram index is built once per worker; matching is polars tokenising + numpy rolling hashes +
one polars join per batch.
"""

from __future__ import annotations

import re
import shlex
from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import polars as pl

from pipeline.context import Context
from pipeline.stages.base import Stage, StageOutput
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
SUBMIT_MARK = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"

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
    return len(line) >= 12 and not _TRIVIAL.match(line)


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
        try:
            lex = shlex.shlex(line, posix=True, punctuation_chars=";&|()")
            lex.whitespace_split = True
            lex.commenters = "#"
            toks = list(lex)
        except ValueError:
            toks = line.split()
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
KINDS = ("git_history", "foreign_object", "bug_patch", "network_fetch", "package_fetch", "site_packages")


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
        pkgs = {m.lower() for m in re.findall(r"(?:site|dist)-packages/([A-Za-z0-9_-]+)", seg.text)}
        return "site_packages" if pkgs & task.packages else None
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


def scan_run(row: dict[str, object]) -> Verdict:
    """Both steps for one run (a dict with instance_id, repo, base_commit, patch, commands, outputs)."""
    task = make_task(row)
    commands: list[str] = list(row.get("commands") or [])  # type: ignore[call-overload]
    outputs: list[str] = list(row.get("outputs") or [])  # type: ignore[call-overload]
    rcs: list[int | None] = list(row.get("returncodes") or [])  # type: ignore[call-overload]
    if commands and SUBMIT_MARK in commands[-1] and len(outputs) >= len(commands):
        task.submitted = diff_side(outputs[len(commands) - 1] or "", "+")
    task.own_blocks = own_blocks(own_final_diff(commands, outputs))
    verdict = Verdict()
    written: list[str] = []
    for i, cmd in enumerate(commands):
        out = (outputs[i] if i < len(outputs) else "") or ""
        rc = rcs[i] if i < len(rcs) else None
        if not cmd or SUBMIT_MARK in cmd:
            continue
        written.append(_WS.sub(" ", cmd))
        task.written = "\n".join(written)
        for seg in split_command(cmd):
            kind = classify(seg, task)
            is_git = seg.argv[0] == "git"
            if kind is None and not (is_git and _BUG_SUBJECT.search(out)):
                continue
            ok, final = confirm(kind or "bug_patch", seg, out, rc, task)
            if ok:
                verdict.kind = final
                verdict.detail = f"turn={i} cmd={cmd[:DETAIL_CMD_CHARS]}"
                return verdict
            verdict.attempts.add(final)
        task.own_shas.update(_OWN_COMMIT.findall(out))
    return verdict


def _pre_mask(batch: pl.DataFrame, pattern: str) -> pl.Series:
    return batch.select(
        pl.col("commands").list.eval(pl.element().str.contains(pattern).fill_null(False)).list.any()
        .fill_null(False).alias("m"))["m"]


class SolutionLeak(Stage):
    name = "solution_leak"

    def __call__(self, batch: pl.DataFrame) -> StageOutput:
        counters: Counter[str] = Counter()
        if batch.height == 0:
            return StageOutput(batch, empty(DROPS), counters)
        cand = _pre_mask(batch, _PRE)
        reasons = [""] * batch.height
        details = [""] * batch.height
        drop = np.zeros(batch.height, dtype=bool)
        cols = ["instance_id", "repo", "base_commit", "patch", "commands", "outputs", "returncodes"]
        idx = cand.arg_true().to_list()
        for i, row in zip(idx, batch[idx].select(cols).iter_rows(named=True), strict=True):
            v = scan_run(row)
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
_MULT = np.array([0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0xD6E8FEB86659FD93,
                  0xFF51AFD7ED558CCD, 0xC4CEB9FE1A85EC53, 0x94D049BB133111EB, 0xBF58476D1CE4E5B9],
                 dtype=np.uint64)


def _repo_key(repo: str) -> str:
    r = repo.removeprefix("swesmith/")
    r = r.replace("/", "__")
    return re.split(r"\.[0-9a-f]{8}$", r)[0].lower()


def ngram_hashes(docs: pl.Series, n: int = STATEMENT_NGRAM) -> pl.DataFrame:
    """Distinct word n-gram hashes per document: frame (doc: u32, g: u64). Vectorised, no per-token loop."""
    toks = (pl.DataFrame({"t": docs.fill_null("").str.to_lowercase().str.extract_all(_WORD)})
            .with_row_index("doc").explode("t").drop_nulls("t"))
    if toks.height < n:
        return pl.DataFrame(schema={"doc": pl.UInt32, "g": pl.UInt64})
    doc = toks["doc"].to_numpy()
    h = toks["t"].hash(seed=7).to_numpy()
    m = len(h) - n + 1
    with np.errstate(over="ignore"):
        g = h[:m] * _MULT[0]
        for k in range(1, n):
            g = g + h[k:k + m] * _MULT[k % len(_MULT)]
            g ^= g >> np.uint64(29)
    valid = doc[:m] == doc[n - 1:]  # n-gram inside one document
    return pl.DataFrame({"doc": doc[:m][valid], "g": g[valid]}).unique()


_PY_QUOTE_HEAD = r"^[A-Za-z_][A-Za-z0-9_]*\s*=\s*[rbuRBU]?(?:\'\'\'|\"\"\")"
_PY_QUOTE_TAIL = r"(?:\'\'\'|\"\"\")[),]*$"


def _norm_lines(x: pl.Expr) -> pl.Expr:
    """Polars twin of :func:`norm_line`, also peeling the triple quotes that wrap an edit heredoc's text."""
    return (x.str.replace(r"^(?:\S+?:\d+[:-]|\s*\d+\t)?\s*[+-]?", "")
            .str.replace_all(r"\s+", " ").str.strip_chars()
            .str.replace(_PY_QUOTE_HEAD, "").str.replace(_PY_QUOTE_TAIL, "").str.strip_chars())


def _line_table(texts: pl.Series) -> pl.DataFrame:
    """(doc, plus, h) hashes of normalised lines per document; ``plus`` when the line was a diff addition."""
    df = (pl.DataFrame({"x": texts.fill_null("")}).with_row_index("doc")
          .with_columns(pl.col("x").str.split("\n")).explode("x"))
    df = df.with_columns(plus=pl.col("x").str.starts_with("+") & ~pl.col("x").str.starts_with("+++"))
    df = df.with_columns(_norm_lines(pl.col("x")).alias("x")).filter(pl.col("x").str.len_chars() >= 12)
    return df.select("doc", "plus", pl.col("x").hash(seed=11).alias("h"))


class BenchmarkLeak(Stage):
    name = "benchmark_leak"

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
        g = g.select("inst", _norm_lines(pl.lit("+") + pl.col("x")).hash(seed=11).alias("h")).unique()
        self.gold_total = g.group_by("inst").len("total").filter(pl.col("total") >= 2)
        self.gold = g.join(self.gold_total.select("inst"), on="inst")
        # One distinctive added line is too weak alone: such a patch matches only as a diff, its line as
        # an addition (``+line``) in a text that also names the gold patch's file (a printed patch).
        one = g.group_by("inst").len("total").filter(pl.col("total") == 1).select("inst")
        self.small = g.join(one, on="inst")
        self.small_paths = {i: re.findall(r"(?m)^\+\+\+ b/(\S+)", p)
                            for i, p in enumerate(self.inst["patch"].to_list())}
        # Statements: 8-gram hashes; boilerplate n-grams (in > MAX_GRAM_DF statements) are dropped.
        s = ngram_hashes(self.inst["problem_statement"]).rename({"doc": "inst"})
        df = s.group_by("g").len("df")
        s = s.join(df.filter(pl.col("df") <= MAX_GRAM_DF).select("g"), on="g")
        self.stmt_total = s.group_by("inst").len("total").filter(pl.col("total") >= STATEMENT_MIN_NGRAMS)
        self.stmt = s.join(self.stmt_total.select("inst"), on="inst")

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

    def __call__(self, batch: pl.DataFrame) -> StageOutput:
        counters: Counter[str] = Counter()
        if batch.height == 0:
            return StageOutput(batch, empty(DROPS), counters)
        if not self.enabled:
            counters["benchmark_leak/skipped"] += batch.height
            return StageOutput(batch, empty(DROPS), counters)
        t = self._texts(batch)
        everything = t.select(pl.concat_str(["task", "actions", "outputs"], separator="\n")).to_series()
        runs = batch.select(
            pl.col("instance_id").fill_null(""), pl.col("base_commit").fill_null(""),
            pl.col("repo").fill_null("").map_elements(_repo_key, return_dtype=pl.Utf8).alias("repo_key"),
        ).with_row_index("doc")
        hits: list[pl.DataFrame] = []  # doc, inst, reason, score

        # 1. instance ids as tokens
        ids = (pl.DataFrame({"tok": everything.str.extract_all(_ID_TOKEN)}).with_row_index("doc")
               .explode("tok").drop_nulls().unique().join(self.ids, left_on="tok", right_on="instance_id"))
        hits.append(ids.select("doc", "inst", pl.lit("instance_id").alias("reason"), pl.lit(1.0).alias("score")))

        # 2. gold patch added lines: diff additions anywhere, or verbatim in the agent's own actions
        if self.gold.height:
            lines = pl.concat([
                _line_table(t.select(pl.concat_str(["task", "outputs"], separator="\n")).to_series())
                .filter(pl.col("plus")),
                _line_table(t["actions"])])
            m = (lines.select("doc", "h").unique().join(self.gold, on="h")
                 .group_by("doc", "inst").len("n").join(self.gold_total, on="inst")
                 .filter((pl.col("n") >= pl.min_horizontal(pl.col("total"), pl.lit(GOLD_MIN_LINES)))
                         & (pl.col("n") / pl.col("total") >= GOLD_CONTAINMENT)))
            hits.append(m.select("doc", "inst", pl.lit("gold_patch").alias("reason"),
                                 (pl.col("n") / pl.col("total")).alias("score")))
        if self.small.height:
            plus = (_line_table(t.select(pl.concat_str(["task", "outputs"], separator="\n")).to_series())
                    .filter(pl.col("plus")).select("doc", "h").unique().join(self.small, on="h"))
            pairs = [(d, i) for d, i in plus.select("doc", "inst").unique().iter_rows()
                     if any(path in everything[d] for path in self.small_paths[i])]  # few candidates
            hits.append(pl.DataFrame({"doc": [d for d, _ in pairs], "inst": [i for _, i in pairs],
                                      "reason": ["gold_patch"] * len(pairs), "score": [1.0] * len(pairs)},
                                     schema={"doc": pl.UInt32, "inst": pl.UInt32, "reason": pl.Utf8,
                                             "score": pl.Float64}))

        # 3. problem statement 8-gram containment
        if self.stmt.height:
            grams = ngram_hashes(everything)
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
