"""What a person asks before searching: where am I, what is in scope, which projects exist.

Same shape of answer as a search (dicts, ``success`` and ``error``), so the
CLI's ``--json`` and any future tool can print them as they are.
"""

from __future__ import annotations

import logging
from pathlib import Path

from . import settings as config
from .errors import DONE, PluginError
from .hermes import paths
from .hermes.host import Caller
from .hermes.readonly import journal_mode
from .hermes.statedb import reading
from .keyword import engine as keyword
from .move import finish_interrupted
from .results import link, warnings_field, when
from .scope import sessionref
from .scope.records import RecordError, load_history, records_path
from .scope.resolve import attribution_map, attribution_of, auto_name, resolve_scope
from .semantic import engine as semantic

logger = logging.getLogger(__name__)


def status(home: Path, caller: Caller) -> dict:
    try:
        with reading(paths.state_db_path(home)) as (conn, _shape):
            scope = resolve_scope(home, conn, caller, include_current=True)
            row = scope.caller_facts
            settings = config.load(home)
            words = keyword.report(home, settings, conn, scope.members)
            outcome = semantic.report(home, settings, conn, scope)
            mode = journal_mode(conn)
    except PluginError as exc:
        return exc.envelope()
    return {
        "success": True,
        "outcome": DONE,
        # The session's own folder when it has a row; else where the caller works.
        "folder": (row.cwd if row and row.cwd else None) or caller.cwd,
        "session_id": scope.caller_session,
        "project": scope.attribution.as_json(),
        "attributed_by": scope.attribution.via,
        "sessions_in_scope": len(scope.session_ids),
        "messages_in_scope": scope.message_estimate,
        **words,
        **outcome.fields(),
        "journal_mode": mode,
        # A settings file that could not be read, or a bad value, is otherwise seen only by ``config``:
        # status would show the defaults in effect as if they were the person's choice.
        **warnings_field(scope.warnings + settings.warnings),
        "hermes_home": str(home),
        "profile": paths.profile_name(home),
    }


def list_projects(home: Path) -> dict:
    try:
        with reading(paths.state_db_path(home)) as (conn, _shape):
            amap = attribution_map(home, conn)
    except PluginError as exc:
        return exc.envelope()
    # What a search of each project covers (archived and subagent sessions are not searched).
    counts = {key: len(sids) for key, sids in amap.by_project.items()}
    explicit = [
        {
            "kind": "explicit", "id": p.id, "slug": p.slug, "name": p.name, "folders": list(p.folders),
            "archived": p.archived, "sessions": counts.get(("explicit", p.id), 0),
        }
        for p in amap.ctx.projects
    ]
    auto = sorted(
        (
            {"kind": "auto", "id": key[1], "name": auto_name(key[1]), "sessions": n}
            for key, n in counts.items() if key[0] == "auto"
        ),
        key=lambda p: (-p["sessions"], p["id"]),
    )
    return {
        "success": True,
        "outcome": DONE,
        "projects": explicit + auto,
        "home_bucket_sessions": counts.get(("home", None), 0),
        **warnings_field(amap.warnings),
        "hermes_home": str(home),
        "profile": paths.profile_name(home),
    }


def session_info(home: Path, ref: str) -> dict:
    """Which project one session is in, why, and where it was moved from."""
    try:
        try:
            finish_interrupted(home)  # a move cut short is one of the session's moves
        except RecordError as exc:
            # It cannot be written now (a read-only folder, a move holding the lock): a look writes
            # nothing of its own, so it answers without it; the next move or look finishes it.
            logger.warning("a move cut short is not finished yet: %s", exc)
        with reading(paths.state_db_path(home)) as (conn, _shape):
            row = sessionref.find(conn, home, ref)
            attribution = attribution_of(attribution_map(home, conn), row.facts)
        history = load_history(records_path(paths.data_dir(home)), row.id)
    except PluginError as exc:
        return exc.envelope()
    profile = paths.profile_name(home)
    return {
        "success": True,
        "outcome": DONE,
        "session_id": row.id,
        "title": row.title or "",
        "link": link(profile, row.id),
        "source": row.source,
        "parent_session_id": row.parent_session_id,
        "project": attribution.as_json(),
        "attributed_by": attribution.via,
        "cwd": row.cwd,
        "git_branch": row.git_branch,
        "git_repo_root": row.git_repo_root,
        "moves": [
            {
                "when": when(m["moved_at"]),
                "from": {"kind": m["from_kind"], "id": m["from_id"], "name": m["from_name"]},
                "to": {"kind": m.get("to_kind") or "explicit", "id": m["project_id"], "name": m["project_name"]},
                "from_cwd": m["from_cwd"],
                "to_cwd": m["to_cwd"],
            }
            for m in history
        ],
        "hermes_home": str(home),
        "profile": profile,
    }
