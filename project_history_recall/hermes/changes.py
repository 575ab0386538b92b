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
- a lower max id: the file was made anew (``hermes sessions export``, a new
  ``state.db``, ``hermes sessions import``), which numbers every message again
  in the order imported: redo the session, whose rows the index holds by ids
  that may now be another session's;
- never seen: index it whole.

A negative ``seen_count`` marks a session to redo (a check found a text that
no longer matches what was indexed).

Hermes also rewrites rows in place, the row count and last id unchanged, which
the counts cannot tell. So each index checks again, whenever state.db changed,
the rows it holds among those Hermes may still rewrite (``edit_windows``), each
against what it stored of the row (a digest, a content hash), and redoes a
session one of them no longer matches.

The same query counts each session's active rows too (``Counted.active``), from the
same index: a rewind (/undo) and a restore change neither the row count nor the last id,
only ``active``, and the lengths of a scope's messages (``keyword.lengths``) must follow
them. One search reads all of this once (``Once``).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping, NamedTuple, Protocol

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


class Planned(Protocol):
    kind: str  # "append": new rows only; anything else redoes the session


# Where Hermes rewrites a row it wrote, the row count and last id unchanged:
# - 0.22 writes a user turn when it is submitted and rewrites its text when the turn's prologue
#   expands it (an @-file, image parts: ``SessionDB.set_user_message_content``) before the turn's
#   first request, or when a prompt queued behind a running turn grows: within that turn, while
#   its tool calls and their outputs are written (tens of rows; other sessions write meanwhile);
# - a stream cut off leaves a blank assistant row, last in its session, which the transcript repair
#   fills when the session is resumed, in the same write as the resumed turn's first rows: the
#   session grows.
# So the rows checked are those of the last RECENT_ROWS written to state.db (a row is rewritten soon
# after it was written), and the last TAIL_ROWS held of a session that grew (a row filled when its
# session goes on, however long after). Rewrites elsewhere (an importer's, ``hermes sessions
# clean-markers``) are caught when the old text comes up as a hit and no longer matches.
RECENT_ROWS = 256
TAIL_ROWS = 8


def edit_windows(conn: sqlite3.Connection, states: Mapping[str, SessionState], members: list[str],
                 work: Mapping[str, Planned], every_row: bool = False) -> dict[str, int]:
    """The ``members`` an index holds rows of that Hermes may still rewrite (see RECENT_ROWS), and
    that ``work`` does not redo anyway: session id -> the id after which its rows (up to its
    ``indexed_max_id``) are checked. Reads state.db only, a few hundred rows by id at most. With
    ``every_row`` (``index`` on the command line, which a person runs to set things right), every
    row each holds, whoever edited it."""
    held = {sid: st.indexed_max_id for sid in members if (st := states.get(sid)) is not None
            and st.indexed_max_id > 0 and st.seen_count >= 0 and (sid not in work or work[sid].kind == "append")}
    if not held or every_row:
        return dict.fromkeys(held, 0)
    out: dict[str, int] = {}
    # The last RECENT_ROWS rows of the whole table, by id (0.1 ms), filtered here. ``+session_id``: grouped
    # by the column, SQLite would scan its session index whole for the order instead (120 ms at 1M rows);
    # asked for the scope's sessions, it would read all their rows by that index.
    for sid, first in conn.execute(
            "SELECT session_id, min(id) FROM messages WHERE id > (SELECT max(id) FROM messages) - ? "
            "GROUP BY +session_id", (RECENT_ROWS,)).fetchall():
        if sid in held and first <= held[sid]:
            out[sid] = first - 1
    for sid in held.keys() & work.keys():  # grew
        # By 0.22's (session_id, id) index; 0.19 sorts the session's ids (6 ms for 10,000 rows).
        row = conn.execute("SELECT id FROM messages WHERE session_id = ? AND id <= ? ORDER BY id DESC LIMIT 1 OFFSET ?",
                           (sid, held[sid], TAIL_ROWS - 1)).fetchone()
        after = row[0] - 1 if row else 0
        out[sid] = min(after, out.get(sid, after))
    return out


