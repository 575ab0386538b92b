"""The semantic indexer's queue against a real state.db (Hermes's own SessionDB) and a
stand-in model: what a search hands it survives the searches after it."""

from __future__ import annotations

import sqlite3
import time

import numpy as np

from hermes_world import write_as_importer
from project_history_recall import settings as config
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
    other = sqlite3.connect(store.path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another process writing the file
    try:
        started = time.monotonic()
        worker.changed(key, [sid], 0.2)
        assert time.monotonic() - started < 2
        assert store.states(worker.fp, [sid])[sid].seen_count >= 0  # not marked
        with reading(state_db_path(world.home)) as (conn, shape):
            assert worker.top_up(conn, shape, key, [sid, chatter], 0.0)["pending"] == 2
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert {item.session_id: item.kind for item in worker._waiting(key)} == {sid: "reconcile", chatter: "append"}
    monkeypatch.undo()  # the lock free, a search's work is done by the thread
    with reading(state_db_path(world.home)) as (conn, shape):
        assert worker.top_up(conn, shape, key, [sid, chatter], 30.0)["pending"] == 0
    assert store.hashes(worker.fp, sid)[mid] == chunking.content_hash(chunking.prepare(now))
    assert worker.wait_idle(30) and worker._waiting(key) == [] and store.states(worker.fp, [sid])[sid].seen_count >= 0
