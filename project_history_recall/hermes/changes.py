"""Which sessions changed since one of the plugin's indexes last looked at them.

Both derived indexes (``embeddings.db`` and ``keywords.db``) remember, per
session, how far they got (``indexed_max_id``) and what state.db held when
they were last current (``seen_count``, ``seen_max_id``). One index-only
query on state.db (``count(*)``, ``max(id)`` per session) then tells them
apart, because Hermes's message ids only grow (AUTOINCREMENT):

- both equal: nothing to do;
- max id grew and nothing at or below the old max disappeared: new rows,
  append those after ``indexed_max_id``;
- fewer rows at or below the old max id: messages were deleted (or the
  session was rewritten): redo the session;
- never seen: index it whole.

A negative ``seen_count`` marks a session to redo (a check found a text that
no longer matches what was indexed).

The same query counts each session's active rows too (``Counted.active``), from the
same index: a rewind (/undo) and a restore change neither the row count nor the last id,
only ``active``, and the lengths of a scope's messages (``keyword.lengths``) must follow
them. One search reads all of this once (``Once``).
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, NamedTuple

from .readonly import file_fingerprint
from .statedb import Shape


@dataclass
class SessionState:
    """What an index remembers of one session; each index adds where it keeps the session."""

    session_id: str
    indexed_max_id: int = 0
    seen_count: int = 0
    seen_max_id: int = 0


@dataclass
class Change:
    session_id: str
    kind: str  # "append" | "redo"
    after_id: int  # append: the rows after this id
    seen: tuple[int, int]  # state.db's (count(*), max(id)) when planned


class Counted(NamedTuple):
    """One session's rows in state.db: how many, the last id, and how many are active."""

    rows: int = 0
    max_id: int = 0
    active: int = 0

    @property
    def seen(self) -> tuple[int, int]:
        """``(count(*), max(id))``: what the indexes compare (rewound rows stay indexed, checked live)."""
        return self.rows, self.max_id


def session_counts(conn: sqlite3.Connection, session_ids: list[str], shape: Shape | None = None
                   ) -> dict[str, Counted]:
    """Each session's ``Counted`` (all 0 when it has none; ``active`` only with ``shape``), from
    Hermes's (session_id, active, timestamp) index alone. Counting the rows that are part of the
    record (``Shape.live_filter``) instead looks rows up in the table (``compacted`` is in no index,
    nor is 0.22's ``display_kind``, asked of every row): 1.35 times the time of this query on 0.19,
    3 times on 0.22, where counting ``active`` costs 1.2 times."""
    if not session_ids:
        return {}
    active = shape.active_sum() if shape is not None else "0"
    rows = conn.execute(
        f"SELECT session_id, count(*), max(id), {active} FROM messages "
        "WHERE session_id IN (SELECT value FROM json_each(?)) GROUP BY session_id",
        (json.dumps(session_ids),)).fetchall()
    counts = {r[0]: Counted(int(r[1]), int(r[2] or 0), int(r[3] or 0)) for r in rows}
    return {sid: counts.get(sid, Counted()) for sid in session_ids}


class Once:
    """One search's ``session_counts`` of its scope, read once for all that asks (the checks of both
    indexes, the scope's message lengths) while state.db is as it was before they were read.

    An index's check remembers its answer with state.db's fingerprint taken before it (``Worker``):
    counts read before a commit that came ahead of that fingerprint would let it remember the scope
    as current with the commit's rows missing. So a check passes its fingerprint, and counts read
    under another are read again."""

    def __init__(self, conn: sqlite3.Connection, shape: Shape, path: Path):
        self.conn, self.shape, self.path = conn, shape, path
        self._read: tuple[tuple, frozenset[str], dict[str, Counted]] | None = None

    def __call__(self, session_ids: list[str], fingerprint: tuple | None = None) -> dict[str, Counted]:
        """``session_counts`` of ``session_ids``, read after ``fingerprint`` (None: any time in the search)."""
        read = self._read
        if read is not None and (fingerprint is None or fingerprint == read[0]) and read[1].issuperset(session_ids):
            return {sid: read[2][sid] for sid in session_ids}
        before = fingerprint if fingerprint is not None else file_fingerprint(self.path)
        counts = session_counts(self.conn, session_ids, self.shape)
        self._read = (before, frozenset(session_ids), counts)
        return counts


def changes(conn: sqlite3.Connection, states: Mapping[str, SessionState], members: list[str],
            counts: Mapping[str, Counted] | None = None) -> dict[str, Change]:
    """What must happen for ``members`` to be current in an index whose per-session
    progress is ``states``; ``counts``: their ``session_counts``, if read already. Reads state.db only."""
    counts = session_counts(conn, members) if counts is None else counts
    out: dict[str, Change] = {}
    for sid in members:
        now = counts.get(sid, Counted()).seen
        st = states.get(sid)
        if st is None:
            if now[0]:
                out[sid] = Change(sid, "append", 0, now)
            continue
        if st.seen_count >= 0 and (st.seen_count, st.seen_max_id) == now:
            continue
        if st.seen_count < 0 or st.seen_max_id and conn.execute(
                "SELECT count(*) FROM messages WHERE session_id = ? AND id <= ?",
                (sid, st.seen_max_id)).fetchone()[0] < st.seen_count:
            out[sid] = Change(sid, "redo", 0, now)
        else:
            out[sid] = Change(sid, "append", st.indexed_max_id, now)
    return out
