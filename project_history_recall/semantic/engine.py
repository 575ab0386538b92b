"""Semantic search in one scope: status, top-up, then exact similarity in memory.

Before a search, the scope's index is brought up to date (``indexer``, at
most ``index_budget_ms``, the rest in the background) behind the consent
gate (``consent``); then the query's vector is compared with every chunk of
the scope kept in memory (``matrix``). Every way this can stop short (no
model, no consent, a failing service, still indexing) is an ``Outcome``
status, never an exception: keyword search goes on.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..files import derived
from ..hermes import paths
from ..hermes.statedb import reading
from ..hits import SEMANTIC, Hit
from ..scope.resolve import Scope, known_scopes
from . import consent, consent_request, embedders, indexer, kept
from .embedders.base import Embedder
from .store import SCHEMA_VERSION, VectorStore, path_for

if TYPE_CHECKING:
    import numpy as np

    from ..context import SearchContext
    from .matrix import ScopeMatrix
    from ..settings import Settings


@dataclass
class Outcome:
    status: str  # disabled | consent_required | indexing | partial | ready | unavailable
    reason: str = ""
    hits: list[Hit] = field(default_factory=list)
    index: dict | None = None  # {"sessions", "sessions_indexed", "sessions_pending"}
    embedder: Embedder | None = None
    store: VectorStore | None = None
    hashes: dict[int, str] = field(default_factory=dict)  # content hash of each hit's embedded text
    similarity: dict[int, float] = field(default_factory=dict)  # of the hits and the asked-for candidates
    evidence: dict[str, float] = field(default_factory=dict)  # a session's beyond its best chunk (matrix)
    background: tuple[float, float] = (0.0, 0.0)  # the question's mean and deviation over the scope (matrix)
    consent: dict | None = None  # consent_required: what would be sent, and how to agree (consent_request)
    # The hits' messages as the search read them from state.db to check them, kept for its response.
    rows: dict = field(default_factory=dict)
    # The scope's vectors, for how alike messages are to each other (``likeness``).
    matrix: ScopeMatrix | None = None
    # unavailable, yet searched: another process holds embeddings.db's write lock, and the sessions
    # indexed before it answer.
    held_off: bool = False

    def likeness(self, message_ids: list[int]) -> "np.ndarray":
        """``ScopeMatrix.likeness`` of these messages; all 0 without the matrix."""
        import numpy as np

        if self.matrix is None:
            return np.zeros((len(message_ids), len(message_ids)))
        with self.matrix.lock:
            return self.matrix.likeness(message_ids)

    @property
    def usable(self) -> bool:
        return self.status in ("ready", "partial") or self.held_off

    def parts(self) -> tuple[Embedder, VectorStore]:
        """The embedder and store of an outcome ``prepare`` made ready (``usable``)."""
        if self.embedder is None or self.store is None:
            raise AssertionError(f"a {self.status!r} semantic outcome has no embedder or store")
        return self.embedder, self.store

    def fields(self) -> dict:
        """What a search response says of the semantic side."""
        out: dict[str, object] = {"semantic_status": self.status, "semantic_reason": self.reason}
        if self.index is not None:
            out["semantic_index"] = self.index
        if self.consent is not None:
            out["consent"] = self.consent
        return out


def prepare(home: Path, settings: Settings, wait: float | None = None) -> Outcome:
    """Embedder and store, or the status that explains why semantic search cannot run.

    ``wait``: how long to wait for the model to load (None: as long as it takes)."""
    embedder = _loaded(settings, wait)
    if isinstance(embedder, Outcome):
        return embedder
    try:
        store = kept.of(home).vector_store()
    except derived.StoreError as exc:
        return Outcome("unavailable", f"the vector index cannot be used: {exc}")
    return Outcome("ready", embedder=embedder, store=store)


def _loaded(settings: Settings, wait: float | None) -> Embedder | Outcome:
    """``prepare``'s embedder alone, or the outcome that explains why it cannot run."""
    if not settings.semantic:
        return Outcome("disabled", "semantic search is turned off in the settings ('semantic: false')")
    try:
        embedder = embedders.load(settings, wait)
    except embedders.EmbedderUnavailable as exc:
        return Outcome("unavailable", str(exc))
    if embedder is None:
        return Outcome("indexing", "the embedded model is still loading (once per process); "
                                   "semantic results follow on the next search")
    return embedder


def learn_size(embedder: Embedder, text: str | None, as_query: bool = False) -> bool:
    """Whether ``embedder``'s vector size is known, asking a remote model once with ``text`` if
    not: its size is learned from its first answer, and its stored vectors are found by a
    fingerprint that includes the size. ``as_query``: ``text`` is the search's own query (its
    vector is kept for the search)."""
    if embedder.dimension is None and text is not None:
        if as_query:
            embedder.embed_query(text)
        else:
            embedder.embed_documents([text])
    return embedder.dimension is not None


