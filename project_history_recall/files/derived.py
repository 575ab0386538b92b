"""The plugin's derived SQLite files (``embeddings.db``, ``keywords.db``): opening, using, repairing.

Both hold only what can be rebuilt from ``state.db``. So a file that is not
a readable database, was written by another schema version, or turns out
damaged while in use (a page that no longer parses, a file cut short in
place) is moved aside, the last such copy kept for inspection, and started
afresh: a search goes on with what is left, never fails for it. Something
there that is not a file at all (a FIFO, a folder) is not the plugin's to
move: the file is reported unusable until it is gone.

Every error of these files' connections leaves this module as a
``StoreError`` naming the file and the cause, never as an ``sqlite3``
error: a caller reading ``state.db`` at the same time would otherwise take
it for one of Hermes's own, and tell the user to repair a file that is fine.
"""

from __future__ import annotations

import logging
import os
import shutil
import sqlite3
import stat
import threading
import time
from contextlib import contextmanager, suppress
from pathlib import Path
from types import MappingProxyType
from typing import Callable, Iterator, Mapping, TypeVar

from ..errors import DataError
from .folders import make_own, unmakeable
from .locks import FileLock, LockTimeout

logger = logging.getLogger(__name__)

# SQLite's primary result codes (the low byte of an extended code) that mean the file's bytes are wrong.
_NOT_A_DATABASE = 26  # SQLITE_NOTADB
_DAMAGE = {11, _NOT_A_DATABASE}  # SQLITE_CORRUPT, SQLITE_NOTADB
_BUSY = {5, 6}  # SQLITE_BUSY, SQLITE_LOCKED
_READONLY = 8  # SQLITE_READONLY
_WRITE_FAILED = {_READONLY, 10, 13, 14}  # SQLITE_READONLY, SQLITE_IOERR, SQLITE_FULL, SQLITE_CANTOPEN
LOCK_WAIT = 10.0  # seconds, as SQLite's own busy timeout below
_WRITE_TURN = 0.05  # seconds: one turn of waiting for another process's write lock (``Store.transaction``)
T = TypeVar("T")


class StoreError(DataError):
    """A derived file cannot be used; the message names it and says why."""

    codes = ("store_unavailable",)

    def __init__(self, message: str, *, set_aside: bool = False, locked: bool = False):
        super().__init__(message)
        self.set_aside = set_aside  # the file was damaged and has been moved aside: opening it again rebuilds it
        self.locked = locked  # another process holds the file: the one failure that passes by itself


class _OtherVersion(sqlite3.DatabaseError):
    """The file was laid out by another version of the plugin."""


def _primary(exc: sqlite3.Error) -> int | None:
    code = getattr(exc, "sqlite_errorcode", None)
    return None if code is None else code & 0xFF


def is_damage(exc: sqlite3.Error) -> bool:
    if _primary(exc) is not None:
        return _primary(exc) in _DAMAGE
    text = str(exc).lower()
    return "malformed" in text or "not a database" in text


def unless_locked(write: Callable[[], object], instead: str) -> bool:
    """``write()``, a write to a derived file that waits a bounded time for another process's write
    lock: True once done; False when that lock held it off past the wait, logged with what the
    background does ``instead``. Any other failure is raised."""
    try:
        write()
    except StoreError as exc:
        if not exc.locked:
            raise
        logger.info("%s: left to the background to %s", exc, instead)
        return False
    return True


def write_limit(path: Path) -> str:
    """Why a write to ``path`` (or its WAL index) may have failed, when the machine can tell, as
    "; <reason>" or "": SQLite reports a file-size limit (EFBIG) and most other write failures
    as a bare "disk I/O error"."""
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
        largest = max((p.stat().st_size for p in (path, Path(f"{path}-wal"), Path(f"{path}-shm")) if p.exists()),
                      default=0)
        if soft != resource.RLIM_INFINITY and largest + (1 << 20) >= soft:  # within a write of the limit
            return f"; this process may not write files larger than {soft:,} bytes (its file-size limit, ulimit -f)"
    except (ImportError, ValueError, OSError):
        pass
    try:
        free = shutil.disk_usage(path.parent).free
    except OSError:
        return ""
    return f"; the disk is full ({free:,} bytes free)" if free < 16 << 20 else ""


