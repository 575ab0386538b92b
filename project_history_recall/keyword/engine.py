"""Keyword search inside one scope of state.db.

A query is a handful of *concepts* (the words a person typed, see
``querytext``), some with *pieces* that find them when written differently.
For each term, the engine asks SQLite for the scope's messages that hold it,
always with the scope pushed into SQL (``json_each`` over the session ids, so
the plan never ranks the whole database and filters afterwards):

- words and typed phrases: Hermes's unicode61 index (a word with its prefix,
  so "painted" is found by "painting");
- symbols and CJK words of 3+ characters: exact substrings via the trigram
  index (or, for a symbol, its words in the unicode61 index, confirmed);
- CJK words of 1-2 characters (most Chinese words), which the trigram index
  silently cannot find: ``instr`` over the scope's own rows, in one pass;
- in scopes small enough to read whole, every substring by that one pass.

Scoring is BM25-like and computed within the scope: a concept weighs its
rarity among the scope's messages (IDF), every concept counts (no term can
stop the others from being searched), and a piece earns part of its
concept. A message's *share* is the weighted part of the query it holds,
0..1: how much of the question the keyword side really matched, which is
what fusion with semantic search weighs. Sessions that hold more of the
query, and hold it in several messages, lift their messages.
"""

from __future__ import annotations

import json
import logging
import math
import re
import sqlite3
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Callable

from ..files import derived
from ..hermes.statedb import Shape, seconds_sql
from . import textindex
from .querytext import STOP_WORDS, ParsedQuery, Term, fts_quote, is_cjk

if TYPE_CHECKING:
    import numpy as np

logger = logging.getLogger(__name__)

_WORD_TOKEN = re.compile(r"[^\W_]+")
# Rows fetched per term. A term in more of the scope's messages than this is
# common, so it weighs little; beyond this its rows are not all credited.
TERM_CANDIDATES = 5000
# A concept found only in pieces (the bigrams of a longer CJK word, the words
# of a symbol) earns at most this share of it, when all pieces are there...
PIECE_CREDIT = 0.5
# ...and one found in another form earns this: an inflection ("painted" for
# "painting"), or the word glued to other text (a substring, not a token).
STEM_CREDIT = 0.8
GLUED_CREDIT = 0.5
_ALTERNATIVES = {"stem": STEM_CREDIT, "glued": GLUED_CREDIT}
# BM25's length normalisation (k1, b): a long message holds a word by chance
# more often than a short one.
LENGTH_K1 = 1.2
LENGTH_B = 0.5
# Session evidence added to each message's share (tuned on LoCoMo English and
# Chinese, conversations kept aside to check): the mean share of the
# session's best three messages, and the weighted share of the query's
# concepts found anywhere in the session.
SESSION_WEIGHT = 0.5
SESSION_TOP = 3
COVERAGE_WEIGHT = 0.25
# Messages checked against state.db (still live, of a searched role) after
# the ranking, at least: the ranking itself weighs every candidate.
RERANKED = 100
# Index rows read for a query's rarer terms; its commoner terms are then read
# only in this many sessions, those where the rarer ones are.
FETCH_ROWS = 6000
CANDIDATE_SESSIONS = 50


@dataclass(frozen=True)
class Filters:
    roles: tuple[str, ...] = ("user", "assistant")
    since: float | None = None
    until: float | None = None


@dataclass
class Hit:
    message_id: int
    session_id: str
    timestamp: float
    score: float = 0.0  # the ranking score (message and session evidence)
    share: float = 0.0  # the weighted share of the query's concepts this message holds, 0..1


_SCOPE_ROWS = "SELECT id FROM messages WHERE session_id IN (SELECT value FROM json_each(?))"
# Scopes up to this many messages answer substrings (symbols, CJK) by
# scanning their own rows (~1.7 µs a row); bigger ones use an index.
SCAN_LIMIT = 10_000


def _filters_sql(shape: Shape, filters: Filters) -> tuple[str, list]:
    clauses = [shape.live_filter("m"), "m.role IN (" + ",".join("?" * len(filters.roles)) + ")"]
    params: list = list(filters.roles)
    if filters.since is not None:
        clauses.append(f"{seconds_sql('m.timestamp')} >= ?")
        params.append(filters.since)
    if filters.until is not None:
        clauses.append(f"{seconds_sql('m.timestamp')} < ?")
        params.append(filters.until)
    return " AND ".join(clauses), params


