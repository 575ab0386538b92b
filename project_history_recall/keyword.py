"""Keyword search inside one scope of state.db.

Each kind of term goes where SQLite can answer it, always with the scope
pushed into SQL (``json_each`` over the session ids, so the plan never ranks
the whole database and filters afterwards):

- words and typed phrases: one BM25 ``OR`` query on the unicode61 index, so
  a natural-language question ranks by its rare words instead of requiring
  all of them;
- symbols and CJK runs of 3+ characters: exact substrings via the trigram
  index, one query per term;
- CJK terms of 1-2 characters (most Chinese words), which the trigram index
  silently cannot find: ``instr`` over the scope's own rows, in one pass.

Scores add up per message: BM25 for the words, plus an IDF weight computed
within the scope for every other term a message contains.
"""

from __future__ import annotations

import json
import math
import re
import sqlite3
from dataclasses import dataclass, field

from .querytext import ParsedQuery, Term, fts_quote, is_cjk
from .statedb import Shape

_WORD_TOKEN = re.compile(r"[^\W_]+")
WORD_CANDIDATES = 200
TERM_CANDIDATES = 5000
# A message in a session that matches in several places is more likely the
# conversation meant: add this share of the mean of the session's best three
# message scores (LoCoMo: +0.02 hit@1, +0.03 turn recall@10).
SESSION_WEIGHT = 0.5
SESSION_TOP = 3
# A session that contains more of the query's distinct terms (weighted by how
# rare each is among the scope's sessions) is more likely the conversation
# meant, even when no single message holds them all: add this share of the
# session's coverage (relative to the best session's) to each message's score
# (relative to the best message's). LoCoMo: +0.04 hit@1, +0.03 MRR/turn recall.
COVERAGE_WEIGHT = 0.25
COVERAGE_ROWS = 20000  # a term in more rows than this is too common to tell sessions apart


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
    score: float = 0.0
    matched: list[str] = field(default_factory=list)


_SCOPE_ROWS = "SELECT id FROM messages WHERE session_id IN (SELECT value FROM json_each(?))"
# Scopes up to this many messages answer substrings (symbols, CJK) by
# scanning their own rows (~1.7 µs a row); bigger ones use an index.
SCAN_LIMIT = 10_000


def _filters_sql(shape: Shape, filters: Filters) -> tuple[str, list]:
    clauses = [shape.live_filter("m"), "m.role IN (" + ",".join("?" * len(filters.roles)) + ")"]
    params: list = list(filters.roles)
    if filters.since is not None:
        clauses.append("m.timestamp >= ?")
        params.append(filters.since)
    if filters.until is not None:
        clauses.append("m.timestamp < ?")
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
    words: list[str] = field(default_factory=list)  # FTS5 strings for one BM25 OR query
    phrases: list[Term] = field(default_factory=list)  # symbols: word-index phrase, then exact check
    trigram: list[Term] = field(default_factory=list)
    scan: list[Term] = field(default_factory=list)


def _symbol_phrase(text: str) -> str | None:
    tokens = _WORD_TOKEN.findall(text.casefold())
    return fts_quote(" ".join(tokens)) if tokens else None


def plan(query: ParsedQuery, shape: Shape, filters: Filters, total: int) -> tuple[_Plan, _Plan]:
    """(first pass, recall pass). The recall pass (bigrams cut from longer
    CJK runs, the words inside a symbol, words as bare substrings) only runs
    when the exact terms found nothing: looser matches must not crowd out
    exact ones, and they are the expensive part for common words."""
    exact, partial = _Plan(), _Plan()
    small = total <= SCAN_LIMIT
    trigram_ok = shape.trigram_fts is not None and (shape.trigram_has_tools or "tool" not in filters.roles)

    def substring(term: Term, target: _Plan) -> None:
        text = term.text
        if small or len(text) < 3:
            target.scan.append(term)
        elif term.kind == "symbol" and shape.words_fts is not None and _symbol_phrase(text):
            # The word index narrows to the symbol's words in order, far
            # cheaper than the trigram doclists of a long symbol. (A symbol
            # glued to CJK text is one token there; small scopes still find it.)
            target.phrases.append(term)
        elif trigram_ok:
            target.trigram.append(term)
        else:
            target.scan.append(term)

    for term in query.terms:
        target = partial if term.partial else exact
        text = term.text
        if term.kind in ("symbol", "cjk") or (term.kind == "phrase" and _has_cjk(text)) or shape.words_fts is None:
            substring(term, target)
            continue
        target.words.append(fts_quote(text))
        if term.stem:
            target.words.append(fts_quote(term.stem) + "*")
        if len(text) >= 3 and not term.partial:
            # unicode61 reads "修改youer服务端" as one token, so a Latin word
            # glued to CJK text is only found as a substring.
            substring(term, partial)
    return exact, partial


class _Collector:
    def __init__(self, total: int):
        self.total = total
        self.hits: dict[int, Hit] = {}
        self.term_sessions: dict[str, set[str]] = {}  # exact term -> sessions holding it

    def add(self, mid: int, sid: str, ts: float, score: float, label: str) -> None:
        hit = self.hits.get(mid)
        if hit is None:
            hit = self.hits[mid] = Hit(mid, sid, ts or 0.0)
        hit.score += score
        hit.matched.append(label)

    def add_term(self, rows: list, label: str, exact: bool = False) -> None:
        weight = _idf(self.total, len(rows))
        for mid, sid, ts in rows[:TERM_CANDIDATES]:
            self.add(mid, sid, ts, weight, label)
        if exact and len(rows) < TERM_CANDIDATES:
            self.term_sessions[label] = {sid for _, sid, _ in rows}


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
    text = "COALESCE(m.content, '')"
    if "tool" in filters.roles:
        text = f"({text} || ' ' || COALESCE(m.tool_name, '') || ' ' || COALESCE(m.tool_calls, ''))"
    return f"lower({text})"


