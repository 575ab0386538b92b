"""Moving a session into another project: its attribution and its working folder together.

Pure planning first (what to check, what to write, what Hermes's sidebar will
show afterwards), then a thin I/O edge, :func:`run`.

Write ordering. The plugin's record (``recall.db``) and the session's cwd
(``state.db``, written by Hermes) cannot share one transaction, so:

1. Everything is validated and planned from read-only reads. Any problem is
   an error returned before anything is written (nor any file created).
   Then the profile's move lock is taken (``records.moving``) and the move
   planned again: a move that ran meanwhile may have changed where the
   session is, and two moves of one session must end with the record and the
   cwd naming the same project. The lock is held until step 5 is done.
2. A ``recall.db`` write transaction is opened and the move recorded in it.
3. Inside that transaction Hermes's own ``SessionDB.update_session_cwd``
   writes the session's cwd (and git fields). If Hermes raises, the record is
   rolled back: nothing changed anywhere.
4. The record commits. Searches read the last committed records (WAL: never
   blocked), so a search that began earlier keeps the old attribution and
   the next one sees the new.
5. If this process is Hermes's TUI/desktop gateway, its workspace callback
   re-anchors the live session and tells the desktop (``session.info``).
   That step only adds to what is already durable; a failure is reported.

A crash between 3 and 4 leaves the cwd moved without a record: the folder,
which is the target project's, then attributes the session to it anyway (an
earlier record left behind holds only while the session is in the folder
that move left it in). The record dies with the transaction, so the move is
also kept in a file of its own before Hermes writes (``records.note_moving``):
the next move, or ``session`` on the command line, records it as it was
when Hermes's write took place, and forgets it when it did not
(:func:`finish_interrupted`).

Automatic projects. A session also moves into an automatic project (named
as ``projects`` prints it, ``notes`` or ``notes (auto)``, or by its folder;
or one the session itself was moved out of, even with no session left
there): its cwd becomes that project's id, the git root or folder Hermes
groups by, through the same write, and its record is deleted in the same
transaction (the move is still logged, ``to_kind = 'auto'``), so its folder
attributes it, as Hermes's sidebar groups it. When an explicit project
would take that folder (one created over it meanwhile), the move could not
take effect and is refused.

Git fields on Hermes 0.19.0: ``update_session_cwd`` writes only non-empty
values, so it cannot clear a ``git_repo_root`` left over from the old folder,
and Hermes's sidebar would keep grouping the session by that stale root.
When the new folder is a repository its real root and branch are written, as
Hermes's own GUI move does; when it is not and the old root lies elsewhere,
the folder itself is written as the root (a workaround; the field is read
only by the sidebar's grouping). Hermes releases whose ``update_session_cwd``
takes ``replace_git_meta`` get the real values, empty ones clearing the fields.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path

from .errors import DONE, NOTHING, DataError, PluginError, UsageError, brief
from .hermes import host, paths
from .hermes.facts import ProjectInfo, SessionFacts
from .hermes.host import Caller
from .hermes.projects import folded_name, load_projects
from .hermes.statedb import reading
from .keyword.querytext import clean_ref
from .results import link
from .scope import gitroot, records, sessionref
from .scope.attribution import Attribution, FolderIndex, deepest_match, resolve_own
from .scope.pathkeys import is_under, path_key
from .scope.resolve import (
    attribution_map,
    attribution_of,
    auto_name,
    auto_name_in,
    auto_names,
    auto_project_named,
    catalog,
    live_project,
    located,
    project_owning,
    unknown_project,
)
from .scope.sessionref import SessionRefError, SessionRow

logger = logging.getLogger(__name__)

ACTION = "move sessions into it"
WRITTEN_BY = "SessionDB.update_session_cwd"


class MoveError(UsageError):
    """The move cannot be done as asked; nothing was changed."""

    codes = ("bad_argument", "no_folder", "folder_missing", "inside_project")


class MoveFailed(DataError):
    """Hermes or the plugin's records could not be written; the message says what was changed."""

    codes = ("hermes_write_failed", "no_hermes")


