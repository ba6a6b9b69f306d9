"""Small file helpers shared by the state, the sources and the publishers."""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson


def _umask() -> int:
    mask = os.umask(0o022)  # reading the umask means setting it; put it straight back
    os.umask(mask)
    return mask


# mkstemp creates 0600 files whatever the umask; written files get the usual mode (0644 under umask 022)
FILE_MODE = 0o666 & ~_umask()


@contextlib.contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """A temp path beside ``path``; on a clean exit it is fsynced and renamed onto ``path``,
    on any error it is removed. Readers see the old file or the new one, never a partial one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.chmod(tmp, FILE_MODE)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def atomic_write_bytes(path: Path, data: bytes) -> bool:
    """Write ``data`` to ``path`` via a temp file and rename; skip when the bytes are unchanged.

    Returns True when the file was (re)written."""
    if path.exists() and path.stat().st_size == len(data) and path.read_bytes() == data:
        return False
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)
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