def _run(conn: sqlite3.Connection, shape: Shape, p: _Plan, scope_json: str, filters: Filters,
         out: _Collector, exact: bool = False) -> None:
    fts = _Scoped(conn, shape, scope_json, filters, out.total)
    text = _text_expr(filters)
    cols = "m.id, m.session_id, m.timestamp"

    if p.words:
        table = shape.words_fts
        for mid, sid, ts, score in fts.rows(table, " OR ".join(p.words), f"{cols}, bm25({table}) AS score",
                                            "ORDER BY score LIMIT ?", extra=(WORD_CANDIDATES,)):
            out.add(mid, sid, ts, -score, "words")

    for term in p.phrases:
        rows = fts.rows(shape.words_fts, _symbol_phrase(term.text), cols, "LIMIT ?",
                        f" AND instr({text}, ?) > 0", (_folded(term.text), TERM_CANDIDATES + 1))
        if rows:
            out.add_term(rows, term.text, exact)

    for term in p.trigram:
        rows = fts.rows(shape.trigram_fts, fts_quote(term.text), cols, "LIMIT ?", extra=(TERM_CANDIDATES + 1,))
        if rows:
            out.add_term(rows, term.text, exact)

    if p.scan:
        probes = [f"instr({text}, ?) > 0" for _ in p.scan]
        needles = [_folded(t.text) for t in p.scan]
        rows = conn.execute(
            f"SELECT {cols}, {', '.join(probes)} FROM messages m "
            f"WHERE m.session_id IN (SELECT value FROM json_each(?)) AND {fts.fsql} "
            f"AND ({' OR '.join(probes)}) LIMIT ?",
            [*needles, scope_json, *fts.fparams, *needles, TERM_CANDIDATES * len(p.scan)],
        ).fetchall()
        for i, term in enumerate(p.scan):
            matching = [r[:3] for r in rows if r[3 + i]]
            if matching:
                out.add_term(matching, term.text, exact)


def search(
    conn: sqlite3.Connection,
    shape: Shape,
    scope_ids: list[str],
    query: ParsedQuery,
    filters: Filters,
    limit: int,
    scope_messages: int | None = None,
) -> list[Hit]:
    """The best ``limit`` messages; ``scope_messages`` (an estimate is fine)
    saves counting the scope's rows."""
    if not scope_ids or query.empty:
        return []
    scope_json = json.dumps(scope_ids)
    total = scope_messages if scope_messages else scope_size(conn, scope_json)
    exact, partial = plan(query, shape, filters, total)
    out = _Collector(total)
    _run(conn, shape, exact, scope_json, filters, out, exact=True)
    if not out.hits:
        _run(conn, shape, partial, scope_json, filters, out)
    coverage = session_coverage(conn, shape, query, scope_json, filters, out, len(scope_ids))
    return rank(list(out.hits.values()), coverage)[:limit]


def session_coverage(conn: sqlite3.Connection, shape: Shape, query: ParsedQuery, scope_json: str,
                     filters: Filters, out: _Collector, sessions: int) -> dict[str, float]:
    """Per session, the IDF (among the scope's sessions) of each distinct query term it holds.

    Only the sessions of the hits matter, and only with two or more terms (one
    term covers every hit alike)."""
    terms = dict(out.term_sessions)
    words = [t for t in query.terms if t.kind == "word" and not t.partial] if shape.words_fts else []
    if len(words) + len(terms) < 2 or not out.hits:
        return {}
    fts = _Scoped(conn, shape, scope_json, filters, out.total)
    for term in words:
        match = fts_quote(term.text) + (f" OR {fts_quote(term.stem)}*" if term.stem else "")
        rows = fts.rows(shape.words_fts, match, "m.session_id", "LIMIT ?", extra=(COVERAGE_ROWS + 1,))
        if len(rows) <= COVERAGE_ROWS:
            terms.setdefault(term.text, set()).update(r[0] for r in rows)
    cover: dict[str, float] = {}
    for holders in terms.values():
        if not holders:
            continue
        weight = _idf(sessions, len(holders))
        for sid in holders:
            cover[sid] = cover.get(sid, 0.0) + weight
    return cover


def rank(hits: list[Hit], coverage: dict[str, float] | None = None) -> list[Hit]:
    """Best first, by message score plus a share of its session's score and coverage."""
    by_session: dict[str, list[float]] = {}
    for hit in hits:
        by_session.setdefault(hit.session_id, []).append(hit.score)
    session_score = {
        sid: sum(sorted(scores, reverse=True)[:SESSION_TOP]) / SESSION_TOP for sid, scores in by_session.items()
    }
    for hit in hits:
        hit.score += SESSION_WEIGHT * session_score[hit.session_id]
    if coverage and hits:
        top_score = max(h.score for h in hits) or 1.0
        top_cover = max(coverage.values()) or 1.0
        for hit in hits:
            hit.score = hit.score / top_score + COVERAGE_WEIGHT * coverage.get(hit.session_id, 0.0) / top_cover
    return sorted(hits, key=lambda h: (-h.score, -h.timestamp, -h.message_id))
