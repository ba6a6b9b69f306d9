"""``trajpipe synth``: a deterministic, realistic synthetic corpus in the input formats the pipeline reads.

Writes, under ``out``:

* ``affine/``: ``corpus/manifest.json`` + ``corpus/manifests/<sha256>.json`` (one revision per
  epoch, chained by ``prev_manifest``), view chunks ``views/duel_turns@v4/chunks/view_EEEE_IIII.jsonl.gz``
  and trace chunks ``traces/chunks/<src>-<utc>-<sha12>.jsonl.gz`` listed in ``traces/manifest.json``;
* ``swelego/data/``: resolved Parquet files and unresolved JSONL files (OpenHands text),
  ``<split>-0000i-of-0000N.<ext>``;
* at most ``chunk_records`` records in any view chunk, trace chunk or SWE-Lego file, so a unit of
  work stays the same size however large the corpus grows;
* ``catalog/``: ``tasks.parquet`` and ``runs/part-0.parquet`` (earlier published runs);
* ``benchmarks/synthetic_bench.jsonl`` when no benchmark folder is given;
* ``labels.jsonl``: what the pipeline must do with every run (docs/ARCHITECTURE.md).

Same seed → same bytes: every random choice comes from ``random.Random`` seeded by sha256 of
(seed, purpose), gzip headers carry mtime 0, JSON keys are sorted and timestamps derive from the
seed and the epoch. Epoch ``i``'s files do not depend on how many epochs were asked for, so a
corpus of K+1 epochs extends a corpus of K epochs (the current ``manifest.json`` aside).
"""

from __future__ import annotations

import copy
import datetime as dt
import hashlib
import random
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.devkit.synth import affine_writer
from pipeline.devkit.synth.content import (
    PLANTED_SECRET_KINDS,
    REPOS,
    Repo,
    RepoSpec,
    digest,
    make_repo,
    rand_hex,
)
from pipeline.devkit.synth.plan import RunBuilder, TaskInfo, build_run, make_task
from pipeline.devkit.synth.render import (
    TOOLS,
    bake_view,
    render_mini,
    render_openhands,
    render_tools,
    trace_nodes,
)
from schemas.run import PUBLISHED

BASE_EPOCH = 84
VIEW_DIR = "views/duel_turns@v4/chunks"
LEAK_KINDS = ("git_history", "foreign_object", "bug_patch", "network_fetch", "package_fetch", "site_packages")
# (harness, dialect) combinations every corpus covers; mini-swe's "dialect" is its fence tag
COMBOS: tuple[tuple[str, str], ...] = (
    ("mini_swe_textbased", "bash"),
    ("mini_swe_textbased", "mswea_bash_command"),
    ("mini_swe_textbased", "sh"),
    ("bash", "qwen_json"),
    ("bash", "glm"),
    ("bash", "xml"),
    ("pi", "qwen_json"),
    ("pi", "glm"),
    ("claude_code", "xml"),
    ("claude_code", "qwen_json"),
    ("hermes_agent", "glm"),
    ("hermes_agent", "xml"),
)
MODELS = {
    "qwen_json": ("engy/qwen3.8-27b", "Qwen/Qwen3.8-27B"),
    "glm": ("zai-org/GLM-5.3-Flash", "zai-org/GLM-4.6"),
    "xml": ("Qwen/Qwen3-Coder-30B-A3B-Instruct", "Qwen/Qwen3-Coder-480B-A35B-Instruct"),
}
POLICY = {
    "mini_swe_textbased": "teacher_textbased",
    "bash": "teacher_bashtool",
    "pi": "teacher_pi",
    "claude_code": "teacher_claude_code",
    "hermes_agent": "teacher_hermes",
}
GROUPS = ("coding", "coding", "coding", "completion", "king_fail", "king_pivot", "king_done")
USERS = ("dev", "ubuntu", "agent", "runner")


def _rng(*parts: object) -> random.Random:
    return random.Random(int(digest(*parts)[:16], 16))


def _gz(data: bytes) -> bytes:
    """Deterministic gzip (mtime 0, no file name); level 1 keeps generation fast."""
    return affine_writer.gzip_bytes(data, level=1)


def _dumps(obj: Any) -> bytes:
    return orjson.dumps(obj, option=orjson.OPT_SORT_KEYS)


def _write(path: Path, data: bytes) -> None:
    affine_writer.write_bytes(path, data)


@dataclass
class Planned:
    """One run to emit: what it is, how it is rendered, what the pipeline must do with it."""

    task: TaskInfo
    harness: str
    dialect: str
    expect: str = "keep"
    plants: list[tuple[str, Any]] = field(default_factory=list)
    note: list[str] = field(default_factory=list)
    root: str = ""
    n_turns: int = 30
    submit: bool = True
    with_base_commit: bool = False
    fork: bool = False
    # filled when built
    builder: RunBuilder | None = None
    record: dict[str, Any] | None = None


@dataclass
class Corpus:
    """State shared across epochs while generating."""

    seed: int
    repos: list[Repo]
    bench: list[dict[str, Any]]
    labels: list[dict[str, Any]] = field(default_factory=list)
    summary: Counter[str] = field(default_factory=Counter)
    prev_normals: list[tuple[dict[str, Any], str]] = field(default_factory=list)  # (view record, uid)
    catalog_dup: tuple[Planned, str] | None = None
    catalog_tasks: list[dict[str, Any]] = field(default_factory=list)
    first_pairs: list[tuple[dict[str, Any], dict[str, Any]]] = field(default_factory=list)  # (label, record)
    bytes_out: int = 0


# ----------------------------------------------------------------------------- helpers


def pick_root(rng: random.Random, name: str) -> str:
    r = rng.random()
    if r < 0.22:
        return f"/workspace/{name}"
    if r < 0.40:
        return "/repo"
    if r < 0.52:
        return "/app"
    if r < 0.72:
        return "/testbed"
    if r < 0.86:
        return f"/home/{rng.choice(USERS)}/{name}"
    return f"/tmp/tmp{''.join(rng.choices('abcdefghijklmnopqrstuvwxyz0123456789_', k=8))}/{name}"


