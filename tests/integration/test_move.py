"""project_session_move through Hermes's real plugin manager, dispatch, SessionDB and sidebar (Hermes 0.19.0)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap
import threading
from contextlib import closing, contextmanager
from pathlib import Path

import pytest

from hermes_world import (
    World,
    call,
    checkpoint,
    db_digest,
    enable_plugin,
    found,
    hermes_line,
    make_repo,
    only_on,
    plugin_module,
    plugin_settings,
    session_rows,
    sidebar_groups,
    store_state,
)

MOVE = "project_session_move"
SEARCH = "project_history_search"
# What update_session_cwd writes (0.22 also counts the row's git metadata generations).
GIT_FIELDS = {"cwd", "git_branch", "git_repo_root", "git_metadata_generation"}
# Hermes's sidebar grouping is read through tui_gateway.server.
SIDEBAR = only_on((0, 19), "Hermes's sidebar grouping comes from tui_gateway.server, which on the 0.22 line "
                           "needs Python 3.14 to import")


def attributions(home: Path) -> dict[str, tuple]:
    """Every session's attribution as the plugin resolves it right now."""
    from project_history_recall.hermes import paths, statedb
    from project_history_recall.scope import resolve as scope

    with statedb.reading(paths.state_db_path(home)) as (conn, _shape):
        amap = scope.attribution_map(home, conn)
        return {sid: a.key for sid, a in amap.by_session.items()}


def hermes_rows(home: Path) -> dict:
    """Every row of every table of state.db but ``state_meta``, where Hermes 0.22's
    SessionDB stamps a new file generation each time it opens the file."""
    with closing(sqlite3.connect(f"file:{home / 'state.db'}?mode=ro", uri=True)) as conn:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' "
                                             "AND name != 'state_meta' AND sql NOT LIKE 'CREATE VIRTUAL%'")]
        return {t: sorted(map(repr, conn.execute(f'SELECT * FROM "{t}"'))) for t in tables}


@contextmanager
def unchanged_everywhere(world: World):
    """Assert that state.db's rows and the attribution store are unchanged across the block.

    (A move that fails writes nothing, but it has opened Hermes's SessionDB,
    which on 0.22 records that it opened the file.)"""
    world.db.close()
    before = hermes_rows(world.home), store_state(world.home), attributions(world.home)
    yield
    assert (hermes_rows(world.home), store_state(world.home), attributions(world.home)) == before


# --- the move and what search sees ------------------------------------------------


def test_move_then_search_from_both_projects(ab, world):
    assert found(call(SEARCH, {"mode": "keyword", "query": "zebra"}, session_id=ab["ask_a"])) == {ab["sa"]}
    assert found(call(SEARCH, {"mode": "keyword", "query": "zebra"}, session_id=ab["ask_b"])) == {ab["sb"]}
    others_before = {k: v for k, v in attributions(world.home).items() if k != ab["sa"]}

    res = call(MOVE, {"project": "Beta", "session": ab["sa"]}, session_id=ab["ask_a"])
    assert res["success"] and res["moved"], res
    assert res["project"] == {"kind": "explicit", "id": ab["B"], "name": "Beta"}
    assert res["previous_project"]["id"] == ab["A"]
    assert res["cwd"] == str(ab["beta"]) and res["previous_cwd"] == str(ab["alpha"] / "src")
    assert res["link"] == f"@session:default/{ab['sa']}" and res["sidebar"]["agrees"] is True

    # Acceptance: the target project finds the session's messages, the source no longer does…
    assert found(call(SEARCH, {"mode": "keyword", "query": "zebra"}, session_id=ab["ask_b"])) == {ab["sa"], ab["sb"]}
    assert found(call(SEARCH, {"mode": "keyword", "query": "zebra"}, session_id=ab["ask_a"])) == set()
    assert found(call(SEARCH, {"mode": "keyword", "query": "parsing"}, session_id=ab["ask_a"])) == {ab["sa2"]}
    # …and no other session's attribution changed.
    after = attributions(world.home)
    assert after[ab["sa"]] == ("explicit", ab["B"])
    assert {k: v for k, v in after.items() if k != ab["sa"]} == others_before


def test_session_can_be_named_by_id_link_or_title(ab):
    by_link = call(MOVE, {"project": ab["B"], "session": f"@session:default/{ab['sa']}"}, session_id=ab["ask_a"])
    assert by_link["moved"] and by_link["session_id"] == ab["sa"]
    by_title = call(MOVE, {"project": "alpha", "session": "  “Alpha zebra”  "}, session_id=ab["ask_a"])
    assert by_title["moved"] and by_title["session_id"] == ab["sa"] and by_title["project"]["id"] == ab["A"]
    by_folded_title = call(MOVE, {"project": "beta", "session": "ALPHA ZEBRA"}, session_id=ab["ask_a"])
    assert by_folded_title["moved"] and by_folded_title["session_id"] == ab["sa"]
    # The original design's short link form, with the full stop of the sentence it was pasted from.
    back = call(MOVE, {"project": "Alpha", "session": f"@session:{ab['sa']}."}, session_id=ab["ask_a"])
    assert back["moved"] and back["session_id"] == ab["sa"]


