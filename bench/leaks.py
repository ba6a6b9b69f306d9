"""Leak and secret filters: precision/recall on planted cases and throughput.

Standalone (default): generates its own labelled WORK batches — planted solution leaks in varied
wording, attempts, benign look-alikes, benchmark text, every secret kind and secret look-alikes, with
realistic outputs from a few bytes to 50 KB — runs SolutionLeak, BenchmarkLeak and Scrub, and prints
precision/recall per kind and MB/s of input text (commands + outputs + message contents).

    .venv/bin/python bench/leaks.py [--runs 3000 --seed 1 --out bench/results/leaks.md]
    .venv/bin/python bench/leaks.py --labels DIR/labels.jsonl --workdir W   # score a pipeline run
    .venv/bin/python bench/leaks.py --detect-secrets /tmp/dsvenv/bin/python  # also time detect-secrets
"""

from __future__ import annotations

import argparse
import base64
import json
import random
import shlex
import string
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pipeline.core.config import Config
from pipeline.reference.secrets import PATTERNS, SECRET_KINDS, find_secrets
from pipeline.stages.context import Context
from pipeline.stages.leaks import BenchmarkLeak, SolutionLeak
from pipeline.stages.scrub import Scrub
from schemas.run import WORK, polars_schema

SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached"
WORDS = [
    "frame",
    "width",
    "height",
    "layout",
    "render",
    "token",
    "parser",
    "value",
    "config",
    "cache",
    "index",
    "buffer",
    "stream",
    "node",
    "tree",
    "item",
    "record",
    "schema",
    "field",
    "column",
    "batch",
    "chunk",
    "shard",
    "epoch",
    "limit",
    "offset",
    "cursor",
    "handler",
    "request",
]


# ---------------------------------------------------------------------------------------------- generator


class Gen:
    def __init__(self, seed: int) -> None:
        self.r = random.Random(seed)

    def ident(self) -> str:
        return "_".join(self.r.sample(WORDS, self.r.randint(2, 3))) + str(self.r.randint(0, 99))

    def code_line(self) -> str:
        r = self.r
        a, b, c = self.ident(), self.ident(), self.ident()
        return r.choice(
            [
                f"    {a} = {b}({c}, strict={r.choice(['True', 'False'])})",
                f"    if {a} is not None and {b}.{c} > {r.randint(2, 999)}:",
                f'        raise ValueError("{a} must not exceed {b}")',
                f"    return {a}.{b}({c}, keep={r.randint(0, 9)})",
                f"    {a}.extend(x for x in {b} if x.{c} != {r.randint(0, 50)})",
            ]
        )

    def source(self, nbytes: int) -> str:
        lines, size = [], 0
        while size < nbytes:
            ln = self.r.choice(
                [self.code_line(), f"def {self.ident()}(self, {self.ident()}):", "", "    pass"]
            )
            lines.append(ln)
            size += len(ln) + 1
        return "\n".join(lines) + "\n"

    def patch(self, n_add: int) -> tuple[str, list[str], list[str]]:
        old = [self.code_line() for _ in range(max(1, n_add - 1))]
        new = [self.code_line() for _ in range(n_add)]
        body = "".join(f"-{x}\n" for x in old) + "".join(f"+{x}\n" for x in new)
        return (
            (
                f"diff --git a/src/m.py b/src/m.py\n--- a/src/m.py\n+++ b/src/m.py\n@@ -1,{len(old)} +1,{n_add} @@\n"
                + body
            ),
            old,
            new,
        )

    def sha(self, n: int = 40) -> str:
        return "".join(self.r.choice("0123456789abcdef") for _ in range(n))

    def rand(self, n: int, alphabet: str = string.ascii_letters + string.digits) -> str:
        return "".join(self.r.choice(alphabet) for _ in range(n))

    def secret(self, kind: str) -> tuple[str, str]:
        """(text holding the secret, the secret value) with varied wording."""
        r, rand = self.r, self.rand
        up = string.ascii_uppercase + string.digits
        b64 = string.ascii_letters + string.digits + "+/"
        v = {
            "github_token": "ghp_" + rand(36),
            "gitlab_token": "glpat-" + rand(20),
            "aws_access_key": "AKIA" + rand(16, up),
            "aws_secret_key": rand(40, b64),
            "gcp_api_key": "AIza" + rand(35),
            "azure_key": rand(86, b64) + "==",
            "hf_token": "hf_" + rand(34),
            "openai_key": "sk-proj-" + rand(56),
            "anthropic_key": "sk-ant-api03-" + rand(90),
            "slack_token": "xoxb-" + rand(12, string.digits) + "-" + rand(24),
            "stripe_key": "sk_live_" + rand(24),
            "jwt": "eyJ" + rand(30) + ".eyJ" + rand(40) + "." + rand(43),
            "url_password": rand(14),
            "auth_header": rand(r.randint(20, 40), string.ascii_letters + string.digits + "._-"),
            "env_secret": rand(20),
            "private_key": "\n".join(rand(64, b64) for _ in range(r.randint(3, 8))),
            # base64 of text holding a vendor token, at each byte alignment of its prefix
            "encoded_secret": base64.b64encode(
                r.choice(["", "x:", "GITHUB_TOKEN=", "token: "]).encode()
                + r.choice(
                    ["ghp_" + rand(36), "glpat-" + rand(20), "hf_" + rand(34), "sk_live_" + rand(24)]
                ).encode()
            ).decode(),
        }[kind]
        scheme = r.choice(["Basic", "Bearer", "token"])
        if kind == "auth_header" and scheme == "Basic":  # base64 of user:password
            v = base64.b64encode(f"ci:{rand(14)}".encode()).decode()
        name = r.choice(
            ["DB_PASSWORD", "STRIPE_API_KEY", "MY_SERVICE_TOKEN", "APP_SECRET_KEY", "CLIENT_SECRET"]
        )
        text = {
            "github_token": r.choice(
                [
                    f"export GITHUB_TOKEN={v}",
                    f"git push https://x-access-token:{v}@github.com/a/b",
                    f"token = '{v}'",
                ]
            ),
            "gitlab_token": f"PRIVATE-TOKEN: {v}",
            "aws_access_key": f"aws_access_key_id = {v}",
            "aws_secret_key": r.choice([f"aws_secret_access_key = {v}", f"AWS_SECRET_ACCESS_KEY={v}"]),
            "gcp_api_key": f'maps_key: "{v}"',
            "azure_key": f"AccountName=acct;AccountKey={v};EndpointSuffix=x",
            "hf_token": r.choice([f"huggingface-cli login --token {v}", f"HF_TOKEN={v}"]),
            "openai_key": f'OpenAI(api_key="{v}")',
            "anthropic_key": f"x-api-key: {v}",
            "slack_token": f"slack_client = WebClient(token='{v}')",
            "stripe_key": f'stripe.api_key = "{v}"',
            "jwt": f"Authorization: Bearer {v}",
            "url_password": f"pip install -i https://ci:{v}@pkgs.example.com/simple x",
            "auth_header": r.choice(
                [
                    f'curl -sH "Authorization: {scheme} {v}" https://api.example.com/v1',
                    f'requests.get(url, headers={{"Authorization": "{scheme} {v}"}})',
                    f"Proxy-Authorization: {scheme} {v}",
                ]
            ),
            "env_secret": f"{name}={v}",
            "encoded_secret": r.choice([f"echo {v} | base64 -d", f"  token: {v}", f"CREDS_B64={v}"]),
            "private_key": f"-----BEGIN RSA PRIVATE KEY-----\n{v}\n-----END RSA PRIVATE KEY-----",
        }[kind]
        return text, v

    def secret_lookalike(self) -> str:
        r = self.r
        return r.choice(
            [
                f"commit {self.sha()}",
                f"id {self.rand(8, '0123456789abcdef')}-{self.rand(4, '0123456789abcdef')}-4abc-"
                f"8def-{self.rand(12, '0123456789abcdef')}",
                f'FIXTURE = "{self.rand(60, string.ascii_letters + "+/")}=="',
                "PASSWORD=changeme",
                "API_KEY=${API_KEY}",
                "git clone https://github.com/psf/requests.git",
                "token: <REDACTED:github_token>",
                'SECRET_KEY = "django-insecure-test"',
                "TOKEN=abc",
                f"sha256:{self.sha(64)}",
                "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkq\n-----END PUBLIC KEY-----",
            ]
        )


