"""Sessions of other kinds than a person's chat, through Hermes's real plugin manager and dispatch,
their rows written with Hermes's own ``SessionDB``: the sessions a cron job leaves, and a conversation
Hermes compressed (the fifteenth hostile sweep)."""

from __future__ import annotations

import json

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



@pytest.mark.parametrize("query", ["what did we do last time?", "what did we do yesterday?"])
def test_a_question_of_a_time_alone_finds_the_users_sessions_before_the_cron_jobs(world, work, query):
    """Asked "what did we do last time?" in a project where a job runs every hour, the latest
    sessions were the job's runs: the user's own last conversation was not among five. Now the
    user's sessions from then come first, the job's after them."""
    from datetime import date, datetime, time, timedelta

    app = work / "app"
    app.mkdir()
    world.project("App", app)
    world._clock = datetime.combine(date.today() - timedelta(days=1), time(12)).timestamp()  # yesterday noon
    mine = world.session(("user", "we moved the ledger to postgres"), cwd=app, title="ledger move")
    crons = [world.session(("user", f"hourly check {n}: all green"), cwd=app, source="cron") for n in range(8)]
    asker = world.session(cwd=app)
    enable_plugin(world.home)
    res = call(SEARCH, {"query": query, "limit": 5}, session_id=asker)
    assert res["searched_with"] == "time", res
    sessions = [r["session_id"] for r in res["results"]]
    assert sessions[0] == mine and set(sessions[1:]) <= set(crons) and len(sessions) == 5, sessions


@pytest.fixture
def compressed_talk(world, work):
    """Project App: another conversation, and two Hermes compressed, asked from after the compression.
    ``rotated``: the legacy way (the first part ended ``compression`` and the talk went on in a child,
    which has no folder of its own); ``in_place``: the default of both lines (the same session, its
    earlier rows soft-archived as ``compacted``, a summary in their place)."""
    app = work / "app"
    app.mkdir()
    world.project("App", app)
    other = world.session(("user", "the ledger export runs nightly"), cwd=app, title="Exports")
    first = world.session(("user", "we chose postgres for the ledger tables"), ("assistant", "postgres ledger noted"),
                          cwd=app, title="Long talk")
    world.db.end_session(first, "compression")
    rotated = world.session(("assistant", "[summary] earlier we talked about storage"), parent=first,
                            title="Long talk #2")
    in_place = world.session(("user", "the zanzibar cache keeps ledger rows for an hour"),
                             ("assistant", "zanzibar cache noted"), cwd=app, title="Cache talk")
    world.db.archive_and_compact(in_place, [{"role": "assistant", "content": "[summary] we talked about caching"}])
    enable_plugin(world.home)
    return {"other": other, "first": first, "rotated": rotated, "in_place": in_place}


def test_the_part_before_a_rotation_is_history_marked_as_this_conversations(compressed_talk, world):
    """Asked from the part after Hermes compressed the conversation by rotation, the first part's
    words (no longer in the model's context, only a summary of them) were left out with the asking
    session, as one lineage: "nothing", or other sessions only, as if never said. Hermes 0.22's
    session_search finds such a part. Now the search does by default, and the result says it is this
    conversation's (it has an id and title of its own); its link reads back with core session_search."""
    from tools.session_search_tool import session_search

    talk = compressed_talk
    res = call(SEARCH, {"query": "postgres ledger", "mode": "keyword"}, session_id=talk["rotated"])
    first = next(r for r in res["results"] if r["session_id"] == talk["first"])
    assert first["this_conversation"] is True and "warnings" not in res
    assert all("this_conversation" not in r for r in res["results"] if r is not first)
    profile, _, sid = first["link"].removeprefix("@session:").partition("/")
    out = json.loads(session_search(session_id=sid, profile=profile, around_message_id=first["message_id"],
                                    db=world.db, current_session_id=talk["rotated"]))
    assert out["success"] and any(m["id"] == first["message_id"] for m in out["messages"])


