"""What every source shares: the unit of ingest work, safe key resolution and byte streams."""

from __future__ import annotations

import gzip
import hashlib
import io
import urllib.parse
import urllib.request
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Literal

import orjson

from pipeline.episode import Quarantined, QuarantineReason, RawRun

# what a unit is read by (and its state key's prefix)
SourceName = Literal["affine-view", "affine-trace", "swelego"]


@dataclass(frozen=True, slots=True)
class Unit:
    """One independently processable piece of input: a corpus chunk or a SWE-Lego file.

    ``sha256`` is the content identity that incremental ingestion keys on (DESIGN §2.1: over the
    uncompressed JSONL for view shards, over the gzip bytes for trace chunks, over the file bytes
    for SWE-Lego files).
    """

    source: SourceName
    base: str  # base URL (file://… or http(s)://…) or the SWE-Lego dataset name
    key: str  # chunk key relative to base, or file path
    sha256: str
    epoch: int | None = None
    sha_scope: str = "raw"  # "raw": over uncompressed bytes; "gzip": over the file bytes
    dataset_label: str = ""  # SWE-Lego "<dataset>" part of source_uid
    location: str = ""  # absolute path or URL to read
    # a part of a large Parquet file: row groups [first, last) whose first row is ``first_row``
    row_groups: tuple[int, int] | None = None
    first_row: int = 0

    @property
    def state_key(self) -> str:
        part = f"-rg{self.row_groups[0]}-{self.row_groups[1]}" if self.row_groups else ""
        return f"{self.source}-{self.sha256}{part}"

    @property
    def url(self) -> str:
        return f"{self.base}/{self.key}"


@dataclass(frozen=True, slots=True)
class ShardVerdict:
    """Yielded last by a chunk reader: whether the shard verified and was read whole."""

    ok: bool
    reason: QuarantineReason | Literal[""] = ""
    detail: str = ""


class UnsafeKey(ValueError):
    pass


def resolve_key(base: str, key: str) -> str:
    """Join a manifest key to the corpus base, refusing keys that escape it (``..``, absolute,
    another host)."""
    if not key or key.startswith(("/", "\\")) or "://" in key or key.startswith("//"):
        raise UnsafeKey(f"key {key!r} is absolute or names another host")
    parts = key.replace("\\", "/").split("/")
    if any(p in ("..", "") for p in parts) or ":" in parts[0]:
        raise UnsafeKey(f"key {key!r} escapes the corpus root")
    if base.startswith("file://"):
        return str(Path(base[len("file://"):]) / key)
    return f"{base.rstrip('/')}/{urllib.parse.quote(key)}"


def base_url_of(location: str) -> str:
    """``file://<absolute path>`` for a local directory, the URL itself (no trailing /) otherwise."""
    if location.startswith(("http://", "https://", "file://")):
        return location.rstrip("/")
    return "file://" + str(Path(location).resolve())


def open_location(location: str, timeout: float = 60.0) -> IO[bytes]:
    """A binary stream over a local path or an http(s) URL (standard library, streamed)."""
    if location.startswith(("http://", "https://")):
        stream: IO[bytes] = urllib.request.urlopen(location, timeout=timeout)
        return stream
    return open(location, "rb")


def read_json(location: str) -> object:
    with open_location(location) as fh:
        return orjson.loads(fh.read())


class _Counting(io.RawIOBase):
    """Pass-through reader that hashes the compressed bytes as they stream by."""

    def __init__(self, inner: IO[bytes]) -> None:
        self.inner = inner
        self.sha = hashlib.sha256()

    def readable(self) -> bool:
        return True

    def readinto(self, b: bytearray) -> int:  # type: ignore[override]
        data = self.inner.read(len(b))
        n = len(data)
        b[:n] = data
        self.sha.update(data)
        return n


def iter_gzip_lines(stream: IO[bytes], *, max_chunk_bytes: int, max_record_bytes: int,
                    raw_sha: hashlib._Hash | None, ) -> Iterator[tuple[int, bytes | None, str]]:
    """Yield ``(line_no, line_bytes | None, problem)`` from a gzip JSONL stream, hashing the
    uncompressed bytes into ``raw_sha``. Raises ``ShardTooLarge`` / ``EOFError`` / ``OSError``
    / ``zlib.error`` for a stream that cannot be read whole."""
    gz = gzip.GzipFile(fileobj=stream)
    total = 0
    line_no = 0
    pending = b""
    skipping = False  # inside an over-long record: drop bytes up to its newline
    while True:
        block = gz.read(1 << 20)
        if not block:
            break
        total += len(block)
        if total > max_chunk_bytes:
            raise ShardTooLarge(f"decompressed size exceeds {max_chunk_bytes} bytes")
        if raw_sha is not None:
            raw_sha.update(block)
        data = pending + block
        lines = data.split(b"\n")
        pending = lines.pop()
        for line in lines:
            if skipping:
                skipping = False
                continue  # tail of the too-large record (already reported)
            line_no += 1
            if len(line) > max_record_bytes:
                yield line_no, None, "record_too_large"
            else:
                yield line_no, line, ""
        if len(pending) > max_record_bytes and not skipping:
            line_no += 1
            yield line_no, None, "record_too_large"
            pending = b""
            skipping = True
        elif skipping:
            pending = b""
    if pending and not skipping:
        line_no += 1
        yield line_no, pending, ""


class ShardTooLarge(Exception):
    pass


STREAM_ERRORS: tuple[type[BaseException], ...] = (EOFError, OSError, zlib.error, gzip.BadGzipFile,
                                                  ShardTooLarge)


def quarantine_reason(exc: BaseException) -> QuarantineReason:
    if isinstance(exc, ShardTooLarge):
        return "chunk_too_large"
    if isinstance(exc, EOFError | zlib.error | gzip.BadGzipFile):
        return "bad_gzip"
    return "unreadable"


def shard_quarantine(unit: Unit, runs: list[RawRun], reason: QuarantineReason, detail: str) -> list[Quarantined]:
    """A shard that fails verification: one entry per readable record, or one for the shard."""
    if not runs:
        return [Quarantined(unit.url, unit.epoch, reason, f"{unit.key}: {detail}")]
    return [Quarantined(r.source_uid, unit.epoch, reason, f"{unit.key}: {detail}") for r in runs]