# --- pure: arguments, plan, sidebar ---------------------------------------------


@dataclass(frozen=True)
class MoveRequest:
    project: str
    session: str | None = None  # None: the calling session


def request_from_args(args: object) -> MoveRequest:
    if not isinstance(args, dict):
        raise MoveError("Arguments must be an object with at least 'project'.", "bad_argument")
    project, session = args.get("project"), args.get("session")
    # Given, but as an object or a list (models send {"name": ...}): as the search refuses one.
    if project is not None and not isinstance(project, str):
        raise MoveError("'project' must be a project id, slug, name or folder.", "bad_argument")
    # Cut and cleaned as the search's ``project`` is: both tools name a project alike, and a
    # refusal does not quote 100 KB of a reference back to the agent.
    project = clean_ref(project or "")
    if not project:
        raise MoveError("'project' is required: the target project's id, slug, name or folder.", "bad_argument")
    if session is not None and not isinstance(session, str):
        raise MoveError("'session' must be a session id, an @session: link or a title.", "bad_argument")
    if session is None:
        _no_session_under_another_key(args)
    return MoveRequest(project, session.strip() if session and session.strip() else None)


def _no_session_under_another_key(args: dict) -> None:
    """Without ``session`` the move takes the asking conversation: an argument this tool does not take
    may be the session meant, under another name (the search's results call it ``session_id``), so
    it is refused rather than moving this conversation in its place."""
    other = next((key for key in args if key not in ("project", "session")), None)
    if other is not None:
        raise MoveError(f"{brief(other, 40)} is not an argument of this tool: name the session to move with "
                        "'session' (a session id, an @session: link or a title), or give 'project' alone to move "
                        "this conversation. Nothing was moved.", "bad_argument")


@dataclass(frozen=True)
class Target:
    """Where a session is moved: an explicit project, or an automatic one (``id`` is its folder)."""

    kind: str  # "explicit" | "auto"
    id: str
    name: str
    project: ProjectInfo | None = None  # the explicit project

    @classmethod
    def explicit(cls, project: ProjectInfo) -> Target:
        return cls("explicit", project.id, project.name, project)

    def as_json(self) -> dict:
        return {"kind": self.kind, "id": self.id, "name": self.name}

    @property
    def label(self) -> str:
        return f"project '{self.name}'" if self.kind == "explicit" else f"automatic project '{self.name}'"


def target_folder(project: ProjectInfo) -> str | None:
    """Where a moved session works: the primary folder, as Hermes's project_switch uses."""
    return project.primary_path or (project.folders[0] if project.folders else None)


@dataclass(frozen=True)
class GitAt:
    """The repository at the target folder, as found on disk."""

    root: str | None = None
    branch: str | None = None


@dataclass(frozen=True)
class CwdWrite:
    """Arguments for Hermes's ``update_session_cwd`` and the row they leave behind."""

    cwd: str
    git_branch: str | None
    git_repo_root: str | None
    replace_git_meta: bool
    branch_after: str | None
    root_after: str | None
    placeholder_root: bool = False  # 0.19.0 workaround: the folder written as its own root
    stale_branch: bool = False  # the old branch stays (0.19.0 cannot clear it)


def _same(a: str | None, b: str | None) -> bool:
    return (a or "") == (b or "")


def plan_cwd(row: SessionRow, folder: str, git: GitAt, can_clear: bool) -> CwdWrite | None:
    """What to pass to ``update_session_cwd``; None when the row already says it."""
    if can_clear:
        write = CwdWrite(folder, git.branch, git.root, True, git.branch, git.root)
    elif git.root:
        write = CwdWrite(folder, git.branch, git.root, False, git.branch or row.git_branch, git.root,
                         stale_branch=bool(row.git_branch) and not git.branch)
    else:
        old_root = (row.git_repo_root or "").strip()
        if old_root and not is_under(old_root, folder):
            write = CwdWrite(folder, None, folder, False, row.git_branch, folder,
                             placeholder_root=True, stale_branch=bool(row.git_branch))
        else:
            write = CwdWrite(folder, None, None, False, row.git_branch, row.git_repo_root,
                             stale_branch=bool(row.git_branch) and not old_root)
    if _same(write.cwd, row.cwd) and _same(write.branch_after, row.git_branch) \
            and _same(write.root_after, row.git_repo_root):
        return None
    return write