def test_rows_compacted_in_place_are_said_and_searched_on_asking(compressed_talk):
    """Compressed in place (the same session, its earlier rows ``compacted``), the asking session is left
    out whole, its earlier part with it, and nothing said so. Now a warning says it and names
    include_current_session, which finds them, marked as this conversation's."""
    talk = compressed_talk
    res = call(SEARCH, {"query": "zanzibar ledger", "mode": "keyword"}, session_id=talk["in_place"])
    assert talk["in_place"] not in {r["session_id"] for r in res["results"]}
    assert res["current_session_excluded"] is True
    assert any("include_current_session: true" in w for w in res["warnings"]), res.get("warnings")
    res = call(SEARCH, {"query": "zanzibar ledger", "mode": "keyword", "include_current_session": True},
               session_id=talk["in_place"])
    mine = [r for r in res["results"] if r["session_id"] == talk["in_place"]]
    assert mine and mine[0]["this_conversation"] is True
    assert not any("include_current_session" in w for w in res.get("warnings", []))


@pytest.mark.parametrize("reason", ["session_reset", "idle", "daily"])
def test_a_chats_earlier_days_after_a_reset_are_history(world, work, reason):
    """Hermes 0.22's gateway starts a chat afresh on /new and on its idle or daily reset, the new
    session naming the old one as parent: a chat's every earlier day shares one lineage. Asked from
    today's session, every earlier day was left out as "this conversation", where Hermes's own
    session_search finds them (its #85756). Now they are searched, and not marked as this one's."""
    app = work / "app"
    app.mkdir()
    world.project("App", app)
    monday = world.session(("user", "we picked redis for the session store"), cwd=app, source="telegram")
    world.db.end_session(monday, reason)
    tuesday = world.session(("user", "what did we pick for sessions?"), parent=monday, source="telegram")
    enable_plugin(world.home)
    res = call(SEARCH, {"query": "redis session store", "mode": "keyword"}, session_id=tuesday)
    assert res["project"]["name"] == "App"
    assert [r["session_id"] for r in res["results"]] == [monday]
    assert "this_conversation" not in res["results"][0]


def test_a_conversation_never_compressed_is_left_out_without_a_warning(compressed_talk, world, work):
    asker = world.session(("user", "postgres again"), cwd=work / "app")
    res = call(SEARCH, {"query": "postgres", "mode": "keyword"}, session_id=asker)
    assert res["current_session_excluded"] is True and "warnings" not in res, res.get("warnings")
    # Another conversation's compression is not this one's.
    assert {r["session_id"] for r in res["results"]} == {compressed_talk["first"]}
    assert "this_conversation" not in res["results"][0]


@pytest.mark.parametrize("source", ["telegram", "discord", "cron"])
def test_a_chat_in_no_project_is_told_to_name_one(world, work, source):
    """A messaging app's chat (and a cron job without a folder) is in no project. Asked from there, the
    answer said only to move the chat into a project or use session_search: nothing said that naming a
    project in 'project' searches it from there, nor which there are, so an agent asked "what did we
    decide in App?" moved the chat. Now the answer names the argument and the profile's live projects."""
    for name in ("App", "Web Shop", "Old"):
        folder = work / name.lower().replace(" ", "-")
        folder.mkdir()
        project = world.project(name, folder)
        world.session(("user", f"websocket talk in {name}"), cwd=folder)
    world.archive(project)
    chat = world.session(("user", "what did we decide about the websocket in App?"), source=source)
    enable_plugin(world.home)
    res = call(SEARCH, {"query": "websocket"}, session_id=chat)
    assert res["success"] and res["outcome"] == "nothing" and res["project"]["kind"] == "home"
    assert "'project'" in res["reason"] and "App, Web Shop)" in res["reason"], res["reason"]
    named = call(SEARCH, {"query": "websocket", "project": "App", "mode": "keyword"}, session_id=chat)
    assert [r["snippet"] for r in named["results"]] == [">>>websocket<<< talk in App"]


def _branch(world, parent: str, title: str) -> str:
    """A /branch of ``parent`` as Hermes writes one (CLI, TUI and gateway alike): a new session marked
    ``_branched_from`` under its parent, the conversation so far copied into it message by message."""
    from hermes_world import new_session_id

    sid = new_session_id()
    world.db.create_session(session_id=sid, source="cli", model="test/model", model_config={"_branched_from": parent},
                            parent_session_id=parent)
    for message in world.db.get_messages(parent):
        world.say(sid, message["role"], message["content"])
    world.db.set_session_title(sid, title)
    return sid