def run(ctx: SearchContext, limit: int, *, wait: bool = True, candidates: set[int] | None = None,
        evidence: bool = True) -> Outcome:
    """Top up the scope's index (waiting at most the budget) and search what is indexed:
    the ``limit`` best messages, and the similarity of those in ``candidates``.

    ``wait=False`` (keyword mode): only start the top-up in the background and
    report the status; nothing is embedded in this call. ``evidence``: whether the
    caller uses each session's evidence (the blend does; a pass over the scope's rows)."""
    try:
        out, repaired = derived.after_repair(
            lambda: _run(ctx, limit, wait, candidates, evidence))
    except derived.StoreError as exc:
        return Outcome("unavailable", f"the vector index cannot be used: {exc}")
    out.reason = "; ".join(part for part in (out.reason, repaired) if part)
    return out


def _held_off(pending: int, sessions: int, indexed: int) -> str:
    """Why the semantic side is ``unavailable`` while another process holds embeddings.db's write lock
    with ``pending`` of ``sessions`` still to index: a search's words, and ``status``'s."""
    return (f"the vector index is locked by another process, {pending} of {sessions} sessions not indexed yet; "
            + ("semantic results come from the indexed part meanwhile" if indexed else "no semantic results meanwhile"))


def _run(ctx: SearchContext, limit: int, wait: bool, candidates: set[int] | None, evidence: bool) -> Outcome:
    import time

    home, settings, conn, scope, query = ctx.home, ctx.settings, ctx.conn, ctx.scope, ctx.query.raw
    deadline = time.monotonic() + (settings.index_budget_ms / 1000.0 if wait else 0.0)
    out = prepare(home, settings, wait=max(0.0, deadline - time.monotonic()))
    if out.status != "ready":
        return out
    embedder, store = out.parts()
    key = scope.attribution.key
    members = scope.members
    try:
        consent.check(home, embedder, key)
        if embedder.dimension is None and not wait:
            return Outcome("indexing", "the embedding service has not been asked yet in this process; "
                                       "the semantic index is updated from the next hybrid or semantic search")
        learn_size(embedder, query, as_query=True)
        worker = kept.of(home).indexer(settings, embedder, store)
        summary = worker.top_up(conn, ctx.shape, key, members, max(0.0, deadline - time.monotonic()), ctx.counts)
    except consent.ConsentRequired as exc:
        return Outcome("consent_required", str(exc), consent=consent_request.request(
            home, conn, embedder, scope.attribution.as_json(), members, settings.chunk_chars,
            scope.conversation))
    except embedders.EmbedderUnavailable as exc:  # a remote service failed; keyword search goes on
        return Outcome("unavailable", str(exc))
    if worker.error:
        return Outcome("unavailable", worker.error)
    out.index = {"sessions": len(members), "sessions_indexed": summary["indexed"],
                 "sessions_pending": summary["pending"]}
    pending, indexed = summary["pending"], summary["indexed"]
    if pending and summary["locked"]:
        # Not a build: another process holds the file's write lock, and the work waits for it.
        out.status, out.held_off = "unavailable", bool(indexed)
        out.reason = _held_off(pending, len(members), indexed)
        if not indexed:
            return out
    elif pending and not indexed:
        out.status = "indexing"
        out.reason = (f"building the semantic index for this project ({pending} sessions to go); "
                      "it continues in the background")
        if store.rebuilt_reason:
            out.reason += f" ({store.rebuilt_reason})"
        return out
    elif pending:
        out.status = "partial"
        out.reason = (f"{pending} of {len(members)} sessions are still being indexed in the "
                      "background; semantic results come from the indexed part")
    if not wait or limit <= 0:
        return out
    states = summary["states"]
    fp, dimension = embedder.fingerprint, embedder.dimension
    if fp is None or dimension is None:  # learn_size above asked the model, or raised
        raise AssertionError("the embedder's vector size is still unknown after it answered")
    matrix = kept.of(home).matrix(store, fp, key, dimension, embedder.context_weight)
    try:
        # The question as asked: mixing in its vector without the words that make it one
        # ("when did", "什么时候", "吗") lifted every tune half and no held-out one
        # (docs/benchmarks.md, "The semantic half with USE"). Embedded here, after the keyword
        # search, not in a thread beside it: on 2 cores the two contend rather than overlap and
        # share the GIL, so a thread gained a little only with a core idle and lost under load
        # (docs/benchmarks.md, "Hybrid against keyword at 1M").
        q = embedder.embed_query(query)
    except embedders.EmbedderUnavailable as exc:
        return Outcome("unavailable", str(exc), index=out.index)
    with matrix.lock:
        matrix.sync(store, fp, members, states)
        found, out.similarity, out.evidence, out.background = matrix.search(
            store, q, scope.session_ids, ctx.filters.since, ctx.filters.until, limit, candidates,
            embedder.cosine_baseline, evidence)
    out.hits = [Hit(h.message_id, h.session_id, h.score, SEMANTIC, h.timestamp) for h in found]
    out.matrix = matrix
    out.hashes = {h.message_id: h.content_hash for h in found}
    if store.rebuilt_reason:
        out.reason = (out.reason + "; " if out.reason else "") + store.rebuilt_reason
    _tidy(home, fp, embedder.context_weight, key)
    return out


