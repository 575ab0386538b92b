"""Keyword search inside one scope of state.db.

A query is a handful of *concepts* (the words a person typed, see
``querytext``), some with *pieces* that find them when written differently.
For each term, the engine finds the scope's messages that hold it. The
plugin's own index (``textindex``, ``_OwnIndex``) answers when it is current
for the scope and can look up every term; otherwise (still being built,
turned off, unusable, a term of punctuation alone) Hermes's indexes do
(``_HermesIndexes``), always with the scope pushed into SQL (``json_each``
over the session ids, so the plan never ranks the whole database and filters
afterwards):

- words and typed phrases: Hermes's unicode61 index (a word with its prefix,
  so "painted" is found by "painting", and its irregular forms, "went" for "go");
- symbols and CJK words of 3+ characters: exact substrings via the trigram
  index (or, for a symbol, its words in the unicode61 index, confirmed);
- CJK words of 1-2 characters (most Chinese words), which the trigram index
  silently cannot find: ``instr`` over the scope's own rows, in one pass
  (a two-character word the scope never says is looked for again as its
  characters, see ``characters``; in hybrid mode those of a word it does say
  too, credited only where the semantic side backs the message, see
  ``backed_characters`` and ``Ranking``);
- in scopes small enough to read whole, every substring by that one pass;
- while Hermes fills its indexes anew (``messages.unindexed``), the rows they do not hold
  yet, for each term looked up in them, by that pass over those rows.

A one-character Chinese word is found inside longer words too (开 in 开心), so where a
candidate's text is read it earns the whole concept only where the character stands as a
word (``scoring.lone``).

The candidates found are then scored and ranked by ``scoring``, which only counts and weighs.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Collection

from ..files import derived
from ..hermes import messages, paths
from ..hermes.messages import Filters, Row
from ..hermes.statedb import Shape
from ..hits import Hit
from ..home import Home
from . import answerkind, cjk, querytext, textindex
from .lengths import Lengths, PerSession
from .querytext import STOP_WORDS, ParsedQuery, Term, fts_quote, is_cjk
from .scoring import (GLUED_CREDIT, WORD_TOKEN, Backend, Concept, Facts, Reads, Sessions, by_session, inverse_frequency,
                      rank, shares)

if TYPE_CHECKING:
    import numpy as np

    from ..context import SearchContext
    from ..settings import Settings

logger = logging.getLogger(__name__)

# Rows fetched per term. A term in more of the scope's messages than this is
# common, so it weighs little; beyond this its rows are not all credited.
TERM_CANDIDATES = 5000
# A term is counted by reading up to this many of its rows (fewer: they are its keys too, with no
# second lookup); a commoner one is then counted apart. Most terms of a question are rarer, and a
# lookup's fixed cost (~0.1 ms at 1M messages) is that of reading a few hundred rows. At most
# TERM_CANDIDATES + 1: the rows read are then all those a term's keys would be.
PROBE_ROWS = 1000
# A concept found only in pieces (the bigrams of a longer CJK word, the words
# of a symbol) earns at most this share of it, when all pieces the scope says are there...
PIECE_CREDIT = 0.5
# ...and one found in another form earns this: an inflection ("painted" for
# "painting"), an irregular form ("went" for "go"; 0.7 and 0.9 did no better on
# LoCoMo's tune half); one glued to other text (a substring, not a token) earns
# ``scoring.GLUED_CREDIT``, as a one-character Chinese word only inside longer words does.
STEM_CREDIT = 0.8
_ALTERNATIVES = {"stem": STEM_CREDIT, "form": STEM_CREDIT, "glued": GLUED_CREDIT}
# A character of a two-character word the scope does say (``backed_characters``) earns this
# times its rarity against the word's, and only in messages the semantic side backs.
CHARACTER_CREDIT = 0.5
_NUMERALS = frozenset(answerkind.NUMERALS)
# Index rows read for a query's rarer terms; its commoner terms are then read
# only in this many sessions, those where the rarer ones are.
FETCH_ROWS = 6000
CANDIDATE_SESSIONS = 50

# Scopes up to this many messages answer substrings (symbols, CJK) by
# scanning their own rows (~1.7 µs a row); bigger ones use an index.
SCAN_LIMIT = 10_000


def _has_cjk(text: str) -> bool:
    return any(is_cjk(ch) for ch in text)


@dataclass
class _Plan:
    words: list[tuple[Term, str]] = field(default_factory=list)  # (term, FTS5 match) on the word index
    phrases: list[Term] = field(default_factory=list)  # symbols: word-index phrase, then exact check
    trigram: list[Term] = field(default_factory=list)
    scan: list[Term] = field(default_factory=list)


def _symbol_phrase(text: str) -> str | None:
    tokens = WORD_TOKEN.findall(text.casefold())
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
        elif shape.words_fts is not None and (term.kind in ("word", "form") or term.kind == "phrase" and not _has_cjk(text)):
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
    """Each word's inflections ("paint*" for "painting") and irregular forms ("went" for "go"),
    as other forms of it."""
    words = [t for t in query.terms if t.kind == "word" and not t.partial]
    return [replace(t, kind="stem", text=t.stem, partial=True) for t in words
            if t.stem and t.stem not in STOP_WORDS] + [
        Term("form", form, partial=True, concept=t.concept) for t in words for form in t.forms
        if form not in STOP_WORDS]


def glued(query: ParsedQuery) -> list[Term]:
    """The query's words as bare substrings: unicode61 reads "修改youer服务端" as
    one token, so a Latin word glued to CJK text is only found this way."""
    return [replace(t, kind="glued", partial=True) for t in query.terms
            if t.kind == "word" and not t.partial and len(t.text) >= 3]


def characters(query: ParsedQuery) -> list[Term]:
    """The characters of the query's two-character CJK words, those that are not grammar nor a
    word of the query themselves, each as a piece of its word: searched only for a word the
    scope never says.

    A short daily chat often says a question's word as another word around the same character
    (看牙 as 蛀牙 / 牙冠, 房贷 as 贷款, 茶叶 as 龙井茶); a word the history never says can
    only be found that way, and its characters then earn its concept's PIECE_CREDIT. A word
    the scope does say keeps to itself (in hybrid mode, but for ``backed_characters``):
    characters for every two-character word (or for words said in at most 2 or 20 messages)
    gained more on the tune halves but lost held-out zh-daily questions, and made Chinese
    questions at 1M messages slower. Figures and the other variants tried: docs/benchmarks.md,
    "Characters of an unseen Chinese word".
    """
    heads = {t.text for t in query.terms if not t.partial}
    return [Term("cjk", ch, partial=True, concept=t.concept) for t in query.terms
            if t.kind == "cjk" and not t.partial and len(t.text) == 2 and not cjk.is_function_word(t.text)
            for ch in cjk.content_chars(t.text) if ch not in heads]


def backed_characters(query: ParsedQuery) -> list[Term]:
    """``characters`` of the query's words, numerals left out, as terms that count only where
    the semantic side backs the message (kind ``character``): for a word the scope does say.

    A question's 海滩 is often 海边 in the chat, 领养 is 收养; but credited everywhere, as
    another form at ``CHARACTER_CREDIT`` × rarity, such characters lifted messages where they
    are in unrelated words (医 of 医保, 板 of 血小板, 二 of 三千二) and lost held-out zh-daily
    questions. Where the message's meaning backs it (``fusion.backed``) they lifted LoCoMo-zh
    and zh-daily with no held-out question falling out of the first five (docs/benchmarks.md,
    "Characters gated by meaning")."""
    return [replace(t, kind="character") for t in characters(query) if t.text not in _NUMERALS]


def _planned(value: str | None) -> str:
    """A table or phrase ``_plan`` checked exists before it planned a term that needs it."""
    if value is None:
        raise AssertionError("a keyword term was planned on a table or phrase that does not exist")
    return value


def _run(fts: messages.ScopedMatches, shape: Shape, p: _Plan) -> dict[Term, list[Row]]:
    """Each planned term's rows in the scope (at most TERM_CANDIDATES + 1)."""
    found: dict[Term, list[Row]] = {}
    cap = TERM_CANDIDATES + 1
    for term, match in p.words:
        found[term] = fts.rows(_planned(shape.words_fts), match, cap)
    for term in p.phrases:
        found[term] = fts.rows(_planned(shape.words_fts), _planned(_symbol_phrase(term.text)), cap, term.text)
    for term in p.trigram:
        found[term] = fts.rows(_planned(shape.trigram_fts), fts_quote(term.text), cap)
    if p.scan:
        found.update(zip(p.scan, fts.scan([t.text for t in p.scan], cap), strict=True))
    indexed = [t for t, _ in p.words] + p.phrases + p.trigram
    if indexed and fts.unindexed is not None:
        # Rows Hermes's indexes do not hold yet (a refill under way) are read for the terms as
        # substrings, as Hermes's own search reads them meanwhile: old messages never vanish.
        more = fts.scan([t.text for t in indexed], cap, fts.unindexed)
        for term, rows in zip(indexed, more, strict=True):
            seen = {r[0] for r in found[term]}
            found[term] = (found[term] + [r for r in rows if r[0] not in seen])[:cap]
    return found