def plan_auto_cwd(row: SessionRow, folder: str, git: GitAt, can_clear: bool) -> CwdWrite | None:
    """Like :func:`plan_cwd`, for an automatic project's folder (its id: the git root or the folder).

    Hermes groups an automatic project by the session's git root, else its
    cwd, so the root left on the row must be none or the folder itself. On
    0.19.0 an old root that holds the folder (say one an earlier move wrote
    as a placeholder) cannot be cleared: the folder is written as the root.
    """
    write = plan_cwd(row, folder, git, can_clear)
    root = write.root_after if write else row.git_repo_root
    if not (root or "").strip() or path_key(root) == path_key(folder):
        return write
    return CwdWrite(folder, git.branch, folder, False, git.branch or row.git_branch, folder,
                    placeholder_root=True, stale_branch=bool(row.git_branch) and not git.branch)


def sidebar_project(projects: list[ProjectInfo], cwd: str, live_root: str | None,
                    persisted_root: str | None) -> ProjectInfo | None:
    """The explicit project Hermes's sidebar puts a session in (``project_tree._project_for_session``).

    The repository comes from probing the cwd, else the persisted root; the
    deepest folder matching the cwd or that root wins, the cwd on a tie.
    """
    repo_root = live_root or persisted_root or ""
    targets = [cwd, repo_root] if repo_root and repo_root != cwd else [cwd]
    return deepest_match(FolderIndex(projects), targets)


def sidebar_hidden(row: SessionRow) -> str | None:
    """Why Hermes's sidebar does not list this session on its own, if it does not."""
    if row.source == "cron":
        return "Hermes's sidebar does not list cron sessions."
    if row.archived:
        return "The session is archived, so Hermes's sidebar does not list it."
    if row.delegated:
        return "Subagent runs are not listed in Hermes's sidebar on their own."
    if row.message_count < 1:
        return "Hermes's sidebar lists sessions once they have messages."
    return None


def _json(project: ProjectInfo | None) -> dict | None:
    return {"kind": "explicit", "id": project.id, "name": project.name} if project else None


def auto_sidebar_report(target: Target, hidden: str | None) -> dict:
    """The sidebar forecast of a move into an automatic project (one an explicit project
    would take is refused before this), in the shape of :func:`sidebar_report`."""
    report: dict = {"agrees": True, "project": target.as_json()}
    if hidden:
        report["listed"] = False
        report["note"] = hidden
    return report


def sidebar_report(target: ProjectInfo, shown: ProjectInfo | None, folder: str, root: str | None,
                   hidden: str | None) -> dict:
    report: dict = {"agrees": shown is not None and shown.id == target.id, "project": _json(shown)}
    if hidden:
        report["listed"] = False
        report["note"] = hidden
    if report["agrees"]:
        return report
    follows = f"This plugin follows the move: the session is searched as part of '{target.name}'."
    if shown is None:
        report["reason"] = (f"Hermes's sidebar will not show it under any project: {folder}, the project's "
                            f"primary path, is not one of its folders in projects.db. {follows}")
    elif any(path_key(f) == path_key(folder) for f in shown.folders):
        report["reason"] = (f"Project '{shown.name}' ({shown.id}) declares the same folder {folder} and was "
                            f"created first, so Hermes's sidebar lists the session there. {follows}")
    else:
        report["reason"] = (f"Hermes's sidebar groups it under '{shown.name}' ({shown.id}) by its folder "
                            f"{folder} and git root {root or '-'}. {follows}")
    return report


# --- I/O edge --------------------------------------------------------------------


