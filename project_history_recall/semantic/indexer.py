"""Keeping embeddings.db in step with state.db, without ever writing to state.db.

Before each search, ``Indexer.top_up`` finds the scope's changed sessions
(``changes``): new messages are embedded; a session that lost messages is
reconciled by content hash, dropping the vectors of messages that are gone
and re-embedding changed ones.

Work goes to one background thread per store and model; a search waits for
it at most ``index_budget_ms`` and then uses what is there. Every batch is
committed with its progress, so a killed run resumes where it stopped.

A message's text edited in place, the row count unchanged (Hermes 0.22 when a
turn's prologue rewrites the user row it wrote on submit, an @-file expanded;
the transcript repair filling a blank assistant row), is found by its content
hash among the rows Hermes may still rewrite (``changes.edit_windows``), and
its session reconciled. Elsewhere (an importer) it is caught when such a
message comes up as a semantic hit (its hash no longer matches, so the hit is
dropped and the session reconciled) and by ``index`` on the command line,
which always reconciles by hash.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Mapping

from ..background import Step, Worker
from ..files import derived
from ..hermes import changes, messages, paths
from ..hermes.readonly import StateDBError
from ..hermes.statedb import Shape, reading
from ..scope.resolve import project_now
from . import chunking, consent
from . import store as vectors
from .embedders.base import EmbedderUnavailable, known_fingerprint

if TYPE_CHECKING:
    from ..settings import Settings
    from .embedders.base import Embedder

logger = logging.getLogger(__name__)

GC_INTERVAL = 600.0  # seconds between sweeps for vectors of sessions Hermes deleted
# Rows read before an appended message for every earlier message its context takes (``process``).
EARLIER_READ = 4


@dataclass
class Work:
    session_id: str
    kind: str  # "append" | "reconcile"
    after_id: int  # append: rows after this id
    seen: tuple[int, int]  # state.db (count(*), max(id)) when planned
    project: tuple = ()  # the scope it was planned for (the consent gate asks per project)


class LeftProject(Exception):
    """The session is no longer in the project its work was planned for (Hermes moved it since):
    a remote embedder must not be sent its text under that project's consent."""


@dataclass
class Progress:
    """What one indexing pass did (the CLI prints it)."""

    sessions: int = 0  # sessions whose vectors changed (embedded, removed or replaced)
    messages: int = 0
    chunks: int = 0
    batches: int = 0  # embedding calls made
    removed: int = 0
    changed: int = 0
    sessions_removed: int = 0  # deleted from Hermes, so their vectors were dropped
    embed_seconds: float = 0.0
    seconds: float = 0.0


def plan(conn: sqlite3.Connection, states: dict[str, vectors.VectorState], members: list[str],
         counts: Mapping[str, changes.Counted] | None = None) -> dict[str, Work]:
    """What must happen for ``members`` to be fully indexed (``counts``: their ``session_counts``,
    if read already). Reads state.db only.

    (A session with only new tool rows is an append that embeds nothing; its
    counts are remembered.)"""
    return {sid: Work(sid, "append" if c.kind == "append" else "reconcile", c.after_id, c.seen)
            for sid, c in changes.changes(conn, states, members, counts).items()}


def in_context(earlier: list[str], rows: list[tuple[int, str, float | None]], size: int,
               count: int) -> dict[int, str]:
    """What each message of ``rows`` (``(id, prepared text, timestamp)`` of one session, in order)
    is embedded as: ``chunking.after_earlier`` of the ``count`` messages with text before it,
    ``earlier`` (prepared texts) those before the first row."""
    said = [text for text in earlier if text]
    out = {}
    for mid, text, _ts in rows:
        out[mid] = chunking.after_earlier(said, text, size, count)
        if text:
            said.append(text)
    return out


def pending_chunks(conn: sqlite3.Connection, work: dict[str, Work], chunk_chars: int, chunk_overlap: int) -> int:
    """About how many chunks ``work`` will embed, from the messages' lengths alone (no
    text is read): a reconcile counts as embedding the whole session again, at most."""
    step = max(1, chunk_chars - chunking.kept_overlap(chunk_chars, chunk_overlap))
    return sum(messages.pieces(conn, item.session_id, 0 if item.kind == "reconcile" else item.after_id,
                               item.seen[1], chunk_chars, step) for item in work.values())


def estimate(chunks: int, embedder: Embedder, measured: float | None = None) -> dict:
    """``{"chunks_pending", "chunks_per_second", "estimated_seconds"}`` for ``chunks`` still to
    embed, at the rate this process measured, else the model's reference rate (None for a
    remote model: its speed is the service's)."""
    rate = measured or embedder.reference_chunks_per_second
    return {"chunks_pending": chunks, "chunks_per_second": round(rate, 1) if rate else None,
            "estimated_seconds": round(chunks / rate) if rate else None}


