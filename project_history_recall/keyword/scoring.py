"""How one query's candidate messages are scored and ranked, within one scope.

The engine (``engine``) finds the candidates and hands them over as *concepts*
(each with its weight and, per candidate, how much of it the candidate holds)
and a ``Backend`` to read the best of them through; what is here only counts,
weighs and sorts.

Scoring is BM25-like and computed within the scope: a concept weighs its
rarity among the scope's messages (IDF), every concept counts (no term can
stop the others from being searched), and a piece earns part of its
concept. A message's *share* is the weighted part of the query it holds,
0..1: how much of the question the keyword side really matched, which is
what fusion with semantic search weighs. The best candidates are then read
again and a concept they say more than once earns more (term frequency,
saturated as BM25's is), so a long answer about the question's words beats
one that names them in passing; one that says two of the question's
neighbouring words close together earns more too (``nearness``). Sessions
that hold more of the query, and hold it in several messages, lift their
messages.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Collection, Protocol

from ..hits import KEYWORD, Hit
from . import answerkind, cjk, textindex
from .lengths import Lengths
from .querytext import STOP_WORDS, Term

if TYPE_CHECKING:
    import numpy as np

WORD_TOKEN = re.compile(r"[^\W_]+")
# A one-character Chinese word said only inside longer words (``lone``) earns this, as any word
# found glued to other text does (``engine``).
GLUED_CREDIT = 0.5

# BM25's length normalisation (k1, b): a long message holds a word by chance
# more often than a short one.
LENGTH_K1 = 1.2
LENGTH_B = 0.5
# Term frequency, saturated as BM25 does (k1 above): a long answer that is
# about a word says it again, one that names it in passing does not. Each
# further time counts REPEAT_CREDIT of the first (the first is what the share
# holds; a full count cost short messages, where a repeat is mostly chance:
# tuned on LoCoMo's even conversations, whole and 5 and 10 turns a message).
# The index keeps no counts, so the best TF_CANDIDATES messages by presence
# are read again and counted, best first, within TF_READ_CHARS in all (~5 ms
# of reading and counting); one over TF_MAX_CHARS, or past the budget,
# counts once.
REPEAT_CREDIT = 0.25
# Two of the question's words said together: each pair of words next to each other in the question
# (stop words aside) that a counted message says within NEAR_WORDS words of each other, in either
# order, adds NEAR_CREDIT times the lighter word's share. A message that says "charity run" is about
# the charity run more surely than one that names a charity and, later, a run; long answers name
# most of a question's words somewhere, and their nearness tells the answer from a passing mention.
# (Tuned on the tune halves: 0.15-0.35 and 3-8 words all did as well.)
NEAR_CREDIT = 0.25
NEAR_WORDS = 4
NEAR_CHARS = 400
# A counted message that says a number or a time of the kind a question asks for
# (``answerkind.answers``: 多少钱, 多久, 什么时候, "when") earns this share of one more concept of the question: it
# answers the question word the way a word answers a word, but any number says it (as a piece,
# ``engine.PIECE_CREDIT``, says part of a word). Chosen on the tune halves: a whole share lost LoCoMo-zh and
# zh-daily questions whose words a message with a number also holds.
ANSWER_CREDIT = 0.5
TF_CANDIDATES = 100
TF_MAX_CHARS = 20_000
TF_READ_CHARS = 400_000
# Session evidence added to each message's share (tuned on LoCoMo English and
# Chinese, conversations kept aside to check): the mean share of the
# session's best three messages, and the weighted share of the query's
# concepts found anywhere in the session.
# (Weighing the best three messages' concepts by their rarity among sessions,
# as coverage does, rather than among messages, cost LoCoMo's tune half.)
SESSION_WEIGHT = 0.5
SESSION_TOP = 3
COVERAGE_WEIGHT = 0.25
# A session *about* the question: where at least half of its messages, and three or more, hold a
# concept, for two concepts or more, its share of messages holding them above the typical candidate
# session's counts too. A session written around one topic says its words all through (a chat
# about a trip names the place in most turns), where the best three messages and coverage give it
# no more than a session that says them in three; one recurring word (a name) earns nothing, a
# many-topic session (LoCoMo's) rarely has half its turns on the question, and in a session of two
# to five short turns (daily Chinese chat) half is met by chance, so three messages are asked for.
# Among alike sessions (one project's sessions all about the same few things) a share above the
# median follows chance, so it must stand at twice the typical candidate session's.
# On a long-history stand-in whose sessions are about their facts this brought keyword mode level
# with a session-as-document BM25 (docs/benchmarks.md, "A session about the question").
SPREAD_WEIGHT = 2.0
SPREAD_FLOOR = 0.5
SPREAD_CONCEPTS = 2
SPREAD_MESSAGES = 3
SPREAD_RATIO = 2.0
# The best messages after the ranking that may stand in for ones no longer live
# (or of another role) in state.db, at least: the ranking itself weighs every
# candidate.
RERANKED = 100


def inverse_frequency(total: int, matching: int) -> float:
    """BM25's IDF of a term that ``matching`` of ``total`` documents hold (never below 0)."""
    total = max(total, matching)
    return math.log(1.0 + (total - matching + 0.5) / (matching + 0.5))


