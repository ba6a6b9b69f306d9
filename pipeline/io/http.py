"""Byte streams from a local path or an http(s) URL: safe key resolution, a deadline-bound
stream resumed across transient failures, bounded JSON documents."""

from __future__ import annotations

import base64
import hashlib
import http.client
import io
import os
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import IO

import orjson


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
