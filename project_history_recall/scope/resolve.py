"""Which sessions a search may look at.

A project's scope is every session whose attribution is that project,
worked out afresh for each search (a move, a new project folder or a new
session counts at once), minus the caller's own conversation unless asked.
Resolving 20k sessions takes tens of milliseconds, so the map is cached per
process and rebuilt whenever its inputs change.
"""

from __future__ import annotations

import difflib
import os
import sqlite3
import string
import time
from collections import ChainMap
from typing import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import UsageError
from ..hermes import live_context, paths
from ..hermes.catalog import SessionCatalog, read_facts, read_facts_of
from ..hermes.facts import ProjectInfo, SessionFacts
from ..hermes.host import Caller
from ..hermes.projects import current_projects, find_project, folded_name
from ..hermes.readonly import StateDBError
from ..home import Home
from . import gitroot
from .attribution import (
    HOME,
    Attribution,
    AttributionContext,
    JunkPolicy,
    attribute,
    attribute_all,
    lineage,
    lineage_root,
    resolve_own,
)
from .pathkeys import base_name, comparison_segments, is_windows_path
from .records import Records, current_records, records_path


# Why a caller in no project gets nothing searched (or indexed), and what it can do instead.
HOME_REASON = (
    "This session is not in any project (it has no working folder), so there is no project "
    "history to search. Use project_session_move to put it in a project, or session_search "
    "to search all history."
)
# How many of the profile's projects a search from outside any project names.
_NAMED_PROJECTS = 8


def home_reason(home: Path) -> str:
    """Why a search from a session in no project (a messaging app's chat, a cron job without a folder)
    found nothing, and what works from there: naming a project in ``project`` searches it, and the
    agent is given the names to choose from, not only a move that would change where the chat is."""
    try:
        names = [p.name for p in current_projects(paths.projects_db_path(home)) if not p.archived]
    except StateDBError:
        names = []
    if not names:
        return HOME_REASON
    listed = ", ".join(names[:_NAMED_PROJECTS]) + (f" and {len(names) - _NAMED_PROJECTS} more"
                                                    if len(names) > _NAMED_PROJECTS else "")
    return (f"This session is not in any project (it has no working folder). To search a project's history "
            f"from here, name the project in 'project' (this profile's projects: {listed}). "
            "project_session_move puts this session in one; session_search searches all history.")


class ScopeError(UsageError):
    """The caller named a project that cannot be used (unknown, ambiguous, archived)."""

    codes = ("unknown_project", "ambiguous_project", "archived_project")

    def __init__(self, message: str, candidates: list[dict] | None = None, code: str | None = None):
        super().__init__(message, code, candidates=candidates or [])


@dataclass
class Scope:
    attribution: Attribution
    session_ids: list[str]
    excluded_lineage: list[str] = field(default_factory=list)
    caller_facts: SessionFacts | None = None  # the caller's row in state.db, if any
    message_estimate: int = 0  # messages in scope, from possibly stale counts
    # The caller's conversation, its first session first, down to the caller: a consent
    # token is bound to it, so that it proves the user agreed here and nowhere else.
    conversation: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()  # what the scope was resolved without (``_AttributionMap.records_error``)
    # The caller and the parts of its conversation before Hermes compressed it by rotation, latest first.
    parts: tuple[str, ...] = ()

    @property
    def caller_session(self) -> str | None:
        return self.caller_facts.id if self.caller_facts else None

    @property
    def members(self) -> list[str]:
        """Every session of the project, the caller's own conversation included:
        what is indexed (and consented to), though the caller's is not searched."""
        return list(self.session_ids) + list(self.excluded_lineage)


@dataclass
class _AttributionMap:
    key: tuple
    built_at: float
    by_session: dict[str, Attribution]
    by_project: dict[tuple, list[str]]
    ctx: AttributionContext
    facts: dict[str, SessionFacts]
    # recall.db damaged: the map attributes by Hermes's own data alone. A search goes on and says so
    # (``warnings``); a move, which must be recorded, raises it.
    records_error: StateDBError | None = None

    @property
    def warnings(self) -> tuple[str, ...]:
        if self.records_error is None:
            return ()
        return (f"{self.records_error} Searched without it, by Hermes's own data alone (the folder each move "
                "saved in Hermes): a session moved without its folder changing may be missing here, or "
                "found in the project it was moved out of.",)


