"""Every session's attribution facts, kept in step with ``state.db`` cheaply.

Also what Hermes's own session_search leaves out (archived, hidden, subagent,
tool and kanban sessions): such a session keeps its project but is not searched.
"""

from __future__ import annotations

import bisect
import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Iterable

from .facts import SessionFacts
from .readonly import StateDBError, connect_readonly, file_fingerprint, retry
from . import statedb
from .statedb import columns, in_batches, text_sql

# What Hermes's own session_search never shows: delegate_task subagent runs,
# third-party integrations (HERMES_SESSION_SOURCE=tool) and kanban workers.
HIDDEN_SOURCES = frozenset({"kanban", "subagent", "tool"})


def is_delegated(source: str | None, model_config: str | None) -> bool:
    """A delegate_task subagent run (Hermes marks it by source, and in model_config)."""
    return source == "subagent" or marked(model_config, "_delegate_from")


def marked(model_config: str | None, key: str) -> bool:
    """Whether a session's model_config (JSON, as Hermes writes it) holds ``key``, as Hermes marks
    a delegated run (``_delegate_from``) or a /branch (``_branched_from``); False when it is no
    JSON object."""
    try:
        config = json.loads(model_config) if model_config else None
    except (TypeError, ValueError):
        return False
    return isinstance(config, dict) and config.get(key) is not None