def pick_turns(rng: random.Random) -> int:
    return rng.randint(10, 80)


def epoch_time(seed: int, ei: int) -> dt.datetime:
    base = dt.datetime(2026, 9, 1, 6, 0, 0, tzinfo=dt.UTC) + dt.timedelta(days=seed % 60)
    return base + dt.timedelta(days=ei)


def iso(t: dt.datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def pool_for(rng: random.Random, spec: RepoSpec) -> str:
    if spec.language == "python":
        return rng.choice(("swesmith", "swesmith", "scaleswe", "swerebench_v2", "swelego"))
    return rng.choice(("swesmith", "swesmith", "multiswe"))


def new_task(rng: random.Random, c: Corpus, lang: str | None = None, pool: str | None = None) -> TaskInfo:
    repos = [r for r in c.repos if lang is None or r.spec.language == lang]
    repo = rng.choice(repos)
    return make_task(rng, repo, pool or pool_for(rng, repo.spec))


# ----------------------------------------------------------------------------- rendering


def build(p: Planned, rng: random.Random) -> None:
    p.builder = build_run(rng, p.task, p.root, p.harness, p.n_turns, p.plants, p.submit)


def conversation(p: Planned, rng: random.Random) -> list[dict[str, Any]]:
    assert p.builder is not None
    t = p.task
    if p.harness == "mini_swe_textbased":
        return render_mini(p.builder.acts, t.statement, rng, fence=p.dialect)
    final = "I fixed the comparison so boundary items are kept; the tests pass now." if p.submit else None
    return render_tools(p.builder.acts, p.harness, t.statement, p.root, t.repo.spec.language, rng, final)


def view_nodes(
    chain: list[tuple[str, str]], fork: bool, rng: random.Random
) -> tuple[list[dict[str, Any]], list[int]]:
    """Nodes of a view record (a chain, or a tree with a short dead-end branch spliced in) and
    the node ids of the main root→leaf path."""
    nodes: list[dict[str, Any]] = [
        {"parent": i - 1 if i else None, "role": r, "content": c} for i, (r, c) in enumerate(chain)
    ]
    asst = [i for i, n in enumerate(nodes) if n["role"] == "assistant" and 3 < i < len(nodes) - 4]
    if not fork or not asst:
        return nodes, list(range(len(nodes)))
    k = rng.choice(asst)  # branch: another reply to the prompt that led to node k, and its observation
    obs = nodes[k + 1]["content"]
    n_calls = max(1, nodes[k]["content"].count("<tool_call>"))
    alt_obs = (
        "\n".join(["<tool_response>\ninterrupted\n</tool_response>"] * n_calls)
        if obs.startswith("<tool_response>")
        else "<returncode>130</returncode>\n<output>\ninterrupted\n</output>"
    )
    out = nodes[: k + 2]
    out.append(
        {
            "parent": k - 1,
            "role": "assistant",
            "content": "Let me try a different approach first.\n\n" + nodes[k]["content"],
        }
    )
    out.append({"parent": len(out) - 1, "role": "user", "content": alt_obs})
    for n in nodes[k + 2 :]:
        m = dict(n)
        if m["parent"] is not None and m["parent"] > k + 1:
            m["parent"] += 2
        out.append(m)
    main = [*range(k + 2), *range(k + 4, len(out))]
    return out, main


def turns_of(nodes: list[dict[str, Any]], main: list[int], action_kind: str) -> list[dict[str, Any]]:
    """duel_turns@v4 ``turns``: one per assistant node of the main path, with prefix sizes."""
    out: list[dict[str, Any]] = []
    asst = [i for i in main if nodes[i]["role"] == "assistant"]
    pos: dict[int, int] = {}
    acc = 0
    for i in main:
        pos[i] = acc
        acc += len(nodes[i]["content"])
    for t, i in enumerate(asst):
        phase = ("early", "mid", "late")[min(2, 3 * t // max(1, len(asst)))]
        out.append(
            {
                "turn_idx": t,
                "node_id": i,
                "phase": phase,
                "suffix_len": len(nodes[i]["content"]),
                "n_prefix_chars": pos[i],
                "action_kind": action_kind,
            }
        )
    return out


def ids_for(rng: random.Random, instance_id: str) -> tuple[str, str]:
    rollout = (
        f"{rand_hex(rng, 8)}-{rand_hex(rng, 4)}-4{rand_hex(rng, 3)}-a{rand_hex(rng, 3)}-{rand_hex(rng, 12)}"
    )
    stem, num = instance_id, "0"
    if "-" in instance_id and instance_id.rsplit("-", 1)[1].isdigit():
        stem, num = instance_id.rsplit("-", 1)
    traj = f"{stem}.{hashlib.sha256(instance_id.encode()).hexdigest()[:8]}.pr_{num}__{rand_hex(rng, 8)}"
    return rollout, traj


def view_record(p: Planned, rng: random.Random, when: dt.datetime) -> dict[str, Any]:
    msgs = conversation(p, rng)
    tools = TOOLS.get(p.harness, [])
    chain = (
        [(m["role"], m["content"]) for m in msgs]
        if p.harness == "mini_swe_textbased"
        else bake_view(msgs, p.dialect, tools)
    )
    action_kind = "bash" if p.harness == "mini_swe_textbased" else "tool_call"
    model = (
        rng.choice(MODELS.get(p.dialect, MODELS["qwen_json"]))
        if action_kind == "tool_call"
        else rng.choice(("engy/qwen3.8-27b", "zai-org/GLM-5.3-Flash", "affine/king-7f3a9c"))
    )
    t = p.task
    rollout, traj = ids_for(rng, t.instance_id)
    nodes, main = view_nodes(chain, p.fork, rng)
    group = rng.choice(GROUPS)
    rec: dict[str, Any] = {
        "view": "duel_turns@v4",
        "rollout_id": rollout,
        "traj_id": traj,
        "instance_id": t.instance_id,
        "repo": f"{t.repo.spec.owner}/{t.repo.spec.name}",
        "model": model,
        "policy": {
            "id": POLICY[p.harness] if "king" not in model else "king_" + POLICY[p.harness].split("_", 1)[1],
            "harness": p.harness,
            "action_kind": action_kind,
        },
        "source": t.pool,
        "language": t.repo.spec.language,
        "stratum": f"{group}:{int(hashlib.sha256(t.instance_id.encode()).hexdigest(), 16) % 10000:04d}",
        "action_kind": action_kind,
        "generated_at": iso(when - dt.timedelta(seconds=rng.randint(600, 80000))),
        "nodes": nodes,
        "turns": turns_of(nodes, main, action_kind),
    }
    if p.with_base_commit:
        rec["base_commit"] = t.base_commit
    return rec


def trace_record(p: Planned, rng: random.Random, when: dt.datetime) -> dict[str, Any]:
    msgs = conversation(p, rng)
    t = p.task
    rollout, _ = ids_for(rng, t.instance_id)
    model = rng.choice(MODELS.get(p.dialect, MODELS["qwen_json"]))
    task: dict[str, Any] = {
        "uid": f"{t.instance_id}",
        "sid": t.instance_id,
        "repo": f"{t.repo.spec.owner}/{t.repo.spec.name}",
        "language": t.repo.spec.language,
        "image": f"swesmith/{t.repo.spec.key}.{t.base_commit[:8]}",
    }
    if p.with_base_commit:
        task["base_commit"] = t.base_commit
    return {
        "schema": 1,
        "rollout_id": rollout,
        "source": t.pool,
        "env_id": f"{t.pool}-v1",
        "task": task,
        "policy": {
            "id": POLICY[p.harness],
            "model": model,
            "harness": p.harness,
            "endpoint": "engy",
            "action_kind": "tool_call",
        },
        "stored_at": iso(when - dt.timedelta(seconds=rng.randint(60, 3600))),
        "trace": {
            "nodes": trace_nodes(msgs, rng),
            "tools": TOOLS[p.harness],
            "rewards": {"solved": {"score": float(rng.random() < 0.4), "weight": 1.0}},
            "stop_condition": "agent_completed" if p.submit else "max_turns",
            "info": {
                "run_tag": rand_hex(rng, 8),
                "generated_at": iso(when - dt.timedelta(seconds=rng.randint(3600, 9000))),
            },
        },
    }


# ----------------------------------------------------------------------------- planning


def plan_epoch(rng: random.Random, c: Corpus, ei: int, n_views: int) -> list[Planned]:
    """Ordinary runs plus one of every planted case, in a seed-shuffled order."""
    out: list[Planned] = []

    def planned(task: TaskInfo, harness: str | None = None, dialect: str | None = None, **kw: Any) -> Planned:
        if harness is None:
            harness, dialect = rng.choice(COMBOS)
        assert dialect is not None
        p = Planned(
            task,
            harness,
            dialect,
            root=pick_root(rng, task.repo.spec.name),
            n_turns=pick_turns(rng),
            with_base_commit=rng.random() < 0.3,
            fork=rng.random() < 0.12,
            submit=rng.random() < 0.9,
            **kw,
        )
        out.append(p)
        return p

    # solution leaks: confirmed (dropped), attempted (kept), benign look-alikes (kept)
    for kind in LEAK_KINDS:
        lang = "python" if kind in ("package_fetch", "site_packages") else None
        pool = "swesmith" if kind == "bug_patch" else None
        p = planned(
            new_task(rng, c, lang, pool), expect=f"solution_leak/{kind}", plants=[("leak", (kind, True))]
        )
        p.note.append(f"{kind} leak, confirmed by its output")
    for kind in ("git_history", "network_fetch", "package_fetch", "site_packages", "foreign_object"):
        lang = "python" if kind in ("package_fetch", "site_packages") else None
        p = planned(new_task(rng, c, lang), plants=[("leak", (kind, False))])
        p.note.append(f"{kind} attempted but unconfirmed (failed or empty): keep, counted as an attempt")
        p = planned(new_task(rng, c, lang), plants=[("benign", kind)])
        p.note.append(f"benign look-alike of {kind}")
    # secrets: all kinds spread over three runs
    for i in range(3):
        kinds = list(PLANTED_SECRET_KINDS[i * 5 : (i + 1) * 5])
        p = planned(new_task(rng, c), plants=[("secrets", kinds)])
        p.note.append("secrets in commands and outputs")
    # unknown tool
    p = planned(
        new_task(rng, c),
        "claude_code",
        "qwen_json",
        expect="convert/unknown_tool",
        plants=[("unknown_tool", None)],
    )
    # benchmark tasks and benchmark content
    bench = _rng(c.seed, "bench", ei).sample(c.bench, min(5, len(c.bench)))
    row = bench[0]
    owner, name = row["repo"].split("/", 1)
    brepo = make_repo(
        RepoSpec(owner, name, "python", name.replace("-", "_")), c.seed, commit=row["base_commit"]
    )
    p = planned(
        make_task(rng, brepo, "swelego", instance_id=row["instance_id"], statement=row["problem_statement"]),
        expect="task_dedup/benchmark_task",
    )
    p.with_base_commit = True
    p.note.append(f"instance id of benchmark row {row['benchmark']}:{row['instance_id']}")
    row = bench[1 % len(bench)]
    owner, name = row["repo"].split("/", 1)
    brepo = make_repo(
        RepoSpec(owner, name, "python", name.replace("-", "_")), c.seed, commit=row["base_commit"]
    )
    p = planned(make_task(rng, brepo, "swesmith"), expect="task_dedup/benchmark_task")
    p.with_base_commit = False
    p.note.append(
        f"same repo at the base commit of {row['benchmark']}:{row['instance_id']} (commit from the SWE-smith id)"
    )
    # the whole gold patch must be visible: take a row whose patch is not cut by output truncation
    fits = [r for r in bench if len(r["patch"]) < 8000] or bench
    row = fits[2 % len(fits)]
    cmd, thought = rng.choice(
        (
            ("cat docs/upstream_fix.patch", "There is a patch file in docs; let me read it."),
            ("cat /tmp/review/fix.diff", "A reviewer left a diff in /tmp/review; let me read it."),
            ("git stash show -p stash@{0}", "There is a stash in this checkout; what does it hold?"),
        )
    )
    p = planned(
        new_task(rng, c),
        expect="benchmark_leak/gold_patch",
        plants=[("output", (cmd, row["patch"], thought))],
    )
    p.note.append(f"output carries the gold patch of {row['instance_id']}")
    row = bench[3 % len(bench)]
    p = planned(
        new_task(rng, c),
        expect="benchmark_leak/problem_statement",
        plants=[
            ("output", ("cat ISSUE.md", row["problem_statement"], "Let me read the issue notes in the repo."))
        ],
    )
    p.note.append(f"output carries the problem statement of {row['instance_id']}")
    row = bench[4 % len(bench)]
    p = planned(
        new_task(rng, c),
        expect="benchmark_leak/instance_id",
        plants=[
            ("mention", f"This looks like the upstream issue {row['instance_id']}; I will fix it locally.")
        ],
    )
    p.note.append(f"thought names benchmark instance {row['instance_id']}")
    # two different runs on the same task: both kept
    t = new_task(rng, c)
    a = planned(t, "mini_swe_textbased", "bash")
    b = planned(t, "bash", "glm")
    a.note.append("same task as another run (different run): keep")
    b.note.append("same task as another run (different run): keep")
    if ei == 0:  # a run whose action stream equals a run already in the catalog
        t = new_task(rng, c)
        p = planned(t, "mini_swe_textbased", "bash", expect="traj_dedup/exact")
        p.root, p.fork, p.submit = "/testbed", False, True
        p.note.append("same action stream as catalog run catalog/runs/part-0.parquet#row=0")
        c.catalog_dup = (p, "")
    n_planted = len(out)
    # ordinary runs: every (harness, dialect) first, then random
    for i in range(max(len(COMBOS), n_views - n_planted)):
        h, d = COMBOS[i % len(COMBOS)] if i < len(COMBOS) else rng.choice(COMBOS)
        p = planned(new_task(rng, c), h, d)
        p.note.append("ordinary run")
    rng.shuffle(out)
    return out


def near_copy(rec: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """The same run with a few characters changed in its longest observation, new ids."""
    new = copy.deepcopy(rec)
    # an observation short enough to be published whole: an edit inside the part that output
    # truncation (10,000 chars) elides would leave the converted run identical, i.e. an exact copy
    users = [
        n
        for n in new["nodes"][2:]
        if n["role"] == "user"
        and 200 < len(n["content"]) < 8000
        and "<tool_response>" not in n["content"][200:]
    ]
    target = max(users, key=lambda n: len(n["content"])) if users else new["nodes"][-1]
    s = target["content"]
    pos = len(s) // 2
    target["content"] = s[:pos] + "zq7" + s[pos + 3 :]
    new["rollout_id"], new["traj_id"] = ids_for(rng, new["instance_id"])
    return new


# ----------------------------------------------------------------------------- writers


def write_chunk(root: Path, key: str, lines: list[bytes]) -> tuple[str, int]:
    raw = b"".join(line + b"\n" for line in lines)
    return affine_writer.write_chunk(root, key, raw, level=1), len(raw)


def label(
    c: Corpus, uid: str, expect: str, secrets: list[str], note: str, values: list[str] | None = None
) -> None:
    """One label line; ``secret_values`` are the planted secret strings, which no published text may hold."""
    c.labels.append(
        {
            "uid_suffix": uid,
            "expect": expect,
            "secrets": secrets,
            "secret_values": list(values or []),
            "note": note,
        }
    )
    c.summary[f"label/{expect}"] += 1


def _count(c: Corpus, kind: str, p: Planned) -> None:
    c.summary[f"kind/{kind}"] += 1
    c.summary[f"harness/{p.harness}"] += 1
    dialect = p.dialect if p.harness != "mini_swe_textbased" else "bash"
    if kind == "trace":
        dialect = "openai_tools"
    c.summary[f"dialect/{dialect}"] += 1
    if p.harness == "mini_swe_textbased":
        c.summary[f"fence/{p.dialect}"] += 1


def emit_epoch(out: Path, c: Corpus, ei: int, runs: int, chunk_records: int) -> list[dict[str, Any]]:
    """Write one epoch's view and trace chunks; return its new manifest shards."""
    rng = _rng(c.seed, "epoch", ei)
    when = epoch_time(c.seed, ei)
    epoch = BASE_EPOCH + ei
    planned = plan_epoch(rng, c, ei, max(24, int(runs * 0.85)))
    records: list[
        tuple[bytes, Planned | None, str, str, list[str]]
    ] = []  # line, planned, expect, note, secrets
    normals: list[tuple[dict[str, Any], Planned]] = []
    for p in planned:
        build(p, rng)
        rec = view_record(p, rng, when)
        p.record = rec
        assert p.builder is not None
        note = "; ".join(
            [f"{p.harness}/{p.dialect}", f"root={p.root}", *p.note, *(["forked"] if p.fork else [])]
        )
        records.append((_dumps(rec), p, p.expect, note, list(p.builder.secrets)))
        _count(c, "view", p)
        if p.expect == "keep" and p.note == ["ordinary run"] and not p.builder.secrets:
            normals.append((rec, p))
    # exact re-exports of the previous epoch, and a near duplicate of this one, go last
    for rec, uid in c.prev_normals[:2]:
        new = copy.deepcopy(rec)
        new["rollout_id"], new["traj_id"] = ids_for(rng, rec["instance_id"])
        new["generated_at"] = iso(when - dt.timedelta(seconds=rng.randint(600, 80000)))
        records.append(
            (_dumps(new), None, "traj_dedup/exact", f"re-export of {uid} under a new rollout id", [])
        )
        c.summary["kind/view"] += 1
    pending_near: list[tuple[bytes, dict[str, Any]]] = []
    for rec, _p in normals[:1]:
        pending_near.append((_dumps(near_copy(rec, rng)), rec))
        c.summary["kind/view"] += 1
    for line, rec in pending_near:
        records.append(
            (
                line,
                None,
                "traj_dedup/near",
                f"near-duplicate of @{rec['rollout_id']}@ (a few characters changed)",
                [],
            )
        )
    shards: list[dict[str, Any]] = []
    uid_of: dict[str, str] = {}
    for ci in range(0, len(records), chunk_records):
        part = records[ci : ci + chunk_records]
        key = f"{VIEW_DIR}/view_{epoch:04d}_{ci // chunk_records:04d}.jsonl.gz"
        sha, n = write_chunk(out, key, [r[0] for r in part])
        c.bytes_out += n
        n_turns = 0
        for li, (line, plan, planned_expect, planned_note, secrets) in enumerate(part, 1):
            expect, note = planned_expect, planned_note
            uid = f"{key}#L{li}"
            rec_obj = plan.record if plan is not None else orjson.loads(line)
            assert rec_obj is not None
            uid_of[rec_obj["rollout_id"]] = uid
            n_turns += len(rec_obj["turns"])
            if expect == "traj_dedup/near":  # name the original by its uid, now that it has one
                rid = note.split("@")[1]
                note = note.replace(f"@{rid}@", uid_of[rid])
                if uid < uid_of[rid]:
                    # traj_dedup keeps the lowest source_uid of a same-epoch cluster (L41 sorts before L8):
                    # then the copy is the representative and the original is the near-duplicate
                    orig = next(lb for lb in c.labels if lb["uid_suffix"] == uid_of[rid])
                    c.summary[f"label/{orig['expect']}"] -= 1
                    c.summary["label/traj_dedup/near"] += 1
                    orig["expect"] = "traj_dedup/near"
                    orig["note"] += f"; near-duplicate of {uid} (a few characters changed), which sorts first"
                    expect, note = "keep", note.replace("near-duplicate of", "kept over its near-duplicate")
            label(
                c,
                uid,
                expect,
                secrets,
                note,
                plan.builder.secret_values if plan is not None and plan.builder else [],
            )
            if (
                ei == 0
                and plan is not None
                and plan.note == ["ordinary run"]
                and expect == "keep"
                and len(c.first_pairs) < 8
            ):
                c.first_pairs.append((c.labels[-1], rec_obj))
            if plan is not None and c.catalog_dup is not None and c.catalog_dup[0] is plan:
                c.catalog_dup = (plan, uid)
        shards.append(
            {
                "key": key,
                "sha256": sha,
                "n_trajectories": len(part),
                "n_turns": n_turns,
                "format": "view_v4",
                "active": True,
            }
        )
    c.prev_normals = [(rec, uid_of[rec["rollout_id"]]) for rec, _ in normals[1:3]]
    if ei == 0:
        shards.append(malformed_chunk(out, c, epoch, len(shards), rng, when))
        shards.append(retired_chunk(out, c, epoch, len(shards), rng, when))
    emit_traces(out, c, ei, runs, rng, when, chunk_records)
    return shards


def malformed_chunk(
    out: Path, c: Corpus, epoch: int, idx: int, rng: random.Random, when: dt.datetime
) -> dict[str, Any]:
    """A chunk (valid sha256) whose every line is bad input: each must be quarantined."""
    key = f"{VIEW_DIR}/view_{epoch:04d}_{idx:04d}.jsonl.gz"
    good = {
        "view": "duel_turns@v4",
        "rollout_id": rand_hex(rng, 32),
        "instance_id": "pallets__click-2794",
        "repo": "pallets/click",
        "model": "engy/qwen3.8-27b",
        "generated_at": iso(when),
    }
    lines = [
        b'{"view": "duel_turns@v4", "rollout_id": "'
        + rand_hex(rng, 32).encode()
        + b'", "nodes": [{"parent": null, "role": "sys',
        b'[{"parent": null, "role": "system", "content": "not an object"}]',
        _dumps(good),
    ]
    sha, n = write_chunk(out, key, lines)
    c.bytes_out += n
    for li, (reason, note) in enumerate(
        (
            ("bad_json", "truncated JSON line"),
            ("not_object", "a JSON array, not an object"),
            ("missing_field", "view record without nodes"),
        ),
        1,
    ):
        label(c, f"{key}#L{li}", f"quarantine/{reason}", [], note)
    c.summary["kind/malformed"] += 3
    return {"key": key, "sha256": sha, "n_trajectories": 3, "n_turns": 0, "format": "view_v4", "active": True}


def retired_chunk(
    out: Path, c: Corpus, epoch: int, idx: int, rng: random.Random, when: dt.datetime
) -> dict[str, Any]:
    """A small shard that the next epoch's manifest marks ``active: false``."""
    key = f"{VIEW_DIR}/view_{epoch:04d}_{idx:04d}.jsonl.gz"
    lines, notes, n_turns = [], [], 0
    for _ in range(3):
        h, d = rng.choice(COMBOS)
        t = new_task(rng, c)
        p = Planned(t, h, d, root=pick_root(rng, t.repo.spec.name), n_turns=rng.randint(10, 20))
        build(p, rng)
        rec = view_record(p, rng, when)
        n_turns += len(rec["turns"])
        lines.append(_dumps(rec))
        notes.append(
            f"{h}/{d}; shard retired (active: false) from epoch {epoch + 1}: ingested only if epoch {epoch} was read before"
        )
        _count(c, "view", p)
    sha, n = write_chunk(out, key, lines)
    c.bytes_out += n
    for li, note in enumerate(notes, 1):
        label(c, f"{key}#L{li}", "keep", [], note)
    return {
        "key": key,
        "sha256": sha,
        "n_trajectories": 3,
        "n_turns": n_turns,
        "format": "view_v4",
        "active": True,
        "retire": True,
    }


def emit_traces(
    out: Path, c: Corpus, ei: int, runs: int, rng: random.Random, when: dt.datetime, chunk_records: int
) -> None:
    trng = _rng(c.seed, "traces", ei)
    n = max(6, runs // 10)
    harnesses = ("bash", "pi", "claude_code", "hermes_agent")
    plans: list[Planned] = []
    for i in range(n):
        h = harnesses[i % len(harnesses)]
        t = new_task(trng, c)
        p = Planned(
            t,
            h,
            trng.choice(("qwen_json", "glm", "xml")),
            root=pick_root(trng, t.repo.spec.name),
            n_turns=pick_turns(trng),
            with_base_commit=trng.random() < 0.5,
            submit=trng.random() < 0.9,
        )
        if i == 0:
            p.plants, p.expect = [("leak", ("network_fetch", True))], "solution_leak/network_fetch"
            p.note.append("network_fetch leak, confirmed by its output")
        elif i == 1:
            p.plants = [("secrets", ["github_token", "openai_key", "private_key"])]
            p.note.append("secrets in commands and outputs")
        elif i == 2:
            p.plants = [("benign", "git_history")]
            p.note.append("benign look-alike of git_history")
        plans.append(p)
    by_src: dict[str, list[Planned]] = {}
    for p in plans:
        by_src.setdefault(p.task.pool, []).append(p)
    listed = []
    utc = (when - dt.timedelta(hours=3)).strftime("%Y%m%dT%H%M%SZ")
    for src in sorted(by_src):
        lines, metas = [], []
        for p in by_src[src]:
            build(p, trng)
            lines.append(_dumps(trace_record(p, trng, when)))
            assert p.builder is not None
            metas.append((p, list(p.builder.secrets)))
            _count(c, "trace", p)
        # a source's traces are cut into chunks after all are generated, so the cap changes only
        # where the files end, never the records; the chunks of one source differ by their sha256
        for ci in range(0, len(lines), chunk_records):
            raw = b"".join(x + b"\n" for x in lines[ci : ci + chunk_records])
            data = _gz(raw)
            gsha = hashlib.sha256(data).hexdigest()
            key = f"traces/chunks/{src}-{utc}-{gsha[:12]}.jsonl.gz"
            _write(out / key, data)
            c.bytes_out += len(raw)
            listed.append({"key": key, "sha256": gsha})
            for li, (p, secrets) in enumerate(metas[ci : ci + chunk_records], 1):
                label(
                    c,
                    f"{key}#L{li}",
                    p.expect,
                    secrets,
                    "; ".join([f"trace {p.harness}", f"root={p.root}", *p.note]),
                    p.builder.secret_values if p.builder else [],
                )
    man = out / "traces" / "manifest.json"
    old = orjson.loads(man.read_bytes())["chunks"] if man.exists() and ei > 0 else []
    _write(
        man,
        orjson.dumps(
            {"chunks": sorted(old + listed, key=lambda x: x["key"])},
            option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2,
        ),
    )


def write_manifests(out: Path, seed: int, per_epoch: list[list[dict[str, Any]]]) -> list[str]:
    shas: list[str] = []
    prev: str | None = None
    listed: list[dict[str, Any]] = []
    for ei, shards in enumerate(per_epoch):
        if ei >= 1:  # the previous epoch retires its small shard
            for s in listed:
                if s.get("retire"):
                    s["active"] = False
        listed = [dict(s) for s in listed] + [dict(s) for s in shards]
        man = {
            "corpus_epoch": BASE_EPOCH + ei,
            "schema_version": 3,
            "view_spec": "duel_turns@v4",
            "created_at": iso(epoch_time(seed, ei)),
            "prev_manifest": prev,
            "shards": [{k: v for k, v in s.items() if k != "retire"} for s in listed],
        }
        data = orjson.dumps(man, option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2)
        sha = hashlib.sha256(data).hexdigest()
        _write(out / "corpus" / "manifests" / f"{sha}.json", data)
        _write(out / "corpus" / "manifest.json", data)
        shas.append(sha)
        prev = sha
    return shas


# ----------------------------------------------------------------------------- SWE-Lego


def split_names(split: str, n_rows: int, rows_per_file: int, ext: str) -> list[str]:
    """``<split>-0000i-of-0000N.<ext>`` for ``n_rows`` rows cut into files of ``rows_per_file``."""
    n = max(1, -(-n_rows // rows_per_file))
    return [f"{split}-{i:05d}-of-{n:05d}.{ext}" for i in range(n)]


def emit_swelego(out: Path, c: Corpus, runs: int, rows_per_file: int) -> None:
    rng = _rng(c.seed, "swelego")
    n = max(8, runs // 6)
    rows: list[tuple[str, list[dict[str, str]], str, str, list[str], list[str]]] = []
    py = [r for r in c.repos if r.spec.language == "python"]
    for i in range(n):
        repo = rng.choice(py)
        plants: list[tuple[str, Any]] = []
        expect, note = "keep", "openhands"
        if i == 0:
            plants, expect, note = (
                [("leak", ("git_history", True))],
                "solution_leak/git_history",
                "openhands; git_history leak, confirmed",
            )
        elif i == 1:
            plants, note = [("secrets", ["hf_token", "aws_access_key", "jwt"])], "openhands; secrets"
        t = make_task(rng, repo, "swelego")
        if i == 2 and c.bench:
            row = c.bench[-1]
            owner, name = row["repo"].split("/", 1)
            brepo = make_repo(
                RepoSpec(owner, name, "python", name.replace("-", "_")), c.seed, commit=row["base_commit"]
            )
            t = make_task(
                rng, brepo, "swelego", instance_id=row["instance_id"], statement=row["problem_statement"]
            )
            expect, note = (
                "task_dedup/benchmark_task",
                f"openhands; instance id of benchmark row {row['instance_id']}",
            )
        else:
            t.instance_id = f"{repo.spec.key}-{rng.randint(100, 99999)}"
        root = f"/workspace/{t.repo.spec.name}"
        b = build_run(rng, t, root, "openhands", pick_turns(rng), plants, True)
        if (
            i == 3 or rng.random() < 0.3
        ):  # an insert edit (always one: every corpus covers insert) (str_replace_editor insert) on a file the run viewed
            rel = t.test_rel
            text = b.read(rel)
            b.view(rel, full=True)
            line = min(3, text.count("\n"))
            lines = text.split("\n")
            ins = "# regression: boundary items must be kept"
            new_text = "\n".join([*lines[:line], ins, *lines[line:]])
            b.overlay[rel] = new_text
            from pipeline.devkit.synth.render import Act

            b.acts.insert(
                len(b.acts) - 1,
                Act(
                    "edit",
                    "Add a note to the test module.",
                    path=b.abs(rel),
                    text=text,
                    old="\n".join(lines[:line]) + "\n",
                    new="\n".join(lines[:line]) + "\n" + ins + "\n",
                    args={"insert_line": line, "insert_text": ins},
                ),
            )
        msgs = render_openhands(
            b.acts, t.statement, root, rng, "I fixed the boundary comparison; tests pass."
        )
        rows.append((t.instance_id, msgs, expect, note, list(b.secrets), list(b.secret_values)))
        c.summary["kind/swelego"] += 1
        c.summary["harness/openhands"] += 1
        c.summary["dialect/openhands"] += 1
    split = (2 * len(rows)) // 3
    resolved, unresolved = rows[:split], rows[split:]
    message_type = pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())]))
    for fi, pq_name in enumerate(split_names("resolved", len(resolved), rows_per_file, "parquet")):
        part = resolved[fi * rows_per_file : (fi + 1) * rows_per_file]
        table = pa.table(
            {
                "instance_id": pa.array([r[0] for r in part], pa.string()),
                "messages": pa.array([r[1] for r in part], message_type),
            }
        )
        path = out / "data" / pq_name
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(table, path, compression="zstd")
        c.bytes_out += path.stat().st_size
        for i, r in enumerate(part):  # rows are counted from 0 in each file
            label(c, f"{pq_name}#row={i}", r[2], r[4], r[3], r[5])
    for fi, js_name in enumerate(split_names("unresolved", len(unresolved), rows_per_file, "jsonl")):
        jsonl_lines: list[bytes] = []
        for i, r in enumerate(unresolved[fi * rows_per_file : (fi + 1) * rows_per_file]):
            as_string = (fi * rows_per_file + i) % 2 == 0  # JSON string in every other row of the split
            field_value: Any = orjson.dumps(r[1]).decode() if as_string else r[1]
            jsonl_lines.append(_dumps({"instance_id": r[0], "messages": field_value}))
            label(
                c,
                f"{js_name}#row={i}",
                r[2],
                r[4],
                r[3] + ("; messages as a JSON string" if as_string else ""),
                r[5],
            )
        raw = b"".join(x + b"\n" for x in jsonl_lines)
        _write(out / "data" / js_name, raw)
        c.bytes_out += len(raw)


# ----------------------------------------------------------------------------- catalog, benchmarks


def load_benchmarks(benchmarks: Path | None, out: Path, c_seed: int) -> list[dict[str, Any]]:
    if benchmarks is not None:
        rows: list[dict[str, Any]] = []
        for name in ("swebench_lite.jsonl", "swebench_verified.jsonl"):
            f = benchmarks / name
            if not f.exists():
                continue
            for line in f.read_bytes().splitlines():
                r = orjson.loads(line)
                if r.get("patch") and r.get("problem_statement") and r.get("base_commit"):
                    rows.append(
                        {
                            "benchmark": name.split(".")[0],
                            **{
                                k: r[k]
                                for k in ("instance_id", "repo", "base_commit", "problem_statement", "patch")
                            },
                        }
                    )
        if rows:
            return sorted(rows, key=lambda r: (r["benchmark"], r["instance_id"]))
    # no folder: a small synthetic benchmark table on its own repository
    rng = _rng(c_seed, "synthetic_bench")
    rows = []
    for i in range(8):
        spec = RepoSpec("acme-labs", f"widgetry{i % 3}", "python", f"widgetry{i % 3}")
        repo = make_repo(spec, c_seed + 1000 + i)
        t = make_task(rng, repo, "bench")
        rows.append(
            {
                "benchmark": "synthetic_bench",
                "instance_id": f"{spec.key}-{1000 + i}",
                "repo": f"{spec.owner}/{spec.name}",
                "base_commit": repo.commit,
                "problem_statement": t.statement,
                "patch": t.fix_diff,
            }
        )
    _write(out / "benchmarks" / "synthetic_bench.jsonl", b"".join(_dumps(r) + b"\n" for r in rows))
    return rows


def emit_catalog(out: Path, c: Corpus, first_epoch: list[tuple[dict[str, Any], dict[str, Any]]]) -> None:
    rng = _rng(c.seed, "catalog")
    tasks: list[dict[str, Any]] = []
    # runs of the first epoch whose task the catalog knows: same checkout (mapped) or another commit (not)
    seen: set[str] = set()
    for lab, rec in first_epoch:
        iid = rec["instance_id"]
        if lab["expect"] != "keep" or iid in seen or len(tasks) >= 8:
            continue
        seen.add(iid)
        owner_repo = rec["repo"].replace("/", "__")
        commit = rec.get("base_commit") or _commit_of(c, iid)
        # the pipeline knows a run's checkout only from base_commit or a SWE-smith id
        known = bool(rec.get("base_commit")) or bool(re.match(r"^[\w-]+__[\w.-]+\.[0-9a-f]{8}\.", iid))
        same = len(tasks) % 2 == 0
        kind = "albedo" if len(tasks) % 4 < 2 else "open-swe"
        tid = (
            f"{owner_repo}.{rand_hex(rng, 8)}"
            if kind == "albedo"
            else f"{owner_repo}-{rng.randint(10000, 99999)}"
        )
        tasks.append(
            {
                "task_id": tid,
                "id_kind": kind,
                "repo": owner_repo,
                "commit": commit if same else digest("other", commit)[:40],
                "upstream_id": iid,
            }
        )
        where = (
            (
                "the same checkout: maps"
                if known
                else "the same checkout, unknown to the run (no base_commit, pool id): does not map"
            )
            if same
            else "another commit: does not map"
        )
        lab["note"] += f"; catalog task {tid} ({kind}) at {where}"
    for _ in range(4):  # unrelated catalog tasks
        spec = rng.choice(REPOS)
        tasks.append(
            {
                "task_id": f"{spec.key}.{rand_hex(rng, 8)}",
                "id_kind": "albedo",
                "repo": spec.key,
                "commit": rand_hex(rng, 40),
                "upstream_id": f"{spec.key}-{rng.randint(100, 9999)}",
            }
        )
    path = out / "tasks.parquet"
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(
        pa.Table.from_pylist(
            tasks,
            pa.schema([(k, pa.string()) for k in ("task_id", "id_kind", "repo", "commit", "upstream_id")]),
        ),
        path,
    )
    c.catalog_tasks = tasks
    # earlier published runs: the duplicate first, then a few unrelated ones
    rows = []
    runs: list[tuple[Planned, str]] = []
    if c.catalog_dup is not None:
        runs.append(c.catalog_dup)
    for _ in range(3):
        t = new_task(rng, c)
        p = Planned(t, "mini_swe_textbased", "bash", root="/testbed", n_turns=rng.randint(10, 25))
        build(p, rng)
        runs.append((p, ""))
    for i, (p, _uid) in enumerate(runs):
        assert p.builder is not None
        if i == 0 and p.record is not None:
            msgs = published_messages(p.record, _uid)
        else:
            msgs = render_mini(p.builder.acts, p.task.statement, rng)[:-1]
        t = p.task
        iid = t.instance_id
        method = iid.split(".")[2].split("__")[0] if iid.count(".") >= 2 else "pr"
        family = (
            "pr"
            if method.startswith("pr_") or method == "pr"
            else (
                "lm"
                if method.startswith("lm_")
                else "combine"
                if method.startswith("combine_")
                else "mechanical"
            )
        )
        rows.append(
            {
                "instance_id": iid,
                "messages": msgs,
                "family": family,
                "repo": t.repo.spec.key,
                "language": t.repo.spec.language,
                "verified": False,
                "resolved": "unknown",
                "patch": "",
                "model": "engy/qwen3.8-27b",
                "harness": "mini_swe_textbased",
                "id_kind": "pool",
                "upstream_id": iid,
                "affine_source": t.pool,
                "origin": "Affine corpus",
                "source_uid": f"https://data.affine.io/views/duel_turns@v4/chunks/view_0070_{i:04d}.jsonl.gz#L{i + 1}",
                "submitted": True,
                "affine_fold_group": "coding",
            }
        )
    rpath = out / "runs" / "part-0.parquet"
    rpath.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows, PUBLISHED), rpath, compression="zstd")


def published_messages(record: dict[str, Any], uid: str) -> list[dict[str, str]]:
    """The messages this pipeline publishes for a view record: what an earlier published dataset holds.

    The catalog's duplicate must be a true re-export (same converted messages, so the same exact hash);
    copying the raw view nodes would differ in templates, truncation and the final submission turn.
    """
    from pipeline.convert import convert_episode
    from pipeline.core.episode import RawRun
    from pipeline.parsers import parse_raw

    raw = RawRun(uid or "synth:catalog", "Affine corpus", "view", BASE_EPOCH, record, len(_dumps(record)))
    return [{"role": m["role"], "content": m["content"]} for m in convert_episode(parse_raw(raw)).messages]


def _commit_of(c: Corpus, iid: str) -> str:
    for r in c.repos:
        if iid.startswith(r.spec.key):
            return r.commit
    return ""


# ----------------------------------------------------------------------------- entry point


def synth(
    out: Path,
    runs: int = 300,
    epochs: int = 2,
    seed: int = 7,
    benchmarks: Path | None = None,
    chunk_records: int = 250,
) -> dict[str, Any]:
    """Generate the synthetic corpus under ``out``; return counts per kind, harness, dialect and label.

    ``chunk_records`` caps the records of every view chunk, trace chunk and SWE-Lego file."""
    if chunk_records < 1:
        raise ValueError(f"chunk_records must be at least 1, got {chunk_records}")
    out = Path(out)
    repos = [make_repo(spec, seed) for spec in REPOS]
    bench = load_benchmarks(Path(benchmarks) if benchmarks is not None else None, out, seed)
    c = Corpus(seed, repos, bench)
    affine = out / "affine"
    per_epoch = []
    first: list[tuple[dict[str, Any], dict[str, Any]]] = []
    for ei in range(epochs):
        shards = emit_epoch(affine, c, ei, runs, chunk_records)
        per_epoch.append(shards)
        if ei == 0:
            first = c.first_pairs
    shas = write_manifests(affine, seed, per_epoch)
    emit_swelego(out / "swelego", c, runs, chunk_records)
    emit_catalog(out / "catalog", c, first)
    _write(out / "labels.jsonl", b"".join(_dumps(x) + b"\n" for x in c.labels))
    summary: dict[str, Any] = {
        "runs": len(c.labels),
        "uncompressed_bytes": c.bytes_out,
        "epochs": epochs,
        "manifests": shas,
        "benchmark_rows": len(bench),
    }
    for k, v in sorted(c.summary.items()):
        group, name = k.split("/", 1)
        summary.setdefault(group, {})[name] = v
    return summary
