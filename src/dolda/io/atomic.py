"""Replacing a model or checkpoint directory so that a complete copy always exists.

``rename(2)`` cannot replace a non-empty directory, so a directory is replaced
in two renames: the old one aside to ``.<name>.old-XXXX/model``, the new one
(complete, fsynced, in ``.<name>.tmp-XXXX``) into place, then the old one is
deleted.  A process killed between the two renames leaves no directory at the
target, but both complete copies beside it.  This module makes that state
harmless:

* readers (:func:`readable_path`) fall back to the newest complete copy:
  first a finished ``.tmp-*`` (the new version), then ``.old-*/model``;
* writers (:func:`recover`, called under the lock before every write) put that
  copy back into place and delete every leftover ``.tmp-*``/``.old-*``;
* writers hold an exclusive lock (:func:`output_lock`, ``fcntl.flock`` on
  ``.<name>.lock`` beside the target), so two processes never write one
  output: the second gets :class:`OutputLocked` at once.  The kernel drops a
  flock when its process dies, so a lock left by a killed process is never
  stale; the lock file is removed on release.

A "complete" directory is one holding ``model.json`` (written last, after the
arrays), that the caller's ``is_complete`` accepts.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import threading
from pathlib import Path

logger = logging.getLogger(__name__)

HEADER_FILE = "model.json"

try:  # POSIX
    import fcntl
except ImportError:  # pragma: no cover - Windows: no locking, replacement still safe
    fcntl = None


class OutputLocked(RuntimeError):
    """Another process is writing the same output directory."""


# process-wide: lock files this process holds -> (fd, depth), so nested
# acquisitions by the same process (the CLI holds --out for the whole fit, the
# save inside takes it again) do not deadlock against themselves
_HELD: dict[str, list] = {}
_HELD_GUARD = threading.Lock()


def lock_path(path) -> Path:
    path = Path(path)
    return path.parent / f".{path.name}.lock"


@contextlib.contextmanager
def output_lock(path, what: str = "output"):
    """Hold an exclusive lock on the output directory ``path`` inside the block.

    Raises
    ------
    OutputLocked
        Another process holds it (one line naming the path and the lock file).
    """
    lock = lock_path(path)
    key = str(lock.absolute())
    with _HELD_GUARD:
        if key in _HELD:
            _HELD[key][1] += 1
            nested = True
        else:
            nested = False
    if nested:
        try:
            yield lock
        finally:
            with _HELD_GUARD:
                _HELD[key][1] -= 1
        return
    fd = _acquire(lock, path, what)
    with _HELD_GUARD:
        _HELD[key] = [fd, 1]
    try:
        yield lock
    finally:
        with _HELD_GUARD:
            _HELD[key][1] -= 1
            release = _HELD[key][1] == 0
            if release:
                del _HELD[key]
        if release:
            _release(lock, fd)


def _acquire(lock: Path, path, what: str):
    if fcntl is None:  # pragma: no cover
        return None
    lock.parent.mkdir(parents=True, exist_ok=True)
    for _ in range(100):
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            holder = ""
            with contextlib.suppress(OSError, ValueError):
                pid = int(lock.read_text().strip() or 0)
                holder = f" (process {pid})" if pid else ""
            raise OutputLocked(
                f"another dolda process{holder} is writing the {what} {path} (lock "
                f"{lock}); wait for it to finish or choose another path") from None
        # the holder before us may have unlinked the file after we opened it:
        # then our lock is on a dead inode, retry on the current file
        try:
            same = os.stat(lock).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:
            os.ftruncate(fd, 0)
            os.write(fd, str(os.getpid()).encode())
            return fd
        os.close(fd)
    raise OutputLocked(f"cannot lock {lock}: it keeps being replaced")  # pragma: no cover


def _release(lock: Path, fd) -> None:
    if fd is None:  # pragma: no cover
        return
    with contextlib.suppress(OSError):
        os.unlink(lock)  # while still locked: a waiter re-checks the inode
    os.close(fd)


def is_locked_by_us(path) -> bool:
    return str(lock_path(path).absolute()) in _HELD


# ------------------------------------------------------------ leftovers
def _leftovers(path: Path):
    """``(tmp_dirs, old_dirs)`` beside ``path``, newest first."""
    parent = path.parent
    if not parent.is_dir():
        return [], []
    tmp, old = [], []
    for entry in parent.iterdir():
        name = entry.name
        if name.startswith(f".{path.name}.tmp-") and entry.is_dir():
            tmp.append(entry)
        elif name.startswith(f".{path.name}.old-") and entry.is_dir():
            old.append(entry)
    def mtime(p):
        return p.stat().st_mtime

    return sorted(tmp, key=mtime, reverse=True), sorted(old, key=mtime, reverse=True)


def _candidates(path: Path):
    tmp, old = _leftovers(path)
    return [t for t in tmp if (t / HEADER_FILE).is_file()] + \
        [o / "model" for o in old if (o / "model" / HEADER_FILE).is_file()]


def readable_path(path, is_complete) -> Path:
    """``path``, or when it is missing after an interrupted replacement, the
    complete copy beside it (read-only: nothing is moved)."""
    path = Path(path)
    if path.exists() or path.is_symlink():
        return path
    for candidate in _candidates(path):
        if is_complete(candidate):
            logger.warning("%s is missing after an interrupted replacement; reading the "
                           "complete copy %s", path, candidate)
            return candidate
    return path


def recover(path, is_complete) -> None:
    """Under the lock: restore a complete copy if ``path`` is missing, then delete
    every ``.tmp-*``/``.old-*`` leftover of ``path``."""
    path = Path(path)
    if not (path.exists() or path.is_symlink()):
        for candidate in _candidates(path):
            if is_complete(candidate):
                os.replace(candidate, path)
                logger.warning("restored %s from the complete copy %s left by an "
                               "interrupted replacement", path, candidate)
                break
    tmp, old = _leftovers(path)
    for leftover in tmp + old:
        shutil.rmtree(leftover, ignore_errors=True)


def replace_directory(tmp: Path, path: Path, parent_fsync) -> None:
    """Move the complete directory ``tmp`` onto ``path`` (two renames when ``path``
    exists; see the module docstring for what a kill in between leaves)."""
    if not path.exists():
        os.replace(tmp, path)
        parent_fsync(path.parent)
        return
    import tempfile

    old = Path(tempfile.mkdtemp(prefix=f".{path.name}.old-", dir=path.parent))
    os.replace(path, old / "model")
    _between_renames(path)
    try:
        os.replace(tmp, path)
    except BaseException:
        os.replace(old / "model", path)
        shutil.rmtree(old, ignore_errors=True)
        raise
    parent_fsync(path.parent)
    shutil.rmtree(old, ignore_errors=True)


def _between_renames(path: Path) -> None:
    """Hook run when the old directory is aside and the new one not yet in place.

    Does nothing; the kill tests replace it (in a child process) to land a
    SIGKILL exactly between the two renames.
    """


def fsync_dir(path: Path) -> None:
    """Flush a directory's entries to disk (a rename is durable only then)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:  # e.g. Windows: directories cannot be opened
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def umask() -> int:
    """The process's file-mode creation mask, read without setting it."""
    # os.umask() can only be read by setting it, which races with other threads;
    # Linux reports it in /proc, elsewhere assume the common 022.
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    return 0o022
