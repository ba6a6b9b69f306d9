"""SWE-Lego on the Hugging Face Hub: ``--swelego hf://datasets/<org>/<name>[/path]``, offline.

The Hub is replaced at the filesystem seam (``swelego.filesystem_for``) by a local folder laid out
as ``HfFileSystem`` paths (``datasets/<org>/<name>/…``) that, like the Hub, reports an LFS sha256
per file. Given the same files locally and "on the Hub", the units, the runs and the published
datasets are the same, and a unit reads only its own row groups.
"""

from __future__ import annotations

import hashlib
import random
import shutil
import string
from pathlib import Path
from typing import Any, ClassVar

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from fsspec.implementations.dirfs import DirFileSystem
from fsspec.implementations.local import LocalFileSystem
from typer.testing import CliRunner

from pipeline.cli import app
from pipeline.core.config import Limits
from pipeline.core.episode import RawRun
from pipeline.devkit.synth.corpus import synth
from pipeline.sources import swelego

REPO = "datasets/SWE-Lego/SWE-Lego-Real-Data"


class FakeHub(DirFileSystem):
    """A folder served with HfFileSystem's paths and file info (``lfs.sha256``); counts bytes read."""

    bytes_read: ClassVar[dict[str, int]] = {}

    def info(self, path: str, **kwargs: Any) -> dict[str, Any]:
        info = super().info(path, **kwargs)
        if info["type"] == "file" and path.endswith(".parquet"):  # the Hub stores Parquet in LFS
            info["lfs"] = {
                "sha256": hashlib.sha256(Path(self._join(path)).read_bytes()).hexdigest(),
                "size": info["size"],
            }
        return info

    def find(self, path: str, *args: Any, **kwargs: Any) -> Any:
        found = super().find(path, *args, **kwargs)
        if kwargs.get("detail"):
            return {p: self.info(p) for p in found}
        return found

    def open(self, path: str, mode: str = "rb", **kwargs: Any) -> Any:
        fh = super().open(path, mode, **kwargs)
        read = fh.read

        def counted(*args: Any) -> bytes:
            data = read(*args)
            FakeHub.bytes_read[path] = FakeHub.bytes_read.get(path, 0) + len(data)
            return data

        fh.read = counted
        return fh


@pytest.fixture
def hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The Hub's root folder; ``hf://`` URLs resolve into it."""
    root = tmp_path / "hub"
    real = swelego.filesystem_for

    def seam(url: str) -> tuple[Any, str]:
        if url.startswith("hf://"):
            return FakeHub(path=str(root), fs=LocalFileSystem()), url[len("hf://") :]
        return real(url)

    monkeypatch.setattr(swelego, "filesystem_for", seam)
    FakeHub.bytes_read = {}
    return root


def lego_files(folder: Path, rows: int = 6) -> None:
    """Two SWE-Lego files in ``folder/data``: a Parquet of 3 row groups and a JSONL."""
    data = folder / "data"
    data.mkdir(parents=True)
    rng = random.Random(rows)  # text that does not compress, so each row group has a real size
    table = pa.Table.from_pylist(
        [
            {
                "instance_id": f"a__b-{i}",
                "messages": [
                    {"role": "user", "content": "".join(rng.choices(string.ascii_letters, k=20_000))}
                ],
            }
            for i in range(rows)
        ]
    )
    pq.write_table(table, data / "resolved-00000-of-00002.parquet", row_group_size=2)
    (data / "unresolved-00001-of-00002.jsonl").write_text('{"instance_id": "c__d-1", "messages": []}\n')


def test_the_real_hub_filesystem_is_behind_hf_urls() -> None:
    from huggingface_hub import HfFileSystem

    fs, path = swelego.filesystem_for(f"hf://{REPO}/data")
    assert isinstance(fs, HfFileSystem) and path == f"{REPO}/data"


