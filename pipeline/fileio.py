"""Small file helpers shared by the state, the sources and the publishers."""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from pathlib import Path
from typing import Any

import orjson


def atomic_write_bytes(path: Path, data: bytes) -> bool:
    """Write ``data`` to ``path`` via a temp file and rename; skip when the bytes are unchanged.

    Returns True when the file was (re)written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists() and path.stat().st_size == len(data) and path.read_bytes() == data:
        return False
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return True


def atomic_write_json(path: Path, obj: Any) -> bool:
    return atomic_write_bytes(path, orjson.dumps(obj, option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2))


def file_sha256(path: Path) -> str:
    """sha256 of a file's bytes, read in 1 MiB blocks."""
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
