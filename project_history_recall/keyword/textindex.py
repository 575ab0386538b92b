"""``keywords.db``: the plugin's own keyword index of a Hermes home's messages.

Hermes's indexes answer most terms, but not all of them well:

- Chinese words are mostly one or two characters, which Hermes's trigram
  index cannot find, so a Chinese question had to read the whole scope;
- ranking needs each term's messages *within the project*, and Hermes's
  indexes list them across the whole home (a common word's list is long);
- text is stored as typed: list content as escaped JSON, compatibility
  forms (``ＡＰＩ``, ``ﬁle``) and case as they were.

So the plugin keeps a derived index in its data folder, never in
``state.db``, rebuildable from it at any time:

- **Tokens** (``tokens``): text decoded and normalised (``textfold.normalise``:
  NFKC, case folded, invisible breaks deleted, Turkish i's made one);
  words (letters and digits) as themselves; every run of CJK characters (and of
  Thai, Lao, Burmese or Khmer, written without spaces too) as
  its overlapping bigrams followed by its characters, so a word of any
  length is a token (one or two characters) or a phrase of bigrams; emoji
  as tokens. Segmentation-free: nothing depends on a dictionary.
- **Rows**: one per message, FTS5 without a copy of the text
  (``content=''``), columns ``body`` (the message) and ``extra`` (tool name
  and calls). The rowid packs ``slot << 43 | tool << 42 | ordinal << 21 |
  seq``: the *slot* is the project the session was in when first indexed,
  so a project's rows are one rowid range that FTS5 seeks to directly and a
  term's lookup costs its matches in the project, not in the home;
  ``ordinal`` names the session (a session attributed elsewhere later is
  still found, through its own slot); ``seq`` counts its messages.
- **Keeping up**, before a search: the scope's sessions are compared with
  state.db by ``(count(*), max(id))`` (one index-only query). New messages
  are appended; a session that lost messages gets a new ordinal and is
  indexed again (FTS5 cannot delete contentless rows, so the old rows stay
  behind, unreachable, until the index is rebuilt when they pile up, as a process
  opens it). Small
  updates are done inline; a first build runs in a background thread while
  searches use Hermes's indexes. A text edited in place (the row count and
  last id unchanged) is told by its digest (``digest``) among the rows Hermes
  may still rewrite (``changes.edit_windows``; ``index`` on the command line
  checks every row), and its session indexed again; elsewhere by its
  length, when a search reads it
  (``engine._OwnIndex.outdated``): its session is marked to redo (``mark_dirty``),
  or, another process holding the file's write lock past the search's budget, its redo
  queued for the background (``Rewritten``).
- **Merging**, after a build or some of searches' small updates (the
  background thread's idle time, the ``index`` command): FTS5's segments, one
  a commit, merged in small committed steps until no level holds two, as a
  term's lookup seeks every segment; an index merged since its last commit is
  left alone.

Whether a message is still live (not rewound, not hidden), and its role
and time, are checked against state.db when results are read.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import re
import sqlite3
import time
from contextlib import closing
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Callable

from ..background import Step, Stop, Worker
from ..files import derived
from ..hermes.changes import BigRows, Change, Once, SessionState, changes, edit_windows, is_big
from ..hermes.messages import every_index_row, index_rows
from ..hermes.paths import state_db_path
from ..hermes.readonly import StateDBError
from ..hermes.statedb import READ_BATCH, decode_content, reading, seconds_sql
from ..home import Home
from ..textfold import normalise
from . import cjk
from .lengths import Lengths, PerSession
from .querytext import fts_quote

if TYPE_CHECKING:
    import numpy as np

logger = logging.getLogger(__name__)

FILE_NAME = "keywords.db"
SCHEMA_VERSION = 3
# Bump when ``tokens`` changes: the index is then rebuilt.
TOKENIZER_VERSION = "5"
# The ``meta`` values a keywords.db of this version holds besides its schema version: one of another
# tokenizer is another version's (``derived``).
STAMPS = MappingProxyType({"tokenizer": TOKENIZER_VERSION})

# Letters, digits, private use and symbols (emoji) are token characters.
TOKENIZE = "unicode61 categories 'L* N* Co So'"
_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS slots (slot INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE);
CREATE TABLE IF NOT EXISTS sessions (
    session_id TEXT PRIMARY KEY,
    ordinal INTEGER NOT NULL UNIQUE,
    slot INTEGER NOT NULL,
    next_seq INTEGER NOT NULL DEFAULT 0,
    indexed_max_id INTEGER NOT NULL DEFAULT 0,
    seen_count INTEGER NOT NULL DEFAULT 0,
    seen_max_id INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS docs (
    rowid INTEGER PRIMARY KEY, message_id INTEGER NOT NULL, length INTEGER NOT NULL, timestamp REAL,
    digest INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS words (word TEXT PRIMARY KEY) WITHOUT ROWID;
CREATE VIRTUAL TABLE IF NOT EXISTS text USING fts5(
    body, extra, content='', columnsize=0, tokenize="{TOKENIZE}");
"""