def _concepts(groups: dict[int, list[Term]], found: dict[Term, "np.ndarray"], keys: "np.ndarray",
              total: int, counts: dict[Term, int] | None = None) -> list[Concept]:
    """Every concept of the query with its weight (IDF within the scope) and, per
    candidate in ``keys`` (sorted), how much of it the candidate holds.

    A concept that nothing in the scope holds keeps its (high) weight: the
    question asked for it, so no message holds the whole question."""
    import numpy as np

    counts = counts or {}
    idf = {t: inverse_frequency(total, counts.get(t, len(found.get(t, ())))) for terms in groups.values() for t in terms}
    concepts = []
    for terms in groups.values():
        head = terms[0] if not terms[0].partial else None  # None: its whole is another concept's term
        parts = [t for t in terms if t.partial and t.kind not in _ALTERNATIVES and t.kind != "character"]
        credit = np.zeros(len(keys))
        gated = []
        # A piece the scope never says (a bigram across a compound's inner cut: 先照 of
        # 优先照顾) takes no share from the others; a lone character still does, as alone
        # it is mostly in other words (面 of an unseen 负面: 方面, 见面).
        held = [t for t in parts if len(t.text) == 1 or counts.get(t, len(found.get(t, ())))]
        parts_weight = sum(idf[t] for t in held) or 1.0
        for t in parts:
            if len(found.get(t, ())):
                credit[np.searchsorted(keys, found[t])] += PIECE_CREDIT * idf[t] / parts_weight
        weight = idf[head] if head else max((idf[t] for t in terms), default=0.0)
        for t in terms:
            # Another form counts as rare as it is: "like*" for "likely" is common.
            rarity = min(1.0, idf[t] / (weight or 1.0))
            if t.kind == "character":
                gated.append((textindex.normalise(t.text), t))
                continue
            share = 1.0 if t is head else _ALTERNATIVES.get(t.kind, 0.0) * rarity
            if share and len(found.get(t, ())):
                at = np.searchsorted(keys, found[t])
                credit[at] = np.maximum(credit[at], share)
        if head is not None and head.kind in ("word", "phrase", "cjk"):
            concepts.append(Concept(weight, credit, textindex.normalise(head.text), not _has_cjk(head.text),
                                     tuple(gated), head.kind == "cjk" and len(head.text) == 1))
        else:
            concepts.append(Concept(weight, credit, characters=tuple(gated)))
    return concepts


