"""An exclusive lock on a file in the plugin's data folder, between threads and processes.

Standard library only: ``fcntl.flock`` on POSIX, ``msvcrt.locking`` on
Windows, as Hermes's own memory tool locks its files. A locking library
(``filelock``) would be one more package a directory install has to bring into
Hermes's Python, for needs this plain: one local file, held by short
operations of one profile. Two things that library would have done are done
here: threads of one process also exclude each other through an in-process
lock (Hermes runs tools in a thread pool; on NFS, Linux emulates ``flock``
with per-process record locks, which cannot tell two threads apart), and a
filesystem that cannot lock at all (``ENOLCK``, ``ENOTSUP``) degrades to that
in-process lock instead of failing the operation.

The lock file is never deleted: removing it while another process waits on
it would let a third create a new one and hold "the" lock at the same time.
"""

from __future__ import annotations

import errno
import os
import threading
import time
from pathlib import Path

from types import ModuleType
from typing import BinaryIO

fcntl: ModuleType | None
msvcrt: ModuleType | None
try:
    import fcntl
except ImportError:  # Windows
    fcntl = None
try:
    import msvcrt
except ImportError:  # POSIX
    msvcrt = None

_UNSUPPORTED = {errno.ENOLCK, errno.ENOSYS, errno.EOPNOTSUPP, getattr(errno, "ENOTSUP", errno.EOPNOTSUPP)}
_HELD = {errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK, getattr(errno, "EDEADLOCK", errno.EDEADLK)}
_POLL_SECONDS = 0.01

_in_process: dict[str, threading.Lock] = {}
_in_process_guard = threading.Lock()


class LockTimeout(TimeoutError):
    """Someone else held the lock for longer than the caller would wait."""


def _thread_lock(path: Path) -> threading.Lock:
    with _in_process_guard:
        return _in_process.setdefault(os.path.abspath(path), threading.Lock())


def _try_file_lock(fh) -> bool:
    """One non-blocking attempt; True when held (or when the filesystem cannot lock)."""
    try:
        if fcntl is not None:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        elif msvcrt is not None:
            fh.seek(0)
            msvcrt.locking(fh.fileno(), msvcrt.LK_NBLCK, 1)
        return True
    except OSError as exc:
        if exc.errno in _HELD:
            return False
        if exc.errno in _UNSUPPORTED:
            return True
        raise


def _file_unlock(fh) -> None:
    try:
        if fcntl is not None:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
        elif msvcrt is not None:
            fh.seek(0)
            msvcrt.locking(fh.fileno(), msvcrt.LK_UNLCK, 1)
    except OSError:
        pass  # closing the file releases it anyway


class FileLock:
    """``with FileLock(path):`` or ``acquire(timeout)`` / ``release()``; not reentrant."""

    def __init__(self, path: Path):
        self.path = path
        self._thread_lock = _thread_lock(path)
        self._fh: BinaryIO | None = None

    def acquire(self, timeout: float | None = None) -> None:
        """Wait for the lock (``None``: as long as it takes).

        Raises ``LockTimeout`` after ``timeout`` seconds, and ``OSError`` when
        the lock file cannot be created (a read-only or missing folder).
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        if not self._thread_lock.acquire(timeout=-1 if timeout is None else timeout):
            raise LockTimeout(f"{self.path} is held by another thread")
        try:
            fh = open(self.path, "a+b")
            try:
                while not _try_file_lock(fh):
                    if deadline is not None and time.monotonic() >= deadline:
                        raise LockTimeout(f"{self.path} is held by another process")
                    time.sleep(_POLL_SECONDS)
            except BaseException:
                fh.close()
                raise
        except BaseException:
            self._thread_lock.release()
            raise
        self._fh = fh

    def release(self) -> None:
        fh, self._fh = self._fh, None
        if fh is not None:
            _file_unlock(fh)
            fh.close()
            self._thread_lock.release()

    def __enter__(self) -> "FileLock":
        self.acquire()
        return self

    def __exit__(self, *exc_info) -> None:
        self.release()