class _Kept:
    """What scope resolution keeps in each home's slot: the session catalog, and the map built
    from it (rebuilt when its inputs change)."""

    def __init__(self, home: Home):
        self.catalog = SessionCatalog(home.state_db)
        self.map: _AttributionMap | None = None
        self.known: tuple[_AttributionMap, frozenset[tuple]] | None = None  # known_scopes of that map
        # scope key -> the file when that scope's folders were last read for sessions come into it
        self.checked: dict[tuple, tuple] = {}


def _kept(home: Path) -> tuple[Home, _Kept]:
    kept = Home.of(home)
    return kept, kept.slot("scope.resolve", _Kept)


def catalog(home: Path) -> SessionCatalog:
    """Every session's attribution facts in ``home``, kept in step with state.db (a move
    invalidates it: this process changed a row the catalog would not notice)."""
    return _kept(home)[1].catalog


_GIT_ROOTS = gitroot.GitRootCache()
_MAP_TTL = 60.0  # the git probe's answers age; rebuild at least this often


def _context(home: Path, projects: list[ProjectInfo], records: Records) -> AttributionContext:
    homes, hermes_homes = paths.junk_roots(home)
    return AttributionContext(
        projects=projects,
        records=records,
        junk=JunkPolicy.from_paths(homes, hermes_homes),
        git_root=_GIT_ROOTS,
    )


def _membership_change(old: dict[str, SessionFacts], new: dict[str, SessionFacts]) -> tuple[list, list] | None:
    """(sessions added, sessions removed) from ``old`` to ``new``, or None when
    anything else changed, or an added or removed session is another's parent
    (what that one inherits may change)."""
    added = [sid for sid in new if sid not in old]
    removed = [sid for sid in old if sid not in new]
    # The catalog hands over the same objects for unchanged rows: ``is`` spares 20k comparisons.
    if any(new[sid] is not facts and new[sid] != facts for sid, facts in old.items() if sid in new):
        return None
    touched = set(added) | set(removed)
    if removed and any(f.parent_session_id in touched for f in new.values()):
        return None
    if added and any(f.parent_session_id in touched for sid, f in old.items() if sid in new):
        return None
    return added, removed


def attribution_map(home: Path, conn: sqlite3.Connection) -> _AttributionMap:
    """Attribution of every session in ``home``'s state.db (cached).

    ``by_project`` holds only the sessions a search may look at (see
    ``SessionFacts.searchable``); ``by_session`` has every session."""
    kept, mine = _kept(home)
    # Re-read after every commit to recall.db, so a move counts from the next search on.
    try:
        records, damaged = current_records(records_path(paths.data_dir(home))), None
    except StateDBError as exc:
        # Damaged (not one a FIFO or a folder has taken the place of), or laid out by another release:
        # every search failed until the user moved it aside, though a move saves the session's new
        # folder in Hermes, which attributes it too.
        if exc.code not in ("corrupt", "schema"):
            raise
        records, damaged = {}, exc
    recorded = (tuple(sorted(records.items())), str(damaged) if damaged else None)
    with kept.lock:
        cached = mine.map
    if cached is not None and cached.key[2] != recorded:
        # A move committed (here or in another process) after Hermes saved the session's
        # new folder. The catalog would pick that row up only seconds later, and a move
        # back into an automatic project leaves no record to go by meanwhile: re-read.
        mine.catalog.invalidate()
    version, facts = mine.catalog.snapshot(conn)
    projects = current_projects(paths.projects_db_path(home))
    key = (version, tuple(projects), recorded)
    if cached is not None and time.monotonic() - cached.built_at >= _MAP_TTL:
        cached = None  # too old to build on
    if cached is not None and cached.key == key:
        return cached
    change = _membership_change(cached.facts, facts) if cached is not None and cached.key[1:] == key[1:] else None
    if cached is not None and change is not None:
        # A chat or two started or deleted (every /new does both): only those change.
        added, removed = change
        ctx, built_at = cached.ctx, cached.built_at
        by_session = {sid: a for sid, a in cached.by_session.items() if sid in facts}
        for sid in added:
            attribute(sid, facts, ctx, by_session)
        by_project = {k: list(v) for k, v in cached.by_project.items()}
        for sid in removed:
            members = by_project.get(cached.by_session[sid].key, [])
            if sid in members:
                members.remove(sid)
    else:
        ctx, built_at = _context(home, projects, records), time.monotonic()
        by_session = attribute_all(facts, ctx)
        by_project, added = {}, list(by_session)
    for sid in added:
        if facts[sid].searchable:
            by_project.setdefault(by_session[sid].key, []).append(sid)
    built = _AttributionMap(key, built_at, by_session, by_project, ctx, facts, damaged)
    with kept.lock:
        mine.map = built
    return built


