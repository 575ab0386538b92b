"""Attribution rules (recorded, folder, workspace, home) as pure functions, edge cases included."""

from __future__ import annotations

from project_history_recall.scope.attribution import HOME, AttributionContext, FolderIndex, JunkPolicy, attribute, attribute_all, lineage_root, resolve_own
from project_history_recall.hermes.facts import ProjectInfo, SessionFacts
from project_history_recall.scope.pathkeys import ancestor_keys, is_under, path_key

APP = ProjectInfo("p_app", "app", "App", ("/w/app",))
APP2 = ProjectInfo("p_app2", "app2", "App 2", ("/w/app2",))
MONO = ProjectInfo("p_mono", "mono", "Mono", ("/w/mono",))
SVC = ProjectInfo("p_svc", "svc", "Service", ("/w/mono/services/svc",))
OLD = ProjectInfo("p_old", "old", "Old", ("/w/old",), archived=True)
WIN = ProjectInfo("p_win", "win", "Win", ("C:\\Users\\Me\\Repo",))
JUNK = JunkPolicy.from_paths(["/home/me"], ["/home/me/.hermes"])


def ctx(*projects, records=None, git_root=None):
    return AttributionContext(list(projects), records or {}, JUNK, git_root)


def own(cwd=None, root=None, sid="s", context=None):
    return resolve_own(SessionFacts(sid, cwd, root), context or ctx(APP, APP2, MONO, SVC, OLD, WIN))


def test_path_keys_ignore_trailing_separators_and_windows_case():
    assert path_key("/w/app/") == path_key("/w/app") == "/w/app"
    assert path_key("C:\\Users\\Me\\Repo\\") == path_key("c:/users/me/repo")
    assert path_key("/W/App") != path_key("/w/app")  # POSIX stays case-sensitive
    assert ancestor_keys("/w/app/src") == ["/w/app/src", "/w/app", "/w"]
    assert is_under("/w/app", "/w/app/x") and is_under("/w/app", "/w/app")
    assert not is_under("/w/app", "/w/app2")


def test_folder_owns_itself_and_everything_below():
    assert own("/w/app").id == "p_app"
    assert own("/w/app/src/deep").id == "p_app"
    assert own("/w/app/").via == "folder"


def test_sibling_with_common_string_prefix_is_not_owned():
    assert own("/w/app2/src").id == "p_app2"
    assert own("/w/application").kind == "auto"


def test_deepest_folder_wins_for_nested_projects():
    assert own("/w/mono/services/svc/src").id == "p_svc"
    assert own("/w/mono/services/other").id == "p_mono"


def test_git_root_counts_when_cwd_is_inside_it_and_tie_goes_to_cwd():
    # cwd outside every project, repo root inside one.
    repo_ctx = ctx(ProjectInfo("p_r", "r", "R", ("/w/repo",)))
    assert resolve_own(SessionFacts("s", "/w/repo/sub", "/w/repo"), repo_ctx).id == "p_r"
    # Both match at the same depth: the cwd's project wins.
    a = ProjectInfo("p_a", "a", "A", ("/x/a",))
    b = ProjectInfo("p_b", "b", "B", ("/x/b",))
    assert resolve_own(SessionFacts("s", "/x/a/q", "/x/b/q"), ctx(a, b)).id == "p_a"


def test_stale_git_root_outside_the_cwd_is_ignored():
    # Hermes 0.19.0 keeps the old root after a move to a non-git folder.
    assert own("/w/app2", root="/w/mono/services/svc").id == "p_app2"


def test_archived_projects_do_not_own_folders():
    a = own("/w/old/src")
    assert a.kind == "auto" and a.id == "/w/old/src"


def test_windows_looking_paths_match_case_insensitively():
    assert own("c:/users/me/repo/src").id == "p_win"
    assert own("C:\\USERS\\ME\\REPO").id == "p_win"