# (label, commands, outputs, expect) factories: expect is "solution_leak/<kind>", "attempt/<kind>" or "keep".
def leak_case(
    g: Gen, kind: str, fix_new: list[str], fix_diff: str, pr: str
) -> tuple[list[str], list[str], str, str]:
    r = g.r
    sha = g.sha(r.choice([7, 10, 40]))
    fixed_file = "def render(frame):\n" + "\n".join(fix_new) + "\n"
    show = f"commit {sha}\nAuthor: dev <d@x>\n\n    Fix {g.ident()} (#{pr})\n\n{fix_diff}"
    cd = r.choice(["", "cd /testbed && ", "cd /testbed; "])
    if kind == "git_history":
        c = r.choice(
            [
                f"git log --all --oneline --grep='#{pr}'",
                f"git log -S {g.ident()} --oneline | head",
                f"git log --branches --format='%h %s' | grep -i {g.ident()}",
                f"git log -G'{g.ident()}' --all -n 5",
            ]
        )
        return [cd + c], [f"{sha[:7]} Fix {g.ident()} (#{pr})\n"], "git_history", "real"
    if kind == "foreign_object":
        c = r.choice(
            [
                f"git show {sha}",
                f"git diff {sha}^ {sha}",
                "git show origin/main:src/m.py",
                f"git format-patch -1 {sha} --stdout",
                f"git cat-file -p {sha}",
                "git diff v1.2.0 v1.3.0",
            ]
        )
        return (
            [cd + c],
            [show if "cat-file" not in c and ":" not in c else fixed_file],
            "foreign_object",
            "real",
        )
    if kind == "bug_patch":
        c = r.choice(["git show HEAD~1", "git log -p -3", "git diff HEAD~2 HEAD~1"])
        return (
            [cd + c],
            [f"commit {sha}\nAuthor: swesmith\n\n    Bug Patch\n\n{fix_diff}"],
            "bug_patch",
            "swesmith",
        )
    if kind == "network_fetch":
        c = r.choice(
            [
                "curl -sL https://raw.githubusercontent.com/acme/w/main/src/m.py",
                f"wget -qO- https://github.com/acme/w/pull/{pr}.diff",
                f"curl -s https://api.github.com/repos/acme/w/pulls/{pr}/files | head -50",
                "python3 -c \"import urllib.request;print(urllib.request.urlopen('https://github.com/acme/w/raw/main/m.py').read())\"",
                "git fetch origin && git log origin/main --oneline -3",
                "git clone https://gitlab.com/acme/w.git /tmp/w",
            ]
        )
        return [c], [r.choice([fixed_file, show, "Cloning into '/tmp/w'...\n"])], "network_fetch", "real"
    if kind == "package_fetch":
        c = r.choice(
            [
                "pip download w==9.9 --no-deps -d /tmp/p",
                "pip install git+https://github.com/acme/w@main",
                "python -m pip install -U w",
                "pip install --upgrade 'w>=9.9'",
                "uv pip install w==9.9",
            ]
        )
        return (
            [c],
            ["Collecting w\n  Downloading w-9.9.tar.gz\nSuccessfully installed w-9.9\n"],
            "package_fetch",
            "real",
        )
    c = r.choice(
        [
            "cat /usr/local/lib/python3.11/site-packages/w/m.py",
            "sed -n 1,80p /usr/lib/python3/dist-packages/w/m.py",
            "cp /usr/local/lib/python3.11/site-packages/w/m.py src/m.py",
        ]
    )
    return [c], ["" if c.startswith("cp") else fixed_file], "site_packages", "real"


