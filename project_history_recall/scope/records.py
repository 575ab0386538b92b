"""The plugin's own attribution records: sessions moved into a project.

Kept in ``recall.db`` in the plugin's data folder, never in ``state.db``.
Only ``project_session_move`` writes here; every search reads it.

Two tables: ``attributions`` (the project each moved session is in now; what
searches read) and ``moves`` (one row per move, with the working folder and
git fields the session had before, so nothing Hermes's row held is lost when
the move overwrites it).

Writes happen inside :func:`recording`, one SQLite transaction that the
caller keeps open while Hermes writes the session's new cwd: the record
becomes visible only if that write succeeded, and a killed process leaves no
half-written record (SQLite rolls the transaction back). The file is in WAL
mode, so searches keep reading the last committed records while a move is in
progress, and never wait for it.

Moves of one profile run one at a time, under :func:`moving`: a lock file
beside the store, held from the move's plan to its last write. SQLite's own
write lock cannot do this: it covers only the record, not the plan made
before it nor Hermes's write of the cwd, and before the very first move
there is no store yet to lock.
"""

from __future__ import annotations

import json
import logging
import math
import os
import sqlite3
import threading
import time
from contextlib import contextmanager, suppress
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Iterator

from ..errors import DataError
from ..files.derived import not_a_file
from ..files.filestamp import read_regular
from ..files.folders import make_own
from ..files.locks import FileLock, LockTimeout
from ..hermes.readonly import StateDBError, connect_readonly, retry, table_names
from ..hermes.statedb import text_sql
from ..hermes.watch import watched

logger = logging.getLogger(__name__)

FILE_NAME = "recall.db"
LOCK_NAME = "recall.lock"
JOURNAL_NAME = "recall.moving"  # the move whose record is open while Hermes writes the session's folder
# Longer than any one move takes (its slowest parts, the store's and Hermes's
# writes, each give up after a few seconds of contention).
MOVE_WAIT_SECONDS = 30.0

_SCHEMA = """
CREATE TABLE IF NOT EXISTS attributions (
    session_id    TEXT PRIMARY KEY,
    project_id    TEXT NOT NULL,
    recorded_at   REAL NOT NULL,
    previous_kind TEXT,
    previous_id   TEXT
);
CREATE TABLE IF NOT EXISTS moves (
    id                 INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id         TEXT NOT NULL,
    moved_at           REAL NOT NULL,
    project_id         TEXT NOT NULL,
    project_name       TEXT,
    from_kind          TEXT,
    from_id            TEXT,
    from_name          TEXT,
    from_cwd           TEXT,
    from_git_branch    TEXT,
    from_git_repo_root TEXT,
    to_cwd             TEXT,
    to_git_branch      TEXT,
    to_git_repo_root   TEXT,
    written_by         TEXT,
    to_kind            TEXT
);
CREATE INDEX IF NOT EXISTS moves_by_session ON moves (session_id, id);
"""


@dataclass(frozen=True)
class Move:
    """One move as recorded: where the session was, where it went, and how."""

    session_id: str
    project_id: str
    project_name: str | None = None
    from_kind: str | None = None
    from_id: str | None = None
    from_name: str | None = None
    from_cwd: str | None = None
    from_git_branch: str | None = None
    from_git_repo_root: str | None = None
    to_cwd: str | None = None
    to_git_branch: str | None = None
    to_git_repo_root: str | None = None
    written_by: str | None = None
    # "explicit": the session is recorded in ``project_id``. "auto": it went back to an
    # automatic project (``project_id`` is its folder), so its record is dropped and its
    # folder attributes it. NULL in moves recorded before this column existed: explicit.
    to_kind: str = "explicit"


def records_path(data_dir: Path) -> Path:
    return data_dir / FILE_NAME


# session id -> (the project it was moved into, the folder that move left it in: None in a store
# whose moves did not say)
Records = dict[str, tuple[str, str | None]]


# The columns a search reads, by table: a store without them is of a layout this release cannot read.
_READ_COLUMNS = {"attributions": ("session_id", "project_id"), "moves": ("id", "session_id", "to_cwd")}


