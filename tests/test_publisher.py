"""Publishing: dataset trees loadable by `datasets` and polars, folder copies, Hub commits (mocked)."""

from __future__ import annotations

import os

os.environ["HF_HUB_OFFLINE"] = "1"  # before huggingface_hub/datasets are imported

import hashlib
from pathlib import Path
from typing import Any

import huggingface_hub.constants
import orjson
import polars as pl
import pytest
import yaml
from huggingface_hub import CommitOperationAdd, CommitOperationDelete, DatasetCard
from huggingface_hub.errors import OfflineModeIsEnabled, RepositoryNotFoundError
from huggingface_hub.hf_api import CommitInfo, RepoFile, RepoFolder

from pipeline.publish.publisher import (
    PublishRefused,
    check_publishable,
    format_plans,
    git_blob_id,
    publish_to_dir,
    publish_to_hub,
    publish_tree,
)
from schemas.run import PUBLISHED
from tests.builders import BASH, LEGO, build, sample_drops, sample_rows, sample_stats, table, work_frame


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    monkeypatch.delenv("HF_TOKEN", raising=False)


def snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    return {
        str(p.relative_to(root)): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


# ------------------------------------------------------------------------------------ local trees


def test_every_dataset_loads_with_datasets_and_polars_and_card_matches(tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets")
    frame, drops, stats = build(tmp_path)
    out = tmp_path / "publish"
    assert sorted(p.name for p in out.iterdir()) == ["MANIFEST.json", BASH, LEGO]
    for name in (BASH, LEGO):
        tree = out / name
        assert sorted(str(p.relative_to(tree)) for p in tree.rglob("*") if p.is_file()) == [
            "README.md",
            "data/train-00000-of-00001.parquet",
        ]
        ds = datasets.load_dataset(
            "parquet",
            data_files=str(tree / "data" / "train-*.parquet"),
            split="train",
            cache_dir=str(tmp_path / "hf-cache"),
        )
        assert ds.features == datasets.Features.from_arrow_schema(PUBLISHED)
        expected = frame.filter(pl.col("dataset") == name)
        assert ds.num_rows == expected.height
        assert sorted(ds["source_uid"]) == sorted(expected["source_uid"].to_list())
        assert ds[0]["messages"][0]["role"] == "system"
        back = pl.read_parquet(tree / "data" / "*.parquet")
        assert back.columns == PUBLISHED.names and back.height == expected.height

        # the card's numbers are the data's and the ledger's
        card = DatasetCard.load(tree / "README.md")
        info = card.data.to_dict()["dataset_info"]
        assert info["splits"][0]["num_examples"] == ds.num_rows
        text = card.text
        for header, column in (
            ("| Resolved | Rows |", "resolved"),
            ("| Harness | Rows |", "harness"),
            ("| Task pool | Rows |", "affine_source"),
            ("| Language | Rows |", "language"),
        ):
            counts = back.group_by(column).len()
            assert table(text, header) == {v: str(n) for v, n in counts.iter_rows()}
        mine = drops.filter(pl.col("dataset") == name)
        for stage, reason, n in mine.group_by("stage", "reason").len().iter_rows():
            assert f"{n} `{reason}`" in text, (stage, reason)
        assert f"{stats['ingested']['total']} runs exported" in text
        assert f"{stats['published']['total']} published." in text


def test_rebuild_is_byte_identical_and_touches_nothing(tmp_path: Path) -> None:
    build(tmp_path / "a")
    build(tmp_path / "b")
    a, b = snapshot(tmp_path / "a" / "publish"), snapshot(tmp_path / "b" / "publish")
    assert {k: v[0] for k, v in a.items()} == {k: v[0] for k, v in b.items()}
    build(tmp_path / "a")  # no-op re-run: same bytes AND same mtimes
    assert snapshot(tmp_path / "a" / "publish") == a


def test_datasets_without_rows_are_removed(tmp_path: Path) -> None:
    build(tmp_path)
    out = tmp_path / "publish"
    (out / "notes").mkdir()
    bash_only = [r for r in sample_rows() if r["dataset"] == BASH]
    frame = work_frame(bash_only)
    names = publish_tree(
        frame, sample_drops(), sample_stats(frame, sample_drops()), out, benchmarks_checked=True
    )
    assert names == [BASH]
    assert sorted(p.name for p in out.iterdir()) == ["MANIFEST.json", BASH, "notes"]


def test_publish_to_dir_copies_trees_and_drops_stale_shards(tmp_path: Path) -> None:
    build(tmp_path)
    target = tmp_path / "target"
    stale = target / BASH / "data" / "train-00001-of-00002.parquet"
    stale.parent.mkdir(parents=True)
    stale.write_bytes(b"old")
    assert publish_to_dir(tmp_path / "publish", target) == [BASH, LEGO]
    assert not stale.exists()
    assert snapshot(target).keys() == snapshot(tmp_path / "publish").keys()
    for rel, (data, _) in snapshot(tmp_path / "publish").items():
        assert (target / rel).read_bytes() == data
    before = snapshot(target)
    publish_to_dir(tmp_path / "publish", target)
    assert snapshot(target) == before


# ------------------------------------------------------------------------------------------- Hub


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def remote_file(path: str, *, sha: str | None = None, blob: str = "0" * 40, size: int = 10) -> RepoFile:
    lfs = {"size": size, "oid": sha, "pointerSize": 134} if sha else None
    return RepoFile(path=path, size=size, oid=blob, lfs=lfs)


class FakeApi:
    """Records calls; serves a fixed remote listing per repo (missing repo: RepositoryNotFoundError)."""

    def __init__(self, remote: dict[str, list[RepoFile | RepoFolder]]) -> None:
        self.remote = remote
        self.calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []

    def create_repo(self, repo_id: str, **kw: Any) -> str:
        self.calls.append(("create_repo", (repo_id,), kw))
        return f"https://huggingface.co/datasets/{repo_id}"

    def list_repo_tree(self, repo_id: str, **kw: Any) -> list[RepoFile | RepoFolder]:
        self.calls.append(("list_repo_tree", (repo_id,), kw))
        if repo_id not in self.remote:
            import httpx2

            raise RepositoryNotFoundError(
                "404", response=httpx2.Response(404, request=httpx2.Request("GET", "x"))
            )
        return self.remote[repo_id]

    def create_commit(self, repo_id: str, operations: list[Any], **kw: Any) -> CommitInfo:
        self.calls.append(("create_commit", (repo_id, list(operations)), kw))
        return CommitInfo(
            commit_url=f"https://huggingface.co/datasets/{repo_id}/commit/abc",
            commit_message=kw["commit_message"],
            commit_description="",
            oid="abc",
        )

    def named(self, name: str) -> list[tuple[tuple[Any, ...], dict[str, Any]]]:
        return [(a, k) for n, a, k in self.calls if n == name]


def test_hub_commit_adds_changed_files_and_deletes_stale_shards(tmp_path: Path) -> None:
    build(tmp_path)
    src = tmp_path / "publish"
    shard = src / LEGO / "data" / "train-00000-of-00001.parquet"
    api = FakeApi(
        {
            # an earlier publish with two shards and another README; .gitattributes is not ours
            f"org/{BASH}": [
                remote_file(".gitattributes"),
                RepoFolder(path="data", oid="f" * 40),
                remote_file("README.md", blob="1" * 40),
                remote_file("data/train-00000-of-00002.parquet", sha="a" * 64),
                remote_file("data/train-00001-of-00002.parquet", sha="b" * 64),
            ],
            # identical to the local tree: nothing to do
            f"org/{LEGO}": [
                remote_file("README.md", blob=git_blob_id(src / LEGO / "README.md")),
                remote_file("data/train-00000-of-00001.parquet", sha=sha256(shard)),
            ],
        }
    )
    plans = publish_to_hub(src, "org", api=api, token="hf_secret_value", private=True, create_pr=True)
    assert [p.repo_id for p in plans] == [f"org/{BASH}", f"org/{LEGO}"]
    bash, lego = plans
    assert bash.add == ["README.md", "data/train-00000-of-00001.parquet"]
    assert bash.delete == ["data/train-00000-of-00002.parquet", "data/train-00001-of-00002.parquet"]
    assert bash.committed and not lego.committed
    assert (
        lego.add == []
        and lego.delete == []
        and lego.unchanged == ["README.md", "data/train-00000-of-00001.parquet"]
    )

    assert [a[0] for a, _ in api.named("create_repo")] == [f"org/{BASH}", f"org/{LEGO}"]
    assert all(
        k["repo_type"] == "dataset" and k["exist_ok"] and k["private"] for _, k in api.named("create_repo")
    )
    commits = api.named("create_commit")
    assert len(commits) == 1  # one commit per dataset with changes
    (repo_id, ops), kw = commits[0]
    assert repo_id == f"org/{BASH}"
    assert [(type(o).__name__, o.path_in_repo) for o in ops] == [
        ("CommitOperationAdd", "README.md"),
        ("CommitOperationAdd", "data/train-00000-of-00001.parquet"),
        ("CommitOperationDelete", "data/train-00000-of-00002.parquet"),
        ("CommitOperationDelete", "data/train-00001-of-00002.parquet"),
    ]
    assert isinstance(ops[0], CommitOperationAdd) and isinstance(ops[2], CommitOperationDelete)
    assert ops[1].path_or_fileobj == str(src / BASH / "data" / "train-00000-of-00001.parquet")
    assert kw["repo_type"] == "dataset" and kw["create_pr"] is True
    assert kw["commit_message"].startswith(f"Publish {BASH}: 8 rows (trajpipe ")
    assert "build " in kw["commit_message"]
    assert kw["token"] == "hf_secret_value"


def test_hub_dry_run_plans_without_writing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    build(tmp_path)
    api = FakeApi({f"org/{BASH}": [remote_file("data/train-00000-of-00003.parquet", sha="c" * 64)]})
    plans = publish_to_hub(tmp_path / "publish", "org", api=api, token="hf_secret_value", dry_run=True)
    assert api.named("create_repo") == [] and api.named("create_commit") == []
    assert [p.committed for p in plans] == [False, False]
    text = format_plans(plans)
    assert text == "\n".join(str(p) for p in plans)
    assert f"org/{BASH}: 2 to add, 1 to delete, 0 unchanged" in text
    assert "  delete    data/train-00000-of-00003.parquet" in text
    assert f"org/{LEGO}: 2 to add, 0 to delete, 0 unchanged" in text  # repo absent: everything is new
    print(text)
    assert "hf_secret_value" not in capsys.readouterr().out


def test_hub_refuses_failed_invariant_or_validation(tmp_path: Path) -> None:
    _, _, stats = build(tmp_path)
    api = FakeApi({})
    bad = {**stats, "invariant": {**stats["invariant"], "ok": False}}
    with pytest.raises(PublishRefused, match="invariant"):
        publish_to_hub(tmp_path / "publish", "org", api=api, stats=bad)
    # the build's own stats.json is found next to publish/ when not passed
    (tmp_path / "ledger" / "stats.json").write_bytes(orjson.dumps(bad))
    with pytest.raises(PublishRefused):
        publish_to_hub(tmp_path / "publish", "org", api=api, dry_run=True)
    with pytest.raises(PublishRefused):
        publish_to_dir(tmp_path / "publish", tmp_path / "target")
    assert api.calls == [] and not (tmp_path / "target").exists()
    with pytest.raises(PublishRefused, match="validation"):
        check_publishable({**stats, "validation": {"ok": False, "failed": 3}})
    lying = {**stats, "invariant": {**stats["invariant"], "ingested": stats["invariant"]["ingested"] + 1}}
    with pytest.raises(PublishRefused, match="ingested"):
        check_publishable(lying)
    with pytest.raises(PublishRefused):
        check_publishable({})
    check_publishable(stats)


def test_real_hfapi_is_offline_and_token_not_leaked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    build(tmp_path)
    monkeypatch.setenv("HF_TOKEN", "hf_from_env_secret")
    with pytest.raises(OfflineModeIsEnabled) as err:
        publish_to_hub(tmp_path / "publish", "org")
    assert "hf_from_env_secret" not in str(err.value)


def test_card_yaml_is_valid_for_the_hub(tmp_path: Path) -> None:
    build(tmp_path)
    text = (tmp_path / "publish" / BASH / "README.md").read_text()
    header = yaml.safe_load(text.split("---\n")[1])
    assert header["configs"][0]["data_files"][0]["path"] == "data/train-*.parquet"
    assert header["license"] == "other"


def test_hub_and_folder_refuse_a_tree_that_is_not_its_manifest(tmp_path: Path) -> None:
    """A tree whose files differ from the manifest `run` wrote last (a half-written build, a changed
    shard, an extra file, no manifest at all) is never sent anywhere."""
    build(tmp_path)
    src = tmp_path / "publish"
    shard = src / BASH / "data" / "train-00000-of-00001.parquet"
    good = shard.read_bytes()
    shard.write_bytes(good[:-10] + b"0123456789")
    api = FakeApi({})
    with pytest.raises(PublishRefused, match="differs from the build manifest"):
        publish_to_hub(src, "org", api=api, dry_run=True)
    with pytest.raises(PublishRefused):
        publish_to_dir(src, tmp_path / "target")
    shard.write_bytes(good)
    (src / BASH / "data" / "train-00001-of-00002.parquet").write_bytes(good)
    with pytest.raises(PublishRefused, match="unexpected"):
        publish_to_hub(src, "org", api=api, dry_run=True)
    (src / BASH / "data" / "train-00001-of-00002.parquet").unlink()
    (src / "MANIFEST.json").unlink()
    with pytest.raises(PublishRefused, match="not a finished build"):
        publish_to_dir(src, tmp_path / "target")
    assert api.calls == [] and not (tmp_path / "target").exists()


def test_publish_tree_hashes_are_the_sha256_of_every_file_it_wrote(tmp_path: Path) -> None:
    """The manifest takes publish_tree's hashes (taken from the bytes it wrote) instead of reading
    the files back: they must be exactly the files' sha256, for every file of the trees, over
    several shards and a re-run that leaves unchanged files as they are."""
    from pipeline.publish.publisher import _tree_listing, write_manifest

    frame = work_frame(sample_rows())
    drops = sample_drops()
    out = tmp_path / "publish"
    for _ in range(2):
        hashes: dict[str, str] = {}
        publish_tree(frame, drops, sample_stats(frame, drops), out, benchmarks_checked=True, hashes=hashes)
        listing = _tree_listing(out)
        assert sorted(hashes) == [rel for rel in listing if rel != "MANIFEST.json"]
        assert hashes == {rel: sha256(out / rel) for rel in hashes}
        stats = sample_stats(frame, drops)
        assert write_manifest(out, stats, known=hashes)["files"] == write_manifest(out, stats)["files"]