SLOT_SHIFT, TOOL_BIT, ORDINAL_SHIFT = 43, 1 << 42, 21
MAX_ORDINAL = (1 << 21) - 1
MAX_SEQ = (1 << 21) - 1
# A search indexes up to this many new messages itself (~50 µs each); more
# go to the background and the search uses Hermes's indexes meanwhile.
INLINE_ROWS = 1000
BATCH_ROWS = READ_BATCH  # messages per committed batch in the background
PREFIX_WORDS = 32  # words a prefix ("paint*") stands for, at most
# Rows read out of FTS5 in the time one lookup takes before its first row (it seeks the term in every
# segment of the index: ~0.1 ms at 1M messages, against ~0.5 µs a row).
ROWS_PER_LOOKUP = 200
# Rows of retired ordinals left in the index; past this (and half the live
# rows) the index is rebuilt from scratch when a process next opens it.
GARBAGE_LIMIT = 100_000
# FTS5 keeps the index as segments (b-trees) in levels and merges a level's segments once it holds
# four, a little per write: a large build leaves ~20 (21 at 1M messages), and a lookup seeks its term
# in each (~0.14 ms before its first row at 21). After a build the keeper merges until no level holds
# two (4 segments are left at 1M, as fast to search as one), MERGE_PAGES pages a transaction (~30 ms,
# 138 of them at 1M), so another writer of the file, or a search of this process, waits one step at most.
MERGE_PAGES = 250
MERGE_STEPS = 2_000  # steps a merge takes at most before it leaves the rest for the next
# A search's own small updates (a segment a commit) are merged by the keeper's thread once this many
# commits went unmerged. Merging after every one goes through the big segment a build left far more
# often: after 256 small updates of a 300k-message index, 6.7 s of merging (3 merges through the big
# segment) against 1.6 s (1) at 16. Left unmerged they made 21 segments, and the updates themselves
# took 0.68 s against 0.43 s (FTS5 merges a little inside each write, in the search's time).
MERGE_AFTER_COMMITS = 16

# -- tokens ---------------------------------------------------------------------------

_EMOJI = "\u2300-\u23ff\u2600-\u27bf\u2b00-\u2bff\U0001f000-\U0001faff"
# A CJK run or one emoji, kept in the split; words are what lies between.
_CJK_OR_EMOJI = re.compile(f"([{cjk.CJK}]+|[{_EMOJI}])")
_ONE_EMOJI = re.compile(f"[{_EMOJI}]$")
_WORD = re.compile(r"[^\W_]+")
# ASCII punctuation (and "_") separates words, as in unicode61: for ASCII text a
# translate and a split are several times faster than a regex.
_ASCII_GAPS = {c: " " for c in range(128) if not chr(c).isalnum()}


def _words(part: str) -> list[str]:
    return part.translate(_ASCII_GAPS).split() if part.isascii() else _WORD.findall(part)


def _pieces(text: str):
    """(kind, piece) in order: "word", "cjk" (a whole run) or "emoji"."""
    if text.isascii():
        for word in _words(text):
            yield "word", word
        return
    for i, part in enumerate(_CJK_OR_EMOJI.split(text)):
        if i % 2:
            yield ("emoji" if _ONE_EMOJI.match(part) else "cjk"), part
        else:
            for word in _words(part):
                yield "word", word


def tokens(text: str) -> list[str]:
    """The index's tokens of already normalised text (see the module's docstring)."""
    out: list[str] = []
    for kind, piece in _pieces(text):
        if kind == "cjk":
            out.extend([piece[i: i + 2] for i in range(len(piece) - 1)])
            out.extend(piece)
        else:
            out.append(piece)
    return out


def match_for(text: str) -> str | None:
    """The FTS5 query that finds ``text`` (already normalised) as the index stores it,
    or None when it has no token the index keeps (punctuation only, say)."""
    parts: list[str] = []
    for kind, piece in _pieces(text):
        # A run's bigrams in a row are exactly its substrings of 2+ characters.
        parts.append(" ".join(piece[i: i + 2] for i in range(len(piece) - 1)) if kind == "cjk" and len(piece) > 1
                     else piece)
    return fts_quote(" ".join(parts)) if parts else None


def index_texts(content: object, tool_name: object, tool_calls: object) -> tuple[str, str, int]:
    """(body, extra, the text's length in characters) of one message, as stored in the index."""
    text = normalise(decode_content(content))
    extra = " ".join(tokens(normalise(f"{tool_name or ''} {decode_content(tool_calls)}")))
    return " ".join(tokens(text)), extra, len(text)


def digest(content: object, tool_name: object, tool_calls: object) -> int:
    """A message's columns as ``index_rows`` reads them, in 64 bits: what tells a row rewritten in
    place from the one indexed, whatever its length (hashed, not tokenised: ~1 µs a message)."""
    h = hashlib.blake2b(digest_size=8)
    for part in (content, tool_name, tool_calls):
        h.update(part if isinstance(part, bytes) else str(part).encode("utf-8", "surrogatepass"))
        h.update(b"\0")
    return int.from_bytes(h.digest(), "big", signed=True)


def words_of(body: str) -> set[str]:
    """The Latin-script words among a body's tokens (prefix queries look them up)."""
    return {t for t in body.split() if t[0].isascii()}


# -- the store ---------------------------------------------------------------------------

@dataclass
class KeywordState(SessionState):
    """A session's progress, and where its rows sit (see the rowid in the module's docstring)."""

    ordinal: int = 0
    slot: int = 0
    next_seq: int = 0


_STATE_COLUMNS = ", ".join(field.name for field in dataclasses.fields(KeywordState))


