"""History that ``hermes sessions import`` (``SessionDB.import_sessions``) writes, searched through
Hermes's real dispatch.

An export from another tool is made by hand or by a script, and many tools count time in
milliseconds (JavaScript's ``Date.now()``). Hermes 0.19's import keeps such a time as it is given;
0.22 refuses it, but keeps what a 0.19 home holds when it is upgraded.
"""

from __future__ import annotations

import time
from datetime import date

import pytest

from hermes_world import (call, checkpoint, db_digest, enable_plugin, hermes_line, hits, plugin_settings, wait_idle,
                          write_as_importer)

SEARCH = "project_history_search"
MODES = ("keyword", "hybrid", "semantic")


def _import(world, work, sid: str, text: str, at: float, milliseconds: bool) -> int:
    """Session ``sid`` holding the user's ``text`` said at ``at``, imported with Hermes's own
    import; its times in milliseconds where asked. Returns the message's id."""
    scale = 1000 if milliseconds and hermes_line() == (0, 19) else 1
    result = world.db.import_sessions([{"id": sid, "source": "cli", "cwd": str(work), "started_at": at * scale,
                                        "messages": [{"role": "user", "content": text, "timestamp": at * scale}]}])
    assert result["ok"], result
    if milliseconds and scale == 1:  # 0.22 refuses milliseconds: the row a 0.19 home's import left
        write_as_importer(world.home, "UPDATE sessions SET started_at = started_at * 1000 WHERE id = ?", sid)
        write_as_importer(world.home, "UPDATE messages SET timestamp = timestamp * 1000 WHERE session_id = ?", sid)
    return world.db.get_messages(sid)[0]["id"]


@pytest.fixture(params=[False, True], ids=["seconds", "milliseconds"])
def imported(request, world, work):
    now = time.time()
    world.project("App", work)
    world._clock = now - 60 * 86400
    early = world.session(("user", "cache eviction policy: LRU or LFU? the cache eviction policy decides the cache "
                                   "hit rate"), cwd=work)
    world._clock = now - 2 * 86400
    late = world.session(("user", "we settled the eviction policy"), cwd=work)
    at = now - 400 * 86400
    said = _import(world, work, "imported_notes", "an eviction policy for the old cache", at, request.param)
    asker = world.session(cwd=work)
    plugin_settings(world.home, order_weight=5.0)
    enable_plugin(world.home)
    checkpoint(world.home)
    return {"early": early, "late": late, "said": said, "at": at, "asker": asker,
            "digest": db_digest(world.home / "state.db")}


@pytest.mark.parametrize("mode", MODES)
def test_an_imported_message_is_shown_and_bounded_at_its_own_time(imported, world, mode):
    day = date.fromtimestamp(imported["at"])
    res = call(SEARCH, {"query": "eviction policy old cache", "mode": mode}, session_id=imported["asker"])
    shown = {h["message_id"]: h for h in hits(res)}
    assert imported["said"] in shown, (mode, res)
    assert shown[imported["said"]]["when"].startswith(day.isoformat()), shown[imported["said"]]
    after = date.fromordinal(day.toordinal() + 1).isoformat()
    res = call(SEARCH, {"query": "eviction policy old cache", "mode": mode, "since": after}, session_id=imported["asker"])
    assert imported["said"] not in {h["message_id"] for h in hits(res)}, (mode, res)
    res = call(SEARCH, {"query": "eviction policy old cache", "mode": mode, "until": after}, session_id=imported["asker"])
    assert [h["message_id"] for h in hits(res)] == [imported["said"]], (mode, res)
    assert db_digest(world.home / "state.db") == imported["digest"]


@pytest.mark.parametrize("mode", ["keyword", "hybrid"])  # semantic alone finds the imported text likest
def test_an_imported_session_is_as_late_as_its_time(imported, mode):
    """A question that asks how something turned out lifts the later sessions: the session imported
    a year back is not the latest, whichever unit its times were written in. In milliseconds it was
    placed in the year 57805, past every other, and went first."""
    res = call(SEARCH, {"query": "what did we end up choosing for the cache eviction policy?", "mode": mode},
               session_id=imported["asker"])
    order = [r["session_id"] for r in res["results"]]
    assert order[0] != "imported_notes", (mode, res["results"])
    assert order.index(imported["late"]) < order.index("imported_notes"), (mode, order)



@pytest.mark.parametrize("mode", MODES)
def test_a_home_rebuilt_from_its_export_is_searched_as_it_now_is(world, work, mode):
    """``hermes sessions export``, a new state.db, ``hermes sessions import`` (a new machine, a damaged
    file): the sessions keep their ids and text, and their messages are numbered anew in the order
    imported. The walrus session's messages, 4-6 before, are 1-3 now: its count the same and its last
    id lower, which ids that only grow never give. The keyword index took that for nothing new, and
    the session was never found again."""
    import hermes_state

    world.project("App", work)
    pelican = world.session(("user", "the pelican harbour crane broke down"), ("assistant", "replace the hydraulic pump"),
                            ("user", "thanks, pelican crane fixed"), cwd=work)
    walrus = world.session(("user", "the walrus submarine periscope leaked"), ("assistant", "seal the hatch first"),
                           ("user", "thanks, walrus hatch sealed"), cwd=work)
    asker = world.session(cwd=work)
    enable_plugin(world.home)
    for query, sid in (("pelican harbour crane", pelican), ("walrus submarine periscope", walrus)):
        assert [r["session_id"] for r in call(SEARCH, {"query": query, "mode": mode}, session_id=asker)["results"]][:1] == [sid]
    wait_idle()
    exported = {s["id"]: s for s in world.db.export_all()}
    world.db.close()
    for suffix in ("", "-wal", "-shm"):
        (world.home / f"state.db{suffix}").unlink(missing_ok=True)
    world.db = hermes_state.SessionDB(db_path=world.home / "state.db")
    assert world.db.import_sessions([exported[walrus], exported[asker], exported[pelican]])["ok"]
    now = {m["id"]: (sid, m["content"]) for sid in (pelican, walrus) for m in world.db.get_messages(sid)}

    for query, sid in (("pelican harbour crane", pelican), ("walrus submarine periscope", walrus)):
        res = call(SEARCH, {"query": query, "mode": mode, "context": 2}, session_id=asker)
        assert [r["session_id"] for r in res["results"]][:1] == [sid], (mode, query, res)
        for result in res["results"]:
            for hit in [result, *result.get("more_hits", [])]:
                assert now[hit["message_id"]][0] == result["session_id"], (mode, hit)
            for line in result["context"]:
                assert now[line["message_id"]] == (result["session_id"], line["text"]), (mode, line)
