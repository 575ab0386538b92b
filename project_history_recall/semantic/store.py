"""``embeddings.db``: the plugin's own vectors, in its data folder.

One row per chunk: ``session_id, message_id, chunk_offset, content_hash,
model_fingerprint, vector`` (+ the message's timestamp, for time filters).
Vectors are keyed by session and message, never by project, so moving a
session between projects never touches them. Stored as float16 (half the
disk, no measurable change in ranking); used as float32 in memory.

Per session, ``sessions`` records how far indexing got:

- ``indexed_max_id``: every user/assistant message of the session with an id
  up to this one has its vectors (ids only grow: Hermes uses AUTOINCREMENT);
- ``seen_count``/``seen_max_id``: ``count(*)``/``max(id)`` of the session's
  rows in state.db when it was last complete (-1: needs a full check);
- ``generation``: bumped whenever vectors of the session are removed or
  replaced, so in-memory copies know to reload it; ``last_rowid``: the newest
  chunk row, so appended vectors are read without re-reading the session.

Every batch is one transaction (vectors and progress together), so a killed
indexing run leaves a consistent index that resumes where it stopped. A file
that is not a readable database, or turns out damaged in use, is moved aside
and rebuilt (``derived``).

Each file has an ``identity``, drawn when it is made: generations and rowids
start again in a rebuilt file, so what was read from another file (a matrix
saved between processes) is known by it not to be this one's.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from dataclasses import dataclass
from pathlib import Path

from ..files import derived
from ..hermes.changes import SessionState
from ..hermes.statedb import seconds_sql

FILE_NAME = "embeddings.db"
SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS chunks (
    rowid INTEGER PRIMARY KEY AUTOINCREMENT,
    model_fingerprint TEXT NOT NULL,
    session_id TEXT NOT NULL,
    message_id INTEGER NOT NULL,
    chunk_offset INTEGER NOT NULL,
    content_hash TEXT NOT NULL,
    timestamp REAL,
    vector BLOB NOT NULL,
    UNIQUE (model_fingerprint, session_id, message_id, chunk_offset)
);
CREATE TABLE IF NOT EXISTS sessions (
    model_fingerprint TEXT NOT NULL,
    session_id TEXT NOT NULL,
    indexed_max_id INTEGER NOT NULL DEFAULT 0,
    seen_count INTEGER NOT NULL DEFAULT 0,
    seen_max_id INTEGER NOT NULL DEFAULT 0,
    chunks INTEGER NOT NULL DEFAULT 0,
    generation INTEGER NOT NULL DEFAULT 0,
    last_rowid INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (model_fingerprint, session_id)
) WITHOUT ROWID;
"""


@dataclass
class VectorState(SessionState):
    """A session's progress for one model, and its vectors: how many, their generation (a
    reconcile that dropped some bumps it), the last one's rowid."""

    chunks: int = 0
    generation: int = 0
    last_rowid: int = 0


@dataclass
class ChunkRow:
    session_id: str
    message_id: int
    chunk_offset: int
    content_hash: str
    timestamp: float | None
    vector: object  # float32 (dimension,)


# One row of ``sessions`` as a VectorState, for one model.
_STATES = ("SELECT session_id, indexed_max_id, seen_count, seen_max_id, chunks, generation, last_rowid "
           "FROM sessions WHERE model_fingerprint = ?")


def _chunk_count(conn: sqlite3.Connection, fingerprint: str, session_id: str) -> int:
    return conn.execute("SELECT count(*) FROM chunks WHERE model_fingerprint = ? AND session_id = ?",
                        (fingerprint, session_id)).fetchone()[0]


def path_for(data_dir: Path) -> Path:
    return data_dir / FILE_NAME


