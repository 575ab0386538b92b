"""Opening the plugin's derived SQLite files (``embeddings.db``, ``keywords.db``).

Both hold only what can be rebuilt from ``state.db``, so a file that is not
a readable database (or was written by another schema version) is moved
aside, kept for inspection, and started afresh: a search goes on with what
is left, never fails for it.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

from ..errors import DataError


class StoreError(DataError):
    """A derived file cannot be used; the message says why."""

    codes = ("store_unavailable",)


class _OtherVersion(sqlite3.DatabaseError):
    """The file was laid out by another version of the plugin."""


def _connect(path: Path, schema: str, version: int) -> sqlite3.Connection:
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(str(path), timeout=10, isolation_level=None, check_same_thread=False)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA busy_timeout=10000")
        conn.executescript(schema)
        row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        if row is None:
            conn.execute("INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)", (str(version),))
        elif row[0] != str(version):
            raise _OtherVersion(f"schema version {row[0]}, this plugin writes {version}")
        conn.execute("SELECT count(*) FROM meta").fetchone()
    except BaseException:
        conn.close()
        raise
    return conn


def open_or_rebuild(path: Path, schema: str, version: int) -> tuple[sqlite3.Connection, str | None]:
    """(a connection with ``schema`` in place, why the file was rebuilt or None).

    ``schema`` must create a ``meta (key, value)`` table."""
    try:
        return _connect(path, schema, version), None
    except sqlite3.DatabaseError as exc:
        if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc).lower():
            raise StoreError(f"{path} is locked by another process") from exc
        if isinstance(exc, sqlite3.OperationalError) and "unable to open" in str(exc).lower():
            raise StoreError(f"cannot create or open {path}: {exc}") from exc
        if isinstance(exc, _OtherVersion):
            # Nothing to inspect: another release's layout of data this one rebuilds.
            for suffix in ("", "-wal", "-shm"):
                Path(str(path) + suffix).unlink(missing_ok=True)
            try:
                return _connect(path, schema, version), f"{path.name} was laid out by another version ({exc}); rebuilt"
            except sqlite3.Error as exc2:
                raise StoreError(f"cannot create {path}: {exc2}") from exc2
        aside = path.with_name(f"{path.name}.broken-{int(time.time())}")
        for suffix in ("", "-wal", "-shm"):
            src = Path(str(path) + suffix)
            if src.exists():
                try:
                    src.replace(Path(str(aside) + suffix))
                except OSError as move_exc:
                    raise StoreError(f"{path} is unreadable ({exc}) and could not be moved aside: "
                                     f"{move_exc}") from exc
        reason = f"{path.name} was unreadable ({exc}); moved to {aside.name} and rebuilt"
        try:
            return _connect(path, schema, version), reason
        except sqlite3.Error as exc2:
            raise StoreError(f"cannot create {path}: {exc2}") from exc2
    except OSError as exc:
        raise StoreError(f"cannot create or open {path}: {exc}") from exc


def inode(path: Path) -> int | None:
    try:
        return path.stat().st_ino
    except OSError:
        return None


def healthy(path: Path, conn: sqlite3.Connection, seen_inode: int | None) -> bool:
    """False when the file was deleted, replaced or overwritten under an open connection."""
    try:
        with open(path, "rb") as fh:
            if fh.read(16) != b"SQLite format 3\x00":
                return False
        conn.execute("SELECT count(*) FROM meta").fetchone()
        return seen_inode is not None and inode(path) == seen_inode
    except (sqlite3.Error, OSError):
        return False


class DerivedFile:
    """One derived SQLite file, shared by the threads of a process (one lock)."""

    def __init__(self, path: Path, schema: str, version: int):
        self.path = path
        self.lock = threading.RLock()
        self.writes = 0  # commits through this object (data_version only sees other connections')
        self._conn, self.rebuilt_reason = open_or_rebuild(path, schema, version)
        self._inode = inode(path)

    def close(self) -> None:
        with self.lock:
            self._conn.close()

    def healthy(self) -> bool:
        """False when the file was deleted, replaced or overwritten under us (then reopen)."""
        with self.lock:
            return healthy(self.path, self._conn, self._inode)

    def data_version(self) -> int:
        """Changes when another connection (process) committed to the file."""
        with self.lock:
            return self._conn.execute("PRAGMA data_version").fetchone()[0]