def from_hermes(meanwhile: bool = True) -> str:
    """What a person is told when Hermes's indexes answered the keyword side for the plugin's: they
    find Chinese words of one or two characters only by reading the scope, and rank otherwise.
    ``meanwhile``: until the plugin's index is built (not in a process whose build ends with it)."""
    return f"keyword results come from Hermes's own indexes{' meanwhile' if meanwhile else ''}, weaker on Chinese"


# Why Hermes's indexes answer the keyword side with ``keyword_index: false``, the user's choice.
TURNED_OFF = ("the plugin's keyword index is turned off in the settings ('keyword_index: false'); "
              "Hermes's own indexes answer")
# What ``status`` says before any search made keywords.db (``Source.built``).
NOT_BUILT = derived.not_built("keyword", "builds it")


@dataclass
class Source:
    """Where a search's keyword side looks its terms up: the plugin's own index (``lookup``: the
    scope is current there), else Hermes's indexes, ``instead`` saying why when the plugin's index
    could not be used (None: it answers, or the settings turned it off). ``status`` as ``report``
    has it, and ``unavailable`` too while another process holds the file's write lock (as the
    semantic side says of its file); ``index``: how far the scope is while ``indexing`` (and, for
    the ``status`` command, when ``ready``); ``built``: False for the ``status`` of a home with no
    ``keywords.db`` yet (``report``)."""

    lookup: textindex.Lookup | None = None
    instead: str | None = None
    status: str = "ready"  # ready | indexing | unavailable | disabled
    index: dict | None = None
    built: bool = True

    def failed(self, exc: Exception) -> "Source":
        """The plugin's index could not be used, or failed under the search: Hermes's indexes answer
        (the rest of) it."""
        logger.warning("keyword index unavailable: %s", exc)
        self.lookup, self.instead, self.status, self.index = None, f"could not be used: {exc}", "unavailable", None
        return self

    def _said(self) -> str | None:
        """Why Hermes's indexes answered for the plugin's, and what that means (``from_hermes``)."""
        if self.instead is None:
            return None
        return f"keyword index {self.instead}; {from_hermes()}"

    def warnings(self) -> tuple[str, ...]:
        """The response's warning when Hermes's indexes answered for the plugin's (none when the
        settings turned it off)."""
        said = self._said()
        return (said,) if said else ()

    def fields(self) -> dict:
        """What a search response (and ``report``, for ``status``) says of the keyword side:
        ``keyword_status``, and when it is not ``ready``, ``keyword_reason`` (the warning's words);
        ``keyword_index`` when ``index`` is known."""
        out: dict[str, object] = {"keyword_status": self.status}
        reason = TURNED_OFF if self.status == "disabled" else NOT_BUILT if not self.built else self._said()
        if reason:
            out["keyword_reason"] = reason
        if self.index is not None:
            out["keyword_index"] = self.index
        return out


