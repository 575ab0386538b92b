"""Whether a question asks how something turned out, and hits re-ordered so. Pure.

"How did the interview turn out?", "which laptop did I end up buying", 后来…怎么样了, 最后…,
…的结果, 现在… ask for the latest of the sessions on a topic that comes back, where the words of
the question match its first mention as well. ``asks_for_latest`` reads that from the question;
``reweigh`` lifts the later of the best sessions by a bounded share of their own score, placed by
time within the spread of those sessions, so it decides only between sessions that match alike.
A question without such words leaves the ranking exactly as it was.

In hybrid mode such a question first gives each of the best sessions' *sequel* its place
(``sequels``): the first later session among the hits whose messages are alike the session's. A
topic comes back as a thread (asking the assistant about a cough, then the diagnosis; planning a
purchase, then what was bought), and the question names the topic in the words of the first
session while the outcome is told in the next one, in other words: a lift by time alone could not
separate it from unrelated later sessions (the day after, in a spread of months).

Only words that ask about an outcome whatever the sentence around them says count: "last week" is a
time (``timewords``), "at last weekend" and "last name" are no outcome, and 最近 alone is recent to
the event talked about, not to the asking. Asking for the first ("when did Caroline first…", 第一次)
is not read: LoCoMo's such questions name when an event happened, often told in a later session,
and lifting the earlier sessions lost there.
"""

from __future__ import annotations

import re

from typing import TYPE_CHECKING, Callable

from .hits import Hit, lifted
from .sessions import leading

if TYPE_CHECKING:
    import numpy as np

# The best sessions whose times set the spread a hit is placed in.
TOP_SESSIONS = 10
# The best sessions whose sequel takes their place (``sequels``)...
SEQUEL_LEADS = 3
# ...the sequel being a later session with a message this alike one of theirs (a cosine on the
# blend's scale). Chosen on the zh-daily tune halves: 0.4 linked unrelated sessions and 0.55 lost
# the threads gained (the two messages of a thread are a diagnosis and its symptoms, a purchase and
# its plan, not paraphrases); the leads, 1-5, and how far past its leader a sequel goes did not matter.
SEQUEL_LIKENESS = 0.5
# A sequel is placed this share of the gap between them past its leader.
SEQUEL_PAST = 0.2

# Words that ask how something turned out...
_OUTCOME = re.compile(
    r"\b(?:in\s+the\s+end|eventually|finally|at\s+last(?!\s+(?:\w+day|week|weekend|night|month|year|time)\b)"
    r"|end(?:s|ed)?\s+up|end\s+result|turn(?:s|ed)?\s+out)\b"
    r"|后来|最后|最终|结果|到底|终于", re.IGNORECASE)
# ...and words that ask how it stands now, or for its latest mention.
_NOW = re.compile(
    r"\b(?:latest|most\s+recent(?:ly)?|the\s+last\s+time|currently|nowadays|these\s+days|right\s+now"
    r"|at\s+the\s+moment)\b"
    r"|现在|如今|目前|最近一次", re.IGNORECASE)


def asks_for_latest(question: str) -> bool:
    """Whether ``question`` asks how something turned out, or how it stands now."""
    return asks_for_outcome(question) or bool(_NOW.search(question or ""))


def asks_for_outcome(question: str) -> bool:
    """Whether ``question`` asks how something turned out (``sequels``): not how it stands now,
    which the latest mention tells ("what is Jon currently reading", 现在这群朋友), not a sequel."""
    return bool(_OUTCOME.search(question or ""))


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


def sequels(hits: list[Hit], likeness: Callable[[list[int]], "np.ndarray"]) -> list[Hit]:
    """``hits`` (best first) with the sequel of each of the first ``SEQUEL_LEADS`` sessions placed
    just ahead of it: the earliest session whose hits all come after the leader's and one of whose
    hits is ``SEQUEL_LIKENESS`` alike one of the leader's (``likeness`` of message ids, a square
    array in that order). A sequel already ahead keeps its place; its hits keep their order."""
    if not hits:
        return hits
    groups: dict[str, list[int]] = {}
    for at, h in enumerate(hits):
        groups.setdefault(h.session_id, []).append(at)
    like = likeness([h.message_id for h in hits])
    first = {sid: min(hits[i].timestamp for i in ats) for sid, ats in groups.items()}
    lift: dict[str, float] = {}
    for sid in list(groups)[:SEQUEL_LEADS]:
        ats = groups[sid]
        last = max(hits[i].timestamp for i in ats)
        later = sorted((first[other], n, other) for n, other in enumerate(groups) if first[other] > last)
        sequel = next((other for _, _, other in later
                       if like[ats][:, groups[other]].max() >= SEQUEL_LIKENESS), None)
        if sequel is None:
            continue
        gap = hits[ats[0]].score - hits[groups[sequel][0]].score
        if gap > 0:
            lift[sequel] = max(lift.get(sequel, 0.0), gap * (1.0 + SEQUEL_PAST))
    if not lift:
        return hits
    moved = [(h.score + lift.get(h.session_id, 0.0), n, h) for n, h in enumerate(hits)]
    moved.sort(key=lambda entry: (-entry[0], entry[1]))
    return [Hit(h.message_id, h.session_id, score, h.source, h.timestamp) for score, _, h in moved]
