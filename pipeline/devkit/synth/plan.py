"""Plan one synthetic agent run: tasks with a real one-line bug, and the actions a run takes.

A :class:`RunBuilder` keeps a tiny virtual file system over the repository checkout, so every
``cat``/``view`` shows the file as the run left it and every edit's old text is text the run
has already seen. Planted cases (solution leaks, benign look-alikes, secrets, benchmark
content, unknown tools) are methods that append the actions that make them what they are.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from typing import Any

from pipeline.devkit.synth.content import (
    CMP_FIX,
    NOUNS,
    VERBS,
    Repo,
    digest,
    find_listing,
    grep_text,
    ls_la,
    make_secret,
    problem_statement,
    rand_hex,
    sed_range,
    test_command,
    test_output,
    unified_diff,
)
from pipeline.devkit.synth.render import SUBMIT, Act

SWESMITH_METHODS = (
    "func_pm_remove_cond",
    "func_pm_op_change",
    "func_pm_ctrl_invert_if",
    "func_pm_op_swap",
    "func_basic",
    "lm_rewrite",
    "lm_modify",
    "combine_file",
    "combine_module",
)
_OP_RE = re.compile(r" (===|!==|>=|<=|==|!=|>|<) ")
_JS_FIX = {"===": "!==", "!==": "==="}


@dataclass(slots=True)
class TaskInfo:
    instance_id: str
    repo: Repo
    pool: str
    statement: str
    fix_rel: str
    fn: str
    old: str
    new: str
    old_line: int  # 1-based first line of ``old``
    test_rel: str

    @property
    def base_commit(self) -> str:
        return self.repo.commit

    @property
    def fixed_text(self) -> str:
        return self.repo.read(self.fix_rel).replace(self.old, self.new, 1)

    @property
    def fix_diff(self) -> str:
        return unified_diff(self.fix_rel, self.repo.read(self.fix_rel), self.fixed_text)


def make_task(
    rng: random.Random, repo: Repo, pool: str, instance_id: str | None = None, statement: str | None = None
) -> TaskInfo:
    """A task whose bug is one flipped comparison in a function of ``repo``."""
    for _ in range(50):
        rel = rng.choice(repo.sources)
        funcs = repo.functions(rel)
        if funcs:
            break
    else:  # pragma: no cover - every generated source file has functions
        raise RuntimeError(f"no functions in {repo.spec.key}")
    fn, idx = rng.choice(funcs)
    text = repo.read(rel)
    lines = text.split("\n")
    start = idx
    old = lines[idx]
    while text.count(old) != 1 and start > 0:  # widen upwards until the old text is unique
        start -= 1
        old = "\n".join(lines[start : idx + 1])
    op = _OP_RE.search(lines[idx])
    assert op is not None
    fixed_op = _JS_FIX.get(op.group(1)) or CMP_FIX[op.group(1)]
    new_last = lines[idx][: op.start()] + f" {fixed_op} " + lines[idx][op.end() :]
    new = "\n".join([*lines[start:idx], new_last])
    if instance_id is None:
        instance_id = mint_id(rng, repo, pool)
    return TaskInfo(
        instance_id,
        repo,
        pool,
        statement or problem_statement(rng, repo.spec, fn, rel),
        rel,
        fn,
        old,
        new,
        start + 1,
        rng.choice(repo.tests),
    )


def mint_id(rng: random.Random, repo: Repo, pool: str) -> str:
    if pool == "swesmith":
        if rng.random() < 0.15:
            return f"{repo.spec.key}.{repo.commit[:8]}.pr_{rng.randint(100, 9999)}"
        return f"{repo.spec.key}.{repo.commit[:8]}.{rng.choice(SWESMITH_METHODS)}__{rand_hex(rng, 8)}"
    return f"{repo.spec.key}-{rng.randint(100, 99999)}"


THOUGHTS: dict[str, tuple[str, ...]] = {
    "view": (
        "Let me look at {file} to understand how {fn} works.",
        "I'll view the relevant part of {file}.",
        "Now I want to see the surrounding code in {file} to understand the control flow.",
        "Let me read {file} to check for similar patterns.",
    ),
    "grep": (
        "Let me search for `{arg}` across the source tree.",
        "I'll find where `{arg}` is defined and used.",
        "Let me search for other uses of `{arg}` so the change stays consistent with the codebase.",
    ),
    "test": (
        "I'll run the tests to see the current failures.",
        "Let me run the test suite for this module.",
        "Running the tests again to check the current state.",
    ),
    "read": ("Let me read {arg} quickly.", "I'll check {arg} for context."),
    "list": ("Let me get an overview of the files.", "I'll list the files to see the layout."),
    "git": (
        "Let me check the state of the working tree.",
        "Let me check the git state before going further.",
    ),
    "other": ("Let me check this.", "I need a bit more context here."),
}
_TEST_PREFIXES = ("python -m pytest", "go test", "cargo test", "mvn", "npx jest", "cmake")


def thought_for(rng: random.Random, act: Act, fn: str) -> str:
    """A THOUGHT that matches what the action does."""
    if act.kind == "view":
        kind, arg = "view", ""
    elif act.kind == "grep":
        kind, arg = "grep", act.cmd
    elif act.cmd.startswith(_TEST_PREFIXES):
        kind, arg = "test", ""
    elif act.cmd.startswith(("head", "cat", "sed")):
        kind, arg = "read", act.cmd.split()[-1]
    elif act.cmd.startswith(("ls", "find", "wc")):
        kind, arg = "list", ""
    elif act.cmd.startswith("git"):
        kind, arg = "git", ""
    else:
        kind, arg = "other", ""
    file = act.path.rsplit("/", 1)[-1] if act.path else "the file"
    return rng.choice(THOUGHTS[kind]).format(fn=fn, file=file, arg=arg)


@dataclass
class RunBuilder:
    """Accumulates the actions of one run over a per-run overlay of the checkout."""

    rng: random.Random
    task: TaskInfo
    root: str
    harness: str
    acts: list[Act] = field(default_factory=list)
    overlay: dict[str, str] = field(default_factory=dict)
    fixed: bool = False
    secrets: list[str] = field(default_factory=list)  # kinds planted, in order
    secret_values: list[str] = field(
        default_factory=list
    )  # the planted values (labels: none may be published)
    notes: list[str] = field(default_factory=list)

    # -- virtual file system ------------------------------------------------------------
    def read(self, rel: str) -> str:
        return self.overlay.get(rel) or self.task.repo.read(rel)

    def abs(self, rel: str) -> str:
        return f"{self.root}/{rel}"

    def add(self, act: Act) -> Act:
        if not act.thought:
            act.thought = thought_for(self.rng, act, self.task.fn)
        self.acts.append(act)
        return act

    # -- ordinary actions ------------------------------------------------------------------
    def sh(self, cmd: str, out: str, rc: int = 0, thought: str = "", parallel: bool = False) -> Act:
        return self.add(Act("sh", thought, cmd=cmd, out=out, rc=rc, parallel=parallel))

    def view(
        self, rel: str, around: int | None = None, full: bool | None = None, parallel: bool = False
    ) -> Act:
        text = self.read(rel)
        n_lines = text.count("\n")
        if full is None:
            full = self.rng.random() < 0.4
        if full or n_lines < 40:
            return self.add(Act("view", path=self.abs(rel), text=text, parallel=parallel))
        if around is None:
            around = self.rng.randint(1, n_lines)
        start = max(1, around - self.rng.randint(5, 40))
        end = min(n_lines, around + self.rng.randint(10, 60))
        return self.add(Act("view", path=self.abs(rel), text=text, start=start, end=end, parallel=parallel))

    def grep(self, needle: str, parallel: bool = False) -> Act:
        repo = self.task.repo
        paths = sorted(set([*self.rng.sample(repo.sources, min(len(repo.sources), 8)), self.task.fix_rel]))
        out = "".join(grep_hits_overlay(self, needle, paths))
        sub = repo.sources[0].split("/", 1)[0] if "/" in repo.sources[0] else "."
        return self.add(
            Act(
                "grep",
                cmd=needle,
                out=out,
                path=self.abs(sub) if sub != "." else self.root,
                parallel=parallel,
            )
        )

    def run_tests(self) -> Act:
        t = self.task
        lines = self.read(t.fix_rel).split("\n")
        ln = t.old_line + t.old.count("\n")
        out, rc = test_output(
            self.rng,
            t.repo.spec,
            self.root,
            t.test_rel,
            t.fn,
            self.fixed,
            self.rng.randint(8, 160),
            t.fix_rel,
            lines[ln - 1],
            ln,
        )
        return self.sh(test_command(t.repo.spec, t.test_rel), out, rc)

    def explore_start(self) -> None:
        repo = self.task.repo
        top = sorted({p.split("/", 1)[0] for p in repo.all_paths})
        self.sh(
            f"ls -la {self.root}",
            ls_la(self.rng, top),
            thought="I'll start by exploring the repository structure.",
        )
        self.grep(self.task.fn)
        self.view(self.task.fix_rel, around=self.task.old_line, full=self.rng.random() < 0.35)
        cur = self.acts[-1]
        if cur.start and not (
            cur.start <= self.task.old_line and cur.end >= self.task.old_line + self.task.old.count("\n")
        ):
            cur.start, cur.end = (
                max(1, self.task.old_line - 8),
                self.task.old_line + self.task.old.count("\n") + 12,
            )
        if self.task.repo.spec.language == "python":
            mod = self.task.fix_rel[:-3].replace("/", ".")
            script = (
                f"from {mod} import {self.task.fn}\n\nitems = ['a' * n for n in range(12)]\n"
                f"print(len({self.task.fn}(items)))\n"
            )
            self.create("reproduce_issue.py", script)
            ln = self.task.old_line + self.task.old.count("\n")
            tb = (
                f'Traceback (most recent call last):\n  File "{self.abs("reproduce_issue.py")}", line 4, in <module>\n'
                f'    print(len({self.task.fn}(items)))\n  File "{self.abs(self.task.fix_rel)}", line {ln}, in {self.task.fn}\n'
                f"    {self.read(self.task.fix_rel).split(chr(10))[ln - 1].strip()}\nTypeError: object of type 'NoneType' has no len()\n"
            )
            self.sh(
                f"python {self.abs('reproduce_issue.py')}",
                tb,
                1,
                thought="Let me run the reproduction script.",
            )
        else:
            self.run_tests()

    def create(self, rel: str, text: str) -> Act:
        self.overlay[rel] = text
        return self.add(
            Act(
                "create",
                path=self.abs(rel),
                text=text,
                thought=f"Let me create {rel} to reproduce the issue.",
            )
        )

    def edit(self, rel: str, old: str, new: str, thought: str = "") -> Act:
        before = self.read(rel)
        assert before.count(old) == 1, (rel, old)
        self.overlay[rel] = before.replace(old, new, 1)
        return self.add(Act("edit", thought, path=self.abs(rel), text=before, old=old, new=new))

    def filler(self) -> None:
        """One exploration step, drawn to give realistic output sizes (bytes to ~50 KB)."""
        rng, repo = self.rng, self.task.repo
        r = rng.random()
        if r < 0.30:
            self.view(rng.choice(repo.sources), parallel=self.parallel_ok())
        elif r < 0.45:
            self.grep(
                f"{rng.choice(VERBS)}_{rng.choice(NOUNS)}"
                if repo.spec.language in ("python", "rust", "cpp")
                else rng.choice(NOUNS).capitalize(),
                parallel=self.parallel_ok(),
            )
        elif r < 0.55:
            self.run_tests()
        elif r < 0.62:
            rel = rng.choice(repo.tests)
            n = rng.randint(20, 80)
            self.sh(f"head -n {n} {self.abs(rel)}", "\n".join(self.read(rel).split("\n")[:n]) + "\n")
        elif r < 0.68:
            self.sh(
                "git status",
                'On branch main\nChanges not staged for commit:\n  (use "git add <file>..." to update '
                f"what will be committed)\n\tmodified:   {self.task.fix_rel}\n"
                if self.fixed
                else "On branch main\nnothing to commit, working tree clean\n",
            )
        elif r < 0.73:
            self.sh(
                f"find {self.root} -type f | head -n {rng.randint(100, 2000)}",
                find_listing(rng, repo, self.root, int(rng.lognormvariate(8.5, 1.0)) % 50000 + 200),
            )
        elif r < 0.78:
            rel = rng.choice(repo.others)
            self.sh(f"cat {self.abs(rel)}", self.read(rel))
        elif r < 0.83:
            files = rng.sample(repo.sources, min(5, len(repo.sources)))
            counts = [self.read(f).count("\n") for f in files]
            self.sh(
                "wc -l " + " ".join(self.abs(f) for f in files),
                "".join(f"{c:5d} {self.abs(f)}\n" for c, f in zip(counts, files, strict=True))
                + f"{sum(counts):5d} total\n",
            )
        elif r < 0.88:
            self.sh(
                "git log -n 5 --oneline",
                self.base_log(5),
                thought="Let me check the recent history of the checkout.",
            )
        elif r < 0.93:
            sub = repo.sources[0].rsplit("/", 1)[0] if "/" in repo.sources[0] else ""
            names = sorted(
                {p[len(sub) + 1 :].split("/", 1)[0] for p in repo.sources if sub and p.startswith(sub + "/")}
            ) or [p.split("/", 1)[0] for p in repo.all_paths]
            self.sh(f"ls {self.abs(sub) if sub else self.root}", "\n".join(names) + "\n")
        else:
            self.view(self.task.fix_rel, parallel=False)

    def parallel_ok(self) -> bool:
        return (
            self.harness in ("bash", "pi", "claude_code", "hermes_agent")
            and bool(self.acts)
            and self.acts[-1].kind in ("view", "grep")
            and self.rng.random() < 0.35
        )

    def base_log(self, n: int) -> str:
        rng = random.Random(digest("log", self.task.repo.commit))
        msgs = [
            f"Merge pull request #{rng.randint(100, 4000)} from {rng.choice(NOUNS)}/{rng.choice(VERBS)}",
            "Bump version",
            "Fix typo in docs",
            f"Refactor {rng.choice(NOUNS)} handling",
            f"Add tests for {rng.choice(NOUNS)}",
            "Update changelog",
            "CI: pin actions",
        ]
        shas = [self.task.repo.commit[:7]] + [rand_hex(rng, 7) for _ in range(n - 1)]
        return "".join(f"{s} {msgs[i % len(msgs)]}\n" for i, s in enumerate(shas))

    def fix(self) -> None:
        t = self.task
        self.edit(
            t.fix_rel, t.old, t.new, thought=f"The comparison in {t.fn} is off at the boundary; I'll fix it."
        )
        self.fixed = True

    def verify(self) -> None:
        if self.task.repo.spec.language == "python" and "reproduce_issue.py" in self.overlay:
            self.sh(
                f"python {self.abs('reproduce_issue.py')}",
                f"{self.rng.randint(6, 12)}\n",
                thought="Let me rerun the reproduction script to confirm the fix.",
            )
        self.run_tests()
        self.sh("git diff", self.own_diff(), thought="Let me review my changes.")

    def own_diff(self) -> str:
        repo = self.task.repo
        return "".join(
            unified_diff(rel, repo.read(rel), text)
            for rel, text in sorted(self.overlay.items())
            if rel in repo._cache or rel in repo.sources
        )

    def submit(self) -> None:
        self.add(
            Act(
                "submit",
                "The fix is in place and the tests pass; submitting.",
                out="COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n" + self.own_diff(),
            )
        )

    # -- planted cases ---------------------------------------------------------------------
    def leak(self, kind: str, confirmed: bool) -> None:
        t, rng = self.task, self.rng
        spec = t.repo.spec
        sha = digest("fixsha", t.instance_id)[:40]
        pr = int(digest("pr", t.instance_id)[:6], 16) % 9000 + 100
        header = (
            f"commit {sha}\nAuthor: {rng.choice(NOUNS).capitalize()} Dev <dev@{spec.owner}.org>\n"
            f"Date:   Tue Mar 4 11:{rng.randint(10, 59)}:07 2025 +0000\n\n    Fix {t.fn} boundary check (#{pr})\n\n"
        )
        th = "Maybe the upstream project already fixed this; let me check."
        # A confirmed leak's observation must really show the fixed code: the whole fix diff, or the
        # fixed region of the file (a range, so a long file is not cut away by output truncation).
        lo = max(1, t.old_line - rng.randint(3, 12))
        hi = t.old_line + t.old.count("\n") + rng.randint(3, 15)
        region = sed_range(t.fixed_text, lo, hi)
        if kind == "git_history":
            if confirmed:
                form = rng.randrange(3)
                if form == 0:  # mini-swe-agent#787's chain: listing, then a pickaxe search with -p
                    self.sh(
                        "git log --all --oneline | head -n 20",
                        f"{sha[:7]} Fix {t.fn} boundary check (#{pr})\n" + self.base_log(6),
                        thought=th,
                    )
                    self.sh(
                        f"git log --all -p -S '{t.fn}' -1",
                        header + t.fix_diff,
                        thought="That commit looks relevant; let me see it.",
                    )
                elif form == 1:  # SWE-bench#581: message search straight to the patch
                    self.sh(f"git log --all --grep='{t.fn}' -p", header + t.fix_diff, thought=th)
                else:
                    self.sh(
                        f"git log --branches --remotes -p -n 1 -- {t.fix_rel}",
                        header + t.fix_diff,
                        thought="Did any branch touch this file? Let me check.",
                    )
            else:
                self.sh("git log --all --oneline | head -n 20", self.base_log(6), thought=th)
        elif kind == "foreign_object":
            if confirmed:
                form = rng.randrange(3)
                if form == 0:
                    self.sh(f"git show {sha[:10]}", header + t.fix_diff, thought=th)
                elif form == 1:
                    self.sh(f"git diff {t.base_commit[:7]} {sha[:10]} -- {t.fix_rel}", t.fix_diff, thought=th)
                else:
                    self.sh(
                        f"git show origin/fix-{t.fn.lower()}:{t.fix_rel} | sed -n '{lo},{hi}p'",
                        region,
                        thought="There is a remote branch named after this function; let me look at its version.",
                    )
            else:
                self.sh(
                    f"git show {sha[:10]}",
                    f"fatal: ambiguous argument '{sha[:10]}': unknown revision or path not in the working tree.\n",
                    128,
                    thought=th,
                )
        elif kind == "bug_patch":
            bug = unified_diff(t.fix_rel, t.fixed_text, t.repo.read(t.fix_rel))
            self.sh(
                "git log --oneline -3",
                f"{rand_hex(rng, 7)} Remove F2P Tests\n{sha[:7]} Bug Patch\n{t.repo.commit[:7]} Initial commit\n",
                thought="Let me look at the recent commits on this branch.",
            )
            if confirmed:
                self.sh(
                    "git show HEAD~1",
                    f"commit {sha}\nAuthor: swesmith <swesmith@swesmith.ai>\nDate:   Fri Jan 10 09:00:00 2025 +0000\n\n"
                    f"    Bug Patch\n\n{bug}",
                    thought="The Bug Patch commit may show what changed.",
                )
        elif kind == "network_fetch":
            url = f"https://github.com/{spec.owner}/{spec.name}/pull/{pr}.diff"
            if confirmed:
                form = rng.randrange(3)
                if form == 0:
                    self.sh(f"curl -sL {url}", t.fix_diff, thought=th)
                elif form == 1:
                    self.sh(
                        f"wget -qO- {url[:-5]}.patch",
                        f"From {sha} Mon Sep 17 00:00:00 2001\n" + header.split("\n", 1)[1] + t.fix_diff,
                        thought=th,
                    )
                else:
                    raw = f"https://raw.githubusercontent.com/{spec.owner}/{spec.name}/main/{t.fix_rel}"
                    self.sh(
                        f"curl -s {raw} | sed -n '{lo},{hi}p'",
                        region,
                        thought="Let me compare with the file on the upstream main branch.",
                    )
            elif rng.random() < 0.5:
                self.sh(
                    f"curl -fsSL {url}", "curl: (22) The requested URL returned error: 404\n", 22, thought=th
                )
            else:
                self.sh(f"curl -sL {url}", "curl: (6) Could not resolve host: github.com\n", 6, thought=th)
        elif kind == "package_fetch":
            ver = f"{rng.randint(1, 5)}.{rng.randint(0, 30)}.{rng.randint(1, 9)}"
            if confirmed:
                whl = f"{spec.pkg}-{ver}-py3-none-any.whl"
                self.sh(
                    f"pip download {spec.pkg}=={ver} --no-deps -d /tmp/pkgs && cd /tmp/pkgs && unzip -o -q {whl} && cat {t.fix_rel}",
                    f"Collecting {spec.pkg}=={ver}\n  Downloading {whl} ({rng.randint(80, 900)} kB)\nSaved /tmp/pkgs/{whl}\n"
                    f"Successfully downloaded {spec.pkg}\n" + t.fixed_text,
                    thought=th,
                )
            else:
                self.sh(
                    f"pip download {spec.pkg}=={ver} --no-deps -d /tmp/pkgs",
                    f"ERROR: Could not find a version that satisfies the requirement {spec.pkg}=={ver} (from versions: none)\n"
                    f"ERROR: No matching distribution found for {spec.pkg}=={ver}\n",
                    1,
                    thought=th,
                )
        elif kind == "site_packages":
            sp = rng.choice(
                (
                    "/usr/lib/python3/site-packages",
                    "/usr/local/lib/python3.11/site-packages",
                    "/opt/conda/lib/python3.11/site-packages",
                )
            )
            path = f"{sp}/{t.fix_rel}"
            if confirmed:
                form = rng.randrange(3)
                if form == 0 or (form == 1 and len(t.fixed_text) >= 9000):
                    # `diff -u` exits 1 when the files differ; its output is exactly the fix
                    body = t.fix_diff.split("\n", 4)[4]
                    self.sh(
                        f"diff -u {self.abs(t.fix_rel)} {path}",
                        f"--- {self.abs(t.fix_rel)}\t2025-09-03 10:12:00.000000000 +0000\n"
                        f"+++ {path}\t2025-06-14 08:30:00.000000000 +0000\n{body}",
                        1,
                        thought="The installed copy might differ from the checkout; let me compare.",
                    )
                elif form == 1:
                    self.sh(
                        f"cat {path}",
                        t.fixed_text,
                        thought="The installed copy might differ from the checkout; let me read it.",
                    )
                else:
                    self.sh(
                        f"sed -n '{lo},{hi}p' {path}",
                        region,
                        thought="Let me see the same function in the installed copy.",
                    )
            else:
                self.sh(
                    f"cat {path}",
                    f"cat: {path}: No such file or directory\n",
                    1,
                    thought="Let me compare with the installed copy.",
                )
        self.notes.append(f"{kind} {'confirmed' if confirmed else 'attempted, unconfirmed'}")

    def benign(self, kind: str) -> None:
        spec = self.task.repo.spec
        if kind == "git_history":
            self.sh(
                "git log -n 5 --oneline",
                self.base_log(5),
                thought="Let me check the recent history of the checkout.",
            )
        elif kind in ("foreign_object", "bug_patch"):
            self.sh(
                "git diff HEAD --stat",
                f" {self.task.fix_rel} | 2 +-\n 1 file changed, 1 insertion(+), 1 deletion(-)\n"
                if self.fixed
                else "",
                thought="Let me check which files I have changed so far.",
            )
            self.sh(
                "git stash && git stash pop",
                "Saved working directory and index state WIP on main: "
                f"{self.task.repo.commit[:7]} Initial commit\nOn branch main\nDropped refs/stash@{{0}}\n"
                if self.fixed
                else "No local changes to save\n",
                thought="Quick sanity check of my own work.",
            )
        elif kind == "network_fetch":
            self.sh(
                f"cat {self.abs('README.md')}",
                self.read("README.md"),
                thought="The README may describe the setup.",
            )
            self.sh(
                "git remote -v",
                f"origin\thttps://github.com/{spec.owner}/{spec.name} (fetch)\norigin\t"
                f"https://github.com/{spec.owner}/{spec.name} (push)\n",
                thought="Which remote is configured?",
            )
        elif kind == "package_fetch":
            self.sh(
                "pip install -e . -q",
                f"Successfully installed {spec.pkg}-0.0.0\n",
                thought="Install the checkout in editable mode.",
            )
            self.sh(
                "pip install pytest-timeout -q",
                "Successfully installed pytest-timeout-2.2.0\n",
                thought="A timeout plugin helps with hangs.",
            )
        elif kind == "site_packages":
            self.sh(
                'python -c "import six, inspect; print(inspect.getsourcefile(six))"',
                "/usr/lib/python3/site-packages/six.py\n",
                thought="Which six is installed?",
            )
            self.sh(
                "head -n 12 /usr/lib/python3/site-packages/six.py",
                "# Copyright (c) 2010-2020 Benjamin Peterson\n#\n"
                "# Permission is hereby granted, free of charge, to any person obtaining a copy\n",
                thought="Peek at it.",
            )
        self.notes.append(f"benign look-alike of {kind}")

    def plant_secrets(self, kinds: list[str]) -> None:
        for kind in kinds:
            value, cmd, out = make_secret(self.rng, kind)
            self.sh(cmd, out, thought="Let me check the environment configuration used by the tests.")
            self.secrets.append(kind)
            self.secret_values.append(value)

    def unknown_tool(self) -> None:
        self.add(
            Act(
                "unknown",
                "Let me open the project docs in the browser.",
                tool="mcp__playwright__browser_navigate",
                args={"url": f"http://localhost:8000/docs/{self.task.fn}"},
                out=f"Navigated to http://localhost:8000/docs/{self.task.fn}\nPage title: {self.task.fn} - docs\n",
            )
        )
        self.notes.append("unknown tool mcp__playwright__browser_navigate")

    def todo(self) -> None:
        todos = [
            {
                "content": f"Reproduce the {self.task.fn} bug",
                "status": "completed",
                "activeForm": "Reproducing",
            },
            {
                "content": f"Fix the comparison in {self.task.fix_rel}",
                "status": "in_progress",
                "activeForm": "Fixing",
            },
            {"content": "Run the tests", "status": "pending", "activeForm": "Running the tests"},
        ]
        self.add(
            Act("todo", "Let me track my plan.", text="Plan: reproduce, fix, test.", args={"todos": todos})
        )

    def memory(self) -> None:
        self.add(
            Act(
                "memory",
                "I'll note where the bug lives.",
                text=f"{self.task.fn} in {self.task.fix_rel} compares lengths",
            )
        )

    def think(self) -> None:
        self.add(
            Act(
                "think",
                "",
                text=f"The bug is probably the comparison in {self.task.fn}; the boundary value is excluded.",
            )
        )


def grep_hits_overlay(b: RunBuilder, needle: str, paths: list[str]) -> list[str]:
    """grep over the run's current view of the files (so hits agree with earlier edits)."""
    return [grep_text(b.read(rel), f"{b.root}/{rel}", needle) for rel in paths]


