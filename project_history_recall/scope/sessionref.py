"""Which session someone means: an id, an ``@session:`` link, or a title.

Users paste what they see: a session id, the ``link`` of a search result
(``@session:<profile>/<id>``, the form Hermes's desktop renders), or a title
from the sidebar. All lookups are read-only, in the active profile's
``state.db``; another profile's ``state.db`` is opened (read-only, as core
``session_search`` does) only to say where a session lives when it is not
in this one.
"""

from __future__ import annotations

import itertools
import json
import re
import sqlite3
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Collection

from ..errors import UsageError
from ..hermes import paths
from ..hermes.catalog import is_delegated, marked
from ..hermes.facts import SessionFacts
from ..hermes.projects import folded_name
from ..hermes.readonly import StateDBError, connect_readonly
from ..hermes.statedb import in_batches, text_sql

# "@session:<profile>/<id>" (desktop, core session_search) or "@session:<id>"
# (the original design), possibly with sentence punctuation after it.
_QUOTES = "\"'`“”‘’「」『』«»"
_LINK = re.compile(r"^@?session:(?:(?P<profile>[A-Za-z0-9_-]+)/)?(?P<id>[^\s/]+?)[.,;:!?)\]>" + _QUOTES + "]*$",
                   re.IGNORECASE)


class SessionRefError(UsageError):
    """The reference names no session of this profile (or several)."""

    codes = ("unknown_session", "ambiguous_session", "bad_argument", "other_profile")

    def __init__(self, message: str, code: str, candidates: list[dict] | None = None):
        super().__init__(message, code, candidates=candidates or [])


@dataclass(frozen=True)
class SessionRow:
    """The parts of a ``sessions`` row a move reads (and may rewrite: cwd, git)."""

    id: str
    title: str | None = None
    source: str | None = None
    cwd: str | None = None
    git_branch: str | None = None
    git_repo_root: str | None = None
    parent_session_id: str | None = None
    message_count: int = 0
    archived: bool = False
    delegated: bool = False  # a delegate_task subagent run (Hermes marks it in model_config)
    end_reason: str | None = None  # 'compression': the conversation went on in a child
    branched: bool = False  # a /branch of its parent (Hermes marks it in model_config)

    @property
    def facts(self) -> SessionFacts:
        return SessionFacts(self.id, self.cwd, self.git_repo_root, self.parent_session_id, self.message_count)


@dataclass(frozen=True)
class Ref:
    value: str
    profile: str | None = None  # the profile a link names
    is_link: bool = False


def parse(text: str) -> Ref:
    printable = "".join(ch for ch in str(text or "")[:2000] if unicodedata.category(ch)[0] != "C" or ch == " ")
    value = printable.strip().strip(_QUOTES).strip()
    match = _LINK.match(value)
    if match:
        return Ref(match.group("id"), match.group("profile"), True)
    return Ref(value)


_COLUMNS = ("id", "title", "source", "cwd", "git_branch", "git_repo_root", "parent_session_id",
            "message_count", "archived", "model_config", "end_reason")
_NUMBERS = ("id", "message_count", "archived")  # (and the key) read as they are; the rest as text


def _select(conn: sqlite3.Connection) -> str:
    have = {row[1] for row in conn.execute("PRAGMA table_info(sessions)")}
    return ", ".join(f"NULL AS {c}" if c not in have else c if c in _NUMBERS else f"{text_sql(c)} AS {c}"
                     for c in _COLUMNS)


def _row(values: sqlite3.Row | tuple) -> SessionRow:
    sid, title, source, cwd, branch, root, parent, count, archived, model_config, end_reason = tuple(values)
    return SessionRow(sid, title, source, cwd, branch, root, parent, int(count or 0), bool(archived),
                      is_delegated(source, model_config), end_reason, marked(model_config, "_branched_from"))


def fetch(conn: sqlite3.Connection, session_id: str) -> SessionRow | None:
    try:
        row = conn.execute(f"SELECT {_select(conn)} FROM sessions WHERE id = ?", (session_id,)).fetchone()
    except UnicodeEncodeError:  # a lone surrogate from a hostile caller: no UTF-8 row holds it
        return None
    return _row(row) if row else None


# Hermes's longest title (``SessionDB.MAX_TITLE_LENGTH``): a longer query is no title.
TITLE_CHARS = 100
# The sessions a refusal lists when a title names several (one more is read, to tell that they are).
_LISTED = 10