def test_auto_project_prefers_git_root_then_cwd():
    a = own("/elsewhere/repo/src", root="/elsewhere/repo")
    assert (a.kind, a.id, a.name, a.via) == ("auto", "/elsewhere/repo", "repo", "workspace")
    b = own("/elsewhere/notes/")
    assert (b.kind, b.id, b.name) == ("auto", "/elsewhere/notes", "notes")


def test_probed_git_root_groups_subfolders_like_the_sidebar():
    probe = {"/r/x/src": "/r/x", "/r/x": "/r/x"}.get
    c = ctx(git_root=probe)
    assert resolve_own(SessionFacts("a", "/r/x/src"), c).id == resolve_own(SessionFacts("b", "/r/x"), c).id == "/r/x"


def test_junk_keys_form_no_project():
    assert own("/home/me") == HOME
    assert own("/home/me/.hermes") == HOME
    assert own("/home/me/.hermes/worktrees/x") == HOME
    assert own("/home/me/notes", root="/home/me") == HOME  # inside a dotfiles repo at ~
    assert own("/home/me/code").kind == "auto"  # below ~ is fine


def test_explicit_projects_are_honoured_even_in_junk_places():
    dotfiles = ProjectInfo("p_dot", "dot", "Dotfiles", ("/home/me",))
    assert resolve_own(SessionFacts("s", "/home/me"), ctx(dotfiles)).id == "p_dot"


def test_no_location_means_undecided_and_then_home():
    assert own(None, None) is None
    assert attribute("s", {"s": SessionFacts("s")}, ctx(APP)) == HOME


def test_recorded_move_wins_over_folder_but_not_when_project_is_archived_or_gone():
    c = ctx(APP, APP2, OLD, records={"s": ("p_app2", None), "t": ("p_old", None), "u": ("p_deleted", None)})
    assert resolve_own(SessionFacts("s", "/w/app"), c).id == "p_app2"
    assert resolve_own(SessionFacts("s", "/w/app"), c).via == "recorded"
    assert resolve_own(SessionFacts("t", "/w/app"), c).id == "p_app"
    assert resolve_own(SessionFacts("u", "/w/app"), c).id == "p_app"
    assert resolve_own(SessionFacts("s"), c).id == "p_app2"  # a record that names no folder needs no cwd


def test_a_record_holds_only_while_the_session_is_where_its_move_left_it():
    c = ctx(APP, APP2, records={"s": ("p_app2", "/w/app/")})
    assert resolve_own(SessionFacts("s", "/w/app"), c).via == "recorded"  # the same folder, spelled otherwise
    moved_on = resolve_own(SessionFacts("s", "/w/app2/src"), ctx(APP, APP2, records={"s": ("p_app", "/w/app")}))
    assert (moved_on.id, moved_on.via) == ("p_app2", "folder")  # Hermes put it elsewhere: its folder decides


def test_children_inherit_from_their_root_and_nearest_located_ancestor():
    sessions = {
        "root": SessionFacts("root", "/w/app"),
        "child": SessionFacts("child", None, None, "root"),
        "grandchild": SessionFacts("grandchild", None, None, "child"),
        "moved": SessionFacts("moved", "/w/app2", None, "root"),
        "under_moved": SessionFacts("under_moved", None, None, "moved"),
        "orphan": SessionFacts("orphan", None, None, "missing-row"),
    }
    result = attribute_all(sessions, ctx(APP, APP2))
    assert result["child"].id == result["grandchild"].id == "p_app"
    assert result["child"].via == "inherited"
    assert result["under_moved"].id == "p_app2"
    assert result["orphan"] == HOME


def test_parent_cycles_terminate():
    sessions = {"a": SessionFacts("a", None, None, "b"), "b": SessionFacts("b", None, None, "a")}
    assert attribute("a", sessions, ctx(APP)) == HOME
    assert lineage_root("a", sessions) in ("a", "b")