def attempt_case(g: Gen, kind: str) -> tuple[list[str], list[str]]:
    r = g.r
    return {
        "git_history": (["git log --all --oneline | head -3"], [f"{g.sha(7)} Initial import\n"]),
        "foreign_object": (
            [f"git show {g.sha(7)} --stat"],
            [f"commit {g.sha()}\n\n    docs\n\n README | 2 +-\n"],
        ),
        "network_fetch": r.choice(
            [
                (
                    [
                        r.choice(
                            [
                                "curl -s https://raw.githubusercontent.com/acme/w/main/m.py",
                                "git fetch upstream",
                            ]
                        )
                    ],
                    [
                        r.choice(
                            ["404: Not Found", "fatal: unable to access: Could not resolve host: github.com"]
                        )
                    ],
                ),
                (
                    ["git remote add upstream https://github.com/acme/w.git && git remote -v"],
                    [
                        "upstream\thttps://github.com/acme/w.git (fetch)\nupstream\thttps://github.com/acme/w.git (push)\n"
                    ],
                ),
            ]
        ),
        "package_fetch": (
            ["pip download w"],
            ["ERROR: Could not find a version that satisfies the requirement w\n"],
        ),
        "site_packages": (
            ["cat /usr/lib/python3/site-packages/w/m.py"],
            ["cat: ...: No such file or directory\n"],
        ),
    }[kind]


def benign_case(g: Gen, fix_diff: str) -> tuple[list[str], list[str]]:
    r = g.r
    return r.choice(
        [
            (["git status"], ["On branch main\nnothing to commit, working tree clean\n"]),
            (["git diff"], [fix_diff]),
            (["git log -n 3"], [f"commit {g.sha()}\n\n    Initial\n"]),
            (["git log --oneline -5"], [f"{g.sha(7)} Initial\n"]),
            (["git show HEAD --stat"], [" m.py | 2 +-\n"]),
            (["git stash && pytest -q && git stash pop"], ["Saved working directory\n3 passed\n"]),
            (["pip install -e ."], ["Successfully installed w-1.0\n"]),
            (["pip install pytest-xdist"], ["Successfully installed\n"]),
            (["curl -s http://localhost:8080/health"], ['{"ok": true}']),
            (
                ["git remote set-url origin https://github.com/acme/w.git && git remote -v"],
                [
                    "origin\thttps://github.com/acme/w.git (fetch)\norigin\thttps://github.com/acme/w.git (push)\n"
                ],
            ),
            (["cat /usr/lib/python3/site-packages/numpy/version.py"], ["version = '1.26.0'\n"]),
        ]
    )


def make_row(
    uid: str,
    iid: str,
    repo: str,
    patch: str,
    statement: str,
    commands: list[str],
    outputs: list[str],
    submit: bool = True,
) -> dict[str, object]:
    if submit:
        commands, outputs = [*commands, SUBMIT], [*outputs, ""]
    msgs = [
        {"role": "system", "content": "You are a helpful assistant that can interact with a computer."},
        {"role": "user", "content": f"<pr_description>\n{statement}\n</pr_description>"},
    ]
    for c, o in zip(commands, outputs, strict=True):
        msgs.append({"role": "assistant", "content": f"THOUGHT: Let me look.\n\n```bash\n{c}\n```"})
        msgs.append(
            {"role": "user", "content": f"<returncode>0</returncode>\n<output>\n{o[:10000]}</output>"}
        )
    row: dict[str, object] = dict.fromkeys(WORK.names)
    row.update(
        instance_id=iid,
        messages=msgs,
        family="pr",
        repo=repo,
        language="python",
        verified=False,
        resolved="unknown",
        patch=patch,
        model="m",
        harness="bash",
        id_kind="pool",
        upstream_id=iid,
        affine_source="swesmith",
        origin="Affine corpus",
        source_uid=uid,
        submitted=submit,
        affine_fold_group="",
        epoch=1,
        dialect="bash",
        dataset="mini-coder-affine-bash",
        base_commit="",
        problem_statement=statement,
        commands=commands,
        outputs=outputs,
        returncodes=[0] * len(commands),
        raw_bytes=0,
    )
    return row


