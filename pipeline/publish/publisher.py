"""Publishing: dataset trees on disk, copies to a folder, and one Hub commit per dataset.

``publish_tree`` renders ``<out>/<dataset>/README.md`` + ``data/`` from the published rows and the
ledger; a re-run on the same input changes no byte and no mtime. ``publish_to_hub`` diffs each tree
against the repo's listing (sha256 for LFS files, the git blob id otherwise) and sends one
``create_commit`` adding changed files and deleting stale shards.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import orjson
import polars as pl
import pyarrow.parquet as pq

from pipeline.core.config import VERSION
from pipeline.io.faults import crashpoint
from pipeline.io.fileio import (
    CopyMismatch,
    atomic_write_json,
    copy_verified,
    file_sha256,
    move_dir,
    switch_symlink,
)
from pipeline.publish.card import render_card
from pipeline.publish.shards import (
    SHARD_RE,
    RowReader,
    plan_shards,
    write_bytes_if_changed,
    write_shards,
)
from pipeline.store.ledger import Stats
from pipeline.store.rowbytes import ROW_BYTES
from schemas.run import PUBLISHED_NAMES

if TYPE_CHECKING:  # the Hub client is imported when a Hub upload runs (a second of start-up)
    from huggingface_hub import CommitOperationAdd, CommitOperationDelete, HfApi

DATASET_RE = re.compile(r"^mini-coder-[a-z0-9][a-z0-9._-]*$")


class PublishRefused(RuntimeError):
    """The build failed validation or its ledger invariant: it must not be published."""


def check_publishable(stats: Mapping[str, Any]) -> None:
    """Raise :class:`PublishRefused` unless the build's invariant holds and validation passed
    (``stats`` may come from a damaged file: every field is checked)."""
    inv = stats.get("invariant")
    if not isinstance(inv, dict):
        raise PublishRefused("stats.json has no invariant: cannot tell whether the build is complete")
    if not inv.get("ok", False):
        raise PublishRefused(f"ledger invariant failed: {inv}")
    parts = [int(inv.get(k, 0)) for k in ("published", "dropped", "quarantined")]
    if int(inv.get("ingested", -1)) != sum(parts):
        raise PublishRefused(
            f"ledger invariant failed: ingested {inv.get('ingested')} != published + dropped + quarantined "
            f"{sum(parts)}"
        )
    validation = stats.get("validation")
    if isinstance(validation, dict) and validation.get("ok") is False:
        raise PublishRefused(f"validation failed: {validation}")


def is_dataset_dir(path: Path) -> bool:
    return path.is_dir() and bool(DATASET_RE.match(path.name)) and (path / "README.md").is_file()


def tree_files(tree: Path) -> list[str]:
    """Repo-relative paths of a dataset tree: README.md and its data shards, sorted."""
    files = ["README.md"] if (tree / "README.md").is_file() else []
    data = tree / "data"
    if data.is_dir():
        files += sorted(f"data/{p.name}" for p in data.iterdir() if p.is_file() and SHARD_RE.match(p.name))
    return files


def publish_tree(
    published: pl.DataFrame | pl.LazyFrame,
    drops: pl.DataFrame,
    stats: Stats,
    out_dir: Path,
    *,
    benchmarks_checked: bool,
    rows: RowReader | None = None,
    threads: int = 1,
    reuse: set[str] | None = None,
    hashes: dict[str, str] | None = None,
) -> list[str]:
    """Write one tree per dataset in ``published["dataset"]`` under ``out_dir``; returns their names.

    ``published`` may be lazy (a scan of the run store): then only one dataset's rows are in
    memory at a time. With ``rows``, ``published`` is the store's index (narrow columns and
    ``__bytes``): shards are planned from it and ``rows`` reads one row group's full rows at a
    time. ``threads`` trees are written at once. The shards already in ``out_dir`` of the datasets
    in ``reuse`` are kept as they are (their rows did not change); only their cards are written. Trees of datasets that no longer have rows are removed. Files whose bytes did not
    change are not rewritten, so a no-op rebuild leaves every mtime as it was. ``hashes``: the
    sha256 of every file written is put there, by its path under ``out_dir`` (for
    :func:`write_manifest`).
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    lazy = published.lazy()
    names = sorted(lazy.select(pl.col("dataset").unique()).collect().to_series().to_list())
    bad = [n for n in names if not isinstance(n, str) or not DATASET_RE.match(n)]
    if bad:  # checked before anything is written
        raise PublishRefused(f"not a dataset name: {bad[0]!r}")

    def one(name: str) -> None:
        rows_ds = lazy.filter(pl.col("dataset") == name)
        # the card needs every column but the two big ones; the shards stream row group by row group
        narrow = rows_ds.select(
            *(n for n in PUBLISHED_NAMES if n not in ("messages", "patch")), "dataset", "epoch"
        ).collect()
        epochs = (
            sorted(int(e) for e in narrow["epoch"].unique().to_list() if e is not None)
            if "epoch" in narrow.columns
            else []
        )
        tree = out_dir / name
        plan = plan_shards(rows_ds)
        written: dict[Path, str] = {}
        if name not in (reuse or set()):
            write_shards(rows_ds, tree / "data", plan=plan, rows_of=rows, hashes=written)
        card = render_card(
            name,
            narrow,
            stats,
            drops,
            benchmarks_checked=benchmarks_checked,
            epochs=epochs,
            num_bytes=plan.num_bytes,
        )
        crashpoint("publish_write")
        data = card.encode()
        write_bytes_if_changed(tree / "README.md", data)
        written[tree / "README.md"] = hashlib.sha256(data).hexdigest()
        crashpoint("publish_write")
        if hashes is not None:
            hashes.update((path.relative_to(out_dir).as_posix(), sha) for path, sha in written.items())

    if threads > 1 and len(names) > 1:
        # Parquet reading and encoding run outside the GIL: datasets are written side by side
        # (each tree depends only on its own rows, so the bytes are the same in any order)
        # largest first (LPT), so the trees still being written at the end are small ones
        weight = pl.col(ROW_BYTES).sum() if ROW_BYTES in lazy.collect_schema().names() else pl.len()
        sizes = dict(lazy.group_by("dataset").agg(weight.alias("w")).collect().iter_rows())
        with ThreadPoolExecutor(min(threads, len(names)), thread_name_prefix="trajpipe-publish") as pool:
            list(pool.map(one, sorted(names, key=lambda n: (-int(sizes.get(n) or 0), n))))
    else:
        for name in names:
            one(name)
    for old in out_dir.iterdir():
        if old.name not in names and old.is_dir() and DATASET_RE.match(old.name):
            shutil.rmtree(old)
    return names


