"""Solution-leak rules: which leak kind a simple command *attempts* (step 1 of the solution-leak stage).

One small function per program family — git, package managers, fetchers, site-packages readers — each
``(Segment, Task) -> kind | None``; :func:`classify` dispatches by program name through :data:`RULES`.
Wrappers are already peeled by :func:`pipeline.text.shell.split_command`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from pipeline.leaks.text import OwnBlock, diff_side
from pipeline.text.ids import SWESMITH_TASK_RE
from pipeline.text.shell import Segment

# Commands whose text matches none of these cannot be classified (the batch pre-filter, in Rust).
PRE = (
    r"git\s|git$|\bgh\s|curl|wget|https?://|urlopen|urllib|requests\.|httpx|aiohttp|http\s|pip[0-9.]*\s|"
    r"uv\s+pip|poetry\s+add|conda\s+install|site-packages|dist-packages"
)
SHA = re.compile(r"^[0-9a-f]{7,40}$")
TAG = re.compile(r"^v?\d+(?:\.\d+)+(?:[-.]?\w+)?$")
REMOTE = re.compile(r"^(?:origin|upstream|remotes?|refs)/")
RELATIVE = re.compile(r"^(?:HEAD|@)(?:[~^]\d*)+$")
_SPECIAL = {"ORIG_HEAD", "FETCH_HEAD", "MERGE_HEAD", "CHERRY_PICK_HEAD", "REBASE_HEAD"}
UPSTREAM = re.compile(
    r"https?://(?:[\w.-]+\.)?(?:github\.com|githubusercontent\.com|gitlab\.com|bitbucket\.org|pypi\.org|"
    r"pythonhosted\.org)\S*|https?://\S+\.(?:patch|diff)\b",
    re.I,
)
_FETCH_VERB = re.compile(
    r"\b(?:curl|wget|http|https|urlopen|urlretrieve|requests\.get|httpx\.get|"
    r"urllib|aiohttp|fetch)\b",
    re.I,
)
_PY_FETCH = re.compile(
    r"urlopen|urlretrieve|requests\.(?:get|post)|httpx\.(?:get|Client)|aiohttp|http\.client"
)
_HISTORY_FLAG = re.compile(
    r"^(?:--all|--branches\b.*|--remotes\b.*|--tags\b.*|--reflog|-g|--walk-reflogs|"
    r"-S.*|-G.*|--grep\b.*|--pickaxe.*|--glob=.*)$"
)
_GIT_GLOBAL_ARG = {"-C", "-c", "--git-dir", "--work-tree"}
_READERS = {
    "cat",
    "sed",
    "head",
    "tail",
    "less",
    "more",
    "grep",
    "rg",
    "diff",
    "cp",
    "rsync",
    "awk",
    "nl",
    "view",
    "vim",
    "vi",
    "python",
    "python3",
    "bat",
    "ag",
    "colordiff",
    "cmp",
}
_FETCHERS = {"curl", "wget", "http", "https", "httpie", "aria2c"}
_PIP_NAMES = {
    "scikit-learn": "sklearn",
    "pillow": "PIL",
    "pyyaml": "yaml",
    "python-dateutil": "dateutil",
    "beautifulsoup4": "bs4",
    "attrs": "attr",
    "pytest-dev": "pytest",
    "scikit-image": "skimage",
    "opencv-python": "cv2",
    "protobuf": "google",
    "msgpack-python": "msgpack",
}


@dataclass
class Task:
    """What the rules know about a run's task, and what the run has done so far."""

    instance_id: str
    repo: str
    base_commit: str
    fix: list[str]  # normalised fix lines (empty when the task has no patch)
    swesmith: bool
    pr_number: str
    own_shas: set[str] = field(default_factory=set)
    submitted: list[str] = field(default_factory=list)  # the run's own final added lines
    own_blocks: list[OwnBlock] = field(
        default_factory=list
    )  # the run's own final diff, as post-image windows
    written: str = ""  # the run's commands so far (whitespace collapsed): what it has typed itself
    stashed: bool = False  # the run made a stash of its own (``git stash``)
    statement: str = ""  # the task text

    @property
    def packages(self) -> set[str]:
        name = (self.repo or self.instance_id).split("/")[-1].split("__")[-1]
        name = re.split(r"\.[0-9a-f]{8}", name)[0].lower()
        name = re.sub(r"-\d+$", "", name)
        out = {name, name.replace("-", "_"), name.replace("_", "-")}
        if name in _PIP_NAMES:
            out.add(_PIP_NAMES[name].lower())
        return {x for x in out if x}


def make_task(row: dict[str, object]) -> Task:
    """The :class:`Task` of a WORK row (instance_id, repo, base_commit, patch)."""
    iid = str(row.get("instance_id") or "")
    repo = str(row.get("repo") or "")
    patch = str(row.get("patch") or "")
    swesmith = bool(SWESMITH_TASK_RE.match(iid)) or repo.startswith("swesmith/")
    # SWE-smith's patch introduces the bug: its removed lines are the fix.
    fix = diff_side(patch, "-" if swesmith else "+")
    m = re.search(r"(?:\.pr_|-)(\d+)$", iid)
    task = Task(iid, repo, str(row.get("base_commit") or ""), fix, swesmith, m.group(1) if m else "")
    task.statement = str(row.get("problem_statement") or "")
    return task