@dataclass
class Concept:
    weight: float
    credit: "np.ndarray"  # per candidate key: how much of the concept the message holds, 0..1
    # What a message's text says the concept as, to count how often (None: it is not counted),
    # and whether only whole words count (a CJK word is found inside longer runs).
    needle: str | None = None
    whole_word: bool = True
    # Its word's ``backed_characters``, each normalised with its term: where the scope says one,
    # it earns a share of the concept in a message the semantic side backs (``Ranking.backed``).
    characters: tuple[tuple[str, Term], ...] = ()
    # A one-character CJK word (``lone``).
    single: bool = False


@dataclass
class Facts:
    """Per candidate key (aligned): its message id, length and time, as state.db
    has them, so neither the ranking nor its ties depend on which index
    answered or in what order it was built."""

    message_ids: "np.ndarray"
    lengths: "np.ndarray"
    timestamps: "np.ndarray"


class Backend(Protocol):
    """Where a search's terms are looked up, and what the ranking then asks of its candidates.

    A candidate is a *key*: the index's own number for a message, which ``facts``
    turns into the message's id."""

    @property
    def names(self) -> dict[int, str] | list[str]:
        """A session number (``sessions_of``) -> the session's id."""
        ...

    def find(self, groups: dict[int, list[Term]], total: int, gated: bool
             ) -> tuple[dict[Term, "np.ndarray"], dict[Term, int]]:
        """Each term's keys in the scope (sorted), other forms of a concept's word added to
        ``groups`` (with ``gated``, its ``backed_characters`` too); and how many messages hold
        each term, where more hold it than were read."""
        ...

    def sessions_of(self, keys: "np.ndarray") -> "np.ndarray": ...

    def facts(self, keys: "np.ndarray") -> Facts: ...

    def live(self, message_ids: list[int]) -> set[int]:
        """Those of ``message_ids`` still live and of a searched role."""
        ...

    def texts(self, message_ids: list[int]) -> dict[int, str]:
        """The text of each of ``message_ids`` (of ordinary size) that state.db still holds."""
        ...

    def outdated(self, keys: "np.ndarray", message_ids: list[int], lengths: "np.ndarray",
                 texts: list[str | None]) -> set[int]:
        """Every message found in this search whose text, read now, is not what was looked up:
        among these candidates (``keys``, their ``message_ids``, their ``lengths`` as ``facts``
        has them), those whose normalised text (``texts``; None: not read) is not that long."""
        ...

    def session_sizes(self, sessions: "np.ndarray") -> "np.ndarray":
        """How many messages of the searched roles each of ``sessions`` (session numbers) holds, as
        ``scope_lengths`` last counted them."""
        ...

    def character_count(self, term: Term) -> int:
        """How many messages of the scope hold ``term``, one of the ``backed_characters`` ``find``
        added."""
        ...

    def scope_lengths(self) -> Lengths:
        """The lengths of the scope's messages of the searched roles (as ``facts`` has them)."""
        ...