def cannot_make(path: Path) -> str | None:
    """Why the next search cannot make the derived file ``path``, not there yet, or None: ``status``,
    which makes none, says what that search would meet."""
    why = not_a_file(path)
    if why is not None:
        return f"cannot use {path}: {why}; remove it and it is rebuilt"
    return unmakeable(path.parent)


def not_built(index: str, builds: str) -> str:
    """What ``status`` says of the ``index`` ("keyword", "semantic") whose file no search has made yet
    (a status read makes none); ``builds``: how the next search builds it."""
    return f"the {index} index is not built yet; the next search {builds}, or run the 'index' command"


def describe(path: Path, exc: BaseException) -> StoreError:
    """The error a person reads for ``exc`` met on the derived file ``path``."""
    if isinstance(exc, LockTimeout) or (isinstance(exc, sqlite3.Error) and (
            _primary(exc) in _BUSY or "locked" in str(exc).lower())):
        return StoreError(f"{path} is locked by another process; try again in a moment", locked=True)
    if isinstance(exc, sqlite3.Error) and _primary(exc) in _WRITE_FAILED:
        name = getattr(exc, "sqlite_errorname", "")
        return StoreError(f"{path} could not be used: {exc}{f' ({name})' if name else ''}{write_limit(path)}. "
                          "This is the plugin's own index, rebuilt from Hermes's sessions; nothing of "
                          "Hermes's was changed")
    return StoreError(f"cannot use {path}: {exc}")


def _set_aside(path: Path, why: object) -> str:
    """Move ``path`` and its WAL files out of the way, as the one copy kept of this file (the
    newest tells what went wrong; older ones are removed). The caller holds the file's lock.
    Returns the copy's name."""
    for old in path.parent.glob(f"{path.name}.broken-*"):
        old.unlink(missing_ok=True)
    aside = path.with_name(f"{path.name}.broken-{int(time.time())}")
    for suffix in ("", "-wal", "-shm"):
        src = Path(str(path) + suffix)
        if src.exists():
            try:
                src.replace(Path(str(aside) + suffix))
            except OSError as move_exc:
                raise StoreError(f"{path} is unreadable ({why}) and could not be moved aside: {move_exc}") from move_exc
    return aside.name


def sqlite_uri(path: Path, query: str) -> str:
    """An SQLite URI naming ``path`` (made absolute), with ``query`` ("mode=ro", say)."""
    escaped = path.resolve().as_posix().replace("%", "%25").replace("?", "%3F").replace("#", "%23")
    return f"file:{escaped}?{query}"


_KINDS = {stat.S_IFIFO: "a FIFO", stat.S_IFDIR: "a folder", stat.S_IFSOCK: "a socket",
          stat.S_IFCHR: "a device", stat.S_IFBLK: "a device"}


def not_a_file(path: Path) -> str | None:
    """Why an SQLite file at ``path`` cannot be opened though something is there, or None (a
    regular file, or nothing). SQLite would wait for ever on a FIFO put in its place: its reads
    wait for a writer that never comes. (A derived file's path holding such a thing is not
    moved aside and rebuilt: it is not a file this plugin made.)"""
    try:
        mode = path.stat().st_mode
    except (FileNotFoundError, NotADirectoryError):
        # A link to a file not made yet is followed (SQLite makes it there: the user's choice of
        # place); one into a folder that is not there (a disk not mounted) can never be opened.
        if path.is_symlink() and not Path(os.path.realpath(path)).parent.is_dir():
            return f"it links to {os.readlink(path)}, in a folder that does not exist"
        return None
    except OSError as exc:  # a symlink loop, a folder on the way that cannot be searched
        return exc.strerror or str(exc)
    if stat.S_ISREG(mode):
        return None
    return f"it is {_KINDS.get(stat.S_IFMT(mode), 'a special file')}, not a file"