def test_titles_are_read_a_batch_at_a_time_and_still_found(ab, world, work, monkeypatch):
    for title in ("Alpha one", "Alpha two", "Beta three", "Gamma four"):
        world.session(cwd=work, title=title)
    assert call(MOVE, {"project": "beta", "session": ab["sa"]}, session_id=ab["ask_a"])["moved"]  # loads the plugin
    # Two titles a statement: the walk over titled sessions crosses several batches.
    monkeypatch.setattr(plugin_module("hermes.statedb"), "READ_BATCH", 2)
    back = call(MOVE, {"project": "alpha", "session": "alpha zebra"}, session_id=ab["ask_a"])
    assert back["moved"] and back["session_id"] == ab["sa"]
    several = call(MOVE, {"project": "beta", "session": "alpha"}, session_id=ab["ask_a"])
    assert several["error_code"] == "ambiguous_session"
    assert {c["title"] for c in several["candidates"]} == {"Alpha zebra", "Alpha other", "Alpha one", "Alpha two"}


def test_default_is_the_calling_session(ab):
    res = call(MOVE, {"project": "Beta"}, session_id=ab["ask_a"])
    assert res["moved"] and res["session_id"] == ab["ask_a"]
    # The TUI passes its durable key as task_id; an unknown session_id falls through to it.
    res = call(MOVE, {"project": "Alpha"}, session_id="20990101_000000_ffffff", task_id=ab["ask_a"])
    assert res["moved"] and res["session_id"] == ab["ask_a"]


@pytest.mark.parametrize("key", ["session_id", "id", "sessionId", "conversation"])
def test_a_session_named_under_another_key_moves_nothing(ab, world, key):
    """The search's results call a session ``session_id``, and a model copied that key: the move read
    no ``session`` and moved the asking conversation into Beta instead of the one named (the thirteenth
    hostile sweep). Without ``session``, any other argument is refused, saying which key names it."""
    with unchanged_everywhere(world):
        res = call(MOVE, {"project": "Beta", key: ab["sa"]}, session_id=ab["ask_a"])
    assert res["success"] is False and res["error_code"] == "bad_argument", res
    assert f"'{key}'" in res["error"] and "'session'" in res["error"] and "Nothing was moved" in res["error"]


def test_an_extra_argument_beside_the_session_is_no_reason_to_refuse(ab):
    res = call(MOVE, {"project": "Beta", "session": ab["sa"], "reason": "the user asked"}, session_id=ab["ask_a"])
    assert res["moved"] and res["session_id"] == ab["sa"]


def test_a_subagent_moves_the_conversation_that_delegated_it(ab, world):
    child = "20260901_777777_aaaaaa"
    world.db.create_session(child, "subagent", model="m", parent_session_id=ab["ask_a"],
                            model_config={"_delegate_from": ab["ask_a"]})
    child_row = session_rows(world.home)[child]  # 0.22 copies the parent's folder into it, 0.19.0 leaves none
    res = call(MOVE, {"project": "Beta"}, session_id=child)
    assert res["moved"] and res["session_id"] == ab["ask_a"] and "subagent" in res["notes"][0]
    assert session_rows(world.home)[child] == child_row


def compressed_conversation(world: World, folder: Path) -> dict:
    """One conversation Hermes compressed twice the legacy way (each part ended with 'compression' and
    went on in a child), and a /branch off its first part, all in ``folder``."""
    root = world.session(("user", "pangolin early part of the conversation"), cwd=folder, title="Long talk")
    world.db.end_session(root, "compression")
    middle = world.session(("user", "pangolin middle part"), cwd=folder, parent=root)
    world.db.end_session(middle, "compression")
    tip = world.session(("user", "pangolin latest part"), cwd=folder, parent=middle)
    branch = "20260901_777777_b4a9c0"
    world.db.create_session(branch, "cli", model="test/model", model_config={"_branched_from": root},
                            cwd=str(folder), parent_session_id=root)
    world.say(branch, "user", "pangolin on a branch of its own")
    return {"root": root, "middle": middle, "tip": tip, "branch": branch}


def test_a_compressed_conversation_moves_whole(ab, world):
    """Hermes lists a conversation compressed into a chain of sessions once, by its latest part, whose folder
    groups it in the sidebar (``list_sessions_rich`` projects the chain's root forward to its tip). Moving
    the conversation moved only the part named (the calling one, the tip): the sidebar showed it in the new
    project, while its earlier parts, most of what was said, were still searched in the old one, and
    moving the root by its title moved nothing the sidebar shows. Every part moves now; a branch, a
    conversation of its own, does not."""
    conv = compressed_conversation(world, ab["alpha"])
    parts = {conv["root"], conv["middle"], conv["tip"]}
    rows_before = session_rows(world.home)

    res = call(MOVE, {"project": "Beta"}, session_id=conv["tip"])
    assert res["moved"] and res["session_id"] == conv["tip"], res
    assert {p["session_id"] for p in res["conversation_parts"] if p["moved"]} == {conv["root"], conv["middle"]}, res
    rows = session_rows(world.home)
    assert {sid for sid in parts if rows[sid]["cwd"] == str(ab["beta"])} == parts
    assert rows[conv["branch"]] == rows_before[conv["branch"]]
    pangolin = {"mode": "keyword", "query": "pangolin"}
    assert found(call(SEARCH, pangolin, session_id=ab["ask_b"])) == parts
    assert found(call(SEARCH, pangolin, session_id=ab["ask_a"])) == {conv["branch"]}
    if hermes_line() == (0, 19):  # Hermes's sidebar grouping imports on 0.19.0 only (SIDEBAR)
        assert sidebar_groups(world.db)[conv["tip"]] == ab["B"]

    back = call(MOVE, {"project": "Alpha", "session": "Long talk"}, session_id=ab["ask_b"])
    assert back["moved"] and back["session_id"] == conv["root"], back
    assert {p["session_id"] for p in back["conversation_parts"] if p["moved"]} == {conv["middle"], conv["tip"]}
    assert found(call(SEARCH, pangolin, session_id=ab["ask_a"])) == parts | {conv["branch"]}
    assert found(call(SEARCH, pangolin, session_id=ab["ask_b"])) == set()
    if hermes_line() == (0, 19):
        assert sidebar_groups(world.db)[conv["tip"]] == ab["A"]