class Reads:
    """What ranking a query's candidates reads from state.db and works out from it, kept for a
    second ranking of the same candidates and the backed check (``Ranking``), which ask again for
    most of it: each message's normalised text, how often it says each concept, and whether it
    is live."""

    def __init__(self, backend: Backend):
        self.backend = backend
        self._folded: dict[int, str] = {}
        self._counted: dict[tuple, dict[int, "np.ndarray"]] = {}  # by the concepts' needles
        self._alive: dict[int, bool] = {}

    def folded(self, message_ids: list[int]) -> dict[int, str]:
        """The normalised text of each of ``message_ids`` state.db holds (``backend.texts``)."""
        missing = [m for m in message_ids if m not in self._folded]
        if missing:
            self._folded.update((m, textindex.normalise(t)) for m, t in self.backend.texts(missing).items())
        return {m: self._folded[m] for m in message_ids if m in self._folded}

    def counts(self, concepts: list[Concept], message_ids: list[int]) -> "np.ndarray":
        """``term_counts`` of these messages' texts, a message not read counting 1."""
        import numpy as np

        counted = self._counted.setdefault(tuple((c.needle, c.whole_word) for c in concepts), {})
        missing = [m for m in message_ids if m not in counted]
        said = self.folded(missing)
        fresh = term_counts(concepts, [said.get(m) for m in missing])
        counted.update(zip(missing, fresh.T, strict=True))
        if len(missing) == len(message_ids):
            return fresh
        return np.stack([counted[m] for m in message_ids], axis=1)

    def live(self, message_ids: list[int]) -> set[int]:
        """Those of ``message_ids`` still live and of a searched role (``backend.live``)."""
        unknown = [m for m in message_ids if m not in self._alive]
        if unknown:
            alive = self.backend.live(unknown)
            self._alive.update((m, m in alive) for m in unknown)
        return {m for m in message_ids if self._alive[m]}


def occurrences(text: str, needle: str, whole_word: bool) -> int:
    """How often ``needle`` is in ``text`` (both normalised); with ``whole_word``, only where
    no letter or digit touches it on either side."""
    if not whole_word:
        return text.count(needle)  # non-overlapping, left to right: as the loop below counts
    count, at = 0, text.find(needle)
    while at >= 0:
        end = at + len(needle)
        if (at == 0 or not text[at - 1].isalnum()) and (end == len(text) or not text[end].isalnum()):
            count += 1
        at = text.find(needle, end)
    return count


def to_read(lengths: "np.ndarray") -> "np.ndarray":
    """Which of the candidates of these ``lengths`` (best first) are read to be counted:
    those up to TF_MAX_CHARS, best first while TF_READ_CHARS lasts."""
    import numpy as np

    fits = lengths <= TF_MAX_CHARS
    return fits & (np.cumsum(np.where(fits, lengths, 0)) <= TF_READ_CHARS)


def term_counts(concepts: list[Concept], folded: list[str | None]) -> "np.ndarray":
    """Per concept and text (normalised, ``textindex.normalise``), how often the text says the
    concept, at least once (the index found it, perhaps in another form), each time after the
    first counting REPEAT_CREDIT; a text not read (None) or a concept not counted: 1."""
    import numpy as np

    counts = np.ones((len(concepts), len(folded)))
    needles = [(i, c.needle, c.whole_word) for i, c in enumerate(concepts) if c.needle]
    for j, text in enumerate(folded):
        if text is None:
            continue
        for i, needle, whole_word in needles:
            said = occurrences(text, needle, whole_word)
            if said > 1:  # once or never counts 1, as it stands: a write into the array costs more than the count
                counts[i, j] = 1 + REPEAT_CREDIT * (said - 1)
    return counts


def lone(concepts: list[Concept], at: list[int], texts: list[str | None], keep: Collection[int] = ()
         ) -> list[Concept]:
    """The concepts, a one-character word earning at most GLUED_CREDIT in each candidate ``at``
    whose text (read, not None) says it only inside other words: a question's 开 ("open") in 开心
    ("happy"), 去 ("go") in 去年 ("last year"). Candidates ``at`` in ``keep`` (by position) keep
    their credit: 开业 is still "open" in a message that means what the question asks."""
    out = []
    for c in concepts:
        if c.single and c.needle:
            credit = c.credit.copy()
            for i, text in zip(at, texts, strict=True):
                if text is not None and credit[i] > GLUED_CREDIT and i not in keep and c.needle in text \
                        and not cjk.stands_alone(text, c.needle):
                    credit[i] = GLUED_CREDIT
            c = replace(c, credit=credit)
        out.append(c)
    return out


