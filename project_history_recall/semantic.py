"""Semantic search in one scope: status, top-up, then exact similarity in memory.

The scope's vectors are read from embeddings.db once and kept in RAM as one
float32 matrix per project (``ScopeMatrix``), topped up from the store when
the indexer adds or removes vectors. A query is one matrix-vector product
over exactly the scope's rows (never a global top-K filtered afterwards).

Each chunk is scored in its conversational context: the similarity of the
chunk plus its neighbours in the same session (the chunk before and after),
divided by the norm of the three vectors' sum, which is exactly the cosine
with the sum of the three vectors. Short chat turns ("Yes, last week!") mean
little alone; on LoCoMo this lifts semantic session hit@1 from 0.33 to 0.42
at no extra embedding cost, since it is computed from the stored vectors.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path

from . import consent, derived, embedders, indexer, paths, remote_embedder, vectors
from .scope import Scope

MAX_MATRICES = 2  # projects whose vectors stay in memory (LRU)
NORM_SLICE = 2048
MIN_SIMILARITY = 0.15  # semantic hits below this are dropped…
RELATIVE_SIMILARITY = 0.6  # …and so are those far below the best one
CANDIDATE_FACTOR = 4


@dataclass
class SemanticHit:
    message_id: int
    session_id: str
    score: float
    timestamp: float


@dataclass
class Outcome:
    status: str  # disabled | consent_required | indexing | partial | ready | unavailable
    reason: str = ""
    hits: list[SemanticHit] = field(default_factory=list)
    index: dict | None = None  # {"sessions", "sessions_indexed", "sessions_pending"}
    embedder: object = None
    store: object = None
    hashes: dict[int, str] = field(default_factory=dict)  # content hash of each hit's embedded text
    similarity: dict[int, float] = field(default_factory=dict)  # of the hits and the asked-for candidates
    consent: dict | None = None  # consent_required: what would be sent, and how to agree (consent.py)

    @property
    def usable(self) -> bool:
        return self.status in ("ready", "partial")


class ScopeMatrix:
    """One project's vectors in RAM, with per-row session, message and time."""

    def __init__(self, dim: int):
        import numpy as np

        self.dim = dim
        self.n = 0
        self.vecs = np.zeros((0, dim), dtype=np.float32)
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

    # -- growing and shrinking -------------------------------------------------------
    def _reserve(self, extra: int) -> None:
        import numpy as np

        need = self.n + extra
        cap = len(self.mids)
        if need <= cap:
            return
        new_cap = max(need, int(cap * 1.25) + 1024)
        vecs = np.empty((new_cap, self.dim), dtype=np.float32)
        vecs[: self.n] = self.vecs[: self.n]
        self.vecs = vecs
        for name, dtype, fill in (("mids", np.int64, 0), ("sidx", np.int32, 0), ("ts", np.float64, 0.0),
                                  ("alive", bool, False), ("prev", np.int64, -1), ("next", np.int64, -1),
                                  ("norm", np.float32, 1.0)):
            arr = np.full(new_cap, fill, dtype=dtype)
            arr[: self.n] = getattr(self, name)[: self.n]
            setattr(self, name, arr)

    def _kill(self, sid: str) -> None:
        for r in self.rows.pop(sid, []):
            self.alive[r] = False
        self.loaded.pop(sid, None)

    def _compact(self) -> None:
        import numpy as np

        keep = np.flatnonzero(self.alive[: self.n])
        remap = np.full(self.n + 1, -1, dtype=np.int64)
        remap[keep] = np.arange(len(keep))
        for name in ("vecs", "mids", "sidx", "ts", "alive", "prev", "next", "norm"):
            arr = getattr(self, name)
            setattr(self, name, arr[keep].copy())
        # Neighbour links point at rows of the same session, which are alive together.
        self.prev = np.where(self.prev >= 0, remap[self.prev], -1)
        self.next = np.where(self.next >= 0, remap[self.next], -1)
        self.n = len(keep)
        self.rows = {sid: [int(remap[r]) for r in rows] for sid, rows in self.rows.items()}

    def _append(self, batch: list, after: dict[str, int]) -> None:
        """Rows ``(rowid, session_id, message_id, timestamp, f16 bytes)`` in session order."""
        import numpy as np

        batch = [r for r in batch if r[0] > after.get(r[1], 0)]
        if not batch:
            return
        self._reserve(len(batch))
        start = self.n
        end = start + len(batch)
        blob = b"".join(r[4] for r in batch)
        self.vecs[start:end] = np.frombuffer(blob, dtype=np.float16).reshape(len(batch), self.dim)
        self.mids[start:end] = [r[2] for r in batch]
        self.ts[start:end] = [r[3] or 0.0 for r in batch]
        self.alive[start:end] = True
        touched = []
        for i, r in enumerate(batch):
            sid = r[1]
            idx = self.session_index.get(sid)
            if idx is None:
                idx = self.session_index[sid] = len(self.sessions)
                self.sessions.append(sid)
            row = start + i
            self.sidx[row] = idx
            rows = self.rows.setdefault(sid, [])
            self.prev[row] = rows[-1] if rows else -1
            self.next[row] = -1
            if rows:
                self.next[rows[-1]] = row
                touched.append(rows[-1])
            rows.append(row)
        self.n = end
        self._norms(np.concatenate([np.arange(start, end), np.asarray(touched, dtype=np.int64)]))

    def _norms(self, idx) -> None:
        """Norm of each row's vector plus its neighbours', in slices so the
        temporaries stay a few MB however many rows arrive."""
        import numpy as np

        for at in range(0, len(idx), NORM_SLICE):
            part = idx[at: at + NORM_SLICE]
            acc = self.vecs[part].copy()
            p, q = self.prev[part], self.next[part]
            has_p, has_q = p >= 0, q >= 0
            acc[has_p] += self.vecs[p[has_p]]
            acc[has_q] += self.vecs[q[has_q]]
            norms = np.linalg.norm(acc, axis=1)
            norms[norms == 0] = 1.0
            self.norm[part] = norms

    # -- keeping in step with the store -----------------------------------------------
    def sync(self, store: vectors.VectorStore, fp: str, members: list[str],
             states: dict[str, vectors.SessionState]) -> None:
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
        if full:
            self._reserve(sum(states[s].chunks for s in full))
            for page in store.rows(fp, full):
                self._append(page, {})
        for sid in appends:
            for page in store.rows(fp, [sid], after_rowid=self.loaded[sid][1]):
                self._append(page, {sid: self.loaded[sid][1]})
        for sid in full + appends:
            self.loaded[sid] = (states[sid].generation, states[sid].last_rowid)
        dead = self.n - int(self.alive[: self.n].sum())
        if dead > 1000 and dead > self.n // 4:
            self._compact()

    # -- searching ----------------------------------------------------------------------
    def search(self, q, allowed: set[str], since: float | None, until: float | None,
               limit: int, candidates: set[int] | None = None) -> tuple[list[SemanticHit], dict[int, float]]:
        """(the ``limit`` best messages, the similarity of each message in ``candidates``).

        A message's similarity is its best chunk's, each chunk scored with its
        neighbours; only rows of ``allowed`` sessions in the time range count."""
        import numpy as np

        n = self.n
        if n == 0:
            return [], {}
        sims = self.vecs[:n] @ q
        ctx = sims.copy()
        p, nx = self.prev[:n], self.next[:n]
        has_p, has_n = p >= 0, nx >= 0
        ctx[has_p] += sims[p[has_p]]
        ctx[has_n] += sims[nx[has_n]]
        ctx /= self.norm[:n]
        ok_session = np.zeros(len(self.sessions) + 1, dtype=bool)
        for sid in allowed:
            idx = self.session_index.get(sid)
            if idx is not None:
                ok_session[idx] = True
        mask = self.alive[:n] & ok_session[self.sidx[:n]]
        if since is not None:
            mask &= self.ts[:n] >= since
        if until is not None:
            mask &= self.ts[:n] < until
        ctx[~mask] = -np.inf
        similarity: dict[int, float] = {}
        if candidates:
            rows = np.flatnonzero(mask & np.isin(self.mids[:n], np.fromiter(candidates, dtype=np.int64)))
            for r in rows:
                mid = int(self.mids[r])
                similarity[mid] = max(similarity.get(mid, -1.0), float(ctx[r]))
        k = min(int(mask.sum()), limit * CANDIDATE_FACTOR)
        if k <= 0:
            return [], similarity
        top = np.argpartition(-ctx, k - 1)[:k]
        top = top[np.argsort(-ctx[top], kind="stable")]
        best: dict[int, SemanticHit] = {}
        for r in top:
            mid = int(self.mids[r])
            if mid not in best:
                best[mid] = SemanticHit(mid, self.sessions[self.sidx[r]], float(ctx[r]), float(self.ts[r]))
        hits = list(best.values())[:limit]
        # A weak model still ranks *something* first: unrelated messages
        # (cosine ~0.05) must not pose as results when nothing is close.
        if hits:
            floor = max(MIN_SIMILARITY, RELATIVE_SIMILARITY * hits[0].score)
            hits = [h for h in hits if h.score >= floor]
        for hit in hits:
            similarity.setdefault(hit.message_id, hit.score)
        return hits, similarity