def test_a_conversation_hermes_moved_by_its_latest_part_is_finished_by_a_move(ab, world):
    """Hermes's desktop moves the live session, a compressed conversation's latest part, alone
    (``update_session_cwd``), and so did this plugin's moves before: moving the conversation to where
    that part already is moves the rest, and says so."""
    conv = compressed_conversation(world, ab["alpha"])
    world.db.update_session_cwd(conv["tip"], str(ab["beta"]))
    res = call(MOVE, {"project": "Beta"}, session_id=conv["tip"])
    assert res["success"] and res["moved"] is False and res["outcome"] == "done", res
    assert {p["session_id"] for p in res["conversation_parts"] if p["moved"]} == {conv["root"], conv["middle"]}
    assert "other parts of its conversation were moved" in res["message"], res
    assert found(call(SEARCH, {"mode": "keyword", "query": "pangolin"}, session_id=ab["ask_b"])) == {
        conv["root"], conv["middle"], conv["tip"]}
    again = call(MOVE, {"project": "Beta"}, session_id=conv["tip"])
    assert again["outcome"] == "nothing" and not any(p["moved"] for p in again["conversation_parts"]), again


def test_a_compressed_conversation_named_by_the_start_of_its_title_moves_whole(ab, world):
    """Hermes titles each part of a compressed conversation after the first, numbered ('Long talk',
    'Long talk #2', 'Long talk #3': ``get_next_title_in_lineage``). Named by the start of that title, as
    a person remembers a long one, the move was refused as ambiguous between sessions that are one
    conversation, which it moves whole. It moves now; the start of titles of two conversations is
    still ambiguous."""
    conv = compressed_conversation(world, ab["alpha"])
    for part in (conv["middle"], conv["tip"]):
        world.db.set_session_title(part, world.db.get_next_title_in_lineage("Long talk"))
    assert session_rows(world.home)[conv["tip"]]["title"] == "Long talk #3"
    res = call(MOVE, {"project": "Beta", "session": "long ta"}, session_id=ab["ask_b"])
    assert res["moved"] and res["session_id"] == conv["root"], res
    assert {p["session_id"] for p in res["conversation_parts"] if p["moved"]} == {conv["middle"], conv["tip"]}, res
    world.session(cwd=ab["alpha"], title="Long table of contents")
    res = call(MOVE, {"project": "Alpha", "session": "long ta"}, session_id=ab["ask_b"])
    assert res["error_code"] == "ambiguous_session" and len(res["candidates"]) == 4, res


def test_a_part_that_cannot_move_is_said_and_the_next_move_finishes_the_conversation(ab, world):
    conv = compressed_conversation(world, ab["alpha"])
    with closing(sqlite3.connect(world.home / "state.db")) as conn:
        conn.execute(f"CREATE TRIGGER refuse_root BEFORE UPDATE OF cwd ON sessions WHEN OLD.id = '{conv['root']}' "
                     "BEGIN SELECT RAISE(ABORT, 'refused by the test'); END")
        conn.commit()
    res = call(MOVE, {"project": "Beta"}, session_id=conv["tip"])
    assert res["moved"] and res["outcome"] == "done", res
    parts = {p["session_id"]: p for p in res["conversation_parts"]}
    assert parts[conv["middle"]]["moved"] and not parts[conv["root"]]["moved"], res
    assert "refused by the test" in parts[conv["root"]]["error"], res
    assert any(conv["root"] in note and "run the move again" in note for note in res["notes"]), res
    assert session_rows(world.home)[conv["root"]]["cwd"] == str(ab["alpha"])
    with closing(sqlite3.connect(world.home / "state.db")) as conn:
        conn.execute("DROP TRIGGER refuse_root")
        conn.commit()
    again = call(MOVE, {"project": "Beta"}, session_id=conv["tip"])
    assert again["outcome"] == "done" and [p["session_id"] for p in again["conversation_parts"] if p["moved"]] == [
        conv["root"]], again
    assert found(call(SEARCH, {"mode": "keyword", "query": "pangolin"}, session_id=ab["ask_b"])) == {
        conv["root"], conv["middle"], conv["tip"]}


@SIDEBAR
def test_home_bucket_session_becomes_searchable_from_the_project(ab, world):
    assert call(SEARCH, {"mode": "keyword", "query": "quokka"}, session_id=ab["tg"])["project"]["kind"] == "home"
    assert found(call(SEARCH, {"mode": "keyword", "query": "quokka"}, session_id=ab["ask_b"])) == set()
    res = call(MOVE, {"project": "Beta", "session": "Telegram quokka"}, session_id=ab["ask_b"])
    assert res["moved"] and res["previous_project"]["kind"] == "home" and res["previous_cwd"] is None
    assert found(call(SEARCH, {"mode": "keyword", "query": "quokka"}, session_id=ab["ask_b"])) == {ab["tg"]}
    assert session_rows(world.home)[ab["tg"]]["cwd"] == str(ab["beta"])
    assert sidebar_groups(world.db)[ab["tg"]] == ab["B"]


def test_moving_into_the_project_it_is_already_in_is_a_no_op(ab, world):
    with unchanged_everywhere(world):
        res = call(MOVE, {"project": "alpha", "session": ab["sa"]}, session_id=ab["ask_a"])
    assert res["success"] is True and res["moved"] is False and res["reason"] == "already_in_project"
    assert "already in project 'Alpha'" in res["message"]