def _said_as(word: str) -> tuple[str, re.Pattern[str]]:
    """How ``nearness`` finds a word of the question: (a substring every text that says it holds,
    the pattern that finds it), as a whole word or as any word beginning with all but its last
    three letters (at least four: a word of four letters or fewer only as itself). A beginning that
    is a stop word would find that word everywhere ("them" of theme, "than" of thank, "like" of
    likely): such a word is found only as itself."""
    stem = word[:max(4, len(word) - 3)]
    if len(word) > 4 and stem not in STOP_WORDS:
        return stem, re.compile(re.escape(stem) + r"[^\W_]*")
    return word, re.compile(re.escape(word) + r"(?![^\W_])")


def _spans(pattern: re.Pattern[str], text: str) -> list[tuple[int, int]]:
    """Where ``pattern`` matches at the start of a word of ``text``."""
    return [m.span() for m in pattern.finditer(text) if not m.start() or not WORD_TOKEN.match(text, m.start() - 1)]


def _close(a: list[tuple[int, int]], b: list[tuple[int, int]], text: str) -> bool:
    """Whether a word at one of the spans ``a`` is within NEAR_WORDS words of one at ``b`` in ``text``."""
    for a_start, a_end in a:
        for b_start, b_end in b:
            start, end = (a_end, b_start) if a_start <= b_start else (b_end, a_start)
            # Fewer than NEAR_WORDS words between them (none, or overlapping: the same word); a gap of
            # more than NEAR_CHARS holds more, but for words of a hundred letters.
            if end - start <= NEAR_CHARS and len(WORD_TOKEN.findall(text, start, max(start, end))) < NEAR_WORDS:
                return True
    return False


def _word(concept: Concept) -> bool:
    """Whether ``nearness`` pairs the concept: one whole word (not a phrase, a symbol or CJK: two Chinese
    words said together mostly lifted messages that repeat the question's compound, 领养机构, over
    answers that say it another way, 收养机构; docs/benchmarks.md, "Chinese nearness")."""
    return bool(concept.needle and concept.whole_word and WORD_TOKEN.fullmatch(concept.needle))


def _parts(concepts: list[Concept]) -> list[float]:
    """Each concept's weight as a part of the question's whole (they sum to 1), so a score made
    of them is on the same scale whatever the number of words asked."""
    total_weight = sum(c.weight for c in concepts) or 1.0
    return [c.weight / total_weight for c in concepts]


def nearness(concepts: list[Concept], texts: list[str | None]) -> "np.ndarray":
    """Per text, the summed share (the lighter word's) of the pairs of the question's words next to
    each other among its concepts (``_word`` both: a Chinese word between two names parts them) that
    the text (normalised) says within NEAR_WORDS words of each other (``_said_as``). A text not read
    (None): 0."""
    import numpy as np

    near = np.zeros(len(texts))
    parts = _parts(concepts)
    pairs = [(i, min(parts[i], parts[i + 1]))
             for i, (a, b) in enumerate(zip(concepts[:-1], concepts[1:], strict=True)) if _word(a) and _word(b)]
    if not pairs:
        return near
    found = {k: _said_as(concepts[k].needle or "") for i, _ in pairs for k in (i, i + 1)}
    for j, text in enumerate(texts):
        if text is None:
            continue
        held = {k: prefix in text for k, (prefix, _) in found.items()}
        spans: dict[int, list[tuple[int, int]]] = {}
        for i, share in pairs:
            if not (held[i] and held[i + 1]):
                continue
            for k in (i, i + 1):
                if k not in spans:
                    spans[k] = _spans(found[k][1], text)
            if spans[i] and spans[i + 1] and _close(spans[i], spans[i + 1], text):
                near[j] += share
    return near


def bm25_scores(concepts: list[Concept], counts: "np.ndarray", lengths: "np.ndarray", average: float) -> "np.ndarray":
    """Per candidate, each concept's weighted share times BM25's saturated term frequency,
    normalised by the message's length: ``share × (k1 + 1) / (1 + k1 × norm)`` when every
    count is 1, more for a message that says the query's words again."""
    import numpy as np

    if not concepts:
        return np.zeros(len(lengths))
    weights = np.array(_parts(concepts))[:, None]
    credit = np.stack([c.credit for c in concepts])
    norm = 1 - LENGTH_B + LENGTH_B * lengths / (average or 1.0)
    return (weights * credit * counts * (LENGTH_K1 + 1) / (counts + LENGTH_K1 * norm)).sum(axis=0)


