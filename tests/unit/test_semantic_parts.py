"""The pure parts of the semantic path: chunking, fusion, change planning, the
in-memory matrix and the store's own file handling (no Hermes, no model)."""

from __future__ import annotations

import itertools
import os
import sqlite3

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from project_history_recall.semantic import chunking, engine, indexer, matrix, store as vectors
from project_history_recall import settings as config, fusion
from project_history_recall.hits import KEYWORD, SEMANTIC, Hit
from project_history_recall.files import arrays, derived


# -- chunking -------------------------------------------------------------------------
def test_short_text_is_one_chunk_and_prepare_folds_spaces():
    assert chunking.prepare("  a \t b\n\n\n c  ") == "a b\n\nc"
    assert chunking.split("hello world", 800, 100) == [(0, "hello world")]
    assert chunking.split("", 800, 100) == []


def test_long_text_is_cut_at_sentences_with_overlap():
    text = " ".join(f"Sentence number {i} says something." for i in range(60))
    chunks = chunking.split(text, 200, 50)
    assert len(chunks) > 5
    for offset, piece in chunks:
        assert len(piece) <= 200 and text[offset:offset + len(piece)] == piece
        assert piece.endswith(".")  # cut at a sentence end
    for (a, pa), (b, _) in itertools.pairwise(chunks):
        assert a < b < a + len(pa)  # neighbours overlap


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=3000), st.integers(100, 900), st.integers(0, 300))
def test_chunks_cover_the_text(text, size, overlap):
    chunks = chunking.split(text, size, overlap)
    covered = set()
    for offset, piece in chunks:
        assert piece and len(piece) <= size
        assert text[offset:offset + len(piece)] == piece
        covered.update(range(offset, offset + len(piece)))
    assert all(i in covered for i, ch in enumerate(text) if not ch.isspace())


def test_content_hash_changes_with_the_text():
    assert chunking.content_hash("a") == chunking.content_hash("a") != chunking.content_hash("b")


def test_a_short_message_is_embedded_after_the_earlier_ones_that_fit_whole():
    earlier = ["What time does the class end?", "x" * 50, "Six, at the sports centre."]
    assert chunking.after_earlier(earlier, "OK", 800, 2) == f"{'x' * 50}\nSix, at the sports centre.\nOK"
    assert chunking.after_earlier(earlier, "OK", 800, 5) == "\n".join([*earlier, "OK"])
    # The nearest that does not fit whole ends the context: no message is cut.
    assert chunking.after_earlier(earlier, "OK", 60, 3) == "Six, at the sports centre.\nOK"
    assert chunking.after_earlier(earlier, "OK", 20, 2) == "OK"
    assert chunking.after_earlier(earlier, "OK", 800, 0) == "OK"
    assert chunking.after_earlier([], "OK", 800, 2) == "OK"
    assert chunking.after_earlier(earlier, "", 800, 2) == ""
    long = "y" * 900  # cut into chunks as it is: its own text fills them
    assert chunking.after_earlier(earlier, long, 800, 2) == long
    # A message that says enough alone is embedded alone, though its context would fit.
    enough = "z" * chunking.SHORT_MESSAGE
    assert chunking.after_earlier(earlier, enough, 800, 2) == enough
    assert chunking.after_earlier(earlier, enough[1:], 800, 1) == f"Six, at the sports centre.\n{enough[1:]}"


def test_each_message_of_a_session_is_embedded_after_the_ones_with_text_before_it():
    rows = [(5, "", None), (6, "It starts at five.", 1.0), (7, "", 2.0), (8, "OK", 3.0)]
    assert indexer.in_context(["Swimming next week?", ""], rows, 800, 2) == {
        5: "", 6: "Swimming next week?\nIt starts at five.", 7: "",
        8: "Swimming next week?\nIt starts at five.\nOK"}
    assert indexer.in_context([], rows, 800, 0) == {5: "", 6: "It starts at five.", 7: "", 8: "OK"}


# -- fusion ---------------------------------------------------------------------------------
def _hits(source: str, ids: list[int]) -> list[Hit]:
    return [Hit(mid, "s", 1.0, source, 0.0) for mid in ids]


def test_rrf_marks_both_and_orders_by_votes():
    out = fusion.rrf({KEYWORD: _hits(KEYWORD, [1, 2, 3]), SEMANTIC: _hits(SEMANTIC, [3, 4])}, k=3,
                     weights={SEMANTIC: 0.5})
    # 3 is third for keyword but first for semantic: 1/6 + 0.5/4 beats 1's 1/4.
    assert [f.message_id for f in out] == [3, 1, 2, 4]
    assert {f.message_id: f.source for f in out} == {1: "keyword", 2: "keyword", 3: "both", 4: "semantic"}
    assert out[0].score == pytest.approx(1 / 6 + 0.5 / 4)


def test_rrf_weight_zero_keeps_keyword_order():
    out = fusion.rrf({KEYWORD: _hits(KEYWORD, [5, 6]), SEMANTIC: _hits(SEMANTIC, [6, 7])}, k=3,
                     weights={SEMANTIC: 0.0})
    assert [f.message_id for f in out][:2] == [5, 6]


def test_new_settings_are_validated(tmp_path):
    home = tmp_path / "h"
    (home / "project-history-recall").mkdir(parents=True)
    (home / "project-history-recall" / "config.yaml").write_text("semantic_weight: -1\nrrf_k: 7\n")
    s = config.load(home)
    assert s.semantic_weight == config.Settings().semantic_weight and s.rrf_k == 7
    assert any("semantic_weight" in w for w in s.warnings)