def _copy_verified(src: Path, dest: Path, sha: str) -> bool:
    """Copy ``src`` to ``dest`` atomically, hashing the bytes as they are copied: a file that
    differs from the manifest's sha256 is refused, never placed. Unchanged files are not touched."""
    try:
        return copy_verified(src, dest, sha, keep_same=True)
    except CopyMismatch as exc:
        raise PublishRefused(f"{src} changed while it was copied (sha256 differs from the manifest)") from exc


def _stats_near(src: Path) -> Stats | None:
    """The build's stats.json when ``src`` is ``<workdir>/publish``."""
    path = src.parent / "ledger" / "stats.json"
    if not path.is_file():
        return None
    try:
        stats = orjson.loads(path.read_bytes())
    except orjson.JSONDecodeError as exc:
        raise PublishRefused(f"{path} is damaged ({exc}): rerun `trajpipe run`") from None
    return cast(Stats, stats if isinstance(stats, dict) else {})


def publish_to_dir(src: Path, to: Path, *, stats: Stats | None = None) -> list[str]:
    """Copy the whole build at ``src`` to ``to`` (unchanged files untouched, stale shards removed,
    its MANIFEST.json last).

    Refuses (:class:`PublishRefused`) unless ``src`` verifies against its manifest
    (:func:`verify_build`) and the build's stats (given, or ``<src>/../ledger/stats.json``) pass.
    """
    stats = stats if stats is not None else _stats_near(src)
    if stats is not None:
        check_publishable(stats)
    root = src.resolve()  # one build, even if `run` switches ``src`` meanwhile
    manifest = verify_build(root)
    names: list[str] = manifest["datasets"]
    for name in names:
        files = sorted(rel.split("/", 1)[1] for rel in manifest["files"] if rel.startswith(f"{name}/"))
        for rel in files:
            _copy_verified(root / name / rel, to / name / rel, manifest["files"][f"{name}/{rel}"])
        target_data = to / name / "data"
        if target_data.is_dir():
            for old in target_data.iterdir():
                if SHARD_RE.match(old.name) and f"data/{old.name}" not in files:
                    old.unlink()
    atomic_write_json(to / MANIFEST, manifest)
    return names


