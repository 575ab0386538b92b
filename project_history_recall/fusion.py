"""Fusing the keyword and semantic engines' results. Pure.

Two methods (setting ``fusion``):

- ``blend`` (default): every candidate either engine brought is scored
  ``keyword score + weight × cosine``, the cosine being computed for keyword
  candidates too (they are in the scope's matrix anyway). The keyword score
  is measured in shares of the question (see ``keyword``), not relative to
  the best keyword hit: a hit that holds one common word of a long question
  scores low however it ranks among the keyword hits, so a close semantic
  hit outranks it, while a hit that holds the whole question keeps the lead
  it deserves. Rank fusion throws that away, and gained less on LoCoMo.

  The weight is the embedder's own (``fusion_weight``), unless the setting
  ``blend_weight`` names one: one weight for every model gave e5, whose
  ranking is the better one, too little say, and hybrid fell below e5's own
  semantic mode on zh-daily. Each model's weight was chosen on the tune
  halves of several benches at once, never one per bench. Cosines are
  blended as they are (e5's mapped by its ``cosine_baseline``): measured
  instead in standard deviations above the question's mean over the scope,
  they ranked no better and cost LoCoMo.

  The weight stays one per model, not one per question, although hybrid
  trails semantic alone on paraphrasing sets (en-daily): weights that follow
  either side's confidence (the semantic side's margin over its next
  session, the keyword side's best score or background) lifted the daily
  sets but lost LoCoMo, where the keyword side is right in most
  disagreements, and every keyword background lost long histories, where
  every long answer holds the question's common words (docs/benchmarks.md,
  "Blend weights that follow the semantic side's confidence" and "Fusion
  weighed by the keyword side"). So did weights that follow the two rankings'
  agreement (how many first sessions they share) or how many of the keyword
  side's first sessions the semantic side backs (docs/benchmarks.md, "The
  semantic first far above the blend's first").
- ``rrf``: Reciprocal Rank Fusion. Each list votes ``weight / (k + rank)``;
  ranks, not scores, are fused.

In the blend a message's cosine also carries its session's further
evidence: ``weight × (cosine + EVIDENCE_WEIGHT × evidence)``, the evidence
being how far the session's chunks other than its best stand above the
question's background over the scope (``semantic.matrix.session_evidence``).
A session that says the thing in several places gains over one that says it
once, and a long session of unrelated chatter gains nothing. Chosen on the
tune halves of every bench set, and no hybrid figure fell on any half; lower
backgrounds, or counting the best chunk too, lost some half. The semantic
mode keeps its plain cosines: this evidence lost paraphrase questions there
(docs/benchmarks.md, "A session's further semantic evidence").

The semantic side searches with the question's vector as embedded, without
pseudo-relevance feedback: moving it towards the best chunks (of the first
pass, of the keyword side's sure hits, or those standing out of the scope)
lost held-out questions on some set every way it was tried, zh-daily in one
project above all. Chat comes back to its topics across sessions, so the
centroid of the best chunks pulls in the topic more than the session asked
about (figures: docs/benchmarks.md, "Pseudo-relevance feedback").

Either way the fused messages are then ranked as sessions
(``sessions.by_session``), each scored by all its fused messages. Scoring a
session instead by its best keyword score plus the weight times its best
cosine, the two from different messages, lost LoCoMo and English LoCoMo-zh
on the tune halves (docs/benchmarks.md, "The semantic half with USE").
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .hits import BOTH, KEYWORD, SEMANTIC, Hit


# How much a session's further evidence counts against a cosine in the blend (see above).
EVIDENCE_WEIGHT = 2.0
# A message the semantic side *backs* stands this many standard deviations above the question's
# mean over the scope (``backed``).
BACKING_Z = 2.0
# A one-character word of the question inside another word of a message (开 in 开业) keeps its whole
# credit where the message stands this many above (``keyword.scoring.lone``): nearer in meaning than
# the background, as 开业 is to 开店. BACKING_Z's bar, or none, each lost a LoCoMo-zh and a zh-daily
# question at hit@5.
NEAR_Z = 1.0


@dataclass
class _Votes:
    hit: Hit  # the message as the first list that holds it has it
    score: float = 0.0
    sources: list[str] = field(default_factory=list)


def _ranked(votes: dict[int, _Votes]) -> list[Hit]:
    # Ties (rare) go to the message found by more engines, then the newer one.
    order = sorted(votes.values(), key=lambda v: (-v.score, -len(v.sources), -v.hit.message_id))
    # Built, not dataclasses.replace()d: replace() costs several times more, ~0.1 ms a hybrid search.
    return [Hit(v.hit.message_id, v.hit.session_id, v.score, BOTH if len(v.sources) > 1 else v.sources[0],
                v.hit.timestamp) for v in order]


def rrf(lists: dict[str, list[Hit]], k: float, weights: dict[str, float] | None = None) -> list[Hit]:
    """``lists`` maps an engine name (a hit source) to its hits, best first."""
    votes: dict[int, _Votes] = {}
    for name, hits in lists.items():
        weight = (weights or {}).get(name, 1.0)
        for rank, hit in enumerate(_unique(hits), 1):
            entry = votes.get(hit.message_id)
            if entry is None:
                entry = votes[hit.message_id] = _Votes(hit)
            entry.score += weight / (k + rank)
            entry.sources.append(name)
    return _ranked(votes)


def blend(keyword: list[Hit], semantic: list[Hit], similarity: dict[int, float], weight: float,
          keyword_more: list[Hit] | None = None, evidence: dict[str, float] | None = None) -> list[Hit]:
    """``keyword``: the keyword engine's candidates, best first; ``semantic``:
    the semantic engine's own best hits; ``similarity``: cosine of every
    candidate by message id; ``keyword_more``: any other message the keyword
    engine matched, for its score (a semantic hit that also holds some of the
    words); ``evidence``: each session's evidence beyond its best chunk, by
    session id (``semantic.matrix.session_evidence``)."""
    scores = {h.message_id: h.score for h in keyword_more or []}
    scores.update((h.message_id, h.score) for h in keyword)
    votes: dict[int, _Votes] = {}
    for hit in keyword:
        votes[hit.message_id] = _Votes(hit, hit.score, [KEYWORD])
    for hit in _unique(semantic):
        mid = hit.message_id
        entry = votes.get(mid)
        if entry is None:
            entry = votes[mid] = _Votes(hit, scores.get(mid, 0.0), [KEYWORD] if mid in scores else [])
        entry.sources.append(SEMANTIC)
    further = evidence or {}
    for entry in votes.values():
        entry.score += weight * (similarity.get(entry.hit.message_id, 0.0)
                                 + EVIDENCE_WEIGHT * further.get(entry.hit.session_id, 0.0))
    return _ranked(votes)


def backed(similarity: dict[int, float], background: tuple[float, float], z: float = BACKING_Z) -> set[int]:
    """The messages of ``similarity`` (cosines by message id) that stand ``z`` standard
    deviations above the question's ``background`` over the scope (mean, deviation): those the
    keyword side may credit for a character of a question's word (``keyword.engine.Ranking``);
    with ``NEAR_Z``, those where a one-character word inside another word counts whole.

    A character alone is mostly in other words (手 of 二手 in 手术, 板 of 平板 in 血小板), and
    credited everywhere it lifted such messages over the answer; a message about what the
    question asks says the word around the same character (海滩 / 海边, 领养 / 收养)."""
    mean, deviation = background
    bar = mean + z * deviation
    return {mid for mid, cosine in similarity.items() if cosine > bar}


def _unique(hits: list[Hit]) -> list[Hit]:
    """Each message's first hit, in order."""
    first: dict[int, Hit] = {}
    for hit in hits:
        first.setdefault(hit.message_id, hit)
    return list(first.values())

