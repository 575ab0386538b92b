"""One project's vectors in memory, searched exactly over the scope's rows.

The scope's vectors are read from embeddings.db once and kept in RAM as one
int8 matrix per project (``ScopeMatrix``), each row with its own scale,
topped up from the store when the indexer adds or removes vectors. A query
is one integer matrix-vector product over exactly the scope's rows (never a
global top-K filtered afterwards); it only *chooses*: the best rows, with
twice the margin, and the keyword candidates are scored again with their
stored float vectors, so every score a search returns is the float one.
At 100k chunks the int8 rows take 51 MB where float32 took 205 MB.

A new process would read those rows from embeddings.db one by one (1-2 CPU
seconds at 100k chunks), so a matrix that read many rows from the store is
saved whole to one file (``files.arrays``) and the next process for that
project starts from it: one read of the file, then the usual sync reads only
what the store has gained since. The file records the store it was read from
(its ``identity``) and, per session, the generation and last rowid it holds,
so a rebuilt store or a changed session is read afresh, as in memory. A
damaged file is only a slower start, and whatever it holds only *chooses*:
every score comes from the store's float vectors.

Each chunk is scored in its conversational context: the similarity of the
chunk plus w times its neighbours' in the same session (the chunk before and
after), divided by the norm of the vector v + w(prev + next), which is
exactly the cosine with that vector. Short chat turns ("Yes, last week!")
mean little alone, and the context costs no extra embedding, since it is
computed from the stored vectors. The weight is the embedder's
``context_weight``. A chunk keeps its context's score alone: the larger of
its own and its context's cosine, their mean, or lighter neighbours lifted
zh-daily's three-message sessions and cost LoCoMo's held-out half
(docs/benchmarks.md, "The semantic half with USE").

A search also weighs each session's evidence beyond its best chunk
(``session_evidence``) from the same pass, for the hybrid blend (``fusion``).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ..files import arrays
from . import blas
from . import store as vectors

NORM_SLICE = 2048
PAGE = 1024  # rows read at a time: their float copies stay a few MB, which the allocator hands back
MIN_SIMILARITY = 0.15  # semantic hits below this are dropped…
RELATIVE_SIMILARITY = 0.6  # …and so are those far below the best one
CANDIDATE_FACTOR = 4
# Values of the int8 matrix turned to float32 at a time for the query's pass (``_dots``): 1 MB,
# 512 rows of USE's 512 dimensions (faster than 256 rows in searches at 1M messages), and fewer
# than OpenBLAS's threshold for a matrix-vector product (between 393k and 524k values in 0.3.31),
# above which it wakes its thread pool, far slower on a busy 2-core machine (docs/benchmarks.md).
DOT_VALUES = 2**18
# How far int8 moves a score in context at most (measured: 0.0014 with USE's
# 512 dimensions). A row whose int8 score is more than twice this below the
# k-th best int8 score is below the k-th best float score too, so only the rows
# within it are scored again. The same holds of the best row of the
# ``limit``-th message (``_message_bar``), usually far above the k-th row.
INT8_ERROR = 0.002
# …and at most this many times the rows a search needs: a row among the best k
# in float is missed only if 2k rows score within 2 * INT8_ERROR of it.
RESCORE_FACTOR = 2
# A matrix is saved once it has read this many rows from the store since it was last saved or
# read back (or a tenth of its rows, if more): reading them costs the next process far more.
SAVE_AFTER_ROWS = 4096
# A chunk is evidence for its session when its score stands this many standard deviations above
# the question's mean over the scope (``session_evidence``). 4 was chosen with the blend's
# ``fusion.EVIDENCE_WEIGHT`` on the tune halves of LoCoMo, longhist, LoCoMo-zh (both languages),
# zh-daily and en-daily (each in its own projects and in one): lower lost questions, higher gained less.
EVIDENCE_Z = 4.0
# The scopes whose rows a matrix keeps between searches (``_scope``): a conversation searches one
# scope, and a process may serve a few conversations in the same project.
SCOPES_KEPT = 4
# The per-row arrays (made in ``ScopeMatrix.__init__``, with their types): what a saved matrix
# holds, in the file's order, and what growing and compacting keep.
SAVED = ("vecs", "scale", "rowids", "mids", "sidx", "ts", "alive", "prev", "next", "norm")
# What a row not written yet holds, where it is not 0 (``_reserve``): no neighbour, no scaling.
_UNWRITTEN = {"scale": 1.0, "prev": -1, "next": -1, "norm": 1.0}


@dataclass
class SemanticHit:
    message_id: int
    session_id: str
    score: float
    timestamp: float
    content_hash: str  # of the text its chunk was embedded from, read with the chunk's vector


def _quantise(v):
    """(int8 rows, each row's scale): ``v ≈ rows * scale``. Overwrites ``v`` (float32, 1 or 2 dimensions)."""
    import numpy as np

    rows = np.atleast_2d(v)
    # Two reductions instead of abs(): no temporary the size of the block.
    scale = np.maximum(rows.max(axis=1), -rows.min(axis=1)) / np.float32(127.0)
    scale[scale == 0] = 1.0
    np.multiply(rows, (1.0 / scale)[:, None], out=rows)
    np.rint(rows, out=rows)
    ints = rows.astype(np.int8)
    return (ints, scale) if v.ndim == 2 else (ints[0], scale[0])


def _rows_of(mids, messages: Iterable[int]):
    """The rows (indices into ``mids``, ascending) whose message is one of ``messages``.

    Found by binary search among the few messages: numpy's ``isin`` with a lookup table filled a
    table spanning their ids (up to the whole of state.db's) at every search, and its sort-based
    kind sorts every row."""
    import numpy as np

    wanted = np.unique(np.fromiter(messages, dtype=np.int64))
    if len(wanted) == 0:
        return np.zeros(0, dtype=np.int64)
    at = np.searchsorted(wanted, mids)
    at[at == len(wanted)] = 0
    return np.flatnonzero(wanted[at] == mids)


def session_evidence(scores, sessions, z: float = EVIDENCE_Z, background: tuple[float, float] | None = None):
    """(session indices, their evidence): of each session, the sum over its chunks other than its
    best of how far each scores above the question's background, ``mean + z × std`` of ``scores``
    (the score of every chunk in the scope, ``sessions`` the session index of each; ``background``:
    their mean and std, if known). Sessions with none are left out.

    Cosines of unrelated text are not zero (USE's sit around 0.1-0.3), so a plain sum of a
    session's cosines grows with its length: it lifted long sessions over short relevant ones
    (zh-daily lost what LoCoMo gained). Counting only what stands out of this question's own
    scope gives a long unrelated session nothing, however long, and a session that holds the
    answer in several places more than one that holds it once."""
    import numpy as np

    none = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
    if len(scores) < 2:
        return none
    mean, std = background or (float(scores.mean()), float(scores.std()))
    bar = mean + z * std
    above = np.flatnonzero(scores > bar)
    if len(above) < 2:
        return none
    who = sessions[above]
    excess = scores[above].astype(np.float64) - bar
    total = np.bincount(who, weights=excess)
    best = np.zeros_like(total)
    np.maximum.at(best, who, excess)
    extra = total - best
    keep = np.flatnonzero(extra > 0)
    return keep, extra[keep]


class ScopeMatrix:
    """One project's vectors in RAM, with per-row session, message, time and store rowid."""

    def __init__(self, dim: int, context_weight: float = 1.0, saved_at: Path | None = None, source: str = ""):
        """``saved_at``: the file this matrix is kept in between processes (None: never saved);
        ``source``: the identity of the store its rows come from."""
        import numpy as np

        self.dim = dim
        self.w = float(context_weight)
        self.n = 0
        self.vecs = np.zeros((0, dim), dtype=np.int8)
        self.scale = np.zeros(0, dtype=np.float32)
        self.rowids = np.zeros(0, dtype=np.int64)
        self.mids = np.zeros(0, dtype=np.int64)
        self.sidx = np.zeros(0, dtype=np.int32)
        self.ts = np.zeros(0, dtype=np.float64)
        self.alive = np.zeros(0, dtype=bool)
        self.prev = np.zeros(0, dtype=np.int64)
        self.next = np.zeros(0, dtype=np.int64)
        self.norm = np.zeros(0, dtype=np.float32)
        self.sessions: list[str] = []
        self.session_index: dict[str, int] = {}
        self.loaded: dict[str, tuple[int, int]] = {}  # sid -> (generation, last rowid)
        self.rows: dict[str, list[int]] = {}  # sid -> row indices, in message order
        self.lock = threading.Lock()
        self.saved_at = saved_at
        self.source = source
        self.unsaved = 0  # rows read from the store since the matrix was saved or read back
        self._read_back = saved_at is None
        self._synced: tuple | None = None  # the states and the members (a set) of the last sync that finished
        self.changes = 0  # counts the calls that changed which rows there are (``_scope``)
        self._scopes: dict[tuple, tuple] = {}  # each scope's rows (``_scope``), with ``changes`` then

    # -- growing and shrinking -------------------------------------------------------
    def _reserve(self, extra: int) -> None:
        import numpy as np

        need = self.n + extra
        cap = len(self.mids)
        if need <= cap:
            return
        # Room to grow into without copying: the pages of rows never written take no memory.
        new_cap = max(need, cap) * 5 // 4 + 1024
        for name in SAVED:
            old = getattr(self, name)
            if name == "vecs":  # left unset, the vectors' pages (most of the memory) stay untouched
                grown = np.empty((new_cap, self.dim), dtype=old.dtype)
            else:
                grown = np.full(new_cap, _UNWRITTEN.get(name, 0), dtype=old.dtype)
            grown[: self.n] = old[: self.n]
            setattr(self, name, grown)

    def _kill(self, sid: str) -> None:
        self.changes += 1
        for r in self.rows.pop(sid, []):
            self.alive[r] = False
        self.loaded.pop(sid, None)

    def _compact(self) -> None:
        import numpy as np

        self.changes += 1
        keep = np.flatnonzero(self.alive[: self.n])
        remap = np.full(self.n + 1, -1, dtype=np.int64)
        remap[keep] = np.arange(len(keep))
        for name in SAVED:  # every per-row array
            setattr(self, name, getattr(self, name)[keep])
        # Neighbour links point at rows of the same session, which are alive together.
        self.prev = np.where(self.prev >= 0, remap[self.prev], -1)
        self.next = np.where(self.next >= 0, remap[self.next], -1)
        self.n = len(keep)
        self.rows = {sid: [int(remap[r]) for r in rows] for sid, rows in self.rows.items()}

    def _append(self, batch: list, after: dict[str, int], upto: dict[str, int]) -> None:
        """Rows ``(rowid, session_id, message_id, timestamp, f16 bytes)`` in session order, those
        of each session after ``after`` and up to ``upto`` (the last rowid its state names: a
        row the indexer wrote since is read with the next sync, and only then)."""
        import numpy as np

        batch = [r for r in batch if after.get(r[1], 0) < r[0] <= upto[r[1]]]
        if not batch:
            return
        self.changes += 1
        self.unsaved += len(batch)
        self._reserve(len(batch))
        count = len(batch)
        start, end = self.n, self.n + count
        self.rowids[start:end] = [r[0] for r in batch]
        self.mids[start:end] = [r[2] for r in batch]
        # No time is NaN: outside every since/until, as in keyword search.
        self.ts[start:end] = [np.nan if r[3] is None else r[3] for r in batch]
        self.alive[start:end] = True
        # Linked per session, not per row: a page holds a few sessions' runs.
        self.prev[start:end] = np.arange(start - 1, end - 1)
        self.next[start:end] = np.arange(start + 1, end + 1)
        sids = [r[1] for r in batch]
        cuts = [i for i in range(1, count) if sids[i] != sids[i - 1]]
        crossing = []  # rows linked to a row of an earlier page
        for first, stop in zip([0, *cuts], [*cuts, count], strict=True):
            sid = sids[first]
            idx = self.session_index.get(sid)
            if idx is None:
                idx = self.session_index[sid] = len(self.sessions)
                self.sessions.append(sid)
            self.sidx[start + first: start + stop] = idx
            rows = self.rows.setdefault(sid, [])
            self.prev[start + first] = rows[-1] if rows else -1
            self.next[start + stop - 1] = -1
            if rows:
                self.next[rows[-1]] = start + first
                crossing += [rows[-1], start + first]
            rows.extend(range(start + first, start + stop))
        self.n = end
        fresh = np.frombuffer(b"".join(r[4] for r in batch), dtype=np.float16).reshape(count, self.dim)
        fresh = fresh.astype(np.float32)
        # Norms in context from the float rows while they are at hand.
        acc = fresh.copy()
        linked = self.next[start: end - 1] >= 0
        acc[1:][linked] += self.w * fresh[:-1][linked]
        acc[:-1][linked] += self.w * fresh[1:][linked]
        norms = np.linalg.norm(acc, axis=1)
        norms[norms == 0] = 1.0
        self.norm[start:end] = norms
        self.vecs[start:end], self.scale[start:end] = _quantise(fresh)
        if crossing:
            self._norms(np.asarray(crossing, dtype=np.int64))

    def _norms(self, idx) -> None:
        """Norm of each row's vector plus its neighbours', from the int8 rows (the
        norm only serves the choosing pass), in slices so the temporaries stay
        a few MB however many rows arrive."""
        import numpy as np

        def floats(rows):
            return self.vecs[rows] * self.scale[rows, None]

        for at in range(0, len(idx), NORM_SLICE):
            part = idx[at: at + NORM_SLICE]
            acc = floats(part)
            p, q = self.prev[part], self.next[part]
            has_p, has_q = p >= 0, q >= 0
            acc[has_p] += self.w * floats(p[has_p])
            acc[has_q] += self.w * floats(q[has_q])
            norms = np.linalg.norm(acc, axis=1)
            norms[norms == 0] = 1.0
            self.norm[part] = norms

    # -- keeping in step with the store -----------------------------------------------
    def sync(self, store: vectors.VectorStore, fp: str, members: list[str],
             states: dict[str, vectors.VectorState]) -> None:
        # A search of an index nothing has changed hands in the very states it synced with last
        # (the indexer's memo, ``top_up``), and walking the members again finds nothing to do.
        # (A search's members come in the caller's order, its own session last: compared as a set.)
        if self._synced is not None and self._synced[0] is states and self._synced[1] == frozenset(members):
            return
        if not self._read_back:
            self._read_back = True
            self._read_saved()
        member_set = set(members)
        for sid in [s for s in self.loaded if s not in member_set or s not in states]:
            self._kill(sid)
        full, appends = [], []
        for sid in members:
            st = states.get(sid)
            if st is None or st.chunks == 0 and sid not in self.loaded:
                continue
            have = self.loaded.get(sid)
            if have is None or have[0] != st.generation:
                if have is not None:
                    self._kill(sid)
                full.append(sid)
            elif st.last_rowid > have[1]:
                appends.append(sid)
        upto = {sid: states[sid].last_rowid for sid in full + appends}
        if full:
            self._reserve(sum(states[s].chunks for s in full))
            for page in store.rows(fp, full, page=PAGE):
                self._append(page, {}, upto)
        for sid in appends:
            for page in store.rows(fp, [sid], after_rowid=self.loaded[sid][1], page=PAGE):
                self._append(page, {sid: self.loaded[sid][1]}, upto)
        for sid in full + appends:
            self.loaded[sid] = (states[sid].generation, states[sid].last_rowid)
        dead = self.n - int(self.alive[: self.n].sum())
        if dead > 1000 and dead > self.n // 4:
            self._compact()
        if self.saved_at is not None and self.unsaved >= max(SAVE_AFTER_ROWS, self.n // 10):
            self.save()
        self._synced = (states, frozenset(members))

    # -- kept between processes ---------------------------------------------------------
    def _fields(self) -> dict:
        """What a saved matrix must have been made with for this one to start from it."""
        return {"source": self.source, "dim": self.dim, "w": self.w}

    def save(self) -> None:
        """Write the matrix to ``saved_at`` (the caller holds ``lock``); a failed write is logged
        and leaves the matrix as it is."""
        if self.saved_at is None:
            raise AssertionError("this matrix has no file to be saved in")
        fields = {**self._fields(), "rows": self.n, "sessions": self.sessions,
                  "loaded": {sid: list(state) for sid, state in self.loaded.items()}}
        if arrays.save(self.saved_at, fields, [getattr(self, name)[: self.n] for name in SAVED]):
            self.unsaved = 0

    def _read_saved(self) -> None:
        """Start from the saved matrix, if there is one made from the same store and model."""
        import numpy as np

        if self.saved_at is None or self.n:
            return
        found = arrays.load(self.saved_at, spare=SAVE_AFTER_ROWS)
        if found is None:
            return
        fields, parts = found
        try:
            if {k: fields[k] for k in self._fields()} != self._fields():
                return
            n = int(fields["rows"])
            sessions = [str(s) for s in fields["sessions"]]
            loaded = {str(sid): (int(g), int(r)) for sid, (g, r) in fields["loaded"].items()}
            named = dict(zip(SAVED, parts, strict=True))
        except (KeyError, TypeError, ValueError):
            return
        links = np.concatenate([named["prev"][:n], named["next"][:n]])
        if (named["vecs"].shape[1:] != (self.dim,) or any(len(a) != n + SAVE_AFTER_ROWS for a in parts)
                or (n and (links.min() < -1 or links.max() >= n
                           or named["sidx"][:n].min() < 0 or named["sidx"][:n].max() >= len(sessions)))):
            return
        for name, part in named.items():
            setattr(self, name, part)
        self.n = n
        self.changes += 1
        self.sessions = sessions
        self.session_index = {sid: i for i, sid in enumerate(sessions)}
        # Each session's live rows, in row order (the order they were appended in).
        live = np.flatnonzero(named["alive"][:n])
        live = live[np.argsort(named["sidx"][live], kind="stable")]
        cuts = np.flatnonzero(np.diff(named["sidx"][live])) + 1
        self.rows = {sessions[int(named["sidx"][part[0]])]: part.tolist() for part in np.split(live, cuts)
                     if len(part)}
        self.loaded = {sid: state for sid, state in loaded.items() if sid in self.rows}
        for sid in [sid for sid in self.rows if sid not in self.loaded]:
            self._kill(sid)

    # -- searching ----------------------------------------------------------------------
    def search(self, store: vectors.VectorStore, q, allowed: Iterable[str], since: float | None,
               until: float | None, limit: int, candidates: set[int] | None = None,
               baseline: float = 0.0, with_evidence: bool = True,
               ) -> tuple[list[SemanticHit], dict[int, float], dict[str, float], tuple[float, float]]:
        """(the ``limit`` best messages, the similarity of each message in ``candidates``, each
        session's evidence beyond its best chunk (``session_evidence``), where it has any and
        ``with_evidence``; the question's background over the scope: the mean and standard
        deviation of every chunk's score in context, on the similarities' scale).

        A message's similarity is its best chunk's, each chunk scored with its
        neighbours; only rows of ``allowed`` sessions in the time range count.
        The int8 rows choose; ``store``'s float vectors score what was chosen.
        ``baseline``: the model's ``cosine_baseline``, the similarity mapped to 0."""
        import numpy as np

        n = self.n
        if n == 0:
            return [], {}, {}, (0.0, 0.0)
        q8, q_scale = _quantise(np.array(q, dtype=np.float32))
        dots = self._dots(q8)
        # A missing neighbour is -1, which indexes the 0 appended at the end.
        sims = np.append(dots * (self.scale[:n] * q_scale), np.float32(0.0))
        in_context = sims[:n] + self.w * (sims[self.prev[:n]] + sims[self.next[:n]])
        in_context /= self.norm[:n]
        mask, live, live_sessions, outside = self._scope(allowed, since, until)
        # From the int8 scores (within INT8_ERROR of the float ones): over every row of the scope,
        # ~4 passes over the scope's rows besides the product's one.
        evidence: dict[str, float] = {}
        # On the scale the blend's cosines are on (``baseline`` below).
        stretch = 1.0 / (1.0 - baseline) if baseline else 1.0
        scores = in_context[live]
        mean, std = (float(scores.mean()), float(scores.std())) if len(live) else (0.0, 0.0)
        background = ((mean - baseline) * stretch, std * stretch) if len(live) else (0.0, 0.0)
        if with_evidence:
            found, extra = session_evidence(scores, live_sessions, background=(mean, std))
            evidence = {self.sessions[i]: e * stretch for i, e in zip(found.tolist(), extra.tolist(), strict=True)}
        in_context[outside] = -np.inf
        wanted = _rows_of(self.mids[:n], candidates or ())
        wanted = wanted[mask[wanted]]
        k = min(len(live), limit * CANDIDATE_FACTOR)
        pool = np.zeros(0, dtype=np.int64)
        if k > 0:
            wide = min(len(live), k * RESCORE_FACTOR)
            pool = np.argpartition(-in_context, wide - 1)[:wide]
            near = in_context[pool]
            kth = -np.partition(-near, k - 1)[k - 1]
            pool = pool[near >= max(kth, self._message_bar(pool, near, limit)) - 2 * INT8_ERROR]
        exact, digests = self._rescore(store, np.union1d(pool, wanted), q)
        if baseline:
            # A model whose cosines crowd near 1 is put on the scale the floors below and
            # the hybrid blend were set for (the choosing pass above needs no mapping: it
            # keeps the order).
            exact = {r: (s - baseline) / (1.0 - baseline) for r, s in exact.items()}
        similarity: dict[int, float] = {}
        for r in wanted.tolist():
            if r in exact:
                mid = int(self.mids[r])
                similarity[mid] = max(similarity.get(mid, -1.0), exact[r])
        # Ties (the same text said again) go to the newer message, as in the keyword engine: the pool's
        # own order is a partial sort's, which moves as the matrix grows.
        top = sorted((r for r in pool.tolist() if r in exact), key=lambda r: (-exact[r], -int(self.mids[r])))[:k]
        best: dict[int, SemanticHit] = {}
        for r in top:
            mid = int(self.mids[r])
            if mid not in best:
                best[mid] = SemanticHit(mid, self.sessions[self.sidx[r]], exact[r], float(self.ts[r]), digests[r])
        hits = list(best.values())[:limit]
        # A weak model still ranks *something* first: unrelated messages
        # (cosine ~0.05) must not pose as results when nothing is close.
        if hits:
            floor = max(MIN_SIMILARITY, RELATIVE_SIMILARITY * hits[0].score)
            hits = [h for h in hits if h.score >= floor]
        for hit in hits:
            similarity.setdefault(hit.message_id, hit.score)
        return hits, similarity, evidence, background

    def likeness(self, message_ids: list[int]):
        """The cosine of each pair of ``message_ids`` (a square array in that order): of their
        nearest chunks, from the int8 rows, each chunk alone (no neighbours). A message with no
        row here is like nothing (0)."""
        import numpy as np

        n = self.n
        out = np.zeros((len(message_ids), len(message_ids)), dtype=np.float64)
        rows = _rows_of(self.mids[:n], message_ids)
        rows = rows[self.alive[rows]]
        if len(rows) == 0:
            return out
        floats = self.vecs[rows].astype(np.float64)
        norms = np.linalg.norm(floats, axis=1)
        norms[norms == 0] = 1.0
        floats /= norms[:, None]
        with blas.one_thread():  # as many rows as this wake OpenBLAS's other thread, to spin (``blas``)
            cos = floats @ floats.T
        at = {m: i for i, m in enumerate(message_ids)}
        which = np.array([at[int(m)] for m in self.mids[rows]], dtype=np.int64)
        # The best chunk pair of each message pair.
        np.maximum.at(out, (np.repeat(which, len(rows)), np.tile(which, len(rows))), cos.ravel())
        return out

    def _scope(self, allowed: Iterable[str], since: float | None, until: float | None):
        """The rows a search of ``allowed`` sessions in that time range looks at: (their mask, their
        indices, their session indices, the indices of the other rows). The same for every search
        of a conversation until its rows change, so those of the last ``SCOPES_KEPT`` scopes are
        kept."""
        import numpy as np

        key = (frozenset(allowed), since, until)
        found = self._scopes.pop(key, None)
        if found is None or found[0] != self.changes:
            n = self.n
            ok_session = np.zeros(len(self.sessions) + 1, dtype=bool)
            for sid in key[0]:
                idx = self.session_index.get(sid)
                if idx is not None:
                    ok_session[idx] = True
            mask = self.alive[:n] & ok_session[self.sidx[:n]]
            if since is not None:
                mask &= self.ts[:n] >= since
            if until is not None:
                mask &= self.ts[:n] < until
            live = np.flatnonzero(mask)
            found = (self.changes, mask, live, self.sidx[live], np.flatnonzero(~mask))
        self._scopes[key] = found  # the last asked last
        while len(self._scopes) > SCOPES_KEPT:
            del self._scopes[next(iter(self._scopes))]
        return found[1:]

    def _dots(self, q8):
        """Each row's integer dot product with ``q8`` (int32), as einsum over the int8 rows gives it.

        In float32 through BLAS, a block of rows at a time: faster than numpy's int8 einsum, and
        the same numbers. Every
        product and every partial sum is an integer of at most ``dim`` * 127 * 127 (``_quantise``
        never yields -128), exact in float32's 24 bits up to 1040 dimensions, whatever order
        BLAS adds them in. Wider vectors take einsum."""
        import numpy as np

        n = self.n
        if self.dim * 127 * 127 >= 2**24:
            return np.einsum("ij,j->i", self.vecs[:n], q8, dtype=np.int32)
        qf = q8.astype(np.float32)
        out = np.empty(n, dtype=np.float32)
        step = max(1, DOT_VALUES // self.dim)
        block = np.empty((min(n, step), self.dim), dtype=np.float32)
        for at in range(0, n, step):
            rows = block[: min(step, n - at)]
            rows[...] = self.vecs[at: at + len(rows)]
            np.matmul(rows, qf, out=out[at: at + len(rows)])
        return out.astype(np.int32)

    def _message_bar(self, rows, scores, limit: int) -> float:
        """The int8 score of the ``limit``-th best message among ``rows`` (its best row's), or
        -inf when they hold fewer messages.

        Rescoring only the rows within 2 * INT8_ERROR of it finds the same hits: each of
        the ``limit`` messages at or above it has a row whose float score is at least
        ``bar - INT8_ERROR``, and a row further below scores less than that in float. So
        it is neither the best row of a message among the ``limit`` best nor ahead of
        their best rows, wherever the best ``k`` rows are cut; and every row that scores
        at least ``bar - INT8_ERROR`` in float is within the bar in int8, so kept. A
        message of several chunks counts once, by its best row, as the hits do."""
        import numpy as np

        order = np.argsort(-scores, kind="stable")
        _, first = np.unique(self.mids[rows[order]], return_index=True)
        if len(first) < limit:
            return float("-inf")
        return float(scores[order][np.sort(first)[limit - 1]])

    def _rescore(self, store: vectors.VectorStore, rows, q) -> tuple[dict[int, float], dict[int, str]]:
        """Each row's score in context from its and its neighbours' stored float vectors, and
        the content hash stored with its vector (a search checks its hits' messages against it).

        A row whose vector left the store since the last sync (the indexer
        replaced its message) is left out; a neighbour's, left out of the sum.
        All rows at once: a search rescores ~200 rows with their neighbours, and
        decoding and summing them one by one in Python took longer than the
        whole int8 pass over a 15k-chunk project."""
        import numpy as np

        if len(rows) == 0:
            return {}, {}
        rows = np.asarray(rows, dtype=np.int64)
        prev, nxt = self.prev[rows], self.next[rows]
        needed = np.unique(np.concatenate([rows, prev[prev >= 0], nxt[nxt >= 0]]))
        wanted = self.rowids[needed].tolist()
        stored = store.vectors(wanted)
        found = [i for i, rowid in enumerate(wanted) if rowid in stored]
        # The found vectors, then a zero row: what a missing neighbour (-1) or a
        # vector no longer stored adds to the sum. ``slot`` maps each needed row to its row here.
        floats = np.zeros((len(found) + 1, self.dim), dtype=np.float32)
        # numpy's own conversion: a 65536-entry lookup table was faster only while the table
        # stayed in the CPU's caches, which the rest of a search evicts.
        floats[:-1] = np.frombuffer(b"".join(stored[wanted[i]][0] for i in found),
                                    dtype=np.float16).reshape(len(found), self.dim)
        slot = np.full(len(needed) + 1, len(found), dtype=np.int64)
        slot[found] = np.arange(len(found))

        def at(r):
            return slot[np.where(r >= 0, np.searchsorted(needed, r), len(needed))]

        own = at(rows)
        # own + w * (prev + next), summed in place: the same float32 operations without two
        # temporaries of every row's vector.
        acc = floats[at(prev)]
        acc += floats[at(nxt)]
        acc *= self.w
        acc += floats[own]
        # In float64, then rounded to float32: a float32 matrix-vector product sums a row in an
        # order that depends on where the row sits in the batch (BLAS kernels take rows in
        # blocks and the rest apart; seen on an Intel Xeon's OpenBLAS), so one message's score
        # differed in its last bits between searches that rescored different rows with it, and
        # could break a tie one way here and the other way there.
        exact = acc.astype(np.float64)
        norms = np.sqrt(np.einsum("ij,ij->i", exact, exact))
        norms[norms == 0] = 1.0
        scores = ((exact @ np.asarray(q, dtype=np.float64)) / norms).astype(np.float32)
        kept = [(r, x) for r, x, at_slot in zip(rows.tolist(), scores.tolist(), own.tolist(), strict=True)
                if at_slot < len(found)]
        rowids = self.rowids
        return {r: float(x) for r, x in kept}, {r: stored[int(rowids[r])][1] for r, _ in kept}