def _source(home: Path, settings: Settings,
            ask: Callable[[textindex.Keeper], dict[str, textindex.KeywordState] | textindex.Pending],
            ready: Callable[[textindex.Keeper, dict[str, textindex.KeywordState]], Source]) -> Source:
    """What the keeper says of a scope when asked (``ask``: ``Keeper.ready`` for a search,
    ``Keeper.report`` for ``status``), in the same words for both: ``ready`` makes the answer of a
    current scope, and otherwise Hermes's indexes answer (``Source``)."""
    if not settings.keyword_index:
        return Source(status="disabled")
    try:
        keeper = textindex.keeper(home)
        states = ask(keeper)
    except (derived.StoreError, sqlite3.Error, OSError) as exc:
        # A full disk, an unwritable folder, a FIFO at its path: Hermes's indexes answer instead.
        return Source().failed(exc)
    if isinstance(states, textindex.Pending):
        if states.locked:  # not a build: another process held the file's write lock past the search's budget
            return Source(instead=states.why(), status="unavailable")
        rebuilt = f" ({keeper.index.rebuilt_reason})" if keeper.index.rebuilt_reason else ""
        return Source(instead=states.why() + rebuilt, status="indexing", index=states.counts())
    return ready(keeper, states)


def own_index(ctx: SearchContext) -> Source:
    """The plugin's own keyword index for this scope, when it is current (brought up to date
    here if only a little is missing); else Hermes's indexes answer (``Source``)."""
    scope, filters = ctx.scope, ctx.filters
    budget = ctx.settings.index_budget_ms / 1000.0
    return _source(ctx.home, ctx.settings,
                   lambda keeper: keeper.ready(ctx.conn, scope.attribution.key, scope.members, ctx.counts,
                                               wait=budget, build_wait=budget if ctx.one_shot else 0.0),
                   lambda keeper, states: Source(textindex.lookup_for(
                       keeper.index, states, scope.session_ids, "tool" in filters.roles, filters.since, filters.until)))


def report(home: Path, settings: Settings, conn: sqlite3.Connection, members: list[str]) -> dict:
    """The ``status`` command's fields for the plugin's keyword index of ``members``, as a search
    says them (``Source.fields``), and for a current scope its ``keyword_index`` too; nothing is
    indexed (``Keeper.report``). A home never searched has no ``keywords.db``, and a status read
    makes none: not built yet."""
    path = paths.data_dir(home) / textindex.FILE_NAME
    if settings.keyword_index and members and not path.exists():
        why = derived.cannot_make(path)  # as the next search meets it
        if why is not None:
            return Source(instead=f"could not be used: {why}", status="unavailable").fields()
        return Source(status="indexing", index=textindex.progress(0, len(members)), built=False).fields()
    # Another version's file is rebuilt by the next search: opened here, it was emptied by a look.
    other = textindex.another_version(path) if settings.keyword_index and members else None
    if other is not None:
        return Source(instead=other, status="indexing", index=textindex.progress(0, len(members))).fields()
    done = textindex.progress(len(members), len(members))
    return _source(home, settings, lambda keeper: keeper.report(conn, members),
                   lambda _keeper, _states: Source(index=done)).fields()


def search(ctx: SearchContext, limit: int, source: Source | None = None) -> list[Hit]:
    """The best ``limit`` messages of the context's scope, looked up where ``source``
    (``own_index``) says: the plugin's index when it can answer all the terms."""
    return find(ctx, source).hits(limit)


def topped_up(ctx: SearchContext, hits: list[Hit], limit: int, source: Source | None,
              sessions: int) -> list[Hit]:
    """``hits`` (the question's best ``limit``), and when they hold some but fewer than ``sessions``
    sessions, the best ``limit`` messages of the others by the question's stop words after them
    (``filled``). Only a question whose words the scope says little pays for the second search; one
    whose words it never says finds nothing still (a question is searched as its words: stop words
    alone would answer any question with something)."""
    if not hits or len({h.session_id for h in hits}) >= sessions:
        return hits
    stop = querytext.stop_words(ctx.query)
    if stop.empty:
        return hits
    return filled(hits, find(replace(ctx, query=stop), source).hits(limit))