_matrices: "OrderedDict[tuple, ScopeMatrix]" = OrderedDict()
_matrices_lock = threading.Lock()


def matrix_for(store: vectors.VectorStore, fp: str, key: tuple, dim: int) -> ScopeMatrix:
    mkey = (str(store.path), id(store), fp, key)
    with _matrices_lock:
        m = _matrices.get(mkey)
        if m is None:
            m = _matrices[mkey] = ScopeMatrix(dim)
        _matrices.move_to_end(mkey)
        while len(_matrices) > MAX_MATRICES:
            _matrices.popitem(last=False)
        return m


def prepare(home: Path, settings, wait: float | None = None) -> Outcome:
    """Embedder and store, or the status that explains why semantic search cannot run.

    ``wait``: how long to wait for the model to load (None: as long as it takes)."""
    if not settings["semantic"]:
        return Outcome("disabled", "semantic search is turned off in the settings ('semantic: false')")
    try:
        embedder = embedders.load(settings, wait)
    except embedders.EmbedderUnavailable as exc:
        return Outcome("unavailable", str(exc))
    if embedder is None:
        return Outcome("indexing", "the embedded model is still loading (once per process); "
                                   "semantic results follow on the next search")
    try:
        store = vectors.open_store(paths.data_dir(home))
    except derived.StoreError as exc:
        return Outcome("unavailable", f"the vector index cannot be used: {exc}")
    return Outcome("ready", embedder=embedder, store=store)