def _not_a_database(path: Path) -> bool:
    """Whether the file at ``path`` has stopped being a database: emptied, or overwritten from
    its start (the header). False when SQLite cannot tell (a missing file, say): opening it does.

    Asked of SQLite, through a connection of its own that reads the file as it lies on disk
    (``immutable``: neither lock nor WAL), never with ``open()``. On POSIX, closing any
    descriptor of a file drops every lock this process holds on it, those of its SQLite
    connections included (they go on believing they hold them); SQLite closes its own
    descriptor only once no connection of the process holds a lock on the file. Without its
    lock, a read of another thread can be overwritten, and another process closing its last
    connection checkpoints and deletes the WAL this process still uses."""
    try:
        conn = sqlite3.connect(sqlite_uri(path, "mode=ro&immutable=1"), uri=True)
    except sqlite3.Error:
        return False
    try:
        # Every file this plugin made has its first page in the file itself (SQLite writes it on
        # switching to WAL); anything else there, or nothing, is not one of ours any more.
        return conn.execute("PRAGMA page_count").fetchone()[0] == 0
    except sqlite3.Error as exc:
        return _primary(exc) == _NOT_A_DATABASE
    finally:
        conn.close()


REBUILDS = "the next search or the 'index' command rebuilds it from Hermes's sessions"


def laid_out_by_another(path: Path, version: int, expected: Mapping[str, str] = MappingProxyType({})) -> str | None:
    """Why the existing derived file at ``path`` is rebuilt by the next process that opens it for
    use ("was written by …; …", after its name), when it is one another version of the plugin laid out: its ``schema_version`` is not
    ``version``, or a ``meta`` value named in ``expected`` (key: the value this version writes) is
    set to another. None when it is this version's, or when that cannot be read (opening it then
    says why). For the ``status`` command, which makes and changes nothing: opening such a file
    for use deletes it and starts it afresh."""
    wanted = _stamps(version, expected)
    if not_a_file(path) is not None or not path.is_file():  # SQLite's read of a FIFO waits for ever
        return None
    try:
        # No wait: a file another process holds locked is told by the search, which waits its budget.
        conn = sqlite3.connect(sqlite_uri(path, "mode=ro"), uri=True, timeout=0)
    except sqlite3.Error:
        return None
    try:
        stored = dict(conn.execute(
            f"SELECT key, value FROM meta WHERE key IN ({', '.join('?' for _ in wanted)})", list(wanted)).fetchall())
    except sqlite3.Error:
        return None
    finally:
        conn.close()
    if "schema_version" not in stored:
        return None
    differ = _differ(stored, wanted)
    if not differ:
        return None
    return f"was written by another version of this plugin ({differ}); {REBUILDS}"


def _stamps(version: int, expected: Mapping[str, str]) -> dict[str, str]:
    """The ``meta`` values a file of this version holds: its ``schema_version`` and ``expected``'s."""
    return {"schema_version": str(version), **expected}


def _differ(stored: Mapping[str, str], wanted: Mapping[str, str]) -> str:
    """How the ``meta`` values ``stored`` differ from ``wanted`` ("" when none does; one not stored is
    no difference: the file is older than the value, and its own checks read it)."""
    return "; ".join(f"{key.replace('_', ' ')} {stored[key]}, this plugin writes {value}"
                     for key, value in wanted.items() if key in stored and stored[key] != value)