# --- validation: every error changes nothing anywhere ----------------------------------


@pytest.fixture
def odd_projects(ab, world, work):
    """Projects a move must refuse, and a previous move so the attribution store already exists."""
    archived_dir = work / "archived"
    archived_dir.mkdir()
    world.archive(world.project("Old", archived_dir))
    world.project("Twins", work / "twin1")
    world.project("Twins", work / "twin2")
    world.project("Empty")
    gone = work / "gone"
    gone.mkdir()
    world.project("Gone", gone)
    gone.rmdir()
    world.db.set_session_title(ab["sb"], "Case")
    world.session(cwd=work, title="CASE")
    other_home = world.home / "profiles" / "work"
    other_home.mkdir(parents=True)
    from hermes_state import SessionDB

    other = SessionDB(db_path=other_home / "state.db")
    other.create_session("20260901_555555_0ther0", "cli", cwd=str(work))
    other.close()
    assert call(MOVE, {"project": "Beta", "session": ab["sa2"]}, session_id=ab["ask_a"])["moved"]
    return {"other_id": "20260901_555555_0ther0"}


@pytest.mark.parametrize("args,code", [
    ({"project": "nope"}, "unknown_project"),
    ({"project": "TWINS"}, "ambiguous_project"),
    ({"project": "Old"}, "archived_project"),
    ({"project": "Empty"}, "no_folder"),
    ({"project": "Gone"}, "folder_missing"),
    ({"project": "Beta", "session": "20990101_000000_abcdef"}, "unknown_session"),
    ({"project": "Beta", "session": "no such title"}, "unknown_session"),
    ({"project": "Beta", "session": "case"}, "ambiguous_session"),
    ({"project": "Beta", "session": "OTHER"}, "other_profile"),
    ({"project": "Beta", "session": "@session:work/OTHER"}, "other_profile"),
    ({"project": "Beta", "session": "@session:elsewhere/20990101_000000_abcdef"}, "other_profile"),
    ({}, "bad_argument"),
    ({"project": 5}, "bad_argument"),
    ({"project": "Beta", "session": ["x"]}, "bad_argument"),
])
def test_every_validation_error_changes_nothing(ab, world, odd_projects, args, code):
    args = {k: v.replace("OTHER", odd_projects["other_id"]) if isinstance(v, str) else v for k, v in args.items()}
    with unchanged_everywhere(world):
        res = call(MOVE, args, session_id=ab["ask_a"])
    assert res["success"] is False and res["error_code"] == code, res
    assert res["error"] and "Traceback" not in res["error"]
    if code == "unknown_project":
        assert {"Alpha", "Beta", "Twins"} <= {c["name"] for c in res["candidates"]}
        assert "Old" not in {c["name"] for c in res["candidates"]}
    if code == "ambiguous_project":
        assert [c["name"] for c in res["candidates"]] == ["Twins", "Twins"]
    if code == "ambiguous_session":
        assert {c["title"] for c in res["candidates"]} == {"Case", "CASE"}
    if code == "other_profile":
        assert "'work'" in res["error"] or "'elsewhere'" in res["error"]


def test_a_project_folder_that_is_a_file_is_refused_as_what_it_is(ab, world, work):
    """A project's folder that is a file (``projects_db`` takes any path; the folder replaced by a file
    since) is refused with ``folder_missing``, saying it is a file: "does not exist on this machine", as
    it said before, sent the user looking for something that is there."""
    plain = work / "notes.txt"
    plain.write_text("a file, not a folder\n", encoding="utf-8")
    world.project("Filed", plain)
    linked = work / "to-a-file"
    linked.symlink_to(plain)
    world.project("Linked file", linked)
    for name, folder in (("Filed", plain), ("Linked file", linked)):
        with unchanged_everywhere(world):
            res = call(MOVE, {"project": name, "session": ab["sa"]}, session_id=ab["ask_a"])
        assert res["success"] is False and res["error_code"] == "folder_missing", res
        assert f"{folder}, which is a file, not a folder" in res["error"], res
        assert "does not exist" not in res["error"], res


def test_no_calling_session_and_no_session_argument(ab, world):
    with unchanged_everywhere(world):
        res = call(MOVE, {"project": "Beta"})
        assert res["success"] is False and res["error_code"] == "no_session"
        res = call(MOVE, {"project": "Beta"}, session_id="20990101_000000_eeeeee")
        assert res["success"] is False and res["error_code"] == "unknown_session"


def refuse_cwd_updates(home: Path) -> None:
    """Make Hermes's own UPDATE of a session's cwd fail for real: a trigger in the test's state.db."""
    conn = sqlite3.connect(home / "state.db")
    conn.execute("CREATE TRIGGER refuse_cwd BEFORE UPDATE OF cwd ON sessions "
                 "BEGIN SELECT RAISE(ABORT, 'refused by the test'); END")
    conn.commit()
    conn.close()


def test_a_failed_hermes_write_rolls_the_record_back(ab, world):
    refuse_cwd_updates(world.home)
    with unchanged_everywhere(world):
        res = call(MOVE, {"project": "Beta", "session": ab["sa"]}, session_id=ab["ask_a"])
    assert res["success"] is False and res["error_code"] == "hermes_write_failed"
    assert "refused by the test" in res["error"] and "nothing was changed" in res["error"]
    assert not store_state(world.home).get("records")
    assert found(call(SEARCH, {"mode": "keyword", "query": "zebra"}, session_id=ab["ask_b"])) == {ab["sb"]}