def generate(n_runs: int, seed: int) -> tuple[pl.DataFrame, pl.DataFrame, list[dict[str, object]]]:
    g = Gen(seed)
    r = g.r
    # Benchmarks: 300 instances with patches and statements.
    bench = []
    for i in range(300):
        p, _, _ = g.patch(r.randint(3, 8))
        stmt = " ".join(r.choice(WORDS) for _ in range(r.randint(60, 160)))
        bench.append(
            {
                "benchmark": "synthbench",
                "instance_id": f"bench-org__{g.ident().replace('_', '-')}-{1000 + i}",
                "repo": "bench-org/lib",
                "base_commit": g.sha(),
                "problem_statement": stmt,
                "patch": p,
            }
        )
    bench_df = pl.DataFrame(bench)
    rows, labels = [], []
    leak_kinds = (
        "git_history",
        "foreign_object",
        "bug_patch",
        "network_fetch",
        "package_fetch",
        "site_packages",
    )
    for i in range(n_runs):
        pr = str(r.randint(100, 99999))
        n_add = r.randint(2, 6)
        patch, old, new = g.patch(n_add)
        fix_diff = "".join(f"-{x}\n" for x in old) + "".join(f"+{x}\n" for x in new)
        stmt = " ".join(r.choice(WORDS) for _ in range(r.randint(30, 120)))
        iid, repo = f"acme__w-{pr}", "acme__w"
        cmds, outs = (
            ["ls src", "cat src/m.py", "grep -rn render src | head"],
            ["m.py\nutil.py\n", g.source(int(10 ** r.uniform(1, 4.7))), "src/m.py:3:def render(frame):\n"],
        )
        label = {"expect": "keep", "secrets": []}
        roll = r.random()
        if roll < 0.30:
            kind = r.choice(leak_kinds)
            c, o, k, style = leak_case(g, kind, old if kind == "bug_patch" else new, fix_diff, pr)
            if style == "swesmith":  # SWE-smith: the patch introduces the bug; its removed lines are the fix
                iid = f"acme__w.{g.sha(8)}.func_pm_op_swap__{g.rand(8).lower()}"
            cmds, outs = cmds + c, outs + o
            label["expect"] = f"solution_leak/{k}"
        elif roll < 0.40:
            kind = r.choice([k for k in leak_kinds if k != "bug_patch"])
            c, o = attempt_case(g, kind)
            cmds, outs = cmds + c, outs + o
            label["expect"] = f"attempt/{kind}"
        elif roll < 0.55:
            c, o = benign_case(g, fix_diff)
            cmds, outs = cmds + c, outs + o
        elif roll < 0.65:
            b = bench[r.randrange(len(bench))]
            how = r.choice(["gold_patch", "problem_statement", "instance_id"])
            if how == "gold_patch":
                cmds, outs = [*cmds, "cat /tmp/review/fix.diff"], [*outs, b["patch"]]
            elif how == "problem_statement":
                stmt = b["problem_statement"]
            else:
                cmds, outs = [*cmds, "ls /results"], [*outs, f"{b['instance_id']}.json\n"]
            label["expect"] = f"benchmark_leak/{how}"
        if r.random() < 0.3:  # secrets, independent of leaks
            for kind in r.sample(SECRET_KINDS, r.randint(1, 2)):
                text, value = g.secret(kind)
                where = r.randrange(3)
                if where == 0:
                    cmds.insert(1, f"echo '{text}' >> .env")
                    outs.insert(1, "")
                elif where == 1:
                    cmds.insert(1, "cat .env")
                    outs.insert(1, f"DEBUG=1\n{text}\n")
                else:
                    cmds.insert(1, "cat config.txt")
                    outs.insert(1, g.source(r.randint(10, 3000)) + text + "\n")
                label["secrets"].append({"kind": kind, "value": value})
        if r.random() < 0.3:
            cmds.insert(1, "cat notes.txt")
            outs.insert(1, g.secret_lookalike() + "\n")
        uid = f"file:///synth/chunk.jsonl.gz#L{i + 1}"
        rows.append(make_row(uid, iid, repo, patch, stmt, cmds, outs))
        labels.append({"uid": uid, **label})
    return pl.DataFrame(rows, schema=polars_schema(WORK)), bench_df, labels


# ---------------------------------------------------------------------------------------------- step-limited writes

WRAPPERS = [
    "",
    "timeout -s KILL 30 ",
    "timeout -k 5 60 ",
    "env GIT_PAGER=cat ",
    "sudo -u dev ",
    "nice -n 5 ",
    "stdbuf -oL ",
    "cd /testbed && ",
]
# Compound shell forms around a read ({} the read, {q} the read shell-quoted).
COMPOUND = [
    "if [ -d .git ]; then {}; fi",
    "for f in src/m.py; do {}; done",
    "while true; do {}; break; done",
    "case x in x) {};; esac",
    "{{ {}; }} 2>&1 | head -200",
    "( cd /testbed && {} )",
    'echo "$({})"',
    "echo `{}`",
    "bash -c {q}",
    "sh -c {q}",
    "eval {q}",
    "show() {{ {}; }}; show",
    "{} \\\n  | cat",
]