def _by_title(conn: sqlite3.Connection, title: str) -> list[SessionRow]:
    """Sessions with this title: exactly, else ignoring case, else the titles it begins (what a person
    remembers of a long title; more than one is ambiguous, as with equal titles)."""
    select = _select(conn)
    exact = conn.execute(f"SELECT {select} FROM sessions WHERE title = ?", (title,)).fetchall()
    if exact:
        return [_row(r) for r in exact]
    folded = folded_name(title)
    titled = [(sid, folded_name(t)) for sid, t in _titles(conn)]
    ids = [sid for sid, t in titled if t == folded] or [sid for sid, t in titled if t.startswith(folded)]
    # Only the first few are listed when several match (``_listed``); one more tells that they are several.
    rows = conn.execute(f"SELECT {select} FROM sessions WHERE id IN (SELECT value FROM json_each(?))",
                        (json.dumps(ids[:_LISTED + 1]),)).fetchall()
    order = {sid: i for i, sid in enumerate(ids)}
    return sorted((_row(r) for r in rows), key=lambda row: order[row.id])


def titled(conn: sqlite3.Connection, text: str, among: Collection[str]) -> str | None:
    """The session of ``among`` that ``text`` names by its title, as Hermes's own session_search reads a
    query (``SessionDB.resolve_session_by_title``): the latest of its numbered continuations ("title #2",
    the title Hermes gives a conversation that goes on after compression) where there are any, else the
    one with that title, in its case before in any other (``_case_ranges``)."""
    ref = parse(text)
    if ref.is_link or not ref.value or len(ref.value) > TITLE_CHARS:
        return None
    ranges = _case_ranges(ref.value)
    # Ranges along Hermes's index of titles (tens of microseconds): one pass over the whole index, to fold
    # every title's case, cost 1-2 ms a search at 20,000 sessions. The index is partial (``title IS NOT
    # NULL``), so SQLite uses it only where the query says so; and ordered by the bare column, SQLite
    # walked the index of start times instead, every session (25 ms at 20,000): ``+`` keeps it off that.
    where = " OR ".join(["(title >= ? AND title <= ?)"] * len(ranges))
    try:
        rows = conn.execute(f"SELECT id, {text_sql('title')} FROM sessions WHERE title IS NOT NULL AND ({where}) "
                            "ORDER BY +started_at DESC", [bound for r in ranges for bound in r]).fetchall()
    except UnicodeEncodeError:  # a lone surrogate from a hostile caller: no UTF-8 title holds it
        return None
    continued = re.compile(re.escape(ref.value) + r" #\d+", re.IGNORECASE)

    def rank(title: str) -> int | None:
        if continued.fullmatch(title):
            return 0
        return 1 if title == ref.value else 2 if title.lower() == ref.value.lower() else None  # "X #a": none

    ranked = sorted((place, n, sid) for n, (sid, title) in enumerate(rows)
                    if sid in among and (place := rank(title)) is not None)
    return ranked[0][2] if ranked else None


CASE_PREFIX = 5  # cased characters spelled out in every case: at most 2**5 ranges a lookup


def _case_ranges(title: str) -> list[tuple[str, str]]:
    """Ranges of Hermes's title index that hold ``title`` and its continuations ("title #2") in every
    case, so a title typed from memory in other letters' case ("release checklist for API" for "Release
    checklist for API") is found. The first ``CASE_PREFIX`` cased characters are spelled out in each case;
    after them, every casing of the rest lies between its characters' smaller and larger case forms,
    by code point, so one range a prefix holds them (with other titles, which the caller's check drops)."""
    # A character whose other case is not one character ("ß" → "SS") is kept as typed.
    forms = [sorted({c.lower(), c.upper()}) if len(c.lower()) == len(c.upper()) == 1 else [c] for c in title]
    cased = [n for n, f in enumerate(forms) if len(f) > 1][:CASE_PREFIX]
    split = cased[-1] + 1 if cased else 0
    low_rest = "".join(f[0] for f in forms[split:])
    high_rest = "".join(f[-1] for f in forms[split:])
    return [("".join(head) + low_rest, "".join(head) + high_rest + " $")
            for head in itertools.product(*forms[:split])]


def _titles(conn: sqlite3.Connection) -> list[tuple[str, str]]:
    """Every titled session's (id, title), ``statedb.READ_BATCH`` rows a statement: one statement over the
    whole table would hold ``state.db``'s lock (and Hermes 0.22's writer on a rollback journal) while
    the titles are folded."""
    return [(sid, t) for _rowid, sid, t in in_batches(
        conn, f"SELECT rowid, id, {text_sql('title')} FROM sessions WHERE title IS NOT NULL AND rowid > ? ORDER BY rowid "
        "LIMIT ?")]


