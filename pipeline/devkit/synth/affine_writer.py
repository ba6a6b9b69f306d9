"""Write Affine corpora (the inverse of ``pipeline.sources.affine``): gzip JSONL chunks and manifests.

The one writer of the Affine corpus layout, shared by the synthetic corpus
(``pipeline.devkit.synth.corpus``) and the tests' hand-built corpora (``tests/corpus_kit.py``).
"""

from __future__ import annotations

import gzip
import hashlib
import io
from pathlib import Path
from typing import Any

import orjson


def gzip_bytes(data: bytes, *, level: int = 1) -> bytes:
    """Deterministic gzip: mtime 0, no file name (the same input gives the same bytes)."""
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, compresslevel=level, mtime=0) as f:
        f.write(data)
    return buf.getvalue()


def write_bytes(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def jsonl(records: list[Any]) -> bytes:
    """One JSON value a line (bytes are written as they are: a broken line stays broken)."""
    return b"".join((r if isinstance(r, bytes) else orjson.dumps(r)) + b"\n" for r in records)


def write_chunk(root: Path, key: str, raw: bytes, *, level: int = 1) -> str:
    """Write gzip(raw) at ``root/key``; returns the sha256 of the uncompressed bytes (the shard's
    identity in a manifest)."""
    write_bytes(root / key, gzip_bytes(raw, level=level))
    return hashlib.sha256(raw).hexdigest()


def write_manifest(root: Path, manifest: dict[str, Any], *, indent: bool = False) -> str:
    """Publish one manifest revision: ``corpus/manifests/<sha256>.json`` and the current pointer
    ``corpus/manifest.json``; returns its sha256."""
    option = orjson.OPT_SORT_KEYS | (orjson.OPT_INDENT_2 if indent else 0)
    data = orjson.dumps(manifest, option=option)
    sha = hashlib.sha256(data).hexdigest()
    write_bytes(root / "corpus" / "manifests" / f"{sha}.json", data)
    write_bytes(root / "corpus" / "manifest.json", data)
    return sha


def current_manifest_sha(root: Path) -> str | None:
    """sha256 of the current manifest (the next revision's ``prev_manifest``), if there is one."""
    cur = root / "corpus" / "manifest.json"
    return hashlib.sha256(cur.read_bytes()).hexdigest() if cur.exists() else None
