"""New and deleted sessions count at once, whatever rowids SQLite hands out.

``sessions`` is keyed by a TEXT id, so its rowid is SQLite's own: a session
created right after the newest one was deleted gets that session's rowid
again. Hermes's CLI deletes the empty session it leaves behind on ``/new``,
so this happens every day. The background re-read is switched off in these
tests (``max_staleness`` = ∞): what a search sees must come from the search
path itself, never from a lucky timing.
"""

from __future__ import annotations

import random
import sqlite3

import pytest

from hermes_world import call, enable_plugin, found, plugin_module

SEARCH = "project_history_search"


def rowid(home, session_id: str) -> int:
    conn = sqlite3.connect(f"file:{home / 'state.db'}?mode=ro", uri=True)
    try:
        return conn.execute("SELECT rowid FROM sessions WHERE id = ?", (session_id,)).fetchone()[0]
    finally:
        conn.close()


def catalog_of(home):
    return plugin_module("scope.resolve").catalog(home)


@pytest.fixture
def gateway(world, work, monkeypatch):
    """Project App, with a secret in its history, and a process (a messaging gateway) working in App's folder."""
    app = work / "app"
    app.mkdir()
    world.project("App", app)
    secret = world.session(("user", "App secret: the staging DB password is hunter2"), cwd=app, title="secret")
    enable_plugin(world.home)
    monkeypatch.setenv("TERMINAL_CWD", str(app))
    monkeypatch.setattr(catalog_of(world.home), "max_staleness", float("inf"))
    return {"app": app, "secret": secret}


def test_a_chat_that_reuses_a_deleted_chats_rowid_is_placed_by_its_own_row(gateway, world):
    first = world.session(source="telegram")
    res = call(SEARCH, {"query": "password", "mode": "keyword"}, session_id=first)
    assert res["project"]["kind"] == "home" and res["results"] == [], res

    reused = rowid(world.home, first)
    world.db.delete_session(first)
    second = world.session(source="telegram")
    assert rowid(world.home, second) == reused  # what makes this case: SQLite handed the rowid on

    res = call(SEARCH, {"query": "password", "mode": "keyword"}, session_id=second)
    assert res["success"] and res["project"]["kind"] == "home", res
    assert res["results"] == [] and res["sessions_in_scope"] == 0


def test_a_row_without_a_folder_is_never_placed_by_the_process_folder(gateway, world):
    """Even a row the plugin has never seen: its own facts decide, and it has no folder."""
    call(SEARCH, {"query": "password", "mode": "keyword"}, session_id=world.session(source="telegram"))
    unseen = world.session(source="discord")
    res = call(SEARCH, {"query": "password", "mode": "keyword"}, session_id=unseen)
    assert res["project"]["kind"] == "home" and res["results"] == [], res
    # A session id with no row yet (Hermes writes it lazily) is still placed by the working folder.
    res = call(SEARCH, {"query": "password", "mode": "keyword"}, session_id="20990101_000000_abcdef")
    assert res["project"]["name"] == "App" and found(res) == {gateway["secret"]}
    # Nor has an id no row can hold (a lone surrogate: SQLite keeps UTF-8).
    res = call(SEARCH, {"query": "password", "mode": "keyword"}, session_id="2099\ud800")
    assert res["success"] and res["project"]["name"] == "App", res


def test_a_new_session_counts_immediately_in_a_deleted_sessions_rowid(gateway, world):
    app = gateway["app"]
    asker = world.session(cwd=app, title="asker")
    assert found(call(SEARCH, {"query": "okapi", "mode": "keyword"}, session_id=asker)) == set()
    empty = world.session(cwd=app)  # a new chat that gets no message...
    assert call(SEARCH, {"query": "okapi", "mode": "keyword"}, session_id=asker)["sessions_in_scope"] == 2
    reused = rowid(world.home, empty)
    world.db.delete_session(empty)  # ...is deleted by /new, and the next chat takes its rowid
    fresh = world.session(("user", "an okapi crossed the staging server"), cwd=app)
    assert rowid(world.home, fresh) == reused

    res = call(SEARCH, {"query": "okapi", "mode": "keyword"}, session_id=asker)
    assert found(res) == {fresh} and res["sessions_in_scope"] == 2, res
    # And the new chat itself searches App at once.
    res = call(SEARCH, {"query": "password", "mode": "keyword"}, session_id=fresh)
    assert res["project"]["name"] == "App" and found(res) == {gateway["secret"]}