def test_blend_weight_is_the_embedders_own_unless_set(tmp_path):
    home = tmp_path / "h"
    (home / "project-history-recall").mkdir(parents=True)
    path = home / "project-history-recall" / "config.yaml"
    assert config.load(home).blend_weight is None and config.DEFAULTS["blend_weight"] is None
    path.write_text("blend_weight: 0.7\n")  # the one weight every model had
    assert config.load(home).blend_weight == 0.7
    for bad in ("blend_weight: 11\n", "blend_weight: -0.1\n", "blend_weight: lots\n"):
        path.write_text(bad)
        s = config.load(home)
        assert s.blend_weight is None and any("blend_weight" in w for w in s.warnings), bad


# -- planning against a state.db-shaped table ----------------------------------------------------
@pytest.fixture
def msgs():
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT, role TEXT, "
                 "content TEXT, timestamp REAL)")
    conn.execute("CREATE INDEX idx ON messages(session_id, timestamp)")
    for sid, n in (("a", 3), ("b", 2)):
        for i in range(n):
            conn.execute("INSERT INTO messages (session_id, role, content, timestamp) VALUES (?,?,?,?)",
                         (sid, "user", f"{sid}{i}", i))
    return conn


def test_plan_new_unchanged_appended_deleted_and_dirty(msgs):
    S = vectors.VectorState
    work = indexer.plan(msgs, {}, ["a", "b", "empty"])
    assert {k: (w.kind, w.after_id) for k, w in work.items()} == {"a": ("append", 0), "b": ("append", 0)}
    done = {"a": S("a", indexed_max_id=3, seen_count=3, seen_max_id=3),
            "b": S("b", indexed_max_id=5, seen_count=2, seen_max_id=5)}
    assert indexer.plan(msgs, done, ["a", "b"]) == {}
    msgs.execute("INSERT INTO messages (session_id, role, content, timestamp) VALUES ('a', 'assistant', 'x', 9)")
    work = indexer.plan(msgs, done, ["a", "b"])
    assert list(work) == ["a"] and (work["a"].kind, work["a"].after_id, work["a"].seen) == ("append", 3, (4, 6))
    msgs.execute("DELETE FROM messages WHERE id = 4")  # one of b's
    msgs.execute("INSERT INTO messages (session_id, role, content, timestamp) VALUES ('b', 'user', 'y', 9)")
    assert indexer.plan(msgs, done, ["b"])["b"].kind == "reconcile"  # same count, but one vanished
    dirty = {"a": S("a", indexed_max_id=3, seen_count=-1, seen_max_id=3)}
    assert indexer.plan(msgs, dirty, ["a"])["a"].kind == "reconcile"


