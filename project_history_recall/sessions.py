"""Ranked messages turned into ranked sessions. Pure.

People ask "which earlier session was it?", so a search answers with
distinct sessions. A session is scored by all its matching messages, not
only its best one: the best message's score plus ``support`` times a
decaying sum of the others' (``decay`` each step), so a conversation that
comes back to the question several times outranks one that touched it
once, while a single strong match still leads a heap of weak ones. Scores
that already hold their session's evidence (the keyword engine lifts each
message by its session's, see ``keyword.engine``) are grouped with
``support`` 0, so that evidence is not counted twice.

Each session keeps its best message, and as further hits its other messages
among the best ``limit`` messages overall: the few sessions that hold most
of the evidence carry several hits and the rest one, so the results hold
every one of the best ``limit`` messages of the sessions shown, and
``limit`` distinct sessions.

The same function ranks the keyword engine's list, the semantic engine's and
the fused one, so every mode answers in sessions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Generic, TypeVar

T = TypeVar("T")

# For cosine similarities, which know nothing of a message's session (tuned on
# LoCoMo conversations 0-4 and LoCoMo-zh's first conversation, the others kept
# aside to check).
SEMANTIC_SUPPORT = 0.25
DECAY = 0.5


@dataclass
class Group(Generic[T]):
    session_id: str
    score: float = 0.0
    hits: list[T] = field(default_factory=list)  # the session's best message first, then its further hits


def session_score(scores: list[float], support: float, decay: float = DECAY) -> float:
    """The best score plus ``support`` × (second + decay × third + decay² × fourth …); negative scores add nothing."""
    ordered = sorted((max(0.0, s) for s in scores), reverse=True)
    if not ordered:
        return 0.0
    return ordered[0] + support * sum(s * decay ** i for i, s in enumerate(ordered[1:]))


def by_session(ranked: list[T], session_of: Callable[[T], str], score_of: Callable[[T], float], limit: int, *,
               support: float = 0.0, decay: float = DECAY) -> list[Group[T]]:
    """The best ``limit`` sessions of ``ranked`` (messages best first), each with
    its best message and its further hits. Sessions that score the same keep
    the order of their best messages."""
    groups: dict[str, list[tuple[int, T]]] = {}
    for at, item in enumerate(ranked):
        groups.setdefault(session_of(item), []).append((at, item))
    scored = []
    for sid, members in groups.items():
        members.sort(key=lambda m: (-score_of(m[1]), m[0]))
        shown = [members[0][1]] + [item for at, item in members[1:] if at < limit]
        scored.append(Group(sid, session_score([score_of(item) for _, item in members], support, decay), shown))
    first = {sid: members[0][0] for sid, members in groups.items()}
    scored.sort(key=lambda g: (-g.score, first[g.session_id]))
    return scored[:limit]
