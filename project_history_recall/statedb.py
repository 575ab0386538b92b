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

import bisect
import json
import os
import sqlite3
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Iterator, TypeVar

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
            # List content is stored as escaped JSON; scans match its decoded text.
            conn.create_function("phr_text", 1, decode_content, deterministic=True)
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
            parts.append(self.shown_filter(alias))
        return " AND ".join(parts) or "1"

    def shown_filter(self, alias: str = "m") -> str:
        """Rows Hermes ever shows: main marks model-only scaffolding ``display_kind='hidden'``."""
        return f"COALESCE({alias}.display_kind, '') != 'hidden'" if self.has_display_kind else "1"


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


# What Hermes's own session_search never shows: delegate_task subagent runs,
# third-party integrations (HERMES_SESSION_SOURCE=tool) and kanban workers.
HIDDEN_SOURCES = frozenset({"kanban", "subagent", "tool"})


def is_delegated(source: str | None, model_config: str | None) -> bool:
    """A delegate_task subagent run (Hermes marks it by source, and in model_config)."""
    if source == "subagent":
        return True
    try:
        config = json.loads(model_config) if model_config else None
    except (TypeError, ValueError):
        return False
    return isinstance(config, dict) and config.get("_delegate_from") is not None


def _session_select(conn: sqlite3.Connection) -> str:
    """The catalog's columns as this state.db spells them (``hidden`` is newer than 0.19.0)."""
    have = _columns(conn, "sessions")

    def flag(column: str) -> str:
        return f"COALESCE({column}, 0)" if column in have else "0"

    # Only a config that can hold the subagent marker is handed to Python to parse.
    marker = ("CASE WHEN instr(model_config, '_delegate_from') > 0 THEN model_config END"
              if "model_config" in have else "NULL")
    source = "source" if "source" in have else "NULL"
    return (f"SELECT rowid, id, cwd, git_repo_root, parent_session_id, message_count, {source}, "
            f"{flag('archived')}, {flag('hidden')}, {marker} FROM sessions")


def _facts(row: sqlite3.Row | tuple) -> tuple[int, SessionFacts]:
    rowid, sid, cwd, root, parent, count, source, archived, hidden, config = tuple(row)
    searchable = not (archived or hidden or source in HIDDEN_SOURCES or is_delegated(source, config))
    return rowid, SessionFacts(sid, cwd, root, parent, count or 0, searchable)


def read_facts(conn: sqlite3.Connection, session_id: str) -> SessionFacts | None:
    """One session's facts as its row says right now (None: no such row)."""
    try:
        row = conn.execute(_session_select(conn) + " WHERE id = ?", (session_id,)).fetchone()
    except UnicodeEncodeError:  # a lone surrogate from a hostile caller: no UTF-8 row holds it
        return None
    return _facts(row)[1] if row else None


# (sessions, the highest rowid, the id in that row): an index count and one
# descent that reads a single id. ``sessions`` has a TEXT key, so SQLite hands a deleted
# newest session's rowid to the next new one, and count and highest rowid can
# come back exactly as they were. The id cannot: if the row that held the
# highest rowid was never deleted, no rowid at or below it was handed out again
# (that needs every row from there up gone), so nothing was added, and an
# unchanged count means nothing was removed either; if it was deleted, the row
# now holding that rowid is a newer session with an id of its own.
_MARK_SQL = "SELECT (SELECT count(*) FROM sessions), rowid, id FROM sessions ORDER BY rowid DESC LIMIT 1"


def _mark(conn: sqlite3.Connection) -> tuple:
    row = conn.execute(_MARK_SQL).fetchone()
    return tuple(row) if row else (0, 0, None)


class _Rowids:
    """Which rowid holds each known session, in rowid order."""

    def __init__(self, pairs: Iterable[tuple[int, str]] = ()):
        self.at = dict(pairs)
        self.of = {sid: rowid for rowid, sid in self.at.items()}
        self.order = sorted(self.at)

    def __len__(self) -> int:
        return len(self.order)

    def mark(self) -> tuple:
        return (len(self.order), self.order[-1], self.at[self.order[-1]]) if self.order else (0, 0, None)

    def newest(self, n: int) -> list[int]:
        return self.order[-n:][::-1]

    def above(self, rowid: int) -> list[int]:
        return self.order[bisect.bisect_right(self.order, rowid):]

    def remove(self, sid: str) -> None:
        rowid = self.of.pop(sid, None)
        if rowid is not None:
            del self.at[rowid]
            del self.order[bisect.bisect_left(self.order, rowid)]

    def add(self, rowid: int, sid: str) -> None:
        self.remove(sid)  # VACUUM may renumber the rows of a table with a TEXT key
        if rowid in self.at:
            self.remove(self.at[rowid])
        self.at[rowid], self.of[sid] = sid, rowid
        bisect.insort(self.order, rowid)


