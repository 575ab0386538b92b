"""How long a scope's messages are, for BM25's length normalisation (``scoring.rank``).

BM25 weighs a message's length against the mean length. The ranking takes the mean of its
candidates' lengths (the messages holding a word of the question), which are alike in length in
every set measured; but where a scope's messages are very unequal (short questions beside 300-word
replies) its candidates are mostly the long replies, which hold a question's words by chance, and a
short message that says them is weighed against the replies' length, not against the scope's.
Such a scope is told apart by its own messages' lengths: their arithmetic mean is then several
times their geometric mean (2.7-3.0 in en-daily's and en-fresh's projects, at most 1.31 in LoCoMo,
longhist and the Chinese sets: docs/benchmarks.md, "BM25's mean length from the scope").

Each session's figures are kept per home while its *generation* holds (its rows only grow: a
session that changed otherwise has another generation), so a search reads only the sessions
written since the last one.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass
from typing import Callable, Hashable, Iterable

# A scope whose messages' arithmetic mean length is this many times their geometric mean or more
# is "unequal": the mean is then set by the long tail, not by the typical message.
UNEQUAL = 2.0


@dataclass(frozen=True)
class Lengths:
    """Some messages' lengths, summed: how many, their sum and the sum of their logarithms
    (a length under 1 counting 1)."""

    count: int = 0
    total: float = 0.0
    logs: float = 0.0

    @classmethod
    def of(cls, lengths: Iterable[float]) -> Lengths:
        values = [max(float(n), 1.0) for n in lengths]
        return cls(len(values), sum(values), sum(map(math.log, values)))

    def unequal_mean(self) -> float | None:
        """The mean length, where these messages are unequal (the mean ``UNEQUAL`` times their
        geometric mean or more); else None."""
        if not self.count:
            return None
        mean = self.total / self.count
        return mean if mean >= UNEQUAL * math.exp(self.logs / self.count) else None


class PerSession:
    """Each session's ``Lengths``, kept while its generation holds."""

    def __init__(self) -> None:
        self._kept: dict[Hashable, tuple[Hashable, Lengths]] = {}
        self._lock = threading.Lock()

    def scope(self, generations: dict[Hashable, Hashable],
              read: Callable[[list[Hashable]], dict[Hashable, Lengths]]) -> Lengths:
        """The summed ``Lengths`` of the sessions ``generations`` names (a key -> its generation):
        those not kept at that generation read by ``read`` (keys -> their lengths; a key it leaves
        out holds no message)."""
        with self._lock:
            kept = {k: self._kept[k][1] for k, g in generations.items() if k in self._kept and self._kept[k][0] == g}
        stale = [k for k in generations if k not in kept]
        if stale:
            fresh = read(stale)
            with self._lock:
                for k in stale:
                    kept[k] = fresh.get(k, Lengths())
                    self._kept[k] = (generations[k], kept[k])
        summed = list(kept.values())
        return Lengths(sum(x.count for x in summed), sum(x.total for x in summed), sum(x.logs for x in summed))

    def counts(self, keys: Iterable[Hashable]) -> list[int]:
        """How many messages each session of ``keys`` held when ``scope`` last saw it (0: not seen)."""
        with self._lock:
            return [self._kept[k][1].count if k in self._kept else 0 for k in keys]