def known_scopes(home: Path) -> frozenset[tuple] | None:
    """The keys of the scopes that have sessions a search may look at, as this process's last
    attribution map saw them (None before one was built): no reading, for what a search has
    just resolved its scope with. The same set object for as long as the map stands, so a
    search tells it from the last one by identity, not by walking ~200 projects."""
    kept, mine = _kept(home)
    with kept.lock:
        built = mine.map
        if built is None:
            return None
        if mine.known is None or mine.known[0] is not built:
            mine.known = (built, frozenset(key for key, sids in built.by_project.items() if sids))
        return mine.known[1]


def attribution_for_caller(amap: _AttributionMap, conn: sqlite3.Connection,
                           caller: Caller) -> tuple[Attribution, SessionFacts | None]:
    """(attribution, the caller's own row when it exists in state.db).

    The row is read afresh: its own facts decide, even for a session the
    catalog has not taken in, and a row without a folder is in no project;
    for the command line the folder decides (``Caller.by_folder``)."""
    own_row = next((facts for facts in (read_facts(conn, sid) for sid in caller.session_ids) if facts is not None),
                   None)
    if own_row is not None and not caller.by_folder:
        return attribution_of(amap, own_row), own_row
    # The row is written lazily before the first flush: fall back to where
    # the caller is working.
    first = caller.session_ids[0] if caller.session_ids and not caller.by_folder else ""
    own = resolve_own(SessionFacts(id=first, cwd=caller.cwd), amap.ctx)
    return own or HOME, own_row


def attribution_of(amap: _AttributionMap, facts: SessionFacts) -> Attribution:
    """The attribution of a session whose row was just read: its own facts, then its ancestors'."""
    return attribute(facts.id, ChainMap({facts.id: facts}, amap.facts), amap.ctx)


def left_scope(home: Path, conn: sqlite3.Connection, scope: Scope, session_ids: list[str]) -> bool:
    """Whether any of ``session_ids``, sessions a search of ``scope`` found, has left it by what its
    row says now: moved by Hermes (its desktop's move, ``project_switch``), archived, hidden or
    deleted. The catalog takes in such a change to a row only with its next full read, in the
    background (``SessionCatalog``); when one is seen here, the catalog is read again whole by the
    next resolution, so that the search can be made again on the scope as it is."""
    kept, mine = _kept(home)
    with kept.lock:
        amap = mine.map
    if amap is None or not session_ids:
        return False
    now = read_facts_of(conn, session_ids)
    if all(sid in now and now[sid].searchable and attribution_of(amap, now[sid]).key == scope.attribution.key
           for sid in session_ids):
        return False
    mine.catalog.invalidate()
    return True


# A row whose folder (``{0}``) may lie in a folder whose last segment is the first parameter: the
# segment is in its text; or the folder is one compared as Windows compares (see
# ``pathkeys.is_windows_path``: a drive's colon, a backslash or ``//``) and holds the segment in any
# case of its ASCII letters (the second parameter, to SQLite's ``lower``) or a character past ASCII,
# whose case folding is left to Python. ``instr``, not ``LIKE``: ``%`` and ``_`` in a folder's name
# are plain characters. In this order the usual row (a POSIX folder) costs three ``instr`` more than
# a match: ``lower`` and ``GLOB`` first cost twice that at 20,000 sessions.
_MAY_LIE_IN = ("(instr({0}, ?) > 0 OR ((instr({0}, ':') > 0 OR instr({0}, '\\') > 0 OR instr({0}, '//') > 0)"
               " AND (instr(lower({0}), ?) > 0 OR {0} GLOB '*[^ -~]*')))")
