"""Read-only SQLite access to Hermes's files (and the plugin's own records).

The plugin never writes to Hermes's databases: files are opened with
``mode=ro`` and ``PRAGMA query_only``, so even a bug cannot write (SQLite
refuses). A reader can meet a writer mid-checkpoint (a transient ``disk I/O
error``); those are retried briefly. Everything else becomes a
``StateDBError`` whose message a person can act on.
"""

from __future__ import annotations

import itertools
import sqlite3
import threading
import time
from pathlib import Path
from typing import Callable, TypeVar

from ..errors import DataError
from ..files.derived import not_a_file, sqlite_uri, write_limit
from ..files.filestamp import file_stamp

T = TypeVar("T")

BUSY_TIMEOUT_MS = 5000
# No memory map: mapped pages count towards the Hermes process's memory
# (~160 MB after a search of a big home) and buy little over the page cache.
MMAP_BYTES = 0
_RETRIES = 3
_RETRY_SLEEP = 0.05
# A mode=ro reader can meet a writer's checkpoint as a transient I/O error.
# "locked" is not retried: the busy timeout has already waited for it.
_TRANSIENT = ("disk i/o error",)


class StateDBError(DataError):
    """A Hermes database (or the plugin's own records) could not be read; the message says why."""

    codes = ("error", "missing", "empty", "corrupt", "schema", "locked", "unreadable")


def _describe(path: Path, exc: sqlite3.Error) -> StateDBError:
    text = str(exc).lower()
    if "locked" in text or "busy" in text:
        return StateDBError(
            f"Hermes's session database {path} is locked by another process; try again in a moment.",
            "locked",
        )
    if "not a database" in text or "malformed" in text or "corrupt" in text:
        return StateDBError(
            f"{path} is not a readable SQLite database (it may be corrupt). "
            "Hermes's own 'hermes doctor' can check it; nothing was changed.",
            "corrupt",
        )
    if "unable to open" in text:
        return StateDBError(f"Cannot open {path} for reading: {exc}{write_limit(path)}.", "unreadable")
    # A reader of a WAL database writes its index file (-shm): a write limit fails the read too.
    return StateDBError(f"Reading {path} failed: {exc}{write_limit(path)}.", "error")


def retry(fn: Callable[[], T], path: Path) -> T:
    """Run ``fn``, retrying the errors a writer's checkpoint causes."""
    for attempt in range(_RETRIES + 1):
        try:
            return fn()
        except sqlite3.OperationalError as exc:
            if attempt < _RETRIES and any(t in str(exc).lower() for t in _TRANSIENT):
                time.sleep(_RETRY_SLEEP * (attempt + 1))
                continue
            raise _describe(path, exc) from exc
        except sqlite3.DatabaseError as exc:
            raise _describe(path, exc) from exc
    raise AssertionError("unreachable")


def absent(home: Path) -> str | None:
    """Why ``home`` is no Hermes home (None: it is a folder), in the words a missing ``state.db`` gives."""
    return None if home.is_dir() else _no_home(home)


def _no_home(folder: Path) -> str:
    """Why the home ``folder`` is no folder, as a person would look for it."""
    if folder.exists():
        return f"{folder} is a file, not a folder."
    if folder.parts and folder.parts[0].startswith("~"):
        # Quoted in a shell, an env file or a systemd unit: nothing expands it, Hermes neither.
        return f"There is no folder {folder}: nothing expanded its '~' (was it quoted?); give the whole path."
    return f"There is no folder {folder} (a profile deleted or renamed, or a mistyped path?)."


