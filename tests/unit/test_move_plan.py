"""The pure half of project_session_move: arguments, references, the cwd write, the sidebar forecast."""

from __future__ import annotations

import pytest

from project_history_recall.scope import sessionref
from project_history_recall.hermes.facts import ProjectInfo
from project_history_recall.move import CwdWrite, GitAt, MoveError, plan_cwd, request_from_args, sidebar_hidden, sidebar_project, sidebar_report, target_folder
from project_history_recall.scope.sessionref import SessionRow

PARENT = ProjectInfo("p_parent", "parent", "Parent", ("/w/parent",), "/w/parent")
REPO = ProjectInfo("p_repo", "repo", "Repo", ("/w/parent/repo",), "/w/parent/repo")
TWIN = ProjectInfo("p_twin", "twin", "Twin", ("/w/parent",), "/w/parent")
OLD = ProjectInfo("p_old", "old", "Old", ("/w/old",), "/w/old", archived=True)


@pytest.mark.parametrize("args,needle", [
    (None, "object"), ({}, "project"), ({"project": "  "}, "project"), ({"project": 3}, "project"),
    ({"project": "x", "session": 4}, "session"),
])
def test_bad_arguments(args, needle):
    with pytest.raises(MoveError) as err:
        request_from_args(args)
    assert err.value.code == "bad_argument" and needle in str(err.value)


@pytest.mark.parametrize("project", [{"name": "Beta"}, ["Beta"], 3, True])
def test_a_project_given_as_something_else_than_text_is_not_said_to_be_missing(project):
    """A model that sends {"project": {"name": "Beta"}} gave one: it hears what a project is named by."""
    with pytest.raises(MoveError) as err:
        request_from_args({"project": project})
    assert "is required" not in str(err.value)
    assert "'project' must be a project id, slug, name or folder" in str(err.value)


def test_arguments_are_trimmed_and_an_empty_session_means_the_caller():
    assert request_from_args({"project": " Beta ", "session": "  "}).session is None
    assert request_from_args({"project": "Beta", "session": " abc "}).session == "abc"


@pytest.mark.parametrize("text,expected", [
    ("@session:default/20260901_143022_a1b2c3", ("20260901_143022_a1b2c3", "default", True)),
    ("@session:20260901_143022_a1b2c3", ("20260901_143022_a1b2c3", None, True)),
    ("`@session:work/20260901_143022_a1b2c3`.", ("20260901_143022_a1b2c3", "work", True)),
    ("session:coder/20260901_143022_a1b2c3)", ("20260901_143022_a1b2c3", "coder", True)),
    ("  “Fix websocket?”  ", ("Fix websocket?", None, False)),
    ("20260901_143022_a1b2c3", ("20260901_143022_a1b2c3", None, False)),
    ("title\x00with\ud800junk", ("titlewithjunk", None, False)),
])
def test_session_references(text, expected):
    ref = sessionref.parse(text)
    assert (ref.value, ref.profile, ref.is_link) == expected


def row(**kw) -> SessionRow:
    return SessionRow(**{"id": "s", "message_count": 2, **kw})


def test_moving_into_a_repository_writes_its_root_and_branch():
    write = plan_cwd(row(cwd="/w/b", git_branch="old", git_repo_root="/w/b"), "/w/r", GitAt("/w/r", "main"), False)
    assert write == CwdWrite("/w/r", "main", "/w/r", False, "main", "/w/r")


def test_0_19_stale_root_is_replaced_by_the_folder_itself():
    write = plan_cwd(row(cwd="/w/parent/repo", git_branch="feat", git_repo_root="/w/parent/repo"),
                     "/w/parent", GitAt(), False)
    assert (write.cwd, write.git_branch, write.git_repo_root) == ("/w/parent", None, "/w/parent")
    assert write.placeholder_root and write.stale_branch and write.branch_after == "feat"


def test_no_root_to_go_stale_means_a_plain_cwd_write():
    write = plan_cwd(row(cwd=None), "/w/b", GitAt(), False)
    assert write == CwdWrite("/w/b", None, None, False, None, None)
    # A root that still holds the new folder is not stale.
    kept = plan_cwd(row(cwd="/w/r/x", git_repo_root="/w/r"), "/w/r/y", GitAt(), False)
    assert kept.git_repo_root is None and kept.root_after == "/w/r" and not kept.placeholder_root


def test_hermes_that_can_clear_git_fields_gets_the_real_values():
    write = plan_cwd(row(cwd="/w/r", git_branch="feat", git_repo_root="/w/r"), "/w/b", GitAt(), True)
    assert write == CwdWrite("/w/b", None, None, True, None, None)


def test_nothing_to_write_when_the_row_already_says_it():
    assert plan_cwd(row(cwd="/w/b"), "/w/b", GitAt(), False) is None
    assert plan_cwd(row(cwd="/w/r", git_branch="main", git_repo_root="/w/r"), "/w/r", GitAt("/w/r", "main"),
                    False) is None