def filled(hits: list[Hit], others: list[Hit]) -> list[Hit]:
    """``hits`` followed by those of ``others`` (best first) in sessions ``hits`` do not hold,
    each scored below the last of ``hits``, in their order: a session found by the question's
    words comes before any found by its stop words alone."""
    seen = {h.session_id for h in hits}
    rest = [h for h in others if h.session_id not in seen]
    if not rest:
        return hits
    floor = min((h.score for h in hits), default=1.0)
    top = max(h.score for h in rest) or 1.0
    # Scaled into (0, floor/2]: below every hit of the question's words, their order kept.
    return hits + [replace(h, score=floor / 2 * max(h.score, 0.0) / top) for h in rest]


def find(ctx: SearchContext, source: Source | None = None, gated: bool = False) -> Ranking:
    """The query's terms looked up in the context's scope, to be ranked (``Ranking.hits``);
    ``source`` as in ``search``. ``gated``: the ``backed_characters`` of the words the scope
    says are looked up too, for ``Ranking.backed`` to credit where the semantic side backs them."""
    if not ctx.scope.session_ids or ctx.query.empty:
        return Ranking([], _no_keys(), 0, _HermesIndexes(ctx))
    if source is not None and source.lookup is not None:
        try:
            matches = _index_matches(ctx.query, source.lookup)
            if matches is not None:
                return _find(ctx, _OwnIndex(ctx, source.lookup, matches), gated)
        except derived.StoreError as exc:
            # The plugin's index failed under this search (found damaged, and set aside for a
            # rebuild; or a full disk): Hermes's own indexes answer it, and say so.
            source.failed(exc)
    return _find(ctx, _HermesIndexes(ctx), gated)


def _no_keys() -> "np.ndarray":
    import numpy as np

    return np.zeros(0, dtype=np.int64)


def _find(ctx: SearchContext, backend: Backend, gated: bool) -> Ranking:
    import numpy as np

    scope = ctx.scope
    total = scope.message_estimate or messages.scope_size(ctx.conn, json.dumps(scope.session_ids))
    groups = ctx.query.concepts
    found, counts = backend.find(groups, total, gated)
    arrays = [v for v in found.values() if len(v)]
    keys = np.unique(np.concatenate(arrays)) if arrays else _no_keys()
    mean = backend.scope_lengths().unequal_mean() if len(keys) else None
    return Ranking(_concepts(groups, found, keys, total, counts), keys, len(scope.session_ids), backend, total,
                   asks=answerkind.asked(ctx.query.raw), mean_length=mean)


def _kept_lengths(ctx: SearchContext) -> PerSession:
    """The home's sessions' message lengths, kept across searches (``lengths.PerSession``)."""
    return Home.of(ctx.home).slot("keyword.lengths", lambda _home: PerSession())