def test_a_failed_write_keeps_earlier_records_byte_for_byte(ab, world):
    assert call(MOVE, {"project": "Beta", "session": ab["sa2"]}, session_id=ab["ask_a"])["moved"]
    refuse_cwd_updates(world.home)
    with unchanged_everywhere(world):
        res = call(MOVE, {"project": "Beta", "session": ab["sa"]}, session_id=ab["ask_a"])
    assert res["error_code"] == "hermes_write_failed"
    assert [r[0] for r in store_state(world.home)["records"]] == [ab["sa2"]]


# --- state.db after a successful move --------------------------------------------------


def test_only_that_sessions_cwd_fields_change_written_by_hermes(ab, world, monkeypatch):
    from hermes_state import SessionDB

    calls = []
    real = SessionDB.update_session_cwd

    def spy(self, *args, **kwargs):  # pass-through: Hermes's own method does the write
        calls.append(args)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(SessionDB, "update_session_cwd", spy)
    rows_before = session_rows(world.home)
    world.db.close()
    checkpoint(world.home)
    messages_before = db_digest(world.home / "state.db")["counts"]
    res = call(MOVE, {"project": "Beta", "session": ab["sa"]}, session_id=ab["ask_a"])
    assert res["moved"] and res["written_by"] == "SessionDB.update_session_cwd"
    rows_after = session_rows(world.home)
    assert calls == [(ab["sa"], str(ab["beta"]), None, str(ab["beta"]))]
    assert {k for k in rows_before if rows_before[k] != rows_after[k]} == {ab["sa"]}
    changed = {c for c in rows_before[ab["sa"]] if rows_before[ab["sa"]][c] != rows_after[ab["sa"]][c]}
    assert changed <= GIT_FIELDS and "cwd" in changed
    assert db_digest(world.home / "state.db")["counts"] == messages_before


# --- Hermes 0.19.0's stale git_repo_root and the sidebar -----------------------------------


@SIDEBAR
def test_stale_git_root_is_real_on_0_19_and_the_move_avoids_it(world, work):
    """Host doc §9: A = a repo, B = its parent. A plain cwd write leaves the session in A."""
    parent = work / "parent"
    repo = make_repo(parent / "repo")
    a = world.project("A", repo)
    b = world.project("B", parent)
    naive = world.session(("user", "naive"), cwd=repo, root=repo)
    moved = world.session(("user", "moved"), cwd=repo, root=repo)
    world.db.update_session_cwd(moved, str(repo), git_branch="feature-x")
    ask_b = world.session(cwd=parent / "elsewhere")
    enable_plugin(world.home)

    world.db.update_session_cwd(naive, str(parent))  # what a move without the workaround does
    assert sidebar_groups(world.db)[naive] == a

    res = call(MOVE, {"project": "B", "session": moved}, session_id=ask_b)
    assert res["moved"] and res["sidebar"]["agrees"] is True, res
    assert any("cannot clear the old git root" in n for n in res["notes"])
    assert any("feature-x" in n for n in res["notes"])
    row = session_rows(world.home)[moved]
    assert (row["cwd"], row["git_repo_root"]) == (str(parent), str(parent))
    assert sidebar_groups(world.db)[moved] == b
    assert attributions(world.home)[moved] == ("explicit", b)


@SIDEBAR
def test_moving_into_a_repository_records_its_root_and_branch(ab, world):
    res = call(MOVE, {"project": "Alpha", "session": ab["sb"]}, session_id=ab["ask_b"])
    assert res["moved"] and res["git"] == {"branch": "main", "repo_root": str(ab["alpha"])}
    row = session_rows(world.home)[ab["sb"]]
    assert (row["cwd"], row["git_branch"], row["git_repo_root"]) == (str(ab["alpha"]), "main", str(ab["alpha"]))
    assert sidebar_groups(world.db)[ab["sb"]] == ab["A"] and res["sidebar"]["agrees"]


@only_on((0, 19), "two projects share a folder; 0.22's projects_db refuses a folder another project has")
def test_sidebar_disagreement_is_reported(ab, world, work):
    shared = work / "shared"
    shared.mkdir()
    first = world.project("First", shared)
    second = world.project("Second", shared)
    res = call(MOVE, {"project": "Second", "session": ab["sb"]}, session_id=ab["ask_b"])
    assert res["moved"] and res["sidebar"]["agrees"] is False
    assert res["sidebar"]["project"]["id"] == first and "created first" in res["sidebar"]["reason"]
    assert sidebar_groups(world.db)[ab["sb"]] == first  # Hermes's sidebar really does say so
    # The plugin follows the move: the session is searched as part of Second.
    assert ab["sb"] in found(call(SEARCH, {"mode": "keyword", "query": "yak", "project": second}, session_id=ab["ask_a"]))


# --- the live GUI session: Hermes's workspace callback --------------------------------


class _Transport:
    def __init__(self):
        self.frames = []

    def write(self, obj):
        self.frames.append(obj)
        return True


@contextmanager
def live_gui_session(home: Path, session_id: str):
    """A session open in this process's TUI gateway, moved by Hermes's real _apply_project_workspace."""
    from tools import project_tools
    from tools.terminal_tool import clear_task_env_overrides
    from tui_gateway import server

    transport = _Transport()
    live = {"session_key": session_id, "profile_home": str(home), "transport": transport, "agent": None}
    with server._sessions_lock:
        server._sessions["gui-1"] = live
    project_tools.set_project_workspace_callback(server._apply_project_workspace)
    try:
        yield live, transport
    finally:
        project_tools.set_project_workspace_callback(None)
        with server._sessions_lock:
            server._sessions.pop("gui-1", None)
        for thread in threading.enumerate():
            if thread.name == "git-meta":
                thread.join(30)
        clear_task_env_overrides(session_id)