@dataclass
class Rewritten(Change):
    """A redo of a session holding a row rewritten in place since it was indexed: due whatever the
    session's counts say (its mark, ``mark_dirty``, may not have been written: another process held
    the file), unless the session was indexed again since (its ordinal is no longer ``ordinal``)."""

    ordinal: int = 0


def progress(current: int, sessions: int) -> dict:
    """How far a scope is, ``current`` of its ``sessions`` members, as ``status`` and a search
    response's ``keyword_index`` say."""
    return {"sessions": sessions, "sessions_indexed": current}


@dataclass(frozen=True)
class Pending:
    """A scope not current in the index, its work left to the background: ``current`` of its
    ``sessions`` members are; ``locked``: another process held the file's write lock; ``queued``:
    the work was handed to the background (False: ``Keeper.report`` only looked)."""

    current: int
    sessions: int
    locked: bool = False
    queued: bool = True

    def why(self) -> str:
        """What a person reads, after "keyword index "."""
        if self.locked:
            return "is locked by another process"
        if not self.queued:
            return (f"is built for {self.current:,} of {self.sessions:,} sessions: the next search builds the "
                    "rest in the background, or run the 'index' command")
        return f"is being built ({self.current:,} of {self.sessions:,} sessions)"

    def counts(self) -> dict:
        return progress(self.current, self.sessions)


def another_version(path: Path) -> str | None:
    """Why the ``keywords.db`` at ``path`` is started afresh by the next process that opens it for
    use (another version laid it out, or made its tokens another way), or None; opening it
    changes nothing (``status``)."""
    return derived.laid_out_by_another(path, SCHEMA_VERSION, STAMPS)