def _read_attributions(conn: sqlite3.Connection) -> Records:
    tables = table_names(conn)
    if "attributions" not in tables:
        return {}
    for table in tables & _READ_COLUMNS.keys():
        missing = set(_READ_COLUMNS[table]) - {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
        if missing:
            raise StateDBError(f"its table {table} has no column {', '.join(sorted(missing))}", "schema")
    moved_to = (f"(SELECT {text_sql('to_cwd')} FROM moves m WHERE m.session_id = a.session_id "
                "ORDER BY m.id DESC LIMIT 1)" if "moves" in tables else "NULL")
    # As text, and no row without a session or a project: no move writes such a row, and a NULL (which
    # SQLite lets into a TEXT key) or a blob failed every search and move as ``internal``.
    return {row[0]: (row[1], row[2]) for row in conn.execute(
        f"SELECT {text_sql('a.session_id')}, {text_sql('a.project_id')}, {moved_to} FROM attributions a "
        "WHERE a.session_id IS NOT NULL AND a.project_id IS NOT NULL")}


@contextmanager
def _ours(path: Path) -> Iterator[None]:
    """Reads of ``recall.db`` within the block: damage to it is told as damage to the plugin's own
    record, with what to do. The message every SQLite file gets sent the user to Hermes's doctor,
    which does not check this file, and said nothing of what moving it aside gives up."""
    try:
        yield
    except StateDBError as exc:
        if exc.code == "schema":
            raise StateDBError(
                f"{path} is laid out as this release of the plugin cannot read ({exc}; written by a later "
                "release?). It is this plugin's record of the sessions moved between projects, not one of "
                "Hermes's files, which are untouched; nothing was changed.", "schema") from exc
        if exc.code != "corrupt":
            raise
        raise StateDBError(
            f"{path} is not a readable SQLite database (it may be damaged). It is this plugin's record of "
            "the sessions moved between projects, not one of Hermes's files, which are untouched; nothing "
            "was changed. Moved aside, it is started afresh: each moved session then counts in the project "
            "of the folder its move gave it, and the moves' history is lost.", "corrupt") from exc


def load_records(path: Path) -> Records:
    """Every recorded session's project and folder from ``recall.db``; empty when nothing was ever moved."""
    if not path.exists():
        return {}
    with _ours(path):
        conn = connect_readonly(path, timeout_ms=2000)
        try:
            return retry(lambda: _read_attributions(conn), path)
        finally:
            conn.close()


def load_history(path: Path, session_id: str) -> list[dict]:
    """Every recorded move of one session, oldest first."""
    if not path.exists():
        return []
    with _ours(path):
        conn = connect_readonly(path, timeout_ms=2000)
        try:
            def _read() -> list[dict]:
                if "moves" not in table_names(conn):
                    return []
                rows = conn.execute("SELECT * FROM moves WHERE session_id = ? ORDER BY id", (session_id,))
                return [dict(row) for row in rows]

            return retry(_read, path)
        finally:
            conn.close()


def current_records(path: Path) -> Records:
    """Like :func:`load_records`, cached per process until the next commit; do not mutate."""
    with _ours(path):
        return watched(path, _read_attributions, {})


class Recorder:
    """Writes inside an open :func:`recording` transaction."""

    def __init__(self, conn: sqlite3.Connection, path: Path):
        self._conn = conn
        self._path = path
        self.moves: list[Move] = []

    def record(self, move: Move, at: float | None = None) -> None:
        """Record ``move``, made at ``at`` (now, unless it is a killed move's, finished later)."""
        try:
            self._record(move, time.time() if at is None else at)
        except sqlite3.Error as exc:  # a store laid out by another release (a column it requires, a view)
            raise RecordError(f"{_save_failed(self._path, exc)} It is laid out as this release of the plugin "
                              "does not write it (written by a later release?).") from exc

    def _record(self, move: Move, now: float) -> None:
        if move.to_kind != "explicit":
            # Back in an automatic project: nothing to record, the session's folder says it.
            self._conn.execute("DELETE FROM attributions WHERE session_id = ?", (move.session_id,))
        else:
            self._record_attribution(move, now)
        names = [f.name for f in fields(Move)]
        values = asdict(move)
        self._conn.execute(
            f"INSERT INTO moves (moved_at, {', '.join(names)}) VALUES (?, {', '.join('?' for _ in names)})",
            (now, *(values[n] for n in names)),
        )
        self.moves.append(move)

    def _record_attribution(self, move: Move, now: float) -> None:
        self._conn.execute(
            "INSERT INTO attributions (session_id, project_id, recorded_at, previous_kind, previous_id) "
            "VALUES (?, ?, ?, ?, ?) ON CONFLICT(session_id) DO UPDATE SET "
            "project_id = excluded.project_id, recorded_at = excluded.recorded_at, "
            "previous_kind = excluded.previous_kind, previous_id = excluded.previous_id",
            (move.session_id, move.project_id, now, move.from_kind, move.from_id),
        )


def logged(path: Path, session_id: str, at: float) -> bool:
    """Whether the store at ``path`` holds the move of ``session_id`` made at ``at``."""
    if not path.exists():
        return False
    with _ours(path):
        conn = connect_readonly(path, timeout_ms=2000)
        try:
            return retry(lambda: "moves" in table_names(conn) and conn.execute(
                "SELECT 1 FROM moves WHERE session_id = ? AND moved_at = ?", (session_id, at)).fetchone() is not None,
                path)
        finally:
            conn.close()


def note_moving(data_dir: Path, move: Move, at: float) -> None:
    """Keep ``move`` (made at ``at``) in a file of its own before Hermes writes the session's folder.

    The record's transaction is open while Hermes writes, and dies with a process killed then:
    Hermes's row holds the new folder, and the move's log row, the only copy of the folder (and git
    fields) the session had before, was lost with it; nothing showed where the session had been,
    nor could it be moved back into an automatic project it was the last session of. The next move
    of the profile, or a look at the session, finishes it (``move.finish_interrupted``). Under the
    move lock, so one file is enough. Written in place: a process killed while writing it had not
    reached Hermes's write, and a file cut short reads as no move (``interrupted``). Not synced to
    the disk: it outlives a killed process, not a power cut. Only in a file made here: the move
    cleared what a killed move left (``finish_interrupted``), and whatever is there now was put
    there since; a symlink to a file of the user's had the move's JSON written over that file."""
    path = data_dir / JOURNAL_NAME
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
                     | getattr(os, "O_BINARY", 0), 0o600)
    except OSError as exc:
        raise _save_failed(path, exc) from exc
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(json.dumps({"moved_at": at, **asdict(move)}).encode("utf-8"))
    except OSError as exc:
        with suppress(OSError):
            path.unlink()
        raise _save_failed(path, exc) from exc


