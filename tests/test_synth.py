"""Specification of ``trajpipe synth``: the synthetic corpus honours every input contract."""

from __future__ import annotations

import gzip
import hashlib
import json
import re
import statistics
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from pipeline.devkit.synth.corpus import synth
from schemas.run import PUBLISHED
from tests.conftest import BENCH

VIEW_FIELDS = {
    "view",
    "rollout_id",
    "traj_id",
    "instance_id",
    "repo",
    "model",
    "policy",
    "source",
    "language",
    "stratum",
    "action_kind",
    "generated_at",
    "nodes",
    "turns",
}
PLANTED = {
    "keep",
    "quarantine/bad_json",
    "quarantine/not_object",
    "quarantine/missing_field",
    "convert/unknown_tool",
    "task_dedup/benchmark_task",
    "benchmark_leak/gold_patch",
    "benchmark_leak/problem_statement",
    "benchmark_leak/instance_id",
    "traj_dedup/exact",
    "traj_dedup/near",
    *(
        f"solution_leak/{k}"
        for k in (
            "git_history",
            "foreign_object",
            "bug_patch",
            "network_fetch",
            "package_fetch",
            "site_packages",
        )
    ),
}


@pytest.fixture(scope="module")
def bench_dir() -> Path:
    return BENCH


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory, bench_dir: Path) -> tuple[Path, dict[str, Any]]:
    out = tmp_path_factory.mktemp("synth")
    return out, synth(out, runs=40, epochs=2, seed=11, benchmarks=bench_dir)


def files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def chunk_lines(path: Path) -> list[bytes]:
    return gzip.decompress(path.read_bytes()).splitlines()


def all_views(root: Path) -> list[dict[str, Any]]:
    out = []
    for p in sorted((root / "affine/views/duel_turns@v4/chunks").glob("*.jsonl.gz")):
        for line in chunk_lines(p):
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(rec, dict) and "nodes" in rec:
                out.append(rec)
    return out


def all_traces(root: Path) -> list[dict[str, Any]]:
    return [
        json.loads(line)
        for p in sorted((root / "affine/traces/chunks").glob("*.jsonl.gz"))
        for line in chunk_lines(p)
    ]


def swelego_rows(root: Path) -> list[tuple[str, dict[str, Any]]]:
    """(file name, row) of every SWE-Lego file, in file then row order."""
    out: list[tuple[str, dict[str, Any]]] = []
    for p in sorted((root / "swelego/data").iterdir()):
        rows = (
            pq.read_table(p).to_pylist()
            if p.suffix == ".parquet"
            else [json.loads(x) for x in p.read_text().splitlines()]
        )
        out += [(p.name, r) for r in rows]
    return out


def labels(root: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (root / "labels.jsonl").read_text().splitlines()]


# ------------------------------------------------------------------------------------------------


def test_same_seed_same_bytes_and_epochs_extend(
    tmp_path: Path, corpus: tuple[Path, dict[str, Any]], bench_dir: Path
) -> None:
    root, _ = corpus
    again = tmp_path / "again"
    synth(again, runs=40, epochs=2, seed=11, benchmarks=bench_dir)
    assert files(again) == files(root)
    # one epoch fewer: every view/trace chunk and immutable manifest it writes is byte-identical
    one = tmp_path / "one"
    synth(one, runs=40, epochs=1, seed=11, benchmarks=bench_dir)
    a, b = files(one), files(root)
    for name, data in a.items():
        if "/chunks/" in name or "/manifests/" in name:
            assert b[name] == data, name
    assert len([n for n in b if "/manifests/" in n]) == 2


def test_gzip_is_deterministic(corpus: tuple[Path, dict[str, Any]]) -> None:
    root, _ = corpus
    for p in root.rglob("*.jsonl.gz"):
        head = p.read_bytes()[:10]
        assert head[:2] == b"\x1f\x8b" and head[4:8] == b"\x00\x00\x00\x00", p  # mtime 0
        assert head[3] & 0x08 == 0, p  # no file name


