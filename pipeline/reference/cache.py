"""The user-level cache of what is derived from the reference inputs (the benchmark tables as Arrow,
the benchmark-leak index, the catalog's dedup keys), shared by every work dir.

Each entry is a folder named by the content key of what it was derived from, so it is never stale and
a location never changes an output (the cache dir is not part of the stage hash). The first process
builds an entry under a lock into a temp folder, seals it with a manifest (the sha256 of every file)
written last, and renames it into place; every later process (workers, later runs, other work dirs)
checks the manifest and memory-maps the files. An entry that fails the check (truncated, bit-flipped,
files missing or added) is rebuilt; a cache that cannot be written is skipped (the caller builds in
memory). Of each kind, only the :data:`KEEP` entries used last are kept.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import orjson

from pipeline.io.fileio import file_sha256, move_dir

CACHE_ENV = "TRAJPIPE_CACHE"
MANIFEST = "MANIFEST.json"
# entries kept per kind (``tables``, ``leak-index``, ``catalog-keys``), the most recently used: every
# code version and table set makes new ones, and a cache shared by every work dir would only grow
KEEP = 4


def default_cache_dir() -> Path | None:
    """``$TRAJPIPE_CACHE``, else ``$XDG_CACHE_HOME/trajpipe``, else ``~/.cache/trajpipe`` (None when
    there is no home to put it in: the caller then builds in memory)."""
    if env := os.environ.get(CACHE_ENV):
        return Path(env).expanduser()
    if xdg := os.environ.get("XDG_CACHE_HOME"):
        return Path(xdg).expanduser() / "trajpipe"
    try:
        return Path.home() / ".cache" / "trajpipe"
    except RuntimeError:  # no $HOME and no passwd entry
        return None


def reference_dir(cache_dir: str | None) -> Path | None:
    """The folder of the reference entries under ``cache_dir`` (None: the default cache dir)."""
    root = Path(cache_dir).expanduser() if cache_dir else default_cache_dir()
    return None if root is None else root / "reference"


def cached_dir(root: Path, key: str, build: Callable[[Path], None]) -> Path:
    """``root/key``, a folder ``build`` fills once: the first process builds it (under a lock, into a
    temp folder sealed and renamed into place when complete), every later one finds it sealed.
    Content-keyed, so a sealed folder is never stale; OSError when ``root`` cannot be written."""
    final = root / key
    if sealed(final):
        _touch(final)
        return final
    root.mkdir(parents=True, exist_ok=True)
    with _locked(_lock_path(root, key)):
        if not sealed(final):
            tmp = Path(tempfile.mkdtemp(dir=root, prefix=f".{key}."))
            try:
                build(tmp)
                _seal(tmp)
                _remove(final)  # a damaged entry, or one some crash left unsealed
                move_dir(tmp, final)
            except BaseException:
                shutil.rmtree(tmp, ignore_errors=True)
                raise
            _prune(root, key)
    return final


def _lock_path(root: Path, key: str) -> Path:
    return root / f".{key}.lock"


@contextlib.contextmanager
def _locked(path: Path, *, wait: bool = True) -> Iterator[bool]:
    """Hold the lock file ``path`` (flock, released when it closes); yields False when ``wait`` is
    off and another process holds it. Pruning unlinks an entry's lock file while holding it, so a
    process that opened the file before and then got the lock holds a file no longer at ``path``:
    it opens the path again (else two processes would each hold "the" lock)."""
    while True:
        with open(path, "a") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
            except BlockingIOError:
                yield False
                return
            try:
                same = os.stat(path).st_ino == os.fstat(lock.fileno()).st_ino
            except FileNotFoundError:
                same = False
            if same:
                yield True
                return


def sealed(folder: Path) -> bool:
    """Whether ``folder`` holds exactly the files its manifest names, each with its sha256."""
    try:
        want = orjson.loads((folder / MANIFEST).read_bytes())
        have = {p.name for p in folder.iterdir()} - {MANIFEST}
        return (
            isinstance(want, dict)
            and set(want) == have
            and all(file_sha256(folder / name) == sha for name, sha in want.items())
        )
    except (OSError, orjson.JSONDecodeError):
        return False


def _seal(folder: Path) -> None:
    """Write the manifest of ``folder``'s files (last: an entry without one is unfinished)."""
    files = {p.name: file_sha256(p) for p in sorted(folder.iterdir())}
    (folder / MANIFEST).write_bytes(orjson.dumps(files, option=orjson.OPT_SORT_KEYS))


def _touch(folder: Path) -> None:
    """Record a use (the manifest's mtime): pruning keeps the entries used last."""
    with contextlib.suppress(OSError):  # a read-only cache is used as it is
        os.utime(folder / MANIFEST)


def _prune(root: Path, key: str) -> None:
    """Remove all but the :data:`KEEP` most recently used entries of ``key``'s kind. A process still
    reading a removed entry keeps its open and mapped files; one about to open it finds it gone, and
    the caller builds in memory (OSError)."""
    kind = _kind(key)

    def last_use(entry: Path) -> float:
        try:
            return (entry / MANIFEST).stat().st_mtime
        except OSError:
            return 0.0

    same = [p for p in root.iterdir() if not p.name.startswith(".") and _kind(p.name) == kind]
    for old in sorted(same, key=last_use, reverse=True)[KEEP:]:
        with contextlib.suppress(OSError), _locked(_lock_path(root, old.name), wait=False) as held:
            if held:  # an entry being built or rebuilt right now is left to the next prune
                _remove(old)
    # the lock files of this kind's entries that are gone (pruned above, or by a trajpipe that
    # left them behind), unlinked while held (see _locked); one held by a build is left alone
    for lock in root.glob(".*.lock"):
        name = lock.name[1 : -len(".lock")]
        if _kind(name) == kind and not (root / name).exists():
            with contextlib.suppress(OSError), _locked(lock, wait=False) as held:
                if held and not (root / name).exists():
                    lock.unlink()


def _kind(key: str) -> str:
    """``leak-index-v3-<content key>`` -> ``leak-index``: the name without its content key and format
    version (entries of an older format are pruned like older content)."""
    return re.sub(r"-v\d+$", "", key.rsplit("-", 1)[0])


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)
