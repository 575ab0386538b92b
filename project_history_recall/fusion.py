"""Fusing the keyword and semantic engines' results. Pure.

Two methods (setting ``fusion``):

- ``blend`` (default): every candidate either engine brought is scored
  ``keyword score + weight × cosine``, the cosine being computed for keyword
  candidates too (they are in the scope's matrix anyway). The keyword score
  is measured in shares of the question (see ``keyword``), not relative to
  the best keyword hit: a hit that holds one common word of a long question
  scores low however it ranks among the keyword hits, so a close semantic
  hit outranks it, while a hit that holds the whole question keeps the lead
  it deserves. Rank fusion throws that away (on LoCoMo it lifted session
  hit@1 over keyword alone by 0.005 where the blend gains more).

  The weight is the embedder's own (``fusion_weight``), unless the setting
  ``blend_weight`` names one. One weight for every model gave e5 too little
  say: its ranking is the better one (alone it beats USE's by 0.06-0.18
  session hit@1 on every bench set, and the keywords' by 0.19 on zh-daily),
  so with USE's weight hybrid fell below e5's own semantic mode on zh-daily.
  Each model's weight was chosen on the tune halves of several benches at
  once, never one per bench. Measuring each cosine instead in standard
  deviations above the question's mean similarity to the whole scope, with a
  weight per model, ranked as the right plain weight did on zh-daily and
  LoCoMo-zh and cost LoCoMo about 0.01 hit@1, so cosines are blended as they
  are (e5's mapped by its ``cosine_baseline``).

  The weight stays one per model, not one per question, although hybrid
  trails semantic alone on paraphrasing sets (en-daily). Weights that follow
  the semantic side's confidence were measured on the tune halves of
  LoCoMo, LoCoMo-zh, zh-daily and en-daily: raised by the best session's
  cosine margin over the next session (in the scope's standard deviations,
  or relative to the best) or by its height above the scope's mean, raised
  only when the engines' first sessions differ; also a keyword score cut
  down when its message falls below the semantic side's own floor, and
  keyword scores saturated. The margin does predict the semantic side's own
  hit on every set (its first session right for 0.72-0.99 of questions with
  a margin over one standard deviation, 0.26-0.75 below), and each variant
  lifted en-daily and zh-daily, but on LoCoMo the keyword side is right in
  most such disagreements: the best tune-half setting (weight × (1 + 4 ×
  the best session's standard deviations above the scope's mean beyond 4))
  cost LoCoMo's held-out half 4 questions at hit@1 and still left hybrid
  below semantic on en-daily's short-answer and one-project held-out
  halves; plain weights of 1.5-3 cost LoCoMo's 7-34. Weights or keyword
  scores that follow the keyword side's confidence instead (its best score,
  how far it stands above its own background) traded the same way, and
  every keyword background lost long histories, where every long answer
  holds the question's common words (docs/benchmarks.md).
- ``rrf``: Reciprocal Rank Fusion as the spec first described it. Each list
  votes ``weight / (k + rank)``; ranks, not scores, are fused.

In the blend a message's cosine also carries its session's further
evidence: ``weight × (cosine + EVIDENCE_WEIGHT × evidence)``, the evidence
being how far the session's chunks other than its best stand above the
question's background over the scope (``semantic.matrix.session_evidence``).
A session that says the thing in several places gains over one that says it
once, and a long session of unrelated chatter gains nothing. Chosen on the
tune halves (LoCoMo conversations 0-4, longhist 0,2,4,6,8, LoCoMo-zh
conversation 0, zh-daily and en-daily ``tune``, each daily set also in one
project) from recorded inputs of one bench run per set, then run as benches:
no hybrid figure (hit@1/5/10, MRR) fell on any half. Hit@1 held out: zh-daily
in one project 0.524 → 0.556, en-daily with short answers 0.875 → 0.896;
tune: en-daily 0.816 → 0.837, en-daily in one project 0.571 → 0.633, LoCoMo
0.766 → 0.767; LoCoMo-zh, zh-daily in its own projects and longhist
unmoved. Lower backgrounds lifted the daily sets more, and every one tried
(the scope's mean + 1.5 to 3.5 standard deviations, its 90th to 99th
percentile; by chunks or by messages, decayed by rank or capped) lost some
tune half (mean + 3 standard deviations: longhist −0.008, zh-daily in one
project −0.016 hit@1) but one: every message above the scope's mean, the
best included, decayed 0.6 by rank, capped at 0.15, which then lost held-out
English LoCoMo-zh 0.790 → 0.778 hit@1 and LoCoMo 0.731 → 0.729 (while
held-out longhist rose 0.695 → 0.705). A soft (exponential) excess instead
of a linear one gained less on the tune halves. A plain sum of the cosines (no background) lost semantic zh-daily
0.008 hit@1. The semantic mode keeps its plain cosines: this evidence there
lost en-daily 0.825 → 0.804 hit@1 and zh-daily in one project (tune) 0.476
→ 0.444.

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
cosine, the two from different messages, did not gain on the tune halves:
as the larger of that and the blend, LoCoMo -0.010 hit@1 and English
LoCoMo-zh -0.013; mixed 0.3 into the blend, -0.004 and -0.007; zh-daily
unmoved.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .hits import BOTH, KEYWORD, SEMANTIC, Hit


# How much a session's further evidence counts against a cosine in the blend (see above).
EVIDENCE_WEIGHT = 2.0


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


def _unique(hits: list[Hit]) -> list[Hit]:
    """Each message's first hit, in order."""
    first: dict[int, Hit] = {}
    for hit in hits:
        first.setdefault(hit.message_id, hit)
    return list(first.values())