@pytest.fixture
def ledger_talk(world, work):
    """Project App and its conversation about the ledger's database, which the user went on with in a
    /branch (Hermes ends the parent ``branched``): (the project's folder, the conversation)."""
    app = work / "app"
    app.mkdir()
    world.project("App", app)
    talk = world.session(("user", "which database for the ledger tables?"),
                         ("assistant", "we chose postgres for the ledger tables, with nightly dumps"),
                         cwd=app, title="Ledger")
    world.db.end_session(talk, "branched")
    return app, talk


@pytest.mark.parametrize("mode", ["keyword", "hybrid", "semantic"])
def test_a_branchs_copy_of_the_conversation_is_found_once_in_the_original(world, ledger_talk, mode):
    """Hermes starts a /branch as a copy of the conversation so far. Every branch's copy was a result
    of its own, the same messages again, taking the places of other sessions (here all three), and as
    the later it was lifted above the original for a question about how something turned out. Now a
    copy is read as the original's message: the conversation is found once, by its own session, and a
    branch for what it says itself."""
    app, talk = ledger_talk
    first = _branch(world, talk, "Ledger #2")
    second = _branch(world, talk, "Ledger #3")
    deeper = _branch(world, first, "Ledger #4")
    world.say(second, "user", "in this branch we try sqlite for the ledger instead")
    other = world.session(("user", "the postgres ledger dumps fill the disk"), cwd=app, title="Disk")
    asker = world.session(cwd=app)
    enable_plugin(world.home)
    res = call(SEARCH, {"query": "postgres ledger tables", "mode": mode, "limit": 3}, session_id=asker)
    sessions = [r["session_id"] for r in res["results"]]
    assert sessions[0] == talk and other in sessions, sessions
    assert not {first, deeper} & set(sessions), sessions
    for r in res["results"]:  # each message shown is its own session's
        assert {h["message_id"] for h in [r, *r.get("more_hits", [])]} <= {
            m["id"] for m in world.db.get_messages(r["session_id"])}, r
    res = call(SEARCH, {"query": "sqlite ledger", "mode": mode}, session_id=asker)
    assert second in [r["session_id"] for r in res["results"]], res["results"]


def test_a_branch_that_an_engine_ranks_first_by_its_copy_alone_gets_no_place_for_it(world, ledger_talk):
    """Hybrid keeps each engine's first two sessions among its results. The semantic side ranks the
    newer of two equal texts first, a branch's copy before its original, and the branch got the last
    place by that, shown by a message of its own that holds a word of the question by chance, where a
    session that speaks of the question belongs."""
    app, talk = ledger_talk
    branch = _branch(world, talk, "Ledger #2")
    world.say(branch, "user", "the garden fence needs green paint and new wood; the cat sleeps on the ledger")
    others = [world.session(("user", f"the ledger tables export to postgres ran fine on day {n}"), cwd=app)
              for n in range(14)]
    asker = world.session(cwd=app)
    enable_plugin(world.home)
    res = call(SEARCH, {"query": "postgres ledger tables", "mode": "hybrid"}, session_id=asker)
    sessions = [r["session_id"] for r in res["results"]]
    assert sessions[0] == talk and branch not in sessions and set(sessions[1:]) <= set(others), sessions


@pytest.mark.parametrize("mode", ["keyword", "hybrid", "semantic"])
def test_a_branchs_copy_is_not_the_later_word_on_how_it_turned_out(world, ledger_talk, mode):
    """A branch's copies bear the time of the branch. Asked how something turned out, the later sessions
    are lifted, and a copy of the first answer came before the session that tells how it ended (keyword
    mode), or before the original (hybrid, semantic: ties go to the newer). The copy is the original's
    message, at the original's time."""
    app, talk = ledger_talk
    later = world.session(("user", "which database do the ledger tables use now?"),
                          ("assistant", "the ledger tables moved to mysql after all"), cwd=app, title="Ledger move")
    branch = _branch(world, talk, "Ledger #2")
    world.say(branch, "user", "the garden fence needs green paint")
    asker = world.session(cwd=app)
    enable_plugin(world.home)
    res = call(SEARCH, {"query": "which database did the ledger tables end up using?", "mode": mode},
               session_id=asker)
    sessions = [r["session_id"] for r in res["results"]]
    assert sessions[:2] == [later, talk], sessions
