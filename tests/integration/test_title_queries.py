"""A query that is a session's title finds that session first, as Hermes's own session_search does
(``SessionDB.resolve_session_by_title``), through Hermes's real dispatch: a title from the sidebar
is how a person names a session, and its messages need not say the title's words. Before, the
session titled "Release checklist", whose messages speak of tagging v2.4, was found by no engine.
"""

from __future__ import annotations

import pytest

from hermes_world import call, enable_plugin

SEARCH = "project_history_search"
MODES = ("keyword", "hybrid", "semantic")


@pytest.fixture
def titled(world, work):
    other = work.parent / "elsewhere"
    other.mkdir()
    world.project("Shop", work)
    world.project("Elsewhere", other)
    out = {
        "checklist": world.session(("user", "what do we need before tagging v2.4?"),
                                   ("assistant", "run the migration dry-run and bump the version"),
                                   cwd=work, title="Release checklist"),
        "retries": world.session(("user", "how often do we retry a failed payment?"),
                                 ("assistant", "three times with backoff"), cwd=work, title="Retry policy"),
        "pipeline": world.session(("user", "the nightly job is red again"), ("assistant", "pin the runner image"),
                                  cwd=work, title="Fixing CI pipeline for API v2"),
        # The same title in another project: never this project's answer.
        "elsewhere": world.session(("user", "a checklist for the garden"), cwd=other, title="Garden checklist"),
    }
    out["asker"] = world.session(cwd=work)
    enable_plugin(world.home)
    return out


def _first(res: dict) -> dict:
    assert res["success"], res
    assert res["results"], res
    return res["results"][0]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("query", ["Release checklist", "release checklist", "“Release checklist”", "`Release checklist`"])
def test_a_query_that_is_a_title_finds_that_session_first(titled, mode, query):
    first = _first(call(SEARCH, {"query": query, "mode": mode}, session_id=titled["asker"]))
    assert first["session_id"] == titled["checklist"]
    assert first["score_source"] == "title"
    assert first["role"] == "user"  # shown by its first message, the user's
    assert "tagging v2.4" in first["snippet"]


@pytest.mark.parametrize("query", ["fixing ci pipeline for api v2", "FIXING CI PIPELINE FOR API V2",
                                   "Fixing Ci Pipeline For Api V2", "fixing CI pipeline for API v2"])
def test_a_title_typed_in_other_letters_case_finds_that_session_first(titled, query):
    # Capitalised words and acronyms ("CI", "API") are where a title typed from memory differs from
    # Hermes's; the case is the only difference, so the session is named.
    first = _first(call(SEARCH, {"query": query, "mode": "keyword"}, session_id=titled["asker"]))
    assert first["session_id"] == titled["pipeline"]
    assert first["score_source"] == "title"


def test_a_titled_session_the_engines_found_keeps_its_hits_and_goes_first(titled):
    res = call(SEARCH, {"query": "Retry policy", "mode": "keyword"}, session_id=titled["asker"])
    first = _first(res)
    assert first["session_id"] == titled["retries"]
    assert first["score_source"] != "title"  # the keyword engine found it ("retry"): its hit is shown


def test_the_latest_continuation_of_a_title_is_the_one_found(world, work, titled):
    # Hermes titles a conversation that goes on after compression "<title> #2", "#3".
    later = world.session(("user", "the v2.4 tag is pushed; now the changelog"), cwd=work,
                          parent=titled["checklist"], title="Release checklist #2")
    first = _first(call(SEARCH, {"query": "Release checklist", "mode": "keyword"}, session_id=titled["asker"]))
    assert first["session_id"] == later


@pytest.mark.parametrize("query", ["Garden checklist", "Release check", "Release checklist please", "Release checklist #x"])
def test_a_title_of_another_project_or_part_of_one_moves_nothing(titled, query):
    res = call(SEARCH, {"query": query, "mode": "keyword"}, session_id=titled["asker"])
    assert res["success"], res
    assert all(r["score_source"] != "title" for r in res["results"]), res
    assert titled["elsewhere"] not in {r["session_id"] for r in res["results"]}


def test_the_time_bounds_hold_for_a_titled_session(titled):
    res = call(SEARCH, {"query": "Release checklist", "mode": "keyword", "since": "2099-01-01"},
               session_id=titled["asker"])
    assert res["success"] and not res["results"], res


def test_the_asking_session_is_not_found_by_its_own_title(world, titled):
    world.db.set_session_title(titled["asker"], "Asking about releases")
    res = call(SEARCH, {"query": "Asking about releases", "mode": "keyword"}, session_id=titled["asker"])
    assert res["success"], res
    assert titled["asker"] not in {r["session_id"] for r in res["results"]}