@dataclass
class Ranking:
    """A query's concepts and the candidates that hold any of them (``keys``, sorted), in a
    scope of ``sessions`` sessions."""

    concepts: list[Concept]
    keys: "np.ndarray"
    sessions: int
    backend: Backend
    total: int = 0  # messages in the scope, for the rarity of a backed character
    known: Facts | None = None  # the keys' facts, once asked for (``facts``)
    reads: Reads | None = None  # once anything is read; shared with the rankings made from this one (``backed``)
    near: frozenset[int] = frozenset()  # messages the semantic side finds near the question (``backed``)
    asks: str | None = None  # the kind of answer the question asks for (``answerkind.asked``)
    mean_length: float | None = None  # the scope's mean message length, where its lengths are unequal
    # The keys' sessions, once asked for (``rank`` and ``about``); not carried into a ranking made
    # from this one (``backed``: its concepts' credit differs).
    _sessions: Sessions | None = field(default=None, init=False, repr=False, compare=False)

    def _reads(self) -> Reads:
        if self.reads is None:
            self.reads = Reads(self.backend)
        return self.reads

    def _by_session(self) -> Sessions:
        if self._sessions is None:
            self._sessions = by_session(self.concepts, self.keys, self.backend)
        return self._sessions

    def facts(self) -> Facts:
        if self.known is None:
            self.known = self.backend.facts(self.keys)
        return self.known

    def gated(self) -> bool:
        """Whether a candidate may earn more where the semantic side backs it (``hits``)."""
        return any(c.characters for c in self.concepts)

    def hits(self, keep: int) -> list[Hit]:
        """The best ``keep`` candidates (``rank``)."""
        if not len(self.keys):
            return []
        return rank(self.concepts, self.keys, self.sessions, self.backend, keep, self.facts(), self._reads(),
                    self.near, self.asks, self.mean_length, self._by_session())

    def about(self) -> set[str]:
        """The candidates' sessions *about* the question (``scoring.spread``), by session id."""
        grouped = self._by_session() if len(self.keys) else None
        if grouped is None or grouped.lean is None:  # no candidates, or no concepts
            return set()
        return {self.backend.names[n] for n in grouped.ordinals[grouped.lean > 0].tolist()}

    def answered(self, message_ids: list[int]) -> dict[int, bool | None]:
        """Whether each of ``message_ids`` (any, not only candidates) says the kind of answer the
        question asks for (``answerkind.answers``; empty when it asks for none), its text read as the
        ranking reads its candidates': those the ranking read are not read again."""
        if self.asks is None:
            return {}
        texts = self._reads().folded(message_ids)
        return {m: answerkind.answers(texts.get(m), self.asks) for m in message_ids}

    def readable_texts(self, message_ids: list[int]) -> dict[int, str]:
        """The normalised texts of those of ``message_ids`` read for an answer
        (``answerkind.readable``), read as ``answered`` reads them."""
        texts = self._reads().folded(message_ids)
        return {m: t for m, t in texts.items() if answerkind.readable(t)}

    def backed(self, message_ids: Collection[int], near: Collection[int] = ()) -> Ranking | None:
        """This ranking with the candidates among ``message_ids`` (those the semantic side backs)
        credited for the ``backed_characters`` their text says, and those among ``near`` (a
        lower bar) keeping a one-character word inside another word whole (``lone``); None if
        neither can change it. Only a candidate is credited: a character alone lifts nothing."""
        import numpy as np

        whole = frozenset(near) if near and any(c.single for c in self.concepts) else frozenset()
        if not (message_ids and self.gated()):
            return replace(self, near=whole) if whole else None
        ids = self.facts().message_ids
        at = np.flatnonzero(np.isin(ids, list(message_ids)))
        texts = self._reads().folded([int(m) for m in ids[at]])
        said = [texts.get(int(m), "") for m in ids[at]]
        concepts = [replace(c, credit=_with_characters(c, at, said, self._character_share)) if c.characters else c
                    for c in self.concepts]
        if not whole and all(np.array_equal(a.credit, b.credit) for a, b in zip(concepts, self.concepts, strict=True)):
            return None
        # Known to be the same messages and texts: ``known`` and ``reads`` go with it.
        return replace(self, concepts=concepts, near=whole)

    def _character_share(self, concept: Concept, term: Term) -> float:
        """The share of ``concept`` its backed character ``term`` earns: CHARACTER_CREDIT times
        its rarity against the concept's word; 0 where the scope never says it. Counted only
        for a character a backed message says: counting every one took ~0.7 ms of a Chinese
        hybrid search at 1M messages, and most are in none."""
        count = self.backend.character_count(term)
        return CHARACTER_CREDIT * min(1.0, inverse_frequency(self.total, count) / (concept.weight or 1.0)) if count else 0.0


def _with_characters(concept: Concept, at: "np.ndarray", texts: list[str],
                     share_of: Callable[[Concept, Term], float]) -> "np.ndarray":
    """The concept's credit, each candidate ``at`` (whose normalised text is ``texts``) holding
    at least the share (``share_of``) of the best of its characters it says."""
    credit = concept.credit.copy()
    shares: dict[Term, float] = {}
    for i, text in zip(at.tolist(), texts, strict=True):
        if credit[i] >= CHARACTER_CREDIT:  # more than any character's share: the word, most often
            continue
        said = [t for ch, t in concept.characters if ch in text]
        for t in said:
            if t not in shares:
                shares[t] = share_of(concept, t)
        credit[i] = max([credit[i]] + [shares[t] for t in said if shares[t]])
    return credit