class VectorStore(derived.DerivedFile):
    """One embeddings.db."""

    def __init__(self, path: Path):
        super().__init__(path, _SCHEMA, SCHEMA_VERSION)
        self.identity = self._identity()

    def _identity(self) -> str:
        with self.using() as conn:
            row = conn.execute("SELECT value FROM meta WHERE key = 'identity'").fetchone()
        if row is not None:
            return row[0]

        def _draw(conn: sqlite3.Connection) -> str:
            # Another process may have drawn it since the read above: the first one drawn stays.
            conn.execute("INSERT OR IGNORE INTO meta VALUES ('identity', ?)", (uuid.uuid4().hex,))
            return conn.execute("SELECT value FROM meta WHERE key = 'identity'").fetchone()[0]

        return self.transaction(_draw)

    # -- reads -------------------------------------------------------------------
    def states(self, fingerprint: str, session_ids: list[str] | None = None) -> dict[str, VectorState]:
        sql = _STATES
        params: list = [fingerprint]
        if session_ids is not None:
            sql += " AND session_id IN (SELECT value FROM json_each(?))"
            params.append(json.dumps(session_ids))
        with self.using() as conn:
            return {r[0]: VectorState(*r) for r in conn.execute(sql, params)}

    def hashes(self, fingerprint: str, session_id: str, after: int = 0, upto: int | None = None) -> dict[int, str]:
        """Message id -> content hash of the session's embedded messages in ``(after, upto]``."""
        with self.using() as conn:
            return dict(conn.execute(
                "SELECT message_id, content_hash FROM chunks WHERE model_fingerprint = ? AND session_id = ? "
                "AND message_id > ? AND message_id <= ? GROUP BY message_id",
                (fingerprint, session_id, after, upto if upto is not None else 2**63 - 1)))

    def rows(self, fingerprint: str, session_ids: list[str], after_rowid: int = 0, page: int = 4096):
        """Chunk rows of these sessions with ``rowid > after_rowid``, in (session,
        message, offset) order: lists of up to ``page`` rows, each a tuple
        ``(rowid, session_id, message_id, timestamp or None, float16 vector bytes)``."""
        sql = (f"SELECT rowid, session_id, message_id, {seconds_sql('timestamp')}, vector FROM chunks "
               "WHERE model_fingerprint = ? AND session_id IN (SELECT value FROM json_each(?)) AND rowid > ? "
               "ORDER BY session_id, message_id, chunk_offset")
        with self.using() as conn:
            cursor = conn.execute(sql, (fingerprint, json.dumps(session_ids), after_rowid))
            while True:
                batch = cursor.fetchmany(page)
                if not batch:
                    return
                yield batch

    def vectors(self, rowids: list[int]) -> dict[int, tuple[bytes, str]]:
        """The float16 vector bytes and the content hash of these chunk rows (rows no longer
        stored are absent). The hash comes along: a search checks its hits against it, and
        reading it here saved a statement a search (every chunk of a message holds its hash)."""
        with self.using() as conn:
            # The ids in turn (CROSS JOIN keeps that order of the loops), not ``rowid IN (…)``, which
            # first builds a sorted temporary table of them.
            return {r[0]: (r[1], r[2]) for r in conn.execute(
                "SELECT c.rowid, c.vector, c.content_hash FROM json_each(?) j CROSS JOIN chunks c ON c.rowid = j.value",
                (json.dumps(rowids),))}

    def fingerprints(self) -> dict[str, int]:
        with self.using() as conn:
            return dict(conn.execute("SELECT model_fingerprint, count(*) FROM chunks GROUP BY 1"))

    # -- writes (each one transaction) --------------------------------------------
    def _state(self, conn: sqlite3.Connection, fingerprint: str, sid: str) -> VectorState:
        row = conn.execute(f"{_STATES} AND session_id = ?", (fingerprint, sid)).fetchone()
        return VectorState(*row) if row else VectorState(sid)

    def _put_state(self, conn: sqlite3.Connection, fingerprint: str, st: VectorState) -> None:
        conn.execute(
            "INSERT OR REPLACE INTO sessions VALUES (?,?,?,?,?,?,?,?)",
            (fingerprint, st.session_id, st.indexed_max_id, st.seen_count, st.seen_max_id, st.chunks,
             st.generation, st.last_rowid))

    def add(self, fingerprint: str, session_id: str, chunks: list[ChunkRow], indexed_max_id: int | None,
            seen: tuple[int, int] | None = None) -> VectorState:
        """Store one batch of a session's vectors and its progress, atomically.

        ``indexed_max_id``: every message up to this id is now done (None: unchanged);
        ``seen``: the session is complete as of state.db's ``(count, max id)``.
        """
        import numpy as np

        def _do(conn: sqlite3.Connection):
            st = self._state(conn, fingerprint, session_id)
            for c in chunks:
                cur = conn.execute(
                    "INSERT OR REPLACE INTO chunks (model_fingerprint, session_id, message_id, chunk_offset, "
                    "content_hash, timestamp, vector) VALUES (?,?,?,?,?,?,?)",
                    (fingerprint, session_id, c.message_id, c.chunk_offset, c.content_hash, c.timestamp,
                     np.asarray(c.vector, dtype=np.float16).tobytes()))
                st.last_rowid = max(st.last_rowid, cur.lastrowid or 0)
            if chunks:
                st.chunks = _chunk_count(conn, fingerprint, session_id)
            if indexed_max_id is not None:
                st.indexed_max_id = max(st.indexed_max_id, indexed_max_id)
            if seen is not None:
                st.seen_count, st.seen_max_id = seen
            self._put_state(conn, fingerprint, st)
            return st

        return self.transaction(_do)

    def remove_messages(self, fingerprint: str, session_id: str, message_ids: list[int], *,
                        dirty: bool, wait: float = derived.LOCK_WAIT) -> VectorState:
        """Drop these messages' vectors; ``dirty`` marks the session for a full check
        (set while a reconciliation is under way, so a crash repeats it). ``wait``: how long
        another process's write lock is waited for (``transaction``)."""
        def _do(conn: sqlite3.Connection):
            st = self._state(conn, fingerprint, session_id)
            if message_ids:
                conn.execute("DELETE FROM chunks WHERE model_fingerprint = ? AND session_id = ? AND message_id IN "
                              "(SELECT value FROM json_each(?))", (fingerprint, session_id, json.dumps(message_ids)))
                st.chunks = _chunk_count(conn, fingerprint, session_id)
                st.generation += 1
            if dirty:
                st.seen_count = -1
            self._put_state(conn, fingerprint, st)
            return st

        return self.transaction(_do, wait)

    def mark_dirty(self, fingerprint: str, session_id: str, wait: float = derived.LOCK_WAIT) -> None:
        self.remove_messages(fingerprint, session_id, [], dirty=True, wait=wait)

    def drop_sessions(self, session_ids: list[str]) -> None:
        """Forget sessions entirely, every model's vectors of them (they were deleted from Hermes)."""
        def _do(conn: sqlite3.Connection):
            ids = json.dumps(session_ids)
            conn.execute("DELETE FROM chunks WHERE session_id IN (SELECT value FROM json_each(?))", (ids,))
            conn.execute("DELETE FROM sessions WHERE session_id IN (SELECT value FROM json_each(?))", (ids,))

        self.transaction(_do)

    def session_ids(self) -> set[str]:
        with self.using() as conn:
            return {r[0] for r in conn.execute("SELECT DISTINCT session_id FROM sessions")}