def _tidy(home: Path, fingerprint: str, context_weight: float, scope_key: tuple) -> None:
    """Delete the saved matrices no search will read (``kept.keep_matrices``): only those of
    this model for the projects there are, ``scope_key``'s among them, are kept."""
    live = known_scopes(home)
    if live is not None:  # the projects unknown here: nothing can be told stale
        kept.of(home).keep_matrices(fingerprint, context_weight, live if scope_key in live else live | {scope_key})


def measured_rate(home: Path, fingerprint: str | None) -> float | None:
    """Chunks a second this process's indexer of that model has been embedding, if it has."""
    return next((w.chunks_per_second for w in kept.of(home).indexers() if w.fp == fingerprint), None)


def warm(home: Path, settings: Settings, scope: Scope) -> None:
    """Ready ahead of the first search of ``scope``: the model loaded, the scope's
    vectors in memory and its index checked (what is new is embedded in the
    background). Whatever stops it, the first search meets and reports.

    Only an offline model (``embedders.OFFLINE``): a remote one has nothing to load,
    and warming up must never send anything anywhere."""
    model = embedders.OFFLINE.get(settings.embedder)
    if not settings.semantic or model is None:
        return
    try:
        embedders.load(settings, wait=0)  # loads in its own thread while the vectors are read here
        fp = model.fingerprint_for(settings.chunk_chars, settings.chunk_overlap)
        store = kept.of(home).vector_store()
    except (embedders.EmbedderUnavailable, derived.StoreError):
        return
    key, members = scope.attribution.key, scope.members
    matrix = kept.of(home).matrix(store, fp, key, model.dimension, model.context_weight)
    with matrix.lock:
        matrix.sync(store, fp, members, store.states(fp, members))
    _tidy(home, fp, model.context_weight, key)
    out = prepare(home, settings, wait=None)
    if not out.usable:
        return
    worker = kept.of(home).indexer(settings, *out.parts())
    with reading(paths.state_db_path(home)) as (conn, shape):
        worker.top_up(conn, shape, key, members, 0.0)


def report(home: Path, settings: Settings, conn: sqlite3.Connection, scope: Scope) -> Outcome:
    """The scope's semantic status without indexing or searching (``status`` command). A home
    never searched has no ``embeddings.db``, and a status read makes none: not built yet."""
    path = path_for(paths.data_dir(home))
    # Another version's file is rebuilt by the next search: opened here, it was deleted by a look.
    other = derived.laid_out_by_another(path, SCHEMA_VERSION) if path.exists() else None
    built = path.exists() and other is None
    store: VectorStore | None = None
    if built:
        out = prepare(home, settings, wait=None)
        if out.status != "ready":
            return out
        embedder, store = out.parts()
    else:
        loaded = _loaded(settings, wait=None)
        if isinstance(loaded, Outcome):
            return loaded
        why = derived.cannot_make(path)  # as the next search meets it
        if why is not None:
            return Outcome("unavailable", f"the vector index cannot be used: {why}")
        embedder = loaded
    members = scope.members
    if scope.attribution.kind != "home":
        try:
            consent.check(home, embedder, scope.attribution.key)
        except consent.ConsentRequired as exc:  # what would be sent, without the agent's token
            return Outcome("consent_required", str(exc), consent=consent_request.describe(
                conn, embedder, scope.attribution.as_json(), members, settings.chunk_chars))
    fp, states = embedder.fingerprint, {}
    if store is not None:  # else not built: every session is still to be indexed
        try:
            # A remote model not asked yet in this process: its vectors from earlier runs, if any
            # (none stored: every session is still to be indexed).
            fp = fp or embedders.stored_fingerprint(embedder, store)
            states = store.states(fp, members) if fp is not None else {}
        except derived.StoreError as exc:
            return Outcome("unavailable", f"the vector index cannot be used: {exc}")
    work = indexer.plan(conn, states, members)
    pending = len(work)
    indexed = sum(1 for st in states.values() if st.chunks > 0)
    index = {"sessions": len(members), "sessions_indexed": indexed, "sessions_pending": pending}
    out = Outcome("ready", index=index, embedder=embedder, store=store)
    if pending:
        # A first index of a big project takes minutes with a slow model: say how many up front.
        index.update(indexer.estimate(indexer.pending_chunks(conn, work, settings.chunk_chars, settings.chunk_overlap),
                                      embedder, measured_rate(home, fp)))
        out.status = "partial" if indexed else "indexing"
        out.reason = (f"{pending} of {len(members)} sessions are not indexed yet; the next search indexes them "
                      "in the background, or run the 'index' command") if built else (
            f"{path.name} {other}" if other else derived.not_built("semantic", "builds it in the background"))
        if store is not None and store.held_elsewhere():  # as a search would meet it, and say
            out.status, out.reason = "unavailable", _held_off(pending, len(members), indexed)
    return out