@only_on((0, 19), "a live GUI session lives in tui_gateway.server, which on the 0.22 line needs Python 3.14")
def test_live_gui_session_moves_through_the_workspace_callback(ab, world):
    with live_gui_session(world.home, ab["ask_a"]) as (live, transport):
        res = call(MOVE, {"project": "Beta"}, session_id=ab["ask_a"], task_id=ab["ask_a"])
        assert res["moved"] and "workspace callback" in res["live_session"]
        assert live["cwd"] == str(ab["beta"]) and live["explicit_cwd"] is True
        info = [f["params"] for f in transport.frames if f["params"]["type"] == "session.info"]
        assert info and info[-1]["payload"]["cwd"] == str(ab["beta"])
    assert session_rows(world.home)[ab["ask_a"]]["cwd"] == str(ab["beta"])
    assert found(call(SEARCH, {"mode": "keyword", "query": "zebra"}, session_id=ab["ask_a"])) == {ab["sb"]}


# --- concurrency ---------------------------------------------------------------------


def test_a_search_that_began_before_the_move_keeps_the_old_attribution(ab, monkeypatch):
    keyword = plugin_module("keyword.engine")
    real = keyword.search
    entered, release = threading.Event(), threading.Event()

    def paused(*args, **kwargs):  # scope is resolved; hold the search here until the move is done
        if not entered.is_set():
            entered.set()
            assert release.wait(60)
        return real(*args, **kwargs)

    monkeypatch.setattr(keyword, "search", paused)
    box = {}
    searcher = threading.Thread(target=lambda: box.update(res=call(SEARCH, {"mode": "keyword", "query": "zebra"},
                                                                   session_id=ab["ask_b"])))
    searcher.start()
    assert entered.wait(60)
    moved = call(MOVE, {"project": "Beta", "session": ab["sa"]}, session_id=ab["ask_a"])
    release.set()
    searcher.join(60)
    assert moved["moved"]
    assert found(box["res"]) == {ab["sb"]}  # began before: old attribution
    assert found(call(SEARCH, {"mode": "keyword", "query": "zebra"}, session_id=ab["ask_b"])) == {ab["sa"], ab["sb"]}


def test_searches_running_during_moves_always_see_one_consistent_attribution(ab):
    before, after = {ab["sb"]}, {ab["sa"], ab["sb"]}
    outcomes, errors = [], []

    def search_loop():
        for _ in range(15):
            res = call(SEARCH, {"mode": "keyword", "query": "zebra"}, session_id=ab["ask_b"])
            if res.get("success"):
                outcomes.append({r["session_id"] for r in res["results"]})
            else:
                errors.append(res)

    threads = [threading.Thread(target=search_loop) for _ in range(3)]
    for t in threads:
        t.start()
    try:
        for n in range(6):
            res = call(MOVE, {"project": "Beta" if n % 2 == 0 else "Alpha", "session": ab["sa"]},
                       session_id=ab["ask_a"])
            assert res["moved"], res
    finally:
        for t in threads:
            t.join(120)
    assert not errors and len(outcomes) == 45
    assert all(o in (before, after) for o in outcomes)
    assert found(call(SEARCH, {"mode": "keyword", "query": "zebra"}, session_id=ab["ask_b"])) == before  # ended back in Alpha


# --- persistence ---------------------------------------------------------------------------


def test_the_record_survives_a_restart(ab, world):
    assert call(MOVE, {"project": "Beta", "session": ab["sa"]}, session_id=ab["ask_a"])["moved"]
    script = textwrap.dedent(f"""
        import json
        from hermes_cli import plugins
        import model_tools
        plugins.discover_plugins(force=True)
        res = json.loads(model_tools.handle_function_call({SEARCH!r}, {{"query": "zebra"}},
                                                          session_id={ab['ask_b']!r}))
        print(json.dumps(sorted({{r["session_id"] for r in res["results"]}})))
    """)
    env = dict(os.environ, HERMES_HOME=str(world.home))
    out = subprocess.run([sys.executable, "-c", script], env=env, cwd=world.home, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.strip().splitlines()[-1]) == sorted([ab["sa"], ab["sb"]])


# --- back into an automatic project -----------------------------------------------------


def printed_auto_names(home: Path) -> set[str]:
    """The automatic projects as ``projects`` prints them (name, then '(auto)')."""
    overview = plugin_module("overview")
    return {p["name"] for p in overview.list_projects(home)["projects"] if p["kind"] == "auto"}