@dataclass
class _Plan:
    target: Target
    row: SessionRow
    before: Attribution
    folder: str
    write: CwdWrite | None
    sidebar: dict
    notes: list[str]
    cwd_written: bool = False  # Hermes saved the new cwd (whatever happens to the record)

    @property
    def branch_after(self) -> str | None:
        return self.write.branch_after if self.write else self.row.git_branch

    @property
    def root_after(self) -> str | None:
        return self.write.root_after if self.write else self.row.git_repo_root


def _caller_row(conn: sqlite3.Connection, caller: Caller) -> tuple[SessionRow, list[str]]:
    for sid in caller.session_ids:
        row = sessionref.fetch(conn, sid)
        if row is None:
            continue
        conversation = sessionref.conversation_of(conn, row)
        if conversation.id != row.id:
            return conversation, [f"The calling session {row.id} is a subagent run; the conversation that "
                                  f"delegated it ({conversation.id}) was moved instead."]
        return row, []
    if caller.session_ids:
        raise SessionRefError(
            f"The current session ({caller.session_ids[0]}) is not in Hermes's session database yet; "
            "pass 'session' to move another one, or try again after this turn.", "unknown_session")
    raise SessionRefError("There is no current session to move here: pass 'session' (a session id, "
                          "an @session: link or a title).", "no_session")


def _already(row: SessionRow, target: Target, before: Attribution, profile: str) -> dict:
    title = row.title or row.id
    return {
        "success": True,
        "outcome": NOTHING,
        "moved": False,
        "reason": "already_in_project",
        "session_id": row.id,
        "title": row.title or "",
        "link": link(profile, row.id),
        "project": before.as_json(),
        "attributed_by": before.via,
        "cwd": row.cwd,
        "message": f"Session '{title}' is already in {target.label}; nothing was changed.",
    }


def _plan(home: Path, caller: Caller, req: MoveRequest) -> _Plan | dict:
    with reading(paths.state_db_path(home)) as (conn, _shape):
        # Read afresh: a project created or archived a moment ago must count.
        projects = load_projects(paths.projects_db_path(home))
        amap = attribution_map(home, conn)
        if amap.records_error is not None:  # a move must be recorded: refused, nothing changed
            raise amap.records_error
        explicit = live_project(projects, req.project, ACTION) or project_owning(home, projects, req.project)
        notes: list[str]
        if req.session:
            row, notes = sessionref.find(conn, home, req.session), []
        else:
            row, notes = _caller_row(conn, caller)
        auto = None if explicit is not None else _auto_named(home, projects, amap, req.project, row.id)
        before = attribution_of(amap, row.facts)
    if auto is not None:
        return _plan_auto(home, projects, amap, auto, row, before, notes)
    if explicit is None:  # _auto_named raises for a name that is neither
        raise AssertionError(f"no project named {req.project!r}")
    target = explicit
    if before.kind == "explicit" and before.id == target.id:
        return _already(row, Target.explicit(target), before, paths.profile_name(home))
    folder = target_folder(target)
    if not folder:
        raise MoveError(f"Project '{target.name}' ({target.id}) has no folder to move the session to; "
                        "add one in Hermes first.", "no_folder")
    git = _git_at(Target.explicit(target), folder)
    write = plan_cwd(row, folder, git, host.can_clear_git_meta())
    root_after = write.root_after if write else row.git_repo_root
    shown = sidebar_project(projects, folder, git.root, root_after)
    notes += _git_notes(row, write)
    sidebar = sidebar_report(target, shown, folder, root_after, sidebar_hidden(row))
    return _Plan(Target.explicit(target), row, before, folder, write, sidebar, notes)


def _git_at(target: Target, folder: str) -> GitAt:
    """The repository and branch of the folder a session moves to, which must exist here."""
    if os.path.exists(folder) and not os.path.isdir(folder):
        raise MoveError(f"The folder of {target.label} is {folder}, which is a file, not a folder; nothing was "
                        "changed.", "folder_missing", folder=folder)
    if not os.path.isdir(folder):
        raise MoveError(f"The folder of {target.label}, {folder}, does not exist on this machine; "
                        "nothing was changed.", "folder_missing", folder=folder)
    return GitAt(gitroot.find_git_root(folder), gitroot.find_git_branch(folder))