def _connect(path: Path, schema: str, version: int, expected: Mapping[str, str]) -> sqlite3.Connection:
    """A connection to the file with ``schema`` in place, a new file stamped with ``version`` and each of
    ``expected``'s ``meta`` values; ``_OtherVersion`` for a file stamped with other ones (a keyword index
    of another tokenizer is another version's as much as one of another schema)."""
    conn = sqlite3.connect(str(path), timeout=10, isolation_level=None, check_same_thread=False)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA busy_timeout=10000")
        conn.executescript(schema)
        stored = dict(conn.execute("SELECT key, value FROM meta").fetchall())
        wanted = _stamps(version, expected)
        if "schema_version" not in stored:
            conn.executemany("INSERT OR IGNORE INTO meta VALUES (?, ?)", list(wanted.items()))
        differ = _differ(stored, wanted)
        if differ:
            raise _OtherVersion(differ)
    except BaseException:
        conn.close()
        raise
    return conn


def _reads_only(conn: sqlite3.Connection) -> bool:
    """Whether SQLite opened the file only for reading, as it does, for good, when the file could not be
    written then (its mode, its owner, a read-only mount): a write tried and rolled back tells. Another
    process's write lock says nothing either way (no wait for it)."""
    conn.execute("PRAGMA busy_timeout=0")
    try:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("UPDATE meta SET value = value WHERE key = 'schema_version'")
    except sqlite3.Error as exc:
        return _primary(exc) == _READONLY
    finally:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        conn.execute(f"PRAGMA busy_timeout={int(LOCK_WAIT * 1000)}")
    return False


def _in_use(path: Path) -> bool:
    """Whether another connection has the SQLite file at ``path`` open: taking a file out of WAL mode
    needs it alone, and is refused at once otherwise. Every release keeps its derived files in WAL
    mode and rebuilds one another release laid out: deleted under a process of another release that
    holds it (a gateway started before an upgrade), the file was deleted back at that process's next
    search, each rebuilding it in turn for as long as both ran. (The file is deleted when this
    succeeds, so the change does not matter.)"""
    try:
        conn = sqlite3.connect(str(path), timeout=0, isolation_level=None)
    except sqlite3.Error:
        return False
    try:
        return str(conn.execute("PRAGMA journal_mode=DELETE").fetchone()[0]).lower() != "delete"
    except sqlite3.Error as exc:
        return _primary(exc) in _BUSY or "locked" in str(exc).lower()
    finally:
        conn.close()


def _lock(path: Path) -> FileLock:
    """Held while a file is opened or set aside, so that no process takes another's
    half-created file for a broken one, or sets aside the file another just rebuilt."""
    return FileLock(path.with_name(path.name + ".lock"))


def open_or_rebuild(path: Path, schema: str, version: int, expected: Mapping[str, str] = MappingProxyType({})
                    ) -> tuple[sqlite3.Connection, str | None]:
    """(a connection with ``schema`` in place, why the file was rebuilt or None); ``expected``, ``meta``
    values this version writes besides its ``schema_version`` (``_connect``).

    ``schema`` must create a ``meta (key, value)`` table."""
    try:
        make_own(path.parent)
        lock = _lock(path)
        lock.acquire(LOCK_WAIT)
    except LockTimeout as exc:
        raise describe(path, exc) from exc
    except OSError as exc:
        raise StoreError(f"cannot create or open {path}: {exc}") from exc
    try:
        why = not_a_file(path)
        if why is not None:
            raise StoreError(f"cannot use {path}: {why}; remove it and it is rebuilt")
        reason = None
        if _not_a_database(path):  # under the lock, so never a file another process is creating
            reason = f"{path.name} was not a database; moved to {_set_aside(path, 'not a database')} and rebuilt"
        try:
            return _connect(path, schema, version, expected), reason
        except sqlite3.DatabaseError as exc:
            if isinstance(exc, _OtherVersion):
                if _in_use(path):
                    raise StoreError(f"{path} is laid out by another version of this plugin ({exc}), which a process "
                                     "still has open (one started before an upgrade, say); it is rebuilt once that "
                                     "process ends", locked=True) from exc
                # Nothing to inspect: another release's layout of data this one rebuilds.
                for suffix in ("", "-wal", "-shm"):
                    Path(str(path) + suffix).unlink(missing_ok=True)
                reason = f"{path.name} was laid out by another version ({exc}); rebuilt"
            elif is_damage(exc):
                reason = f"{path.name} was unreadable ({exc}); moved to {_set_aside(path, exc)} and rebuilt"
            else:
                raise describe(path, exc) from exc
        try:
            return _connect(path, schema, version, expected), reason
        except sqlite3.Error as exc:
            raise describe(path, exc) from exc
    except OSError as exc:
        raise StoreError(f"cannot create or open {path}: {exc}") from exc
    finally:
        lock.release()


