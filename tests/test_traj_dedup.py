"""Trajectory dedup: exact and near duplicates against the batch and everything held."""

from __future__ import annotations

import random
from typing import Any

import polars as pl

from pipeline.core.config import DedupParams
from pipeline.dedup.keys import add_dedup_keys
from pipeline.stages.traj_dedup import traj_dedup
from schemas.run import WORK, polars_schema

PARAMS = DedupParams()
SYSTEM = {"role": "system", "content": "You are a helpful assistant that can interact with a computer."}


def commands(seed: int, n: int = 25) -> list[str]:
    """A realistic, run-specific action stream (different seeds give unrelated runs)."""
    rng = random.Random(seed)
    files = [f"src/pkg/mod_{rng.choice('abcdefgh')}{k}.py" for k in range(6)]
    names = [
        rng.choice(["parse", "load", "render", "visit", "merge", "split", "flush"])
        + "_"
        + rng.choice(["node", "token", "frame", "row", "item", "config"])
        for _ in range(8)
    ]
    out = []
    for _ in range(n):
        kind = rng.randrange(4)
        f, name = rng.choice(files), rng.choice(names)
        if kind == 0:
            out.append(f'grep -rn "def {name}" src/ --include=*.py')
        elif kind == 1:
            out.append(f"sed -n '{rng.randrange(1, 300)},{rng.randrange(300, 600)}p' /testbed/{f}")
        elif kind == 2:
            old, new = rng.choice(names), rng.choice(names)
            out.append(
                f"python3 - <<'EOF'\nfrom pathlib import Path\np = Path('/testbed/{f}')\n"
                f"s = p.read_text()\ns = s.replace('return {old}(x)', 'return {new}(x, strict=True)', 1)\n"
                f"p.write_text(s)\nEOF"
            )
        else:
            out.append(f"python -m pytest tests/test_{name}.py -x -q -k {rng.choice(names)}")
    return out


def run(
    uid: str,
    cmds: list[str],
    *,
    epoch: int = 1,
    resolved: str = "resolved",
    instance_id: str = "owner__repo-1",
    system: dict[str, str] = SYSTEM,
) -> dict[str, Any]:
    msgs = [system, {"role": "user", "content": f"Fix issue in {instance_id}"}]
    for c in cmds:
        msgs.append({"role": "assistant", "content": f"THOUGHT: next.\n\n```bash\n{c}\n```"})
        msgs.append({"role": "user", "content": "<returncode>0</returncode>\n<output>\n</output>"})
    return {
        "source_uid": uid,
        "epoch": epoch,
        "dataset": "mini-coder-affine-bash",
        "resolved": resolved,
        "instance_id": instance_id,
        "messages": msgs,
        "commands": cmds,
    }


def frame(rows: list[dict[str, Any]]) -> pl.DataFrame:
    schema = polars_schema(WORK)
    full = [{k: r.get(k) for k in schema} for r in rows]
    return add_dedup_keys(pl.DataFrame(full, schema=schema), PARAMS)


def test_rerun_exported_in_later_epoch_is_dropped_against_the_published_one() -> None:
    published = frame([run("file://c/views/view_0084_0001.jsonl.gz#L7", commands(1), epoch=84)])
    # same run, new rollout id, later epoch, newer system prompt
    again = frame(
        [
            run(
                "file://c/views/view_0085_0003.jsonl.gz#L2",
                commands(1),
                epoch=85,
                system={"role": "system", "content": "v2 system prompt"},
            )
        ]
    )
    out = traj_dedup(again, published.select("source_uid", "exact_hash", "minhash"), PARAMS)
    assert out.kept.height == 0
    assert out.dropped.select("source_uid", "stage", "reason", "detail").rows() == [
        (
            "file://c/views/view_0085_0003.jsonl.gz#L2",
            "traj_dedup",
            "exact",
            "kept=file://c/views/view_0084_0001.jsonl.gz#L7 jaccard=1.000",
        )
    ]
    assert out.counters == {"traj_dedup/exact": 1}


def test_two_different_runs_on_the_same_task_are_both_kept() -> None:
    batch = frame([run("a", commands(10)), run("b", commands(11))])
    out = traj_dedup(batch, batch.head(0), PARAMS)
    assert out.kept["source_uid"].to_list() == ["a", "b"] and out.dropped.height == 0


def test_near_duplicate_with_a_few_characters_changed_is_dropped_with_the_kept_uid() -> None:
    base = commands(20, n=40)
    near = list(base)
    near[5] = near[5].replace("grep -rn", "grep -rnw") if "grep" in near[5] else near[5] + " | head"
    near[17] = near[17] + " -v"
    held = frame([run("published#1", base)])
    batch = frame([run("new#1", near, epoch=2), run("other#1", commands(21), epoch=2)])
    out = traj_dedup(batch, held.select("source_uid", "exact_hash", "minhash"), PARAMS)
    assert out.kept["source_uid"].to_list() == ["other#1"]
    ((uid, reason, detail),) = out.dropped.select("source_uid", "reason", "detail").rows()
    assert (uid, reason) == ("new#1", "near")
    assert detail.startswith("kept=published#1 jaccard=")
    assert float(detail.split("jaccard=")[1]) >= 0.8


def test_representative_held_beats_resolved_beats_epoch_beats_uid() -> None:
    c = commands(30)
    # within the batch: resolved wins over an earlier unresolved run
    batch = frame([run("a", c, epoch=1, resolved="not resolved"), run("b", c, epoch=3), run("c", c, epoch=2)])
    out = traj_dedup(batch, batch.head(0), PARAMS)
    assert out.kept["source_uid"].to_list() == ["c"]  # resolved, earliest epoch among resolved
    assert sorted(out.dropped["detail"].to_list()) == ["kept=c jaccard=1.000"] * 2
    # same epoch and verdict: lowest source_uid
    tie = frame([run("z", c), run("m", c)])
    assert traj_dedup(tie, tie.head(0), PARAMS).kept["source_uid"].to_list() == ["m"]
    # a held run is never displaced, even by a resolved run from an earlier epoch
    held = frame([run("held", c, epoch=9, resolved="not resolved")]).select(
        "source_uid", "exact_hash", "minhash"
    )
    out = traj_dedup(batch, held, PARAMS)
    assert out.kept.height == 0 and set(out.dropped["detail"]) == {"kept=held jaccard=1.000"}


def test_chain_of_near_duplicates_forms_one_cluster() -> None:
    base = commands(40, n=60)
    step1 = [*base[:-1], base[-1] + " --tb=short"]
    step2 = [*step1[:-2], step1[-2] + " | tail", step1[-1]]
    batch = frame([run("r1", base, epoch=1), run("r2", step1, epoch=2), run("r3", step2, epoch=3)])
    out = traj_dedup(batch, batch.head(0), PARAMS)
    assert out.kept["source_uid"].to_list() == ["r1"]
    assert out.dropped["reason"].to_list() == ["near", "near"]
    assert all(d.startswith("kept=r1 ") for d in out.dropped["detail"])
