"""SWE-Lego files: Parquet or JSONL with ``instance_id`` and ``messages``, local or on the Hub.

A location is a local file or folder, ``hf://datasets/<org>/<name>[@rev][/path]`` (read through
``huggingface_hub``'s ``HfFileSystem``, streamed: Parquet row groups are fetched as they are read),
or any fsspec URL whose filesystem is installed (``s3://…`` with s3fs, …). Source uids are
``<dataset>:<path in the dataset>#row=<n>`` where ``<dataset>`` is the folder's (or Hub repo's)
name, so the same files read locally or from the Hub get the same uids.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import IO, Any, cast

import orjson
import pyarrow.parquet as pq

from pipeline.core.config import Config, Limits
from pipeline.core.episode import Quarantined, RawRun, quarantine_reason_named
from pipeline.io.fileio import file_sha256
from pipeline.sources.base import ShardVerdict, Unit


class SourceUnavailable(OSError):
    """A remote SWE-Lego location that cannot be listed (unknown scheme, no such repo, offline)."""


def is_remote(location: str) -> bool:
    """An fsspec URL (``hf://``, ``s3://``, …) rather than a local path or ``file://``."""
    head, sep, _ = location.partition("://")
    return bool(sep) and len(head) > 1 and head != "file"


def filesystem_for(url: str) -> tuple[Any, str]:
    """The seam to remote storage: (fsspec filesystem, path inside it) for ``url``. ``hf://`` is
    ``huggingface_hub.HfFileSystem`` (token from ``HF_TOKEN`` or ``huggingface-cli login``)."""
    if url.startswith("hf://"):
        from huggingface_hub import HfFileSystem

        return HfFileSystem(), url[len("hf://") :]
    import fsspec  # type: ignore[import-untyped]

    return cast(tuple[Any, str], fsspec.core.url_to_fs(url))


def _open(location: str) -> IO[bytes]:
    """A seekable binary stream over a local path or a remote URL (fetched in blocks as read)."""
    if is_remote(location):
        fs, path = filesystem_for(location)
        return cast(IO[bytes], fs.open(path, "rb"))
    return open(location.removeprefix("file://"), "rb")


@contextlib.contextmanager
def _parquet_file(location: str) -> Iterator[pq.ParquetFile]:
    """A ParquetFile over a local path (read by Arrow directly) or a remote stream."""
    if not is_remote(location):
        yield pq.ParquetFile(location.removeprefix("file://"))
        return
    with _open(location) as fh:
        yield pq.ParquetFile(fh)


def _remote_sha256(fs: Any, path: str, info: dict[str, Any]) -> str:
    """Content identity of a remote file: the Hub's LFS sha256 (the file's own sha256) when it has
    one, else the sha256 of the bytes, streamed."""
    lfs = info.get("lfs")
    if isinstance(lfs, dict) and isinstance(lfs.get("sha256"), str):
        return str(lfs["sha256"])
    h = hashlib.sha256()
    with fs.open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _hub_dataset_root(path: str) -> str | None:
    """``datasets/<org>/<name>[@rev]`` of an HfFileSystem path, or None for another kind of path."""
    parts = path.strip("/").split("/")
    return "/".join(parts[:3]) if len(parts) >= 3 and parts[0] == "datasets" else None


def _list_remote(location: str, dataset: str | None, unit_rows: int) -> list[Unit]:
    try:
        fs, path = filesystem_for(location)
        path = path.rstrip("/")
        info = fs.info(path)
        if info.get("type") == "directory":
            found = fs.find(path, detail=True)
            files = sorted(
                (p, i) for p, i in found.items() if i.get("type") != "directory" and p.endswith(SUFFIXES)
            )
        else:
            files = [(path, info)]
    except Exception as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise SourceUnavailable(f"--swelego: cannot list {location}: {first}") from None
    hub_root = _hub_dataset_root(path)
    if hub_root is not None:
        top = hub_root
    elif info.get("type") == "directory":
        top = path.rsplit("/", 1)[0] if path.endswith("/data") else path
    else:
        parent = path.rsplit("/", 1)[0] if "/" in path else ""
        top = parent.rsplit("/", 1)[0] if parent.endswith("/data") else parent
    label = dataset or top.rsplit("/", 1)[-1].split("@", 1)[0]
    scheme = location.split("://", 1)[0]
    units = []
    for f, finfo in files:
        rel = f[len(top) :].lstrip("/") if top and f.startswith(top + "/") else f.rsplit("/", 1)[-1]
        unit = Unit(
            "swelego",
            label,
            rel,
            _remote_sha256(fs, f, finfo),
            None,
            "gzip",
            dataset_label=label,
            location=f"{scheme}://{f}",
        )
        units.extend(_row_group_parts(unit, unit_rows) if f.endswith(".parquet") else [unit])
    return units


ORIGIN = "SWE-Lego"
SUFFIXES = (".parquet", ".jsonl", ".json")
UNIT_ROWS = 1000  # a Parquet file larger than this is split at row-group boundaries into units
_SPLIT = re.compile(r"^([A-Za-z_]+?)(?:-\d{5}-of-\d{5})?\.(?:parquet|jsonl|json)$")


def resolved_from_name(name: str) -> str:
    """The split in the file name gives ``resolved`` (``resolved-00000-of-00003.parquet``)."""
    m = _SPLIT.match(name)
    split = m.group(1).lower() if m else ""
    if split == "resolved":
        return "resolved"
    if split in ("unresolved", "not_resolved", "failed"):
        return "not resolved"
    return "unknown"


def list_units(location: str, *, dataset: str | None = None, unit_rows: int | None = None) -> list[Unit]:
    """Every Parquet/JSONL file under ``location`` (a file or a folder), in a stable order.

    A Parquet file with more than ``unit_rows`` rows becomes several units of whole row groups
    (about ``unit_rows`` rows each), so one large file is spread over the workers; source_uids
    keep the row's number in the whole file. ``location`` may be an ``hf://`` or other fsspec URL."""
    if is_remote(location):
        return _list_remote(location, dataset, unit_rows or UNIT_ROWS)
    root = Path(location.removeprefix("file://")).resolve()
    if not root.exists():
        raise FileNotFoundError(f"SWE-Lego input {location} does not exist")
    if root.is_file():
        files = [root]
        top = root.parent.parent if root.parent.name == "data" else root.parent
    else:
        files = sorted(p for p in root.rglob("*") if p.is_file() and p.name.endswith(SUFFIXES))
        top = root.parent if root.name == "data" else root  # a dataset's data/ folder: named by the dataset
    label = dataset or top.name
    units = []
    for f in files:
        rel = f.relative_to(top).as_posix() if f.is_relative_to(top) else f.name
        unit = Unit("swelego", label, rel, file_sha256(f), None, "gzip", dataset_label=label, location=str(f))
        units.extend(
            _row_group_parts(unit, unit_rows or UNIT_ROWS) if f.name.endswith(".parquet") else [unit]
        )
    return units


def _row_group_parts(unit: Unit, unit_rows: int) -> list[Unit]:
    try:
        with _parquet_file(unit.location) as pf:
            meta = pf.metadata
    except (OSError, ValueError):
        return [unit]  # unreadable: the reader quarantines it with its reason
    if meta.num_rows <= unit_rows or meta.num_row_groups < 2:
        return [unit]
    parts, start, first_row, rows = [], 0, 0, 0
    for g in range(meta.num_row_groups):
        rows += meta.row_group(g).num_rows
        if rows >= unit_rows or g == meta.num_row_groups - 1:
            parts.append(replace(unit, row_groups=(start, g + 1), first_row=first_row))
            start, first_row, rows = g + 1, first_row + rows, 0
    return parts


def read_unit(unit: Unit, limits: Limits) -> Iterator[RawRun | Quarantined | ShardVerdict]:
    resolved = resolved_from_name(Path(unit.key).name)
    prefix = f"{unit.dataset_label}:{unit.key}#row="
    try:
        if unit.key.endswith(".parquet"):
            rows = _parquet_rows(unit.location, unit.row_groups, unit.first_row, limits.max_record_bytes)
        else:
            rows = _jsonl_rows(unit.location, limits)
        for n, item in rows:
            uid = f"{prefix}{n}"
            if isinstance(item, str):  # a problem description
                yield Quarantined(uid, None, quarantine_reason_named(item), f"{unit.key} row {n}: {item}")
                continue
            yield _record(uid, unit.key, n, item, resolved, limits)
    except (OSError, ValueError) as exc:
        yield ShardVerdict(False, "unreadable", f"{type(exc).__name__}: {exc}")
        return
    yield ShardVerdict(True)


def _parquet_rows(
    path: str,
    row_groups: tuple[int, int] | None = None,
    first_row: int = 0,
    max_record_bytes: int = 64 * 2**20,
) -> Iterator[tuple[int, dict[str, Any] | str]]:
    """Rows of a Parquet file as dicts; a row whose decoded size is over ``max_record_bytes`` is a
    ``record_too_large`` problem and is never turned into Python objects. Batches are sized from
    the row groups' uncompressed sizes, so a file of a few huge rows is read a row at a time."""
    with _parquet_file(path) as pf:
        yield from _parquet_batches(pf, row_groups, first_row, max_record_bytes)


def _parquet_batches(
    pf: pq.ParquetFile, row_groups: tuple[int, int] | None, first_row: int, max_record_bytes: int
) -> Iterator[tuple[int, dict[str, Any] | str]]:
    n = first_row
    groups = list(range(*row_groups)) if row_groups else list(range(pf.metadata.num_row_groups))
    for g in groups:
        rg = pf.metadata.row_group(g)
        per_row = rg.total_byte_size / max(1, rg.num_rows)
        batch_size = int(max(1, min(256, (max_record_bytes // 4) // max(1.0, per_row))))
        for batch in pf.iter_batches(batch_size=batch_size, row_groups=[g]):
            if batch.nbytes > max_record_bytes:  # look at each row's size before decoding it
                for i in range(batch.num_rows):
                    row = batch.slice(i, 1)
                    if row.nbytes > max_record_bytes:
                        yield n, f"record_too_large: over {max_record_bytes} bytes"
                    else:
                        yield n, row.to_pylist()[0]
                    n += 1
                continue
            for item in batch.to_pylist():
                yield n, item
                n += 1


def _jsonl_rows(path: str, limits: Limits) -> Iterator[tuple[int, dict[str, Any] | str]]:
    """Lines of a JSONL file; an over-long line is skipped in blocks (never held whole) and blank
    lines cost nothing."""
    with _open(path) as fh:
        n = -1
        while True:
            line = fh.readline(limits.max_record_bytes + 1)
            if not line:
                break
            n += 1
            if len(line) > limits.max_record_bytes and not line.endswith(b"\n"):
                while True:  # drop the rest of the line
                    rest = fh.readline(1 << 20)
                    if not rest or rest.endswith(b"\n"):
                        break
                yield n, f"record_too_large: over {limits.max_record_bytes} bytes"
                continue
            if not line.strip():
                continue
            try:
                obj = orjson.loads(line)
            except orjson.JSONDecodeError as exc:
                yield n, f"bad_json: {exc}"
                continue
            yield n, obj if isinstance(obj, dict) else f"not_object: a JSON {type(obj).__name__}"


def _record(
    uid: str, key: str, n: int, row: dict[str, Any], resolved: str, limits: Limits
) -> RawRun | Quarantined:
    where = f"{key} row {n}"
    messages = row.get("messages")
    if isinstance(messages, str | bytes):
        if len(messages) > limits.max_record_bytes:
            return Quarantined(
                uid, None, "record_too_large", f"{where}: over {limits.max_record_bytes} bytes"
            )
        try:
            messages = orjson.loads(messages)
        except orjson.JSONDecodeError as exc:
            return Quarantined(uid, None, "bad_json", f"{where}: messages is not JSON: {exc}")
    if not isinstance(messages, list) or not isinstance(row.get("instance_id"), str):
        return Quarantined(uid, None, "missing_field", f"{where}: needs instance_id and a messages list")
    payload = dict(row)
    payload["messages"] = messages
    size = sum(
        len(m.get("content") or "")
        for m in messages
        if isinstance(m, dict) and isinstance(m.get("content"), str)
    )
    return RawRun(uid, ORIGIN, "swelego", None, payload, size, resolved_hint=resolved)


class SweLegoSource:
    """The SWE-Lego files and folders (or hf:// and fsspec URLs) of ``Config.swelego``."""

    key: str = "swelego"
    folder: bool | None = None
    unit_sources: tuple[str, ...] = ("swelego",)

    def list_units(self, config: Config) -> tuple[list[Unit], list[Quarantined]]:
        units: list[Unit] = []
        for loc in config.swelego:
            units += list_units(loc)
        return units, []

    def read_unit(self, unit: Unit, limits: Limits) -> Iterator[RawRun | Quarantined | ShardVerdict]:
        return read_unit(unit, limits)


SOURCE = SweLegoSource()
