"""What of the asking conversation Hermes took out of the model's live context.

A search leaves the asking conversation out by default, as Hermes's ``session_search`` does: what it
said is in the model's context already. Not all of what shares its lineage is. Hermes ends a session
and goes on in a child that names it as parent when it compresses the conversation by rotation
(``compression``: the child holds a summary) and, on the 0.22 line's gateway, when a chat is reset
(``/new``, the idle or daily reset: the child starts empty), so a chat's every earlier day shares one
lineage. Those parts left the live context and are history, as Hermes 0.22's ``session_search`` finds
them. So are the rows Hermes compacted in place (``compacted``, the default way of both lines): they
are in the asking session itself, which the search leaves out whole, so the search says they were.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Collection

from .statedb import Shape, columns

# The end reasons of a session whose transcript left the live context: a compression, and the
# conversation boundaries Hermes 0.22 lists as such (``hermes_state_common._BOUNDARY_END_REASONS``).
COMPRESSED = "compression"
LEFT = frozenset({COMPRESSED, "session_reset", "session_switch", "idle", "daily", "suspended",
                  "resume_pending_expired", "new_session"})

COMPACTED_AWAY = ("Hermes compressed this conversation in place, so its earlier part is no longer in your "
                  "context; it was not searched, as this session is left out by default: ask again with "
                  "include_current_session: true to search it too.")


def end_reasons(conn: sqlite3.Connection, session_ids: Collection[str]) -> dict[str, str]:
    """The end reason of each of ``session_ids`` that ended with one of ``LEFT``."""
    if not session_ids or "end_reason" not in columns(conn, "sessions"):
        return {}
    marks = ", ".join("?" * len(LEFT))
    rows = conn.execute(f"SELECT id, CAST(end_reason AS TEXT) FROM sessions WHERE end_reason IN ({marks}) "
                        "AND id IN (SELECT value FROM json_each(?))", (*sorted(LEFT), json.dumps(sorted(session_ids))))
    return dict(rows.fetchall())


def compacted(conn: sqlite3.Connection, shape: Shape, session_id: str) -> bool:
    """Whether ``session_id`` holds rows Hermes compacted away in place."""
    return shape.has_compacted and conn.execute(
        "SELECT 1 FROM messages WHERE session_id = ? AND compacted = 1 LIMIT 1", (session_id,)).fetchone() is not None
