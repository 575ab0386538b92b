"""Read-only access to Hermes's ``state.db``.

The plugin never writes here: the file is opened with ``mode=ro`` and
``PRAGMA query_only``, so even a bug cannot write (SQLite refuses). A reader
can meet a writer mid-checkpoint (transient ``disk I/O error``/``locked``);
those are retried briefly. Everything else becomes a ``StateDBError`` whose
message a person can act on.

Hermes has changed this file's layout between releases (0.19.0 indexes
``content || tool_name || tool_calls`` inline in ``messages_fts``; main uses
external-content tables, an optional ``messages_fts_cjk`` and hides scaffolding
rows with ``display_kind``), so the shape is detected, never assumed.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, TypeVar

from .attribution import SessionFacts
from .filestamp import file_stamp

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

JSON_CONTENT_PREFIX = "\x00json:"


class StateDBError(Exception):
    """A problem with state.db that the user can understand and act on."""

    def __init__(self, message: str, code: str):
        super().__init__(message)
        self.code = code


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
        return StateDBError(f"Cannot open {path} for reading: {exc}.", "unreadable")
    return StateDBError(f"Reading {path} failed: {exc}.", "error")


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


def connect_readonly(path: Path, *, timeout_ms: int | None = None, immutable: bool = False) -> sqlite3.Connection:
    """A read-only connection to an existing SQLite file (never creates one).

    ``immutable`` skips locking and the WAL index: only for one read of a file
    whose WAL holds nothing (see :func:`_wal_is_empty`), closed right after.
    """
    timeout_ms = BUSY_TIMEOUT_MS if timeout_ms is None else timeout_ms
    if not path.is_file():
        raise StateDBError(
            f"No Hermes session database at {path}. Has Hermes run in this profile yet?",
            "missing",
        )
    uri = "file:" + path.resolve().as_posix().replace("?", "%3F").replace("#", "%23") + "?mode=ro"
    if immutable:
        uri += "&immutable=1"

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


@dataclass(frozen=True)
class Shape:
    """What this state.db offers."""

    words_fts: str | None  # unicode61 index over messages
    trigram_fts: str | None  # trigram index (substrings of 3+ characters)
    trigram_has_tools: bool  # main's trigram view leaves tool rows out
    has_active: bool
    has_compacted: bool
    has_display_kind: bool
    schema_version: int | None

    def live_filter(self, alias: str = "m") -> str:
        """Rows that are part of the record: live, or compacted away (not rewound)."""
        parts = []
        if self.has_active:
            parts.append(
                f"({alias}.active = 1 OR {alias}.compacted = 1)" if self.has_compacted else f"{alias}.active = 1"
            )
        if self.has_display_kind:
            parts.append(f"COALESCE({alias}.display_kind, '') != 'hidden'")
        return " AND ".join(parts) or "1"


_REQUIRED = {
    "sessions": {"id", "cwd", "git_repo_root", "parent_session_id", "started_at", "title"},
    "messages": {"id", "session_id", "role", "content", "timestamp"},
}


def _columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}


def inspect(conn: sqlite3.Connection, path: Path) -> Shape:
    def _read() -> Shape:
        names = {r[0]: (r[1] or "") for r in conn.execute(
            "SELECT name, sql FROM sqlite_master WHERE type IN ('table', 'view')")}
        if "sessions" not in names or "messages" not in names:
            raise StateDBError(
                f"{path} has no Hermes sessions in it (no sessions/messages tables). "
                "Has Hermes run in this profile yet?",
                "empty",
            )
        cols = {t: _columns(conn, t) for t in _REQUIRED}
        for table, needed in _REQUIRED.items():
            missing = needed - cols[table]
            if missing:
                raise StateDBError(
                    f"{path} has a layout this plugin does not know ({table} lacks "
                    f"{', '.join(sorted(missing))}). Supported: Hermes 0.19 and later "
                    "releases that keep these columns.",
                    "schema",
                )
        version = None
        if "schema_version" in names:
            row = conn.execute("SELECT max(version) FROM schema_version").fetchone()
            version = row[0] if row else None
        trigram = "messages_fts_trigram" if "messages_fts_trigram" in names else None
        trigram_sql = names.get(trigram or "", "").lower()
        return Shape(
            words_fts="messages_fts" if "messages_fts" in names else None,
            trigram_fts=trigram,
            # External-content trigram tables in main index a view without tool rows.
            trigram_has_tools="content=" not in trigram_sql.replace(" ", ""),
            has_active="active" in cols["messages"],
            has_compacted="compacted" in cols["messages"],
            has_display_kind="display_kind" in cols["messages"],
            schema_version=version,
        )

    return retry(_read, path)


def decode_content(raw: object) -> str:
    """Message text for display and matching; list/dict content is flattened."""
    if raw is None:
        return ""
    if isinstance(raw, bytes):
        raw = raw.decode("utf-8", "replace")
    if not isinstance(raw, str):
        return str(raw)
    if not raw.startswith(JSON_CONTENT_PREFIX):
        return raw
    try:
        value = json.loads(raw[len(JSON_CONTENT_PREFIX):])
    except (ValueError, TypeError):
        return raw[len(JSON_CONTENT_PREFIX):]
    return _flatten(value)


def _flatten(value: object) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return " ".join(p for p in (_flatten(v) for v in value) if p)
    if isinstance(value, dict):
        if isinstance(value.get("text"), str):
            return value["text"]
        if value.get("type") in ("image_url", "image", "input_image"):
            return "[image]"
        return " ".join(p for p in (_flatten(v) for v in value.values()) if p)
    return ""


def file_fingerprint(path: Path) -> tuple:
    """Changes whenever SQLite commits to ``path`` (the file or its WAL)."""
    return (file_stamp(path), file_stamp(path.with_name(path.name + "-wal")))


def table_names(conn: sqlite3.Connection) -> set[str]:
    return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}


class _Watcher:
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
                inode = os.stat(self.path).st_ino
            except OSError:
                self.close()
                return self.missing
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


def _facts(row: sqlite3.Row) -> SessionFacts:
    return SessionFacts(row[1], row[2], row[3], row[4], row[5] or 0)


class SessionCatalog:
    """The attribution-relevant columns of every session, cached per process.

    Reading ``cwd``/``git_repo_root`` means walking past ``system_prompt`` in
    every row (kilobytes of overflow pages scattered through the file):
    ~200 ms at 20k sessions. So the first snapshot reads everything once;
    after that a search only reads sessions added since (by rowid, cheap), and
    a full re-read — which also sees folders Hermes changed on existing
    sessions — runs in the background, at most every ``max_staleness``
    seconds while the file keeps changing. A search never waits for it.
    """

    _instances: dict[str, "SessionCatalog"] = {}
    _instances_lock = threading.Lock()
    _COLUMNS = "rowid, id, cwd, git_repo_root, parent_session_id, message_count"

    def __init__(self, path: Path, max_staleness: float = 3.0):
        self.path = path
        self.max_staleness = max_staleness
        self._lock = threading.Lock()
        self._facts: dict[str, SessionFacts] | None = None
        self._fingerprint: tuple | None = None
        self._max_rowid = 0
        self._full_at = float("-inf")
        self._refresher: threading.Thread | None = None
        self.version = 0

    @classmethod
    def for_path(cls, path: Path) -> "SessionCatalog":
        key = str(path.resolve())
        with cls._instances_lock:
            catalog = cls._instances.get(key)
            if catalog is None:
                catalog = cls._instances[key] = cls(path)
            return catalog

    def invalidate(self) -> None:
        """Make the next snapshot re-read every row (after this process changed one)."""
        with self._lock:
            self._facts = None

    def _read_all(self, conn: sqlite3.Connection) -> tuple[int, dict[str, SessionFacts]]:
        top, facts = 0, {}
        for row in conn.execute(f"SELECT {self._COLUMNS} FROM sessions"):
            facts[row[1]] = _facts(row)
            top = max(top, row[0])
        return top, facts

    def _install(self, facts: dict[str, SessionFacts], max_rowid: int, fingerprint: tuple | None) -> None:
        """Caller holds the lock."""
        if facts != self._facts:
            self.version += 1
        self._facts = facts
        self._max_rowid = max_rowid
        self._fingerprint = fingerprint

    def snapshot(self, conn: sqlite3.Connection) -> tuple[int, dict[str, SessionFacts]]:
        """(version, facts by session id); the dict is never mutated afterwards.

        ``message_count`` may lag behind (appends do not trigger a re-read);
        it only sizes work, never decides what is in scope.
        """
        fingerprint = file_fingerprint(self.path)
        with self._lock:
            # mtime can be coarse; a new session always raises max(rowid),
            # and that lookup is a single b-tree descent.
            top = conn.execute("SELECT max(rowid) FROM sessions").fetchone()[0] or 0
            if self._facts is not None and fingerprint == self._fingerprint and top == self._max_rowid:
                return self.version, self._facts
            if self._facts is None:
                max_rowid, facts = self._read_all(conn)
                self._full_at = time.monotonic()
                self._install(facts, max_rowid, fingerprint)
                return self.version, self._facts
            facts = dict(self._facts)
            for row in conn.execute(f"SELECT {self._COLUMNS} FROM sessions WHERE rowid > ?", (self._max_rowid,)):
                facts[row[1]] = _facts(row)
            self._install(facts, max(top, self._max_rowid), fingerprint)
            if time.monotonic() - self._full_at >= self.max_staleness:
                self._start_refresh()
            return self.version, self._facts

    def _start_refresh(self) -> None:
        """Caller holds the lock."""
        if self._refresher is not None and self._refresher.is_alive():
            return
        self._full_at = time.monotonic()
        self._refresher = threading.Thread(target=self._refresh, name="phr-session-catalog", daemon=True)
        self._refresher.start()

    def _refresh(self) -> None:
        try:
            conn = connect_readonly(self.path)
        except StateDBError:
            return
        try:
            max_rowid, facts = retry(lambda: self._read_all(conn), self.path)
        except StateDBError:
            return
        finally:
            conn.close()
        with self._lock:
            # Sessions added meanwhile are read as a delta by the next search.
            self._install(facts, max_rowid, None)
            self._full_at = time.monotonic()

    def wait_idle(self, timeout: float = 30.0) -> None:
        """Let a background re-read finish (tests and benchmarks)."""
        refresher = self._refresher
        if refresher is not None:
            refresher.join(timeout)


_local = threading.local()
_POOL_PER_THREAD = 4


def _pooled(path: Path) -> tuple[sqlite3.Connection, Shape]:
    """This thread's open connection to ``path`` (reopened if the file was replaced)."""
    pool: dict = getattr(_local, "pool", None) or {}
    _local.pool = pool
    key = str(path)
    try:
        inode = os.stat(path).st_ino
    except OSError:
        inode = None
    entry = pool.get(key)
    if entry is not None:
        conn, shape, cookie, seen_inode = entry
        try:
            current = conn.execute("PRAGMA schema_version").fetchone()[0]
        except sqlite3.Error:
            current = None
        if seen_inode == inode and current == cookie and inode is not None:
            return conn, shape
        pool.pop(key, None)
        conn.close()
    conn = connect_readonly(path)
    try:
        shape = inspect(conn, path)
        cookie = conn.execute("PRAGMA schema_version").fetchone()[0]
    except BaseException:
        conn.close()
        raise
    pool[key] = (conn, shape, cookie, inode)
    while len(pool) > _POOL_PER_THREAD:  # a profile switch must not leak a connection per home
        pool.pop(next(iter(pool)))[0].close()
    return conn, shape


def discard_pooled(path: Path) -> None:
    entry = (getattr(_local, "pool", None) or {}).pop(str(path), None)
    if entry is not None:
        entry[0].close()


@contextmanager
def reading(path: Path) -> Iterator[tuple[sqlite3.Connection, Shape]]:
    """A read-only connection inside one read transaction (one consistent snapshot)."""
    conn, shape = _pooled(path)
    try:
        retry(lambda: conn.execute("BEGIN").fetchall(), path)
    except StateDBError:
        discard_pooled(path)
        raise
    try:
        yield conn, shape
    except sqlite3.DatabaseError as exc:
        discard_pooled(path)
        raise _describe(path, exc) from exc
    finally:
        try:
            if conn.in_transaction:
                conn.execute("COMMIT")
        except sqlite3.Error:
            discard_pooled(path)