_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)  # as SQLite's lower()


# More segments than this to look for would make one long condition, which SQLite refuses past
# 1,000 terms deep (Hermes takes any number of folders for a project).
_MOST_SEGMENTS = 16


# Past this many sessions the walk ``came_in`` makes would cost a search more than its whole keyword
# budget (20 ms at p50): it reads every row, about 3.5 µs each where Hermes 0.19.0 keeps a system
# prompt in the row (81 ms at 20,000 sessions, 6.7 ms at 2,000). In a home that big a session moved
# into a project is taken in by the catalog's background re-read, which the search that sees the
# change starts; that search, and any made in the next moment, may miss it.
CAME_IN_MOST_SESSIONS = 5_000


def folder_condition(folders: Sequence[str]) -> tuple[str, tuple] | None:
    """SQL over ``sessions`` (and its parameters) true for every row whose ``cwd`` or
    ``git_repo_root`` lies in one of ``folders`` (``pathkeys.is_under``), and for few others;
    None when no folder has a segment to look for."""
    every = [segments for segments in map(comparison_segments, folders) if segments]
    if not every:
        return None
    lasts = list(dict.fromkeys(segments[-1] for segments in every))
    if len(lasts) > _MOST_SEGMENTS:
        # Too many to look for one by one: a segment all the folders share is in every row inside
        # any of them (their deepest common folder's last); without one, every row is placed.
        common: list[str] = []
        for place in zip(*every, strict=False):  # the n-th segment of each folder, to the shortest's end
            if any(segment != place[0] for segment in place):
                break
            common.append(place[0])
        if not common:
            return "1", ()
        lasts = [common[-1]]
    columns = ("cwd", "git_repo_root")
    return (" OR ".join(_MAY_LIE_IN.format(column) for _last in lasts for column in columns),
            tuple(value for last in lasts for _column in columns for value in (last, last.translate(_ASCII_LOWER))))


def came_in(home: Path, conn: sqlite3.Connection, amap: _AttributionMap, attribution: Attribution) -> bool:
    """Whether a session has come into ``attribution``'s project since the catalog was last read
    whole: moved there by Hermes (its desktop's move, ``project_switch``) or restored from its
    archive. The catalog takes in such a change to a row only with its next full read, in the
    background (``SessionCatalog``), so the sessions whose folder or repository may lie in the
    project's folders are read (the whole table is walked, as no index holds a folder: once per
    change of the file and project); when one has come in, the catalog is read whole by the next
    resolution. A session placed there only through a folder on disk (a symlink, a linked
    worktree outside the project's folder) whose row does not name the repository is not seen
    here, nor is any session in a home of more than ``CAME_IN_MOST_SESSIONS``: the next full read
    takes it in."""
    kept, mine = _kept(home)
    seen = mine.catalog.unread_change()
    if seen is None or mine.catalog.sessions_known() > CAME_IN_MOST_SESSIONS:
        return False
    with kept.lock:
        if mine.checked.get(attribution.key) == seen:
            return False
    project = amap.ctx.live.get(attribution.id or "") if attribution.kind == "explicit" else None
    found = folder_condition(project.folders if project is not None else (attribution.id or "",))
    rows = mine.catalog.read_matching(conn, *found) if found is not None else []
    members = set(amap.by_project.get(attribution.key, ()))
    if any(facts.searchable and facts.id not in members and attribution_of(amap, facts).key == attribution.key
           for facts in rows):
        mine.catalog.invalidate()
        return True
    with kept.lock:
        mine.checked[attribution.key] = seen
    return False