def after_repair(fn: Callable[[], T]) -> tuple[T, str]:
    """(``fn()``, "") or, when ``fn`` found a derived file damaged and set it aside, (its second
    run, which builds the file anew, and what was found). Other errors pass through."""
    try:
        return fn(), ""
    except StoreError as exc:
        if not exc.set_aside:
            raise
        return fn(), str(exc)


def inode(path: Path) -> int | None:
    try:
        return path.stat().st_ino
    except OSError:
        return None


def _answers(conn: sqlite3.Connection) -> bool:
    try:
        conn.execute("SELECT count(*) FROM meta").fetchone()
    except sqlite3.Error:
        return False
    return True


def healthy(path: Path, conn: sqlite3.Connection, seen_inode: int | None) -> bool:
    """False when the file was deleted, replaced or overwritten under an open connection."""
    if not_a_file(path) is not None or _not_a_database(path):
        return False
    return _answers(conn) and seen_inode is not None and inode(path) == seen_inode


# A file whose last write was this long before a full check found it sound, and whose stat is the
# same since, was not written since either: any write sets its times to the clock's now, later
# than the ones recorded. (Seconds: some file systems keep times to a second or two.)
QUIET_SECONDS = 5.0


def _stat(path: Path) -> tuple[int, int, int, int] | None:
    """(inode, size, mtime, ctime in ns); ctime also changes when mtime is set back."""
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def retire(file: "DerivedFile | None") -> None:
    """Close a file that a fresh one replaced: failing to close it changes nothing for the new one."""
    if file is not None:
        with suppress(sqlite3.Error):
            file.close()


def _begun(conn: sqlite3.Connection, deadline: float) -> bool:
    """A write transaction begun on ``conn`` after one turn of waiting for another process's write
    lock (``_WRITE_TURN``): True; False while that lock is held and ``deadline`` is still ahead, and
    past it the locked error."""
    conn.execute(f"PRAGMA busy_timeout={int(_WRITE_TURN * 1000)}")
    try:
        conn.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as exc:
        if _primary(exc) not in _BUSY or time.monotonic() >= deadline:
            raise
        return False
    finally:
        conn.execute(f"PRAGMA busy_timeout={int(LOCK_WAIT * 1000)}")
    return True


