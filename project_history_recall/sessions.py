"""Ranked hits turned into ranked sessions. Pure.

People ask "which earlier session was it?", so a search answers with
distinct sessions, each ranked by its best hit. A session's other matches
already count in that hit's score where they help: the keyword engine lifts
each message by its session's evidence (the best few matches and how much
of the question the session holds, see ``keyword.engine``), and the blend
adds to each cosine its session's further semantic evidence, what its other
chunks hold above the question's background over the scope (see
``fusion``). The semantic ranking adds nothing of the kind and scores a
session by its best cosine: a plain decaying sum of its other cosines grows
with its length (unrelated text's cosines are positive) and traded LoCoMo
for zh-daily's short sessions, and counting only what stands above the
question's background, as the blend does, lost paraphrase questions there.
Nor does hybrid add a session's second-best cosine, nor either ranking its
centroid: each lost questions on some half (with neighbours weighing 1, a
session of up to three chunks is already scored by its centroid). Figures:
docs/benchmarks.md, "A session's further semantic evidence", "The semantic
half with USE" and "A session's centroid".

Each session keeps its best hit, and as further hits its other hits among
the best ``limit`` overall: the few sessions that hold most of the evidence
carry several and the rest one, so the results hold every one of the best
``limit`` hits of the sessions shown, in ``limit`` distinct sessions.

The same function ranks the keyword engine's list, the semantic engine's and
the fused one, so every mode answers in sessions. Hybrid search reserves
places for each engine's own first sessions (``reserved``): where the engines
disagree, the fused order can push the session one of them ranks first below
the tenth, and hybrid then misses what that engine alone finds. Such a
session takes the place of the last of the others, so the first places keep
the fused order. The semantic side's reserved sessions come up further, to end
at the middle (``raised``), when their best message stands far out of the
question's background over the scope: the paraphrase the keyword side cannot
see, which the blend had left at the bottom of the ten under long answers that
hold the question's words (see ``search.STANDOUT_Z``); the first of them takes the first place
when its best message stands as far above the fused first's (``search._led``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Collection, Generic, Iterator, TypeVar

T = TypeVar("T")


@dataclass
class Group(Generic[T]):
    session_id: str
    hits: list[T] = field(default_factory=list)  # the session's best hit first, then its further hits


def by_session(ranked: list[T], session_of: Callable[[T], str], limit: int,
               reserved: Collection[str] = ()) -> list[Group[T]]:
    """The sessions of the first ``limit`` distinct sessions of ``ranked`` (hits best
    first), in that order, each with its best hit and its further hits. A session of ``reserved``
    that ``ranked`` holds is among them however far down it comes, in the place of the last
    of the others (see the module's note)."""
    opens = set(_openers(ranked, session_of, limit, reserved))
    groups: dict[str, Group[T]] = {}
    for at, item in enumerate(ranked):
        sid = session_of(item)
        if at in opens:
            groups[sid] = Group(sid, [item])
        elif at < limit and sid in groups:
            groups[sid].hits.append(item)
    return list(groups.values())


def raised(groups: list[Group[T]], session_ids: Collection[str], last: int) -> list[Group[T]]:
    """``groups`` with those of ``session_ids`` that come after place ``last`` (counted from 1)
    moved up to end there, in their order; the groups from their new places on move down, those
    before keep theirs. The first never moves (``last`` of at least 1): when ``last`` or more groups
    move, they follow it from place 2 and so end past ``last``, as one raised to place 1 lands at 2.
    (``search`` moves at most a fifth of its results, to their middle, and none of fewer than five,
    so its raised groups always end at the middle.)"""
    late = [g for g in groups[last:] if g.session_id in session_ids]
    if not late:
        return groups
    rest = [g for g in groups if g.session_id not in {m.session_id for m in late}]
    at = max(1, last - len(late))
    return rest[:at] + late + rest[at:]


def firsts(ranked: list[T], session_of: Callable[[T], str], count: int) -> list[str]:
    """The first ``count`` distinct sessions of ``ranked``."""
    return [session_of(ranked[at]) for at in _openers(ranked, session_of, count, ())]


def _openers(ranked: list[T], session_of: Callable[[T], str], limit: int, reserved: Collection[str]) -> Iterator[int]:
    """The positions in ``ranked`` of the items that open ``by_session``'s groups, in order."""
    owed = set(reserved).intersection(map(session_of, ranked)) if reserved else set()
    seen: set[str] = set()
    for at, item in enumerate(ranked):
        if len(seen) == limit:
            return
        sid = session_of(item)
        if sid in seen:
            continue
        if sid in owed:
            owed.discard(sid)
        elif len(seen) + len(owed) >= limit:
            continue
        seen.add(sid)
        yield at


def leading(ranked: list[T], session_of: Callable[[T], str], count: int) -> list[T]:
    """The first items of ``ranked`` that belong to its first ``count`` distinct sessions: every
    item before the one that opens the next session (all of them when they hold no more)."""
    opened = list(_openers(ranked, session_of, count + 1, ()))
    return ranked[: opened[count]] if len(opened) > count else ranked


def reach(ranked: list[T], session_of: Callable[[T], str], limit: int, reserved: Collection[str] = ()) -> int:
    """How many of ``ranked``'s first items ``by_session`` reads: through the one that opens the
    ``limit``-th session (all of them when they hold fewer). Its groups depend on those alone."""
    opened = list(_openers(ranked, session_of, limit, reserved))
    return opened[-1] + 1 if len(opened) == limit else len(ranked)


def deciding(ranked: list[T], session_of: Callable[[T], str], limit: int, doubtful: Callable[[T], bool],
             rejects: Callable[[list[T]], set[int]], reserved: Collection[str] = ()) -> list[T]:
    """The first items of ``ranked`` that decide ``by_session(…, limit, reserved)`` once those ``rejects``
    turns down are left out: ``by_session`` of the result is ``by_session`` of ``ranked`` without
    every ``doubtful`` item ``rejects`` would turn down. ``rejects`` (a batch of doubtful items ->
    the positions in the batch of those to leave out) is asked only about the doubtful items
    within the reach, again as it moves down past the ones left out."""
    asked: set[int] = set()
    out: set[int] = set()
    while True:
        kept = [i for i in range(len(ranked)) if i not in out]
        kept = kept[: reach([ranked[i] for i in kept], session_of, limit, reserved)]
        todo = [i for i in kept if i not in asked and doubtful(ranked[i])]
        if not todo:
            return [ranked[i] for i in kept]
        asked.update(todo)
        out.update(todo[j] for j in rejects([ranked[i] for i in todo]))