def git_parts(argv: list[str]) -> tuple[str, list[str]]:
    """(subcommand, its args) of a git argv, global options skipped."""
    i = 1
    while i < len(argv) and argv[i].startswith("-"):
        i += 2 if argv[i] in _GIT_GLOBAL_ARG else 1
    if i >= len(argv):
        return "", []
    return argv[i], argv[i + 1 :]


def refs_of(arg: str) -> list[str]:
    """The refs a revision argument names (``a..b``, ``rev:path``)."""
    base = arg.split(":", 1)[0]
    return [r for r in re.split(r"\.{2,3}", base) if r]


def foreign_ref(arg: str, task: Task) -> bool:
    """Does ``arg`` name an object other than the run's own checkout and own commits?"""
    for ref in refs_of(arg):
        core = re.sub(r"(?:[~^]\d*)+$", "", ref)
        if RELATIVE.match(ref) or ref in _SPECIAL or core in _SPECIAL:
            return True
        if REMOTE.match(core) or TAG.match(core):
            return True
        if SHA.match(core):
            own = (task.base_commit and task.base_commit.startswith(core)) or any(
                s.startswith(core) or core.startswith(s) for s in task.own_shas
            )
            if not own or core != re.sub(r"(?:[~^]\d*)+$", "", ref):  # <own sha>~1 is beyond it
                return True
    return False


# ---------------------------------------------------------------------------------------------- git


def _git_history(args: list[str], opts: list[str], pos: list[str], task: Task) -> str | None:
    if any(_HISTORY_FLAG.match(o) for o in opts) or any(REMOTE.match(p) or TAG.match(p) for p in pos):
        return "git_history"
    return None


def _git_branch(args: list[str], opts: list[str], pos: list[str], task: Task) -> str | None:
    if any(
        o in ("--all", "--remotes") or (re.match(r"^-[a-zA-Z]+$", o) and set(o[1:]) & {"a", "r"})
        for o in opts
    ):
        return "git_history"
    return None


def _git_transfer(sub: str) -> Callable[[list[str], list[str], list[str], Task], str | None]:
    def rule(args: list[str], opts: list[str], pos: list[str], task: Task) -> str | None:
        urls = [p for p in pos if "://" in p or p.startswith("git@")]
        if sub == "clone" and not urls:
            return None  # a local copy of the own checkout
        if sub == "clone" and all(_instructed_clone(u, task) for u in urls):
            return None  # the task asks for this clone: it is the run's checkout, not a leak
        return "network_fetch"

    return rule


_CLONE_ASKED = re.compile(r"(?i)\bgit clone\b|\bclone the (?:repo|repository)\b")


def _instructed_clone(url: str, task: Task) -> bool:
    """Does the task text ask the run to clone, naming this repository (``owner/name``)? Such a task
    (set up, package or containerise a repository) starts with no checkout: the clone is its own."""
    m = re.search(r"[:/]([\w.-]+/[\w.-]+?)(?:\.git)?/?$", url)
    return bool(m and task.statement and _CLONE_ASKED.search(task.statement) and m.group(1) in task.statement)


def _git_remote(args: list[str], opts: list[str], pos: list[str], task: Task) -> str | None:
    return "network_fetch" if args and args[0] in ("add", "update") else None  # set-url/-v transfer nothing


def _git_object(args: list[str], opts: list[str], pos: list[str], task: Task) -> str | None:
    return "foreign_object" if any(foreign_ref(p, task) for p in pos) else None


def _git_restore(args: list[str], opts: list[str], pos: list[str], task: Task) -> str | None:
    src = [a.split("=", 1)[1] for a in args if a.startswith("--source=")]
    src += [args[i + 1] for i, a in enumerate(args[:-1]) if a in ("--source", "-s")]
    return "foreign_object" if any(foreign_ref(s, task) for s in src) else None


_STASH_PUSH = frozenset(
    {"push", "save", "-u", "--include-untracked", "-k", "--keep-index", "-m", "--message"}
)


def _git_stash(args: list[str], opts: list[str], pos: list[str], task: Task) -> str | None:
    """``git stash show|apply|pop|branch`` of a stash the run did not make (a foreign object)."""
    verb = args[0] if args else ""
    if verb == "" or verb in _STASH_PUSH:
        task.stashed = True  # the run's own work from here on
        return None
    if verb in ("show", "apply", "pop", "branch") and not task.stashed:
        return "foreign_object"
    return None


_GitRule = Callable[[list[str], list[str], list[str], Task], "str | None"]
GIT_RULES: dict[str, _GitRule] = {
    **dict.fromkeys(("log", "rev-list", "shortlog", "whatchanged"), _git_history),
    "reflog": lambda args, opts, pos, task: "git_history",
    "branch": _git_branch,
    **{sub: _git_transfer(sub) for sub in ("fetch", "pull", "clone")},
    "remote": _git_remote,
    "cherry-pick": lambda args, opts, pos, task: "foreign_object" if pos else None,
    **dict.fromkeys(
        (
            "show",
            "diff",
            "checkout",
            "format-patch",
            "cat-file",
            "switch",
            "reset",
            "merge",
            "rebase",
            "archive",
        ),
        _git_object,
    ),
    "restore": _git_restore,
    "stash": _git_stash,
}