@pytest.mark.parametrize("name", ["notes", "notes (auto)", "NOTES", "NOTES (AUTO)"])
def test_out_to_an_explicit_project_and_back_by_the_printed_name(autos, world, name, monkeypatch):
    from hermes_state import SessionDB

    n1 = autos["n1"]
    assert attributions(world.home)[n1] == ("auto", str(autos["notes"]))
    assert call(MOVE, {"project": "P", "session": n1}, session_id=autos["ask_p"])["moved"]
    assert attributions(world.home)[n1] == ("explicit", autos["P"])
    assert "notes" in printed_auto_names(world.home)

    calls, real = [], SessionDB.update_session_cwd
    monkeypatch.setattr(SessionDB, "update_session_cwd",
                        lambda self, *a, **k: (calls.append(a), real(self, *a, **k))[1])
    rows_before = session_rows(world.home)
    world.db.close()
    res = call(MOVE, {"project": name, "session": "Notes walrus"}, session_id=autos["ask_p"])
    assert res["success"] and res["moved"], res
    assert res["project"] == {"kind": "auto", "id": str(autos["notes"]), "name": "notes"}
    assert res["previous_project"]["id"] == autos["P"] and res["cwd"] == str(autos["notes"])
    assert res["written_by"] == "SessionDB.update_session_cwd" and res["sidebar"]["agrees"] is True
    assert "automatic project 'notes'" in res["message"]
    # Hermes wrote the row: only that session's cwd changed (and, on 0.22, the git-metadata
    # counter Hermes bumps on every folder change).
    assert calls == [(n1, str(autos["notes"]), None, None)]
    rows_after = session_rows(world.home)
    assert {k for k in rows_before if rows_before[k] != rows_after[k]} == {n1}
    changed = {c for c in rows_after[n1] if rows_after[n1][c] != rows_before[n1][c]}
    assert "cwd" in changed and changed - {"cwd"} <= {"git_metadata_generation"}
    # The record is gone, the move is logged; the folder attributes the session again.
    store = store_state(world.home)
    assert n1 not in {r[0] for r in store["records"]} and len(store["moves"]) == 2
    assert attributions(world.home)[n1] == ("auto", str(autos["notes"]))
    assert found(call(SEARCH, {"mode": "keyword", "query": "walrus", "project": "notes"},
                      session_id=autos["ask_p"])) == {n1}
    assert found(call(SEARCH, {"mode": "keyword", "query": "walrus"}, session_id=autos["ask_p"])) == set()
    # Moving it there again changes nothing.
    with unchanged_everywhere(world):
        again = call(MOVE, {"project": name, "session": n1}, session_id=autos["ask_p"])
    assert again["moved"] is False and again["reason"] == "already_in_project"
    assert "already in automatic project 'notes'" in again["message"]


@SIDEBAR
def test_back_into_a_repository_hermes_sidebar_agrees(autos, world):
    g1, repo = autos["g1"], autos["repo"]
    assert sidebar_groups(world.db)[g1] == str(repo)
    res = call(MOVE, {"project": "P", "session": g1}, session_id=autos["ask_p"])
    assert res["moved"] and sidebar_groups(world.db)[g1] == autos["P"]
    assert session_rows(world.home)[g1]["git_repo_root"] == str(autos["p"])  # 0.19.0's placeholder root
    back = call(MOVE, {"project": "gitrepo (auto)", "session": g1}, session_id=autos["ask_p"])
    assert back["moved"] and back["git"] == {"branch": "dev", "repo_root": str(repo)}, back
    row = session_rows(world.home)[g1]
    assert (row["cwd"], row["git_branch"], row["git_repo_root"]) == (str(repo), "dev", str(repo))
    assert sidebar_groups(world.db)[g1] == str(repo)
    assert attributions(world.home)[g1] == ("auto", str(repo))
    # By the folder, as a search takes it, too.
    assert call(MOVE, {"project": "P", "session": g1}, session_id=autos["ask_p"])["moved"]
    assert call(MOVE, {"project": str(repo), "session": g1}, session_id=autos["ask_p"])["moved"]
    assert sidebar_groups(world.db)[g1] == str(repo)


@SIDEBAR
def test_a_placeholder_root_above_the_folder_is_replaced(world, work):
    """Moved into a project at the parent folder, then that project archived: the session is
    in the parent's automatic project with the parent as its (0.19.0 placeholder) root.
    Moving it into 'notes' below must not leave that root, or both Hermes and the plugin
    would keep it in the parent's automatic project."""
    notes = work / "notes"
    notes.mkdir()
    world.session(("user", "a note"), cwd=notes)
    elsewhere = make_repo(work.parent / "elsewhere")  # outside Parent
    s = world.session(("user", "wandering"), cwd=elsewhere, root=elsewhere)
    parent = world.project("Parent", work)
    ask = world.session(cwd=work / "notes")
    enable_plugin(world.home)
    assert call(MOVE, {"project": "Parent", "session": s}, session_id=ask)["moved"]
    assert session_rows(world.home)[s]["git_repo_root"] == str(work)
    world.archive(parent)
    assert attributions(world.home)[s] == ("auto", str(work))
    res = call(MOVE, {"project": "notes", "session": s}, session_id=ask)
    assert res["moved"] and any("cannot clear the old git root" in n for n in res["notes"]), res
    assert session_rows(world.home)[s]["git_repo_root"] == str(notes)
    assert attributions(world.home)[s] == ("auto", str(notes)) and sidebar_groups(world.db)[s] == str(notes)


def test_refused_when_an_explicit_project_would_take_the_folder(autos, world, monkeypatch):
    """A project created over the folder while the move is planned: Hermes would group the
    session into that project, so the move cannot take effect and is refused."""
    move = plugin_module("move")
    facts = plugin_module("hermes.facts")
    real = move.load_projects
    over = facts.ProjectInfo("p_over", "over", "Over", (str(autos["notes"].parent),), str(autos["notes"].parent))
    monkeypatch.setattr(move, "load_projects", lambda path: [*real(path), over])
    with unchanged_everywhere(world):
        res = call(MOVE, {"project": "notes", "session": autos["g1"]}, session_id=autos["ask_p"])
    assert res["success"] is False and res["error_code"] == "inside_project", res
    assert "inside project 'Over'" in res["error"] and "\n" not in res["error"]


