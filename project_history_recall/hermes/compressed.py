"""Whether Hermes compressed part of a conversation out of the model's context.

A search leaves the asking conversation out by default, as Hermes's ``session_search`` does: what it
said is in the model's context already. Once Hermes compresses it, its earlier part is not: the model
holds a summary, and the words it asks for are in rows it no longer sees, either in a part that ended
``compression`` and went on in a child (rotation, ``compression.in_place: false``) or in rows of the
same session marked ``compacted`` (in place, the default of both lines). Those rows are history to the
model, found with ``include_current_session``; the search says so rather than answer "nothing" as if
they did not exist.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Collection

from .statedb import Shape, columns

COMPRESSED_AWAY = ("Hermes compressed this conversation, so its earlier part is no longer in your context; it "
                   "was not searched, as this conversation is left out by default: ask again with "
                   "include_current_session: true to search it too.")


def any_compressed(conn: sqlite3.Connection, shape: Shape, session_ids: Collection[str]) -> bool:
    """Whether any of ``session_ids`` ended in a compression, or holds rows compacted away."""
    if not session_ids:
        return False
    ids = json.dumps(sorted(session_ids))
    if "end_reason" in columns(conn, "sessions") and conn.execute(
            "SELECT 1 FROM sessions WHERE end_reason = 'compression' AND id IN (SELECT value FROM json_each(?)) "
            "LIMIT 1", (ids,)).fetchone():
        return True
    return shape.has_compacted and conn.execute(
        "SELECT 1 FROM messages WHERE compacted = 1 AND session_id IN (SELECT value FROM json_each(?)) LIMIT 1",
        (ids,)).fetchone() is not None