def run(home: Path, settings, conn, scope: Scope, query: str, since: float | None, until: float | None,
        limit: int, *, wait: bool = True, candidates: set[int] | None = None) -> Outcome:
    """Top up the scope's index (waiting at most the budget) and search what is indexed.

    ``wait=False`` (keyword mode): only start the top-up in the background and
    report the status; nothing is embedded in this call."""
    import time

    deadline = time.monotonic() + (settings["index_budget_ms"] / 1000.0 if wait else 0.0)
    out = prepare(home, settings, wait=max(0.0, deadline - time.monotonic()))
    if out.status != "ready":
        return out
    embedder, store = out.embedder, out.store
    key = scope.attribution.key
    members = scope.members
    try:
        consent.check(home, embedder, key)
        if embedder.dimension is None:
            # A remote model's size is learned from its first answer, before anything is
            # looked up by fingerprint; the query's vector is kept for the search below.
            if not wait:
                return Outcome("indexing", "the embedding service has not been asked yet in this process; "
                                           "the semantic index is updated from the next hybrid or semantic search")
            embedder.embed_query(query)
        worker = indexer.get(home, settings, embedder, store)
        summary = worker.top_up(conn, key, members, max(0.0, deadline - time.monotonic()))
    except consent.ConsentRequired as exc:
        return Outcome("consent_required", str(exc), consent=consent.request(
            home, conn, embedder, scope.attribution.as_json(), members, settings["chunk_chars"],
            scope.conversation))
    except embedders.EmbedderUnavailable as exc:  # a remote service failed; keyword search goes on
        return Outcome("unavailable", str(exc))
    if worker.error:
        return Outcome("unavailable", worker.error)
    out.index = {"sessions": len(members), "sessions_indexed": summary["indexed"],
                 "sessions_pending": summary["pending"]}
    if summary["pending"] and not summary["indexed"]:
        out.status = "indexing"
        out.reason = (f"building the semantic index for this project ({summary['pending']} sessions to go); "
                      "it continues in the background")
        return out
    if summary["pending"]:
        out.status = "partial"
        out.reason = (f"{summary['pending']} of {len(members)} sessions are still being indexed in the "
                      "background; semantic results come from the indexed part")
    if not wait or limit <= 0:
        return out
    states = store.states(embedder.fingerprint, members)
    matrix = matrix_for(store, embedder.fingerprint, key, embedder.dimension)
    try:
        q = embedder.embed_query(query)
    except embedders.EmbedderUnavailable as exc:
        return Outcome("unavailable", str(exc), index=out.index)
    with matrix.lock:
        matrix.sync(store, embedder.fingerprint, members, states)
        out.hits, out.similarity = matrix.search(q, set(scope.session_ids), since, until, limit, candidates)
    out.hashes = store.hashes_of(embedder.fingerprint, [(h.session_id, h.message_id) for h in out.hits])
    if store.rebuilt_reason:
        out.reason = (out.reason + "; " if out.reason else "") + store.rebuilt_reason
    return out


def report(home: Path, settings, conn, scope: Scope) -> Outcome:
    """The scope's semantic status without indexing or searching (``status`` command)."""
    out = prepare(home, settings, wait=None)
    if out.status != "ready":
        return out
    members = scope.members
    if scope.attribution.kind != "home":
        try:
            consent.check(home, out.embedder, scope.attribution.key)
        except consent.ConsentRequired as exc:  # what would be sent, without the agent's token
            return Outcome("consent_required", str(exc), consent=consent.describe(
                conn, out.embedder, scope.attribution.as_json(), members, settings["chunk_chars"]))
    # A remote model not asked yet in this process: its vectors from earlier runs, if any.
    fp = out.embedder.fingerprint or remote_embedder.stored_fingerprint(out.embedder, out.store)
    states = out.store.states(fp, members)
    pending = len(indexer.plan(conn, states, members))
    indexed = sum(1 for st in states.values() if st.chunks > 0)
    out.index = {"sessions": len(members), "sessions_indexed": indexed, "sessions_pending": pending}
    if pending:
        out.status = "partial" if indexed else "indexing"
        out.reason = (f"{pending} of {len(members)} sessions are not indexed yet; the next search indexes them "
                      "in the background, or run the 'index' command")
    return out
