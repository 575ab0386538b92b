"""Which sessions a search may look at.

A project's scope is every session whose attribution is that project,
worked out afresh for each search (a move, a new project folder or a new
session counts at once), minus the caller's own conversation unless asked.
Resolving 20k sessions takes tens of milliseconds, so the map is cached per
process and rebuilt whenever its inputs change.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import paths
from .attribution import (
    HOME,
    Attribution,
    AttributionContext,
    JunkPolicy,
    ProjectInfo,
    SessionFacts,
    attribute,
    attribute_all,
    lineage_root,
    resolve_own,
)
from .pathkeys import is_windows_path
from .projects import current_projects, find_project
from .records import current_records, records_path
from .statedb import SessionCatalog


class ScopeError(ValueError):
    """The caller named a project that cannot be used (unknown, ambiguous, archived)."""

    def __init__(self, message: str, candidates: list[dict] | None = None, code: str = "unknown_project"):
        super().__init__(message)
        self.candidates = candidates or []
        self.code = code


@dataclass(frozen=True)
class Caller:
    """Who is asking: the session ids the host offers (best first) and a folder."""

    session_ids: tuple[str, ...] = ()
    cwd: str | None = None

    @classmethod
    def of(cls, *ids: str | None, cwd: str | None = None) -> "Caller":
        return cls(tuple(i.strip() for i in ids if isinstance(i, str) and i.strip()), cwd)


@dataclass
class Scope:
    attribution: Attribution
    session_ids: list[str]
    excluded_lineage: list[str] = field(default_factory=list)
    caller_session: str | None = None  # the caller's row in state.db, if any
    message_estimate: int = 0  # messages in scope, from possibly stale counts

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


_GIT_ROOTS = paths.GitRootCache()
_MAP_TTL = 60.0  # the git probe's answers age; rebuild at least this often
_maps: dict[str, _AttributionMap] = {}
_maps_lock = threading.Lock()


def _context(home: Path, projects: list[ProjectInfo], records: dict[str, str]) -> AttributionContext:
    homes, hermes_homes = paths.junk_roots(home)
    return AttributionContext(
        projects=projects,
        records=records,
        junk=JunkPolicy.from_paths(homes, hermes_homes),
        git_root=_GIT_ROOTS,
    )


def _only_added(old: dict[str, SessionFacts], new: dict[str, SessionFacts]) -> list[str] | None:
    """The sessions ``new`` adds to ``old``, or None if anything else changed."""
    if len(new) < len(old) or any(new.get(sid) != facts for sid, facts in old.items()):
        return None
    return [sid for sid in new if sid not in old]


def attribution_map(home: Path, conn: sqlite3.Connection) -> _AttributionMap:
    """Attribution of every session in ``home``'s state.db (cached)."""
    catalog = SessionCatalog.for_path(paths.state_db_path(home))
    version, facts = catalog.snapshot(conn)
    projects = current_projects(paths.projects_db_path(home))
    # Re-read after every commit to recall.db, so a move counts from the next search on.
    records = current_records(records_path(paths.data_dir(home)))
    key = (version, tuple(projects), tuple(sorted(records.items())))
    cache_key = str(home)
    with _maps_lock:
        cached = _maps.get(cache_key)
    fresh = cached is not None and time.monotonic() - cached.built_at < _MAP_TTL
    if fresh and cached.key == key:
        return cached
    added = _only_added(cached.facts, facts) if fresh and cached.key[1:] == key[1:] else None
    if added is not None:
        # A new session or two (every new chat): attribute just those.
        ctx, built_at = cached.ctx, cached.built_at
        by_session = dict(cached.by_session)
        for sid in added:
            attribute(sid, facts, ctx, by_session)
        by_project = {k: list(v) for k, v in cached.by_project.items()}
    else:
        ctx, built_at = _context(home, projects, records), time.monotonic()
        by_session = attribute_all(facts, ctx)
        by_project, added = {}, list(by_session)
    for sid in added:
        by_project.setdefault(by_session[sid].key, []).append(sid)
    built = _AttributionMap(key, built_at, by_session, by_project, ctx, facts)
    with _maps_lock:
        _maps[cache_key] = built
    return built


def attribution_for_caller(amap: _AttributionMap, caller: Caller) -> tuple[Attribution, str | None]:
    """(attribution, the caller's session id when its row exists in state.db)."""
    for sid in caller.session_ids:
        if sid in amap.facts:
            return amap.by_session[sid], sid
    # The row is written lazily before the first flush: fall back to where
    # the caller is working.
    first = caller.session_ids[0] if caller.session_ids else ""
    own = resolve_own(SessionFacts(id=first, cwd=caller.cwd), amap.ctx)
    return own or HOME, None


def attribution_of(amap: _AttributionMap, facts: SessionFacts) -> Attribution:
    """One session's attribution; a row newer than the map is resolved on its own."""
    return amap.by_session.get(facts.id) or resolve_own(facts, amap.ctx) or HOME


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


def unknown_project(projects: list[ProjectInfo], ref: str) -> ScopeError:
    """The error for a name or folder that matches nothing, listing what exists."""
    what = f"No project in this profile owns {ref}." if _folder(ref) else f"No project '{ref}' in this profile."
    return ScopeError(what, _listed([p for p in projects if not p.archived])[:20])


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
    return ctx.live.get(place.id) if place is not None and place.kind == "explicit" else None


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
    raise unknown_project(amap.ctx.projects, ref)


def resolve_scope(
    home: Path,
    conn: sqlite3.Connection,
    caller: Caller,
    *,
    project_ref: str | None = None,
    include_current: bool = False,
) -> Scope:
    amap = attribution_map(home, conn)
    mine, caller_sid = attribution_for_caller(amap, caller)
    attribution = attribution_for_ref(amap, project_ref) if project_ref else mine
    if attribution.kind == "home":
        return Scope(attribution, [], caller_session=caller_sid)
    members = amap.by_project.get(attribution.key, [])
    excluded: list[str] = []
    if not include_current and caller_sid:
        root = lineage_root(caller_sid, amap.facts)
        roots = {sid: lineage_root(sid, amap.facts) for sid in members}
        excluded = [sid for sid in members if roots[sid] == root]
        members = [sid for sid in members if roots[sid] != root]
    estimate = sum(amap.facts[sid].message_count for sid in members if sid in amap.facts)
    return Scope(attribution, members, excluded, caller_sid, estimate)