def shares(concepts: list[Concept], candidates: int) -> "np.ndarray":
    """Per candidate, the weighted share of the query's concepts it holds."""
    import numpy as np

    return sum((part * c.credit for part, c in zip(_parts(concepts), concepts, strict=True)),
               np.zeros(candidates))


@dataclass(frozen=True)
class Sessions:
    """The candidates' sessions (``ordinals``, sorted), the place among them of each candidate's
    (``at``), and how far each is *about* the question (``lean``, ``spread``; None without concepts)."""

    ordinals: "np.ndarray"
    at: "np.ndarray"
    lean: "np.ndarray | None"


def by_session(concepts: list[Concept], keys: "np.ndarray", backend: Backend) -> Sessions:
    """The candidates ``keys`` grouped by session, as ``rank`` scores them and ``Ranking.about``
    reads them: computed once for both."""
    import numpy as np

    ordinals, at = np.unique(backend.sessions_of(keys), return_inverse=True)
    lean = spread(concepts, np.stack([c.credit for c in concepts]), at, backend.session_sizes(ordinals)) \
        if concepts else None
    return Sessions(ordinals, at, lean)


def spread(concepts: list[Concept], credit: "np.ndarray", session_at: "np.ndarray", sizes: "np.ndarray"
           ) -> "np.ndarray":
    """Per candidate session (``session_at`` of each candidate, ``sizes`` its messages), how far it
    is *about* the question (``SPREAD_WEIGHT``): for each concept held by at least ``SPREAD_FLOOR``
    of the session's messages and by ``SPREAD_MESSAGES`` or more, and at ``SPREAD_RATIO`` times the
    median candidate session's share, the share of them holding it above that median, weighted as the
    concepts are, where ``SPREAD_CONCEPTS`` or more such concepts stand out."""
    import numpy as np

    weights = np.array(_parts(concepts))
    held = np.stack([np.bincount(session_at, weights=row, minlength=len(sizes)) for row in credit])
    # A session whose size is not known (0) is never counted as about anything.
    part = np.where(sizes > 0, np.minimum(held / np.maximum(sizes, 1), 1.0), 0.0)
    typical = np.median(part, axis=1)[:, None]
    stands_out = (part >= SPREAD_FLOOR) & (held >= SPREAD_MESSAGES) & (part >= SPREAD_RATIO * typical)
    excess = np.maximum(part - typical, 0.0) * stands_out
    about = (excess > 0).sum(axis=0) >= SPREAD_CONCEPTS
    return (weights[:, None] * excess).sum(axis=0) * about


