"""Benchmark tables: loader over the vendored table extracts and any folder; pull with a mocked Hub."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from pipeline.reference.benchmarks import (
    COLUMNS,
    HUB_BENCHMARKS,
    NoBenchmarksError,
    load_benchmarks,
    pull_benchmarks,
)
from tests.conftest import BENCH


@pytest.fixture(scope="module")
def shared_tables() -> pl.DataFrame:
    return load_benchmarks(BENCH)


def test_loader_normalises_every_shared_table(shared_tables: pl.DataFrame) -> None:
    assert shared_tables.columns == COLUMNS
    assert all(dt == pl.Utf8 for dt in shared_tables.dtypes)
    counts = dict(shared_tables.group_by("benchmark").len().iter_rows())
    assert counts == {
        "swebench_verified": 20,
        "swebench_lite": 20,
        "swebench_full": 50,
        "swebench_multimodal": 3,
        "swebench_live": 10,
        "gitgoodbench": 60,
    }
    # the SWE-smith repo pool is not a benchmark
    assert shared_tables.filter(pl.col("repo").str.contains("jqlang/jq")).height == 0
    row = shared_tables.filter(
        (pl.col("benchmark") == "swebench_verified") & (pl.col("instance_id") == "django__django-11099")
    ).row(0, named=True)
    assert row["repo"] == "django/django" and row["base_commit"].startswith("d26b2424")
    assert "diff --git" in row["patch"] and row["problem_statement"]
    full = shared_tables.filter(pl.col("benchmark") == "swebench_full")
    assert (full["base_commit"] != "").sum() == 40 and (full["patch"] == "").all()
    assert shared_tables.null_count().sum_horizontal().item() == 0


def test_loader_reads_parquet_jsonl_and_csv_from_any_folder(tmp_path: Path) -> None:
    pl.DataFrame(
        {
            "benchmark": ["mine"],
            "instance_id": ["a__b-1"],
            "repo": ["a/b"],
            "base_commit": ["c" * 40],
            "problem_statement": ["p"],
            "patch": ["d"],
        }
    ).write_parquet(tmp_path / "mine.parquet")
    (tmp_path / "swebench_pro.jsonl").write_text(
        json.dumps(
            {
                "instance_id": "x__y-2",
                "repo": "x/y",
                "base_commit": "e" * 40,
                "problem_statement": "s",
                "patch": "q",
                "extra": [1],
            }
        )
        + "\n"
    )
    (tmp_path / "extra_ids.csv").write_text("instance_id,repo\nz__w-3,z/w\n")
    (tmp_path / "README.md").write_text("not a table")
    out = load_benchmarks(tmp_path).sort("benchmark")
    assert out.columns == COLUMNS
    assert out.rows() == [
        ("extra", "z__w-3", "z/w", "", "", ""),
        ("mine", "a__b-1", "a/b", "c" * 40, "p", "d"),
        ("swebench_pro", "x__y-2", "x/y", "e" * 40, "s", "q"),
    ]


def test_loader_fails_clearly_without_any_table(tmp_path: Path) -> None:
    (tmp_path / "PROVENANCE.md").write_text("#")
    (tmp_path / "swesmith_repos.csv").write_text("owner,repo,commit,swesmith_repo_key\na,b,c,a__b.c\n")
    with pytest.raises(NoBenchmarksError, match=r"no benchmark table.*--no-benchmarks"):
        load_benchmarks(tmp_path)
    with pytest.raises(NoBenchmarksError, match="does not exist"):
        load_benchmarks(tmp_path / "missing")


class FakeHub:
    """Stands in for HfApi: a few Hub datasets as local files, no network."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.downloads: list[tuple[str, str]] = []
        self.repos: dict[str, dict[str, pl.DataFrame | str]] = {
            "princeton-nlp/SWE-bench_Lite": {
                "data/test-00000-of-00001.parquet": pl.DataFrame(
                    {
                        "repo": ["astropy/astropy"],
                        "instance_id": ["astropy__astropy-12907"],
                        "base_commit": ["d16bfe05a744909de4b27f5875fe0d4ed41ce607"],
                        "patch": ["diff"],
                        "test_patch": ["t"],
                        "problem_statement": ["Modeling"],
                        "FAIL_TO_PASS": ['["x"]'],
                    }
                ),
                "data/dev-00000-of-00001.parquet": pl.DataFrame(
                    {
                        "repo": ["sqlfluff/sqlfluff"],
                        "instance_id": ["sqlfluff__sqlfluff-1625"],
                        "base_commit": ["14e1a23a3166b9a645a16de96f694c77a5d4abb7"],
                        "patch": ["p"],
                        "problem_statement": ["L031"],
                    }
                ),
                "README.md": "card",
            },
            "princeton-nlp/SWE-bench": {
                "data/train-00000-of-00001.parquet": pl.DataFrame({"instance_id": ["never__pulled-1"]}),
                "data/test-00000-of-00001.parquet": pl.DataFrame(
                    {
                        "repo": ["django/django"],
                        "instance_id": ["django__django-11099"],
                        "base_commit": ["d26b2424437dabeeca94d7900b37d2df4410da0c"],
                        "patch": ["p"],
                        "problem_statement": ["s"],
                    }
                ),
            },
            "JetBrains/git_good_bench": {
                "git_good_bench.csv": (
                    "id,name,scenario_type,scenario\n"
                    'mockito_mockito_merge_0002,mockito/mockito,merge,"{""merge_commit_hash"": ""'
                    + "a" * 40
                    + '"", ""parents"": [""'
                    + "b" * 40
                    + '"", ""'
                    + "c" * 40
                    + '""]}"\n'
                ),
            },
        }

    def list_repo_files(self, repo_id: str, *, repo_type: str | None = None) -> list[str]:
        assert repo_type == "dataset"
        return list(self.repos[repo_id])

    def hf_hub_download(
        self,
        repo_id: str,
        filename: str,
        *,
        repo_type: str | None = None,
        cache_dir: str | Path | None = None,
    ) -> str:
        self.downloads.append((repo_id, filename))
        path = Path(cache_dir or self.root) / repo_id / filename
        path.parent.mkdir(parents=True, exist_ok=True)
        content = self.repos[repo_id][filename]
        if isinstance(content, pl.DataFrame):
            content.write_parquet(path)
        else:
            path.write_text(content)
        return str(path)


