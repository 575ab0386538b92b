"""A value read from an SQLite file, read again only after a commit to it.

Used for Hermes's ``projects.db`` and the plugin's ``recall.db``: small files
every search consults.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from pathlib import Path
from typing import Callable, Generic, TypeVar

from .readonly import StateDBError, connect_readonly, retry

T = TypeVar("T")


class _Watcher(Generic[T]):
    """A value read from an SQLite file, re-read only after a commit to it.

    ``PRAGMA data_version`` changes on a connection whenever another
    connection (any process) commits: an exact signal, where file times can
    be too coarse to tell two quick writes apart.
    """

    def __init__(self, path: Path, read: Callable[[sqlite3.Connection], T], missing: T):
        self.path, self.read, self.missing = path, read, missing
        self.lock = threading.Lock()
        self.conn: sqlite3.Connection | None = None
        self.inode: int | None = None
        self.version: int | None = None
        self.value: T = missing

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
        self.conn, self.inode, self.version, self.value = None, None, None, self.missing

    def get(self) -> T:
        with self.lock:
            try:
                inode: int | None = os.stat(self.path).st_ino
            except (FileNotFoundError, NotADirectoryError):
                self.close()
                return self.missing
            except OSError:  # there but out of reach (a symlink loop): connect_readonly says why
                inode = None
            try:
                if self.conn is None or inode != self.inode:
                    self.close()
                    self.conn = connect_readonly(self.path, timeout_ms=2000)
                    self.inode = inode
                conn = self.conn
                version = retry(lambda: conn.execute("PRAGMA data_version").fetchone()[0], self.path)
                if version != self.version:
                    self.value = retry(lambda: self.read(conn), self.path)
                    self.version = version
                return self.value
            except StateDBError as exc:
                self.close()
                if exc.code not in ("error", "unreadable") or not _wal_is_empty(self.path):
                    raise
            # A WAL reader must create or grow the ``-shm`` index file, which a
            # full disk refuses ("disk I/O error") and a read-only folder cannot
            # take ("unable to open"). With nothing in the WAL the main file is
            # the whole truth: read it once without the index, and cache
            # nothing, so the next call tries the normal way again.
            conn = connect_readonly(self.path, timeout_ms=2000, immutable=True)
            try:
                return retry(lambda: self.read(conn), self.path)
            finally:
                conn.close()


def _wal_is_empty(path: Path) -> bool:
    try:
        return os.stat(f"{path}-wal").st_size == 0
    except FileNotFoundError:
        return True
    except OSError:
        return False


_watchers: dict[tuple, _Watcher] = {}
_watchers_lock = threading.Lock()
_MAX_WATCHERS = 16  # a few files per profile home in use; each holds an open read connection


def watched(path: Path, read: Callable[[sqlite3.Connection], T], missing: T) -> T:
    """``read(conn)`` on ``path``, cached per process until something commits to it
    (``missing`` while the file does not exist). Do not mutate the result."""
    key = (str(path), read)
    with _watchers_lock:
        watcher = _watchers.pop(key, None) or _Watcher(path, read, missing)
        _watchers[key] = watcher  # most recently used last
        evicted = list(_watchers.values())[:-_MAX_WATCHERS]
        for old in evicted:
            del _watchers[(str(old.path), old.read)]
    for old in evicted:
        with old.lock:
            old.close()
    return watcher.get()


