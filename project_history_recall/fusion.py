"""Reciprocal Rank Fusion of ranked message lists. Pure.

Each list votes ``weight / (k + rank)`` for each message it holds; a message
found by both engines collects both votes. Ranks, not scores, are fused, so
BM25 and cosine similarity never need a common scale.
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