class SessionCatalog:
    """The attribution-relevant columns of every session, cached per process.

    Reading ``cwd``/``git_repo_root`` means walking past ``system_prompt`` in
    every row (kilobytes of overflow pages scattered through the file):
    ~200 ms at 20k sessions. So the first snapshot reads everything once; after
    that a snapshot costs one query that reads no session's details (the
    membership mark, ``_MARK_SQL``) and reads rows only for sessions added
    since, so new and deleted sessions count at once. Changes Hermes makes to
    existing rows (a new folder, archiving) are picked up by a full re-read in
    the background, at most every ``max_staleness`` seconds after the file
    changed. A search never waits for it.
    """

    _instances: dict[str, "SessionCatalog"] = {}
    _instances_lock = threading.Lock()
    _PROBES = 16  # newest known rows checked for the one the newest sessions were added above

    def __init__(self, path: Path, max_staleness: float = 3.0):
        self.path = path
        self.max_staleness = max_staleness
        self._lock = threading.Lock()
        self._facts: dict[str, SessionFacts] | None = None
        self._rowids = _Rowids()
        self._mark: tuple | None = None
        self._full_at = float("-inf")
        self._full_fingerprint: tuple | None = None  # the file when the last full read began
        self._refresher: threading.Thread | None = None
        self._invalidations = 0  # a re-read begun before the last invalidate() is stale
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
            self._invalidations += 1

    @staticmethod
    def _read_all(conn: sqlite3.Connection) -> tuple[dict[str, SessionFacts], _Rowids, tuple]:
        rows = [_facts(row) for row in conn.execute(_session_select(conn))]
        rowids = _Rowids((rowid, facts.id) for rowid, facts in rows)
        return {facts.id: facts for _rowid, facts in rows}, rowids, rowids.mark()

    def _install(self, facts: dict[str, SessionFacts], rowids: _Rowids, mark: tuple, changed: bool) -> None:
        """Caller holds the lock."""
        if changed:
            self.version += 1
        self._facts, self._rowids, self._mark = facts, rowids, mark

    def snapshot(self, conn: sqlite3.Connection) -> tuple[int, dict[str, SessionFacts]]:
        """(version, facts by session id) of exactly the sessions ``conn`` sees;
        the dict is never mutated afterwards.

        ``message_count`` may lag behind (appends do not trigger a re-read);
        it only sizes work, never decides what is in scope.
        """
        fingerprint = file_fingerprint(self.path)
        with self._lock:
            mark = _mark(conn)
            if self._facts is None:
                self._full_at, self._full_fingerprint = time.monotonic(), fingerprint
                self._install(*self._read_all(conn), changed=True)
            elif mark != self._mark:
                self._sync(conn, mark)
            if fingerprint != self._full_fingerprint and time.monotonic() - self._full_at >= self.max_staleness:
                self._start_refresh(fingerprint)
            return self.version, self._facts

    def _anchor(self, conn: sqlite3.Connection) -> int | None:
        """The newest known rowid still holding the session it held (0 when none
        does), or None when too many of the newest known rows are gone to tell."""
        newest = self._rowids.newest(self._PROBES)
        for rowid in newest:
            row = conn.execute("SELECT id FROM sessions WHERE rowid = ?", (rowid,)).fetchone()
            if row is not None and row[0] == self._rowids.at[rowid]:
                return rowid
        return 0 if len(newest) == len(self._rowids) else None

    def _sync(self, conn: sqlite3.Connection, mark: tuple) -> None:
        """Take in the sessions added and removed since the last mark. Caller holds the lock."""
        select = _session_select(conn)
        anchor = self._anchor(conn)
        if anchor is not None:
            # Rows above the anchor are new (see _MARK_SQL); the known ones there are gone.
            gone = [self._rowids.at[rowid] for rowid in self._rowids.above(anchor)]
            fresh = [_facts(row) for row in conn.execute(select + " WHERE rowid > ?", (anchor,))]
            if len(self._facts) - len(gone) + len(fresh) == mark[0]:
                self._apply(gone, fresh, mark)
                return
        # Older sessions went too (or VACUUM renumbered the rows): compare the
        # ids themselves, read from the id index alone (short strings: a
        # tenth of what reading every row's folder costs).
        present = dict(conn.execute("SELECT id, rowid FROM sessions"))
        gone = [sid for sid in self._facts if sid not in present]
        added = [rowid for sid, rowid in present.items() if self._rowids.of.get(sid) != rowid]
        fresh = [_facts(row) for row in conn.execute(
            select + " WHERE rowid IN (SELECT value FROM json_each(?))", (json.dumps(added),))] if added else []
        self._apply(gone, fresh, mark)

    def _apply(self, gone: list[str], fresh: list[tuple[int, SessionFacts]], mark: tuple) -> None:
        """Caller holds the lock."""
        facts = dict(self._facts)
        changed = False
        for sid in gone:
            changed |= facts.pop(sid, None) is not None
            self._rowids.remove(sid)
        for rowid, row in fresh:
            changed |= facts.get(row.id) != row
            facts[row.id] = row
            self._rowids.add(rowid, row.id)
        self._install(facts if changed else self._facts, self._rowids, mark, changed)

    def _start_refresh(self, fingerprint: tuple) -> None:
        """Caller holds the lock."""
        if self._refresher is not None and self._refresher.is_alive():
            return
        self._full_at, self._full_fingerprint = time.monotonic(), fingerprint
        self._refresher = threading.Thread(target=self._refresh, args=(self._invalidations,),
                                           name="phr-session-catalog", daemon=True)
        self._refresher.start()

    def _refresh(self, invalidations: int) -> None:
        try:
            conn = connect_readonly(self.path)
        except StateDBError:
            return
        try:
            facts, rowids, mark = retry(lambda: self._read_all(conn), self.path)
        except StateDBError:
            return
        finally:
            conn.close()
        with self._lock:
            current = self._facts
        same = facts == current  # 20k comparisons: not while searches wait for the lock
        with self._lock:
            if self._invalidations != invalidations:
                return  # this process changed a row after the read began
            # Sessions added or removed meanwhile are taken in by the next snapshot (its mark differs).
            keep = same and self._facts is current
            self._install(current if keep else facts, rowids, mark, changed=not keep)
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