class _OwnIndex:
    """The plugin's ``keywords.db``, current for the scope; state.db says which of its
    candidates are still live (rewinds and roles are state.db's)."""

    def __init__(self, ctx: SearchContext, lookup: textindex.Lookup, matches: dict[Term, str]):
        self.ctx, self.lookup, self.matches = ctx, lookup, matches
        self.names = lookup.session_of
        self.characters: dict[Term, str] = {}  # the backed characters' matches, counted when asked
        self.edited: set[int] = set()  # messages whose text is no longer what was indexed (``outdated``)

    def find(self, groups: dict[int, list[Term]], total: int, gated: bool
             ) -> tuple[dict[Term, "np.ndarray"], dict[Term, int]]:
        for t in self.matches:
            if t.kind in ("stem", "form"):
                groups[t.concept].append(t)
        # Each term counted, and a rare one's keys read in the same lookup (``Lookup.counted``).
        read = {t: self.lookup.counted(match, PROBE_ROWS) for t, match in self.matches.items()}
        counts = {t: n for t, (n, _) in read.items()}
        heads = self.ctx.query.heads
        for t in characters(self.ctx.query):
            match = textindex.match_for(textindex.normalise(t.text))
            if match is not None and counts[heads[t.concept]] == 0:
                self.matches[t], read[t] = match, self.lookup.counted(match, PROBE_ROWS)
                counts[t] = read[t][0]
                groups[t.concept].append(t)
        # Only counted, for their rarity, and only if a backed message says one (``Ranking.backed``).
        for t in backed_characters(self.ctx.query) if gated else []:
            match = textindex.match_for(textindex.normalise(t.text))
            if match is not None and counts[heads[t.concept]]:
                self.characters[t] = match
                groups[t.concept].append(t)
        found = _from_index(self.lookup, self.matches, counts, groups, total,
                            {t: keys for t, (_, keys) in read.items() if keys is not None})
        _confirm_symbols(self.ctx.conn, self.lookup, found)
        return found, counts

    def sessions_of(self, keys: "np.ndarray") -> "np.ndarray":
        return self.lookup.sessions_of(keys)

    def facts(self, keys: "np.ndarray") -> Facts:
        return Facts(*self.lookup.index.doc_arrays(keys))

    def live(self, message_ids: list[int]) -> set[int]:
        return messages.live_ids(self.ctx.conn, self.ctx.shape, message_ids, self.ctx.filters.roles)

    def texts(self, message_ids: list[int]) -> dict[int, str]:
        return messages.texts(self.ctx.conn, message_ids)

    def outdated(self, keys: "np.ndarray", message_ids: list[int], lengths: "np.ndarray",
                 texts: list[str | None]) -> set[int]:
        """The index's length of a message is its normalised text's (``textindex.index_texts``): one
        read otherwise was edited in place since it was indexed, its row count and last id unchanged,
        and would be found by words it no longer says. Such a message is dropped, and its session
        marked to be indexed again by the next search; with another process writing keywords.db, the
        mark waits the search's budget at most and the redo goes to the background
        (``Keeper.changed``). The rows Hermes itself may still rewrite are
        checked by their digests before a search (``textindex.Keeper._edited``); this catches edits
        elsewhere (an importer, ``hermes sessions clean-markers``) that change the length."""
        fresh = [i for i, (n, text) in enumerate(zip(lengths.tolist(), texts, strict=True))
                 if text is not None and len(text) != n and message_ids[i] not in self.edited]
        if fresh:
            self.edited.update(message_ids[i] for i in fresh)
            sessions = sorted({self.names[o] for o in self.lookup.sessions_of(keys[fresh]).tolist()})
            ctx = self.ctx
            try:
                textindex.keeper(ctx.home).changed(ctx.scope.attribution.key, sessions,
                                                   ctx.settings.index_budget_ms / 1000.0)
            except derived.StoreError as exc:  # the hits are right without them; a later search marks them
                logger.warning("could not mark edited messages for re-indexing: %s", exc)
        return self.edited

    def character_count(self, term: Term) -> int:
        return self.lookup.count(self.characters[term])

    def scope_lengths(self) -> Lengths:
        return self.lookup.scope_lengths(_kept_lengths(self.ctx))

    def session_sizes(self, sessions: "np.ndarray") -> "np.ndarray":
        import numpy as np

        return np.array(self.lookup.session_sizes(_kept_lengths(self.ctx), sessions.tolist()), dtype=np.float64)


class _HermesIndexes:
    """Hermes's own FTS tables (and the scope's rows). A key is the message's id, and the
    rows found hold all the ranking asks, read live and of the searched roles."""

    def __init__(self, ctx: SearchContext):
        self.ctx = ctx
        self.rows_of: dict[int, Row] = {}
        self.names: list[str] = []
        self.number: dict[str, int] = {}
        self.characters: dict[Term, int] = {}

    def find(self, groups: dict[int, list[Term]], total: int, gated: bool
             ) -> tuple[dict[Term, "np.ndarray"], dict[Term, int]]:
        import numpy as np

        rows = _from_hermes(self.ctx, groups, total, gated)
        # A backed character only needs its count (``Ranking.backed`` reads it in the backed messages).
        self.characters = {t: len(rows.pop(t)) for t in [t for t in rows if t.kind == "character"]}
        self.rows_of = {r[0]: r for term_rows in rows.values() for r in term_rows}
        self.names = sorted({r[1] for r in self.rows_of.values()})
        self.number = {sid: i for i, sid in enumerate(self.names)}
        found = {t: np.unique(np.fromiter((r[0] for r in term_rows), dtype=np.int64, count=len(term_rows)))
                 for t, term_rows in rows.items()}
        return found, {}

    def sessions_of(self, keys: "np.ndarray") -> "np.ndarray":
        import numpy as np

        return np.array([self.number[self.rows_of[int(k)][1]] for k in keys], dtype=np.int64)

    def facts(self, keys: "np.ndarray") -> Facts:
        import numpy as np

        return Facts(keys, np.array([self.rows_of[int(k)][3] or 0 for k in keys], dtype=np.float64),
                      np.array([self.rows_of[int(k)][2] or 0.0 for k in keys], dtype=np.float64))

    def live(self, message_ids: list[int]) -> set[int]:
        return set(message_ids)

    def texts(self, message_ids: list[int]) -> dict[int, str]:
        return messages.texts(self.ctx.conn, message_ids)

    def outdated(self, keys: "np.ndarray", message_ids: list[int], lengths: "np.ndarray",
                 texts: list[str | None]) -> set[int]:
        return set()  # its candidates were found in the rows as they are now

    def character_count(self, term: Term) -> int:
        return self.characters.get(term, 0)

    def scope_lengths(self) -> Lengths:
        ctx, roles = self.ctx, self.ctx.filters.roles

        def read(stale: list) -> dict:
            said = messages.lengths(ctx.conn, ctx.shape, [sid for sid, _ in stale], roles)
            return {key: Lengths.of(said.get(key[0], ())) for key in stale}

        # A session's rows counted, its last id and its active rows: what changes when it is written
        # to, rewound or restored. Read for all members, as the semantic index's check asks for them.
        counts = ctx.counts(ctx.scope.members)
        return _kept_lengths(ctx).scope({(sid, roles): counts[sid] for sid in ctx.scope.session_ids}, read)

    def session_sizes(self, sessions: "np.ndarray") -> "np.ndarray":
        import numpy as np

        kept, roles = _kept_lengths(self.ctx), self.ctx.filters.roles
        return np.array(kept.counts((self.names[n], roles) for n in sessions.tolist()), dtype=np.float64)