def test_pull_with_mocked_hub_writes_normalised_tables_the_loader_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    hub = FakeHub(tmp_path / "hub")
    cache = tmp_path / "cache"
    written = pull_benchmarks(cache, api=hub, names=["swebench_lite", "swebench_full", "gitgoodbench"])
    assert [p.name for p in written] == [
        "swebench_full.parquet",
        "swebench_lite.parquet",
        "gitgoodbench.parquet",
    ]
    assert ("princeton-nlp/SWE-bench", "data/train-00000-of-00001.parquet") not in hub.downloads
    assert all(not f.endswith("README.md") for _, f in hub.downloads)
    loaded = load_benchmarks(cache).sort("benchmark", "instance_id", "base_commit")
    assert loaded.select("benchmark", "instance_id", "base_commit").rows() == [
        ("gitgoodbench", "mockito_mockito_merge_0002", "a" * 40),
        ("gitgoodbench", "mockito_mockito_merge_0002", "b" * 40),
        ("gitgoodbench", "mockito_mockito_merge_0002", "c" * 40),
        ("swebench_full", "django__django-11099", "d26b2424437dabeeca94d7900b37d2df4410da0c"),
        ("swebench_lite", "astropy__astropy-12907", "d16bfe05a744909de4b27f5875fe0d4ed41ce607"),
        ("swebench_lite", "sqlfluff__sqlfluff-1625", "14e1a23a3166b9a645a16de96f694c77a5d4abb7"),
    ]
    assert set(loaded["repo"]) == {"mockito/mockito", "django/django", "astropy/astropy", "sqlfluff/sqlfluff"}


def test_pull_reports_benchmarks_it_could_not_fetch(tmp_path: Path) -> None:
    hub = FakeHub(tmp_path)
    with pytest.raises(RuntimeError, match="swebench_verified"):
        pull_benchmarks(tmp_path / "c", api=hub, names=["swebench_verified", "swebench_lite"])
    assert (tmp_path / "c" / "swebench_lite.parquet").exists()  # the others are still written
    assert {b.name for b in HUB_BENCHMARKS} >= {
        "swebench_full",
        "swebench_lite",
        "swebench_verified",
        "swebench_multimodal",
        "gitgoodbench",
    }