def project_now(home: Path, conn: sqlite3.Connection, session_id: str) -> tuple | None:
    """The key of the project ``session_id`` is in by its row, and its ancestors' rows, as they are
    now (None: it has no row). The catalog may hold an older folder (``SessionCatalog``)."""
    amap = attribution_map(home, conn)
    rows: dict[str, SessionFacts] = {}
    current: str | None = session_id
    while current and current not in rows:
        facts = read_facts(conn, current)
        if facts is None:
            break
        rows[current] = facts
        if resolve_own(facts, amap.ctx) is not None:
            break  # it places itself (or this ancestor places it): no row above counts
        current = facts.parent_session_id
    if session_id not in rows:
        return None
    return attribute(session_id, ChainMap(rows, amap.facts), amap.ctx).key


def _listed(projects: list[ProjectInfo]) -> list[dict]:
    return [{"id": p.id, "slug": p.slug, "name": p.name} for p in projects]


def live_project(projects: list[ProjectInfo], ref: str, action: str = "search it") -> ProjectInfo | None:
    """The live explicit project ``ref`` names by id, slug or name, None if none does.

    Raises ``ScopeError`` when ``ref`` is ambiguous or names an archived project.
    """
    live = [p for p in projects if not p.archived]
    project, candidates = find_project(live, ref)
    if project is not None:
        return project
    if candidates:
        raise ScopeError(f"'{ref}' matches several projects; use the id.", _listed(candidates), "ambiguous_project")
    archived, _ = find_project([p for p in projects if p.archived], ref)
    if archived is not None:
        raise ScopeError(f"Project '{archived.name}' ({archived.id}) is archived; restore it in Hermes to {action}.",
                         code="archived_project")
    return None


def auto_name(key_id: str) -> str:
    """How an automatic project is named (``projects`` lists it so): its folder's last part."""
    return base_name(key_id) or key_id


def unknown_project(projects: list[ProjectInfo], ref: str, automatic: Sequence[str] = ()) -> ScopeError:
    """The error for a name or folder that matches nothing: the names closest to it, else what exists."""
    live = [p for p in projects if not p.archived]
    if _folder(ref):
        return ScopeError(f"No project in this profile owns {ref}.", _listed(live)[:20])
    names = {folded_name(name): name for name in [*(p.name for p in live), *automatic]}
    close = [names[n] for n in difflib.get_close_matches(folded_name(ref), list(names), n=3, cutoff=0.6)]
    if close:
        hint = f" Did you mean {' or '.join(close)}?"
    elif names:
        more = len(names) - 10
        hint = f" Its projects: {', '.join(list(names.values())[:10])}{f' and {more} more' if more > 0 else ''}."
    else:
        hint = " It has none yet: create one with `hermes project create NAME FOLDER`."
    candidates = [p for p in live if p.name in close] if close else live
    return ScopeError(f"No project '{ref}' in this profile.{hint}", _listed(candidates)[:20])


def auto_name_in(ref: str) -> str:
    """The folded name ``ref`` gives an automatic project as ``projects`` prints it (``notes``, or
    ``notes (auto)``): folded first, so the mark is one in any case or width (``NOTES (AUTO)``)."""
    return folded_name(ref).removesuffix("(auto)").strip()


def auto_project_named(amap: "_AttributionMap", ref: str) -> Attribution | None:
    """The automatic project ``ref`` names as ``projects`` prints it (``notes``, or ``notes (auto)``)."""
    wanted = auto_name_in(ref)
    found = [key for key in amap.by_project if key[0] == "auto" and folded_name(auto_name(key[1])) == wanted]
    if len(found) > 1:
        raise ScopeError(f"'{ref}' names several automatic projects; give the folder instead.",
                         [{"id": key[1], "name": auto_name(key[1])} for key in found], "ambiguous_project")
    return Attribution("auto", found[0][1], auto_name(found[0][1]), "folder") if found else None


def auto_names(amap: "_AttributionMap") -> list[str]:
    return [auto_name(key[1]) for key in amap.by_project if key[0] == "auto"]


def _folder(ref: str) -> str | None:
    """``ref`` as an absolute folder (``~`` expanded), None when it is not one."""
    value = ref.strip()
    if value.startswith("~"):
        value = os.path.expanduser(value)
    return value if value.startswith("/") or is_windows_path(value) else None