def _from_index(lookup: textindex.Lookup, matches: dict[Term, str], counts: dict[Term, int],
                groups: dict[int, list[Term]], total: int, read: dict[Term, "np.ndarray"] | None = None
                ) -> dict[Term, "np.ndarray"]:
    """Each term's keys in the plugin's index. Reading a row out of FTS5 costs
    ~1 µs, so the rarer terms are read whole (within FETCH_ROWS; the rarest
    always), and the commoner ones only in the sessions where the rarer ones
    point (a common word weighs little, and elsewhere it cannot lift a
    message past those sessions'). ``read``: terms whose keys were read whole already."""
    import numpy as np

    read = read or {}
    found: dict[Term, np.ndarray] = {}
    budget = FETCH_ROWS
    for term in sorted(matches, key=lambda t: counts[t]):
        if not found or counts[term] <= budget:
            found[term] = read[term] if term in read else lookup.keys(matches[term], TERM_CANDIDATES + 1)
            budget -= counts[term]
    common = [t for t in matches if t not in found]
    if common:
        arrays = [v for v in found.values() if len(v)]
        keys = np.unique(np.concatenate(arrays)) if arrays else np.zeros(0, dtype=np.int64)
        share = shares(_concepts(groups, found, keys, total, counts), len(keys))
        sessions = lookup.sessions_of(keys)
        best: dict[int, float] = {}
        for session, value in zip(sessions.tolist(), share.tolist(), strict=True):
            best[session] = max(best.get(session, 0.0), value)
        top = sorted(best, key=best.__getitem__, reverse=True)[:CANDIDATE_SESSIONS]
        for term in common:
            found[term] = lookup.keys_in(matches[term], TERM_CANDIDATES + 1, top, counts[term]) if top else keys[:0]
    return found


def _from_hermes(ctx: SearchContext, groups: dict[int, list[Term]], total: int, gated: bool
                 ) -> dict[Term, list[Row]]:
    """Each term's rows from Hermes's own indexes (and the scope's rows)."""
    shape, filters, query = ctx.shape, ctx.filters, ctx.query
    fts = messages.ScopedMatches(ctx.conn, shape, json.dumps(ctx.scope.session_ids), filters, total)
    forms = stems(query) if shape.words_fts is not None else []
    found = _run(fts, shape, plan(query.terms + forms, shape, filters, total))
    # Glued words are looked for when the word found nothing, or when the
    # query itself mixes scripts (then the history likely does too); a
    # word's characters only when it found nothing.
    mixed = any(t.kind == "cjk" for t in query.terms)
    heads = query.heads
    extra = [g for g in glued(query) if mixed or not found.get(heads[g.concept])]
    extra += [c for c in characters(query) if not found.get(heads[c.concept])]
    extra += [c for c in backed_characters(query) if found.get(heads[c.concept])] if gated else []
    found.update(_run(fts, shape, plan(extra, shape, filters, total)))
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
        text = textindex.normalise(term.text)
        match = lookup.prefix_match(text) if term.kind == "stem" else textindex.match_for(text)
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
        exact = messages.holding(conn, [v[0] for v in ids.values()], term.text)
        found[term] = keys[[ids.get(int(k), (None,))[0] in exact for k in keys]]

