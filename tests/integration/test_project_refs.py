"""Naming a project in project_history_search and project_session_move: id, slug, name or folder.

Through Hermes's real plugin manager and dispatch, with projects made by
Hermes's own projects_db (which gives two projects named "Web" the slugs
``web`` and ``web-2``).
"""

from __future__ import annotations

import pytest

from hermes_world import call, enable_plugin, found, make_repo, session_rows

SEARCH = "project_history_search"
MOVE = "project_session_move"


@pytest.fixture
def named(world, work):
    app = work / "app"
    (app / "src").mkdir(parents=True)
    (app / "api" / "handlers").mkdir(parents=True)
    repo = make_repo(work / "tool")
    (repo / "src").mkdir()
    for name in ("web1", "web2", "old", "loose"):
        (work / name).mkdir()
    ids = {
        "App": world.project("App", app),
        "Api": world.project("Api", app / "api"),
        "Web1": world.project("Web", work / "web1"),
        "Web2": world.project("Web", work / "web2"),
        "Old": world.project("Old", work / "old"),
    }
    world.archive(ids["Old"])
    sessions = {
        "app": world.session(("user", "okapi notes in the app"), cwd=app / "src"),
        "api": world.session(("user", "okapi notes in the api"), cwd=app / "api"),
        "web1": world.session(("user", "okapi notes in the first web"), cwd=work / "web1"),
        "web2": world.session(("user", "okapi notes in the second web"), cwd=work / "web2"),
        "tool": world.session(("user", "okapi notes in the tool repo"), cwd=repo),
        "loose": world.session(("user", "okapi notes, a session to move"), cwd=work / "loose"),
    }
    enable_plugin(world.home)
    return {"work": work, "app": app, "repo": repo, "ids": ids, "s": sessions}


def searched(named, project: str) -> dict:
    return call(SEARCH, {"mode": "keyword", "query": "okapi", "project": project})


@pytest.mark.parametrize("spelling", ["{app}", "{app}/", "{app}//", "{app}/src", "{app}/src/"])
def test_a_projects_folder_or_one_inside_it_names_the_project(named, spelling):
    res = searched(named, spelling.format(app=named["app"]))
    assert res["project"] == {"kind": "explicit", "id": named["ids"]["App"], "name": "App"}, res
    assert found(res) == {named["s"]["app"]}


def test_a_folder_inside_a_nested_project_names_the_deepest_one(named):
    res = searched(named, str(named["app"] / "api" / "handlers"))
    assert res["project"]["id"] == named["ids"]["Api"] and found(res) == {named["s"]["api"]}


def test_a_folder_of_an_automatic_project_or_inside_its_repository(named):
    for folder in (named["repo"], named["repo"] / "src"):
        res = searched(named, str(folder))
        assert res["project"] == {"kind": "auto", "id": str(named["repo"]), "name": "tool"}, res
        assert found(res) == {named["s"]["tool"]}


def test_a_folder_in_no_project_is_unknown(named):
    res = searched(named, str(named["work"] / "nowhere"))
    assert res["success"] is False and res["error_code"] == "unknown_project", res


def test_a_name_two_projects_share_is_ambiguous_even_where_it_is_one_slug(named):
    ids = named["ids"]
    for ref in ("web", "Web", "WEB"):
        res = searched(named, ref)
        assert res["success"] is False and res["error_code"] == "ambiguous_project", res
        assert {(c["id"], c["slug"]) for c in res["candidates"]} == {(ids["Web1"], "web"), (ids["Web2"], "web-2")}
    assert found(searched(named, "web-2")) == {named["s"]["web2"]}
    assert found(searched(named, ids["Web1"])) == {named["s"]["web1"]}


def test_search_says_archived_like_move_does(named):
    res = searched(named, "old")
    assert res["success"] is False and res["error_code"] == "archived_project", res
    assert "archived" in res["error"]


def test_move_refuses_a_name_two_projects_share(named, world):
    sid = named["s"]["loose"]
    before = session_rows(world.home)[sid]["cwd"]
    res = call(MOVE, {"project": "web", "session": sid})
    assert res["success"] is False and res["error_code"] == "ambiguous_project", res
    assert len(res["candidates"]) == 2 and session_rows(world.home)[sid]["cwd"] == before
    res = call(MOVE, {"project": "web-2", "session": sid})
    assert res["moved"] and res["project"]["id"] == named["ids"]["Web2"], res


def test_move_takes_a_projects_folder_or_one_inside_it(named, world):
    sid = named["s"]["loose"]
    res = call(MOVE, {"project": str(named["repo"]), "session": sid})  # an automatic project's folder
    assert res["moved"] and res["project"] == {"kind": "auto", "id": str(named["repo"]),
                                               "name": named["repo"].name}, res
    res = call(MOVE, {"project": f"{named['app']}/", "session": sid})
    assert res["moved"] and res["project"]["id"] == named["ids"]["App"], res
    res = call(MOVE, {"project": str(named["app"] / "api" / "handlers"), "session": sid})
    assert res["moved"] and res["project"]["id"] == named["ids"]["Api"], res
    assert session_rows(world.home)[sid]["cwd"] == str(named["app"] / "api")


def test_a_folder_under_the_home_directory_may_start_with_a_tilde(world, tmp_path):
    from pathlib import Path

    folder = Path.home() / f"phr-{tmp_path.name}"  # the tests' own sandboxed HOME
    (folder / "src").mkdir(parents=True)
    try:
        pid = world.project("Tilde", folder)
        sid = world.session(("user", "okapi notes under the home directory"), cwd=folder / "src")
        enable_plugin(world.home)
        res = call(SEARCH, {"mode": "keyword", "query": "okapi", "project": f"~/{folder.name}/"})
        assert res["project"]["id"] == pid and found(res) == {sid}, res
    finally:
        import shutil

        shutil.rmtree(folder)


def test_a_folder_whose_name_holds_a_joiner_names_its_project_in_both_tools(world, work):
    """Persian writes a zero-width non-joiner inside words (کتاب‌ها) and an emoji sequence holds a
    zero-width joiner (👩‍💻): both are format characters, part of a folder's name. Made into spaces
    (as control characters are), the folder named no project: the search refused it, and since the
    move's ``project`` is cleaned as the search's, the move too."""
    folder = work / "کتاب\u200cها 👩\u200d💻"
    folder.mkdir()
    pid = world.project("Books", folder)
    sid = world.session(("user", "okapi notes in the books"), cwd=folder)
    loose = world.session(("user", "a loose okapi note"), cwd=work)
    enable_plugin(world.home)
    res = call(SEARCH, {"mode": "keyword", "query": "okapi", "project": str(folder)})
    assert res.get("project", {}).get("id") == pid and found(res) == {sid}, res
    res = call(MOVE, {"project": str(folder), "session": loose})
    assert res.get("moved") and res["project"]["id"] == pid, res