def build_run(
    rng: random.Random,
    task: TaskInfo,
    root: str,
    harness: str,
    n_turns: int,
    plants: list[tuple[str, Any]],
    submit: bool = True,
) -> RunBuilder:
    """A whole run: explore, plants, filler to ``n_turns``, fix, verify, submit."""
    b = RunBuilder(rng, task, root, harness)
    b.explore_start()
    tail = 4
    body = max(1, n_turns - len(b.acts) - tail)
    pre = [p for p in plants if p[0] not in ("benign",)]
    post = [p for p in plants if p[0] == "benign"]
    slots = sorted(rng.sample(range(body), min(body, len(pre))))
    k = 0
    for i in range(body):
        while k < len(pre) and slots[k] == i:
            _apply(b, pre[k])
            k += 1
        b.filler()
        if harness == "claude_code" and i == 1:
            b.todo()
        if harness == "hermes_agent" and i in (1, body // 2):
            b.todo() if i == 1 else b.memory()
        if harness == "openhands" and rng.random() < 0.05:
            b.think()
    while k < len(pre):
        _apply(b, pre[k])
        k += 1
    b.fix()
    for p in post:
        _apply(b, p)
    b.verify()
    if submit:
        b.submit()
    return b


def _apply(b: RunBuilder, plant: tuple[str, Any]) -> None:
    what, arg = plant
    if what == "leak":
        b.leak(arg[0], arg[1])
    elif what == "benign":
        b.benign(arg)
    elif what == "secrets":
        b.plant_secrets(arg)
    elif what == "unknown_tool":
        b.unknown_tool()
    elif what == "output":  # (command, output, thought): benchmark content in a tool output
        b.sh(arg[0], arg[1], thought=arg[2])
    elif what == "mention":  # text in a thought
        b.sh("git status", "On branch main\nnothing to commit, working tree clean\n", thought=arg)
    else:  # pragma: no cover
        raise ValueError(what)


__all__ = ["SUBMIT", "RunBuilder", "TaskInfo", "build_run", "make_task", "mint_id"]
