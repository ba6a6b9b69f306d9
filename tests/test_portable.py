"""Published data does not depend on where the corpus or the work dir lives.

Given the same corpus copied to two different places and built with the same ``--affine-base-url``,
the published datasets and the ledger are byte-identical and name no local path; published files
get the usual permissions (not mkstemp's 0600).
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from pipeline.cli import app
from pipeline.devkit.synth.corpus import synth
from tests.conftest import BENCH

BASE_URL = "https://data.affine.io"


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def builds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One synthetic corpus, copied to two unrelated paths, each built in its own work dir."""
    root = tmp_path_factory.mktemp("portable")
    synth(root / "original", runs=16, epochs=2, seed=5, benchmarks=BENCH)
    out = {}
    for name, where in (
        ("a", root / "home" / "alice" / "mirror"),
        ("b", root / "srv" / "data" / "corpus-copy"),
    ):
        shutil.copytree(root / "original", where)
        work = root / f"work-{name}"
        res = CliRunner().invoke(
            app,
            [
                "run",
                "--affine",
                str(where / "affine"),
                "--affine-base-url",
                BASE_URL + "/",
                "--swelego",
                str(where / "swelego"),
                "--catalog",
                str(where / "catalog"),
                "--benchmarks",
                str(BENCH),
                "--workdir",
                str(work),
                "--workers",
                "1",
            ],
        )
        assert res.exit_code == 0, res.output
        out[name], out[f"corpus-{name}"] = work, where
    return out


def test_two_clones_with_the_same_base_url_publish_byte_identical_datasets(builds: dict[str, Path]) -> None:
    a, b = tree(builds["a"] / "publish"), tree(builds["b"] / "publish")
    assert a and sorted(a) == sorted(b)
    assert [name for name in a if a[name] != b[name]] == []
    assert (builds["a"] / "ledger" / "drops.parquet").read_bytes() == (
        builds["b"] / "ledger" / "drops.parquet"
    ).read_bytes()


def test_uids_and_cards_carry_the_base_url_never_a_local_path(builds: dict[str, Path]) -> None:
    work = builds["a"]
    uids = pl.concat(
        [pl.read_parquet(p, columns=["source_uid"]) for p in (work / "publish").glob("*/data/*.parquet")]
        + [pl.read_parquet(work / "ledger" / "drops.parquet", columns=["source_uid"])]
    )["source_uid"]
    affine = [u for u in uids if "/views/" in u or "/traces/" in u]
    assert affine and all(u.startswith(BASE_URL + "/") for u in affine)
    assert not any(u.startswith("file://") or str(builds["corpus-a"]) in u for u in uids)
    cards = {p.parent.name: p.read_text() for p in (work / "publish").glob("*/README.md")}
    affine_cards = [c for name, c in cards.items() if "-affine-" in name]
    assert affine_cards and all(f"Affine's public training corpus (`{BASE_URL}`" in c for c in affine_cards)
    for text in cards.values():
        assert "file://" not in text and str(builds["corpus-a"]) not in text and "/tmp/" not in text


def test_published_files_get_the_usual_permissions(builds: dict[str, Path]) -> None:
    umask = os.umask(0o022)
    os.umask(umask)
    want = 0o666 & ~umask
    files = [p for p in (builds["a"] / "publish").rglob("*") if p.is_file()]
    files += [p for p in (builds["a"] / "ledger").rglob("*") if p.is_file()]
    assert files
    assert {
        str(p.relative_to(builds["a"])): stat.S_IMODE(p.stat().st_mode)
        for p in files
        if stat.S_IMODE(p.stat().st_mode) != want
    } == {}
