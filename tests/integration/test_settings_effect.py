"""Settings do what the README says they do, through the real host."""

from __future__ import annotations

import json

from hermes_world import call, enable_plugin, plugin_settings


def _project(world, work):
    app = work / "app"
    app.mkdir()
    world.project("App", app)
    # The websocket in the middle message only: its window is whole on both sides.
    world.session(*[("user", f"line {n} about the {'websocket' if n == 3 else 'weather'} reconnect") for n in range(7)],
                  cwd=app)
    asker = world.session(cwd=app)
    enable_plugin(world.home)
    return asker


def test_context_setting_sets_the_default_window(world, work):
    asker = _project(world, work)
    plugin_settings(world.home, context=0)
    hit = call("project_history_search", {"query": "websocket", "mode": "keyword"}, session_id=asker)["results"][0]
    assert "context" not in hit
    plugin_settings(world.home, context=3)
    hit = call("project_history_search", {"query": "websocket", "mode": "keyword"}, session_id=asker)["results"][0]
    assert len(hit["context"]) == 7  # three before, the hit, three after
    explicit = call("project_history_search", {"query": "websocket", "mode": "keyword", "context": 1},
                    session_id=asker)["results"][0]
    assert len(explicit["context"]) == 3


def test_semantic_off_and_fusion_choice(world, work):
    asker = _project(world, work)
    plugin_settings(world.home, semantic=False)
    res = call("project_history_search", {"query": "websocket"}, session_id=asker)
    assert res["semantic_status"] == "disabled" and res["searched_with"] == "keyword" and res["results"]
    for fusion in ("blend", "rrf"):
        plugin_settings(world.home, fusion=fusion)
        res = call("project_history_search", {"query": "websocket reconnect"}, session_id=asker)
        assert res["semantic_status"] == "ready" and res["searched_with"] == "keyword+semantic", (fusion, res)
        assert {r["score_source"] for r in res["results"]} <= {"keyword", "semantic", "both"}


def test_blend_weight_decides_between_the_words_and_the_meaning(world, work):
    app = work / "app"
    app.mkdir()
    world.project("App", app)
    words = world.session(("user", "The garden reconnect schedule: water the tomatoes every morning."), cwd=app)
    meaning = world.session(("user", "My browser's live socket connection keeps dropping and has to be opened again."),
                            cwd=app)
    asker = world.session(cwd=app)
    enable_plugin(world.home)

    def order(**values) -> list[str]:
        plugin_settings(world.home, **values)
        res = call("project_history_search", {"query": "websocket reconnect"}, session_id=asker)
        assert res["searched_with"] == "keyword+semantic", res
        return [r["session_id"] for r in res["results"]]

    # Only the garden holds a word of the question; the other says it in other words.
    assert order(blend_weight=0)[0] == words
    assert order(blend_weight=10)[0] == meaning
    assert set(order()) == {words, meaning}  # unset: the model's own weight


def test_a_chunk_overlap_that_cannot_be_kept_is_told_as_the_value_used(world, work):
    """``chunk_chars: 100`` with the default overlap (100, not smaller): the warning said "using 100",
    the overlap it had just refused, while 50 was used; ``config`` shows what is used and says so."""
    from cli_runs import cli_process

    _project(world, work)
    plugin_settings(world.home, chunk_chars=100)
    shown = cli_process("config", "--json", home=world.home)
    assert shown.returncode == 0, shown.stderr[-2000:]
    out = json.loads(shown.stdout)
    assert out["settings"]["chunk_overlap"] == 50, out
    assert [w for w in out["warnings"] if "chunk_overlap" in w] == [
        "'chunk_overlap' must be smaller than 'chunk_chars'; using 50"], out["warnings"]


def test_what_an_administrator_pins_for_hermes_holds_for_the_plugin(world, work, monkeypatch, tmp_path):
    """Hermes's managed scope (``/etc/hermes``, or ``HERMES_MANAGED_DIR``): an administrator's
    config.yaml whose values win over the user's, leaf by leaf, and which the user cannot change. Here it
    pins the zone (the user's config says America/Los_Angeles) and turns the plugin's semantic search off
    (the user's section of Hermes's config.yaml turns it on): the plugin read the user's files alone, and
    searched by meaning, reading "2026-06-24" as a Los Angeles day."""
    import time
    from datetime import datetime, timezone

    import hermes_time

    managed = tmp_path / "managed"
    managed.mkdir()
    (managed / "config.yaml").write_text(
        "timezone: Asia/Shanghai\nplugins:\n  project-history-recall:\n    semantic: false\n", encoding="utf-8")
    monkeypatch.setenv("HERMES_MANAGED_DIR", str(managed))
    monkeypatch.delenv("HERMES_TIMEZONE", raising=False)
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    try:
        app = work / "app"
        app.mkdir()
        world.project("App", app)
        said = []
        for when in ((2026, 6, 23, 20), (2026, 6, 24, 20)):  # 04:00 on the 24th, the 25th in Shanghai
            world._clock = datetime(*when, tzinfo=timezone.utc).timestamp()
            said.append(world.session(("user", "the cache eviction policy"), cwd=app))
        shanghai_24th, los_angeles_24th = said
        asker = world.session(cwd=app)
        enable_plugin(world.home)
        with open(world.home / "config.yaml", "a", encoding="utf-8") as config:
            config.write("timezone: America/Los_Angeles\nplugins:\n  project-history-recall:\n    semantic: true\n")
        hermes_time.reset_cache()
        assert str(hermes_time.get_timezone()) == "Asia/Shanghai"  # Hermes's own reading, the yardstick
        res = call("project_history_search", {"query": "cache eviction policy", "since": "2026-06-24",
                                               "until": "2026-06-25"}, session_id=asker)
        assert res["semantic_status"] == "disabled", res
        assert {r["session_id"] for r in res["results"]} == {shanghai_24th}, (los_angeles_24th, res)
    finally:
        monkeypatch.undo()
        time.tzset()
        hermes_time.reset_cache()