def rank(concepts: list[Concept], keys: "np.ndarray", sessions: int, backend: Backend, keep: int,
         facts: Facts | None = None, reads: Reads | None = None, near: Collection[int] = (),
         asks: str | None = None, mean_length: float | None = None, grouped: Sessions | None = None) -> list[Hit]:
    """The best ``keep`` of the candidates ``keys`` (of a scope of ``sessions`` sessions),
    best first: each message's share of the query, normalised by its length as BM25
    does, lifted by its session's evidence.

    Every candidate is scored before any is cut, and ties go to the newer
    message (then the higher id). The best are then checked with
    ``backend.live``, best first, and a message missing there is dropped:
    the first ``keep`` found live among the best ``max(keep, RERANKED)``. ``facts``: the
    keys' ``backend.facts``, if known; ``reads``: what an earlier ranking of these keys read;
    ``near``: message ids that keep a one-character word inside another word whole (``lone``);
    ``asks``: the kind of answer the question asks for, which a counted message that says one is
    credited for (``ANSWER_CREDIT``); ``mean_length``: the scope's mean message length where its
    messages are unequal in length (``lengths.Lengths.unequal_mean``), which BM25 then weighs a
    message's length against rather than its candidates' mean (mostly long replies that hold the
    question's words by chance, and which that mean makes look ordinary); ``grouped``: the keys'
    ``by_session``, if known."""
    import numpy as np

    if not len(keys):
        return []
    grouped = grouped or by_session(concepts, keys, backend)
    facts = facts or backend.facts(keys)
    credit = np.stack([c.credit for c in concepts]) if concepts else np.zeros((0, len(keys)))
    share = shares(concepts, len(keys))
    session_ids, session_at = grouped.ordinals, grouped.at
    # Candidates grouped by session, best share first within each.
    order = np.lexsort((-share, session_at))
    starts = np.flatnonzero(np.r_[True, np.diff(session_at[order]) != 0])
    # Per concept and session, the most of it any of the session's messages holds;
    # coverage weighs each concept by its rarity among the scope's sessions.
    cover = np.maximum.reduceat(credit[:, order], starts, axis=1) if len(concepts) else np.zeros((0, len(starts)))
    session_idf = np.array([inverse_frequency(sessions, int(n)) for n in (cover > 0).sum(axis=1)])
    # Summed concept by concept, not as a matrix product: BLAS sums a column in an order that
    # depends on its place in the matrix, so two sessions holding the same concepts could differ
    # in the last bit and their tie would not go to the newer one.
    coverage = (session_idf[:, None] * cover).sum(axis=0) / (session_idf.sum() or 1.0) if len(concepts) \
        else np.zeros(len(starts))
    # The mean share of each session's best SESSION_TOP messages.
    rank_in_session = np.arange(len(order)) - np.repeat(starts, np.diff(np.r_[starts, len(order)]))
    best = rank_in_session < SESSION_TOP
    top = np.bincount(session_at[order][best], weights=share[order][best], minlength=len(session_ids))
    evidence = SESSION_WEIGHT * top / SESSION_TOP + COVERAGE_WEIGHT * coverage
    if grouped.lean is not None:
        evidence = evidence + SPREAD_WEIGHT * grouped.lean
    known = facts.message_ids >= 0  # a row the index lost its record of cannot be shown
    lengths = facts.lengths
    # The candidates' mean stands for the scope's where its messages are alike in length (taking the
    # scope's there cost LoCoMo and zh-daily questions: docs/benchmarks.md, "BM25's mean length from
    # the scope").
    avg = mean_length or (float(lengths[known].mean()) if known.any() else 1.0)
    counts = np.ones((len(concepts), len(keys)))
    score = bm25_scores(concepts, counts, lengths, avg) + evidence[session_at]
    # np.lexsort sorts by its last key first.
    order = np.lexsort((-facts.message_ids, -facts.timestamps, -score))
    # The best by presence, counted: a count only adds, so none left uncounted can pass them.
    counted = order[known[order]][:TF_CANDIDATES]
    reads = reads or Reads(backend)
    readable = counted[to_read(lengths[counted])]
    readable_ids = [int(m) for m in facts.message_ids[readable]]
    counts[:, readable] = reads.counts(concepts, readable_ids)
    folded = reads.folded(readable_ids)
    said = [folded.get(m) for m in readable_ids]
    outdated = backend.outdated(keys[readable], readable_ids, lengths[readable], said)
    if any(c.single for c in concepts):
        at = readable.tolist()
        concepts = lone(concepts, at, said, {i for i, m in zip(at, readable_ids, strict=True) if m in near})
    together = np.zeros(len(keys))
    together[readable] = NEAR_CREDIT * nearness(concepts, said)
    if asks and concepts:
        # One not read for an answer (``answerkind.answers``: None) earns nothing for one.
        says = [answerkind.answers(t, asks) is True for t in said]
        together[readable] += ANSWER_CREDIT / (len(concepts) + 1) * np.array(says)
    score = bm25_scores(concepts, counts, lengths, avg) + evidence[session_at] + together
    order = np.lexsort((-facts.message_ids, -facts.timestamps, -score))
    pick = order[known[order]][:max(keep, RERANKED)]
    ids = facts.message_ids[pick].tolist()
    # Almost every message is live: the best ``keep`` are checked first, the rest only if one is not.
    alive = reads.live(ids[:keep]) - outdated
    if len(alive) < min(keep, len(ids)):
        alive |= reads.live(ids[keep:]) - outdated
    # Converted a column at a time: a numpy scalar at a time cost ~0.3 ms for 200 hits.
    columns = zip(ids, session_ids[session_at[pick]].tolist(), score[pick].tolist(), facts.timestamps[pick].tolist(),
                  strict=True)
    return [Hit(mid, backend.names[session], value, KEYWORD, when) for mid, session, value, when in columns
            if mid in alive][:keep]