def _auto_named(home: Path, projects: list[ProjectInfo], amap, ref: str, session_id: str) -> Attribution:
    """The automatic project ``ref`` names as ``projects`` prints it (``notes``, ``notes (auto)``),
    or by its folder, while it has sessions, as a search takes it; else one this session was
    moved out of (it may have been that project's only session)."""
    place = located(amap.ctx, ref)
    if place is not None:
        if place.kind == "auto" and place.key in amap.by_project:
            return place
    else:
        auto = auto_project_named(amap, ref)
        if auto is not None:
            return auto
    left = _left_automatic(home, session_id, ref)
    if left is not None:
        return left
    raise unknown_project(projects, ref, auto_names(amap))


def _left_automatic(home: Path, session_id: str, ref: str) -> Attribution | None:
    """The automatic project (by name or folder) a recorded move took this session out of, the latest."""
    wanted = auto_name_in(ref)
    for move in reversed(records.load_history(records.records_path(paths.data_dir(home)), session_id)):
        key = move.get("from_id") or ""
        if move.get("from_kind") == "auto" and key and (
                folded_name(auto_name(key)) == wanted or path_key(ref.strip()) == key):
            return Attribution("auto", key, auto_name(key), "recorded")
    return None


def _plan_auto(home: Path, projects: list[ProjectInfo], amap, auto: Attribution, row: SessionRow,
               before: Attribution, notes: list[str]) -> _Plan | dict:
    """A move back into an automatic project: the session's folder becomes the project's
    folder (its id: the git root or folder Hermes groups by) and its record is dropped, so
    that folder attributes it, for Hermes's sidebar and for this plugin alike."""
    folder, name = auto.id, auto.name
    if folder is None or name is None:  # an automatic project is its folder, and is named after it
        raise AssertionError(f"an automatic project without a folder or a name: {auto}")
    target = Target("auto", folder, name)
    if before.kind == "auto" and before.id == folder:
        return _already(row, target, before, paths.profile_name(home))
    git = _git_at(target, folder)
    write = plan_auto_cwd(row, folder, git, host.can_clear_git_meta())
    root_after = write.root_after if write else row.git_repo_root
    shown = sidebar_project(projects, folder, git.root, root_after)
    after = resolve_own(SessionFacts(id="", cwd=folder, git_repo_root=root_after), amap.ctx)
    if shown is not None or after is None or after.key != auto.key:
        owner = shown or (amap.ctx.live.get(after.id) if after is not None and after.kind == "explicit" else None)
        why = (f"its folder {folder} is inside project '{owner.name}' ({owner.id}), which Hermes groups "
               f"the session into instead; move it to '{owner.name}'" if owner is not None else
               f"a session working in {folder} would not be grouped under it")
        raise MoveError(f"Cannot move into automatic project '{auto.name}': {why}. Nothing was changed.",
                        "inside_project", folder=folder)
    notes += _git_notes(row, write)
    return _Plan(target, row, before, folder, write, auto_sidebar_report(target, sidebar_hidden(row)), notes)


def _git_notes(row: SessionRow, write: CwdWrite | None) -> list[str]:
    notes = []
    if write and write.placeholder_root:
        notes.append(f"Hermes 0.19.0 cannot clear the old git root ({row.git_repo_root}); the new folder was "
                     "recorded as the session's git root instead, so Hermes's sidebar does not keep the "
                     "session under the old repository.")
    if write and write.stale_branch:
        notes.append(f"The old git branch '{row.git_branch}' stays on the session: Hermes 0.19.0 cannot clear "
                     "it (the sidebar may use it to label the session's lane).")
    return notes


class _HermesWriteFailed(Exception):
    pass


