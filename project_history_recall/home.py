"""One Hermes home as this process sees it: its paths, and every cache kept for it.

A process can serve several homes (profiles; the tests, thousands). What is
kept between searches for one home lives on its ``Home``: the session
catalog, the attribution map, the keyword index's keeper, the vector store
with its indexers and in-memory matrices. ``session_moved`` is the one place
where a change this process made to Hermes's data reaches them.

Not here, on purpose: values read from small files and keyed by the file
(settings, ``.env``, consents through ``files.filestamp``; ``projects.db``
and ``recall.db`` through ``hermes.watch``), which refresh themselves when the
file changes; and what belongs to the process, whatever the home (the
embedding model, loaded once; a thread's read connection to ``state.db``).

The parts are imported when first used: registering the plugin in Hermes
must not load numpy or open a database.
"""

from __future__ import annotations

import sqlite3
import threading
from collections import OrderedDict
from pathlib import Path

from .hermes import paths

MAX_MATRICES = 2  # projects whose vectors stay in memory (LRU): ~52 MB per 100k chunks


class Home:
    _homes: dict[str, "Home"] = {}
    _homes_lock = threading.Lock()

    @classmethod
    def of(cls, path: Path) -> "Home":
        key = str(Path(path).absolute())
        with cls._homes_lock:
            home = cls._homes.get(key)
            if home is None:
                home = cls._homes[key] = cls(Path(path))
            return home

    @classmethod
    def every(cls) -> list["Home"]:
        """Every home this process has served (tests wait for their background work)."""
        with cls._homes_lock:
            return list(cls._homes.values())

    def __init__(self, path: Path):
        from .hermes.catalog import SessionCatalog

        self.path = path
        self.state_db = paths.state_db_path(path)
        self.data_dir = paths.data_dir(path)
        self.lock = threading.Lock()
        self.catalog = SessionCatalog(self.state_db)
        self.attribution = None  # scope.resolve's map of every session's project, rebuilt when its inputs change
        self._keeper = None
        self._store = None
        self._indexers: dict[str, object] = {}  # model fingerprint -> its indexer
        self._matrices: OrderedDict = OrderedDict()

    # -- what a move changes -----------------------------------------------------------------
    def session_moved(self) -> None:
        """This process changed a session's row in state.db: read every row again at the next search."""
        self.catalog.invalidate()

    # -- the plugin's derived files -------------------------------------------------------------
    def keeper(self):
        """The keeper of this home's keyword index (reopened if the file went away)."""
        from .keyword import textindex

        with self.lock:
            kept = self._keeper
            if kept is not None and kept.error is None and kept.index.healthy():
                return kept
            self._keeper = textindex.Keeper(self.path, textindex.TextIndex(self.data_dir / textindex.FILE_NAME))
        _close(kept.index if kept is not None else None)
        return self._keeper

    def vector_store(self):
        """This home's ``embeddings.db`` (reopened if the file was deleted or replaced)."""
        from .semantic import store

        with self.lock:
            old = self._store
            if old is not None and old.healthy():
                return old
            # Open (and if need be rebuild) the new file before closing the old
            # connection: closing checkpoints its WAL into whatever file it still
            # holds, which by then has been moved aside.
            self._store = store.VectorStore(store.path_for(self.data_dir))
            self._indexers.clear()
            self._matrices.clear()
        _close(old)
        return self._store

    def indexer(self, settings, embedder, vectors):
        """The background indexer of ``vectors`` for ``embedder``'s model (a fresh one after it stopped)."""
        from .semantic.indexer import Indexer

        with self.lock:
            worker = self._indexers.get(embedder.fingerprint)
            if worker is None or worker.error or worker.store is not vectors:
                worker = self._indexers[embedder.fingerprint] = Indexer(self.path, settings, embedder, vectors)
            return worker

    def indexers(self) -> list:
        with self.lock:
            return list(self._indexers.values())

    def matrix(self, vectors, fingerprint: str, scope_key: tuple, dimension: int):
        """A scope's vectors in memory (the last MAX_MATRICES scopes asked for)."""
        from .semantic.matrix import ScopeMatrix

        key = (id(vectors), fingerprint, scope_key)
        with self.lock:
            found = self._matrices.get(key)
            if found is None:
                found = self._matrices[key] = ScopeMatrix(dimension)
            self._matrices.move_to_end(key)
            while len(self._matrices) > MAX_MATRICES:
                self._matrices.popitem(last=False)
            return found


def _close(thing) -> None:
    if thing is not None:
        try:
            thing.close()
        except sqlite3.Error:
            pass
