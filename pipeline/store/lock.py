"""The work dir's lock: one writer (``trajpipe run``) or any number of readers at a time."""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path


class WorkdirLocked(RuntimeError):
    pass


@contextlib.contextmanager
def workdir_lock(workdir: Path, *, shared: bool = False) -> Iterator[None]:
    """One run per work dir (exclusive), or a reader that no run may change underneath (shared).

    ``fcntl.flock`` on an open file: the kernel releases it when the holder exits, however it
    dies, so there is no stale lock to take over and no window between creating and claiming it.
    The file itself is never removed (removing it would let two processes lock two inodes)."""
    workdir.mkdir(parents=True, exist_ok=True)
    lock = workdir / ".lock"
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "another process"
            what = "a run" if shared else "another run or a publish"
            raise WorkdirLocked(
                f"work dir {workdir} is in use by {what} (process {holder}, lock file {lock}); "
                "wait for it to finish or stop it"
            ) from None
        if not shared:
            os.ftruncate(fd, 0)
            os.pwrite(fd, str(os.getpid()).encode(), 0)
        yield
    finally:
        os.close(fd)  # releases the lock
