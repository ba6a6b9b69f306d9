"""What every source shares: the unit of ingest work, safe key resolution and byte streams."""

from __future__ import annotations

import base64
import gzip
import hashlib
import http.client
import io
import os
import re
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Literal

import orjson

from pipeline.core.episode import Quarantined, QuarantineReason, RawRun

# what a unit is read by (and its state key's prefix)
SourceName = Literal["affine-view", "affine-trace", "swelego"]


@dataclass(frozen=True, slots=True)
class Unit:
    """One independently processable piece of input: a corpus chunk or a SWE-Lego file.

    ``sha256`` is the content identity that incremental ingestion keys on (over the
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
        """The unit's name in the state: its content identity, and for corpus chunks also its key
        (two manifest entries declaring one sha256 are two units, each verified on its own)."""
        part = f"-rg{self.row_groups[0]}-{self.row_groups[1]}" if self.row_groups else ""
        if self.source != "swelego":
            part += "-k" + hashlib.sha256(self.key.encode("utf-8", "surrogatepass")).hexdigest()[:12]
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
    retry: bool = False  # could not be fetched: not decided now, fetched again by the next run


class UnsafeKey(ValueError):
    pass


class FetchFailed(OSError):
    """A remote read that failed after its retries (or ran past its deadline): the unit is not
    decided this run and is fetched again by the next one."""


# Fetch limits. Each fetch (a manifest, a whole chunk) has an overall deadline, whatever the
# server does (slow-loris trickling, an endless body); transient failures are retried with backoff
# and resumed from the byte already read. Environment overrides for slow links and for tests.
FETCH_DEADLINE_S = float(os.environ.get("TRAJPIPE_FETCH_DEADLINE", "900"))
READ_TIMEOUT_S = float(os.environ.get("TRAJPIPE_READ_TIMEOUT", "60"))
FETCH_RETRIES = int(os.environ.get("TRAJPIPE_FETCH_RETRIES", "4"))
MAX_MANIFEST_BYTES = 64 * 2**20  # a manifest or listing larger than this is refused
SHA256_RE = re.compile(r"^[0-9a-f]{64}$")
SHA_PREFIX_RE = re.compile(r"^[0-9a-f]{12,64}$")  # trace chunk names carry the first 12+ digits


def resolve_key(base: str, key: str) -> str:
    """Join a manifest key to the corpus base, refusing keys that escape it (``..``, absolute,
    another host, control characters, or a local symlink that resolves outside the corpus)."""
    if not isinstance(key, str) or not key or any(ord(c) < 32 or ord(c) == 127 for c in key):
        raise UnsafeKey(f"key {key!r} is empty or holds control characters")
    if key.startswith(("/", "\\")) or "://" in key or key.startswith("//"):
        raise UnsafeKey(f"key {key!r} is absolute or names another host")
    parts = key.replace("\\", "/").split("/")
    if any(p in ("..", ".", "") for p in parts) or ":" in parts[0] or len(key) > 1024:
        raise UnsafeKey(f"key {key!r} escapes the corpus root")
    if base.startswith("file://"):
        root = Path(base[len("file://") :])
        path = root / key
        try:
            inside = path.resolve().is_relative_to(root.resolve())
        except (OSError, RuntimeError):  # a symlink loop
            inside = False
        if not inside:
            raise UnsafeKey(f"key {key!r} is a link that resolves outside the corpus root")
        return str(path)
    return f"{base.rstrip('/')}/{urllib.parse.quote(key)}"


def base_url_of(location: str) -> str:
    """``file://<absolute path>`` for a local directory, the URL itself (no trailing /) otherwise."""
    if location.startswith(("http://", "https://", "file://")):
        return location.rstrip("/")
    return "file://" + str(Path(location).resolve())


def redact_url(url: str) -> str:
    """``url`` without a password (``https://user:pw@host`` → ``https://user@host``): for every
    message, ledger line and source_uid."""
    parts = urllib.parse.urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username}@{host}" if parts.username else host
    if parts.port:
        netloc += f":{parts.port}"
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc))


def _origin(url: str) -> tuple[str, str, int | None]:
    p = urllib.parse.urlsplit(url)
    return (
        p.scheme.lower(),
        (p.hostname or "").lower(),
        p.port or {"http": 80, "https": 443}.get(p.scheme.lower()),
    )