def test_deleted_sessions_leave_the_scope_immediately(gateway, world):
    app = gateway["app"]
    asker = world.session(cwd=app, title="asker")
    notes = [world.session(("user", f"wombat note {i}"), cwd=app) for i in range(3)]
    assert found(call(SEARCH, {"query": "wombat", "mode": "keyword"}, session_id=asker)) == set(notes)
    world.db.delete_session(notes[0])  # not the newest: no rowid is handed on
    res = call(SEARCH, {"query": "wombat", "mode": "keyword"}, session_id=asker)
    assert found(res) == set(notes[1:]) and res["sessions_in_scope"] == 3, res


def test_random_creates_and_deletes_are_all_seen_by_the_next_search(gateway, world):
    """Whatever mix of deletions (newest, oldest, several at once) and creations comes between two
    searches, the next search's scope is exactly the sessions that exist."""
    app = gateway["app"]
    asker = world.session(cwd=app, title="asker")
    rnd = random.Random(20261201)
    live: list[str] = []
    for step in range(40):
        for _ in range(rnd.randint(0, 2)):
            if live:
                victim = live[-1] if rnd.random() < 0.6 else rnd.choice(live)
                world.db.delete_session(victim)
                live.remove(victim)
        for _ in range(rnd.randint(0, 2)):
            live.append(world.session(("user", f"quagga step {step}"), cwd=app))
        res = call(SEARCH, {"query": "quagga", "mode": "keyword", "limit": 50}, session_id=asker)
        assert found(res) == set(live) and res["sessions_in_scope"] == len(live) + 1, (step, res)


def test_when_nothing_changed_a_search_pays_one_statement_that_does_not_grow_with_the_table(gateway, world):
    """The membership check runs before every search, so it must not walk the sessions: its
    SQLite instruction count is the same with 10 sessions as with 60."""
    statedb = plugin_module("hermes.statedb")
    catalog = catalog_of(world.home)

    def check_cost() -> tuple[int, int]:
        with statedb.reading(world.home / "state.db") as (conn, _shape):
            catalog.snapshot(conn)  # take in whatever changed
            statements, steps = [], [0]
            conn.set_trace_callback(statements.append)
            conn.set_progress_handler(lambda: steps.__setitem__(0, steps[0] + 1) or 0, 1)
            try:
                catalog.snapshot(conn)
            finally:
                conn.set_trace_callback(None)
                conn.set_progress_handler(None, 1)
        return len(statements), steps[0]

    for _ in range(10):
        world.session(("user", "x" * 5000), cwd=gateway["app"])
    small = check_cost()
    for _ in range(50):
        world.session(("user", "x" * 5000), cwd=gateway["app"])
    assert small[0] == 1 and check_cost() == small


def test_a_session_hermes_moves_or_archives_leaves_the_scope_at_the_next_search(gateway, world, work):
    """Hermes changes existing rows itself: its desktop's move and its ``project_switch`` write a
    session's folder with ``update_session_cwd``, a person archives a chat. The catalog takes such a
    change in only with a full re-read, in the background, and never before the search that starts
    it: a long-lived process (the desktop's gateway) showed a moved session's messages in the
    project it had left, and an archived one's, until that re-read (the fifth hostile sweep). A
    session found is now read again before it is shown."""
    app, other = gateway["app"], work / "other"
    other.mkdir()
    world.project("Other", other)
    asker, ask_other = world.session(cwd=app, title="asker"), world.session(cwd=other, title="asker in Other")
    notes = [world.session(("user", f"wombat note {i}"), cwd=app) for i in range(3)]
    for mode in ("keyword", "hybrid"):
        assert found(call(SEARCH, {"query": "wombat", "mode": mode}, session_id=asker)) == set(notes)
    world.db.update_session_cwd(notes[0], str(other))
    for mode in ("keyword", "hybrid"):
        res = call(SEARCH, {"query": "wombat", "mode": mode}, session_id=asker)
        assert found(res) == set(notes[1:]) and res["sessions_in_scope"] == 3, (mode, res)
    assert found(call(SEARCH, {"query": "wombat", "mode": "keyword"}, session_id=ask_other)) == {notes[0]}
    world.db.set_session_archived(notes[1], True)
    for mode in ("keyword", "hybrid"):
        assert found(call(SEARCH, {"query": "wombat", "mode": mode}, session_id=asker)) == {notes[2]}, mode