def test_manifests_chain_and_every_sha256_verifies(corpus: tuple[Path, dict[str, Any]]) -> None:
    root, _ = corpus
    affine = root / "affine"
    revisions = {p.stem: p.read_bytes() for p in (affine / "corpus/manifests").glob("*.json")}
    for sha, data in revisions.items():
        assert hashlib.sha256(data).hexdigest() == sha
    current = json.loads((affine / "corpus/manifest.json").read_bytes())
    chain = [current]
    while chain[-1]["prev_manifest"] is not None:
        chain.append(json.loads(revisions[chain[-1]["prev_manifest"]]))
    assert [m["corpus_epoch"] for m in chain] == [85, 84]
    for m in chain:
        assert (
            m["schema_version"] == 3 and m["view_spec"] == "duel_turns@v4" and m["created_at"].endswith("Z")
        )
        for s in m["shards"]:
            assert (
                set(s) >= {"key", "sha256", "n_trajectories", "format", "active"} and s["format"] == "view_v4"
            )
            assert re.fullmatch(r"views/duel_turns@v4/chunks/view_\d{4}_\d{4}\.jsonl\.gz", s["key"])
            raw = gzip.decompress((affine / s["key"]).read_bytes())
            assert hashlib.sha256(raw).hexdigest() == s["sha256"]
            assert raw.count(b"\n") == s["n_trajectories"] <= 1000
    first, last = chain[1], chain[0]
    assert {s["key"] for s in first["shards"]} < {
        s["key"] for s in last["shards"]
    }  # later epochs list earlier shards
    assert all(s["active"] for s in first["shards"])
    assert sum(not s["active"] for s in last["shards"]) == 1
    traces = json.loads((affine / "traces/manifest.json").read_bytes())["chunks"]
    assert len(traces) == len(list((affine / "traces/chunks").glob("*.jsonl.gz")))
    for t in traces:
        data = (affine / t["key"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == t["sha256"]
        assert (
            re.fullmatch(r"traces/chunks/[a-z_0-9]+-\d{8}T\d{6}Z-([0-9a-f]{12})\.jsonl\.gz", t["key"]).group(
                1
            )
            == t["sha256"][:12]
        )


def longest_path(nodes: list[dict[str, Any]]) -> list[int]:
    depth: dict[int, int] = {}
    for i, n in enumerate(nodes):
        depth[i] = 0 if n["parent"] is None else depth[n["parent"]] + 1
    leaf = max(range(len(nodes)), key=lambda i: (depth[i], i))
    path = [leaf]
    while nodes[path[-1]]["parent"] is not None:
        path.append(nodes[path[-1]]["parent"])
    return path[::-1]


def test_view_records_have_the_design_layout(corpus: tuple[Path, dict[str, Any]]) -> None:
    root, _ = corpus
    views = all_views(root)
    assert len(views) > 60
    forked = 0
    for rec in views:
        assert set(rec) >= VIEW_FIELDS, set(rec) ^ VIEW_FIELDS
        assert rec["view"] == "duel_turns@v4"
        assert (
            set(rec["policy"]) == {"id", "harness", "action_kind"}
            and rec["action_kind"] == rec["policy"]["action_kind"]
        )
        assert re.fullmatch(r"[a-z_]+:\d{4}", rec["stratum"])
        assert rec["language"] in {"python", "go", "java", "rust", "js", "cpp"}
        nodes = rec["nodes"]
        assert all(
            n["role"] in ("system", "user", "assistant") and isinstance(n["content"], str) for n in nodes
        )
        assert nodes[0]["parent"] is None and all(
            n["parent"] is None or n["parent"] < i for i, n in enumerate(nodes)
        )
        path = longest_path(nodes)
        forked += len(path) < len(nodes)
        assert [t["node_id"] for t in rec["turns"]] == [i for i in path if nodes[i]["role"] == "assistant"]
        if "base_commit" in rec:
            assert re.fullmatch(r"[0-9a-f]{40}", rec["base_commit"])
    assert forked >= 1
    assert any("base_commit" in r for r in views) and any("base_commit" not in r for r in views)


def test_every_dialect_and_harness_is_present(corpus: tuple[Path, dict[str, Any]]) -> None:
    root, summary = corpus
    views = all_views(root)
    harnesses = {r["policy"]["harness"] for r in views}
    assert harnesses >= {"mini_swe_textbased", "bash", "pi", "claude_code", "hermes_agent"}
    text = "\n".join(n["content"] for r in views for n in r["nodes"] if n["role"] == "assistant")
    for marker in (
        "```bash\n",
        "```mswea_bash_command\n",
        "```sh\n",
        '<tool_call>\n{"name": "bash", "arguments": {"command": ',
        "<tool_call>bash\n<arg_key>command</arg_key>\n<arg_value>",
        "<tool_call>\n<function=bash>\n<parameter=command>\n",
        '"name": "Read"',
        "<function=Edit>",
        "<arg_key>oldText</arg_key>",
        "TodoWrite",
        "memory",
        "bash -lc '",
        "timeout ",
        " && ",
    ):
        assert marker in text, marker
    # parallel calls: several <tool_call> in one message, answered by one user message of <tool_response>s
    par = [
        (r["nodes"], i)
        for r in views
        for i, n in enumerate(r["nodes"])
        if n["role"] == "assistant" and n["content"].count("<tool_call>") > 1
    ]
    assert par and all(
        ns[i + 1]["content"].count("<tool_response>") == ns[i]["content"].count("<tool_call>")
        for ns, i in par
    )
    # GLM carries its tools block as a second system message
    assert any(r["nodes"][1]["role"] == "system" and "<arg_key>" in r["nodes"][1]["content"] for r in views)
    # every repo root kind, and the look-alikes that must survive root rewriting
    roots = " ".join(n["content"] for r in views for n in r["nodes"][:2])
    for root_re in (
        r"/workspace/\w",
        r"\n/repo\n",
        r"/app\n",
        r"/testbed\b",
        r"/home/\w+/\w",
        r"/tmp/tmp\w{8}/\w",
    ):
        assert re.search(root_re, roots), root_re
    assert "/repository" in text + " ".join(n["content"] for r in views for n in r["nodes"])
    traces = all_traces(root)
    shapes = set()
    for env in traces:
        assert env["schema"] == 1 and {"uid", "sid", "repo", "language"} <= set(env["task"])
        assert {"nodes", "rewards", "stop_condition"} <= set(env["trace"])
        for n in env["trace"]["nodes"]:
            for call in n["message"].get("tool_calls", []):
                fn = call.get("function", call)
                shapes.add(("nested" if "function" in call else "flat", type(fn["arguments"]).__name__))
            if n["message"]["role"] == "tool":
                assert n["message"]["tool_call_id"]
    assert {s[0] for s in shapes} == {"nested", "flat"} and {s[1] for s in shapes} == {"str", "dict"}
    assert set(summary["dialect"]) >= {"bash", "qwen_json", "glm", "xml", "openai_tools", "openhands"}


def test_swelego_files_follow_openhands_text(corpus: tuple[Path, dict[str, Any]]) -> None:
    root, _ = corpus
    data = root / "swelego/data"
    for p in data.glob("*.parquet"):
        assert pq.read_schema(p).names == ["instance_id", "messages"]
    rows = [r for name, r in swelego_rows(root) if name.endswith(".parquet")]
    jrows = [r for name, r in swelego_rows(root) if name.endswith(".jsonl")]
    assert any(isinstance(r["messages"], str) for r in jrows) and any(
        isinstance(r["messages"], list) for r in jrows
    )
    convs = [r["messages"] for r in rows] + [
        json.loads(m) if isinstance(m, str) else m for m in (r["messages"] for r in jrows)
    ]
    text = "\n".join(m["content"] for c in convs for m in c)
    for c in convs:
        assert [m["role"] for m in c[:2]] == ["system", "user"]
        assert re.search(r"<uploaded_files>\n/workspace/[\w.-]+\n</uploaded_files>", c[1]["content"])
        assert "<pr_description>" in c[1]["content"]
    for marker in (
        "<function=execute_bash>\n<parameter=command>",
        "EXECUTION RESULT of [execute_bash]:\n",
        "[Command finished with exit code 0]",
        "<parameter=command>view</parameter>",
        "<parameter=command>create</parameter>",
        "<parameter=command>str_replace</parameter>",
        "<parameter=command>insert</parameter>",
        "<function=think>",
        "<function=finish>",
        "Here's the result of running `cat -n` on /workspace/",
        "File created successfully at: /workspace/",
        "Review the changes and make sure they are as expected.",
    ):
        assert marker in text, marker


def test_edits_replace_text_the_run_has_already_seen(corpus: tuple[Path, dict[str, Any]]) -> None:
    """GLM keeps argument values verbatim: every old text must be visible in an earlier observation."""
    root, _ = corpus
    n = 0
    for rec in all_views(root):
        path = longest_path(rec["nodes"])
        seen = ""
        for i in path:
            node = rec["nodes"][i]
            if node["role"] == "assistant":
                for m in re.finditer(
                    r"<arg_key>(?:old_str|oldText|old_string)</arg_key>\n<arg_value>(.*?)</arg_value>",
                    node["content"],
                    re.S,
                ):
                    n += 1
                    for line in m.group(1).split("\n"):
                        assert line in seen, (rec["instance_id"], line)
            else:
                seen += node["content"]
    assert n >= 3


def test_sizes_are_realistic(corpus: tuple[Path, dict[str, Any]]) -> None:
    root, _ = corpus
    views = all_views(root)
    sizes = [len(json.dumps(r)) for r in views]
    assert 50_000 <= statistics.median(sizes) <= 300_000
    turns = [len(r["turns"]) for r in views]
    assert min(turns) >= 8 and max(turns) <= 110
    outs = [len(n["content"]) for r in views for n in r["nodes"][2:] if n["role"] == "user"]
    assert min(outs) < 200 and max(outs) > 20_000
    assert max(outs) < 60_000


def test_labels_point_at_real_records_and_cover_the_vocabulary(corpus: tuple[Path, dict[str, Any]]) -> None:
    root, summary = corpus
    labs = labels(root)
    assert {lab["expect"] for lab in labs} >= PLANTED
    assert len({lab["uid_suffix"] for lab in labs}) == len(labs)
    count = 0
    for lab in labs:
        assert set(lab) == {"uid_suffix", "expect", "secrets", "secret_values", "note"}
        # one planted value per planted kind, and each value is really in the record's text
        assert len(lab["secret_values"]) == len(lab["secrets"])
        uid = lab["uid_suffix"]
        if "#L" in uid:
            key, line = uid.rsplit("#L", 1)
            assert 1 <= int(line) <= len(chunk_lines(root / "affine" / key))
        else:
            name, row = uid.rsplit("#row=", 1)
            p = root / "swelego/data" / name
            n = pq.read_metadata(p).num_rows if name.endswith(".parquet") else len(p.read_text().splitlines())
            assert 0 <= int(row) < n
        count += 1
    assert count == summary["runs"]
    from pipeline.devkit.synth.content import PLANTED_SECRET_KINDS

    assert {k for lab in labs for k in lab["secrets"]} == set(PLANTED_SECRET_KINDS)


def record_of(root: Path, uid: str) -> dict[str, Any]:
    key, line = uid.rsplit("#L", 1)
    return json.loads(chunk_lines(root / "affine" / key)[int(line) - 1])


def test_planted_cases_carry_their_evidence(corpus: tuple[Path, dict[str, Any]], bench_dir: Path) -> None:
    root, _ = corpus
    labs = [
        lab
        for lab in labels(root)
        if "#L" in lab["uid_suffix"] and not lab["expect"].startswith("quarantine")
    ]
    bench = {
        json.loads(x)["instance_id"]: json.loads(x)
        for f in ("swebench_lite.jsonl", "swebench_verified.jsonl")
        for x in (bench_dir / f).read_text().splitlines()
    }

    def text(rec: dict[str, Any]) -> str:  # every message text, and a trace's structured calls
        nodes = rec.get("nodes") or [n["message"] for n in rec["trace"]["nodes"]]
        return "\n".join(
            (n["content"] if isinstance(n["content"], str) else n["content"][0]["text"])
            + "".join(
                "\n"
                + (
                    c.get("function", c)["arguments"]
                    if isinstance(c.get("function", c)["arguments"], str)
                    else json.dumps(c.get("function", c)["arguments"])
                )
                for c in n.get("tool_calls", [])
            )
            for n in nodes
        )

    for lab in labs:
        rec = record_of(root, lab["uid_suffix"])
        body = text(rec)
        exp = lab["expect"]
        if exp == "solution_leak/network_fetch":
            assert re.search(
                r"(?:curl -sL|wget -qO-) https://github\.com/.+/pull/\d+\.(?:diff|patch)", body
            ) or re.search(r"curl -s https://raw\.githubusercontent\.com/\S+ \| sed -n", body)
        elif exp == "solution_leak/bug_patch":
            assert "git show HEAD~1" in body and "    Bug Patch\n" in body
        elif exp == "solution_leak/git_history":
            assert "git log --all" in body or "git log --branches --remotes" in body
        elif exp == "solution_leak/site_packages":
            assert re.search(r"(?:cat|sed -n '\d+,\d+p'|diff -u \S+) /\S+/site-packages/", body)
        elif exp == "solution_leak/package_fetch":
            assert "pip download" in body and "Successfully downloaded" in body
        elif exp == "task_dedup/benchmark_task":
            iid = rec.get("instance_id") or rec["task"]["sid"]
            commits = {b["base_commit"][:8] for b in bench.values()}
            assert iid in bench or iid.split(".")[1] in commits
        elif exp == "benchmark_leak/gold_patch":
            assert any(b["patch"] in body for b in bench.values())
        elif exp == "benchmark_leak/problem_statement":
            assert any(b["problem_statement"] in body for b in bench.values())
        elif exp == "convert/unknown_tool":
            assert "mcp__playwright__browser_navigate" in body
        elif exp == "traj_dedup/exact" and "re-export of" in lab["note"]:
            orig = record_of(root, lab["note"].split("re-export of ")[1].split(" ")[0])
            assert orig["nodes"] == rec["nodes"] and orig["rollout_id"] != rec["rollout_id"]
        elif exp == "traj_dedup/near":
            orig = record_of(root, lab["note"].split("near-duplicate of ")[1].split(" ")[0])
            a, b = text(orig), body
            assert a != b and len(a) == len(b) and sum(x != y for x, y in zip(a, b, strict=True)) <= 3
        elif exp == "keep" and lab["secrets"]:
            assert all(v in body or v.replace("\n", "\\n") in body for v in lab["secret_values"])
        if exp == "keep" and "ordinary run" in lab["note"]:
            iid = rec["instance_id"]
            assert iid not in bench and iid.split("-")[0].replace("__", "/") not in {
                b["repo"] for b in bench.values()
            }


def test_catalog_tables(corpus: tuple[Path, dict[str, Any]]) -> None:
    root, _ = corpus
    tasks = pq.read_table(root / "catalog/tasks.parquet").to_pylist()
    assert {t["id_kind"] for t in tasks} == {"albedo", "open-swe"}
    views = {r["instance_id"]: r for r in all_views(root)}
    mapped = [t for t in tasks if t["upstream_id"] in views]
    assert mapped
    runs = pq.read_table(root / "catalog/runs/part-0.parquet")
    assert runs.schema.equals(PUBLISHED)
    dup = [lab for lab in labels(root) if "same action stream as catalog run" in lab["note"]]
    assert len(dup) == 1 and dup[0]["expect"] == "traj_dedup/exact"
    rec = record_of(root, dup[0]["uid_suffix"])
    first = runs.to_pylist()[0]["messages"]
    fence = re.compile(r"```bash\n(.*?)\n```", re.S)
    cmds = [fence.search(m["content"]).group(1) for m in first if m["role"] == "assistant"]
    assert cmds == [fence.search(n["content"]).group(1) for n in rec["nodes"] if n["role"] == "assistant"]
    # a true re-export: exactly the messages the pipeline publishes for that record (same exact hash)
    from pipeline.devkit.synth.corpus import published_messages

    assert first == published_messages(rec, dup[0]["uid_suffix"])
    assert first[0]["role"] == "system" and first[-1]["role"] == "user"


def test_without_benchmarks_a_synthetic_table_is_written_and_used(tmp_path: Path) -> None:
    s = synth(tmp_path, runs=12, epochs=1, seed=3)
    rows = [json.loads(x) for x in (tmp_path / "benchmarks/synthetic_bench.jsonl").read_text().splitlines()]
    assert rows and set(rows[0]) == {
        "benchmark",
        "instance_id",
        "repo",
        "base_commit",
        "problem_statement",
        "patch",
    }
    ids = {r["instance_id"] for r in rows}
    planted = [
        lab
        for lab in labels(tmp_path)
        if lab["expect"] == "task_dedup/benchmark_task" and "#L" in lab["uid_suffix"]
    ]
    assert any(record_of(tmp_path, lab["uid_suffix"])["instance_id"] in ids for lab in planted)
    assert s["label"]["benchmark_leak/gold_patch"] == 1


def labelled_records(root: Path) -> list[tuple[bytes, str]]:
    """(the labelled record, as its bytes, the label's expectation) for every label of a corpus."""
    out = []
    for lab in labels(root):
        uid = lab["uid_suffix"]
        if "#L" in uid:
            key, line = uid.rsplit("#L", 1)
            record = chunk_lines(root / "affine" / key)[int(line) - 1]
        else:
            name, row = uid.rsplit("#row=", 1)
            p = root / "swelego/data" / name
            rows = (
                pq.read_table(p).to_pylist()
                if name.endswith(".parquet")
                else [json.loads(x) for x in p.read_text().splitlines()]
            )
            record = json.dumps(rows[int(row)], sort_keys=True).encode()
        out.append((record, lab["expect"]))
    return sorted(out)


def test_chunk_records_caps_every_unit_and_changes_only_where_files_end(
    tmp_path: Path, corpus: tuple[Path, dict[str, Any]], bench_dir: Path
) -> None:
    """Units must not grow with the corpus: at most ``chunk_records`` records in any view chunk, trace
    chunk or SWE-Lego file. Cutting smaller changes the file boundaries and nothing else."""
    root, summary = corpus
    capped = tmp_path / "capped"
    capped_summary = synth(capped, runs=40, epochs=2, seed=11, benchmarks=bench_dir, chunk_records=3)
    affine = capped / "affine"
    for p in affine.rglob("*.jsonl.gz"):
        assert 1 <= len(chunk_lines(p)) <= 3, p
    # under the default cap (250) each epoch's views are one chunk and each source's traces another;
    # a cap of 3 cuts the views, the 5 swesmith traces of epoch 84 and the 5 resolved SWE-Lego rows
    for pattern in ("views/*/chunks/*", "traces/chunks/*"):
        assert len(list(affine.glob(pattern))) > len(list((root / "affine").glob(pattern)))
    data = capped / "swelego/data"
    assert sorted(p.name for p in data.iterdir()) == [
        "resolved-00000-of-00002.parquet",
        "resolved-00001-of-00002.parquet",
        "unresolved-00000-of-00001.jsonl",
    ]
    assert [pq.read_metadata(data / f"resolved-0000{i}-of-00002.parquet").num_rows for i in (0, 1)] == [3, 2]
    # every record is still there, byte for byte, in the same order where the source has one
    key = lambda r: r["rollout_id"]  # noqa: E731
    assert sorted(all_views(capped), key=key) == sorted(all_views(root), key=key)
    assert sorted(all_traces(capped), key=key) == sorted(all_traces(root), key=key)
    assert [r for _, r in swelego_rows(capped)] == [r for _, r in swelego_rows(root)]
    # and every label names the same record with the same expectation
    assert labelled_records(capped) == labelled_records(root)
    assert capped_summary["label"] == summary["label"] and capped_summary["runs"] == summary["runs"]
    # the manifests list every capped view chunk with its own record count
    current = json.loads((affine / "corpus/manifest.json").read_bytes())
    assert {s["key"] for s in current["shards"]} == {
        f"views/duel_turns@v4/chunks/{p.name}" for p in affine.glob("views/*/chunks/*")
    }
    assert all(1 <= s["n_trajectories"] <= 3 for s in current["shards"])


def test_trace_chunks_of_one_source_are_cut_at_the_cap(tmp_path: Path) -> None:
    """A source with more traces than the cap gets several chunks, each named by its own sha256."""
    synth(tmp_path / "one", runs=120, epochs=1, seed=3, chunk_records=250)
    synth(tmp_path / "cut", runs=120, epochs=1, seed=3, chunk_records=2)
    whole = sorted((tmp_path / "one/affine/traces/chunks").glob("*.jsonl.gz"))
    cut = sorted((tmp_path / "cut/affine/traces/chunks").glob("*.jsonl.gz"))
    assert max(len(chunk_lines(p)) for p in whole) > 2  # some source has more traces than the cap
    assert all(1 <= len(chunk_lines(p)) <= 2 for p in cut)
    src = lambda p: p.name.split("-")[0]  # noqa: E731
    for s in {src(p) for p in whole}:
        n = sum(len(chunk_lines(p)) for p in whole if src(p) == s)
        assert sum(src(p) == s for p in cut) == -(-n // 2)
    listed = json.loads((tmp_path / "cut/affine/traces/manifest.json").read_bytes())["chunks"]
    assert sorted(x["key"] for x in listed) == [f"traces/chunks/{p.name}" for p in cut]
    for x in listed:
        assert hashlib.sha256((tmp_path / "cut/affine" / x["key"]).read_bytes()).hexdigest() == x["sha256"]
    key = lambda r: r["rollout_id"]  # noqa: E731
    assert sorted(all_traces(tmp_path / "cut"), key=key) == sorted(all_traces(tmp_path / "one"), key=key)