# A row read whole that holds more than this many characters (its content or tool calls) is read again
# to be checked only when its stamp (``BigRows``) changed.
BIG_ROW_CHARS = 1 << 16
_HEAD_BYTES = 4096
_BIG_ROWS_KEPT = 10_000


class BigRows:
    """The big rows (over BIG_ROW_CHARS) of ``edit_windows`` that one index read whole and found as it
    holds them, each with a stamp read by blob I/O, never the row whole: the size and first bytes of
    its content (and of its tool calls, where they count). Read whole, a block of 20 MB pasted among
    the rows Hermes may still rewrite cost each index 0.1 s before every search after state.db
    changed (a search took 0.29 s where it had taken 0.01). Only rows once found big are opened so:
    opening every row of a window (256 short reads an index, before every search after a write)
    stalled Hermes 0.22's writer on its rollback journal, whose commit waits for every reader
    (``bench load``, 8 searching threads: writer p99 43 -> 108 ms). Hermes's rewrites change a
    row's size; an edit that keeps a big row's size and first bytes is caught as one outside the
    windows is."""

    def __init__(self) -> None:
        self._found: dict[int, tuple[str, bool, tuple]] = {}  # message id -> (session, tool calls count, stamp)

    def unchanged(self, conn: sqlite3.Connection, sid: str, after: int, upto: int) -> list[int]:
        """The big rows of ``sid`` in ``(after, upto]`` found before whose stamp is still the same:
        not read again."""
        return [mid for mid, (owner, calls, stamp) in list(self._found.items())
                if owner == sid and after < mid <= upto and _stamp(conn, mid, calls) == stamp]

    def found(self, conn: sqlite3.Connection, sid: str, read: Iterable[tuple[int, bool]]) -> None:
        """The rows ``read`` whole of ``sid``, each (id, whether its tool calls count), were found as
        the index holds them: those over BIG_ROW_CHARS are stamped."""
        if len(self._found) > _BIG_ROWS_KEPT:
            self._found.clear()
        for mid, calls in read:
            stamp = _stamp(conn, mid, calls)
            if stamp is not None:
                self._found[mid] = (sid, calls, stamp)


def is_big(*texts: object) -> bool:
    """Whether a row read whole holds more than BIG_ROW_CHARS in one of ``texts`` (its columns)."""
    return any(isinstance(t, str | bytes) and len(t) > BIG_ROW_CHARS for t in texts)


def _stamp(conn: sqlite3.Connection, mid: int, calls: bool) -> tuple | None:
    """(size, a hash of the first bytes) of the message's content, and of its tool calls if ``calls``;
    None when the row is gone."""
    heads = tuple(_head(conn, column, mid) for column in (("content", "tool_calls") if calls else ("content",)))
    return None if heads[0] is None else heads


def _head(conn: sqlite3.Connection, column: str, mid: int) -> tuple[int, bytes] | None:
    """(size in bytes, a hash of the first bytes) of one message's ``column``; (0, b"") when it holds
    no text or blob (a NULL, a number), None when the row is gone."""
    try:
        blob = conn.blobopen("messages", column, mid, readonly=True)
    except sqlite3.OperationalError as exc:
        return (0, b"") if "cannot open value of type" in str(exc) else None
    with blob:
        # Not its last bytes: reaching them walks the row's whole chain of overflow pages (3 ms for 20 MB).
        return len(blob), hashlib.blake2b(blob.read(_HEAD_BYTES), digest_size=8).digest()


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
        if st.seen_count < 0 or now[1] < st.seen_max_id or st.seen_max_id and conn.execute(
                "SELECT count(*) FROM messages WHERE session_id = ? AND id <= ?",
                (sid, st.seen_max_id)).fetchone()[0] < st.seen_count:
            out[sid] = Change(sid, "redo", 0, now)
        else:
            out[sid] = Change(sid, "append", st.indexed_max_id, now)
    return out