def first_text(conn: sqlite3.Connection, shape: Shape, members: list[str], chunk_chars: int,
               chunk_overlap: int) -> str | None:
    """The first piece of the scope that indexing will embed anyway: what the
    ``index`` command asks a remote model first, to learn its dimension."""
    for text in messages.first_texts(conn, shape, members):
        for _offset, piece in chunking.split(chunking.prepare(text), chunk_chars, chunk_overlap):
            return piece
    return None


class Indexer(Worker[Work, vectors.VectorState]):
    """The background indexer of one embeddings.db for one model."""

    thread_name = "phr-indexer"

    def __init__(self, home: Path, settings: Settings, embedder: Embedder, store: vectors.VectorStore):
        super().__init__(home, store)
        self.settings = settings
        self.embedder = embedder
        self.store = store
        self.fp = known_fingerprint(embedder)
        self.chunks_per_second: float | None = None
        self._swept_at = float("-inf")
        self._big = changes.BigRows()  # the big rows ``_edited`` found as embedded

    def sweep(self) -> int:
        """Drop the vectors of sessions that no longer exist in state.db; returns how many sessions.

        Searches never see them anyway (a scope only holds existing sessions);
        this only gives the space back."""
        self._swept_at = time.monotonic()
        known = self.store.session_ids()
        if not known:
            return 0
        with reading(paths.state_db_path(self.home)) as (conn, _shape):
            existing = messages.session_ids(conn)
        gone = sorted(known - existing)
        if gone:
            self.store.drop_sessions(gone)
        return len(gone)

    # -- the search side ---------------------------------------------------------
    def top_up(self, conn: sqlite3.Connection, shape: Shape, key: tuple, members: list[str], budget_s: float,
               counts: changes.Once | None = None) -> dict:
        """Bring ``members`` up to date, waiting at most ``budget_s``; ``conn`` and ``shape``
        are the caller's read-only state.db connection and what it offers, ``counts`` the search's, if any.

        Returns ``{"pending": sessions still to do, "indexed": sessions with
        vectors, "states": each member's row in embeddings.db, "locked": whether another process
        holds embeddings.db's write lock, holding the work left off}``.
        """
        deadline = time.monotonic() + budget_s
        stamp, known = self._recall(key, members)
        if known is not None:
            return self._summary(0, known)
        consent.check(self.home, self.embedder, key)
        states = self.store.states(self.fp, members)
        work = plan(conn, states, members, self._counted(counts, members, stamp))
        work.update(self._queued(key, states, work))
        work.update(self._edited(conn, shape, key, states, members, work, deadline))
        for item in work.values():
            item.project = key
        pending = self._submit(key, work, wait=deadline - time.monotonic())
        if pending:
            return self._summary(pending, self.store.states(self.fp, members), self.store.held_elsewhere())
        if work:
            stamp = self._restamp(stamp)
            states = self.store.states(self.fp, members)
        return self._summary(0, self._remember(key, stamp, states))

    def _edited(self, conn: sqlite3.Connection, shape: Shape, key: tuple, states: dict[str, vectors.VectorState],
                members: list[str], work: dict[str, Work], deadline: float) -> dict[str, Work]:
        """A reconcile of each session holding a message Hermes rewrote in place since it was
        embedded, among those it may still rewrite (``changes.edit_windows``): a blank row filled
        has no vector yet, a text emptied still has one. Each is marked in embeddings.db by
        ``deadline`` (the search's budget) or left to its reconcile (``_mark``)."""
        out = {}
        for sid, after in changes.edit_windows(conn, states, members, work).items():
            st = states[sid]
            skip = set(self._big.unchanged(conn, sid, after, st.indexed_max_id))
            read = messages.conversation_texts(conn, shape, sid, after, st.indexed_max_id, skip)
            now = {mid: chunking.content_hash(text) for mid, text in (
                (mid, chunking.prepare(raw)) for mid, raw, _ts in read) if text}
            held = self.store.hashes(self.fp, sid, after, st.indexed_max_id)
            if now != {mid: value for mid, value in held.items() if mid not in skip}:
                self._mark(sid, deadline)
                out[sid] = self._replan(key, st, work)
            else:
                self._big.found(conn, sid, [(mid, False) for mid, raw, _ts in read if changes.is_big(raw)])
        return out

    def _mark(self, sid: str, deadline: float) -> bool:
        """Mark ``sid`` in embeddings.db to be reconciled, so that a later search does it if the work
        queued now is lost with the process; False when another process held the file's write lock
        until ``deadline``. A search waited for it SQLite's whole timeout (10 s) whatever its budget;
        now the reconcile, queued all the same, marks the session with its first write, and until
        it is done every hit on the message is checked against what was embedded (``search._checked``)."""
        return derived.unless_locked(
            lambda: self.store.mark_dirty(self.fp, sid, wait=max(0.0, deadline - time.monotonic())),
            f"mark {sid} for re-embedding")

    def _held(self, session_ids: list[str]) -> dict[str, vectors.VectorState]:
        return self.store.states(self.fp, session_ids)

    def _unmarked(self, session_ids: list[str], deadline: float) -> list[str]:
        # A transaction each (``VectorStore.mark_dirty``).
        return [sid for sid in session_ids if not self._mark(sid, deadline)]

    def _redo(self, key: tuple, state: vectors.VectorState, seen: tuple[int, int]) -> Work:
        return Work(state.session_id, "reconcile", 0, seen, key)

    def _due(self, item: Work, state: vectors.VectorState) -> bool:
        # A reconcile checks its session whole by content hash: one done since only finds nothing left to do.
        return item.kind == "reconcile"

    @staticmethod
    def _summary(pending: int, states: dict[str, vectors.VectorState], locked: bool = False) -> dict:
        return {"pending": pending, "indexed": sum(1 for st in states.values() if st.chunks > 0), "states": states,
                "locked": locked}

    def index_now(self, key: tuple, members: list[str], on_progress=None, progress: Progress | None = None) -> Progress:
        """Index ``members`` in this thread (the CLI's ``index``): every session is
        brought up to date, and every indexed session is re-checked by content hash.
        ``progress``: counted into as the work goes, so a caller that meets an exception
        (a consent withdrawn before a batch) knows what was sent before it."""
        progress = progress or Progress()
        started = time.perf_counter()
        states = self.store.states(self.fp, members)
        with reading(paths.state_db_path(self.home)) as (conn, _shape):
            counts = changes.session_counts(conn, members)
            work = plan(conn, states, members, counts)
        for sid in members:
            if sid in states and sid not in work:
                work[sid] = Work(sid, "reconcile", 0, counts[sid].seen)
        total = len(work)
        for n, sid in enumerate(sorted(work, reverse=True), 1):
            work[sid].project = key
            try:
                self.process(work[sid], progress,
                             on_batch=(lambda n=n: on_progress(progress, n - 1, total)) if on_progress else None)
            except LeftProject:
                pass  # moved by Hermes while the project was indexed: not this project's to send
            if on_progress:
                on_progress(progress, n, total)
        progress.sessions_removed = self.sweep()
        progress.seconds = time.perf_counter() - started
        return progress

    # -- the worker ----------------------------------------------------------------
    def _idle(self) -> None:
        if time.monotonic() - self._swept_at <= GC_INTERVAL:
            return
        try:
            self.sweep()
        except (StateDBError, derived.StoreError, OSError) as exc:
            logger.warning("sweeping deleted sessions failed: %s", exc)
        except Exception:
            logger.exception("sweeping deleted sessions failed")

    def _step(self, key: tuple, item: Work) -> Step:
        """One session's work. Another process holding embeddings.db's write lock past the wait
        (``derived.LOCK_WAIT``) pauses it, as the keyword index's does: it stays queued and is tried
        again (``Step.PAUSE``) until the lock is free. Stopped, the thread gave up every scope's queue,
        and a reconcile queued because its mark was held off was in neither the counts nor the file.
        Tried again, the item goes on after the last batch committed (``process``); every write is
        INSERT OR REPLACE, so the batch that met the lock is simply written again, but it is embedded
        again too: a remote embedder is sent that batch a second time."""
        try:
            resume_after = self.process(item)
        except consent.ConsentRequired:
            return Step.DROP  # the consent was removed from config.yaml while this scope was queued
        except LeftProject:
            return Step.DONE  # the scope it is in now embeds it, under that scope's consent
        except (StateDBError, EmbedderUnavailable, derived.StoreError) as exc:
            return self._failed(exc)
        if resume_after is not None:
            item.after_id = resume_after  # yielded to another scope; continue later
            return Step.AGAIN
        return Step.DONE

    def process(self, work: Work, progress: Progress | None = None, *, on_batch=None) -> int | None:
        """Do one session's work, batch by batch, each batch committed.

        Returns the last message id done when it yielded to a more recently
        asked scope (background appends only), None when the session is done."""
        state_path = paths.state_db_path(self.home)
        size, overlap = self.settings.chunk_chars, self.settings.chunk_overlap
        batch = self.settings.batch_size
        reconcile = work.kind == "reconcile"
        before = (progress.chunks, progress.removed, progress.changed) if progress else None
        with reading(state_path) as (conn, shape):
            # Rewound rows are embedded (a restore brings them back; searches filter them out);
            # scaffolding Hermes never shows is not: it can never be a result.
            rows = [(mid, chunking.prepare(text), ts) for mid, text, ts in messages.conversation_texts(
                conn, shape, work.session_id, 0 if reconcile else work.after_id, work.seen[1])]
            count = self.embedder.context_before
            # The messages before the first one read, for a short one's context (none is read when
            # no row is short); a few more than asked, as a message with no text (an assistant's
            # tool call) is no context.
            earlier = [chunking.prepare(text) for text in messages.texts_before(
                conn, shape, work.session_id, work.after_id, EARLIER_READ * count)] if (
                count and not reconcile and work.after_id and any(chunking.is_short(t) for _, t, _ in rows)) else []
        embedded = in_context(earlier, rows, size, count)
        if reconcile:
            rows = self._reconcile(work, rows, progress)
        pending: list[tuple[int, int, str, str, float | None]] = []  # (message id, offset, text, hash, ts)
        for mid, text, ts in rows:
            # The hash is of the message's own text, which a search checks its hits against. An
            # earlier message edited in place leaves the context this one was embedded with as it
            # was (it is embedded afresh with its own next change, or by a rebuild).
            digest = chunking.content_hash(text)
            for offset, piece in chunking.split(embedded[mid], size, overlap):
                pending.append((mid, offset, piece, digest, ts))
            if progress:
                progress.messages += 1
            if len(pending) >= batch:
                self._embed_and_store(work, pending, None if reconcile else mid, progress)
                pending = []
                if not reconcile:
                    work.after_id = mid  # committed: a try again after a failure goes on from here
                if on_batch:
                    on_batch()
                if progress is None and not reconcile and self._newer_scope_waiting(work):
                    return mid
        self._embed_and_store(work, pending, work.seen[1], progress, seen=work.seen)
        if progress and (progress.chunks, progress.removed, progress.changed) != before:
            progress.sessions += 1  # updated: a session only checked (``index_now`` checks all) is not
        if on_batch:
            on_batch()
        return None

    def _check_project(self, work: Work) -> None:
        """Raise ``LeftProject`` when a remote embedder would be sent text of a session that is no
        longer in ``work``'s project. The scope the work was planned from can be older than a move
        Hermes made (its desktop's move, ``project_switch``): the catalog takes that in with its
        next full read, and the session's new messages would go out under a consent the user gave
        for the project it left. Its row is read again before each batch is sent."""
        # As the consent gate asks (``consent.check``): an embedder that does not say it is local is remote.
        if getattr(self.embedder, "remote", True) is False:
            return  # nothing leaves the machine: vectors are kept per session, whatever its project
        with reading(paths.state_db_path(self.home)) as (conn, _shape):
            now = project_now(self.home, conn, work.session_id)
        if now != work.project:
            raise LeftProject(work.session_id)

    def _reconcile(self, work: Work, rows, progress: Progress | None):
        """Drop vectors of vanished or changed messages; return the rows that need embedding."""
        stored = self.store.hashes(self.fp, work.session_id)
        current = {mid: chunking.content_hash(text) for mid, text, _ in rows}
        gone = [mid for mid, h in stored.items() if current.get(mid) != h]
        if progress:
            progress.removed += sum(1 for mid in gone if mid not in current)
            progress.changed += sum(1 for mid in gone if mid in current)
        self.store.remove_messages(self.fp, work.session_id, gone, dirty=True)
        keep = {mid for mid, h in stored.items() if current.get(mid) == h}
        return [r for r in rows if r[0] not in keep]

    def _embed_and_store(self, work: Work, pending, upto: int | None, progress: Progress | None,
                         seen: tuple[int, int] | None = None) -> None:
        chunks: list[vectors.ChunkRow] = []
        if pending:
            self._check_project(work)
            consent.check(self.home, self.embedder, work.project)
            t0 = time.perf_counter()
            vecs = self.embedder.embed_documents([p[2] for p in pending])
            took = time.perf_counter() - t0
            rate = len(pending) / took if took > 0 else None
            if rate:
                self.chunks_per_second = rate if self.chunks_per_second is None else (
                    0.8 * self.chunks_per_second + 0.2 * rate)
            if progress:
                progress.embed_seconds += took
                progress.chunks += len(pending)
                progress.batches += 1
            chunks = [vectors.ChunkRow(work.session_id, p[0], p[1], p[3], p[4], v) for p, v in zip(pending, vecs, strict=True)]
        self.store.add(self.fp, work.session_id, chunks, upto, seen)