def _has_cjk(text: str) -> bool:
    return any(is_cjk(ch) for ch in text)


def _idf(total: int, matching: int) -> float:
    total = max(total, matching)
    return math.log(1.0 + (total - matching + 0.5) / (matching + 0.5))


def scope_size(conn: sqlite3.Connection, scope_json: str) -> int:
    row = conn.execute(
        "SELECT count(*) FROM messages WHERE session_id IN (SELECT value FROM json_each(?))",
        (scope_json,),
    ).fetchone()
    return int(row[0] or 0)


def _folded(text: str) -> str:
    # SQLite's lower() folds ASCII only; fold needles the same way.
    return "".join(c.lower() if c.isascii() else c for c in text)


@dataclass
class _Plan:
    words: list[tuple[Term, str]] = field(default_factory=list)  # (term, FTS5 match) on the word index
    phrases: list[Term] = field(default_factory=list)  # symbols: word-index phrase, then exact check
    trigram: list[Term] = field(default_factory=list)
    scan: list[Term] = field(default_factory=list)


def _symbol_phrase(text: str) -> str | None:
    tokens = _WORD_TOKEN.findall(text.casefold())
    return fts_quote(" ".join(tokens)) if tokens else None


def plan(terms: list[Term], shape: Shape, filters: Filters, total: int) -> _Plan:
    """Where each term is looked up (see the module's docstring)."""
    p = _Plan()
    small = total <= SCAN_LIMIT
    trigram_ok = shape.trigram_fts is not None and (shape.trigram_has_tools or "tool" not in filters.roles)
    for term in terms:
        text = term.text
        if term.kind == "stem" and shape.words_fts is not None:
            p.words.append((term, fts_quote(text) + "*"))
        elif shape.words_fts is not None and (term.kind == "word" or term.kind == "phrase" and not _has_cjk(text)):
            p.words.append((term, fts_quote(text)))
        elif small or len(text) < 3:
            p.scan.append(term)
        elif term.kind == "symbol" and shape.words_fts is not None and _symbol_phrase(text):
            # The word index narrows to the symbol's words in order, far
            # cheaper than the trigram doclists of a long symbol. (A symbol
            # glued to CJK text is one token there; small scopes still find it.)
            p.phrases.append(term)
        elif trigram_ok:
            p.trigram.append(term)
        else:
            p.scan.append(term)
    return p


def stems(query: ParsedQuery) -> list[Term]:
    """Each word's inflections ("paint*" for "painting"), as another form of it."""
    return [replace(t, kind="stem", text=t.stem, partial=True) for t in query.terms
            if t.kind == "word" and t.stem and not t.partial and t.stem not in STOP_WORDS]


def glued(query: ParsedQuery) -> list[Term]:
    """The query's words as bare substrings: unicode61 reads "修改youer服务端" as
    one token, so a Latin word glued to CJK text is only found this way."""
    return [replace(t, kind="glued", partial=True) for t in query.terms
            if t.kind == "word" and not t.partial and len(t.text) >= 3]


