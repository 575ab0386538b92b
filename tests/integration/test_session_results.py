"""Results are sessions, through Hermes's real plugin manager and dispatch: each session once,
its best message first and its other leading messages in ``more_hits``, every message id
readable with core ``session_search``."""

from __future__ import annotations

import json

import pytest

from hermes_world import call, enable_plugin, hits

SEARCH = "project_history_search"


@pytest.fixture
def heater(world, work):
    """One session that comes back to the boiler three times, eleven that mention it once, and
    one that never does."""
    folder = work / "house"
    folder.mkdir()
    world.project("House", folder)
    main = world.session(
        ("user", "The boiler pressure drops every night, what could it be?"),
        ("assistant", "Check the boiler expansion vessel first."),
        ("user", "Nice weather today."),
        ("assistant", "A leaking boiler valve also lowers the pressure overnight."),
        cwd=folder, title="boiler night")
    others = [world.session(("user", f"Note {n}: the boiler service is due in month {n}."),
                            ("assistant", f"Reminder {n} saved."), cwd=folder, title=f"note {n}")
              for n in range(11)]
    unrelated = world.session(("user", "Garden hose is in the shed."), cwd=folder, title="garden")
    asker = world.session(cwd=folder)
    enable_plugin(world.home)
    return {"main": main, "others": others, "unrelated": unrelated, "asker": asker}


@pytest.mark.parametrize("mode", ["keyword", "hybrid"])
def test_ten_distinct_sessions_for_limit_ten(heater, mode):
    res = call(SEARCH, {"query": "boiler pressure", "mode": mode}, session_id=heater["asker"])
    sessions = [r["session_id"] for r in res["results"]]
    assert len(sessions) == 10 and len(set(sessions)) == 10
    assert heater["asker"] not in sessions
    assert len({h["message_id"] for h in hits(res)}) == len(hits(res))
    small = call(SEARCH, {"query": "boiler pressure", "mode": mode, "limit": 3}, session_id=heater["asker"])
    assert len({r["session_id"] for r in small["results"]}) == len(small["results"]) == 3


@pytest.mark.parametrize("mode", ["keyword", "hybrid"])
def test_a_session_that_holds_several_matches_brings_them_in_more_hits(heater, world, mode):
    res = call(SEARCH, {"query": "boiler pressure", "mode": mode, "context": 1}, session_id=heater["asker"])
    first = res["results"][0]
    assert first["session_id"] == heater["main"]
    more = first.get("more_hits", [])
    assert more, first
    texts = dict(world.db._conn.execute("SELECT id, content FROM messages WHERE session_id = ?", (heater["main"],)))
    shown = [first["message_id"]] + [m["message_id"] for m in more]
    assert {i for i, text in texts.items() if "boiler" in text} <= set(shown)
    assert any(c.get("hit") and c["message_id"] == first["message_id"] for c in first["context"])
    for m in more:
        # A further hit is read around with its message_id: it brings no window of its own.
        assert set(m) >= {"message_id", "role", "snippet", "score_source", "when"} and "context" not in m
        # Hybrid may add one by meaning alone: USE scores "Nice weather today." with the two boiler
        # messages around it. Whatever the words found is marked in its snippet.
        if m["score_source"] == "semantic":
            assert mode == "hybrid", m
        else:
            assert ">>>boiler<<<" in m["snippet"].lower()
    # The other sessions mention it once: one message each.
    assert all("more_hits" not in r for r in res["results"][1:])


def test_semantic_mode_answers_in_sessions_too(heater):
    # The semantic engine drops messages far below its best match, so fewer than ten may come.
    res = call(SEARCH, {"query": "the heating loses pressure at night", "mode": "semantic"}, session_id=heater["asker"])
    assert res["searched_with"] == "semantic" and res["results"]
    sessions = [r["session_id"] for r in res["results"]]
    assert len(set(sessions)) == len(sessions) and heater["unrelated"] not in sessions[:1]
    assert len({h["message_id"] for h in hits(res)}) == len(hits(res))


def test_a_more_hits_message_reads_back_with_core_session_search(heater, world):
    from tools.session_search_tool import session_search

    res = call(SEARCH, {"query": "boiler pressure", "mode": "keyword"}, session_id=heater["asker"])
    first = res["results"][0]
    other = first["more_hits"][0]
    profile, _, sid = first["link"].removeprefix("@session:").partition("/")
    out = json.loads(session_search(session_id=sid, profile=profile, around_message_id=other["message_id"],
                                    db=world.db))
    assert out["success"] and any(m["id"] == other["message_id"] for m in out["messages"])


def test_hybrid_keeps_the_semantic_engines_first_session(world, work):
    """Twelve sessions hold the question's words in other senses and one says what it asks in other
    words: the blend ranks the twelve first, and the one the semantic engine ranks first still
    comes among hybrid's ten, in the place of the last of the others."""
    folder = work / "garden"
    folder.mkdir()
    world.project("Garden", folder)
    for n in range(12):
        world.session(("user", f"Quiz night {n}: the answer to question {n} was 'orange', the tree was a trick "
                               f"question, and the leaves round was won by team {n}."), cwd=folder)
    meant = world.session(("user", "My citrus plant keeps shedding its foliage since I moved it indoors."),
                          ("assistant", "Indoor citrus drops them when the light falls; give it a bright window."),
                          cwd=folder)
    asker = world.session(cwd=folder)
    enable_plugin(world.home)
    query = "why is my orange tree losing its leaves?"
    semantic = call(SEARCH, {"query": query, "mode": "semantic"}, session_id=asker)
    assert semantic["results"][0]["session_id"] == meant
    hybrid = [r["session_id"] for r in call(SEARCH, {"query": query, "mode": "hybrid"}, session_id=asker)["results"]]
    assert len(hybrid) == 10 and meant in hybrid