class _SameOrigin(urllib.request.HTTPRedirectHandler):
    """Follow a redirect only to the same scheme, host and port (never to another host or ftp://)."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # type: ignore[no-untyped-def]
        target = urllib.parse.urljoin(req.full_url, newurl)
        if _origin(target) != _origin(req.full_url):
            raise FetchFailed(
                f"refused a redirect from {redact_url(req.full_url)} to another origin ({redact_url(target)})"
            )
        return super().redirect_request(req, fp, code, msg, headers, target)


_OPENER = urllib.request.build_opener(_SameOrigin)


def _transient(exc: BaseException) -> bool:
    if isinstance(exc, urllib.error.HTTPError):
        return exc.code >= 500 or exc.code in (408, 429)
    return isinstance(
        exc,
        ConnectionError
        | TimeoutError
        | socket.timeout
        | http.client.IncompleteRead
        | http.client.RemoteDisconnected
        | urllib.error.URLError,
    )


class _HttpStream(io.RawIOBase):
    """A streamed HTTP body under one overall deadline: each read waits at most what is left of it;
    a reset or a 5xx is retried with backoff and resumed where it stopped (``Range``)."""

    def __init__(self, url: str, deadline_s: float) -> None:
        parts = urllib.parse.urlsplit(url)
        self.shown = redact_url(url)
        self.headers: dict[str, str] = {}
        if parts.password is not None or parts.username is not None:
            cred = (
                f"{urllib.parse.unquote(parts.username or '')}:{urllib.parse.unquote(parts.password or '')}"
            )
            self.headers["Authorization"] = "Basic " + base64.b64encode(cred.encode()).decode()
            host = parts.hostname or ""
            url = urllib.parse.urlunsplit(
                parts._replace(netloc=host + (f":{parts.port}" if parts.port else ""))
            )
        self.url = url
        self.deadline = time.monotonic() + deadline_s
        self.offset = 0
        self.resp: http.client.HTTPResponse | None = None
        self._open()

    def _left(self) -> float:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise FetchFailed(f"{self.shown}: not fetched within the {FETCH_DEADLINE_S:.0f} s deadline")
        return left

    def _open(self) -> None:
        for attempt in range(FETCH_RETRIES + 1):
            headers = dict(self.headers)
            if self.offset:
                headers["Range"] = f"bytes={self.offset}-"
            try:
                resp = _OPENER.open(
                    urllib.request.Request(self.url, headers=headers),
                    timeout=min(READ_TIMEOUT_S, self._left()),
                )
            except FetchFailed:
                raise
            except (OSError, http.client.HTTPException) as exc:
                if attempt == FETCH_RETRIES or not _transient(exc):
                    raise FetchFailed(f"{self.shown}: {type(exc).__name__}: {exc}") from None
                time.sleep(min(2.0**attempt * 0.25, max(0.0, self._left() - 0.01)))
                continue
            if self.offset and resp.status != 206:  # no range support: skip what was read
                skip = self.offset
                while skip:
                    got = resp.read1(min(skip, 1 << 20))
                    if not got:
                        raise FetchFailed(f"{self.shown}: body shorter on retry")
                    skip -= len(got)
                    self._left()
            self.resp = resp
            return

    def readable(self) -> bool:
        return True

    def readinto(self, b: bytearray) -> int:  # type: ignore[override]
        for attempt in range(FETCH_RETRIES + 1):
            left = self._left()
            assert self.resp is not None
            try:
                sock = getattr(getattr(self.resp, "fp", None), "raw", None)
                sock = getattr(sock, "_sock", None)
                if sock is not None:
                    sock.settimeout(min(READ_TIMEOUT_S, left))
                data = self.resp.read1(len(b))
            except (OSError, http.client.HTTPException) as exc:
                if attempt == FETCH_RETRIES or not _transient(exc):
                    raise FetchFailed(f"{self.shown}: {type(exc).__name__}: {exc}") from None
                self.resp.close()
                time.sleep(min(2.0**attempt * 0.25, max(0.0, self._left() - 0.01)))
                self._open()
                continue
            n = len(data)
            b[:n] = data
            self.offset += n
            return n
        return 0  # pragma: no cover - the loop returns or raises

    def close(self) -> None:
        if self.resp is not None:
            self.resp.close()
        super().close()


def open_location(location: str, deadline_s: float | None = None) -> IO[bytes]:
    """A binary stream over a local path or an http(s) URL (streamed, deadline-bound, retried)."""
    if location.startswith(("http://", "https://")):
        return io.BufferedReader(_HttpStream(location, deadline_s or FETCH_DEADLINE_S), 1 << 16)  # type: ignore[type-var]
    if not location.startswith("/") and "://" in location:
        raise FetchFailed(f"unsupported scheme in {redact_url(location)}")
    return open(location, "rb")


def read_json(location: str) -> object:
    """A JSON document of at most :data:`MAX_MANIFEST_BYTES` (a longer body is refused)."""
    with open_location(location) as fh:
        data = fh.read(MAX_MANIFEST_BYTES + 1)
    if len(data) > MAX_MANIFEST_BYTES:
        raise ValueError(f"{redact_url(location)} is larger than {MAX_MANIFEST_BYTES} bytes")
    return orjson.loads(data)


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


# The first non-blank byte at or after a position: a run of blank lines is skipped in C, and the
# line from there to its newline is found with ``bytes.find`` (a memchr), not matched byte by byte.
_NON_BLANK = re.compile(rb"\S")


def iter_gzip_lines(
    stream: IO[bytes],
    *,
    max_chunk_bytes: int,
    max_record_bytes: int,
    raw_sha: hashlib._Hash | None,
    block_bytes: int = 1 << 20,
) -> Iterator[tuple[int, bytes | None, str]]:
    """Yield ``(line_no, line_bytes | None, problem)`` for every non-blank line of a gzip JSONL
    stream, hashing the uncompressed bytes into ``raw_sha``. Blank lines are counted (line numbers
    stay those of the file) but never materialised, so a stream of newlines costs only the
    decompression. Memory stays within one block (``block_bytes``) plus one record. Raises ``ShardTooLarge`` /
    ``EOFError`` / ``OSError`` / ``zlib.error`` for a stream that cannot be read whole."""
    gz = gzip.GzipFile(fileobj=stream)
    total = 0
    line_no = 0  # lines completed before ``pending``
    pending = b""
    skipping = False  # inside an over-long record: drop bytes up to its newline
    while True:
        block = gz.read(block_bytes)
        if not block:
            break
        total += len(block)
        if total > max_chunk_bytes:
            raise ShardTooLarge(f"decompressed size exceeds {max_chunk_bytes} bytes")
        if raw_sha is not None:
            raw_sha.update(block)
        last = block.rfind(b"\n")
        if last < 0:  # no line ends in this block
            if not skipping:
                pending += block
                if len(pending) > max_record_bytes:
                    yield line_no + 1, None, "record_too_large"
                    pending, skipping = b"", True
            continue
        # ``data[:stop]`` holds the block's whole lines (no copy of the block unless a record
        # from the block before continues in it)
        if skipping:  # the over-long record ends in this block
            head_end = block.find(b"\n")
            line_no += 1
            skipping = False
            data, start, stop = block, head_end + 1, last + 1
        elif pending:
            data, start, stop = pending + block, 0, len(pending) + last + 1
        else:
            data, start, stop = block, 0, last + 1
        pos = start
        search = _NON_BLANK.search
        while (m := search(data, pos, stop)) is not None:
            first = m.start()
            end = data.find(b"\n", first, stop)  # ``data[:stop]`` ends with a newline: found
            line_no += data.count(b"\n", pos, first)
            yield (
                (line_no + 1, None, "record_too_large")
                if end - first > max_record_bytes
                else (line_no + 1, data[first:end], "")
            )
            pos = end  # the gap to the next line is counted, never a line again
        line_no += data.count(b"\n", pos, stop)
        pending = block[last + 1 :]
        if len(pending) > max_record_bytes:
            yield line_no + 1, None, "record_too_large"
            pending, skipping = b"", True
    if pending and not skipping:
        tail = _NON_BLANK.search(pending)
        if tail:
            yield line_no + 1, pending[tail.start() :], ""


class ShardTooLarge(Exception):
    pass


STREAM_ERRORS: tuple[type[BaseException], ...] = (
    EOFError,
    OSError,
    zlib.error,
    gzip.BadGzipFile,
    ShardTooLarge,
)


def quarantine_reason(exc: BaseException) -> QuarantineReason:
    if isinstance(exc, ShardTooLarge):
        return "chunk_too_large"
    if isinstance(exc, EOFError | zlib.error | gzip.BadGzipFile):
        return "bad_gzip"
    return "unreadable"


def shard_quarantine(
    unit: Unit, runs: list[RawRun], reason: QuarantineReason, detail: str
) -> list[Quarantined]:
    """A shard that fails verification: one entry per readable record, or one for the shard."""
    if not runs:
        return [Quarantined(unit.url, unit.epoch, reason, f"{unit.key}: {detail}")]
    return [Quarantined(r.source_uid, unit.epoch, reason, f"{unit.key}: {detail}") for r in runs]