def connect_readonly(path: Path, *, timeout_ms: int | None = None, immutable: bool = False) -> sqlite3.Connection:
    """A read-only connection to an existing SQLite file (never creates one).

    ``immutable`` skips locking and the WAL index: only for one read of a file
    whose WAL holds nothing (see :func:`_wal_is_empty`), closed right after.
    """
    timeout_ms = BUSY_TIMEOUT_MS if timeout_ms is None else timeout_ms
    why = not_a_file(path)
    if why is not None:
        raise StateDBError(f"Cannot open {path} for reading: {why}.", "unreadable")
    if not path.is_file():
        # A profile deleted or renamed while Hermes runs takes its folder along: asking whether
        # Hermes has run there yet would send the user looking in the wrong place.
        ask = "Has Hermes run in this profile yet?" if path.parent.is_dir() else _no_home(path.parent)
        raise StateDBError(f"No Hermes session database at {path}. {ask}", "missing")
    uri = sqlite_uri(path, "mode=ro&immutable=1" if immutable else "mode=ro")

    def _open() -> sqlite3.Connection:
        conn = sqlite3.connect(uri, uri=True, timeout=timeout_ms / 1000, check_same_thread=False,
                               isolation_level=None)
        try:
            conn.execute("PRAGMA query_only=ON")
            conn.execute(f"PRAGMA busy_timeout={int(timeout_ms)}")
            conn.execute(f"PRAGMA mmap_size={MMAP_BYTES}")
            conn.row_factory = sqlite3.Row
            # A damaged page can hold bytes that are not UTF-8; one such row
            # must not fail a whole search.
            conn.text_factory = lambda raw: raw.decode("utf-8", "replace")
            conn.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
        except BaseException:
            conn.close()
            raise
        return conn

    return retry(_open, path)


def file_fingerprint(path: Path) -> tuple:
    """Changes whenever SQLite commits to ``path`` (the file or its WAL)."""
    stamp = file_stamp(path)
    return (stamp, file_stamp(path.with_name(path.name + "-wal")), _commits(path, None if stamp is None else stamp[2]))


_counters: dict[str, tuple[int | None, int, sqlite3.Connection]] = {}  # path -> (inode, generation, connection)
_counters_lock = threading.Lock()
_generations = itertools.count()
_MAX_COUNTERS = 8  # one per state.db in use (a few profiles; the tests, thousands of homes)


def _commits(path: Path, inode: int | None) -> tuple[int, int]:
    """A value that changes with every commit to ``path`` by any process: SQLite's own count
    (``PRAGMA data_version``) on a connection kept for it. The file's stamp alone missed a commit
    that kept the file's size (a row rewritten in place) made within one tick of the file system's
    clock (a few milliseconds) of the last look; SQLite tells commits apart by the count in the
    header of a rollback-journal file and by the WAL index. The count is SQLite's to read, never
    the header's bytes with ``open()``: closing a descriptor of the file drops every lock this
    process holds on it (see ``journal_mode``). Never waits: while a writer commits, or when it
    cannot be read, a value no other call gets (as if it changed). ``inode``: the file's, from its
    stamp (None: it cannot be stat'ed)."""
    key = str(path)
    with _counters_lock:
        kept = _counters.pop(key, None)
        if kept is not None and kept[0] != inode:  # the file replaced: count the new one's commits
            kept[2].close()
            kept = None
        try:
            if kept is None:
                kept = (inode, next(_generations), connect_readonly(path, timeout_ms=0))
            version = kept[2].execute("PRAGMA data_version").fetchone()[0]
        except (StateDBError, sqlite3.Error):
            version = None
        if kept is not None:
            _counters[key] = kept  # most recently used last
            while len(_counters) > _MAX_COUNTERS:
                _counters.pop(next(iter(_counters)))[2].close()
        return (next(_generations), -1) if kept is None or version is None else (kept[1], int(version))


def journal_mode(conn: sqlite3.Connection) -> str:
    """``wal`` or ``rollback`` (a rollback journal: Hermes's ``DELETE`` mode), as
    ``conn`` found its file at its last read. In rollback mode a reader's lock stops
    Hermes's writer from committing; reads are kept short in both modes
    (``statedb.reading``) and this is reported so a person can see which.

    Asked of SQLite, which answers from what the connection already knows and
    takes no lock for it. Not read from the file's header with ``open()``: on
    POSIX, closing any descriptor of a file drops every lock this process holds
    on it, SQLite's included. An answer given while another thread is inside a
    read would release that read's lock; in rollback mode Hermes's writer then
    commits under the read, which fails with "database disk image is malformed"."""
    return "wal" if str(conn.execute("PRAGMA journal_mode").fetchone()[0]).lower() == "wal" else "rollback"


def table_names(conn: sqlite3.Connection) -> set[str]:
    return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}


