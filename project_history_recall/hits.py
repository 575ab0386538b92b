"""One search hit, as both engines, the fusion and the response see it.

Every hit keeps its session, whichever engine found it: results are sessions,
each ranked by all its hits (``sessions.by_session``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

KEYWORD, SEMANTIC, BOTH = "keyword", "semantic", "both"
# Found by when it was said alone: a question that names only a time (``timeonly``).
TIME = "time"
# Named by its title: a query that is a session's title (``search``), as Hermes's session_search reads one.
TITLE = "title"


@dataclass(frozen=True)
class Hit:
    message_id: int
    session_id: str
    score: float  # on the scale of its source: keyword evidence, a cosine, or the fused score
    source: str  # KEYWORD, SEMANTIC, BOTH when the fusion found it in both engines' lists, TIME or TITLE
    timestamp: float  # seconds; 0.0 when state.db holds no usable time


def lifted(hits: list[Hit], share: Callable[[Hit], float]) -> list[Hit]:
    """``hits`` (best first) re-ordered by ``score + |score| × share(hit)``: each lifted by that share
    of its own score's size (a negative cosine is raised too, not pushed further down); ties keep
    their order."""
    boosted = [(h.score + abs(h.score) * share(h), n, h) for n, h in enumerate(hits)]
    boosted.sort(key=lambda entry: (-entry[0], entry[1]))
    return [h for _, _, h in boosted]