def interrupted(data_dir: Path) -> tuple[Move, float] | None:
    """(the move ``note_moving`` kept, when it was made), or None: no move was cut short, or the
    file cannot be read (then nothing can be done with it)."""
    path = data_dir / JOURNAL_NAME
    try:
        # Read only if it is a regular file: a FIFO put in its place would hold the move lock for ever.
        kept = json.loads(read_regular(path).decode("utf-8"))
        at = float(kept.pop("moved_at"))
        move = Move(**kept)
        # Only what ``note_moving`` writes: a NaN time failed every later move (SQLite stores it as
        # NULL), an unknown kind deleted the session's record as a move back would, and no folder
        # (a move always writes one) matched every session without one, which it then recorded.
        if not (math.isfinite(at) and all(isinstance(getattr(move, f.name), str | None) for f in fields(Move))
                and move.session_id and move.project_id and move.to_cwd and move.to_kind in ("explicit", "auto")):
            raise ValueError("not a move this plugin wrote")
        return move, at
    except FileNotFoundError:
        return None
    except (OSError, ValueError, TypeError, KeyError, AttributeError) as exc:
        logger.warning("not using %s, a move cut short (%s)", path, exc)
        return None


def done_moving(data_dir: Path) -> None:
    """The move ``note_moving`` kept is recorded, undone or given up: forget it. The private first
    stores (``recording``) of processes killed before they published theirs go too: nothing else
    removes them. Only those of processes that are gone: where the file system cannot lock, the
    move lock holds only within a process, and another's may be in use."""
    for left in (data_dir / JOURNAL_NAME, *(p for p in data_dir.glob(f".{FILE_NAME}.*.new*") if _dead(p))):
        with suppress(OSError):
            left.unlink(missing_ok=True)


def _dead(staging: Path) -> bool:
    """Whether the process that named ``staging`` (``recording``: .recall.db.<pid>.<thread>.new) is gone."""
    if os.name == "nt":
        return False  # signal 0 there is CTRL_C_EVENT, sent to the process: left in place
    try:
        os.kill(int(staging.name.split(".")[3]), 0)
    except ProcessLookupError:
        return True
    except (ValueError, IndexError, OSError):  # not such a name; a process of another user
        return False
    return False