def _record_and_write(home: Path, plan: _Plan) -> None:
    row, write = plan.row, plan.write
    move = records.Move(
        session_id=row.id, project_id=plan.target.id, project_name=plan.target.name,
        from_kind=plan.before.kind, from_id=plan.before.id, from_name=plan.before.name,
        from_cwd=row.cwd, from_git_branch=row.git_branch, from_git_repo_root=row.git_repo_root,
        to_cwd=plan.folder,
        to_git_branch=plan.branch_after,
        to_git_repo_root=plan.root_after,
        written_by=WRITTEN_BY if write else None,
        to_kind=plan.target.kind,
    )
    data_dir, at, noted, recorded = paths.data_dir(home), time.time(), False, False
    try:
        with records.recording(data_dir) as recorder:
            recorder.record(move, at)
            if write is not None:
                records.note_moving(data_dir, move, at)
                noted = True
                try:
                    host.write_session_cwd(home, row.id, write.cwd, write.git_branch, write.git_repo_root,
                                           write.replace_git_meta)
                except host.HermesMissing:
                    raise
                except Exception as exc:  # whatever Hermes raised: undo the record, report it
                    raise _HermesWriteFailed(f"{type(exc).__name__}: {exc}") from exc
                plan.cwd_written = True
        recorded = True
    finally:
        # Hermes wrote the folder but the record did not commit (a disk full in between): the move's
        # own file stays, for the next move or look to record it, as after a killed move. Removed,
        # where the session had been was lost, and a move again found it in place and recorded nothing.
        if noted and (recorded or not plan.cwd_written):
            records.done_moving(data_dir)


def finish_interrupted(home: Path) -> None:
    """Record the move a killed process left in ``records.note_moving``'s file as it was, if Hermes
    had written the session's folder (the row holds what the move wrote), and forget it either way.
    Takes the move lock, only when there is such a file."""
    data_dir = paths.data_dir(home)
    # os.path: False too where the file cannot be looked for (a home whose name is too long), where
    # Path.exists raised, and every move and look at a session answered internal.
    if not os.path.exists(data_dir / records.JOURNAL_NAME):
        return
    with records.moving(data_dir):
        kept = records.interrupted(data_dir)
        if kept is not None:
            move, at = kept
            # By id alone (none: deleted from Hermes since, nothing to record). Looked up as a move's
            # ``session`` argument is, a session titled with the id of one deleted since was taken for it.
            with reading(paths.state_db_path(home)) as (conn, _shape):
                row = sessionref.fetch(conn, move.session_id)
            written = row is not None and _same(row.cwd, move.to_cwd) and _same(
                row.git_branch, move.to_git_branch) and _same(row.git_repo_root, move.to_git_repo_root)
            if written and not records.logged(records.records_path(data_dir), move.session_id, at):
                with records.recording(data_dir) as recorder:
                    recorder.record(move, at)
                catalog(home).invalidate()
                logger.info("recorded the move of %s into %s that a killed process left", move.session_id,
                            move.project_id)
        records.done_moving(data_dir)


def _re_anchor_live_session(plan: _Plan) -> str:
    """Step 5: the TUI/desktop gateway's own move of a live session, when this is that process."""
    callback = host.workspace_callback()
    if callback is None:
        return "no live GUI session in this process; Hermes picks the folder up when the session is resumed"
    try:
        project_id = plan.target.id if plan.target.kind == "explicit" else None
        found = host.call_workspace_callback(callback, plan.row.id, plan.folder, plan.target.name, project_id)
    except Exception as exc:  # the durable part is done; say what did not happen
        plan.notes.append(f"Hermes's workspace callback failed ({type(exc).__name__}: {exc}); the session's "
                          "saved folder is moved, a live window follows after reopening the session.")
        return "workspace callback failed"
    if found is False:
        return "not open in this gateway; Hermes picks the folder up when the session is opened"
    return "re-anchored through Hermes's workspace callback (if the session is open in this gateway)"


def run(home: Path, caller: Caller, args: object) -> dict:
    """One move, start to finish; always returns a response dict, never raises for bad input.

    A conversation Hermes compressed into a chain of sessions moves whole: the session named first,
    then each other part, one move each, as Hermes's sidebar shows the chain as one conversation."""
    try:
        req = request_from_args(args)
        finish_interrupted(home)  # a move cut short first: its record says where the session was
        response = _move_one(home, caller, req)
        if response.get("success"):
            _move_parts(home, caller, req, response)
        return response
    except PluginError as exc:
        return exc.envelope()


