"""The plugin's own attribution records: sessions moved into a project.

Kept in ``recall.db`` in the plugin's data folder, never in ``state.db``.
Only ``project_session_move`` writes here; every search reads it. SQLite
gives atomic, crash-safe writes for free, so a killed process never leaves a
half-written record.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

from .statedb import connect_readonly, retry

FILE_NAME = "recall.db"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS attributions (
    session_id    TEXT PRIMARY KEY,
    project_id    TEXT NOT NULL,
    recorded_at   REAL NOT NULL,
    previous_kind TEXT,
    previous_id   TEXT
);
"""


def records_path(data_dir: Path) -> Path:
    return data_dir / FILE_NAME


def load_records(path: Path) -> dict[str, str]:
    """session id -> project id from ``recall.db``; empty when nothing was ever moved."""
    if not path.exists():
        return {}
    conn = connect_readonly(path, timeout_ms=2000)
    try:
        def _read() -> dict[str, str]:
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            if "attributions" not in tables:
                return {}
            return dict(conn.execute("SELECT session_id, project_id FROM attributions"))

        return retry(_read, path)
    finally:
        conn.close()


def record_move(data_dir: Path, session_id: str, project_id: str,
                previous_kind: str | None = None, previous_id: str | None = None) -> None:
    """Record (or replace) the project a session was moved into."""
    data_dir.mkdir(parents=True, exist_ok=True)
    path = records_path(data_dir)
    conn = sqlite3.connect(path, timeout=5.0, isolation_level=None)
    try:
        def _write() -> None:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.executescript(_SCHEMA)
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.execute(
                    "INSERT INTO attributions (session_id, project_id, recorded_at, previous_kind, previous_id) "
                    "VALUES (?, ?, ?, ?, ?) ON CONFLICT(session_id) DO UPDATE SET "
                    "project_id = excluded.project_id, recorded_at = excluded.recorded_at, "
                    "previous_kind = excluded.previous_kind, previous_id = excluded.previous_id",
                    (session_id, project_id, time.time(), previous_kind, previous_id),
                )
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise

        retry(_write, path)
    finally:
        conn.close()