def git_rule(seg: Segment, task: Task) -> str | None:
    """History listings, foreign objects, transfers."""
    sub, args = git_parts(seg.argv)
    rule = GIT_RULES.get(sub)
    if rule is None:
        return None
    opts = [a for a in args if a.startswith("-")]
    head = args[: args.index("--")] if "--" in args else args
    return rule(args, opts, [a for a in head if not a.startswith("-")], task)


# ------------------------------------------------------------------------------ package managers


def pip_rule(seg: Segment, task: Task) -> str | None:
    """``pip download``; ``pip install`` of a VCS/upstream URL or of the task's own package."""
    argv = seg.argv
    rest = argv[argv.index("pip") + 1 :] if "pip" in argv[1:] else argv[1:]
    if not rest:
        return None
    if rest[0] == "download":
        return "package_fetch"
    if rest[0] == "install":
        pkgs = [a for a in rest[1:] if not a.startswith("-")]
        if any(a.startswith(("git+", "hg+")) or UPSTREAM.search(a) for a in pkgs):
            return "package_fetch"
        names = {re.split(r"[<>=!~\[;@ ]", a, maxsplit=1)[0].lower().replace("_", "-") for a in pkgs}
        if names & {p.replace("_", "-") for p in task.packages}:
            return "package_fetch"
    return None


def poetry_conda_rule(seg: Segment, task: Task) -> str | None:
    """``poetry add`` / ``conda install`` of the task's own package."""
    names = {
        re.split(r"[<>=!~\[@ ]", a, maxsplit=1)[0].lower() for a in seg.argv[2:] if not a.startswith("-")
    }
    return "package_fetch" if names & task.packages else None


def _is_pip(prog: str, argv: list[str]) -> bool:
    return (
        prog in ("pip", "pip3")
        or re.match(r"^pip[0-9.]*$", prog) is not None
        or (prog.startswith("python") and argv[1:3] == ["-m", "pip"])
        or (prog == "uv" and argv[1:2] == ["pip"])
    )


# --------------------------------------------------------------------------- fetch, site-packages


def fetch_rule(seg: Segment, task: Task) -> str | None:
    """An upstream URL (forge, PyPI, a .patch/.diff) fetched by a fetcher or a script."""
    prog = seg.argv[0].rsplit("/", 1)[-1]
    text = seg.text + "\n" + seg.heredoc
    if UPSTREAM.search(text) and (
        prog in _FETCHERS
        or (prog.startswith("python") and _PY_FETCH.search(text))
        or (prog in ("node", "ruby", "perl") and _FETCH_VERB.search(text))
    ):
        return "network_fetch"
    return None


def site_packages_rule(seg: Segment, task: Task) -> str | None:
    """A reader over an installed copy of the task's own package."""
    prog = seg.argv[0].rsplit("/", 1)[-1]
    if prog in _READERS and re.search(r"(?:site|dist)-packages/([A-Za-z0-9_.-]+)", seg.text):
        pkgs = {m.lower() for m in re.findall(r"(?:site|dist)-packages/([A-Za-z0-9_-]+)", seg.text)}
        return "site_packages" if pkgs & task.packages else None
    return None


# GitHub's CLI: subcommands that read the forge (pull requests, their diffs, the API, releases, files)
_GH_FETCH = frozenset({"pr", "api", "repo", "release", "gist", "issue", "search", "browse", "run"})


def classify(seg: Segment, task: Task) -> str | None:
    """The leak kind a simple command attempts, or None."""
    argv = seg.argv
    prog = argv[0].rsplit("/", 1)[-1]
    if prog == "git":
        return git_rule(seg, task)
    if prog == "gh":
        return "network_fetch" if len(argv) > 1 and argv[1] in _GH_FETCH else None
    if _is_pip(prog, argv):
        return pip_rule(seg, task)
    if prog in ("poetry", "conda") and len(argv) > 2 and argv[1] in ("add", "install"):
        return poetry_conda_rule(seg, task)
    return fetch_rule(seg, task) or site_packages_rule(seg, task)


# A command can only be classified as an attempt if one of its simple commands is git, a package
# manager, a URL fetch or a site-packages reader. shlex only *removes* quotes and backslashes, so
# these words survive in the command with those characters deleted: an exact pre-filter that spares
# the (slow, pure-Python) shlex split of the ~90% of commands that are ls/cat/sed/python/pytest.
MAYBE_ATTEMPT = re.compile(r"git|\bgh\s|pip|poetry|conda|://|-packages/")
_UNQUOTE = str.maketrans("", "", "'\"\\")


def maybe_attempt(cmd: str) -> bool:
    """False only when no simple command of ``cmd`` can be classified (see :func:`classify`)."""
    return MAYBE_ATTEMPT.search(cmd.translate(_UNQUOTE)) is not None
