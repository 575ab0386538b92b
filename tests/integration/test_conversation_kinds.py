"""Sessions of other kinds than a person's chat, through Hermes's real plugin manager and dispatch,
their rows written with Hermes's own ``SessionDB``: the sessions a cron job leaves, and a conversation
Hermes compressed (the fifteenth hostile sweep)."""

from __future__ import annotations

import pytest

from hermes_world import call, enable_plugin, hits

SEARCH = "project_history_search"


@pytest.fixture
def nightly(world, work):
    """Project App: the user's one session about the deploy, and 25 a nightly cron job ran in the
    project's folder (Hermes's ``workdir`` jobs), each saying "deploy" many times."""
    app = work / "app"
    app.mkdir()
    world.project("App", app)
    user = world.session(("user", "we decided to deploy with blue-green behind nginx"),
                         ("assistant", "ok, a blue-green deploy it is"), cwd=app, title="deploy choice")
    crons = [world.session(("user", f"Nightly deploy report {n}: deploy ok, deploy checks passed, next deploy tomorrow"),
                           ("assistant", "deploy report filed: deploy deploy"), cwd=app, source="cron",
                           title=f"nightly {n}")
             for n in range(25)]
    asker = world.session(cwd=app)
    enable_plugin(world.home)
    return {"user": user, "crons": crons, "asker": asker}


@pytest.mark.parametrize("mode", ["keyword", "hybrid"])
def test_a_cron_jobs_sessions_come_after_the_users_own(nightly, mode):
    """25 sessions of a nightly job, each repeating the word, took every place: the user's own session
    that holds it was not among the 5 (nor the 10) results, where Hermes's session_search ranks cron
    sessions after the user's (its #19434). Now they come after it, and still come. (Semantic mode
    orders the messages its engine brings, three a result asked for: here all of the cron jobs'.)"""
    for limit in (5, 10):
        res = call(SEARCH, {"query": "deploy", "mode": mode, "limit": limit}, session_id=nightly["asker"])
        sessions = [r["session_id"] for r in res["results"]]
        assert sessions[0] == nightly["user"], (limit, sessions)
        assert set(sessions[1:]) <= set(nightly["crons"]) and len(sessions) == limit


def test_a_cron_session_is_still_found_when_only_it_holds_the_words(nightly):
    res = call(SEARCH, {"query": "report filed", "mode": "keyword"}, session_id=nightly["asker"])
    assert {h["message_id"] for h in hits(res)} and {r["session_id"] for r in res["results"]} <= set(nightly["crons"])

