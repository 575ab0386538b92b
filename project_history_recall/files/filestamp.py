"""Values read from small files, recomputed only when a file changes.

The settings, the consents and ``.env`` are read on every tool call (and the
settings more than once per call); parsing YAML each time costs milliseconds
that grow with Hermes's own config.yaml. A file's stamp changes whenever it
is rewritten (mtime, size) or replaced (inode, as atomic writes do).
"""

from __future__ import annotations

import errno
import io
import os
import stat
import threading
from pathlib import Path
from typing import Callable, Hashable, TypeVar

T = TypeVar("T")


def file_stamp(path: Path | str) -> tuple | None:
    """``(mtime_ns, size, inode)``, or None when the file cannot be stat'ed."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)


class NotAFile(OSError):
    """Something other than a regular file where one is read: a FIFO, a device, a folder."""


def open_regular(path: Path | str) -> io.BufferedReader:
    """``path`` opened for reading, if it is a regular file (else ``NotAFile``): opening a FIFO
    put in its place would wait for a writer that never comes (without ``O_NONBLOCK``, which a
    regular file's reads ignore), and reading a device may not end."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotAFile(errno.EINVAL, "not a regular file", str(path))
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: Path | str) -> bytes:
    """The bytes of the regular file at ``path`` (see ``open_regular``)."""
    with open_regular(path) as fh:
        return fh.read()


class StampCache:
    """``compute()`` per key, reused while the key's stamp stays the same.

    An exception from ``compute`` propagates and caches nothing. The oldest
    entries go past ``limit`` (a process sees a handful of profile homes; tests
    thousands).
    """

    def __init__(self, limit: int = 64):
        self._lock = threading.Lock()
        self._hits: dict[Hashable, tuple[Hashable, object]] = {}
        self._limit = limit

    def get(self, key: Hashable, stamp: Hashable, compute: Callable[[], T]) -> T:
        with self._lock:
            hit = self._hits.get(key)
        if hit is not None and hit[0] == stamp:
            return hit[1]  # type: ignore[return-value]
        value = compute()
        with self._lock:
            self._hits.pop(key, None)
            self._hits[key] = (stamp, value)
            while len(self._hits) > self._limit:
                self._hits.pop(next(iter(self._hits)))
        return value
