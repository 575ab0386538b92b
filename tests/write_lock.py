"""Another process holding a SQLite file's write lock (another Hermes process's indexer committing a
batch, a `sqlite3` shell left in a transaction), for the tests of what the plugin does meanwhile.

A test tells a search that waited only its budget from one that waited the lock out by the holder's
state when the answer arrives, not by a clock: the holder lets go by itself after ``at_most``
seconds (less than SQLite's 10 s timeout the plugin waited before), so an answer that came while it
``holds()`` did not wait for it."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

_HOLDER = textwrap.dedent("""
    import select, sqlite3, sys
    conn = sqlite3.connect(sys.argv[1], uri=True, isolation_level=None)
    conn.execute("BEGIN IMMEDIATE")
    print("holding", flush=True)
    select.select([sys.stdin], [], [], float(sys.argv[2]))  # told to let go (stdin closed), or by itself
    conn.execute("ROLLBACK")
""")


def _existing(path: Path) -> str:
    """``path`` as a URI SQLite opens only if the file is there: a holder that made the file would hold
    an empty one, which the plugin rightly sets aside as not a database, and its lock with it."""
    return f"{path.resolve().as_uri()}?mode=rw"


class WriteLock:
    """``path``'s write lock, held by a process of its own from construction until ``release()`` or,
    at the latest, ``at_most`` seconds. Use as a context manager."""

    def __init__(self, path: Path, at_most: float):
        self.path = path
        self._proc = subprocess.Popen([sys.executable, "-c", _HOLDER, _existing(path), str(at_most)],
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self._proc.stdout is not None and self._proc.stdout.readline() == "holding\n", f"{path} not held"

    def holds(self) -> bool:
        """Whether the holder has the lock now: a write begun by another connection is refused at once."""
        probe = sqlite3.connect(_existing(self.path), uri=True, timeout=0, isolation_level=None)
        try:
            probe.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc):
                raise
            return True
        else:
            probe.execute("ROLLBACK")
            return False
        finally:
            probe.close()

    def release(self) -> None:
        if self._proc.stdin is not None and not self._proc.stdin.closed:
            self._proc.stdin.close()
        assert self._proc.wait(30) == 0

    def __enter__(self) -> WriteLock:
        return self

    def __exit__(self, *_exc) -> None:
        self.release()