class TextIndex(derived.DerivedFile):
    """One keywords.db."""

    def __init__(self, path: Path):
        # A file of another tokenizer is another version's: rebuilt, unless a process of that version
        # still has it open (one started before an upgrade), which keeps it until it ends.
        super().__init__(path, _SCHEMA, SCHEMA_VERSION, STAMPS)
        self._settled: tuple[int, int] | None = None  # the file's commits when a merge found nothing left
        self._check_fresh()

    def _check_fresh(self) -> None:
        """Start afresh for a file stamped with no tokenizer (older than the stamp; one of another
        tokenizer is another version's, which ``derived`` rebuilds), or when unreachable rows have piled up: FTS5 cannot
        delete a contentless row without its text, so only a rebuild reclaims them. Checked as a
        process opens the file; the searches meanwhile use Hermes's indexes, as on a first build."""
        with self.using() as conn:
            meta = dict(conn.execute("SELECT key, value FROM meta WHERE key IN ('tokenizer', 'garbage')").fetchall())
            garbage = int(meta.get("garbage") or 0)
            piled = garbage > GARBAGE_LIMIT and garbage > (
                conn.execute("SELECT coalesce(sum(next_seq), 0) FROM sessions").fetchone()[0] / 2)
        if meta.get("tokenizer") != TOKENIZER_VERSION or piled:  # none stored: older than the stamp
            self._reset()

    def _reset(self) -> None:
        """Start the index afresh (a new tokenizer, or too many unreachable rows)."""
        def _do(conn: sqlite3.Connection):
            for table in ("slots", "sessions", "docs", "words"):
                conn.execute(f"DELETE FROM {table}")
            conn.execute("INSERT INTO text(text) VALUES ('delete-all')")
            conn.execute("DELETE FROM meta WHERE key != 'schema_version'")
            conn.execute("INSERT INTO meta VALUES ('tokenizer', ?)", (TOKENIZER_VERSION,))

        self.transaction(_do)

    # -- reads --------------------------------------------------------------------------
    def states(self, session_ids: list[str]) -> dict[str, KeywordState]:
        with self.using() as conn:
            rows = conn.execute(
                f"SELECT {_STATE_COLUMNS} FROM sessions WHERE session_id IN (SELECT value FROM json_each(?))",
                (json.dumps(session_ids),)).fetchall()
        return {r[0]: KeywordState(*r) for r in rows}

    def rowids(self, match: str, ranges: list[tuple[int, int]], limit: int) -> list[int]:
        """Rowids holding ``match`` within ``ranges``, at most ``limit`` per range."""
        out: list[int] = []
        with self.using() as conn:
            for low, high in ranges:
                out.extend(chain.from_iterable(conn.execute(
                    "SELECT rowid FROM text WHERE text MATCH ? AND rowid BETWEEN ? AND ? LIMIT ?",
                    (match, low, high, limit))))  # rows of one column, unpacked in C
        return out

    def words_from(self, prefix: str, limit: int) -> list[str]:
        """Indexed words that start with ``prefix`` (FTS5 would read every row of
        every such word in the whole index; a lookup here costs microseconds)."""
        with self.using() as conn:
            return [r for (r,) in conn.execute(
                "SELECT word FROM words WHERE word >= ? AND word < ? LIMIT ?", (prefix, prefix + "\U0010ffff", limit))]

    def count(self, match: str, ranges: list[tuple[int, int]]) -> int:
        with self.using() as conn:
            return sum(conn.execute(
                "SELECT count(*) FROM text WHERE text MATCH ? AND rowid BETWEEN ? AND ?", (match, low, high)
            ).fetchone()[0] for low, high in ranges)

    def within(self, rowids: list[int], since: float | None, until: float | None) -> list[int]:
        """Those of ``rowids`` whose message was written in [since, until)."""
        # Only the bounds given: a time past any stand-in bound (1e300, inf) is still a time.
        bounds = [(op, value) for op, value in ((">=", since), ("<", until)) if value is not None]
        with self.using() as conn:
            return [r for (r,) in conn.execute(
                "SELECT rowid FROM docs WHERE rowid IN (SELECT value FROM json_each(?)) "
                + "".join(f"AND {seconds_sql('timestamp')} {op} ? " for op, _ in bounds),
                (json.dumps(rowids), *(value for _, value in bounds)))]

    def docs(self, rowids: list[int]) -> dict[int, tuple[int, int, float | None]]:
        """rowid -> (message id, length, timestamp)."""
        if not rowids:
            return {}
        with self.using() as conn:
            rows = conn.execute(f"SELECT rowid, message_id, length, {seconds_sql('timestamp')} FROM docs WHERE rowid IN "
                                "(SELECT value FROM json_each(?))", (json.dumps(rowids),)).fetchall()
        return {r[0]: (r[1], r[2], r[3]) for r in rows}

    def digests(self, st: KeywordState, after: int) -> dict[int, int]:
        """Message id -> ``digest`` of the session's indexed messages after id ``after``."""
        base = (st.slot << SLOT_SHIFT) | (st.ordinal << ORDINAL_SHIFT)
        out: dict[int, int] = {}
        with self.using() as conn:
            for start in (base, base | TOOL_BIT):
                # Each range holds its rows in id order: read from its end back to ``after``, not the whole session.
                with closing(conn.execute("SELECT message_id, digest FROM docs WHERE rowid BETWEEN ? AND ? "
                                          "ORDER BY rowid DESC", (start, start + MAX_SEQ))) as rows:
                    for mid, value in rows:
                        if mid <= after:
                            break
                        out[mid] = value
        return out

    def lengths(self, ranges: list[tuple[int, int]]) -> list[int]:
        """The lengths of the messages within ``ranges`` (rowids)."""
        with self.using() as conn:
            return [n for low, high in ranges for (n,) in conn.execute(
                "SELECT length FROM docs WHERE rowid BETWEEN ? AND ?", (low, high))]

    def doc_arrays(self, rowids: "np.ndarray") -> tuple["np.ndarray", "np.ndarray", "np.ndarray"]:
        """Per rowid of ``rowids`` (sorted, unique): message ids, lengths and timestamps (as
        ``docs`` has them; a rowid without a record: -1, 0, 0.0, and no timestamp: 0.0), as
        arrays. A search asks this of thousands of candidates: numpy takes the rows whole."""
        import numpy as np

        ids = np.full(len(rowids), -1, dtype=np.int64)
        lengths, timestamps = np.zeros(len(rowids)), np.zeros(len(rowids))
        if not len(rowids):
            return ids, lengths, timestamps
        with self.using() as conn:
            rows = conn.execute(
                f"SELECT rowid, message_id, length, coalesce({seconds_sql('timestamp')}, 0.0) FROM docs "
                "WHERE rowid IN (SELECT value FROM json_each(?))", (json.dumps(rowids.tolist()),)).fetchall()
        found = np.array(rows, dtype=[("rowid", np.int64), ("id", np.int64), ("length", np.float64),
                                      ("timestamp", np.float64)])
        at = np.searchsorted(rowids, found["rowid"])
        ids[at], lengths[at], timestamps[at] = found["id"], found["length"], found["timestamp"]
        return ids, lengths, timestamps

    # -- writes ---------------------------------------------------------------------------
    def _slot(self, conn: sqlite3.Connection, scope_key: tuple) -> int:
        key = json.dumps(scope_key)  # the one name a scope's slot goes by
        row = conn.execute("SELECT slot FROM slots WHERE key = ?", (key,)).fetchone()
        if row:
            return row[0]
        slot = conn.execute("INSERT INTO slots (key) VALUES (?)", (key,)).lastrowid
        assert slot is not None  # set by the INSERT just run
        return slot

    def _next_ordinal(self, conn: sqlite3.Connection) -> int:
        row = conn.execute("SELECT value FROM meta WHERE key = 'next_ordinal'").fetchone()
        ordinal = int(row[0]) if row else 1
        if ordinal > MAX_ORDINAL:
            raise derived.StoreError("the keyword index ran out of session numbers; it is rebuilt")
        conn.execute("INSERT OR REPLACE INTO meta VALUES ('next_ordinal', ?)", (str(ordinal + 1),))
        return ordinal

    def _add_garbage(self, conn: sqlite3.Connection, rows: int) -> None:
        row = conn.execute("SELECT value FROM meta WHERE key = 'garbage'").fetchone()
        conn.execute("INSERT OR REPLACE INTO meta VALUES ('garbage', ?)", (str((int(row[0]) if row else 0) + rows),))

    def merge(self, go_on: Callable[[], bool] = lambda: True, steps: int = MERGE_STEPS) -> int:
        """Merge the index's segments until no level holds two, ``steps`` at most, while ``go_on()``;
        returns the steps that merged anything. Each step is its own transaction: stopped between
        steps (or failing within one, which rolls it back) the index is whole, and the next merge
        goes on where this one left off. Once a merge found nothing left, the next ones write
        nothing (not even a step that merges nothing) until something commits to the file."""
        if self._settled == self.commits():
            return 0
        self._merge_pairs()
        done = 0
        while done < steps and go_on():
            # The lock: no other thread of this process commits between the step and the stamp (a
            # process committing in that instant has its own keeper, which merges what it wrote).
            with self.lock:
                if not self.transaction(self._merge_step):
                    self._settled = self.commits()
                    break
            done += 1
        return done

    def _merge_pairs(self) -> None:
        """Let FTS5's 'merge' command take a level of two segments (its default waits for four).
        A setting of the file, written once."""
        with self.using() as conn:
            if conn.execute("SELECT 1 FROM text_config WHERE k = 'usermerge' AND v = 2").fetchone():
                return
        self.transaction(lambda conn: conn.execute("INSERT INTO text(text, rank) VALUES ('usermerge', 2)"))

    @staticmethod
    def _merge_step(conn: sqlite3.Connection) -> bool:
        before = conn.total_changes
        conn.execute("INSERT INTO text(text, rank) VALUES ('merge', ?)", (MERGE_PAGES,))
        return conn.total_changes - before >= 2  # FTS5's sign that it merged something

    def unmerged(self) -> int:
        """Commits through this object since a merge last found nothing left (or since it opened the file)."""
        return self.writes - (self._settled[1] if self._settled else 0)

    def garbage(self) -> int:
        with self.using() as conn:
            row = conn.execute("SELECT value FROM meta WHERE key = 'garbage'").fetchone()
        return int(row[0]) if row else 0

    def write(self, work: Change, key: tuple, rows: list[tuple], *, first: bool, complete: bool,
              wait: float = derived.LOCK_WAIT) -> None:
        """Add one batch of a session's messages ``(id, role, content, tool_name,
        tool_calls, timestamp)`` in id order, and the session's progress, in one transaction.

        ``first``: the first batch of ``work`` (a reindex retires the old rows
        there); ``complete``: the last (the session is then current as of
        ``work.seen``); ``wait``: at most this long for another process's write lock."""
        def _do(conn: sqlite3.Connection):
            row = conn.execute(f"SELECT {_STATE_COLUMNS} FROM sessions WHERE session_id = ?",
                               (work.session_id,)).fetchone()
            st = KeywordState(*row) if row else None
            if st is not None and (st.seen_count, st.seen_max_id) == work.seen and not (
                    first and isinstance(work, Rewritten) and work.ordinal == st.ordinal):
                return  # another thread or process did this already
            if st is None or (first and work.kind == "redo"):
                if st is not None:
                    self._add_garbage(conn, st.next_seq)
                st = KeywordState(work.session_id, ordinal=self._next_ordinal(conn), slot=self._slot(conn, key))
            base = (st.slot << SLOT_SHIFT) | (st.ordinal << ORDINAL_SHIFT)
            texts, docs, words = [], [], set()
            for mid, role, content, tool_name, tool_calls, ts in rows:
                if mid <= st.indexed_max_id or st.next_seq > MAX_SEQ:
                    continue  # done already; or two million messages in one session
                rowid = base | (TOOL_BIT if role == "tool" else 0) | st.next_seq
                body, extra, length = index_texts(content, tool_name, tool_calls)
                texts.append((rowid, body, extra))
                docs.append((rowid, mid, length, ts, digest(content, tool_name, tool_calls)))
                words |= words_of(body)
                st.next_seq += 1
                st.indexed_max_id = mid
            conn.executemany("INSERT INTO text (rowid, body, extra) VALUES (?, ?, ?)", texts)
            conn.executemany("INSERT INTO docs VALUES (?, ?, ?, ?, ?)", docs)
            conn.executemany("INSERT OR IGNORE INTO words VALUES (?)", [(w,) for w in words])
            if complete:
                st.seen_count, st.seen_max_id = work.seen
                st.indexed_max_id = max(st.indexed_max_id, work.seen[1])
            conn.execute(f"INSERT OR REPLACE INTO sessions ({_STATE_COLUMNS}) VALUES (?,?,?,?,?,?,?)",
                         dataclasses.astuple(st))

        self.transaction(_do, wait)

    def mark_dirty(self, session_ids: list[str], wait: float = derived.LOCK_WAIT) -> None:
        """Have the next check index these sessions again (``changes``: a negative ``seen_count``);
        ``wait``: as in ``write``."""
        self.transaction(lambda conn: conn.execute(
            "UPDATE sessions SET seen_count = -1 WHERE session_id IN (SELECT value FROM json_each(?))",
            (json.dumps(session_ids),)), wait)

    def index(self, conn: sqlite3.Connection, work: Change, key: tuple, batch: int = BATCH_ROWS,
              wait: float = derived.LOCK_WAIT) -> None:
        """Do one session's work, reading state.db through ``conn``, batch by batch (``wait``: as in ``write``)."""
        after, first = work.after_id, True
        while True:
            rows = index_rows(conn, work.session_id, after, work.seen[1], batch)
            done = len(rows) < batch
            self.write(work, key, rows, first=first, complete=done, wait=wait)
            if done:
                return
            after, first = rows[-1][0], False