def wombat_notes(gateway, world, work) -> tuple:
    """App's folder, an asking session in App, a note written in App and one in project Other."""
    app, other = gateway["app"], work / "other"
    other.mkdir()
    world.project("Other", other)
    asker = world.session(cwd=app, title="asker")
    here = world.session(("user", "wombat note written in App"), cwd=app)
    away = world.session(("user", "wombat note written in Other"), cwd=other)
    return app, asker, here, away


def test_a_session_hermes_moves_into_a_project_is_found_by_its_next_search(gateway, world, work):
    """The opposite of the test above: a session Hermes puts into App (its desktop's move and
    ``project_switch`` write the folder with ``update_session_cwd``), or a chat in App a person
    restores from the archive. The catalog took such a change in only with its next full read,
    in the background, so App's searches in a process that had searched before missed the
    session, however long after (the fifth hostile sweep left this). A search that finds the
    file changed since the catalog was read now reads the sessions in App's folders."""
    app, asker, here, away = wombat_notes(gateway, world, work)
    nested = world.session(("user", "wombat note from a scratch folder"), cwd=work)
    shelved = world.session(("user", "wombat note later archived"), cwd=app)
    world.db.set_session_archived(shelved, True)
    for mode in ("keyword", "hybrid"):
        assert found(call(SEARCH, {"query": "wombat", "mode": mode}, session_id=asker)) == {here}, mode

    world.db.update_session_cwd(away, str(work / "other"))  # a write that moves nothing: still Other's
    assert found(call(SEARCH, {"query": "wombat", "mode": "keyword"}, session_id=asker)) == {here}
    world.db.update_session_cwd(away, str(app))
    for mode in ("keyword", "hybrid"):
        res = call(SEARCH, {"query": "wombat", "mode": mode}, session_id=asker)
        assert found(res) == {here, away} and res["sessions_in_scope"] == 3, (mode, res)
    world.db.update_session_cwd(nested, str(app / "src" / "deep"))  # a folder inside App's counts too
    world.db.set_session_archived(shelved, False)
    for mode in ("keyword", "hybrid"):
        res = call(SEARCH, {"query": "wombat", "mode": mode}, session_id=asker)
        assert found(res) == {here, away, nested, shelved} and res["sessions_in_scope"] == 5, (mode, res)


def test_in_a_home_past_the_walks_bound_a_moved_in_session_comes_with_the_background_read(
        gateway, world, work, monkeypatch):
    """Past ``CAME_IN_MOST_SESSIONS`` the walk for moved-in sessions would cost more than a
    search's budget: the search that sees the change does not walk the table, and the background
    re-read it starts takes the session in."""
    resolve = plugin_module("scope.resolve")
    monkeypatch.setattr(resolve, "CAME_IN_MOST_SESSIONS", 2)
    app, asker, here, away = wombat_notes(gateway, world, work)
    assert found(call(SEARCH, {"query": "wombat", "mode": "keyword"}, session_id=asker)) == {here}
    catalog = catalog_of(world.home)
    walked: list = []
    monkeypatch.setattr(catalog, "read_matching", lambda *a: walked.append(a) or [])
    monkeypatch.setattr(catalog, "max_staleness", 0.0)
    world.db.update_session_cwd(away, str(app))
    call(SEARCH, {"query": "wombat", "mode": "keyword"}, session_id=asker)
    assert walked == []  # more sessions known than the bound: no walk
    catalog.wait_idle()
    assert found(call(SEARCH, {"query": "wombat", "mode": "keyword"}, session_id=asker)) == {here, away}


