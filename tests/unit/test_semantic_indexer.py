"""The semantic indexer's queue against a real state.db (Hermes's own SessionDB) and a
stand-in model: what a search hands it survives the searches after it."""

from __future__ import annotations

import threading

import numpy as np

from hermes_world import write_as_importer
from write_lock import WriteLock
from project_history_recall import settings as config
from project_history_recall.background import Step
from project_history_recall.files import derived
from project_history_recall.hermes.changes import RECENT_ROWS
from project_history_recall.hermes.paths import state_db_path
from project_history_recall.hermes.statedb import reading
from project_history_recall.semantic import chunking
from project_history_recall.semantic import store as vectors
from project_history_recall.semantic.indexer import Indexer


class _Model:
    """A local model of 8 dimensions: a text's vector from its hash."""

    remote = False
    provider, model, dimension, fingerprint = "local", "stand-in", 8, "stand-in-8"
    context_before = 0
    reference_chunks_per_second = None

    def embed_documents(self, texts: list[str]) -> list[np.ndarray]:
        out = []
        for text in texts:
            v = np.random.default_rng(abs(hash(text)) % 2**32).normal(size=8).astype(np.float32)
            out.append(v / np.linalg.norm(v))
        return out


def test_a_reconcile_the_lock_kept_unmarked_outlives_the_next_search_and_is_done(world, tmp_path, monkeypatch):
    """``Indexer.changed`` while another process holds embeddings.db's write lock past its wait: the
    mark is not written, so the session's counts say it is current, and its reconcile is queued
    instead. The next search's ``top_up`` plans from the counts (and no longer checks the rewritten
    row: the rows written since put it out of reach) and hands the thread that plan as the scope's
    queue: the reconcile is kept in it, and done by the next search once the lock is free."""
    sid = world.session("the server ran out of memory", ("assistant", "restart it with more swap"))
    mid = world.db.get_messages(sid)[0]["id"]
    key = ("auto", "/k")
    store = vectors.VectorStore(tmp_path / "embeddings.db")
    worker = Indexer(world.home, config.Settings(), _Model(), store)
    monkeypatch.setattr(worker, "_start", lambda: None)  # no thread: the queue stays as it is looked at
    worker.index_now(key, [sid])
    now = "the office plants are watered by a robot on tuesdays"
    write_as_importer(world.home, "UPDATE messages SET content = ? WHERE id = ?", now, mid)
    chatter = world.session(*[f"routine line {n}" for n in range(RECENT_ROWS)])
    with WriteLock(store.path, at_most=5) as other:  # another process writing the file
        worker.changed(key, [sid], 0.2)
        assert other.holds()  # back before the lock was let go: it waited its 0.2 s, not the lock out
        assert store.states(worker.fp, [sid])[sid].seen_count >= 0  # not marked
        with reading(state_db_path(world.home)) as (conn, shape):
            assert worker.top_up(conn, shape, key, [sid, chatter], 0.0)["pending"] == 2
    assert {item.session_id: item.kind for item in worker._waiting(key)} == {sid: "reconcile", chatter: "append"}
    monkeypatch.undo()  # the lock free, a search's work is done by the thread
    with reading(state_db_path(world.home)) as (conn, shape):
        assert worker.top_up(conn, shape, key, [sid, chatter], 30.0)["pending"] == 0
    assert store.hashes(worker.fp, sid)[mid] == chunking.content_hash(chunking.prepare(now))
    assert worker.wait_idle(30) and worker._waiting(key) == [] and store.states(worker.fp, [sid])[sid].seen_count >= 0


def test_a_batch_another_process_held_the_write_lock_off_past_the_wait_is_written_once_it_is_free(
        world, tmp_path, monkeypatch):
    """Another process holding embeddings.db's write lock longer than the background waits for it
    (SQLite's 10 s; 0.3 s here) pauses the background's work: the session goes on from the last batch
    committed once the lock is free, and the scope's other queued work is done too. Stopped, the
    thread gave up every queue, a reconcile queued because the lock held off its mark with them."""
    newer_texts = [f"newer line {n} about the subject number {n}" for n in range(5)]
    older = world.session(*[f"older line {n} about the topic number {n}" for n in range(3)])
    newer = world.session(*newer_texts)
    key = ("auto", "/k")
    store = vectors.VectorStore(tmp_path / "embeddings.db")
    waits = store.transaction
    monkeypatch.setattr(store, "transaction", lambda fn, wait=derived.LOCK_WAIT: waits(fn, min(wait, 0.3)))
    sent: list[list[str]] = []
    held: list[WriteLock] = []

    class Recorded(_Model):
        def embed_documents(self, texts):
            sent.append(list(texts))
            if len(sent) == 2:  # the newer session's second batch meets another process's write
                held.append(WriteLock(store.path, at_most=30))
            return super().embed_documents(texts)

    worker = Indexer(world.home, config.Settings(batch_size=2), Recorded(), store)
    paused = threading.Event()
    step = worker._step

    def watched(scope, item):
        out = step(scope, item)
        if out is Step.PAUSE:
            paused.set()
        return out

    monkeypatch.setattr(worker, "_step", watched)
    with reading(state_db_path(world.home)) as (conn, shape):
        assert worker.top_up(conn, shape, key, [older, newer], 0.0)["pending"] == 2
    assert paused.wait(30)
    try:
        assert held[0].holds() and worker.error is None
        assert {item.session_id for item in worker._waiting(key)} == {older, newer}
    finally:
        held[0].release()
    assert worker.wait_idle(30) and worker.error is None and worker._waiting(key) == []
    for sid in (older, newer):
        rows = world.db.get_messages(sid)
        assert store.hashes(worker.fp, sid) == {
            m["id"]: chunking.content_hash(chunking.prepare(m["content"])) for m in rows}
        st = store.states(worker.fp, [sid])[sid]
        assert (st.indexed_max_id, st.seen_count, st.seen_max_id) == (rows[-1]["id"], len(rows), rows[-1]["id"])
    # Only the batch the lock held off was embedded again, after it was free.
    assert sent[:4] == [newer_texts[0:2], newer_texts[2:4], newer_texts[2:4], newer_texts[4:5]]
    assert sorted(t for batch in sent[4:] for t in batch) == sorted(m["content"] for m in world.db.get_messages(older))