def _begin(conn: sqlite3.Connection, wal: bool) -> None:
    if wal:
        conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("BEGIN IMMEDIATE")
    try:
        # Inside the transaction: DDL is transactional in SQLite, so a move
        # that fails leaves no tables behind either.
        for statement in filter(str.strip, _SCHEMA.split(";")):
            conn.execute(statement)
        # Stores written before moves into automatic projects existed lack the column.
        if "to_kind" not in {row[1] for row in conn.execute("PRAGMA table_info(moves)")}:
            conn.execute("ALTER TABLE moves ADD COLUMN to_kind TEXT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


@contextmanager
def _transaction(path: Path, *, wal: bool = True) -> Iterator[Recorder]:
    try:
        conn = sqlite3.connect(path, timeout=5.0, isolation_level=None, check_same_thread=False)
    except sqlite3.Error as exc:  # e.g. a store another user owns
        raise _save_failed(path, exc) from exc
    try:
        try:
            retry(lambda: _begin(conn, wal), path)
        except StateDBError as exc:
            if exc.code == "locked":
                raise
            raise _save_failed(path, exc.__cause__ or exc) from exc
        recorder = Recorder(conn, path)
        try:
            yield recorder
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        try:
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise _save_failed(path, exc) from exc
    finally:
        conn.close()


class RecordError(DataError):
    """The plugin's own records (``recall.db``) could not be written; nothing was changed."""

    codes = ("record_failed", "locked")


def _save_failed(path: Path, exc: BaseException) -> RecordError:
    text = (exc.strerror or str(exc)) if isinstance(exc, OSError) else str(exc)
    folder = path.parent
    if folder.exists() and not folder.is_dir():
        hint = f" ({folder} is a file, where the plugin keeps its data folder)"
    elif folder.is_symlink() and not folder.exists():  # mkdir there: "File exists", as for recall.moving below
        hint = f" ({folder}, where the plugin keeps its data folder, links to {os.readlink(folder)}, which does not exist)"
    elif (there := not_a_file(path)) is not None:  # a folder at recall.moving, say: no move removes it
        hint = f" ({there})"
    elif isinstance(exc, FileExistsError):
        hint = " (something put it there while the move ran; the next move clears it)"
    elif isinstance(exc, OSError) or any(t in text.lower() for t in ("i/o", "unable to open", "readonly")):
        hint = " (is the disk full, or the folder not writable?)"
    else:
        hint = ""
    return RecordError(f"Saving the move in {path} failed: {text}{hint}.")


@contextmanager
def moving(data_dir: Path) -> Iterator[None]:
    """Hold the profile's move lock (creating the data folder if need be) for the block.

    Raises ``RecordError``: ``record_failed`` when the folder cannot be
    written, ``locked`` when another move did not finish in time. Nothing has
    been changed either way.
    """
    lock = FileLock(data_dir / LOCK_NAME)
    try:
        make_own(data_dir)
        lock.acquire(MOVE_WAIT_SECONDS)
    except LockTimeout:
        raise RecordError(f"Another move in this profile did not finish within {MOVE_WAIT_SECONDS:.0f} s; "
                          "nothing was changed, try again.", "locked") from None
    except OSError as exc:
        raise RecordError(f"{_save_failed(records_path(data_dir), exc)} Nothing was changed.") from exc
    try:
        yield
    finally:
        lock.release()


def _publish(staging: Path, path: Path, moves: list[Move]) -> None:
    """Put a privately built first store in place (under the move lock).

    ``os.link`` is atomic and never replaces a file. Where it fails (a
    filesystem without hard links; one without locks, where another process's
    first store may have appeared meanwhile) the moves are added to the store
    at ``path`` instead.
    """
    try:
        os.link(staging, path)
        return
    except OSError:
        pass
    with _transaction(path) as recorder:
        for move in moves:
            recorder.record(move)


@contextmanager
def recording(data_dir: Path) -> Iterator[Recorder]:
    """One write transaction on ``recall.db``, committed when the block ends.

    If the block raises, everything recorded in it is rolled back and the
    exception propagates; readers never see a partial move. The very first
    move of a profile builds the store in a private file that is published
    only on success, so a failed first move leaves no store behind either.
    A move holds :func:`moving` around it.
    """
    path = records_path(data_dir)
    try:
        make_own(data_dir)
    except OSError as exc:
        raise _save_failed(path, exc) from exc
    if path.exists():
        with _transaction(path) as recorder:
            yield recorder
        return
    staging = data_dir / f".{FILE_NAME}.{os.getpid()}.{threading.get_ident()}.new"
    try:
        with _transaction(staging, wal=False) as recorder:
            yield recorder
        try:
            # WAL from the start, so later moves never rewrite the header (a
            # failed one then leaves the file byte-for-byte as it was).
            conn = sqlite3.connect(staging)
            try:
                conn.execute("PRAGMA journal_mode=WAL")
            finally:
                conn.close()
            _publish(staging, path, recorder.moves)
        except (OSError, sqlite3.Error) as exc:
            raise _save_failed(path, exc) from exc
    finally:
        for suffix in ("", "-journal", "-wal", "-shm"):
            with suppress(OSError):
                staging.with_name(staging.name + suffix).unlink(missing_ok=True)