def located(ctx: AttributionContext, ref: str) -> Attribution | None:
    """Where a session working in the folder ``ref`` belongs; None when ``ref`` is not a folder.

    By attribution's own rules, so a project's folder, or any folder inside
    it, names the deepest live project that owns it; else the automatic
    project of its repository or of the folder itself; else home.
    """
    folder = _folder(ref)
    return resolve_own(SessionFacts(id="", cwd=folder), ctx) if folder else None


def project_owning(home: Path, projects: list[ProjectInfo], ref: str) -> ProjectInfo | None:
    """The live explicit project a session working in the folder ``ref`` belongs to, if any."""
    ctx = _context(home, projects, {})
    place = located(ctx, ref)
    return ctx.live.get(place.id) if place is not None and place.kind == "explicit" and place.id is not None else None


def attribution_for_ref(amap: _AttributionMap, ref: str) -> Attribution:
    """A project named by the user: explicit id/slug/name, or a folder (see :func:`located`).

    A folder of an automatic project counts while it has sessions.
    """
    project = live_project(amap.ctx.projects, ref)
    if project is not None:
        return Attribution("explicit", project.id, project.name, "folder")
    place = located(amap.ctx, ref)
    if place is not None and (place.kind == "explicit" or (place.kind == "auto" and place.key in amap.by_project)):
        return place
    auto = auto_project_named(amap, ref) if place is None else None
    if auto is not None:
        return auto
    raise unknown_project(amap.ctx.projects, ref, auto_names(amap))


def _conversation(caller: Caller, own_row: SessionFacts | None, facts: dict[str, SessionFacts]) -> tuple[str, ...]:
    """A subagent or a compression continuation belongs to the conversation at the top of
    its parent chain; a session whose row is not written yet is named by the id the host gave."""
    chain = lineage(own_row.id, ChainMap({own_row.id: own_row}, facts))[::-1] if own_row else []
    return tuple(chain + [sid for sid in caller.session_ids[:1] if sid not in chain])


def resolve_scope(
    home: Path,
    conn: sqlite3.Connection,
    caller: Caller,
    *,
    project_ref: str | None = None,
    include_current: bool = False,
) -> Scope:
    for check in (True, False):
        amap = attribution_map(home, conn)
        mine, own_row = attribution_for_caller(amap, conn, caller)
        conversation = _conversation(caller, own_row, amap.facts)
        attribution = attribution_for_ref(amap, project_ref) if project_ref else mine
        if attribution.kind == "home":
            return Scope(attribution, [], caller_facts=own_row, conversation=conversation, warnings=amap.warnings)
        # When a session came in, the catalog is read whole by the next map: the scope once more.
        if not (check and came_in(home, conn, amap, attribution)):
            break
    members = amap.by_project.get(attribution.key, [])
    excluded: list[str] = []
    same_line: list[str] = []
    if not include_current and own_row is not None:
        root = lineage_root(own_row.id, amap.facts)
        same_line = [sid for sid in members if lineage_root(sid, amap.facts) == root]
    # One read for both: the caller's conversation (``_parts``) and its lineage in the project.
    ended = live_context.end_reasons(conn, {*conversation, *same_line})
    if own_row is not None and same_line:
        # What left the live context (``live_context``) is history; the caller is never.
        excluded = [sid for sid in same_line if sid not in ended or sid == own_row.id]
        members = [sid for sid in members if sid not in excluded]
    estimate = sum(amap.facts[sid].message_count for sid in members if sid in amap.facts)
    return Scope(attribution, members, excluded, own_row, estimate, conversation, amap.warnings,
                 _parts(conversation, ended))


def _parts(conversation: tuple[str, ...], ended: dict[str, str]) -> tuple[str, ...]:
    """The last of ``conversation`` (the caller) and the sessions above it that each ended in a
    compression, going on in the one below: one conversation, however many ids Hermes gave it."""
    parts: list[str] = []
    for sid in reversed(conversation):
        if parts and ended.get(sid) != live_context.COMPRESSED:
            break
        parts.append(sid)
    return tuple(parts)