# -- keeping up, and looking up ---------------------------------------------------------

@dataclass
class Lookup:
    """The index as one scope sees it: its sessions' rowid ranges and ordinals."""

    index: TextIndex
    with_tools: bool
    slot_of: dict[int, int]  # ordinal -> slot, for the sessions searched
    session_of: dict[int, str]  # ordinal -> session id, for the sessions searched
    since: float | None = None
    until: float | None = None
    rows: dict[int, int] = dataclasses.field(default_factory=dict)  # ordinal -> its rows (next_seq), searched

    def scope_lengths(self, kept: PerSession) -> Lengths:
        """The searched sessions' message lengths, at any time (a window of time searched does not
        change what the scope's messages are like), each session's kept in ``kept`` while it holds
        as many rows."""
        def read(stale: list) -> dict:
            return {key: Lengths.of(self.index.lengths(self._ranges([key[1]]))) for key in stale}

        return kept.scope({(sid, o, self.with_tools): self.rows.get(o, 0) for o, sid in self.session_of.items()}, read)

    def session_sizes(self, kept: PerSession, ordinals: list[int]) -> list[int]:
        """How many messages of the searched roles each session of ``ordinals`` holds, as
        ``scope_lengths`` last counted them."""
        return kept.counts((self.session_of.get(o), o, self.with_tools) for o in ordinals)

    def _ranges(self, ordinals: list[int] | None) -> list[tuple[int, int]]:
        """Rowid ranges: each slot's whole (``ordinals`` None), or these sessions' rows.

        Tool rows sit above all others of a slot (bit 42), so a slot's rows
        without tools are one range, and a session's tool rows another."""
        if ordinals is None:
            width = 2 * TOOL_BIT if self.with_tools else TOOL_BIT
            return [(slot << SLOT_SHIFT, (slot << SLOT_SHIFT) + width - 1) for slot in sorted(set(self.slot_of.values()))]
        ranges = []
        for o in sorted(ordinals):
            base = (self.slot_of[o] << SLOT_SHIFT) | (o << ORDINAL_SHIFT)
            for start in (base, base | TOOL_BIT) if self.with_tools else (base,):
                ranges.append((start, start + MAX_SEQ))
        return ranges

    def prefix_match(self, prefix: str) -> str | None:
        """The query for every indexed word that starts with ``prefix`` (None: there is none)."""
        found = self.index.words_from(prefix, PREFIX_WORDS)
        return " OR ".join(fts_quote(w) for w in found) if found else None

    def count(self, match: str) -> int:
        """Messages holding ``match`` in the searched sessions' slots (an estimate:
        a slot can hold sessions that are not searched)."""
        return self.index.count(match, self._ranges(None))

    def counted(self, match: str, limit: int) -> tuple[int, "np.ndarray | None"]:
        """``count(match)`` and, when each slot holds ``match`` in fewer than ``limit`` rows,
        ``keys(match, n)`` for any ``n >= limit`` (else None), from one read of the index: most of
        a question's terms are rare, and each lookup seeks the term in every segment of the index."""
        import numpy as np

        read = self._slot_rows(match, limit)
        if read is None:
            return self.count(match), None
        return sum(map(len, read)), self._searched(np.fromiter(chain.from_iterable(read), dtype=np.int64))

    def keys(self, match: str, limit: int, ordinals: list[int] | None = None) -> "np.ndarray":
        """The rowids of the searched sessions' (or of ``ordinals``') messages holding ``match``, sorted."""
        import numpy as np

        return self._searched(np.fromiter(self.index.rowids(match, self._ranges(ordinals), limit), dtype=np.int64))

    def keys_in(self, match: str, limit: int, ordinals: list[int], count: int) -> "np.ndarray":
        """``keys(match, limit, ordinals)`` of a term the searched slots hold ``count`` times: read in
        one lookup of the slots, each session's first ``limit`` rows kept, when those rows cost less
        than a lookup per session would (ROWS_PER_LOOKUP)."""
        import numpy as np

        most = ROWS_PER_LOOKUP * len(self._ranges(ordinals))
        if count > most:
            return self.keys(match, limit, ordinals)
        read = self._slot_rows(match, most)
        if read is None:  # more than counted: written since
            return self.keys(match, limit, ordinals)
        rowids = np.sort(np.fromiter(chain.from_iterable(read), dtype=np.int64))
        rowids = rowids[np.isin(self.sessions_of(rowids), ordinals)]
        # A session's rows (and its tool rows) are one range of rowids; a lookup of its own returns its first ``limit``.
        ranges = rowids >> ORDINAL_SHIFT
        starts = np.flatnonzero(np.r_[True, ranges[1:] != ranges[:-1]])
        place = np.arange(len(rowids)) - np.repeat(starts, np.diff(np.r_[starts, len(rowids)]))
        return self._searched(rowids[place < limit])

    def _slot_rows(self, match: str, limit: int) -> list | None:
        """The rowids of ``match`` in each searched slot, one lookup a slot; None when a slot
        holds ``limit`` or more, which were then not all read."""
        read = [self.index.rowids(match, [span], limit) for span in self._ranges(None)]
        return None if any(len(rows) >= limit for rows in read) else read

    def _searched(self, rowids: "np.ndarray") -> "np.ndarray":
        """Those of ``rowids`` (read from the index) of the searched sessions and times, sorted."""
        import numpy as np

        if not len(rowids):
            return rowids
        searched = np.fromiter(self.session_of, dtype=np.int64, count=len(self.session_of))
        rowids = np.unique(rowids[np.isin(self.sessions_of(rowids), searched)])
        if (self.since is not None or self.until is not None) and len(rowids):
            rowids = np.array(self.index.within(rowids.tolist(), self.since, self.until), dtype=np.int64)
        return rowids

    @staticmethod
    def sessions_of(rowids: "np.ndarray") -> "np.ndarray":
        """The ordinal of each rowid's session."""
        return (rowids >> ORDINAL_SHIFT) & MAX_ORDINAL