class _Scoped:
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
        self.fsql, self.fparams = _filters_sql(shape, filters)

    def _few_matches(self, table: str, match: str) -> bool:
        cap = max(500, self.total // 4)
        (count,) = self.conn.execute(
            f"SELECT count(*) FROM (SELECT 1 FROM {table} WHERE {table} MATCH ? LIMIT ?)", (match, cap)
        ).fetchone()
        return count < cap

    def rows(self, table: str, match: str, select: str, tail: str = "", extra_where: str = "",
             extra: tuple = ()) -> list:
        if self._few_matches(table, match):
            member, params = "m.session_id IN (SELECT value FROM json_each(?))", [self.scope_json]
        else:
            member, params = f"+{table}.rowid IN ({_SCOPE_ROWS})", [self.scope_json]
        where = f"{table} MATCH ? AND {member} AND {self.fsql}{extra_where}"
        return self.conn.execute(
            f"SELECT {select} FROM {table} JOIN messages m ON m.id = {table}.rowid WHERE {where} {tail}",
            [match, *params, *self.fparams, *extra],
        ).fetchall()


def _text_expr(filters: Filters) -> str:
    # List content ("\x00json:[...]", non-ASCII escaped) is matched as the text it holds.
    text = "CASE WHEN instr(m.content, 'json:') = 2 THEN phr_text(m.content) ELSE COALESCE(m.content, '') END"
    if "tool" in filters.roles:
        text = f"({text} || ' ' || COALESCE(m.tool_name, '') || ' ' || COALESCE(m.tool_calls, ''))"
    return f"lower({text})"


_COLS = f"m.id, m.session_id, {seconds_sql('m.timestamp')}, length(m.content)"
Row = tuple  # (message id, session id, timestamp, length)


def _planned(value: str | None) -> str:
    """A table or phrase ``_plan`` checked exists before it planned a term that needs it."""
    if value is None:
        raise AssertionError("a keyword term was planned on a table or phrase that does not exist")
    return value


def _run(conn: sqlite3.Connection, shape: Shape, p: _Plan, scope_json: str, filters: Filters,
         total: int) -> dict[Term, list[Row]]:
    """Each planned term's rows in the scope (at most TERM_CANDIDATES + 1)."""
    fts = _Scoped(conn, shape, scope_json, filters, total)
    text = _text_expr(filters)
    found: dict[Term, list[Row]] = {}
    cap = TERM_CANDIDATES + 1

    for term, match in p.words:
        found[term] = fts.rows(_planned(shape.words_fts), match, _COLS, "LIMIT ?", extra=(cap,))

    for term in p.phrases:
        found[term] = fts.rows(_planned(shape.words_fts), _planned(_symbol_phrase(term.text)), _COLS, "LIMIT ?",
                               f" AND instr({text}, ?) > 0", (_folded(term.text), cap))

    for term in p.trigram:
        found[term] = fts.rows(_planned(shape.trigram_fts), fts_quote(term.text), _COLS, "LIMIT ?", extra=(cap,))

    if p.scan:
        probes = [f"instr({text}, ?) > 0" for _ in p.scan]
        needles = [_folded(t.text) for t in p.scan]
        rows = conn.execute(
            f"SELECT {_COLS}, {', '.join(probes)} FROM messages m "
            f"WHERE m.session_id IN (SELECT value FROM json_each(?)) AND {fts.fsql} "
            f"AND ({' OR '.join(probes)}) LIMIT ?",
            [*needles, scope_json, *fts.fparams, *needles, cap * len(p.scan)],
        ).fetchall()
        for i, term in enumerate(p.scan):
            found[term] = [r[:4] for r in rows if r[4 + i]][:cap]
    return found


@dataclass
class _Concept:
    weight: float
    credit: "np.ndarray"  # per candidate key: how much of the concept the message holds, 0..1


def _concepts(groups: dict[int, list[Term]], found: dict[Term, "np.ndarray"], keys: "np.ndarray",
              total: int, counts: dict[Term, int] | None = None) -> list[_Concept]:
    """Every concept of the query with its weight (IDF within the scope) and, per
    candidate in ``keys`` (sorted), how much of it the candidate holds.

    A concept that nothing in the scope holds keeps its (high) weight: the
    question asked for it, so no message holds the whole question."""
    import numpy as np

    counts = counts or {}
    idf = {t: _idf(total, counts.get(t, len(found.get(t, ())))) for terms in groups.values() for t in terms}
    concepts = []
    for terms in groups.values():
        head = terms[0] if not terms[0].partial else None  # None: its whole is another concept's term
        parts = [t for t in terms if t.partial and t.kind not in _ALTERNATIVES]
        credit = np.zeros(len(keys))
        parts_weight = sum(idf[t] for t in parts) or 1.0
        for t in parts:
            if len(found.get(t, ())):
                credit[np.searchsorted(keys, found[t])] += PIECE_CREDIT * idf[t] / parts_weight
        weight = idf[head] if head else max((idf[t] for t in terms), default=0.0)
        for t in terms:
            # Another form counts as rare as it is: "like*" for "likely" is common.
            share = 1.0 if t is head else _ALTERNATIVES.get(t.kind, 0.0) * min(1.0, idf[t] / (weight or 1.0))
            if share and len(found.get(t, ())):
                at = np.searchsorted(keys, found[t])
                credit[at] = np.maximum(credit[at], share)
        concepts.append(_Concept(weight, credit))
    return concepts


def search(
    conn: sqlite3.Connection,
    shape: Shape,
    scope_ids: list[str],
    query: ParsedQuery,
    filters: Filters,
    limit: int,
    scope_messages: int | None = None,
    lookup: textindex.Lookup | None = None,
) -> list[Hit]:
    """The best ``limit`` messages; ``scope_messages`` (an estimate is fine)
    saves counting the scope's rows. With ``lookup`` (the scope is current in
    the plugin's own index) terms are looked up there, when it can answer
    them all."""
    if not scope_ids or query.empty:
        return []
    if lookup is not None:
        try:
            return _search(conn, shape, scope_ids, query, filters, limit, scope_messages, lookup)
        except derived.StoreError as exc:
            # The plugin's index failed under this search (found damaged, and set aside for a
            # rebuild; or a full disk): Hermes's own indexes answer it.
            logger.warning("keyword index unavailable: %s", exc)
    return _search(conn, shape, scope_ids, query, filters, limit, scope_messages, None)


def _search(conn: sqlite3.Connection, shape: Shape, scope_ids: list[str], query: ParsedQuery, filters: Filters,
            limit: int, scope_messages: int | None, lookup: textindex.Lookup | None) -> list[Hit]:
    import numpy as np

    scope_json = json.dumps(scope_ids)
    total = scope_messages if scope_messages else scope_size(conn, scope_json)
    groups = query.concepts
    indexed = _index_matches(query, lookup) if lookup is not None else None
    counts: dict[Term, int] = {}
    names: dict[int, str] | list[str]  # session number -> id
    sessions_of: Callable[[np.ndarray], np.ndarray]  # message keys -> session numbers
    if lookup is not None and indexed is not None:
        for t in indexed:
            if t.kind == "stem":
                groups[t.concept].append(t)
        counts = {t: lookup.count(match) for t, match in indexed.items()}
        found = _from_index(lookup, indexed, counts, groups, total)
        _confirm_symbols(conn, lookup, found)
        names = lookup.session_of
        sessions_of = lookup.sessions_of
        facts = lambda keys: _index_facts(lookup, keys)  # noqa: E731
        live = lambda keys: _index_live(conn, shape, lookup, keys, filters)  # noqa: E731
    else:
        rows = _from_hermes(conn, shape, query, groups, scope_json, filters, total)
        rows_of = {r[0]: r for term_rows in rows.values() for r in term_rows}
        found = {t: np.unique(np.fromiter((r[0] for r in term_rows), dtype=np.int64, count=len(term_rows)))
                 for t, term_rows in rows.items()}
        names = sorted({r[1] for r in rows_of.values()})
        number = {sid: i for i, sid in enumerate(names)}
        sessions_of = lambda keys: np.array([number[rows_of[int(k)][1]] for k in keys], dtype=np.int64)  # noqa: E731
        facts = lambda keys: _Facts(keys, np.array([rows_of[int(k)][3] or 0 for k in keys], dtype=np.float64),  # noqa: E731
                                    np.array([rows_of[int(k)][2] or 0.0 for k in keys], dtype=np.float64))
        live = lambda keys: set(keys)  # noqa: E731  (Hermes's rows were read live and of the searched roles)
    arrays = [v for v in found.values() if len(v)]
    keys = np.unique(np.concatenate(arrays)) if arrays else np.zeros(0, dtype=np.int64)
    ranked = rank(_concepts(groups, found, keys, total, counts), keys, sessions_of(keys), len(scope_ids),
                  facts(keys), live, max(limit, RERANKED))
    return [Hit(mid, names[session], ts, score, share) for _key, mid, session, ts, score, share in ranked[:limit]]


def _from_index(lookup: textindex.Lookup, matches: dict[Term, str], counts: dict[Term, int],
                groups: dict[int, list[Term]], total: int) -> dict[Term, "np.ndarray"]:
    """Each term's keys in the plugin's index. Reading a row out of FTS5 costs
    ~1 µs, so the rarer terms are read whole (within FETCH_ROWS; the rarest
    always), and the commoner ones only in the sessions where the rarer ones
    point (a common word weighs little, and elsewhere it cannot lift a
    message past those sessions')."""
    import numpy as np

    found: dict[Term, np.ndarray] = {}
    budget = FETCH_ROWS
    for term in sorted(matches, key=lambda t: counts[t]):
        if not found or counts[term] <= budget:
            found[term] = lookup.keys(matches[term], TERM_CANDIDATES + 1)
            budget -= counts[term]
    common = [t for t in matches if t not in found]
    if common:
        arrays = [v for v in found.values() if len(v)]
        keys = np.unique(np.concatenate(arrays)) if arrays else np.zeros(0, dtype=np.int64)
        share = _shares(_concepts(groups, found, keys, total, counts), len(keys))
        sessions = lookup.sessions_of(keys)
        best: dict[int, float] = {}
        for session, value in zip(sessions.tolist(), share.tolist(), strict=True):
            best[session] = max(best.get(session, 0.0), value)
        top = sorted(best, key=best.__getitem__, reverse=True)[:CANDIDATE_SESSIONS]
        for term in common:
            found[term] = lookup.keys(matches[term], TERM_CANDIDATES + 1, top) if top else keys[:0]
    return found


def _from_hermes(conn: sqlite3.Connection, shape: Shape, query: ParsedQuery, groups: dict[int, list[Term]],
                 scope_json: str, filters: Filters, total: int) -> dict[Term, list[Row]]:
    """Each term's rows from Hermes's own indexes (and the scope's rows)."""
    forms = stems(query) if shape.words_fts is not None else []
    found = _run(conn, shape, plan(query.terms + forms, shape, filters, total), scope_json, filters, total)
    # Glued words are looked for when the word found nothing, or when the
    # query itself mixes scripts (then the history likely does too).
    mixed = any(t.kind == "cjk" for t in query.terms)
    heads = {t.concept: t for t in query.terms if not t.partial}
    extra = [g for g in glued(query) if mixed or not found.get(heads[g.concept])]
    found.update(_run(conn, shape, plan(extra, shape, filters, total), scope_json, filters, total))
    for t in forms + extra:
        groups[t.concept].append(t)
    return found


def _index_matches(query: ParsedQuery, lookup: textindex.Lookup) -> dict[Term, str] | None:
    """Each term's query in the plugin's index, or None when the index cannot
    answer the query (a term of punctuation only: the index keeps none)."""
    out: dict[Term, str] = {}
    for term in query.terms:
        match = textindex.match_for(textindex.normalise(term.text))
        if match is None:
            return None
        out[term] = match
    for term in stems(query):
        match = lookup.prefix_match(textindex.normalise(term.text))
        if match is not None:
            out[term] = match
    return out


def _confirm_symbols(conn: sqlite3.Connection, lookup: textindex.Lookup, found: dict) -> None:
    """A symbol is found in the index by its words in a row ("foo bar" for
    ``foo.bar()``); keep the messages that hold it exactly."""
    for term, keys in found.items():
        if term.kind != "symbol" or not len(keys):
            continue
        ids = lookup.index.docs([int(k) for k in keys])
        exact = {r[0] for r in conn.execute(
            "SELECT id FROM messages WHERE id IN (SELECT value FROM json_each(?)) AND instr(lower(content), ?) > 0",
            (json.dumps([v[0] for v in ids.values()]), _folded(term.text)))}
        found[term] = keys[[ids.get(int(k), (None,))[0] in exact for k in keys]]


@dataclass
class _Facts:
    """Per candidate key (aligned): its message id, length and time, as state.db
    has them, so neither the ranking nor its ties depend on which index
    answered or in what order it was built."""

    message_ids: "np.ndarray"
    lengths: "np.ndarray"
    timestamps: "np.ndarray"


def _index_facts(lookup: textindex.Lookup, keys: "np.ndarray") -> _Facts:
    import numpy as np

    docs = lookup.index.docs([int(k) for k in keys])
    rows = [docs.get(int(k), (-1, 0, 0.0)) for k in keys]
    return _Facts(np.array([r[0] for r in rows], dtype=np.int64), np.array([r[1] for r in rows], dtype=np.float64),
                  np.array([r[2] or 0.0 for r in rows], dtype=np.float64))


def _index_live(conn: sqlite3.Connection, shape: Shape, lookup: textindex.Lookup, message_ids: list[int],
                filters: Filters) -> set[int]:
    """Those of ``message_ids`` still live and of a searched role (rewinds and roles are state.db's)."""
    return {r[0] for r in conn.execute(
        f"SELECT m.id FROM messages m WHERE m.id IN (SELECT value FROM json_each(?)) AND "
        f"{shape.live_filter('m')} AND m.role IN ({','.join('?' * len(filters.roles))})",
        (json.dumps(message_ids), *filters.roles))}


def _shares(concepts: list[_Concept], candidates: int) -> "np.ndarray":
    """Per candidate, the weighted share of the query's concepts it holds."""
    import numpy as np

    total_weight = sum(c.weight for c in concepts) or 1.0
    return sum((c.weight / total_weight * c.credit for c in concepts), np.zeros(candidates))


def rank(concepts: list[_Concept], keys: "np.ndarray", sessions_of_keys: "np.ndarray", sessions: int,
         facts: _Facts, live: Callable[[list[int]], set[int]], keep: int) -> list[tuple]:
    """(key, message id, session index, timestamp, score, share), best first: each
    message's share of the query, normalised by its length as BM25 does, lifted
    by its session's evidence.

    Every candidate is scored before any is cut, and ties go to the newer
    message (then the higher id): the best ``keep`` are then checked with
    ``live`` (message ids still live), and a message missing there is dropped."""
    import numpy as np

    if not len(keys):
        return []
    credit = np.stack([c.credit for c in concepts]) if concepts else np.zeros((0, len(keys)))
    share = _shares(concepts, len(keys))
    session_ids, session_at = np.unique(sessions_of_keys, return_inverse=True)
    # Candidates grouped by session, best share first within each.
    order = np.lexsort((-share, session_at))
    starts = np.flatnonzero(np.r_[True, np.diff(session_at[order]) != 0])
    # Per concept and session, the most of it any of the session's messages holds;
    # coverage weighs each concept by its rarity among the scope's sessions.
    cover = np.maximum.reduceat(credit[:, order], starts, axis=1) if len(concepts) else np.zeros((0, len(starts)))
    session_idf = np.array([_idf(sessions, int(n)) for n in (cover > 0).sum(axis=1)])
    coverage = session_idf @ cover / (session_idf.sum() or 1.0) if len(concepts) else np.zeros(len(starts))
    # The mean share of each session's best SESSION_TOP messages.
    rank_in_session = np.arange(len(order)) - np.repeat(starts, np.diff(np.r_[starts, len(order)]))
    best = rank_in_session < SESSION_TOP
    top = np.bincount(session_at[order][best], weights=share[order][best], minlength=len(session_ids))
    evidence = SESSION_WEIGHT * top / SESSION_TOP + COVERAGE_WEIGHT * coverage
    known = facts.message_ids >= 0  # a row the index lost its record of cannot be shown
    lengths = facts.lengths
    avg = float(lengths[known].mean()) if known.any() else 1.0
    norm = (LENGTH_K1 + 1) / (1 + LENGTH_K1 * (1 - LENGTH_B + LENGTH_B * lengths / (avg or 1.0)))
    score = share * norm + evidence[session_at]
    # np.lexsort sorts by its last key first.
    pick = [i for i in np.lexsort((-facts.message_ids, -facts.timestamps, -score)) if known[i]][:keep]
    alive = live([int(facts.message_ids[i]) for i in pick])
    return [(int(keys[i]), int(facts.message_ids[i]), int(session_ids[session_at[i]]), float(facts.timestamps[i]),
             float(score[i]), float(share[i])) for i in pick if int(facts.message_ids[i]) in alive]