# ---------------------------------------------------------------------------------- whole builds

MANIFEST = "MANIFEST.json"
MANIFEST_FORMAT = 1
BUILDS = "builds"  # <workdir>/builds/<build id>/ ; <workdir>/publish is a symlink to the current one


def _tree_listing(root: Path) -> list[str]:
    """Every regular file under ``root`` (relative, sorted) but the manifest; symlinks are refused."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        for n in [*dirnames, *filenames]:
            if os.path.islink(os.path.join(dirpath, n)):
                raise PublishRefused(f"{os.path.join(dirpath, n)} is a symlink: not part of a build")
        for n in filenames:
            rel = os.path.relpath(os.path.join(dirpath, n), root)
            if rel != MANIFEST:
                out.append(rel.replace(os.sep, "/"))
    return sorted(out)


def write_manifest(
    tree: Path, stats: Mapping[str, Any], known: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """Seal a finished build: the sha256 of every file, its datasets and its books, written last.

    ``known``: the sha256 of files this run wrote into ``tree`` (hashed from the bytes it wrote,
    :func:`publish_tree`'s ``hashes``); every other file is read and hashed here. A reader trusts
    a tree only when every file matches this manifest (:func:`verify_build`)."""
    have = known or {}
    files = {rel: have.get(rel) or file_sha256(tree / rel) for rel in _tree_listing(tree)}
    build = hashlib.sha256(orjson.dumps(files, option=orjson.OPT_SORT_KEYS)).hexdigest()[:16]
    manifest = {
        "format": MANIFEST_FORMAT,
        "build": build,
        "code_version": VERSION,
        "datasets": sorted({rel.split("/", 1)[0] for rel in files if "/" in rel}),
        "files": files,
        "invariant": stats.get("invariant"),
        "validation": stats.get("validation"),
    }
    crashpoint("publish_write")
    atomic_write_json(tree / MANIFEST, manifest)
    return manifest


def verify_build(root: Path) -> dict[str, Any]:
    """The manifest of the whole build at ``root``; :class:`PublishRefused` unless every file it
    names is there with its sha256, nothing else is, and its books balance."""
    path = root / MANIFEST
    try:
        manifest = orjson.loads(path.read_bytes())
    except FileNotFoundError:
        raise PublishRefused(
            f"{root} has no {MANIFEST}: it is not a finished build (rerun `trajpipe run`)"
        ) from None
    except (OSError, orjson.JSONDecodeError) as exc:
        raise PublishRefused(f"{path} is damaged ({exc}): rerun `trajpipe run`") from None
    if (
        not isinstance(manifest, dict)
        or not isinstance(manifest.get("files"), dict)
        or not isinstance(manifest.get("datasets"), list)
    ):
        raise PublishRefused(f"{path} is not a trajpipe build manifest")
    check_publishable(manifest)
    files: dict[str, str] = manifest["files"]
    present = _tree_listing(root)
    if present != sorted(files):
        extra = sorted(set(present) - set(files))[:3]
        missing = sorted(set(files) - set(present))[:3]
        raise PublishRefused(
            f"{root} is not the build its manifest describes (missing {missing}, "
            f"unexpected {extra}): rerun `trajpipe run`"
        )
    for rel, sha in files.items():
        if file_sha256(root / rel) != sha:
            raise PublishRefused(
                f"{root / rel} differs from the build manifest (sha256): rerun `trajpipe run`"
            )
    return manifest


def stage_build(workdir: Path) -> tuple[Path, bool]:
    """A fresh staging dir for the next build, pre-filled with hard links to the current build's
    intact files (each checked against its manifest), so unchanged files keep their bytes and
    mtimes; every writer replaces files by rename, never in place, so the current build is never
    touched. Returns the dir and whether the current build verified whole."""
    builds = workdir / BUILDS
    builds.mkdir(parents=True, exist_ok=True)
    for stale in builds.glob(".staging-*"):  # left by a killed run (the caller holds the lock)
        shutil.rmtree(stale, ignore_errors=True)
    stage = builds / f".staging-{os.getpid()}"
    stage.mkdir()
    current = workdir / "publish"
    if not current.is_dir():
        return stage, False
    try:
        recorded = orjson.loads((current / MANIFEST).read_bytes()).get("files")
    except (OSError, orjson.JSONDecodeError, AttributeError):
        recorded = None
    recorded = recorded if isinstance(recorded, dict) else {}
    try:
        present = _tree_listing(current)
    except PublishRefused:
        return stage, False
    intact = current.is_symlink() and sorted(recorded) == present
    for rel in present:
        if recorded.get(rel) != file_sha256(current / rel):
            intact = False  # a damaged or unrecorded file is rewritten, never carried over
            continue
        (stage / rel).parent.mkdir(parents=True, exist_ok=True)
        os.link(current / rel, stage / rel)
    return stage, intact


def switch_build(workdir: Path, stage: Path, manifest: dict[str, Any], *, current_intact: bool) -> Path:
    """Make the sealed ``stage`` the published build: ``<workdir>/publish`` is switched to it with
    one rename, so a reader sees the old build or the new one, never a mix. When the current
    build is intact and identical, everything is left as it was. Returns the build dir."""
    publish = workdir / "publish"
    builds = workdir / BUILDS
    if current_intact and publish.is_symlink():
        try:
            same = orjson.loads((publish / MANIFEST).read_bytes()).get("files") == manifest["files"]
        except (OSError, orjson.JSONDecodeError, AttributeError):
            same = False
        if same:
            shutil.rmtree(stage)
            return publish.resolve()
    final = builds / manifest["build"]
    if final.exists():
        # a leftover of a killed run, or the current build damaged: moved aside, never half-removed
        aside = builds / f".old-{os.getpid()}"
        shutil.rmtree(aside, ignore_errors=True)
        move_dir(final, aside)
    move_dir(stage, final)
    crashpoint("publish_write")
    if publish.exists() and not publish.is_symlink():  # a work dir from before builds/: moved aside
        move_dir(publish, builds / f".legacy-{os.getpid()}")
    switch_symlink(publish, f"{BUILDS}/{final.name}")  # the switch
    crashpoint("publish_write")
    for old in builds.iterdir():
        if old.name != final.name:
            shutil.rmtree(old, ignore_errors=True)
    return Path(final)


# ---------------------------------------------------------------------------------------- Hub


@dataclass
class PublishPlan:
    repo_id: str
    add: list[str] = field(default_factory=list)
    delete: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    commit_message: str = ""
    committed: bool = False
    commit_url: str | None = None

    def __str__(self) -> str:
        return "\n".join(self.lines())

    def lines(self) -> list[str]:
        out = [
            f"{self.repo_id}: {len(self.add)} to add, {len(self.delete)} to delete, "
            f"{len(self.unchanged)} unchanged"
        ]
        out += [f"  add       {p}" for p in self.add]
        out += [f"  delete    {p}" for p in self.delete]
        out += [f"  unchanged {p}" for p in self.unchanged]
        return out


def format_plans(plans: list[PublishPlan]) -> str:
    return "\n".join(line for plan in plans for line in plan.lines())


def git_blob_id(path: Path) -> str:
    """The git object id of a file (what the Hub reports for files not stored in LFS)."""
    h = hashlib.sha1(f"blob {path.stat().st_size}\0".encode())
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def remote_listing(api: Any, repo_id: str, token: str | None) -> dict[str, tuple[str | None, str]]:
    """path -> (lfs sha256 or None, git blob id) for every file in the dataset repo; {} if absent."""
    kwargs: dict[str, Any] = {"repo_type": "dataset", "recursive": True, "expand": True}
    if token is not None:
        kwargs["token"] = token
    from huggingface_hub.errors import RepositoryNotFoundError

    try:
        entries = list(api.list_repo_tree(repo_id, **kwargs))
    except RepositoryNotFoundError:
        return {}
    listing: dict[str, tuple[str | None, str]] = {}
    for e in entries:
        if not hasattr(e, "blob_id"):  # RepoFolder
            continue
        lfs = getattr(e, "lfs", None)
        listing[e.path] = (lfs.sha256 if lfs is not None else None, e.blob_id)
    return listing


def plan_dataset(tree: Path, repo_id: str, remote: dict[str, tuple[str | None, str]]) -> PublishPlan:
    """Compare a local tree with the remote listing: add changed/new files, delete stale shards."""
    plan = PublishPlan(repo_id)
    local = tree_files(tree)
    for rel in local:
        path = tree / rel
        if rel in remote:
            lfs_sha, blob = remote[rel]
            same = file_sha256(path) == lfs_sha if lfs_sha is not None else git_blob_id(path) == blob
            (plan.unchanged if same else plan.add).append(rel)
        else:
            plan.add.append(rel)
    # Only data shards are ours to delete; other remote files (.gitattributes, extras) stay.
    plan.delete = sorted(
        p for p in remote if p.startswith("data/") and p.endswith(".parquet") and p not in local
    )
    return plan


def build_id(tree: Path) -> str:
    """Short content hash of a tree: names the build in the commit message."""
    h = hashlib.sha256()
    for rel in tree_files(tree):
        h.update(rel.encode() + b"\0" + file_sha256(tree / rel).encode() + b"\n")
    return h.hexdigest()[:12]


def commit_message(tree: Path) -> str:
    rows = sum(
        pq.ParquetFile(tree / rel).metadata.num_rows for rel in tree_files(tree) if rel.startswith("data/")
    )
    return f"Publish {tree.name}: {rows:,} rows (trajpipe {VERSION}, build {build_id(tree)})"


def resolve_token(token: str | None) -> str | None:
    """Explicit token, else HF_TOKEN, else the user's saved login; the value is never printed."""
    if token:
        return token
    if os.environ.get("HF_TOKEN"):
        return os.environ["HF_TOKEN"]
    from huggingface_hub import get_token

    return get_token()


def publish_to_hub(
    src: Path,
    org: str,
    *,
    api: HfApi | None = None,
    token: str | None = None,
    dry_run: bool = False,
    private: bool = False,
    create_pr: bool = False,
    stats: Stats | None = None,
) -> list[PublishPlan]:
    """Push each dataset tree under ``src`` to ``<org>/<dataset>`` in one commit per dataset.

    With ``dry_run`` the plans are computed against the remote listing (a missing repo counts as
    empty) and nothing is created or committed. Refuses builds that fail :func:`check_publishable`
    (``stats`` given, or ``<src>/../ledger/stats.json``).
    """
    stats = stats if stats is not None else _stats_near(src)
    if stats is not None:
        check_publishable(stats)
    src = src.resolve()  # one build, even if `run` switches ``src`` meanwhile
    verify_build(src)
    token = resolve_token(token)
    from huggingface_hub import CommitOperationAdd, CommitOperationDelete, HfApi

    api = api if api is not None else HfApi(token=token)
    auth: dict[str, Any] = {"token": token} if token is not None else {}
    plans: list[PublishPlan] = []
    for tree in sorted(p for p in src.iterdir() if is_dataset_dir(p)):
        repo_id = f"{org}/{tree.name}"
        if not dry_run:
            api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True, **auth)
        plan = plan_dataset(tree, repo_id, remote_listing(api, repo_id, token))
        plan.commit_message = commit_message(tree)
        if not dry_run and (plan.add or plan.delete):
            operations: list[CommitOperationAdd | CommitOperationDelete] = [
                CommitOperationAdd(path_in_repo=rel, path_or_fileobj=str(tree / rel)) for rel in plan.add
            ]
            operations += [CommitOperationDelete(path_in_repo=rel) for rel in plan.delete]
            info = api.create_commit(
                repo_id,
                operations,
                commit_message=plan.commit_message,
                repo_type="dataset",
                create_pr=create_pr,
                **auth,
            )
            plan.committed = True
            plan.commit_url = (
                str(getattr(info, "pr_url", None) or getattr(info, "commit_url", "") or "") or None
            )
        plans.append(plan)
    return plans