def test_first_project_keeps_a_folder_declared_twice():
    first = ProjectInfo("p_1", "one", "One", ("/w/shared",))
    second = ProjectInfo("p_2", "two", "Two", ("/w/shared/",))
    assert FolderIndex([first, second]).match("/w/shared/x")[0].id == "p_1"


def test_lineage_root_walks_to_the_top():
    sessions = {"a": SessionFacts("a"), "b": SessionFacts("b", parent_session_id="a"),
                "c": SessionFacts("c", parent_session_id="b")}
    assert lineage_root("c", sessions) == "a"
    assert lineage_root("a", sessions) == "a"
    assert lineage_root("unknown", sessions) == "unknown"


def test_the_folder_condition_holds_for_every_folder_inside_and_few_outside():
    """What a search reads to find sessions come into a project: never less than the rows whose
    folder ``is_under`` the project's, in any spelling (Windows case, ``\\``, ``//``, characters that
    fold to ASCII letters), with ``%`` and ``_`` as plain characters."""
    import sqlite3

    from project_history_recall.scope.resolve import folder_condition

    folders = ["/w/app", "/w/50%_off", "C:\\Users\\Me\\Straße", "c:/users/me/KELVIN", "/w/ünï", "/w/Ünï"]
    targets = ["/w/app", "/w/app/", "/w/app/src", "/w\\app\\src", "  /w/app  ", "/w/app2", "/w/ap", "/w/APP",
               "/w/50%_off/x", "/w/50X_off", "/w/50%Xoff", "/w/50%_off2", "C:\\Users\\Me\\Straße\\x",
               "c:/users/me/STRASSE", "C:/USERS/ME/strasse/y", "c:\\users\\me\\\u212aelvin", "C:/Users/Me/Other",
               "//srv/share", "\\\\srv\\w\\app", "/w/ünï/x", "/w/ÜNÏ", "/w/Ünï/x", "//W/App/x", "", None]
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE sessions (cwd TEXT, git_repo_root TEXT)")
    conn.executemany("INSERT INTO sessions VALUES (?, NULL)", [(t,) for t in targets])
    conn.executemany("INSERT INTO sessions VALUES (NULL, ?)", [(t,) for t in targets])
    for folder in folders:
        condition, params = folder_condition([folder])
        picked = conn.execute(f"SELECT cwd, git_repo_root FROM sessions WHERE {condition}", params).fetchall()
        for target in targets:
            if is_under(folder, target):
                assert (target, None) in picked and (None, target) in picked, (folder, target)
        assert len(picked) < len(targets), (folder, picked)
    condition, params = folder_condition(["/w/app", "/w/50%_off"])
    assert {row[0] for row in conn.execute(f"SELECT cwd FROM sessions WHERE {condition}", params)} >= {
        "/w/app/src", "/w/50%_off/x"}
    assert folder_condition(["/", ""]) is None


def test_many_folders_are_looked_for_by_what_they_share():
    """Past a few segments to look for, one condition each would pass SQLite's limits: the folders'
    deepest common folder's last segment is looked for instead, else every row is read."""
    import sqlite3

    from project_history_recall.scope.resolve import folder_condition

    shared = [f"/w/many/part{i}" for i in range(100)]
    condition, params = folder_condition(shared)
    assert params == ("many", "many", "many", "many")
    assert folder_condition([f"/w/{i}/src" for i in range(100)])[1] == ("src",) * 4  # one last segment
    spread = [f"/w{i}/x{i}" for i in range(100)]
    assert folder_condition(spread) == ("1", ())
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE sessions (cwd TEXT, git_repo_root TEXT)")
    conn.executemany("INSERT INTO sessions VALUES (?, NULL)", [("/w/many/part7/src",), ("/w/other",), ("/w5/x5/y",)])
    assert conn.execute(f"SELECT cwd FROM sessions WHERE {condition}", params).fetchall() == [("/w/many/part7/src",)]
    condition, params = folder_condition(spread)
    assert len(conn.execute(f"SELECT cwd FROM sessions WHERE {condition}", params).fetchall()) == 3