def test_hub_units_rows_and_uids_equal_the_local_copys(hub: Path, tmp_path: Path) -> None:
    lego_files(hub / REPO)
    local = tmp_path / "SWE-Lego-Real-Data"
    shutil.copytree(hub / REPO, local)
    for where in (f"hf://{REPO}", f"hf://{REPO}/data", f"hf://{REPO}/data/resolved-00000-of-00002.parquet"):
        remote_units = swelego.list_units(where, unit_rows=3)
        local_units = swelego.list_units(
            str(local if where.endswith(REPO) else local / where.split(REPO + "/")[1]), unit_rows=3
        )
        strip = [
            (u.key, u.sha256, u.row_groups, u.first_row, u.dataset_label, u.state_key) for u in remote_units
        ]
        assert strip == [
            (u.key, u.sha256, u.row_groups, u.first_row, u.dataset_label, u.state_key) for u in local_units
        ], where
        assert all(u.location.startswith(f"hf://{REPO}/data/") for u in remote_units)
    units = swelego.list_units(f"hf://{REPO}", unit_rows=3)
    assert [(u.key, u.row_groups) for u in units] == [
        ("data/resolved-00000-of-00002.parquet", (0, 2)),
        ("data/resolved-00000-of-00002.parquet", (2, 3)),
        ("data/unresolved-00001-of-00002.jsonl", None),
    ]
    runs = [i for u in units for i in swelego.read_unit(u, Limits()) if isinstance(i, RawRun)]
    local_runs = [
        i
        for u in swelego.list_units(str(local), unit_rows=3)
        for i in swelego.read_unit(u, Limits())
        if isinstance(i, RawRun)
    ]
    assert [(r.source_uid, r.payload) for r in runs] == [(r.source_uid, r.payload) for r in local_runs]
    assert runs[0].source_uid == "SWE-Lego-Real-Data:data/resolved-00000-of-00002.parquet#row=0"


def test_a_unit_streams_only_its_row_groups(hub: Path) -> None:
    lego_files(hub / REPO, rows=40)
    path = f"{REPO}/data/resolved-00000-of-00002.parquet"
    size = (hub / path).stat().st_size
    last = swelego.list_units(f"hf://{path}", unit_rows=2)[-1]  # the last row group alone
    FakeHub.bytes_read = {}
    rows = [i for i in swelego.read_unit(last, Limits()) if isinstance(i, RawRun)]
    assert [r.source_uid.rsplit("=", 1)[1] for r in rows] == ["38", "39"]
    assert 0 < FakeHub.bytes_read[path] < size / 4  # footer + one of 20 row groups, not the file


def test_run_on_hf_url_publishes_what_the_local_copy_publishes(hub: Path, tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    synth(corpus, runs=8, epochs=1, seed=3)
    shutil.copytree(corpus / "swelego", hub / REPO)
    local = tmp_path / "SWE-Lego-Real-Data"
    shutil.copytree(corpus / "swelego", local)
    trees = []
    for name, where in (("hub", f"hf://{REPO}"), ("local", str(local))):
        work = tmp_path / f"work-{name}"
        res = CliRunner().invoke(
            app, ["run", "--swelego", where, "--no-benchmarks", "--workdir", str(work), "--workers", "1"]
        )
        assert res.exit_code == 0, res.output
        trees.append(
            {
                str(p.relative_to(work / "publish")): p.read_bytes()
                for p in sorted((work / "publish").rglob("*"))
                if p.is_file()
            }
        )
    assert trees[0] and trees[0] == trees[1]


def test_unreachable_or_unknown_remote_locations_are_one_line(hub: Path) -> None:
    res = CliRunner().invoke(
        app,
        ["run", "--swelego", f"hf://{REPO}-missing", "--no-benchmarks", "--workdir", str(hub.parent / "w")],
    )
    assert res.exit_code == 2
    assert len(res.stderr.splitlines()) == 1
    assert res.stderr.startswith(f"error: --swelego: cannot list hf://{REPO}-missing: [Errno 2] No such file")
    res = CliRunner().invoke(
        app,
        ["run", "--swelego", "nosuchfs://bucket/x", "--no-benchmarks", "--workdir", str(hub.parent / "w")],
    )
    assert res.exit_code == 2 and res.stderr.startswith("error: --swelego: cannot list nosuchfs://bucket/x: ")
    assert len(res.stderr.splitlines()) == 1