def wrapped(form: str, cmd: str) -> str:
    """``cmd`` behind a wrapper prefix or inside a compound form."""
    if "{q}" in form:
        return form.replace("{q}", shlex.quote(cmd))
    if "{}" in form:
        return (
            form.replace("{{", "\0")
            .replace("}}", "\1")
            .replace("{}", cmd)
            .replace("\0", "{")
            .replace("\1", "}")
        )
    return form + cmd


def write_forms(
    g: Gen, old: list[str], new: list[str], src_path: str, before: list[str], after: list[str]
) -> list[str]:
    """The commands a run can type a fix with: a converted edit, sed -i, python replace, git apply (a patch
    with git's three context lines, ``before``/``after``)."""
    from pipeline.convert.edits import replace_command

    diff = (
        f"--- a/{src_path}\n+++ b/{src_path}\n@@ -1,{len(old)} +1,{len(new)} @@\n"
        + "".join(f" {x}\n" for x in before)
        + "".join(f"-{x}\n" for x in old)
        + "".join(f"+{x}\n" for x in new)
        + "".join(f" {x}\n" for x in after)
    )
    first_old, first_new = old[0].strip(), new[0].strip()
    sed_safe = all(c not in first_old + first_new for c in "/&\\'[]*.^$")
    forms = [
        replace_command(
            f"/testbed/{src_path}",
            [("\n".join(old) + "\n", "\n".join(new) + "\n", False)],
            f"The file /testbed/{src_path} has been edited.\n",
        ),
        f"git apply <<'EOF'\n{diff}EOF",
        "python3 - <<'PY'\nfrom pathlib import Path\np = Path(" + repr(src_path) + ")\n"
        f"p.write_text(p.read_text().replace({chr(10).join(old)!r}, {chr(10).join(new)!r}))\nPY",
    ]
    if sed_safe and len(old) == 1 and len(new) == 1:
        forms.append(f"sed -i 's/{first_old}/{first_new}/' {src_path}")
    return forms


def write_cases(n_runs: int, seed: int) -> tuple[pl.DataFrame, list[dict[str, object]]]:
    """Runs cut by the step limit (no submission, pool task: no gold patch) that read a fix from history
    or upstream and then type it in (a leak), type something else (an attempt), or type it *before*
    reading their own commit (benign). Reads and writes take every wrapper and write form."""
    g = Gen(seed)
    r = g.r
    rows, labels = [], []
    for i in range(n_runs):
        pr = str(r.randint(100, 99999))
        src = g.source(r.randint(400, 3000)).split("\n")
        at = r.randrange(3, max(4, len(src) - 8))
        n_old = r.randint(1, 3)
        old = [g.code_line() for _ in range(n_old)]  # an edit's old text is unique in its file
        src[at : at + n_old] = old
        new = [g.code_line() for _ in range(r.randint(1, 3))]
        fixed = src[:at] + new + src[at + len(old) :]
        context = src[max(0, at - 3) : at]
        after = src[at + len(old) : at + len(old) + 3]
        hunk = (
            "diff --git a/src/m.py b/src/m.py\n--- a/src/m.py\n+++ b/src/m.py\n@@ -1,9 +1,9 @@\n"
            + "".join(f" {x}\n" for x in context)
            + "".join(f"-{x}\n" for x in old)
            + "".join(f"+{x}\n" for x in new)
            + "".join(f" {x}\n" for x in after)
        )
        sha = g.sha()
        show = f"commit {sha}\nAuthor: dev <d@x>\n\n    Fix {g.ident()}\n\n{hunk}"
        wrap = r.choice(WRAPPERS + COMPOUND)
        how = r.choice(
            [
                "log_all_p",
                "oneline_then_show",
                "remote_file",
                "curl_raw",
                "log_S",
                "stash_show",
                "diff_sha",
                "reflog_p",
            ]
        )
        if how == "log_all_p":
            reads, outs, kind = [wrapped(wrap, "git log --all -p -- src/m.py")], [show], "git_history"
        elif how == "log_S":
            reads, outs, kind = [wrapped(wrap, f"git log --all -S '{g.ident()}' -p")], [show], "git_history"
        elif how == "reflog_p":
            reads, outs, kind = [wrapped(wrap, "git log -g -p -n 3")], [show], "git_history"
        elif how == "stash_show":
            reads, outs, kind = [wrapped(wrap, "git stash show -p stash@{0}")], [hunk], "foreign_object"
        elif how == "diff_sha":
            reads, outs, kind = (
                [wrapped(wrap, f"git diff HEAD {sha[:7]} -- src/m.py")],
                [hunk],
                "foreign_object",
            )
        elif how == "oneline_then_show":
            reads = [wrapped(wrap, "git log --oneline --all"), wrapped(wrap, f"git show {sha[:7]}")]
            outs, kind = [f"{sha[:7]} Fix {g.ident()}\n{g.sha(7)} Initial import\n", show], "foreign_object"
        elif how == "remote_file":
            reads, outs, kind = (
                [wrapped(wrap, "git show origin/fix:src/m.py")],
                ["\n".join(fixed)],
                "foreign_object",
            )
        else:  # a fetched file whose text trips the fetch-error pattern: only the later write confirms it
            reads = [wrapped(wrap, "curl -s https://raw.githubusercontent.com/acme/w/main/src/m.py")]
            outs = [
                '"""Errors: Traceback (most recent call last) is printed on failure."""\n' + "\n".join(fixed)
            ]
            kind = "network_fetch"
        cat_n = "".join(f"{k:6d}\t{x}\n" for k, x in enumerate(src, 1))
        case = r.choice(["leak", "leak", "other", "before"])
        other = [g.code_line() for _ in new]
        write = r.choice(write_forms(g, old, new if case != "other" else other, "src/m.py", context, after))
        if case == "before":  # the run's own fix first, then history shows its own commit
            cmds = ["cat -n src/m.py", write, "git commit -qam fix", *reads, "python -m pytest -q"]
            obs = [cat_n, "", "", *outs, "3 passed\n"]
            expect = f"attempt/{kind}"
        else:
            cmds = ["cat -n src/m.py", *reads, write, "python -m pytest -q"]
            obs = [cat_n, *outs, "", "3 passed\n"]
            expect = f"solution_leak/{kind}" if case == "leak" else f"attempt/{kind}"
        if how == "curl_raw" and case != "leak":
            expect = "attempt/network_fetch"
        uid = f"file:///synth/steplimit.jsonl.gz#L{i + 1}"
        row = make_row(uid, f"acme__w-{pr}", "acme__w", "", g.ident(), cmds, obs, submit=False)
        rows.append(row)
        labels.append(
            {
                "uid": uid,
                "expect": expect,
                "how": how,
                "write": write.split()[0],
                "wrap": wrapped(wrap, "READ").replace("\n", "\\n"),
            }
        )
    return pl.DataFrame(rows, schema=polars_schema(WORK)), labels


