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


def _umask() -> int:
    mask = os.umask(0o022)  # reading the umask means setting it; put it straight back
    os.umask(mask)
    return mask


# mkstemp creates 0600 files whatever the umask; written files get the usual mode (0644 under umask 022)
FILE_MODE = 0o666 & ~_umask()


def fsync_replace(tmp: Path, path: Path) -> None:
    """Flush ``tmp`` to disk, give it the usual mode and rename it onto ``path`` (the one commit
    point of every write)."""
    with open(tmp, "rb") as fh:
        os.fsync(fh.fileno())
    os.chmod(tmp, FILE_MODE)
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


def move_dir(src: Path, dest: Path) -> None:
    """Rename a whole directory (a staged build into place, an old one aside): one atomic step."""
    os.rename(src, dest)


def switch_symlink(path: Path, target: str) -> None:
    """Point the symlink ``path`` at ``target`` in one atomic step: a new link beside it, renamed
    over it, so a reader sees the old target or the new one, never no link."""
    link = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    link.unlink(missing_ok=True)
    os.symlink(target, link)
    os.replace(link, path)


def replace_if_changed(tmp: Path, dest: Path) -> bool:
    """Move ``tmp`` onto ``dest`` atomically unless ``dest`` already holds the same bytes (then the
    temp file is removed and ``dest`` keeps its mtime). Returns whether ``dest`` changed."""
    if same_bytes(tmp, dest):
        tmp.unlink()
        return False
    fsync_replace(tmp, dest)
    return True


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


class CopyMismatch(ValueError):
    """The bytes copied are not the ones expected (the source changed or is damaged)."""


def copy_verified(src: Path, dest: Path, sha: str, *, keep_same: bool = False) -> bool:
    """Atomic copy of ``src`` to ``dest``, hashing the bytes as they are copied: when they differ
    from ``sha`` nothing is placed and :class:`CopyMismatch` is raised. With ``keep_same`` a
    ``dest`` that already holds the bytes is not touched (same mtime). Returns whether it changed."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".tmp")
    os.close(fd)
    tmp = Path(name)
    h = hashlib.sha256()
    try:
        with src.open("rb") as fin, tmp.open("wb") as fout:
            for block in iter(lambda: fin.read(1 << 20), b""):
                h.update(block)
                fout.write(block)
        if h.hexdigest() != sha:
            raise CopyMismatch(f"{src} changed while it was copied (its sha256 differs from the record)")
        if keep_same:
            return replace_if_changed(tmp, dest)
        fsync_replace(tmp, dest)
        return True
    finally:
        tmp.unlink(missing_ok=True)