def _session_select(conn: sqlite3.Connection) -> str:
    """The catalog's columns as this state.db spells them (``hidden`` is newer than 0.19.0)."""
    have = columns(conn, "sessions")

    def flag(column: str) -> str:
        return f"COALESCE({column}, 0)" if column in have else "0"

    # Only a config that can hold the subagent marker is handed to Python to parse.
    marker = (f"CASE WHEN instr(model_config, '_delegate_from') > 0 THEN {text_sql('model_config')} END"
              if "model_config" in have else "NULL")
    texts = ", ".join(text_sql(c) if c in have else "NULL" for c in ("cwd", "git_repo_root", "parent_session_id"))
    source = text_sql("source") if "source" in have else "NULL"
    return (f"SELECT rowid, {text_sql('id')}, {texts}, message_count, {source}, "
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


def read_facts_of(conn: sqlite3.Connection, session_ids: list[str]) -> dict[str, SessionFacts]:
    """The facts of each of ``session_ids`` as its row says right now (no row: left out)."""
    rows = conn.execute(_session_select(conn) + " WHERE id IN (SELECT value FROM json_each(?))",
                        (json.dumps(session_ids),)).fetchall()
    return {facts.id: facts for facts in (_facts(row)[1] for row in rows)}


# (sessions, the highest rowid, the id in that row): an index count and one
# descent that reads a single id. ``sessions`` has a TEXT key, so SQLite hands a deleted
# newest session's rowid to the next new one, and count and highest rowid can
# come back exactly as they were. The id cannot: if the row that held the
# highest rowid was never deleted, no rowid at or below it was handed out again
# (that needs every row from there up gone), so nothing was added, and an
# unchanged count means nothing was removed either; if it was deleted, the row
# now holding that rowid is a newer session with an id of its own.
_MARK_SQL = f"SELECT (SELECT count(*) FROM sessions), rowid, {text_sql('id')} FROM sessions ORDER BY rowid DESC LIMIT 1"


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
    changed. A search never waits for it: it reads what concerns its own
    project meanwhile (``unread_change``, ``read_matching``; see
    ``scope.resolve.came_in`` and ``left_scope``).
    """

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
        self._read_fingerprint: tuple | None = None  # the file when the full read installed began
        self._seen_fingerprint: tuple | None = None  # the file when the last snapshot was taken
        self._refresher: threading.Thread | None = None
        self._invalidations = 0  # a re-read begun before the last invalidate() is stale
        self.version = 0

    def invalidate(self) -> None:
        """Make the next snapshot re-read every row (after this process changed one)."""
        with self._lock:
            self._facts = None
            self._invalidations += 1

    @staticmethod
    def _read_all(conn: sqlite3.Connection) -> tuple[dict[str, SessionFacts], _Rowids, tuple]:
        # In rowid batches: one statement over every row would hold state.db's
        # lock for the whole walk (see statedb.reading). A session added or
        # removed between batches changes the mark, so the next snapshot syncs it.
        rows = [_facts(row) for row in in_batches(conn, _session_select(conn) + " WHERE rowid > ? ORDER BY rowid LIMIT ?")]
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
            self._seen_fingerprint = fingerprint
            mark = _mark(conn)
            if self._facts is None:
                self._full_at, self._full_fingerprint = time.monotonic(), fingerprint
                self._install(*self._read_all(conn), changed=True)
                self._read_fingerprint = fingerprint
            elif mark != self._mark:
                self._sync(conn, mark)
            if fingerprint != self._full_fingerprint and time.monotonic() - self._full_at >= self.max_staleness:
                self._start_refresh(fingerprint)
            return self.version, self._known()

    def unread_change(self) -> tuple | None:
        """The file as the last snapshot found it, when it had changed since the last full read
        began (rows may have changed that the snapshot did not read); None when it had not."""
        with self._lock:
            seen = self._seen_fingerprint
            return seen if seen != self._read_fingerprint else None

    def sessions_known(self) -> int:
        """How many sessions the catalog holds now."""
        with self._lock:
            return len(self._rowids)

    def read_matching(self, conn: sqlite3.Connection, condition: str, params: tuple) -> list[SessionFacts]:
        """The facts of every session whose row meets ``condition`` (SQL over ``sessions``), as its
        row says right now. ``sessions`` has no index on a folder, so ``condition`` is tried on every
        row: in rowid ranges of ``READ_BATCH`` known sessions, each its own statement, so that none
        holds state.db's lock for a walk of the whole table (see ``statedb.reading``)."""
        batch = statedb.READ_BATCH
        with self._lock:
            bounds = self._rowids.order[batch - 1::batch]
        select = _session_select(conn) + f" WHERE rowid > ? AND rowid <= ? AND ({condition})"
        found: list[SessionFacts] = []
        # SQLite's rowids are signed 64-bit: the first range starts below any, the last ends above any.
        for low, high in zip([-(2 ** 63)] + bounds, bounds + [2 ** 63 - 1], strict=True):
            found.extend(_facts(row)[1] for row in conn.execute(select, (low, high, *params)).fetchall())
        return found

    def _known(self) -> dict[str, SessionFacts]:
        """The facts installed, for the steps that follow the first read. Caller holds the lock."""
        if self._facts is None:
            raise AssertionError("the session catalog has not been read yet")
        return self._facts

    def _anchor(self, conn: sqlite3.Connection) -> int | None:
        """The newest known rowid still holding the session it held (0 when none
        does), or None when too many of the newest known rows are gone to tell."""
        newest = self._rowids.newest(self._PROBES)
        for rowid in newest:
            row = conn.execute(f"SELECT {text_sql('id')} FROM sessions WHERE rowid = ?", (rowid,)).fetchone()
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
            if len(self._known()) - len(gone) + len(fresh) == mark[0]:
                self._apply(gone, fresh, mark)
                return
        # Older sessions went too (or VACUUM renumbered the rows): compare the
        # ids themselves, read from the id index alone (short strings: a
        # tenth of what reading every row's folder costs).
        present = dict(conn.execute(f"SELECT {text_sql('id')}, rowid FROM sessions"))
        gone = [sid for sid in self._known() if sid not in present]
        added = [rowid for sid, rowid in present.items() if self._rowids.of.get(sid) != rowid]
        fresh = [_facts(row) for row in conn.execute(
            select + " WHERE rowid IN (SELECT value FROM json_each(?))", (json.dumps(added),))] if added else []
        self._apply(gone, fresh, mark)

    def _apply(self, gone: list[str], fresh: list[tuple[int, SessionFacts]], mark: tuple) -> None:
        """Caller holds the lock."""
        known = self._known()
        facts = dict(known)
        changed = False
        for sid in gone:
            changed |= facts.pop(sid, None) is not None
            self._rowids.remove(sid)
        for rowid, row in fresh:
            changed |= facts.get(row.id) != row
            facts[row.id] = row
            self._rowids.add(rowid, row.id)
        self._install(facts if changed else known, self._rowids, mark, changed)

    def _start_refresh(self, fingerprint: tuple) -> None:
        """Caller holds the lock."""
        if self._refresher is not None and self._refresher.is_alive():
            return
        self._full_at, self._full_fingerprint = time.monotonic(), fingerprint
        self._refresher = threading.Thread(target=self._refresh, args=(self._invalidations, fingerprint),
                                           name="phr-session-catalog", daemon=True)
        self._refresher.start()

    def _refresh(self, invalidations: int, fingerprint: tuple) -> None:
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
            self._install(current if keep and current is not None else facts, rowids, mark, changed=not keep)
            self._full_at, self._read_fingerprint = time.monotonic(), fingerprint

    def wait_idle(self, timeout: float = 30.0) -> None:
        """Let a background re-read finish (tests and benchmarks)."""
        refresher = self._refresher
        if refresher is not None:
            refresher.join(timeout)