def lookup_for(index: TextIndex, states: dict[str, KeywordState], searched: list[str], with_tools: bool,
               since: float | None = None, until: float | None = None) -> Lookup:
    found = [states[sid] for sid in searched if sid in states]
    return Lookup(index, with_tools, {st.ordinal: st.slot for st in found}, {st.ordinal: st.session_id for st in found},
                  since, until, {st.ordinal: st.next_seq for st in found})


class Keeper(Worker[Change, KeywordState]):
    """Keeps one keywords.db in step with state.db: small updates in the
    searching thread, first builds in the background."""

    thread_name = "phr-keyword-index"
    what = "keyword indexing"

    def __init__(self, home: Path, index: TextIndex):
        super().__init__(home, index)
        self.index = index
        self._big = BigRows()  # the big rows ``_edited`` found as indexed

    def ready(self, conn: sqlite3.Connection, key: tuple, members: list[str], counts: Once | None = None,
              wait: float = derived.LOCK_WAIT, build_wait: float = 0.0) -> dict[str, KeywordState] | Pending:
        """The members' states when every one is current (indexing a few new
        messages on the way), else how far they are (the rest goes on in the background).
        ``key``: the scope's attribution key; ``counts``: the search's, if any; ``wait``: how long
        this may wait for another process's write lock in all (the search's budget) before the
        work is left to the background; ``build_wait``: how long it may wait for the background to
        finish more work than a search does itself (a process that ends with its search, whose
        background ends with it)."""
        deadline = time.monotonic() + wait
        stamp, known = self._recall(key, members)
        if known is not None:
            return known
        plan = self._plan(conn, members, self._index_unchanged(key, stamp), counts, stamp)
        states, work = plan.states, plan.work
        work.update(self._queued(key, states, work))
        edited = self._edited(conn, key, states, members, work)
        if edited:
            # A redo as of counts it was current at is not done otherwise (``write``) if this work is lost.
            self._mark(sorted(edited), deadline - time.monotonic())
            work.update(edited)
        if work:
            if not plan.inline():
                # More than a search does itself: the background's, waited for up to ``build_wait``.
                left = self._submit(key, work, wait=build_wait)
                if left or self.error is not None:  # given up, its queue with it: the next keeper starts afresh
                    return plan.pending(left=left or None)
            else:
                try:
                    for change in work.values():
                        self.index.index(conn, change, key, wait=max(0.0, deadline - time.monotonic()))
                except derived.StoreError as exc:
                    if not exc.locked:
                        raise
                    self._submit(key, work)
                    return plan.pending(locked=True)
                if self.index.unmerged() >= MERGE_AFTER_COMMITS:
                    self.chores()  # the background merges (an index grown only by searches is merged too)
            stamp = self._restamp(stamp)
            states = self.index.states(members)
        return self._remember(key, stamp, states)

    def report(self, conn: sqlite3.Connection, members: list[str]) -> dict[str, KeywordState] | Pending:
        """What ``ready`` would answer for ``members``, without indexing or queueing anything (the
        ``status`` command): current when what is missing is little enough for a search to index
        itself, and another process holds the file's write lock past a turn (as a search would meet it,
        and say). Edits in place, told only by reading rows, are left to the search."""
        plan = self._plan(conn, members)
        if plan.work and self.index.held_elsewhere():
            return plan.pending(locked=True, queued=False)
        return plan.states if plan.inline() else plan.pending(queued=False)

    def _plan(self, conn: sqlite3.Connection, members: list[str], states: dict[str, KeywordState] | None = None,
              counts: Once | None = None, stamp: tuple = ()) -> _Plan:
        """The work that brings ``members`` up to date from their ``states`` (None: read from the
        index now), by the search's ``counts`` read after ``stamp`` (``_counted``; None: state.db's
        read now), as ``ready``, ``report`` and ``build`` each begin."""
        if states is None:
            states = self.index.states(members)
        return _Plan(members, states, changes(conn, states, members, self._counted(counts, members, stamp)))

    def build(self, key: tuple, members: list[str], on_progress=None) -> int:
        """Bring ``members`` up to date in this thread (the CLI and benchmarks); returns sessions done.

        State.db is read ``BATCH_ROWS`` messages per statement (see ``reading``)."""
        with reading(state_db_path(self.home)) as (conn, _shape):
            plan = self._plan(conn, members)
            states, work = plan.states, plan.work
            edited = self._edited(conn, key, states, members, work, every_row=True)
        if edited:
            self.index.mark_dirty(sorted(edited))  # done in this thread: another process's lock waited for
        work.update(edited)
        for n, sid in enumerate(sorted(work, reverse=True), 1):  # newest sessions first
            self._index(key, work[sid])
            if on_progress:
                on_progress(n, len(work))
        return len(work)

    def _edited(self, conn: sqlite3.Connection, key: tuple, states: dict[str, KeywordState], members: list[str],
                work: dict[str, Change], every_row: bool = False) -> dict[str, Change]:
        """A redo (``Rewritten``) of each session holding a row Hermes rewrote in place since it was
        indexed, among those it may still rewrite (``edit_windows``; with ``every_row``, among all it
        holds): its words then are the ones indexed. The caller marks them (``mark_dirty``)."""
        out: dict[str, Change] = {}
        for sid, after in edit_windows(conn, states, members, work, every_row).items():
            st = states[sid]
            skip = [] if every_row else self._big.unchanged(conn, sid, after, st.indexed_max_id)
            held = self.index.digests(st, after)
            big = []
            for mid, role, content, name, calls, _ts in every_index_row(conn, sid, after, st.indexed_max_id, skip):
                if mid not in held:
                    continue
                if held[mid] != digest(content, name, calls):
                    out[sid] = self._replan(key, st, work)
                    break
                if is_big(content, calls):
                    big.append((mid, role == "assistant"))  # Hermes writes tool calls in assistant rows only
            else:
                self._big.found(conn, sid, big)
        return out

    def _mark(self, session_ids: list[str], wait: float) -> bool:
        """Mark ``session_ids`` in keywords.db to be indexed again, so that a later search does it
        if the work queued now is lost with the process; False when another process held the file's
        write lock for ``wait``. A search waited for it SQLite's whole timeout (10 s) whatever its
        budget; now the redo, queued all the same, is due whatever the counts say (``Rewritten``)."""
        return derived.unless_locked(lambda: self.index.mark_dirty(session_ids, max(0.0, wait)),
                                     f"mark {', '.join(session_ids)} for re-indexing")

    def _held(self, session_ids: list[str]) -> dict[str, KeywordState]:
        return self.index.states(session_ids)

    def _unmarked(self, session_ids: list[str], deadline: float) -> list[str]:
        # All in one transaction.
        return [] if self._mark(session_ids, deadline - time.monotonic()) else session_ids

    def _redo(self, key: tuple, state: KeywordState, seen: tuple[int, int]) -> Change:
        return Rewritten(state.session_id, "redo", 0, seen, state.ordinal)

    def _due(self, item: Change, state: KeywordState) -> bool:
        # Done once the session is indexed again (its ordinal changed), whatever its counts say.
        return isinstance(item, Rewritten) and item.ordinal == state.ordinal

    def settle(self) -> int:
        """Merge the index's segments after a build (``build``'s callers, once all is built: merging
        in between would merge the same rows again); returns the steps taken. A failure leaves the
        index as it was before the failing step, and is only logged: searches work either way."""
        return self._merge()

    def _idle(self) -> None:
        # After the background's builds and catch-ups, and a search's own (``ready``), a step at a time
        # while no search hands over work.
        self._merge(self.quiet)

    def _merge(self, go_on: Callable[[], bool] = lambda: True) -> int:
        try:
            return self.index.merge(go_on)
        except derived.StoreError as exc:
            logger.warning("merging the keyword index's segments stopped: %s", exc)
            return 0

    def _index(self, key: tuple, change: Change) -> None:
        with reading(state_db_path(self.home)) as (conn, _shape):
            self.index.index(conn, change, key)

    def _step(self, key: tuple, item: Change) -> Step:
        try:
            self._index(key, item)
        except (StateDBError, derived.StoreError, sqlite3.Error, OSError) as exc:
            if not self.index.healthy():
                # Set aside as damaged, or replaced: the next search's keeper builds the new file.
                logger.warning("keyword index stopped: %s", exc)
                raise Stop(None) from exc
            # Stopped, the next search's keeper starts afresh (``keeper``), and searches use Hermes's indexes.
            return self._failed(exc)
        return Step.DONE


