"""Small file helpers shared by the state, the sources and the publishers.

The one home of atomic writes: every file the pipeline leaves behind is written to a temp file
beside it, fsynced and renamed over the target (:func:`fsync_replace`), so a reader or a run
killed at any point sees the old file or the new one, never a partial one.
"""

from __future__ import annotations

import contextlib
import filecmp
import hashlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson


def fsync_replace(tmp: Path, path: Path) -> None:
    """Flush ``tmp`` to disk and rename it onto ``path`` (the one commit point of every write)."""
    with open(tmp, "rb") as fh:
        os.fsync(fh.fileno())
    os.replace(tmp, path)


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
        fsync_replace(tmp, path)
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


def atomic_write_text(path: Path, text: str) -> bool:
    return atomic_write_bytes(path, text.encode("utf-8"))


def same_bytes(a: Path, b: Path) -> bool:
    return b.exists() and a.stat().st_size == b.stat().st_size and filecmp.cmp(a, b, shallow=False)


def copy_if_changed(src: Path, dest: Path) -> bool:
    """Atomic copy of ``src`` to ``dest``, skipped when the bytes are the same."""
    if same_bytes(src, dest):
        return False
    with atomic_path(dest) as tmp:
        shutil.copyfile(src, tmp)
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
