"""Hermes's explicit projects, read from ``projects.db`` without writing.

``hermes_cli.projects_db.connect()`` initialises the schema (a write), so the
plugin reads the file itself, read-only. A missing file simply means the user
has no explicit projects yet.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from ..textfold import normalise
from .facts import ProjectInfo
from .readonly import StateDBError, connect_readonly, retry, table_names
from .statedb import text_sql
from .watch import watched


class ProjectsDBError(StateDBError):
    """projects.db exists but cannot be read; scopes would be wrong without it."""

    @classmethod
    def wrap(cls, path: Path, exc: StateDBError) -> "ProjectsDBError":
        return cls(f"Hermes's projects database {path} could not be read ({exc.code}): {exc}", exc.code)


def read_projects(conn: sqlite3.Connection) -> list[ProjectInfo]:
    """Every project (archived ones too, flagged), in creation order, from an open connection."""
    tables = table_names(conn)
    if "projects" not in tables:
        return []
    folders: dict[str, list[str]] = {}
    if "project_folders" in tables:
        for pid, folder in conn.execute(
            f"SELECT {text_sql('project_id')}, {text_sql('path')} FROM project_folders "
            "ORDER BY is_primary DESC, added_at, rowid"
        ):
            folders.setdefault(pid, []).append(folder)
    cols = {r[1] for r in conn.execute("PRAGMA table_info(projects)")}
    archived = "archived" if "archived" in cols else "0"
    primary = text_sql("primary_path") if "primary_path" in cols else "NULL"
    return [
        ProjectInfo(
            id=pid,
            slug=slug or pid,
            name=name or slug or pid,
            folders=tuple(folders.get(pid, ())),
            primary_path=primary_path or next(iter(folders.get(pid, ())), None),
            archived=bool(is_archived),
        )
        for pid, slug, name, primary_path, is_archived in conn.execute(
            f"SELECT {text_sql('id')}, {text_sql('slug')}, {text_sql('name')}, {primary}, {archived} FROM projects "
            "ORDER BY created_at, rowid"
        )
    ]


def load_projects(path: Path) -> list[ProjectInfo]:
    """The projects as they are now (a missing file: none yet)."""
    if not path.exists():
        return []
    try:
        conn = connect_readonly(path, timeout_ms=2000)
    except StateDBError as exc:
        raise ProjectsDBError.wrap(path, exc) from exc
    try:
        return retry(lambda: read_projects(conn), path)
    except StateDBError as exc:
        raise ProjectsDBError.wrap(path, exc) from exc
    finally:
        conn.close()


def current_projects(path: Path) -> list[ProjectInfo]:
    """Like :func:`load_projects`, cached per process until Hermes next commits to the file."""
    try:
        return watched(path, read_projects, [])
    except StateDBError as exc:
        raise ProjectsDBError.wrap(path, exc) from exc


def folded_name(text: str) -> str:
    """A name as a reference to it is compared: normalised (``textfold``: a name typed in full-width
    letters or decomposed accents, as macOS spells them, is found by itself and by its plain
    spelling, a Turkish one by İ and ı typed either way) and trimmed. A reference arrives as typed:
    a folder is not folded."""
    return normalise(text).strip()


def find_project(projects: list[ProjectInfo], ref: str) -> tuple[ProjectInfo | None, list[ProjectInfo]]:
    """Resolve an id, slug or name (case-insensitive) to one project.

    Returns ``(project, [])`` on a unique match, else ``(None, candidates)``:
    several candidates when the reference is ambiguous, none when unknown.
    An id is unique and unlike any name, so an exact id wins. A slug does not
    win over a name: Hermes gives two projects named "Web" the slugs ``web``
    and ``web-2``, and ``web`` names both of them as much as the first.
    """
    ref = (ref or "").strip()
    if not ref:
        return None, []
    exact = [p for p in projects if p.id == ref]
    if len(exact) == 1:
        return exact[0], []
    folded = folded_name(ref)
    matches = [p for p in projects if folded in (folded_name(p.id), folded_name(p.slug), folded_name(p.name))]
    if len(matches) == 1:
        return matches[0], []
    return None, matches