@dataclass
class _Plan:
    """A scope's ``members``, what the index holds of them (``states``) and the ``work`` that brings
    them up to date (the caller may add to it)."""

    members: list[str]
    states: dict[str, KeywordState]
    work: dict[str, Change]

    def inline(self) -> bool:
        """Whether the messages the work indexes (an append's new ones, a redo's all) are few enough
        for a search to index them itself (``INLINE_ROWS``)."""
        states = self.states
        return sum(c.seen[0] - (states[c.session_id].seen_count if c.kind == "append" and c.session_id in states else 0)
                   for c in self.work.values()) <= INLINE_ROWS

    def pending(self, locked: bool = False, queued: bool = True, left: int | None = None) -> Pending:
        """How far the scope is with the work left to the background (``Pending``); ``left``: how
        much of it the background has still to do, when not all of it."""
        todo = len(self.work) if left is None else left
        return Pending(len(self.members) - todo, len(self.members), locked, queued)


class _Kept:
    """A home's slot for its keeper, replaced when its index went bad."""

    keeper: Keeper | None = None


def keeper(home: Path) -> Keeper:
    """The keeper of ``home``'s keyword index (reopened if the file went away)."""
    kept = Home.of(home)
    mine = kept.slot("keyword.keeper", lambda _home: _Kept())
    with kept.lock:
        old = mine.keeper
        if old is not None and old.error is None and old.index.healthy():
            return old
        mine.keeper = fresh = Keeper(kept.path, TextIndex(kept.data_dir / FILE_NAME))
    derived.retire(old.index if old is not None else None)
    return fresh