def test_missing_or_archived_automatic_folders(autos, world, work):
    gone = work / "gone"
    gone.mkdir()
    world.session(("user", "in a folder since deleted"), cwd=gone)
    gone.rmdir()
    attic = work / "attic"
    attic.mkdir()
    old = world.session(("user", "archived long ago"), cwd=attic)
    world.db.set_session_archived(old, True)
    assert "gone" in printed_auto_names(world.home) and "attic" not in printed_auto_names(world.home)
    with unchanged_everywhere(world):
        missing = call(MOVE, {"project": "gone", "session": autos["n1"]}, session_id=autos["ask_p"])
        archived = call(MOVE, {"project": "attic", "session": autos["n1"]}, session_id=autos["ask_p"])
        by_folder = call(MOVE, {"project": str(attic), "session": autos["n1"]}, session_id=autos["ask_p"])
    assert missing["error_code"] == "folder_missing" and str(gone) in missing["error"]
    assert archived["error_code"] == "unknown_project" and by_folder["error_code"] == "unknown_project"


@SIDEBAR
def test_the_only_session_of_an_automatic_project_moves_back_by_its_old_name(autos, world, work):
    solo = work / "solo"
    solo.mkdir()
    s = world.session(("user", "alone in here"), cwd=solo)
    assert call(MOVE, {"project": "P", "session": s}, session_id=autos["ask_p"])["moved"]
    assert "solo" not in printed_auto_names(world.home)  # no session is left there…
    with unchanged_everywhere(world):  # …so only the session that left may name it
        other = call(MOVE, {"project": "solo", "session": autos["n1"]}, session_id=autos["ask_p"])
    assert other["error_code"] == "unknown_project"
    from hermes_state import SessionDB

    world.db = SessionDB(db_path=world.home / "state.db")  # unchanged_everywhere closed it
    res = call(MOVE, {"project": "solo (auto)", "session": s}, session_id=autos["ask_p"])
    assert res["moved"] and res["project"] == {"kind": "auto", "id": str(solo), "name": "solo"}, res
    assert attributions(world.home)[s] == ("auto", str(solo)) and sidebar_groups(world.db)[s] == str(solo)


@only_on((0, 19), "a live GUI session lives in tui_gateway.server, which on the 0.22 line needs Python 3.14")
def test_live_gui_session_moves_back_through_the_workspace_callback(autos, world):
    n1, notes = autos["n1"], str(autos["notes"])
    with live_gui_session(world.home, n1) as (live, transport):
        assert call(MOVE, {"project": "P"}, session_id=n1, task_id=n1)["moved"]
        res = call(MOVE, {"project": "notes (auto)"}, session_id=n1, task_id=n1)
        assert res["moved"] and "workspace callback" in res["live_session"], res
        assert live["cwd"] == notes and live["explicit_cwd"] is True
        info = [f["params"] for f in transport.frames if f["params"]["type"] == "session.info"]
        assert info and info[-1]["payload"]["cwd"] == notes
    assert session_rows(world.home)[n1]["cwd"] == notes
    assert attributions(world.home)[n1] == ("auto", notes)


KILLED_AFTER_HERMES_WRITES = textwrap.dedent("""
    import os, signal, sys
    import model_tools
    from hermes_cli import plugins
    plugins.discover_plugins(force=True)
    import importlib
    from tools.registry import registry
    host = importlib.import_module(
        registry.get_entry("project_history_search").handler.__module__.removesuffix(".ui.tools") + ".hermes.host")
    write = host.write_session_cwd

    def written_then_killed(*args, **kw):
        write(*args, **kw)
        os.kill(os.getpid(), signal.SIGKILL)

    host.write_session_cwd = written_then_killed
    model_tools.handle_function_call("project_session_move", {"project": sys.argv[2], "session": sys.argv[1]})
""")


@pytest.mark.parametrize("how", ["Hermes's own move", "a move killed after Hermes wrote"])
def test_a_moved_session_that_hermes_moves_on_is_searched_where_hermes_shows_it(world, work, how):
    """A record of the plugin's (a session moved into P) decided for good: once Hermes itself put
    the session elsewhere (its desktop's move and ``project_switch`` write the folder with
    ``update_session_cwd``; Hermes heals a folder that was deleted), the session was still searched
    in P, and never where Hermes shows it. So too when a move back into an automatic project was
    killed between Hermes's write and the record's commit (the fifth hostile sweep). A record now
    holds only while the session is where its move left it."""
    from cli_runs import cli_env

    p, q, r = work / "p", work / "q", work / "r"
    for folder in (p, q, r):
        folder.mkdir()
    world.project("P", p)
    world.project("Q", q)
    s = world.session(("user", "the zanzibar ledger note"), cwd=r)
    ask_p = world.session(cwd=p)
    world.session(("user", "a note of the automatic project r"), cwd=r)
    plugin_settings(world.home, semantic=False)
    enable_plugin(world.home)
    assert call(MOVE, {"project": "P", "session": s}, session_id=ask_p)["moved"]
    if how == "Hermes's own move":
        world.db.update_session_cwd(s, str(q))
        where = "Q"
    else:
        world.close()
        child = subprocess.run([sys.executable, "-c", KILLED_AFTER_HERMES_WRITES, s, str(r)],
                               env=cli_env(world.home), capture_output=True, text=True, timeout=120)
        assert child.returncode == -9, child.stderr[-2000:]
        assert session_rows(world.home)[s]["cwd"] == str(r)
        where = "r"
    found_in_p = call(SEARCH, {"query": "zanzibar", "mode": "keyword"}, session_id=ask_p)
    assert found(found_in_p) == set(), found_in_p
    there = call(SEARCH, {"query": "zanzibar", "mode": "keyword", "project": where}, session_id=ask_p)
    assert there["project"]["name"] == where and found(there) == {s}, there
