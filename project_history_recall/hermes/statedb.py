"""Hermes's ``state.db``: its layout, its messages' text, and a pooled read-only connection per thread.

Hermes has changed this file's layout between releases (0.19.0 indexes
``content || tool_name || tool_calls`` inline in ``messages_fts``; main uses
external-content tables, an optional ``messages_fts_cjk`` and hides
scaffolding rows with ``display_kind``), so the shape is detected, never
assumed.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from .readonly import StateDBError, _describe, connect_readonly, retry

JSON_CONTENT_PREFIX = "\x00json:"
# The part of a message that is indexed, embedded, scanned and shown. Hermes cuts a tool's
# result at 100,000 characters, so only pasted or imported text is ever longer; reading all
# of a 20 MB paste for each search that hits it cost seconds.
MAX_TEXT_CHARS = 100_000


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
        """Rows that are part of the record: not rewound (``kept_filter``) and shown (``shown_filter``)."""
        parts = [part for part in (self.kept_filter(alias), self.shown_filter(alias)) if part != "1"]
        return " AND ".join(parts) or "1"

    def kept_filter(self, alias: str = "m") -> str:
        """Rows not rewound: live, or compacted away."""
        if not self.has_active:
            return "1"
        return f"({alias}.active = 1 OR {alias}.compacted = 1)" if self.has_compacted else f"{alias}.active = 1"

    def active_sum(self) -> str:
        """SQL: how many of the rows aggregated are active, which a rewind (/undo) and a restore
        change (``active`` only: they neither delete nor add a row); 0 where there is no such flag."""
        return "sum(active)" if self.has_active else "0"

    def shown_filter(self, alias: str = "m") -> str:
        """Rows Hermes ever shows: main marks model-only scaffolding ``display_kind='hidden'``."""
        return f"COALESCE({alias}.display_kind, '') != 'hidden'" if self.has_display_kind else "1"


# Every column a search reads whatever the release: one a later Hermes dropped is told as a layout
# this plugin does not know, not as "no such column" from the middle of a search.
_REQUIRED = {
    "sessions": {"id", "cwd", "git_repo_root", "parent_session_id", "started_at", "title", "source", "message_count"},
    "messages": {"id", "session_id", "role", "content", "timestamp", "tool_calls", "tool_name"},
}


def columns(conn: sqlite3.Connection, table: str) -> set[str]:
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
        cols = {t: columns(conn, t) for t in _REQUIRED}
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


def add_functions(conn: sqlite3.Connection) -> None:
    """The SQL functions the plugin's statements use (``phr_text``, ``phr_length``). List content
    is stored as escaped JSON; scans match and measure its decoded text."""
    conn.create_function("phr_text", 1, decode_content, deterministic=True)
    conn.create_function("phr_length", 1, lambda content: len(decode_content(content)), deterministic=True)


# Times an importer wrote in milliseconds, as many tools count (JavaScript's Date.now()): Hermes 0.19's
# import keeps them as given (0.22 refuses them, and keeps what an upgraded home holds). Read as seconds
# they fell in the year 57805, past every other session: shown so, and the latest of all to a question
# that asks how something turned out. In these bounds a number is 1973-2286 in milliseconds, and a year
# after 5138 in seconds, which no clock wrote.
_MILLISECONDS = (1e11, 1e13)


def seconds_sql(column: str) -> str:
    """``column``, a time, in seconds where it holds a number, else NULL: Hermes writes times as REAL,
    but SQLite keeps whatever an importer wrote there ('yesterday', a blob, milliseconds) despite the
    column's affinity. A message without a usable time is shown without one and falls outside every
    since/until. The derived indexes read the times they keep through it too, so one that holds a time
    as state.db had it reads it as a search of state.db does."""
    low, high = _MILLISECONDS
    return (f"(CASE WHEN typeof({column}) NOT IN ('integer', 'real') THEN NULL "
            f"WHEN {column} >= {low:.0f} AND {column} < {high:.0f} THEN {column} / 1000.0 ELSE {column} END)")


def text_sql(column: str) -> str:
    """``column``, a text of Hermes's (a title, a folder, a name), read as text whatever it holds: SQLite
    keeps a blob an importer or a damaged page left in a TEXT column as a blob, which reached Python as
    bytes (a title of bytes failed the whole search as ``internal``). As text it is decoded like any
    other, what is not UTF-8 replaced (``connect_readonly``)."""
    return f"CAST({column} AS TEXT)"


def length_sql(column: str) -> str:
    """SQL: the length in characters of the text the plugin reads from ``column`` (``phr_text``'s,
    its first ``MAX_TEXT_CHARS``, as the keyword index measures it). length() stops at a text's first
    NUL, and Hermes stores list content (a pasted block, an attachment) as NUL + 'json:' + JSON: its
    length() is 0. Measured in Python (``phr_length``) where a NUL is: SQLite cannot count past one,
    even in its own results."""
    return (f"(CASE WHEN instr(CAST({column} AS BLOB), x'00') THEN phr_length({column}) "
            f"ELSE min(length({column}), {MAX_TEXT_CHARS}) END)")


# The UTF-8 bytes that hold at least a text's first MAX_TEXT_CHARS whole characters.
_PREFIX_BYTES = 4 * MAX_TEXT_CHARS + 3


def prefix_sql(column: str) -> str:
    """SQL: the first ``_PREFIX_BYTES`` of ``column``. Cut as a blob: on text ``substr()`` stops at
    the first NUL, and text may hold NULs."""
    return f"substr(CAST({column} AS BLOB), 1, {_PREFIX_BYTES})"


def content_sql(column: str) -> str:
    """``column``, a message's content, as much of it as ``decode_content`` keeps. List content
    (its prefix's NUL reads as no character to ``unicode()``, which looks no further) is read
    whole: JSON cut short cannot be parsed."""
    return f"(CASE WHEN unicode({column}) IS NULL THEN {column} ELSE {prefix_sql(column)} END)"


def read_content(conn: sqlite3.Connection, message_id: int) -> str:
    """``decode_content`` of one message, read with SQLite's incremental blob I/O: any SELECT of
    the column (``content_sql`` too) first copies all of a 20 MB message out of the database,
    twice over, where this reads the pages of its first ``_PREFIX_BYTES``."""
    try:
        blob = conn.blobopen("messages", "content", message_id, readonly=True)
    except sqlite3.OperationalError:  # NULL or a number (no blob to open), or the row is gone
        row = conn.execute("SELECT content FROM messages WHERE id = ?", (message_id,)).fetchone()
        return decode_content(row[0] if row else None)
    with blob:
        head = blob.read(_PREFIX_BYTES)
        if head.startswith(JSON_CONTENT_PREFIX.encode()):
            head += blob.read()  # JSON cut short cannot be parsed
    return decode_content(head)


def decode_content(raw: object) -> str:
    """Message text for display and matching, its first ``MAX_TEXT_CHARS``; list/dict content is flattened."""
    if raw is None:
        return ""
    if isinstance(raw, bytes):
        raw = raw.decode("utf-8", "replace")  # a cut through the last character is cut off below
    if not isinstance(raw, str):
        return str(raw)[:MAX_TEXT_CHARS]
    if not raw.startswith(JSON_CONTENT_PREFIX):
        return raw[:MAX_TEXT_CHARS]
    try:
        value = json.loads(raw[len(JSON_CONTENT_PREFIX):])
    except (ValueError, TypeError, RecursionError):
        # Nested deeper than the JSON parser goes (thousands of levels): its words are still in the raw text.
        return raw[len(JSON_CONTENT_PREFIX): len(JSON_CONTENT_PREFIX) + MAX_TEXT_CHARS]
    return _flatten(value)


def _flatten(value: object) -> str:
    """The text parts of list/dict content, in order, up to ``MAX_TEXT_CHARS``. A loop, not recursion:
    Hermes stores content nested a few hundred levels deep as readily as flat, and a recursive walk
    overflows the stack."""
    parts: list[str] = []
    size = 0
    stack = [value]
    while stack and size < MAX_TEXT_CHARS:
        item = stack.pop()
        if isinstance(item, str):
            if item:
                parts.append(item)
                size += len(item) + 1
        elif isinstance(item, list):
            stack.extend(reversed(item))
        elif isinstance(item, dict):
            if isinstance(item.get("text"), str):
                stack.append(item["text"])
            elif item.get("type") in ("image_url", "image", "input_image"):
                stack.append("[image]")
            else:
                stack.extend(reversed(list(item.values())))
    return " ".join(parts)[:MAX_TEXT_CHARS]


# Rows one statement reads where a session or the whole table could be large:
# about 10 ms of lock each, so Hermes's writer waits that long at most.
READ_BATCH = 500


def in_batches(conn: sqlite3.Connection, sql: str, params: tuple = (), after: object = -1) -> Iterator[tuple]:
    """Every row of ``sql``, ``READ_BATCH`` a statement. ``sql`` ends in ``<key> > ? ORDER BY <key>
    LIMIT ?`` with ``<key>`` its first column; ``params`` fill its other placeholders, and ``after``
    is where the key starts. Each statement is done before its rows are handed on, so none holds
    the lock while the caller works."""
    while True:
        rows = conn.execute(sql, (*params, after, READ_BATCH)).fetchall()
        yield from rows
        if len(rows) < READ_BATCH:
            return
        after = rows[-1][0]

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
    add_functions(conn)
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
    """This thread's read-only connection to ``path``, with no transaction open.

    Each statement is its own read, so a lock lasts one statement, never the
    embedding, ranking or formatting between statements. In rollback-journal
    mode (Hermes 0.22 on an SQLite older than 3.51.3) any reader's lock stops
    Hermes's writer from committing, and Hermes gives up on a write after
    waiting 1 s per attempt; in WAL mode an open read holds back checkpoints.
    A writer waiting to commit holds SQLite's PENDING lock, which makes our
    next statement wait for it (the busy timeout): the writer goes first.
    So every cursor must be exhausted (``fetchall``) before other work, and
    no statement may read without bound (see ``READ_BATCH``).
    """
    conn, shape = _pooled(path)
    try:
        yield conn, shape
    except sqlite3.DatabaseError as exc:
        discard_pooled(path)
        raise _describe(path, exc) from exc
