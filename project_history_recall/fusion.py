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
- ``rrf``: Reciprocal Rank Fusion as the spec first described it. Each list
  votes ``weight / (k + rank)``; ranks, not scores, are fused.

Either way the fused messages are then ranked as sessions
(``sessions.by_session``), each scored by all its fused messages.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Fused:
    message_id: int
    score: float = 0.0
    sources: list[str] = field(default_factory=list)

    @property
    def source(self) -> str:
        return "both" if len(self.sources) > 1 else self.sources[0]


def rrf(lists: dict[str, list[int]], k: float, weights: dict[str, float] | None = None) -> list[Fused]:
    """``lists`` maps an engine name to its message ids, best first."""
    fused: dict[int, Fused] = {}
    for name, ids in lists.items():
        weight = (weights or {}).get(name, 1.0)
        for rank, mid in enumerate(dict.fromkeys(ids), 1):
            entry = fused.get(mid)
            if entry is None:
                entry = fused[mid] = Fused(mid)
            entry.score += weight / (k + rank)
            entry.sources.append(name)
    # Ties (rare) go to the message found by more engines, then the newer one.
    return sorted(fused.values(), key=lambda f: (-f.score, -len(f.sources), -f.message_id))


def blend(keyword: list[tuple[int, float]], semantic: list[int], similarity: dict[int, float],
          weight: float, keyword_scores: dict[int, float] | None = None) -> list[Fused]:
    """``keyword``: the keyword engine's candidates, (message id, score) best
    first; ``semantic``: the semantic engine's own best message ids;
    ``similarity``: cosine of every candidate; ``keyword_scores``: the keyword
    score of any other message the keyword engine matched (a semantic hit
    that also holds some of the words)."""
    scores = dict(keyword_scores or {})
    scores.update(keyword)
    fused: dict[int, Fused] = {}
    for mid, score in keyword:
        fused[mid] = Fused(mid, score, ["keyword"])
    for mid in dict.fromkeys(semantic):
        entry = fused.get(mid)
        if entry is None:
            entry = fused[mid] = Fused(mid, scores.get(mid, 0.0), ["keyword"] if mid in scores else [])
        entry.sources.append("semantic")
    for entry in fused.values():
        entry.score += weight * similarity.get(entry.message_id, 0.0)
    return sorted(fused.values(), key=lambda f: (-f.score, -len(f.sources), -f.message_id))

