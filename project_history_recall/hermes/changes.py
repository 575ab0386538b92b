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
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from typing import Mapping


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


def session_counts(conn: sqlite3.Connection, session_ids: list[str]) -> dict[str, tuple[int, int]]:
    """(count(*), max(id)) per session (0, 0 when it has none), from Hermes's
    (session_id, timestamp) index."""
    if not session_ids:
        return {}
    rows = conn.execute(
        "SELECT session_id, count(*), max(id) FROM messages "
        "WHERE session_id IN (SELECT value FROM json_each(?)) GROUP BY session_id",
        (json.dumps(session_ids),)).fetchall()
    counts = {r[0]: (int(r[1]), int(r[2] or 0)) for r in rows}
    return {sid: counts.get(sid, (0, 0)) for sid in session_ids}


def changes(conn: sqlite3.Connection, states: Mapping[str, SessionState], members: list[str],
            counts: dict[str, tuple[int, int]] | None = None) -> dict[str, Change]:
    """What must happen for ``members`` to be current in an index whose per-session
    progress is ``states``. Reads state.db only."""
    counts = session_counts(conn, members) if counts is None else counts
    out: dict[str, Change] = {}
    for sid in members:
        now = counts.get(sid, (0, 0))
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