def test_a_move_into_a_folder_that_only_looks_like_the_projects_is_not_taken_in(gateway, world, work):
    """Folders compared as Hermes's sidebar compares them, whole segments, with ``%`` and ``_``
    plain characters: ``app2``, ``a%b`` and ``a_b`` are not ``app``, ``aXb`` or ``a%b``."""
    app = gateway["app"]
    odd = work / "50%_off"
    odd.mkdir()
    world.project("Odd", odd)
    asker, odd_asker = world.session(cwd=app, title="asker"), world.session(cwd=odd, title="odd asker")
    notes = [world.session(("user", f"wombat note {i}"), cwd=work / "elsewhere") for i in range(4)]
    assert found(call(SEARCH, {"query": "wombat", "mode": "keyword"}, session_id=asker)) == set()
    assert found(call(SEARCH, {"query": "wombat", "mode": "keyword"}, session_id=odd_asker)) == set()
    world.db.update_session_cwd(notes[0], str(work / "app2"))
    world.db.update_session_cwd(notes[1], str(work / "50X_off"))
    world.db.update_session_cwd(notes[2], str(work / "50%_off2" / "src"))
    world.db.update_session_cwd(notes[3], str(odd / "src"))
    assert found(call(SEARCH, {"query": "wombat", "mode": "keyword"}, session_id=asker)) == set()
    res = call(SEARCH, {"query": "wombat", "mode": "keyword"}, session_id=odd_asker)
    assert found(res) == {notes[3]} and res["sessions_in_scope"] == 1, res


def test_a_projects_folders_are_read_once_a_change_a_few_rows_a_statement(gateway, world, monkeypatch):
    """What finding a session come in costs: nothing while state.db is as the catalog read it, one
    walk of the sessions after it changed (no index holds a folder), in statements of
    ``READ_BATCH`` rows so that Hermes's writer never waits for the whole walk, and nothing more
    until the file changes again."""
    app = gateway["app"]
    asker = world.session(cwd=app, title="asker")
    elsewhere = [world.session(("user", f"wombat note {i}"), cwd=app.parent / f"other{i}") for i in range(6)]
    statedb = plugin_module("hermes.statedb")
    monkeypatch.setattr(statedb, "READ_BATCH", 2)
    walks: list[str] = []

    def search() -> int:
        walks.clear()
        with statedb.reading(world.home / "state.db") as (conn, _shape):
            conn.set_trace_callback(lambda sql: walks.append(sql) if "instr(cwd" in sql else None)
            try:
                assert found(call(SEARCH, {"query": "wombat", "mode": "keyword"}, session_id=asker)) == set()
            finally:
                conn.set_trace_callback(None)
        return len(walks)

    assert search() == 0  # the catalog's first read is whole
    world.db.append_message(elsewhere[0], "assistant", "a reply in another folder")
    sessions = len(elsewhere) + 2  # and the gateway's secret and the asker
    assert search() == sessions // 2 + 1 and all(" AND rowid <= " in sql for sql in walks), walks
    assert search() == 0


def test_a_project_of_many_folders_still_takes_in_a_session_moved_into_one(gateway, world, work):
    """Hermes takes any number of folders for a project; one condition a folder would pass SQLite's
    limits (an expression 1,000 deep, as many parameters as SQLite allows) and fail the search."""
    many = [work / "many" / f"part{i:04d}" for i in range(1200)]
    project = world.project("Many", *many)
    asker = world.session(cwd=many[0], title="asker in Many")
    note = world.session(("user", "wombat note from outside"), cwd=work / "outside")
    assert found(call(SEARCH, {"query": "wombat", "mode": "keyword"}, session_id=asker)) == set()
    world.db.update_session_cwd(note, str(many[-1] / "src"))
    res = call(SEARCH, {"query": "wombat", "mode": "keyword"}, session_id=asker)
    assert res.get("project", {}).get("id") == project and found(res) == {note}, res