# -- the store and the in-memory matrix -------------------------------------------------------------
def _unit(rng, n, d=8):
    v = rng.normal(size=(n, d)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _add(store, sid, mids, vecs, ts=0.0):
    rows = [vectors.ChunkRow(sid, m, 0, f"h{m}", ts + m, v) for m, v in zip(mids, vecs, strict=True)]
    return store.add("fp", sid, rows, max(mids), None)


def _brute(vecs_by_session, q, w=1.0):
    """Cosine of q with (chunk + w x (previous + next chunk of the same session))."""
    out = {}
    for mids, vecs in vecs_by_session.values():
        v16 = vecs.astype(np.float16).astype(np.float32)
        for i, m in enumerate(mids):
            acc = v16[i] + w * ((v16[i - 1] if i > 0 else 0) + (v16[i + 1] if i + 1 < len(mids) else 0))
            out[m] = float(acc @ q / np.linalg.norm(acc))
    return out


@pytest.mark.parametrize("w", [1.0, 0.5, 0.0])  # USE's weight, e5's, and none (plain cosine)
def test_matrix_scores_in_context_and_follows_the_store(tmp_path, w):
    rng = np.random.default_rng(1)
    store = vectors.VectorStore(tmp_path / "embeddings.db")
    data = {"s1": ([1, 2, 3], _unit(rng, 3)), "s2": ([10, 11], _unit(rng, 2))}
    for sid, (mids, vecs) in data.items():
        _add(store, sid, mids, vecs)
    m = matrix.ScopeMatrix(8, context_weight=w)
    q = _unit(rng, 1)[0]

    def check(members):
        m.sync(store, "fp", members, store.states("fp", members))
        hits, _, _, _ = m.search(store, q, set(members), None, None, 10)
        everything = _brute({s: data[s] for s in members}, q, w)
        floor = max(matrix.MIN_SIMILARITY, matrix.RELATIVE_SIMILARITY * max(everything.values()))
        expected = {k: v for k, v in everything.items() if v >= floor}
        # The int8 rows only choose: every score is the stored float vectors' own.
        assert {h.message_id: h.score for h in hits} == pytest.approx(expected, abs=1e-6)
        # Ties (with w 1, the two messages of s2 score alike in context) go to the newer message.
        assert [h.message_id for h in hits] == sorted(expected, key=lambda k: (-expected[k], -k))
        assert all(h.content_hash == f"h{h.message_id}" for h in hits)  # read with the vectors

    check(["s1", "s2"])
    extra = _unit(rng, 2)
    _add(store, "s1", [4, 5], extra)  # appended: neighbours of row 3 change
    data["s1"] = ([1, 2, 3, 4, 5], np.vstack([data["s1"][1], extra]))
    check(["s1", "s2"])
    store.remove_messages("fp", "s1", [2], dirty=False)  # removed: the session is reloaded
    data["s1"] = ([1, 3, 4, 5], np.delete(data["s1"][1], 1, axis=0))
    check(["s1", "s2"])
    check(["s2"])  # a session leaves the scope (a move)
    _, late, _, _ = m.search(store, q, {"s2"}, 10.5, None, 10, candidates={10, 11})
    assert set(late) == {11}  # time filter (10 is at 10.0, 11 at 11.0)


def test_likeness_is_the_cosine_of_two_messages_nearest_chunks(tmp_path):
    rng = np.random.default_rng(7)
    store = vectors.VectorStore(tmp_path / "embeddings.db")
    vecs = _unit(rng, 4)
    # Message 1 has two chunks (offsets 0 and 1); 2 and 3 one each, in another session.
    store.add("fp", "s1", [vectors.ChunkRow("s1", 1, 0, "h1", 1.0, vecs[0]),
                           vectors.ChunkRow("s1", 1, 1, "h1", 1.0, vecs[1])], 1, None)
    _add(store, "s2", [2, 3], vecs[2:])
    m = matrix.ScopeMatrix(8)
    m.sync(store, "fp", ["s1", "s2"], store.states("fp"))
    like = m.likeness([3, 1, 99, 2])  # 99: no vector anywhere
    v = vecs.astype(np.float16).astype(np.float32)
    assert like[1, 3] == pytest.approx(max(v[0] @ v[2], v[1] @ v[2]), abs=0.01)
    assert like[0, 1] == pytest.approx(max(v[0] @ v[3], v[1] @ v[3], 0.0), abs=0.01)
    assert like[0, 0] == pytest.approx(1.0, abs=0.01)
    assert not like[2].any() and not like[:, 2].any()
    assert np.allclose(like, like.T)
    # A search's outcome asks its matrix; one without (keyword only) finds nothing alike.
    assert np.array_equal(engine.Outcome("ready", matrix=m).likeness([3, 1, 99, 2]), like)
    assert not engine.Outcome("disabled").likeness([1, 2]).any()


def test_likeness_takes_one_blas_thread_and_gives_the_pool_back(tmp_path, monkeypatch):
    # Its product of ~70 rows woke OpenBLAS's other thread, which spun on into the next searches.
    from contextlib import contextmanager

    from threadpoolctl import threadpool_info

    from project_history_recall.semantic import blas

    def blas_threads() -> list[int]:
        return [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]

    rng = np.random.default_rng(8)
    store = vectors.VectorStore(tmp_path / "embeddings.db")
    _add(store, "s1", list(range(1, 81)), _unit(rng, 80, d=512))
    m = matrix.ScopeMatrix(512)
    m.sync(store, "fp", ["s1"], store.states("fp"))
    before = blas_threads()
    seen: list[list[int]] = []
    real = blas.one_thread

    @contextmanager
    def watched():
        with real():
            seen.append(blas_threads())
            yield

    monkeypatch.setattr(blas, "one_thread", watched)
    like = m.likeness(list(range(1, 81)))
    assert seen and all(n == 1 for n in seen[0]) and blas_threads() == before
    assert np.allclose(np.diag(like), 1.0, atol=0.01)


def _leaning(tmp_path, rng, d, sessions, chunks_of):
    """(store, its matrix, the session ids, the topic): each session's turns lean a little
    towards one topic, so scores crowd near the top. ``chunks_of(n)``: the message id of each
    of session n's chunks, in order (a message id repeated: its next chunk)."""
    store = vectors.VectorStore(tmp_path / "embeddings.db")
    topic = _unit(rng, 1, d)[0]
    sids = [f"s{i:02d}" for i in range(sessions)]
    for n, sid in enumerate(sids):
        mids = chunks_of(n)
        vecs = _unit(rng, len(mids), d) + 0.15 * topic
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        offsets = [mids[:i].count(m) for i, m in enumerate(mids)]
        store.add("fp", sid, [vectors.ChunkRow(sid, m, o, f"h{m}", float(m), v)
                              for m, o, v in zip(mids, offsets, vecs, strict=True)], max(mids), None)
    m = matrix.ScopeMatrix(d)
    m.sync(store, "fp", sids, store.states("fp", sids))
    return store, m, sids, topic


def test_rescoring_only_rows_within_the_int8_bound_finds_the_same_hits(tmp_path, monkeypatch):
    # USE's size: the bound was measured for 512 dimensions, and with 8 int8 errs far more.
    rng = np.random.default_rng(6)
    d = 512
    store, m, sids, topic = _leaning(tmp_path, rng, d, 40, lambda n: list(range(n * 100, n * 100 + 50)))
    # The hits are the best rows themselves: any row lost at the edge of the best k shows.
    monkeypatch.setattr(matrix, "CANDIDATE_FACTOR", 1)
    asked = []
    read = store.vectors
    monkeypatch.setattr(store, "vectors", lambda rowids: asked.append(len(rowids)) or read(rowids))
    rows8 = m.vecs[: m.n].astype(np.int32)
    stored = {s: _stored(store, s, d) for s in sids}
    for _ in range(12):
        q = _unit(rng, 1, d)[0] + 0.3 * topic
        q /= np.linalg.norm(q)
        # The bound holds on this data: every int8 score in context (rows and query in int8,
        # as the choosing pass has them) is within it of the float one.
        q8, q_scale = matrix._quantise(q.copy())
        sims = np.append(rows8 @ q8.astype(np.int32) * m.scale[: m.n] * q_scale, 0.0)
        int8 = (sims[: m.n] + sims[m.prev[: m.n]] + sims[m.next[: m.n]]) / m.norm[: m.n]
        floats = {}
        for n, sid in enumerate(sids):
            v = stored[sid]
            acc = v.copy()
            acc[1:] += v[:-1]
            acc[:-1] += v[1:]
            floats.update(zip(range(n * 100, n * 100 + 50), (acc @ q / np.linalg.norm(acc, axis=1)).tolist(), strict=True))
        assert np.abs(int8 - np.array([floats[int(mid)] for mid in m.mids[: m.n]])).max() <= matrix.INT8_ERROR
        asked.clear()
        pruned = m.search(store, q, set(sids), None, None, 20, candidates={5, 105})
        with monkeypatch.context() as unpruned:
            unpruned.setattr(matrix, "INT8_ERROR", 10.0)  # nothing pruned: the whole pool of 2k rows
            full = m.search(store, q, set(sids), None, None, 20, candidates={5, 105})
        # The same hits in the same order; a score may differ in its last bit (BLAS sums a
        # row's products in another order depending on where in the batch the row falls).
        assert [h.message_id for h in pruned[0]] == [h.message_id for h in full[0]]
        assert [h.score for h in pruned[0]] == pytest.approx([h.score for h in full[0]], abs=1e-6)
        assert pruned[1] == pytest.approx(full[1], abs=1e-6)
        assert asked[0] < asked[1]  # fewer rows (and their neighbours) read and scored


def test_rescoring_against_the_limit_th_message_finds_the_same_hits_as_against_the_k_th_row(tmp_path, monkeypatch):
    # Messages of one to four chunks: a message's rows count once, by its best, so the bar of
    # the limit-th message must hold however its chunks fall among the best rows.
    rng = np.random.default_rng(7)
    d = 512
    store, m, sids, topic = _leaning(tmp_path, rng, d, 30,
                                     lambda n: [n * 100 + i for i in range(20) for _ in range(1 + (i * 7 + n) % 4)])
    assert m.n > 2 * len(set(m.mids[: m.n].tolist()))  # most messages have several chunks
    asked = []
    read = store.vectors
    monkeypatch.setattr(store, "vectors", lambda rowids: asked.append(len(rowids)) or read(rowids))
    for limit in (1, 5, 20):
        for _ in range(8):
            q = _unit(rng, 1, d)[0] + 0.3 * topic
            q /= np.linalg.norm(q)
            asked.clear()
            barred = m.search(store, q, set(sids), None, None, limit, candidates={5, 105})
            with monkeypatch.context() as kth_only:
                kth_only.setattr(matrix.ScopeMatrix, "_message_bar", lambda self, rows, scores, n: float("-inf"))
                by_kth = m.search(store, q, set(sids), None, None, limit, candidates={5, 105})
            assert [h.message_id for h in barred[0]] == [h.message_id for h in by_kth[0]]
            assert [h.score for h in barred[0]] == pytest.approx([h.score for h in by_kth[0]], abs=1e-6)
            assert barred[1] == pytest.approx(by_kth[1], abs=1e-6)
            assert len(barred[0]) == limit and asked[0] < asked[1]  # fewer rows read and scored


def _stored(store, sid, d):
    """A session's stored vectors, in message order, as float32."""
    rows = [r for page in store.rows("fp", [sid]) for r in page]
    return np.frombuffer(b"".join(r[4] for r in rows), dtype=np.float16).reshape(len(rows), d).astype(np.float32)


def test_a_vector_gone_from_the_store_before_the_next_sync_is_not_scored_nor_summed(tmp_path):
    rng = np.random.default_rng(4)
    store = vectors.VectorStore(tmp_path / "embeddings.db")
    vecs = _unit(rng, 4)
    _add(store, "s1", [1, 2, 3, 4], vecs)
    m = matrix.ScopeMatrix(8)
    m.sync(store, "fp", ["s1"], store.states("fp"))
    store.remove_messages("fp", "s1", [2], dirty=False)  # the indexer's doing, between two syncs
    q = _unit(rng, 1)[0]
    _, sims, _, _ = m.search(store, q, {"s1"}, None, None, 10, candidates={1, 2, 3, 4})
    # 1 and 3 lose their neighbour 2 from the sum; 3 keeps its other one, 4.
    expected = {1: ([1], vecs[[0]]), 3: ([3, 4], vecs[[2, 3]])}
    assert 2 not in sims
    assert sims[1] == pytest.approx(_brute({"a": expected[1]}, q)[1], abs=1e-6)
    assert sims[3] == pytest.approx(_brute({"b": expected[3]}, q)[3], abs=1e-6)


def test_a_vector_read_from_a_damaged_page_sets_the_store_aside(tmp_path):
    """The vectors a search rescores are read like every other read of the file: damage met there
    is a ``StoreError`` that set the file aside (the semantic side reports it and rebuilds), not a
    raw sqlite3 error that failed the whole search, the file left in place for the next."""
    path = tmp_path / "embeddings.db"
    store = vectors.VectorStore(path)
    _add(store, "s1", list(range(1, 2001)), _unit(np.random.default_rng(9), 2000, d=256))
    rowids = [row[0] for page in store.rows("fp", ["s1"]) for row in page]
    store.close()
    data = bytearray(path.read_bytes())
    middle = len(data) // 4096 // 2
    data[middle * 4096: (middle + 20) * 4096] = b"\xff" * (20 * 4096)  # chunk pages; the schema's stay whole
    path.write_bytes(bytes(data))
    store = vectors.VectorStore(path)
    with pytest.raises(derived.StoreError) as found:
        store.vectors(rowids)
    assert found.value.set_aside and not path.exists()


def test_matrix_compacts_after_many_removals(tmp_path):
    rng = np.random.default_rng(2)
    store = vectors.VectorStore(tmp_path / "embeddings.db")
    sids = [f"s{i:03d}" for i in range(60)]
    for n, sid in enumerate(sids):
        _add(store, sid, list(range(n * 100, n * 100 + 30)), _unit(rng, 30))
    m = matrix.ScopeMatrix(8)
    m.sync(store, "fp", sids, store.states("fp", sids))
    assert m.n == 1800
    keep = sids[:20]
    m.sync(store, "fp", keep, store.states("fp", keep))
    assert m.n == 600 and m.alive[: m.n].all()
    hits, _, _, _ = m.search(store, _unit(rng, 1)[0], set(keep), None, None, 5)
    assert len(hits) == 5 and all(h.session_id in keep for h in hits)


def test_a_failed_batch_leaves_no_trace(tmp_path):
    store = vectors.VectorStore(tmp_path / "embeddings.db")
    _add(store, "s", [1], _unit(np.random.default_rng(3), 1))
    bad = [vectors.ChunkRow("s", 2, 0, "h", 0.0, np.zeros(8, np.float32)),
           vectors.ChunkRow("s", 3, 0, None, 0.0, np.zeros(8, np.float32))]  # NOT NULL fails mid-batch
    with pytest.raises(derived.StoreError, match="NOT NULL constraint failed"):  # names embeddings.db, not state.db
        store.add("fp", "s", bad, 3, (9, 9))
    st = store.states("fp")["s"]
    assert (st.indexed_max_id, st.chunks, st.seen_count) == (1, 1, 0)


def test_unreadable_file_is_moved_aside_and_rebuilt(tmp_path):
    path = tmp_path / "embeddings.db"
    path.write_bytes(b"not sqlite" * 100)
    store = vectors.VectorStore(path)
    assert "rebuilt" in store.rebuilt_reason and store.states("fp") == {}
    assert list(tmp_path.glob("embeddings.db.broken-*"))


def test_a_file_overwritten_after_a_quiet_while_is_still_noticed(tmp_path, monkeypatch):
    path = tmp_path / "embeddings.db"
    store = vectors.VectorStore(path)
    _add(store, "s", [1], _unit(np.random.default_rng(7), 1))
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # the header is in the file, as in use
    conn.close()
    old = path.stat().st_mtime - 3600
    os.utime(path, (old, old))  # last written an hour ago
    opened = []
    full_check = derived._not_a_database
    monkeypatch.setattr(derived, "_not_a_database", lambda p: opened.append(p) or full_check(p))
    assert store.healthy() and store.healthy()
    assert len(opened) == 1  # the second search trusts the first check: nothing has changed since
    size = path.stat().st_size
    with open(path, "r+b") as fh:  # overwritten in place from its start: the same size, the same inode
        fh.write(b"\0" * 100)
    assert path.stat().st_size == size
    assert not store.healthy()
    assert len(opened) == 2


def test_candidate_similarities_cover_keyword_hits_outside_the_top(tmp_path):
    rng = np.random.default_rng(3)
    store = vectors.VectorStore(tmp_path / "embeddings.db")
    _add(store, "s1", list(range(100, 106)), _unit(rng, 6))
    m = matrix.ScopeMatrix(8)
    m.sync(store, "fp", ["s1"], store.states("fp"))
    q = _unit(rng, 1)[0]
    top, sims, _, _ = m.search(store, q, {"s1"}, None, None, 1, candidates={100, 105})
    assert len(top) == 1 and {100, 105, top[0].message_id} <= set(sims)
    assert sims[top[0].message_id] == max(sims.values())
    _, none, _, _ = m.search(store, q, {"other"}, None, None, 1, candidates={100})
    assert none == {}  # a session outside the allowed scope never scores


def test_weak_semantic_matches_are_dropped(tmp_path):
    rng = np.random.default_rng(5)
    store = vectors.VectorStore(tmp_path / "embeddings.db")
    q = _unit(rng, 1)[0]
    near = q + 0.5 * _unit(rng, 1)[0]  # close to the query, though not the same
    for n, v in enumerate([q, near, -q, _unit(rng, 1)[0]]):  # one session each: no neighbours
        _add(store, f"s{n}", [100 + n], [v / np.linalg.norm(v)])
    m = matrix.ScopeMatrix(8)
    m.sync(store, "fp", ["s0", "s1", "s2", "s3"], store.states("fp"))
    hits, sims, _, _ = m.search(store, q, {"s0", "s1", "s2", "s3"}, None, None, 10, candidates={102})
    best = hits[0].score
    assert hits[0].message_id == 100 and abs(best - 1.0) < 1e-2
    assert all(h.score >= max(matrix.MIN_SIMILARITY, matrix.RELATIVE_SIMILARITY * best) for h in hits)
    assert 102 not in {h.message_id for h in hits}  # the opposite message is not a result…
    assert sims[102] < 0  # …though a keyword candidate still gets its similarity


def _scope(sessions: dict[int, list[float]], background: int = 400, seed: int = 3):
    """Scores of a scope (one array) and each chunk's session index: ``sessions``' chunks, then
    ``background`` chunks of unrelated sessions (index 100 on), at USE's unrelated 0.1-0.3."""
    rng = np.random.default_rng(seed)
    scores = [c for cs in sessions.values() for c in cs] + rng.uniform(0.1, 0.3, background).tolist()
    who = [i for i, cs in sessions.items() for _ in cs] + [100 + k // 4 for k in range(background)]
    return np.array(scores, dtype=np.float32), np.array(who, dtype=np.int64)


def test_a_long_session_of_unrelated_chat_gains_no_evidence_however_long():
    # Session 0: 300 chunks a bit above the scope's usual (a plain sum of its cosines would be ~90);
    # session 1: two chunks that say what was asked.
    scores, who = _scope({0: [0.33] * 300, 1: [0.7, 0.62]})
    found, extra = matrix.session_evidence(scores, who)
    evidence = dict(zip(found.tolist(), extra.tolist(), strict=True))
    assert 0 not in evidence
    assert evidence[1] > 0


def test_a_session_that_says_it_twice_has_more_evidence_than_one_that_says_it_once():
    scores, who = _scope({1: [0.7, 0.65, 0.2], 2: [0.7, 0.2, 0.2]})
    found, extra = matrix.session_evidence(scores, who)
    evidence = dict(zip(found.tolist(), extra.tolist(), strict=True))
    assert evidence.get(1, 0.0) > 0 and evidence.get(2, 0.0) == 0.0  # the best chunk is not counted again
    # Each further chunk counts by how far it stands above the background, not by being there.
    bar = float(scores.mean()) + matrix.EVIDENCE_Z * float(scores.std())
    assert evidence[1] == pytest.approx(0.65 - bar, abs=1e-6)


def test_nothing_stands_out_of_an_even_scope():
    assert [len(a) for a in matrix.session_evidence(np.full(50, 0.2, dtype=np.float32),
                                                    np.arange(50) // 5)] == [0, 0]
    assert [len(a) for a in matrix.session_evidence(np.zeros(1, dtype=np.float32), np.zeros(1, dtype=np.int64))] == [0, 0]


def test_the_matrix_search_gives_each_session_its_further_evidence(tmp_path):
    # Session "two" holds two chunks close to the question, "one" a single one, 30 others nothing.
    rng = np.random.default_rng(11)
    d = 256  # random vectors of 256 dimensions: cosines within ~0.06 of 0, as unrelated text
    store = vectors.VectorStore(tmp_path / "embeddings.db")
    q = _unit(rng, 1, d)[0]
    near = [v / np.linalg.norm(v) for v in q + 0.05 * _unit(rng, 3, d)]
    _add(store, "two", [1, 2, 3], np.array([near[0], _unit(rng, 1, d)[0], near[1]]))
    _add(store, "one", [10], np.array([near[2]]))
    others = [f"o{n}" for n in range(30)]
    for n, sid in enumerate(others):
        _add(store, sid, [100 + 10 * n + i for i in range(4)], _unit(rng, 4, d))
    members = ["two", "one", *others]
    m = matrix.ScopeMatrix(d, context_weight=0.0)
    m.sync(store, "fp", members, store.states("fp", members))
    _, _, evidence, _ = m.search(store, q, set(members), None, None, 10)
    assert set(evidence) == {"two"} and evidence["two"] > 0.1
    _, _, alone, _ = m.search(store, q, {"one", *others}, None, None, 10)
    assert alone == {}


# -- a matrix saved between processes ------------------------------------------------------------
def _saved_matrix(tmp_path, store, w=1.0):
    return matrix.ScopeMatrix(8, context_weight=w, saved_at=tmp_path / "matrices" / "scope.arrays",
                              source=store.identity)


def _searched(m, store, members, q):
    m.sync(store, "fp", members, store.states("fp", members))
    hits, sims, _, _ = m.search(store, q, set(members), None, None, 10, candidates={1, 10})
    return [(h.message_id, h.session_id, h.score) for h in hits], sims


def test_a_saved_matrix_starts_the_next_process_where_the_last_one_was(tmp_path):
    rng = np.random.default_rng(7)
    store = vectors.VectorStore(tmp_path / "embeddings.db")
    _add(store, "s1", [1, 2, 3], _unit(rng, 3))
    _add(store, "s2", [10, 11], _unit(rng, 2))
    _add(store, "s3", [20, 21], _unit(rng, 2))
    members, q = ["s1", "s2", "s3"], _unit(rng, 1)[0]
    first = _saved_matrix(tmp_path, store)
    expected = _searched(first, store, members, q)
    with first.lock:
        first.save()
    store.close()
    store = vectors.VectorStore(tmp_path / "embeddings.db")  # the next process
    again = _saved_matrix(tmp_path, store)
    assert _searched(again, store, members, q) == expected
    for name in matrix.SAVED:
        assert np.array_equal(getattr(again, name)[: again.n], getattr(first, name)[: first.n]), name
    assert again.loaded == first.loaded and again.unsaved == 0  # read from the file, not the store
    # What the store gained or lost since the file was saved is followed as in memory.
    _add(store, "s1", [4], _unit(rng, 1))
    store.remove_messages("fp", "s2", [11], dirty=False)
    members = ["s1", "s2"]  # s3 left the scope
    fresh = matrix.ScopeMatrix(8)
    assert _searched(_saved_matrix(tmp_path, store), store, members, q) == _searched(fresh, store, members, q)


def test_a_saved_matrix_of_another_store_or_a_damaged_one_is_not_used(tmp_path):
    rng = np.random.default_rng(8)
    store = vectors.VectorStore(tmp_path / "embeddings.db")
    _add(store, "s1", [1, 2], _unit(rng, 2))
    saved = _saved_matrix(tmp_path, store)
    saved.sync(store, "fp", ["s1"], store.states("fp"))
    with saved.lock:
        saved.save()
    store.close()
    # The store rebuilt: the same sessions, generations and rowids, other vectors.
    for suffix in ("", "-wal", "-shm"):
        (tmp_path / f"embeddings.db{suffix}").unlink(missing_ok=True)
    store = vectors.VectorStore(tmp_path / "embeddings.db")
    other = _unit(rng, 2)
    _add(store, "s1", [1, 2], other)
    rebuilt = _saved_matrix(tmp_path, store)
    rebuilt.sync(store, "fp", ["s1"], store.states("fp"))
    assert rebuilt.unsaved == 2  # read from the store
    quantised, _ = matrix._quantise(other.astype(np.float16).astype(np.float32))
    assert np.array_equal(rebuilt.vecs[:2], quantised)
    # A file altered after it was written reads as none at all.
    file = tmp_path / "matrices" / "scope.arrays"
    with rebuilt.lock:
        rebuilt.save()
    data = bytearray(file.read_bytes())
    data[len(data) // 2] ^= 0xFF
    file.write_bytes(bytes(data))
    damaged = _saved_matrix(tmp_path, store)
    damaged.sync(store, "fp", ["s1"], store.states("fp"))
    assert damaged.unsaved == 2 and np.array_equal(damaged.vecs[:2], quantised)


def test_rows_the_indexer_adds_during_a_sync_are_read_once(tmp_path):
    rng = np.random.default_rng(9)
    store = vectors.VectorStore(tmp_path / "embeddings.db")
    _add(store, "s1", [1, 2], _unit(rng, 2))
    before = store.states("fp")  # read, then the indexer writes before the rows are
    _add(store, "s1", [3], _unit(rng, 1))
    m = matrix.ScopeMatrix(8)
    m.sync(store, "fp", ["s1"], before)
    assert m.mids[: m.n].tolist() == [1, 2]
    m.sync(store, "fp", ["s1"], store.states("fp"))
    assert m.mids[: m.n].tolist() == [1, 2, 3]
    assert m.prev[: m.n].tolist() == [-1, 0, 1] and m.next[: m.n].tolist() == [1, 2, -1]


@pytest.mark.parametrize("d", [8, 512, 1040, 1041, 2048])
def test_the_query_pass_gives_the_integer_products_exactly(d):
    # Through float32 up to 1040 dimensions (every partial sum under 2**24), einsum beyond; across
    # several blocks of rows, at the largest products _quantise can give (all +-127) and at random.
    rng = np.random.default_rng(d)
    m = matrix.ScopeMatrix(d)
    n = 2 * (matrix.DOT_VALUES // d) + 7
    m.vecs = rng.integers(-127, 128, size=(n, d), dtype=np.int8)
    m.vecs[:3] = np.array([127, -127, 127], dtype=np.int8)[:, None]
    m.vecs[3], m.vecs[3, 0] = 127, 0  # an odd sum: past 2**24, float32 cannot hold it
    m.n = n
    for q8 in (np.full(d, 127, dtype=np.int8), rng.integers(-127, 128, size=d, dtype=np.int8)):
        dots = m._dots(q8)
        assert dots.dtype == np.int32
        assert np.array_equal(dots, np.einsum("ij,j->i", m.vecs, q8, dtype=np.int32))
    assert m._dots(np.full(d, 127, dtype=np.int8))[0] == d * 127 * 127


@given(st.lists(st.integers(0, 40), max_size=60), st.sets(st.integers(-3, 45), max_size=12))
def test_rows_of_finds_every_row_of_the_messages_and_no_other(mids, messages):
    ids = np.asarray(mids, dtype=np.int64)
    found = matrix._rows_of(ids, messages)
    assert found.tolist() == [r for r, mid in enumerate(mids) if mid in messages]
    assert found.dtype == np.int64


def test_rows_of_takes_any_iterable_of_ids_and_nothing():
    ids = np.asarray([7, 3, 7, 900_000, 3], dtype=np.int64)
    assert matrix._rows_of(ids, {900_000: "s1", 3: "s2"}).tolist() == [1, 3, 4]
    assert matrix._rows_of(ids, ()).tolist() == []
    assert matrix._rows_of(ids[:0], {3}).tolist() == []


def test_a_scope_s_rows_are_found_once_until_the_matrix_changes(tmp_path):
    rng = np.random.default_rng(12)
    store = vectors.VectorStore(tmp_path / "embeddings.db")
    _add(store, "s1", [1, 2], _unit(rng, 2))  # at times 1.0 and 2.0
    _add(store, "s2", [5], _unit(rng, 1))
    m = matrix.ScopeMatrix(8)
    m.sync(store, "fp", ["s1", "s2"], store.states("fp"))
    first = m._scope(["s1", "s2"], None, None)
    # The same sessions in another order: the very arrays found before.
    assert all(a is b for a, b in zip(first, m._scope(("s2", "s1"), None, None), strict=True))
    mask, live, sessions, outside = m._scope(["s1"], None, None)
    assert sorted(m.mids[live].tolist()) == [1, 2] and m.mids[outside].tolist() == [5]
    assert mask.tolist() == [m.sessions[s] == "s1" for s in m.sidx[: m.n]]
    assert [m.sessions[s] for s in sessions] == ["s1", "s1"]
    assert m.mids[m._scope(["s1", "s2"], 1.5, 5.0)[1]].tolist() == [2]
    _add(store, "s2", [6], _unit(rng, 1))
    m.sync(store, "fp", ["s1", "s2"], store.states("fp"))  # a row more: found again
    mask, live, _, outside = m._scope(["s1", "s2"], None, None)
    assert sorted(m.mids[live].tolist()) == [1, 2, 5, 6] and len(mask) == m.n and len(outside) == 0
    m.sync(store, "fp", ["s2"], store.states("fp"))  # s1 leaves: its rows are no longer alive
    assert sorted(m.mids[m._scope(["s1", "s2"], None, None)[1]].tolist()) == [5, 6]
    for since in range(matrix.SCOPES_KEPT + 2):
        m._scope(["s2"], float(since), None)
    assert len(m._scopes) == matrix.SCOPES_KEPT


def test_a_sync_with_the_states_it_last_synced_reads_nothing_but_follows_the_members(tmp_path, monkeypatch):
    rng = np.random.default_rng(11)
    store = vectors.VectorStore(tmp_path / "embeddings.db")
    _add(store, "s1", [1, 2], _unit(rng, 2))
    _add(store, "s2", [5], _unit(rng, 1))
    m = matrix.ScopeMatrix(8)
    states = store.states("fp")
    m.sync(store, "fp", ["s1", "s2"], states)
    _add(store, "s1", [3], _unit(rng, 1))  # after the states were read: the next states bring it
    reads = []
    real_rows = vectors.VectorStore.rows
    monkeypatch.setattr(vectors.VectorStore, "rows", lambda self, *a, **k: reads.append(a) or real_rows(self, *a, **k))
    m.sync(store, "fp", ["s1", "s2"], states)
    m.sync(store, "fp", ["s2", "s1"], states)  # another caller's order (its own session last)
    assert reads == [] and sorted(m.mids[: m.n][m.alive[: m.n]].tolist()) == [1, 2, 5]
    m.sync(store, "fp", ["s2"], states)  # the same states, fewer members: s1 leaves
    assert m.mids[: m.n][m.alive[: m.n]].tolist() == [5]
    m.sync(store, "fp", ["s1", "s2"], store.states("fp"))
    assert sorted(m.mids[: m.n][m.alive[: m.n]].tolist()) == [1, 2, 3, 5]


def test_arrays_file_reads_back_whole_or_not_at_all(tmp_path):
    path = tmp_path / "x.arrays"
    parts = [np.arange(12, dtype=np.int8).reshape(3, 4), np.array([1.5, -2.0]), np.zeros(0, dtype=np.int64)]
    assert arrays.save(path, {"a": [1, "b"]}, parts)
    for mapped in (False, True):
        fields, back = arrays.load(path, mapped=mapped)
        assert fields == {"a": [1, "b"]}
        assert all(np.array_equal(x, y) and x.dtype == y.dtype for x, y in zip(back, parts, strict=True))
    _, grown = arrays.load(path, spare=5)
    assert grown[0].shape == (8, 4) and np.array_equal(grown[0][:3], parts[0])
    whole = path.read_bytes()
    for broken in (whole[:-1], whole[:40], b"something else" + whole[14:], whole + b"\0"):
        path.write_bytes(broken)
        assert arrays.load(path) is None and arrays.load(path, mapped=True) is None
    assert arrays.load(tmp_path / "missing.arrays") is None
    blocked = tmp_path / "a file"
    blocked.write_text("not a folder")
    assert not arrays.save(blocked / "x.arrays", {}, parts)  # the caller goes on without it


def test_prune_deletes_only_the_saved_files_it_is_told_are_unwanted(tmp_path):
    import os
    import re
    import time

    ours = re.compile(r"[0-9a-f]{4}\.arrays")
    parts = [np.arange(3, dtype=np.int8)]
    for name in ("aaaa.arrays", "bbbb.arrays", "cccc.arrays"):
        assert arrays.save(tmp_path / name, {}, parts)
    foreign = ["notes.txt", "AAAA.arrays", "aaaa.arrays.bak", ".aaaa.arrays.tmp"]
    for name in foreign:
        (tmp_path / name).write_text("not the plugin's")
    (tmp_path / "dddd.arrays").mkdir()
    hour_ago = time.time() - arrays.ABANDONED - 60
    (tmp_path / ".aaaa.arrays.12.34.tmp").write_bytes(b"a writer that died")
    os.utime(tmp_path / ".aaaa.arrays.12.34.tmp", (hour_ago, hour_ago))
    (tmp_path / ".bbbb.arrays.56.78.tmp").write_bytes(b"a save under way")
    os.utime(tmp_path / "cccc.arrays", (hour_ago, hour_ago))

    # Not kept: cccc, unread for longer than asked, and the temporary file of a writer that died.
    gone = arrays.prune(tmp_path, ours, {"aaaa.arrays"}, unused_for=arrays.ABANDONED)
    assert sorted(gone) == [".aaaa.arrays.12.34.tmp", "cccc.arrays"]
    left = {p.name for p in tmp_path.iterdir()}
    assert left == {"aaaa.arrays", "bbbb.arrays", ".bbbb.arrays.56.78.tmp", "dddd.arrays", *foreign}
    assert arrays.load(tmp_path / "aaaa.arrays") is not None
    assert arrays.prune(tmp_path, ours, {"aaaa.arrays"}) == ["bbbb.arrays"]  # just written, but not kept
    assert arrays.prune(tmp_path / "missing", ours, set()) == []
