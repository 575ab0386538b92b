"""One search hit, as both engines, the fusion and the response see it.

Every hit keeps its session, whichever engine found it: results are sessions,
each ranked by all its hits (``sessions.by_session``).
"""

from __future__ import annotations

from dataclasses import dataclass

KEYWORD, SEMANTIC, BOTH = "keyword", "semantic", "both"


@dataclass(frozen=True)
class Hit:
    message_id: int
    session_id: str
    score: float  # on the scale of its source: keyword evidence, a cosine, or the fused score
    source: str  # KEYWORD, SEMANTIC, or BOTH when the fusion found it in both engines' lists
    timestamp: float  # seconds; 0.0 when state.db holds no usable time