# ---------------------------------------------------------------------------------------------- scoring


def text_bytes(df: pl.DataFrame) -> int:
    return int(
        df.select(
            pl.col("commands").list.eval(pl.element().str.len_bytes()).list.sum().sum()
            + pl.col("outputs").list.eval(pl.element().str.len_bytes()).list.sum().sum()
            + pl.col("messages")
            .list.eval(pl.element().struct.field("content").str.len_bytes())
            .list.sum()
            .sum()
        ).item()
    )


def prf(tp: int, fp: int, fn: int) -> tuple[float, float]:
    return (tp / (tp + fp) if tp + fp else 1.0), (tp / (tp + fn) if tp + fn else 1.0)


def score_leaks(
    expect: dict[str, str], got: dict[str, str], attempts: Counter[str] | None = None
) -> list[str]:
    kinds = sorted(
        {e for e in expect.values() if "/" in e and not e.startswith("attempt")} | {v for v in got.values()}
    )
    lines = [
        "| kind | planted | dropped | TP | FP | FN | precision | recall |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for k in kinds:
        tp = sum(1 for u, e in expect.items() if e == k and got.get(u) == k)
        fp = sum(1 for u, v in got.items() if v == k and expect.get(u) != k)
        fn = sum(1 for u, e in expect.items() if e == k and got.get(u) != k)
        p, rc = prf(tp, fp, fn)
        planted = sum(1 for e in expect.values() if e == k)
        lines.append(
            f"| {k} | {planted} | {sum(1 for v in got.values() if v == k)} | {tp} | {fp} | {fn} | "
            f"{p:.2%} | {rc:.2%} |"
        )
    return lines


def step_limited_section(ctx: Context, seed: int, n_runs: int = 600) -> list[str]:
    """Precision/recall of the confirmation from the run's own writes."""
    batch, labels = write_cases(n_runs, seed + 1)
    out = SolutionLeak(ctx)(batch)
    got = {d["source_uid"]: f"{d['stage']}/{d['reason']}" for d in out.dropped.iter_rows(named=True)}
    expect = {str(lb["uid"]): str(lb["expect"]) for lb in labels}
    attempts = [u for u, e in expect.items() if e.startswith("attempt/")]
    by_how: dict[str, Counter[str]] = defaultdict(Counter)
    by_wrap: dict[str, Counter[str]] = defaultdict(Counter)
    for lb in labels:
        u, e = str(lb["uid"]), str(lb["expect"])
        ok = got.get(u) == e if e.startswith("solution_leak/") else u not in got
        by_how[f"{lb['how']} / {lb['write']}"]["ok" if ok else "wrong"] += 1
        by_wrap[str(lb["wrap"])]["ok" if ok else "wrong"] += 1
    lines = [
        "## Step-limited runs confirmed by their own writes",
        "",
        f"`write_cases({n_runs}, seed={seed + 1})`: runs with no submission and no gold patch that read a fix "
        "(`git log --all -p`, `git log --all -S`, `git log -g -p`, `git log --oneline --all` + `git show <sha>`, "
        "`git show origin/fix:file`, `git diff HEAD <sha>`, `git stash show -p`, `curl` of the raw file), each read "
        "behind a random wrapper or inside a random compound command (table below), then type it in (converted "
        "edit, `git apply`, python replace, `sed -i`): a leak; or type something else, or type the fix *before* "
        "reading their own commit: an attempt, kept.",
        "",
        *score_leaks(expect, got),
        "",
        f"Attempt twins: {len(attempts)}, wrongly dropped: {sum(1 for u in attempts if u in got)}.",
        "",
        "| read / write form | right | wrong |",
        "|---|---|---|",
        *(f"| {k} | {v['ok']} | {v['wrong']} |" for k, v in sorted(by_how.items())),
        "",
        "| wrapper or compound form | right | wrong |",
        "|---|---|---|",
        *(
            "| `` " + k.replace("|", "\\|") + f" `` | {v['ok']} | {v['wrong']} |"
            for k, v in sorted(by_wrap.items())
        ),
        "",
    ]
    return lines


def standalone(args: argparse.Namespace) -> str:
    t0 = time.perf_counter()
    batch, bench, labels = generate(args.runs, args.seed)
    gen_s = time.perf_counter() - t0
    ctx = Context(config=Config(), benchmarks=bench, catalog_tasks=None)
    mb = text_bytes(batch) / 1e6
    out_lines = [
        f"# Leak and secret filters: bench (`bench/leaks.py --runs {args.runs} --seed {args.seed}`)",
        "",
        f"{batch.height} runs, {mb:.1f} MB of text (commands + outputs + messages), generated in {gen_s:.1f} s; "
        "2 shared vCPUs.",
        "",
    ]
    sol, ben = SolutionLeak(ctx), BenchmarkLeak(ctx)
    t = time.perf_counter()
    s_out = sol(batch)
    t_sol = time.perf_counter() - t
    t = time.perf_counter()
    b_out = ben(s_out.kept)
    t_ben = time.perf_counter() - t
    t = time.perf_counter()
    sc = Scrub(ctx)(batch)
    t_scr = time.perf_counter() - t
    got = {
        d["source_uid"]: f"{d['stage']}/{d['reason']}"
        for d in pl.concat([s_out.dropped, b_out.dropped]).iter_rows(named=True)
    }
    expect = {lb["uid"]: lb["expect"] for lb in labels}
    out_lines += ["## Leaks (drops)", "", *score_leaks(expect, got), ""]
    att_planted = Counter(e.split("/")[1] for e in expect.values() if e.startswith("attempt/"))
    att_kept = Counter(
        e.split("/")[1] for u, e in expect.items() if e.startswith("attempt/") and u not in got
    )
    benign = [u for u, e in expect.items() if e == "keep"]
    out_lines += [
        f"Attempts planted {dict(att_planted)}; kept {dict(att_kept)}; counters "
        f"{ {k: v for k, v in s_out.counters.items() if 'attempt' in k} }.",
        f"Benign look-alike/clean runs: {len(benign)}, wrongly dropped: {sum(1 for u in benign if u in got)}.",
        "",
    ]
    out_lines += step_limited_section(ctx, args.seed)
    # secrets: per run and kind, planted distinct values vs values gone from the published text
    kept_text = {
        r["source_uid"]: "\n".join(r["commands"] + r["outputs"] + [m["content"] for m in r["messages"]])
        for r in sc.kept.iter_rows(named=True)
    }
    tp: Counter[str] = Counter()
    fn: Counter[str] = Counter()
    planted: Counter[str] = Counter()
    for lb in labels:
        for s in lb["secrets"]:
            planted[s["kind"]] += 1
            gone = (
                s["value"] not in kept_text[lb["uid"]] and f"<REDACTED:{s['kind']}>" in kept_text[lb["uid"]]
            )
            (tp if gone else fn)[s["kind"]] += 1
    counted = Counter({k.split("/", 1)[1]: v for k, v in sc.counters.items()})
    out_lines += [
        "## Secrets (scrub)",
        "",
        "| kind | planted | redacted (counter) | TP | FP | FN | precision | recall |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for k in SECRET_KINDS:
        fp = max(0, counted[k] - tp[k])
        p, rc = prf(tp[k], fp, fn[k])
        out_lines.append(
            f"| {k} | {planted[k]} | {counted[k]} | {tp[k]} | {fp} | {fn[k]} | {p:.2%} | {rc:.2%} |"
        )
    out_lines += [
        "",
        "## Throughput",
        "",
        "| stage | seconds | MB/s of input text |",
        "|---|---|---|",
        f"| solution_leak | {t_sol:.3f} | {mb / t_sol:.1f} |",
        f"| benchmark_leak | {t_ben:.3f} | {mb / t_ben:.1f} |",
        f"| scrub | {t_scr:.3f} | {mb / t_scr:.1f} |",
    ]
    # engine comparison for scrub
    col_text = pl.concat(
        [
            batch["commands"].explode(),
            batch["outputs"].explode(),
            batch["messages"].explode().struct.field("content"),
        ]
    ).drop_nulls()
    t = time.perf_counter()
    s = col_text
    for pat in PATTERNS:
        s = s.str.replace_all(pat.regex, "<REDACTED>")
    t_all = time.perf_counter() - t
    out_lines.append(
        f"| (alt) polars replace_all of every pattern, no validators | {t_all:.3f} | {mb / t_all:.1f} |"
    )
    if args.detect_secrets:
        with tempfile.TemporaryDirectory() as d:
            f = Path(d) / "corpus.txt"
            f.write_text("\n".join(col_text.to_list()))
            code = (
                "import sys,time;from detect_secrets import SecretsCollection;from detect_secrets.settings import "
                "default_settings\nc=SecretsCollection()\nt=time.perf_counter()\nwith default_settings():\n"
                " c.scan_file(sys.argv[1])\nprint(time.perf_counter()-t, sum(len(v) for v in c.data.values()))"
            )
            res = subprocess.run(
                [args.detect_secrets, "-c", code, str(f)], capture_output=True, text=True, check=False
            )
            try:
                secs, n = res.stdout.split()
                out_lines.append(
                    f"| (alt) detect-secrets 1.5 default plugins ({n} findings) | {float(secs):.3f} | "
                    f"{mb / float(secs):.1f} |"
                )
            except ValueError:
                out_lines.append(f"| (alt) detect-secrets failed: {res.stderr[-200:]!r} | | |")
    return "\n".join(out_lines) + "\n"


RETIRED = "shard retired (active: false)"  # never read by a fresh multi-epoch run: no fate to score


def published_texts(workdir: Path) -> dict[str, str]:
    """source_uid -> every string cell and message content of its published row."""
    out: dict[str, str] = {}
    for f in sorted((workdir / "publish").glob("*/data/*.parquet")):
        df = pl.read_parquet(f)
        strings = [c for c, t in df.schema.items() if t == pl.Utf8]
        for row in df.iter_rows(named=True):
            parts = [row[c] or "" for c in strings] + [m["content"] or "" for m in row["messages"]]
            out[row["source_uid"]] = "\n".join(parts)
    return out


def from_workdir(args: argparse.Namespace) -> str:
    labels = [json.loads(x) for x in Path(args.labels).read_text().splitlines() if x.strip()]
    labels = [lb for lb in labels if RETIRED not in lb["note"]]
    work = Path(args.workdir)
    drops = pl.read_parquet(work / "ledger" / "drops.parquet")
    pub = published_texts(work)
    fate: dict[str, str] = {}  # uid suffix -> stage/reason, "keep" (published) or "missing"
    for lb in labels:
        suf = lb["uid_suffix"]
        hit = drops.filter(pl.col("source_uid").str.ends_with(suf))
        if hit.height:
            fate[suf] = f"{hit['stage'][0]}/{hit['reason'][0]}"
        else:
            fate[suf] = "keep" if any(u.endswith(suf) for u in pub) else "missing"
    expect = {
        lb["uid_suffix"]: lb["expect"]
        for lb in labels
        if lb["expect"].startswith(("solution_leak/", "benchmark_leak/", "keep"))
    }
    got = {u: r for u, r in fate.items() if r.startswith(("solution_leak/", "benchmark_leak/"))}
    wrong = [
        (lb["expect"], fate[lb["uid_suffix"]], lb["uid_suffix"])
        for lb in labels
        if lb["expect"] != fate[lb["uid_suffix"]]
    ]
    lines = [
        f"# Leak filters scored against {args.labels}",
        "",
        *score_leaks(expect, got),
        "",
        f"All labels (every stage, retired shards excepted): {len(labels)}, agreeing with the ledger: "
        f"{len(labels) - len(wrong)}" + "".join(f"\n- expected {e}, got {g}: {u}" for e, g, u in wrong),
        "",
    ]
    # secrets: a planted value is redacted when no published text of its run (or any run) still holds it
    stats_p = work / "ledger" / "stats.json"
    counters = json.loads(stats_p.read_text()).get("counters", {}) if stats_p.exists() else {}
    blob = "\n\x00".join(pub.values())
    planted: Counter[str] = Counter()
    published_runs: Counter[str] = Counter()
    leaked: Counter[str] = Counter()
    for lb in labels:
        for kind, value in zip(lb.get("secrets", []), lb.get("secret_values", []), strict=False):
            planted[kind] += 1
            if fate[lb["uid_suffix"]] == "keep":
                published_runs[kind] += 1
            pieces = [x for x in value.split("\n") if len(x) >= 12 and "-----" not in x] or [value]
            leaked[kind] += any(x in blob for x in pieces)
    lines += [
        "| secret kind | planted | in published runs | value still published | scrub counter | recall |",
        "|---|---|---|---|---|---|",
    ]
    for k in SECRET_KINDS:
        # a kind the labelled corpus never planted is shown as unmeasured, not as 100%
        rc = f"{1 - leaked[k] / planted[k]:.2%}" if planted[k] else "n/a: not planted by this corpus"
        lines.append(
            f"| {k} | {planted[k]} | {published_runs[k]} | {leaked[k]} | {counters.get(f'scrub/{k}', 0)} | "
            f"{rc} |"
        )
    residue: defaultdict[str, int] = defaultdict(int)
    for text in pub.values():
        for kind, _ in find_secrets(text):
            residue[kind] += 1
    lines += [
        "",
        f"Secrets still detectable in published text (every string column and message): "
        f"{dict(residue) or 'none'}",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--labels")
    ap.add_argument("--workdir")
    ap.add_argument(
        "--detect-secrets", help="a python that has detect-secrets installed (timed for comparison)"
    )
    ap.add_argument("--out", help="also write the report here (markdown)")
    args = ap.parse_args()
    report = from_workdir(args) if args.labels and args.workdir else standalone(args)
    print(report)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(report)


if __name__ == "__main__":
    main()
