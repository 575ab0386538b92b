"""What a person asks before searching: where am I, what is in scope, which projects exist.

Same shape of answer as a search (dicts, ``success`` and ``error``), so the
CLI's ``--json`` and any future tool can print them as they are.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from . import paths
from .scope import Caller, ScopeError, attribution_map, resolve_scope
from .search import error, semantic_state
from .statedb import StateDBError, reading


def status(home: Path, caller: Caller) -> dict:
    try:
        with reading(paths.state_db_path(home)) as (conn, _shape):
            scope = resolve_scope(home, conn, caller, include_current=True)
    except (StateDBError, ScopeError) as exc:
        return error(str(exc), getattr(exc, "code", "error"))
    state, reason = semantic_state()
    return {
        "success": True,
        "folder": caller.cwd,
        "session_id": scope.caller_session,
        "project": scope.attribution.as_json(),
        "attributed_by": scope.attribution.via,
        "sessions_in_scope": len(scope.session_ids),
        "messages_in_scope": scope.message_estimate,
        "semantic_status": state,
        "semantic_reason": reason,
        "hermes_home": str(home),
        "profile": paths.profile_name(home),
    }


def list_projects(home: Path) -> dict:
    try:
        with reading(paths.state_db_path(home)) as (conn, _shape):
            amap = attribution_map(home, conn)
    except StateDBError as exc:
        return error(str(exc), exc.code)
    counts = Counter(a.key for a in amap.by_session.values())
    explicit = [
        {
            "kind": "explicit", "id": p.id, "slug": p.slug, "name": p.name, "folders": list(p.folders),
            "archived": p.archived, "sessions": counts.get(("explicit", p.id), 0),
        }
        for p in amap.ctx.projects
    ]
    auto = sorted(
        (
            {"kind": "auto", "id": key[1], "name": Path(key[1]).name or key[1], "sessions": n}
            for key, n in counts.items() if key[0] == "auto"
        ),
        key=lambda p: (-p["sessions"], p["id"]),
    )
    return {
        "success": True,
        "projects": explicit + auto,
        "home_bucket_sessions": counts.get(("home", None), 0),
        "hermes_home": str(home),
        "profile": paths.profile_name(home),
    }