class DerivedFile:
    """One derived SQLite file, shared by the threads of a process (one lock).

    Every use of the connection goes through ``using()``."""

    def __init__(self, path: Path, schema: str, version: int, expected: Mapping[str, str] = MappingProxyType({})):
        self.path = path
        self.lock = threading.RLock()
        self.writes = 0  # commits through this object (data_version only sees other connections')
        self.damaged: str | None = None  # why the file was set aside while in use
        self._conn, self.rebuilt_reason = open_or_rebuild(path, schema, version, expected)
        self._reads_only = _reads_only(self._conn)
        self._inode = inode(path)
        self._quiet: tuple | None = None  # the stat of the file when a full check last trusted it

    def close(self) -> None:
        with self.lock:
            self._conn.close()

    def healthy(self) -> bool:
        """False when the file was found damaged, or deleted, replaced or overwritten under us (then reopen).

        Every search asks, and reading the file's header through a connection of its own costs
        ~0.5 ms a file; a file unchanged since a check trusted it skips that read."""
        with self.lock:
            if self.damaged is not None:
                return False
            if self._reads_only and os.access(self.path, os.W_OK):
                # Opened while it could not be written, and writable now: a long-lived process (Hermes's
                # gateway) otherwise failed every write to it until it restarted.
                return False
            stat = _stat(self.path)
            if stat is not None and stat == self._quiet:
                return _answers(self._conn)
            checked_at = time.time_ns()
            sound = healthy(self.path, self._conn, self._inode)
            quiet = stat is not None and stat[2] < checked_at - QUIET_SECONDS * 1e9
            self._quiet = stat if sound and quiet else None
            return sound

    @contextmanager
    def using(self) -> Iterator[sqlite3.Connection]:
        """The connection, this object's lock held; its errors come out as ``StoreError``.

        Damage met here (a page that does not parse, the file cut short) sets
        the file aside at once, so the next open, in this process or any
        other, builds it anew."""
        with self.lock:
            try:
                yield self._conn
            except sqlite3.Error as exc:
                if not is_damage(exc):
                    self._reads_only = self._reads_only or _primary(exc) == _READONLY
                    raise describe(self.path, exc) from exc
                raise self._damaged(exc) from exc

    def _damaged(self, exc: sqlite3.Error) -> StoreError:
        # Closed before the move: closing a WAL connection deletes the WAL file by its name,
        # which after the move would be the new file's.
        self._conn.close()
        lock = _lock(self.path)
        try:
            lock.acquire(LOCK_WAIT)
            try:
                aside = _set_aside(self.path, exc) if inode(self.path) == self._inode else None
            finally:
                lock.release()
        except (OSError, StoreError) as move_exc:
            self.damaged = f"{self.path} is damaged ({exc}) and could not be moved aside: {move_exc}"
            return StoreError(self.damaged)
        self.damaged = (f"{self.path.name} was damaged ({exc}); "
                        + (f"moved to {aside} and rebuilt" if aside else "another process rebuilt it"))
        return StoreError(self.damaged, set_aside=True)

    def data_version(self) -> int:
        """Changes when another connection (process) committed to the file."""
        with self.using() as conn:
            return conn.execute("PRAGMA data_version").fetchone()[0]

    def commits(self) -> tuple[int, int]:
        """Changes whenever anything commits to the file: this object, or another connection."""
        return self.data_version(), self.writes

    def transaction(self, fn, wait: float = LOCK_WAIT):
        """``fn(connection)`` in one write transaction, committed when it returns; its result.

        Another process's write lock is waited for at most ``wait`` seconds, in short turns with
        this object's lock let go between them: waited for in one, by SQLite's busy timeout, it
        held every search of this process that reads the file (the background indexer waiting)
        for the whole timeout, whatever the search's budget. Past ``wait``: ``StoreError``, locked."""
        deadline = time.monotonic() + wait
        while True:
            begun, out = self._try_transaction(fn, deadline)
            if begun:
                return out
            time.sleep(_WRITE_TURN)

    def held_elsewhere(self) -> bool:
        """Whether another process holds the file's write lock past one turn of waiting (a commit of
        its own passes within it), as a write of this process would meet it now: what a search says
        held its index's work off, rather than a build. Any other failure is the writer's to meet."""
        try:
            with self.using() as conn:
                if _begun(conn, time.monotonic()):
                    conn.execute("ROLLBACK")
        except StoreError as exc:
            return exc.locked
        return False

    def _try_transaction(self, fn, deadline: float) -> tuple[bool, object]:
        """(True, ``fn``'s result) or, another process's write lock still held and time left, (False, None)."""
        with self.using() as conn:
            if not _begun(conn, deadline):
                return False, None
            try:
                out = fn(conn)
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:  # a failed COMMIT (a full disk) can leave it open
                    with suppress(sqlite3.Error):
                        conn.execute("ROLLBACK")
                raise
            self.writes += 1
            return True, out