def _other_profile_holding(home: Path, session_id: str) -> str | None:
    """The name of another profile of this Hermes install whose state.db has ``session_id``."""
    root = home.parent.parent if home.parent.name == "profiles" else home
    homes = [("default", root)]
    try:
        homes += sorted((d.name, d) for d in (root / "profiles").iterdir() if d.is_dir())
    except OSError:
        pass
    mine = paths.state_db_path(home).resolve()
    for name, other in homes:
        db = paths.state_db_path(other)
        if not db.is_file() or db.resolve() == mine:
            continue
        try:
            conn = connect_readonly(db, timeout_ms=500)
        except StateDBError:
            continue
        try:
            if conn.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone():
                return name
        except sqlite3.Error:
            continue
        finally:
            conn.close()
    return None


def _listed(rows: list[SessionRow], profile: str) -> list[dict]:
    return [{"session_id": r.id, "title": r.title, "link": f"@session:{profile}/{r.id}"} for r in rows[:_LISTED]]


def _one_conversation(conn: sqlite3.Connection, rows: list[SessionRow]) -> list[SessionRow]:
    """``rows`` (the sessions a title names), or only the first when they are all parts of one
    conversation Hermes compressed: it titles each part after the first with the first's title,
    numbered ('Long talk', 'Long talk #2'), and the conversation moves whole whichever part is named.
    Past ``_LISTED`` not every match was read, so they stay several."""
    if len(rows) < 2 or len(rows) > _LISTED:
        return rows
    parts = {rows[0].id, *compression_parts(conn, rows[0].id)}
    return rows[:1] if all(r.id in parts for r in rows) else rows


def find(conn: sqlite3.Connection, home: Path, text: str) -> SessionRow:
    """The session ``text`` names in this profile, or a ``SessionRefError`` saying why not."""
    ref = parse(text)
    if not ref.value:
        raise SessionRefError("'session' is empty: give a session id, an @session: link or a title.", "bad_argument")
    row = fetch(conn, ref.value)
    if row is not None:
        return row  # ids are unique across profiles, whatever a link's label says
    profile = paths.profile_name(home)
    if not ref.is_link:
        titled = _one_conversation(conn, _by_title(conn, ref.value))
        if len(titled) == 1:
            return titled[0]
        if titled:
            raise SessionRefError(f"Several sessions have a title starting '{ref.value}'; use the session id.",
                                  "ambiguous_session", _listed(titled, profile))
    linked = ref.profile if ref.profile and ref.profile != profile else None
    elsewhere = linked or _other_profile_holding(home, ref.value)
    if elsewhere:
        where = "The link points to" if linked else f"Session '{ref.value}' is in"
        raise SessionRefError(
            f"{where} profile '{elsewhere}', not this profile ('{profile}'). Sessions move between projects "
            f"of their own profile only: run this in profile '{elsewhere}'.",
            "other_profile",
        )
    raise SessionRefError(
        f"No session '{ref.value}' in this profile (looked for a session id, an @session: link and a title).",
        "unknown_session",
    )


def conversation_of(conn: sqlite3.Connection, row: SessionRow) -> SessionRow:
    """The user's conversation behind ``row``: a subagent run maps to the session that delegated it."""
    seen = {row.id}
    while row.delegated and row.parent_session_id and row.parent_session_id not in seen:
        parent = fetch(conn, row.parent_session_id)
        if parent is None:
            break
        seen.add(parent.id)
        row = parent
    return row


# Hermes follows a compression chain at most this far (``SessionDB.get_compression_tip``).
_CHAIN_LIMIT = 100


def _continues(row: SessionRow) -> bool:
    """Whether a child of a session that ended with 'compression' continues its conversation, as Hermes
    tells one: not a /branch, a subagent run or a tool's session."""
    return not (row.source == "tool" or row.delegated or row.branched)


def compression_parts(conn: sqlite3.Connection, session_id: str) -> list[str]:
    """The other sessions of ``session_id``'s conversation where Hermes compressed it the legacy way:
    each part ended with ``end_reason = 'compression'`` and went on in a child. Hermes's sidebar lists
    the chain once, grouped by its latest part's folder. Root first; none for a state.db without those
    columns (read as NULL)."""
    root = fetch(conn, session_id)
    if root is None:
        return []
    seen = {root.id}
    while len(seen) < _CHAIN_LIMIT and root.parent_session_id and _continues(root):
        parent = fetch(conn, root.parent_session_id)
        if parent is None or parent.end_reason != "compression" or parent.id in seen:
            break
        root = parent
        seen.add(root.id)
    chain, ended = [root.id], [root] if root.end_reason == "compression" else []
    select = _select(conn)
    while ended and len(chain) < _CHAIN_LIMIT:
        children = conn.execute(f"SELECT {select} FROM sessions WHERE parent_session_id = ? ORDER BY rowid",
                                (ended.pop(0).id,)).fetchall()
        for child in map(_row, children):
            if child.id not in chain and _continues(child):
                chain.append(child.id)
                if child.end_reason == "compression":
                    ended.append(child)
    return [sid for sid in chain[:_CHAIN_LIMIT] if sid != session_id]
