"""SWE-Lego files (DESIGN §2.2): Parquet or JSONL with ``instance_id`` and ``messages``."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson
import pyarrow.parquet as pq

from pipeline.config import Limits
from pipeline.episode import Quarantined, RawRun, quarantine_reason_named
from pipeline.fileio import file_sha256
from pipeline.sources.base import ShardVerdict, Unit

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
    keep the row's number in the whole file."""
    root = Path(location).resolve()
    if not root.exists():
        raise FileNotFoundError(f"SWE-Lego input {location} does not exist")
    if root.is_file():
        files = [root]
        top = root.parent.parent if root.parent.name == "data" else root.parent
    else:
        files = sorted(p for p in root.rglob("*") if p.is_file() and p.name.endswith(SUFFIXES))
        top = root
    label = dataset or top.name
    units = []
    for f in files:
        rel = f.relative_to(top).as_posix() if f.is_relative_to(top) else f.name
        unit = Unit("swelego", label, rel, file_sha256(f), None, "gzip", dataset_label=label, location=str(f))
        units.extend(_row_group_parts(unit, unit_rows or UNIT_ROWS) if f.name.endswith(".parquet") else [unit])
    return units


def _row_group_parts(unit: Unit, unit_rows: int) -> list[Unit]:
    try:
        meta = pq.ParquetFile(unit.location).metadata
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
            rows = _parquet_rows(unit.location, unit.row_groups, unit.first_row)
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


def _parquet_rows(path: str, row_groups: tuple[int, int] | None = None,
                  first_row: int = 0) -> Iterator[tuple[int, dict[str, Any] | str]]:
    pf = pq.ParquetFile(path)
    n = first_row
    groups = range(*row_groups) if row_groups else None
    for batch in pf.iter_batches(batch_size=256, row_groups=groups):
        for row in batch.to_pylist():
            yield n, row
            n += 1


def _jsonl_rows(path: str, limits: Limits) -> Iterator[tuple[int, dict[str, Any] | str]]:
    with open(path, "rb") as fh:
        for n, line in enumerate(fh):
            if len(line) > limits.max_record_bytes:
                yield n, f"record_too_large: over {limits.max_record_bytes} bytes"
                continue
            try:
                obj = orjson.loads(line)
            except orjson.JSONDecodeError as exc:
                yield n, f"bad_json: {exc}"
                continue
            yield n, obj if isinstance(obj, dict) else f"not_object: a JSON {type(obj).__name__}"


def _record(uid: str, key: str, n: int, row: dict[str, Any], resolved: str, limits: Limits) -> RawRun | Quarantined:
    where = f"{key} row {n}"
    messages = row.get("messages")
    if isinstance(messages, str | bytes):
        if len(messages) > limits.max_record_bytes:
            return Quarantined(uid, None, "record_too_large", f"{where}: over {limits.max_record_bytes} bytes")
        try:
            messages = orjson.loads(messages)
        except orjson.JSONDecodeError as exc:
            return Quarantined(uid, None, "bad_json", f"{where}: messages is not JSON: {exc}")
    if not isinstance(messages, list) or not isinstance(row.get("instance_id"), str):
        return Quarantined(uid, None, "missing_field", f"{where}: needs instance_id and a messages list")
    payload = dict(row)
    payload["messages"] = messages
    size = sum(len(m.get("content") or "") for m in messages if isinstance(m, dict)
               and isinstance(m.get("content"), str))
    return RawRun(uid, ORIGIN, "swelego", None, payload, size, resolved_hint=resolved)
