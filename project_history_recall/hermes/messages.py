"""What the plugin's two indexes, and a request for consent, read of state.db's messages.

Each read is bounded (``READ_BATCH`` rows, or one session's lengths), so none holds
state.db's lock for long; see ``statedb.reading``.
"""

from __future__ import annotations

import json
import sqlite3

from .statedb import READ_BATCH, Shape, content_sql, decode_content, prefix_sql, seconds_sql

# The messages semantic search embeds, and a remote embedder would be sent.
_CONVERSATION = "role IN ('user', 'assistant')"


def session_ids(conn: sqlite3.Connection) -> set[str]:
    """Every session state.db holds."""
    return {r[0] for r in conn.execute("SELECT id FROM sessions")}


def index_rows(conn: sqlite3.Connection, sid: str, after_id: int, upto: int, limit: int) -> list[tuple]:
    """``(id, role, content, tool_name, tool_calls, timestamp)`` of the session's messages in
    ``(after_id, upto]``, at most ``limit``, in id order; content and tool calls as
    ``decode_content`` takes them, a timestamp that is no number as None."""
    return conn.execute(
        f"SELECT id, role, {content_sql('content')}, tool_name, {prefix_sql('tool_calls')}, "
        f"{seconds_sql('timestamp')} FROM messages WHERE session_id = ? AND id > ? AND id <= ? ORDER BY id LIMIT ?",
        (sid, after_id, upto, limit)).fetchall()


def conversation_texts(conn: sqlite3.Connection, shape: Shape, sid: str, after_id: int,
                       upto: int) -> list[tuple[int, str, float | None]]:
    """``(id, text, timestamp or None)`` of the session's user and assistant messages in
    ``(after_id, upto]`` that Hermes ever shows, rewound ones included, ``READ_BATCH`` per
    statement: a long session in one statement would hold state.db's lock while all of it
    is read."""
    out: list[tuple[int, str, float | None]] = []
    while True:
        rows = conn.execute(
            f"SELECT id, {content_sql('content')}, {seconds_sql('timestamp')} FROM messages m "
            f"WHERE session_id = ? AND id > ? AND id <= ? AND {_CONVERSATION} AND {shape.shown_filter('m')} "
            "ORDER BY id LIMIT ?",
            (sid, after_id, upto, READ_BATCH)).fetchall()
        out.extend((r[0], decode_content(r[1]), r[2]) for r in rows)
        if len(rows) < READ_BATCH:
            return out
        after_id = rows[-1][0]


def first_texts(conn: sqlite3.Connection, shape: Shape, members: list[str], limit: int = 50) -> list[str]:
    """The text of the first ``limit`` user and assistant messages Hermes shows, newest
    session first."""
    rows = conn.execute(
        f"SELECT {content_sql('content')} FROM messages m WHERE session_id IN (SELECT value FROM json_each(?)) "
        f"AND {_CONVERSATION} AND {shape.shown_filter('m')} ORDER BY session_id DESC, id LIMIT ?",
        (json.dumps(members), limit)).fetchall()
    return [decode_content(content) for (content,) in rows]


def pieces(conn: sqlite3.Connection, sid: str, after_id: int, upto: int, size: int, step: int) -> int:
    """How many pieces of ``size`` characters, each starting ``step`` after the last, the
    session's user and assistant messages in ``(after_id, upto]`` cut into, from their
    lengths alone (no text is read)."""
    row = conn.execute(
        "SELECT count(*), sum((max(0, length(content) - ?) + ? - 1) / ?) FROM messages "
        f"WHERE session_id = ? AND id > ? AND id <= ? AND {_CONVERSATION}",
        (size, step, step, sid, after_id, upto)).fetchone()
    return (row[0] or 0) + (row[1] or 0)


def conversation_size(conn: sqlite3.Connection, members: list[str]) -> dict:
    """``{"messages", "sessions", "characters"}`` of the user and assistant messages of
    ``members``."""
    row = conn.execute(
        "SELECT count(*), count(DISTINCT session_id), coalesce(sum(length(content)), 0) FROM messages "
        f"WHERE session_id IN (SELECT value FROM json_each(?)) AND {_CONVERSATION}",
        (json.dumps(members),)).fetchone()
    return {"messages": int(row[0]), "sessions": int(row[1]), "characters": int(row[2])}
