"""What the plugin reads of ``state.db``'s messages and sessions, as plain rows.

A search: the keyword engine's term lookups (Hermes's FTS tables, or a scan
of the scope's own rows), which hits are still part of the record, the hits'
text, their sessions and the windows around them. The two indexes
(``keywords.db``, ``embeddings.db``) and a request for consent: the messages
they index, how much there is, which sessions still exist. Every statement is
bounded and fetched whole (see ``statedb.reading``).
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from typing import Collection, Iterator, Mapping

from .statedb import Shape, columns, content_sql, decode_content, in_batches, length_sql, prefix_sql, read_content, seconds_sql, text_sql


@dataclass(frozen=True)
class Filters:
    """The messages a request searches: of these roles, and (by their time) in ``[since, until)``."""

    roles: tuple[str, ...] = ("user", "assistant")
    since: float | None = None
    until: float | None = None


def _ids_json(ids: list[int]) -> str:
    return f"[{','.join(str(int(i)) for i in ids)}]"


def _roles_sql(roles: tuple[str, ...], alias: str = "m") -> str:
    return f"{alias}.role IN ({','.join('?' * len(roles))})"


def filters_sql(shape: Shape, filters: Filters) -> tuple[str, list]:
    """SQL (on messages ``m``) for the rows part of the record that ``filters`` lets through, and its parameters."""
    clauses = [shape.live_filter("m"), _roles_sql(filters.roles)]
    params: list = list(filters.roles)
    if filters.since is not None:
        clauses.append(f"{seconds_sql('m.timestamp')} >= ?")
        params.append(filters.since)
    if filters.until is not None:
        clauses.append(f"{seconds_sql('m.timestamp')} < ?")
        params.append(filters.until)
    return " AND ".join(clauses), params


def live_ids(conn: sqlite3.Connection, shape: Shape, ids: list[int], roles: tuple[str, ...]) -> set[int]:
    """Those of ``ids`` still part of the record (not deleted, not rewound) and of one of ``roles``."""
    if not ids:
        return set()
    rows = conn.execute(
        f"SELECT m.id FROM messages m WHERE m.id IN (SELECT value FROM json_each(?)) AND {shape.live_filter('m')} "
        f"AND {_roles_sql(roles)}", (_ids_json(ids), *roles)).fetchall()
    return {r[0] for r in rows}


def scope_size(conn: sqlite3.Connection, scope_json: str) -> int:
    """How many messages the sessions of ``scope_json`` (a JSON list of ids) hold, of any kind."""
    row = conn.execute(
        "SELECT count(*) FROM messages WHERE session_id IN (SELECT value FROM json_each(?))",
        (scope_json,),
    ).fetchone()
    return int(row[0] or 0)


def lengths(conn: sqlite3.Connection, shape: Shape, session_ids: list[str], roles: tuple[str, ...]
            ) -> dict[str, list[int]]:
    """Per session of ``session_ids``, the lengths of its messages' content that are not rewound
    and of ``roles`` (as the keyword search's rows have them).

    Rows Hermes hides are counted, as the plugin's own index counts them: Hermes 0.22 marks a
    turn's row hidden after writing it, which changes none of the counts these lengths are kept
    by (``changes.Counted``), and a length kept from before would rank otherwise than a new
    process does."""
    out: dict[str, list[int]] = {}
    for sid, length in conn.execute(
            f"SELECT m.session_id, {length_sql('m.content')} FROM messages m WHERE m.session_id IN "
            f"(SELECT value FROM json_each(?)) AND {shape.kept_filter('m')} AND {_roles_sql(roles)}",
            (json.dumps(session_ids), *roles)):
        out.setdefault(sid, []).append(int(length or 0))
    return out


def folded(text: str) -> str:
    """``text`` as SQLite's lower() has the text it is looked for in: it folds ASCII only."""
    return "".join(c.lower() if c.isascii() else c for c in text)


# -- the keyword engine's lookups ------------------------------------------------------------

_SCOPE_ROWS = "SELECT id FROM messages WHERE session_id IN (SELECT value FROM json_each(?))"
_COLS = f"m.id, m.session_id, {seconds_sql('m.timestamp')}, {length_sql('m.content')}"
Row = tuple  # (message id, session id, timestamp or None, length of the content)


def _text_expr(filters: Filters) -> str:
    # List content ("\x00json:[...]", non-ASCII escaped) is matched as the text it holds.
    text = "CASE WHEN instr(m.content, 'json:') = 2 THEN phr_text(m.content) ELSE COALESCE(m.content, '') END"
    if "tool" in filters.roles:
        text = f"({text} || ' ' || COALESCE(m.tool_name, '') || ' ' || COALESCE(m.tool_calls, ''))"
    return f"lower({text})"


def unindexed(conn: sqlite3.Connection) -> tuple[int, int] | None:
    """``(after, up_to)``: the message ids above ``after`` and up to ``up_to`` that Hermes's FTS indexes
    do not hold yet, while Hermes 0.22 fills them anew (``hermes sessions optimize``, which a Ctrl-C
    stops half-way until it is run again; its ``state_meta`` counts how far it got, as Hermes's own
    search reads it). None when the indexes hold every row."""
    try:
        meta = dict(conn.execute("SELECT key, value FROM state_meta WHERE key IN "
                                 "('fts_rebuild_high_water', 'fts_rebuild_progress')").fetchall())
        up_to, after = int(meta.get("fts_rebuild_high_water") or 0), int(meta.get("fts_rebuild_progress") or 0)
    except sqlite3.OperationalError:  # no such table: a release that never fills its indexes so
        return None
    except (TypeError, ValueError):  # a value Hermes never writes: Hermes fails on it too
        return None
    return (after, up_to) if up_to > after else None


class ScopedMatches:
    """Runs FTS queries restricted to one scope, choosing how per query.

    An FTS match must be checked for scope membership. Joining each match to
    its message row costs ~2 µs per match in the whole database; testing the
    match's rowid against the scope's own message ids costs ~0.4 µs per match
    but first collects those ids (~0.4 µs per scope message). A bounded count
    of the matches (doclist only) decides which is cheaper.
    """

    def __init__(self, conn: sqlite3.Connection, shape: Shape, scope_json: str, filters: Filters, total: int):
        self.conn = conn
        self.scope_json = scope_json
        self.total = total
        self.filters = filters
        self.fsql, self.fparams = filters_sql(shape, filters)
        self.unindexed = unindexed(conn)

    def _few_matches(self, table: str, match: str) -> bool:
        cap = max(500, self.total // 4)
        (count,) = self.conn.execute(
            f"SELECT count(*) FROM (SELECT 1 FROM {table} WHERE {table} MATCH ? LIMIT ?)", (match, cap)
        ).fetchone()
        return count < cap

    def rows(self, table: str, match: str, cap: int, holding: str | None = None) -> list[Row]:
        """The scope's first ``cap`` rows that ``match`` finds in the FTS ``table``; with
        ``holding``, only those whose text holds it exactly (ASCII case aside)."""
        if self._few_matches(table, match):
            member = "m.session_id IN (SELECT value FROM json_each(?))"
        else:
            member = f"+{table}.rowid IN ({_SCOPE_ROWS})"
        extra_where, extra = "", []
        if holding is not None:
            extra_where, extra = f" AND instr({_text_expr(self.filters)}, ?) > 0", [folded(holding)]
        where = f"{table} MATCH ? AND {member} AND {self.fsql}{extra_where}"
        return self.conn.execute(
            f"SELECT {_COLS} FROM {table} JOIN messages m ON m.id = {table}.rowid WHERE {where} LIMIT ?",
            [match, self.scope_json, *self.fparams, *extra, cap],
        ).fetchall()

    def scan(self, needles: list[str], cap: int, ids: tuple[int, int] | None = None) -> list[list[Row]]:
        """Per needle, the scope's first ``cap`` rows whose text holds it (ASCII case aside),
        found in one pass over the scope's rows; with ``ids`` (after, up_to), over those rows
        whose id is above ``after`` and up to ``up_to``."""
        text = _text_expr(self.filters)
        probes = [f"instr({text}, ?) > 0" for _ in needles]
        low = [folded(n) for n in needles]
        within, bounds = ("AND m.id > ? AND m.id <= ? ", list(ids)) if ids is not None else ("", [])
        rows = self.conn.execute(
            f"SELECT {_COLS}, {', '.join(probes)} FROM messages m "
            f"WHERE m.session_id IN (SELECT value FROM json_each(?)) {within}AND {self.fsql} "
            f"AND ({' OR '.join(probes)}) LIMIT ?",
            [*low, self.scope_json, *bounds, *self.fparams, *low, cap * len(needles)],
        ).fetchall()
        return [[r[:4] for r in rows if r[4 + i]][:cap] for i in range(len(needles))]


def holding(conn: sqlite3.Connection, ids: list[int], needle: str) -> set[int]:
    """Those of ``ids`` whose stored content holds ``needle`` (ASCII case aside)."""
    return {r[0] for r in conn.execute(
        "SELECT id FROM messages WHERE id IN (SELECT value FROM json_each(?)) AND instr(lower(content), ?) > 0",
        (json.dumps(ids), folded(needle))).fetchall()}


def texts(conn: sqlite3.Connection, ids: list[int]) -> dict[int, str]:
    """The text (``decode_content``) of each of ``ids`` still there, in one statement: for a few
    hundred messages of ordinary size (``read_content`` reads a huge one's beginning only)."""
    return {r[0]: decode_content(r[1]) for r in conn.execute(
        "SELECT id, content FROM messages WHERE id IN (SELECT value FROM json_each(?))", (json.dumps(ids),))}


# -- what the results show ------------------------------------------------------------------

@dataclass
class MessageRow:
    id: int
    session_id: str
    role: str
    text: str
    timestamp: float
    tool_name: str | None
    called: str | None = None  # the tools a message without text calls (``_called_sql``)

    @property
    def shown(self) -> str:
        """What a result shows of the message: its text or, for one that only calls tools, which."""
        return f"(calls {self.called})" if self.called and not self.text.strip() else self.text


def _message(conn: sqlite3.Connection, row: sqlite3.Row) -> MessageRow:
    return MessageRow(row["id"], row["session_id"], row["role"], read_content(conn, row["id"]),
                      row["timestamp"] or 0.0, row["tool_name"], row["called"])


# What ``str.strip`` takes off (every character below U+3001 that ``isspace``; none after): a text of only
# these is blank, as ``MessageRow.shown`` reads it. As a GLOB class, which none of them has a meaning in.
_BLANK = "".join(c for c in map(chr, range(0x3001)) if c.isspace())


def _called_sql(m: str) -> str:
    """The names of the tools the message ``m`` calls, when it has no text (Hermes keeps its calls as
    a JSON list of ``{"function": {"name", "arguments"}}``), joined by ", "; else NULL. A message that
    only calls a tool is found by its calls' arguments, as in Hermes's own index, and showed nothing.
    Names only: arguments may hold anything, a file's whole text among them. Calls that cannot be read
    (cut short, not a list, no name in them) are named by the row's ``tool_name``, else "a tool": such
    a message is found by their text all the same. Blank text is none: models send "\\n\\n" or a space
    beside their calls, and Hermes keeps it. The CASEs keep each JSON function from a value that is
    not JSON (SQLite evaluates a CASE's branches in order)."""
    calls = text_sql(f"{m}.tool_calls")
    unread = f"COALESCE(NULLIF({text_sql(f'{m}.tool_name')}, ''), 'a tool')"
    names = (f"(SELECT group_concat(name, ', ') FROM (SELECT CASE WHEN c.type = 'object' AND "
             f"json_type(c.value, '$.function.name') = 'text' THEN json_extract(c.value, '$.function.name') END "
             f"AS name FROM json_each({calls}) c) WHERE name != '')")
    return (f"CASE WHEN COALESCE({m}.content GLOB '*[^{_BLANK}]*', 0) OR COALESCE({calls}, '') = '' THEN NULL "
            f"WHEN NOT json_valid({calls}) THEN {unread} WHEN json_type({calls}) != 'array' THEN {unread} "
            f"WHEN json_array_length({calls}) = 0 THEN NULL ELSE COALESCE({names}, {unread}) END AS called")


_MESSAGE_COLS = (f"id, session_id, role, {seconds_sql('timestamp')} AS timestamp, {text_sql('tool_name')} AS tool_name, "
                 f"{_called_sql('m')}")


def fetch_messages(conn: sqlite3.Connection, ids: list[int],
                   live: tuple[Shape, tuple[str, ...]] | None = None) -> dict[int, MessageRow]:
    """The messages of ``ids`` still in state.db; with ``live`` (shape, roles), only those
    ``live_ids`` keeps, read in the same statement."""
    if not ids:
        return {}
    where, params = "", []
    if live is not None:
        where = f" AND {live[0].live_filter('m')} AND {_roles_sql(live[1])}"
        params = list(live[1])
    rows = conn.execute(
        f"SELECT {_MESSAGE_COLS} FROM messages m WHERE m.id IN (SELECT value FROM json_each(?)){where}",
        (_ids_json(ids), *params),
    )
    return {r["id"]: _message(conn, r) for r in rows.fetchall()}


def branch_originals(conn: sqlite3.Connection, shape: Shape, ids: Mapping[int, str], parents: Collection[str]
                     ) -> dict[int, tuple[int, str, float]]:
    """Of ``ids`` (message id -> its session), those a /branch copied from its parent, when the parent is
    one of ``parents``: each with the parent's own message it copies (its id, its session and its time).
    Hermes starts a branch (``_branched_from``, in the CLI, the TUI and the gateway alike) as a copy of
    the conversation so far, every message written anew in the branch, at the time of the branch. The
    parent's message is the first of its live ones of the same role and text; a copy whose original the
    parent no longer holds is none. The few sessions are asked first whether they are branches, the
    messages only of those that are: a search's hits are some hundred rows all over the file."""
    if not ids or not parents or "model_config" not in columns(conn, "sessions"):
        return {}
    branches = {r[0] for r in conn.execute(
        "SELECT id FROM sessions WHERE id IN (SELECT value FROM json_each(?)) "
        "AND instr(CAST(model_config AS TEXT), '_branched_from') > 0", (json.dumps(sorted(set(ids.values()))),))}
    copies = [m for m, sid in ids.items() if sid in branches]
    if not copies:
        return {}
    original = (f"(SELECT p.id FROM messages p WHERE p.session_id = s.parent_session_id AND p.role = b.role "
                f"AND p.content = b.content AND {shape.live_filter('p')} ORDER BY p.id LIMIT 1)")
    rows = conn.execute(
        f"WITH c(copy, original) AS (SELECT b.id, {original} FROM messages b JOIN sessions s ON s.id = b.session_id "
        "WHERE b.id IN (SELECT value FROM json_each(?))) "
        f"SELECT c.copy, o.id, o.session_id, {seconds_sql('o.timestamp')} FROM c JOIN messages o ON o.id = c.original",
        (_ids_json(copies),)).fetchall()
    # The parents are checked here, not passed in: a scope of many thousand sessions is one set already.
    return {int(r[0]): (int(r[1]), str(r[2]), float(r[3] or 0.0)) for r in rows if r[2] in parents}


def asked_at(conn: sqlite3.Connection, session_id: str, now: float) -> float | None:
    """When the session ``session_id`` asks (None: no such row, or no usable time): its latest message's
    time, as Hermes writes the user's turn before its agent calls a tool, or when it began, if later or
    it has none. A session resumed days after it began (``hermes -c``, ``/resume``, a chat a gateway keeps)
    asks at its latest turn, not at its start. A time after ``now``, the start's or a message's (a clock set
    wrong, milliseconds an importer wrote), is none: as the larger it would stand for every other, and
    "yesterday" read from the year 55000 is no day; ``<= ?`` also leaves out text and blobs, which SQLite
    sorts after every number."""
    try:
        row = conn.execute(
            "SELECT CASE WHEN started_at <= ?1 THEN " + seconds_sql("started_at") + " END, "
            "(SELECT max(timestamp) FROM messages WHERE session_id = sessions.id AND timestamp <= ?1) "
            "FROM sessions WHERE id = ?2", (now, session_id)).fetchone()
    except UnicodeEncodeError:  # a lone surrogate from a hostile caller: no UTF-8 row holds it
        return None
    times = [float(t) for t in row or () if t is not None]
    return max(times) if times else None


def from_then(conn: sqlite3.Connection, shape: Shape, session_ids: list[str], filters: Filters,
              spans: list[tuple[float, float]], limit: int) -> list[tuple[int, str, float]]:
    """The ``limit`` sessions of ``session_ids`` whose messages ``filters`` lets through hold one
    timed inside one of ``spans`` (``[start, end)``, seconds), the one with the latest such message
    first: per session, ``(message id, session id, its time)`` of its first such message, the
    user's if it has one. Each session's latest such message is one step back from the end of its
    messages by time in each span (``idx_messages_session``), and only the ``limit`` sessions chosen
    are read for their first, one step forward along it: reading every message from then, as a window over each session did,
    took 3 s for "last year" in a home of 1M messages (now 0.2 s). Numeric bounds on the raw column
    leave out text and blobs, which SQLite sorts after every number."""
    if not session_ids or not spans or limit <= 0:
        return []
    fsql, fparams = filters_sql(shape, filters)
    at = seconds_sql("m.timestamp")
    lo, hi = min(lo for lo, _ in spans), max(hi for _, hi in spans)

    def first(session: str, also: str) -> str:
        # Walked forward along the index from the earliest span's start: the first that qualifies ends it.
        return (f"(SELECT m.id FROM messages m WHERE m.session_id = {session} AND m.timestamp >= ? "
                f"AND m.timestamp < ? AND {fsql}{also} AND EXISTS (SELECT 1 FROM w WHERE {at} >= w.lo "
                f"AND {at} < w.hi) ORDER BY m.timestamp, m.id LIMIT 1)")

    rows = conn.execute(
        "WITH w(lo, hi) AS (SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(?)), "
        f"latest AS (SELECT s.value AS sid, (SELECT max((SELECT {at} FROM messages m WHERE m.session_id = s.value "
        f"AND m.timestamp >= w.lo AND m.timestamp < w.hi AND {fsql} ORDER BY m.timestamp DESC LIMIT 1)) FROM w) AS t "
        "FROM json_each(?) s), "
        "chosen AS (SELECT sid, t FROM latest WHERE t IS NOT NULL ORDER BY t DESC, sid LIMIT ?) "
        f"SELECT f.id, c.sid, {seconds_sql('f.timestamp')} FROM chosen c JOIN messages f ON f.id = "
        f"coalesce({first('c.sid', ' AND m.role = ?')}, {first('c.sid', '')}) ORDER BY c.t DESC, c.sid",
        (json.dumps([list(span) for span in spans]), *fparams, json.dumps(session_ids), limit,
         lo, hi, *fparams, "user", lo, hi, *fparams)).fetchall()
    return [(int(r[0]), str(r[1]), float(r[2])) for r in rows]


def fetch_sessions(conn: sqlite3.Connection, ids: list[str]) -> dict[str, dict]:
    if not ids:
        return {}
    rows = conn.execute(
        f"SELECT id, {text_sql('title')} AS title, started_at, {text_sql('source')} AS source FROM sessions "
        "WHERE id IN (SELECT value FROM json_each(?))",
        (json.dumps(sorted(set(ids))),),
    )
    return {r["id"]: {"title": r["title"] or "", "started_at": r["started_at"], "source": r["source"]} for r in rows}


def windows(conn: sqlite3.Connection, shape: Shape, anchors: list[MessageRow], size: int,
            roles: tuple[str, ...]) -> dict[int, list[MessageRow]]:
    """Each of ``anchors`` (by id) with up to ``size`` messages before and after it in its session,
    in the order Hermes keeps them (by id, as session_search opens a hit): a message whose time an
    importer garbled still has its real neighbours."""
    if not anchors:
        return {}
    pick = (f"SELECT x.id FROM messages x WHERE x.session_id = a.sid AND {shape.live_filter('x')} "
            f"AND {_roles_sql(roles, 'x')} AND ")
    cols = (f"a.aid AS anchor, m.id AS id, m.session_id AS session_id, m.role AS role, "
            f"{seconds_sql('m.timestamp')} AS timestamp, {text_sql('m.tool_name')} AS tool_name, {_called_sql('m')}")
    # Every window in one statement, each side bounded (a search opens ten): one statement per
    # window cost ~10 µs more each, and a response shows up to ``limit``.
    rows = conn.execute(
        "WITH a(sid, aid) AS (SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(?)) "
        f"SELECT {cols} FROM a JOIN messages m ON m.id IN ({pick}x.id < a.aid ORDER BY x.id DESC LIMIT ?) "
        f"UNION ALL SELECT {cols} FROM a JOIN messages m ON m.id IN ({pick}x.id > a.aid ORDER BY x.id LIMIT ?)",
        (json.dumps([[a.session_id, a.id] for a in anchors]), *roles, size, *roles, size)).fetchall()
    around: dict[int, list] = {a.id: [] for a in anchors}
    for r in rows:
        around[r["anchor"]].append(r)
    out = {}
    for a in anchors:
        near = sorted(around[a.id], key=lambda r: r["id"])
        out[a.id] = ([_message(conn, r) for r in near if r["id"] < a.id] + [a]
                     + [_message(conn, r) for r in near if r["id"] > a.id])
    return out


# -- what the indexes and a request for consent read ---------------------------------------

# The messages semantic search embeds, and a remote embedder would be sent.
_CONVERSATION = "role IN ('user', 'assistant')"


def session_ids(conn: sqlite3.Connection) -> set[str]:
    """Every session state.db holds."""
    return {r[0] for r in conn.execute(f"SELECT {text_sql('id')} FROM sessions")}


_INDEX_COLUMNS = f"id, role, {content_sql('content')}, tool_name, {prefix_sql('tool_calls')}, {seconds_sql('timestamp')}"


def index_rows(conn: sqlite3.Connection, sid: str, after_id: int, upto: int, limit: int) -> list[tuple]:
    """``(id, role, content, tool_name, tool_calls, timestamp)`` of the session's messages in
    ``(after_id, upto]``, at most ``limit``, in id order; content and tool calls as
    ``decode_content`` takes them, a timestamp that is no number as None."""
    return conn.execute(
        f"SELECT {_INDEX_COLUMNS} FROM messages WHERE session_id = ? AND id > ? AND id <= ? ORDER BY id LIMIT ?",
        (sid, after_id, upto, limit)).fetchall()


def _leaving_out(skip: Collection[int]) -> tuple[str, tuple]:
    """SQL that leaves out the messages ``skip`` names (their columns are never read), and its parameters."""
    return ("AND id NOT IN (SELECT value FROM json_each(?)) ", (json.dumps(list(skip)),)) if skip else ("", ())


def every_index_row(conn: sqlite3.Connection, sid: str, after_id: int, upto: int,
                    skip: Collection[int] = ()) -> Iterator[tuple]:
    """``index_rows`` of all the session's messages in ``(after_id, upto]`` but those of ``skip``,
    ``statedb.READ_BATCH`` per statement (``in_batches``)."""
    left_out, params = _leaving_out(skip)
    return in_batches(conn, f"SELECT {_INDEX_COLUMNS} FROM messages WHERE session_id = ? AND id <= ? {left_out}"
                            "AND id > ? ORDER BY id LIMIT ?", (sid, upto, *params), after_id)


def conversation_texts(conn: sqlite3.Connection, shape: Shape, sid: str, after_id: int,
                       upto: int, skip: Collection[int] = ()) -> list[tuple[int, str, float | None]]:
    """``(id, text, timestamp or None)`` of the session's user and assistant messages in
    ``(after_id, upto]`` that Hermes ever shows, rewound ones included, but those of ``skip``,
    ``statedb.READ_BATCH`` per statement: a long session in one statement would hold state.db's
    lock while all of it is read."""
    left_out, params = _leaving_out(skip)
    return [(r[0], decode_content(r[1]), r[2]) for r in in_batches(
        conn, f"SELECT id, {content_sql('content')}, {seconds_sql('timestamp')} FROM messages m "
              f"WHERE session_id = ? AND id <= ? AND {_CONVERSATION} AND {shape.shown_filter('m')} {left_out}"
              "AND id > ? ORDER BY id LIMIT ?", (sid, upto, *params), after_id)]


def texts_before(conn: sqlite3.Connection, shape: Shape, sid: str, upto: int, limit: int) -> list[str]:
    """The text of the session's last ``limit`` user and assistant messages up to id ``upto``
    that Hermes ever shows (as ``conversation_texts`` reads them), in id order."""
    rows = conn.execute(
        f"SELECT {content_sql('content')} FROM messages m WHERE session_id = ? AND id <= ? AND {_CONVERSATION} "
        f"AND {shape.shown_filter('m')} ORDER BY id DESC LIMIT ?", (sid, upto, limit)).fetchall()
    return [decode_content(content) for (content,) in reversed(rows)]


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
        f"SELECT count(*), sum((max(0, {length_sql('content')} - ?) + ? - 1) / ?) FROM messages "
        f"WHERE session_id = ? AND id > ? AND id <= ? AND {_CONVERSATION}",
        (size, step, step, sid, after_id, upto)).fetchone()
    return (row[0] or 0) + (row[1] or 0)


def conversation_size(conn: sqlite3.Connection, members: list[str]) -> dict:
    """``{"messages", "sessions", "characters"}`` of the user and assistant messages of
    ``members``."""
    row = conn.execute(
        f"SELECT count(*), count(DISTINCT session_id), coalesce(sum({length_sql('content')}), 0) FROM messages "
        f"WHERE session_id IN (SELECT value FROM json_each(?)) AND {_CONVERSATION}",
        (json.dumps(members),)).fetchone()
    return {"messages": int(row[0]), "sessions": int(row[1]), "characters": int(row[2])}
