"""Whether a question asks how something turned out, and hits re-ordered so. Pure.

"How did the interview turn out?", "which laptop did I end up buying", 后来…怎么样了, 最后…,
…的结果, 现在… ask for the latest of the sessions on a topic that comes back, where the words of
the question match its first mention as well. ``asks_for_latest`` reads that from the question;
``reweigh`` lifts the later of the best sessions by a bounded share of their own score, placed by
time within the spread of those sessions, so it decides only between sessions that match alike.
A question without such words leaves the ranking exactly as it was.

In hybrid mode a question that asks how something turned out (``asks_for_outcome``, not how it
stands now) first gives each of the best sessions' *sequel* its place (``sequels``): the first
later session among the hits that stands out as alike the session. A topic comes back as a thread
(asking the assistant about a cough, then the diagnosis; planning a purchase, then what was
bought), and the question names the topic in the words of the first session while the outcome is
told in the next one, in other words: a lift by time alone could not separate it from unrelated
later sessions (the day after, in a spread of months). A question that asks for a number or a time
(``keyword.answerkind``: 等了多长时间, 哪天, 多少钱) is a thread's question too, where the leader says no
answer of that kind and its sequel says one (首保要做啥, then 首保做完了…等了两个小时): only such a
pair is linked for it, so a leader that may answer keeps its place.

Only words that ask about an outcome whatever the sentence around them says count: "last week" is a
time (``timewords``), "at last weekend" and "last name" are no outcome, and 最近 alone is recent to
the event talked about, not to the asking. Asking for the first ("when did Caroline first…", 第一次)
is not read: LoCoMo's such questions name when an event happened, often told in a later session,
and lifting the earlier sessions lost there.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Callable, Collection, Mapping

from .hits import Hit, lifted
from .sessions import leading

if TYPE_CHECKING:
    import numpy as np

# The best sessions whose times set the spread a hit is placed in.
TOP_SESSIONS = 10
# The best sessions whose sequel takes their place (``sequels``)...
SEQUEL_LEADS = 3
# ...the sequel standing this many standard deviations above the leader's mean likeness to the
# sessions of the hits. A bar relative to the question's own hits, as ``fusion.BACKING_Z`` is: the
# cosines of a thread's two messages (a symptom and its diagnosis, a plan and the purchase) are
# no paraphrase's, and where every session is alike (long answers restating the same advice) none
# stands out. Chosen on the zh-daily tune halves: 1.5 linked other people's sessions, 2.5 found
# too few threads; a fixed cosine (0.5) lost en-daily's held-out "end up" questions.
SEQUEL_Z = 2.0
# A sequel is placed this share of the gap between them past its leader (0.05-1 did the same).
SEQUEL_PAST = 0.2

# Words that ask how something turned out...
_OUTCOME = re.compile(
    r"\b(?:in\s+the\s+end|eventually|finally|at\s+last(?!\s+(?:\w+day|week|weekend|night|month|year|time)\b)"
    r"|end(?:s|ed)?\s+up|end\s+result|turn(?:s|ed)?\s+out)\b"
    r"|后来|最后|最终|结果|到底|终于", re.IGNORECASE)
# ...and words that ask how it stands now, or for its latest mention: "current" and a bare "now"
# too, as 现在 is ("what is my current rent", "how much does she weigh now").
_NOW = re.compile(
    r"\b(?:latest|most\s+recent(?:ly)?|the\s+last\s+time|current(?:ly)?|now(?:adays)?|these\s+days"
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


def sequels(hits: list[Hit], likeness: Callable[[list[int]], "np.ndarray"], near: Collection[int],
            answered: Mapping[int, bool | None] | None = None) -> list[Hit]:
    """``hits`` (best first) with the sequel of each of the first ``SEQUEL_LEADS`` sessions placed
    just past it: the earliest session whose hits all come after the leader's, one of them among
    ``near`` (messages near the question in meaning: a sequel tells what it asks), and which is alike
    the leader ``SEQUEL_Z`` standard deviations above the leader's mean likeness to the other
    sessions of ``hits``. Two sessions are as alike as their most alike hits (``likeness`` of message
    ids, a square array in that order). A sequel already ahead keeps its place, a hit without a time
    is none, and each session's hits keep their order. With ``answered`` (whether each hit's message
    read says the kind of answer the question asks for, ``keyword.answerkind``; one not read, None
    or absent, may) only a leader whose hits were all read and say none has a sequel, and only a
    session one of whose hits says one is it."""
    import numpy as np

    groups: dict[str, list[int]] = {}
    for at, h in enumerate(hits):
        groups.setdefault(h.session_id, []).append(at)
    if len(groups) < 3:  # a leader and at least two others to stand out from
        return hits
    names = list(groups)
    index = {sid: k for k, sid in enumerate(names)}
    of = np.array([index[h.session_id] for h in hits])
    alike = np.full((len(names), len(names)), -np.inf)
    pairs = likeness([h.message_id for h in hits])
    np.maximum.at(alike, (of[:, None], of[None, :]), pairs)
    starts = [min(hits[i].timestamp for i in groups[sid]) for sid in names]
    ends = [max(hits[i].timestamp for i in groups[sid]) for sid in names]
    by_start = sorted(range(len(names)), key=lambda k: starts[k])
    told = [any(hits[i].message_id in near for i in groups[sid]) for sid in names]
    if answered is not None:
        says = [[answered.get(hits[i].message_id) for i in groups[sid]] for sid in names]
        told = [t and True in s for t, s in zip(told, says, strict=True)]
    lift: dict[str, float] = {}
    for lead in range(min(SEQUEL_LEADS, len(names))):
        if answered is not None and any(s is not False for s in says[lead]):
            continue
        others = np.delete(alike[lead], lead)
        bar = others.mean() + SEQUEL_Z * others.std()
        sequel = next((k for k in by_start if ends[lead] and starts[k] > ends[lead] and alike[lead, k] >= bar
                       and told[k]), None)
        if sequel is None:
            continue
        gap = hits[groups[names[lead]][0]].score - hits[groups[names[sequel]][0]].score
        if gap > 0:
            lift[names[sequel]] = max(lift.get(names[sequel], 0.0), gap * (1.0 + SEQUEL_PAST))
    if not lift:
        return hits
    moved = sorted(((h.score + lift.get(h.session_id, 0.0), n, h) for n, h in enumerate(hits)),
                   key=lambda entry: (-entry[0], entry[1]))
    return [Hit(h.message_id, h.session_id, score, h.source, h.timestamp) for score, _, h in moved]