def test_sidebar_forecast_follows_hermes_grouping():
    projects = [PARENT, REPO, OLD]
    # The 0.19.0 bug: a stale root deeper than the new folder wins in Hermes's sidebar.
    assert sidebar_project(projects, "/w/parent", None, "/w/parent/repo") is REPO
    assert sidebar_project(projects, "/w/parent", None, "/w/parent") is PARENT
    # A live git probe beats the persisted root; archived projects own nothing.
    assert sidebar_project(projects, "/w/parent", "/w/parent", "/w/parent/repo") is PARENT
    assert sidebar_project(projects, "/w/old", None, None) is None
    # Two projects with one folder: the first created keeps it.
    assert sidebar_project([PARENT, TWIN], "/w/parent", None, None) is PARENT


def test_sidebar_report_explains_a_disagreement():
    assert sidebar_report(PARENT, PARENT, "/w/parent", None, None) == {
        "agrees": True, "project": {"kind": "explicit", "id": "p_parent", "name": "Parent"}}
    dup = sidebar_report(TWIN, PARENT, "/w/parent", None, None)
    assert dup["agrees"] is False and "created first" in dup["reason"] and "'Twin'" in dup["reason"]
    stale = sidebar_report(PARENT, REPO, "/w/parent", "/w/parent/repo", None)
    assert "git root /w/parent/repo" in stale["reason"]
    nowhere = sidebar_report(PARENT, None, "/w/elsewhere", None, "x")
    assert nowhere["project"] is None and "not one of its folders" in nowhere["reason"] and nowhere["listed"] is False


def test_sessions_the_sidebar_does_not_list():
    assert sidebar_hidden(row()) is None
    assert "cron" in sidebar_hidden(row(source="cron"))
    assert "archived" in sidebar_hidden(row(archived=True))
    assert "Subagent" in sidebar_hidden(row(delegated=True))
    assert "messages" in sidebar_hidden(row(message_count=0))


def test_target_folder_is_the_primary_path_else_the_first_folder():
    assert target_folder(REPO) == "/w/parent/repo"
    assert target_folder(ProjectInfo("p", "p", "P", ("/a", "/b"))) == "/a"
    assert target_folder(ProjectInfo("p", "p", "P")) is None


def test_workspace_callback_gets_the_arguments_its_hermes_takes():
    from project_history_recall.hermes.host import call_workspace_callback

    seen = []
    call_workspace_callback(lambda task_id, path, _name="": seen.append((task_id, path, _name)), "s", "/w", "W", "p")
    call_workspace_callback(lambda task_id, path, name, pid: seen.append((task_id, path, name, pid)),
                            "s", "/w", "W", "p")
    assert seen == [("s", "/w", "W"), ("s", "/w", "W", "p")]


def test_into_an_automatic_folder_no_root_above_it_is_left():
    from project_history_recall.move import plan_auto_cwd

    # Plain plan_cwd keeps a root that holds the new folder; Hermes would group by that root.
    stale = row(cwd="/w", git_repo_root="/w")
    assert plan_cwd(stale, "/w/notes", GitAt(), False).root_after == "/w"
    write = plan_auto_cwd(stale, "/w/notes", GitAt(), False)
    assert (write.cwd, write.git_repo_root, write.root_after, write.placeholder_root) == \
        ("/w/notes", "/w/notes", "/w/notes", True)
    # A repository's own root, or no root at all, is left as plan_cwd has it.
    assert plan_auto_cwd(row(cwd="/w/b"), "/w/r", GitAt("/w/r", "main"), False) == \
        CwdWrite("/w/r", "main", "/w/r", False, "main", "/w/r")
    assert plan_auto_cwd(row(cwd="/w/b"), "/w/notes", GitAt(), False) == \
        CwdWrite("/w/notes", None, None, False, None, None)
    assert plan_auto_cwd(row(cwd="/w/notes"), "/w/notes", GitAt(), False) is None
    # Hermes that can clear git fields: the real (empty) values.
    assert plan_auto_cwd(stale, "/w/notes", GitAt(), True) == CwdWrite("/w/notes", None, None, True, None, None)


def test_workspace_callback_without_a_project_id_for_an_automatic_project():
    from project_history_recall.hermes.host import call_workspace_callback

    seen = []
    call_workspace_callback(lambda task_id, path, name, pid=None: seen.append((task_id, path, name, pid)),
                            "s", "/w", "W", None)
    call_workspace_callback(lambda task_id, path, name, pid: seen.append((task_id, path, name, pid)),
                            "s", "/w", "W", None)
    call_workspace_callback(lambda task_id, path, name: seen.append((task_id, path, name)), "s", "/w", "W", None)
    assert seen == [("s", "/w", "W", None), ("s", "/w", "W", None), ("s", "/w", "W")]