def _move_one(home: Path, caller: Caller, req: MoveRequest) -> dict:
    # A refused or no-op request is answered from reads alone: it never
    # touches the data folder, not even to take the lock (unless a move was cut short).
    plan = _plan(home, caller, req)
    if isinstance(plan, dict):
        return plan
    with records.moving(paths.data_dir(home)):
        plan = _plan(home, caller, req)
        return plan if isinstance(plan, dict) else _carry_out(home, plan)


def _move_parts(home: Path, caller: Caller, req: MoveRequest, response: dict) -> None:
    """Move the other parts of the moved session's conversation into the same project, each a move of
    its own (a part left behind by a failure is said, and moving the conversation again finishes it)."""
    with reading(paths.state_db_path(home)) as (conn, _shape):
        others = sessionref.compression_parts(conn, response["session_id"])
    if not others:
        return
    parts: list[dict] = []
    for sid in others:
        try:
            done = _move_one(home, caller, MoveRequest(req.project, sid))
        except PluginError as exc:
            done = exc.envelope()
        part = {"session_id": sid, "moved": bool(done.get("moved"))}
        if not part["moved"] and not done.get("success"):
            part["error"] = str(done.get("error"))
        parts.append(part)
    response["conversation_parts"] = parts
    moved = [part["session_id"] for part in parts if part["moved"]]
    notes = response.setdefault("notes", [])
    if moved:
        response["outcome"] = DONE
    if moved and not response.get("moved"):
        response["message"] = (f"Session '{response['title'] or response['session_id']}' was already in "
                               f"'{response['project']['name']}'; the other parts of its conversation were moved "
                               f"there: {', '.join(moved)}.")
    elif moved:
        notes.append(f"Hermes compressed this conversation into several sessions; the other parts moved too: "
                     f"{', '.join(moved)}.")
    notes += [f"Part {part['session_id']} of this conversation did not move ({part['error']}); run the move again "
              "to move it." for part in parts if "error" in part]


def _carry_out(home: Path, plan: _Plan) -> dict:
    """Steps 2-5 for a plan made under the move lock."""
    try:
        _record_and_write(home, plan)
    except host.HermesMissing as exc:
        return MoveFailed(f"{exc} Nothing was changed.", "no_hermes").envelope()
    except _HermesWriteFailed as exc:
        return MoveFailed(f"Hermes could not save the session's new working folder ({exc}); the move was undone "
                          "and nothing was changed.").envelope()
    except DataError as exc:
        if plan.cwd_written:
            return DataError(f"{exc} Hermes had already moved the session's working folder to {plan.folder}, so "
                             "searches follow that folder; run the move again to record it.", exc.code).envelope()
        return DataError(f"{exc} Nothing was changed.", exc.code).envelope()
    # Hermes's row changed: the next search re-reads every row, not just new ones.
    catalog(home).invalidate()
    live = _re_anchor_live_session(plan)
    return _moved(home, plan, live)


def _moved(home: Path, plan: _Plan, live: str) -> dict:
    row, target, write = plan.row, plan.target, plan.write
    before = plan.before.as_json()
    title = row.title or row.id
    origin = "no project" if plan.before.kind == "home" else f"'{plan.before.name}'"
    return {
        "success": True,
        "outcome": DONE,
        "moved": True,
        "session_id": row.id,
        "title": row.title or "",
        "link": link(paths.profile_name(home), row.id),
        "project": target.as_json(),
        "previous_project": before,
        "cwd": plan.folder,
        "previous_cwd": row.cwd,
        "git": {"branch": plan.branch_after, "repo_root": plan.root_after},
        "written_by": WRITTEN_BY if write else None,
        "live_session": live,
        "sidebar": plan.sidebar,
        "notes": plan.notes,
        "message": (f"Moved session '{title}' from {origin} to {target.label}; its working folder is "
                    f"now {plan.folder}. Searches from '{target.name}' include it from now on."),
    }
