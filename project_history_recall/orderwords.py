"""Whether a question asks how something turned out, and hits re-ordered so. Pure.

"How did the interview turn out?", "which laptop did I end up buying", 后来…怎么样了, 最后…,
…的结果, 现在… ask for the latest of the sessions on a topic that comes back, where the words of
the question match its first mention as well. ``asks_for_latest`` reads that from the question;
``reweigh`` lifts the later of the best sessions by a bounded share of their own score, placed by
time within the spread of those sessions, so it decides only between sessions that match alike.
A question without such words leaves the ranking exactly as it was.

Only words that ask about an outcome whatever the sentence around them says count: "last week" is a
time (``timewords``), "at last weekend" and "last name" are no outcome, and 最近 alone is recent to
the event talked about, not to the asking. Asking for the first ("when did Caroline first…", 第一次)
is not read: LoCoMo's such questions name when an event happened, often told in a later session,
and lifting the earlier sessions lost there.
"""

from __future__ import annotations

import re

from .hits import Hit, lifted
from .sessions import leading

# The best sessions whose times set the spread a hit is placed in.
TOP_SESSIONS = 10

_LATEST = re.compile(
    r"\b(?:in\s+the\s+end|eventually|finally|at\s+last(?!\s+(?:\w+day|week|weekend|night|month|year|time)\b)"
    r"|end(?:s|ed)?\s+up|end\s+result|turn(?:s|ed)?\s+out|latest|most\s+recent(?:ly)?|the\s+last\s+time"
    r"|currently|nowadays|these\s+days|right\s+now|at\s+the\s+moment)\b"
    r"|后来|最后|最终|结果|到底|终于|现在|如今|目前|最近一次", re.IGNORECASE)


def asks_for_latest(question: str) -> bool:
    """Whether ``question`` asks how something turned out, or how it stands now."""
    return bool(_LATEST.search(question or ""))


def reweigh(hits: list[Hit], weight: float) -> list[Hit]:
    """``hits`` (best first) re-ordered by ``score × (1 + weight × place)``, ``place`` 0..1 being how
    late the hit lies between the earliest and the latest of the first ``TOP_SESSIONS`` sessions'
    hits. With weight 0, or when those sessions all lie at one time, the very same list; a hit
    without a time gains nothing; ties keep their order."""
    if weight <= 0 or not hits:
        return hits
    times = [h.timestamp for h in leading(hits, lambda h: h.session_id, TOP_SESSIONS) if h.timestamp]
    if not times or max(times) <= min(times):
        return hits
    low, spread = min(times), max(times) - min(times)

    def place(ts: float) -> float:
        return min(max((ts - low) / spread, 0.0), 1.0) if ts else 0.0

    return lifted(hits, lambda h: weight * place(h.timestamp))
