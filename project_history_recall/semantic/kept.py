"""What the semantic engine keeps for each Hermes home, in the home's slot.

The vector store (``embeddings.db``), one background indexer per model and
the last ``MAX_MATRICES`` scopes' vectors in memory. They belong together:
a store opened afresh (the file was deleted or replaced) leaves its indexers
and matrices behind with the old one. Each scope's matrix is also saved in
``matrices/`` in the data folder, one file per model and scope, for the
next process to start from; those of a project that is gone, or of another
model or chunk size, are deleted (``keep_matrices``).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING

from ..files import arrays, derived
from ..home import Home
from .indexer import Indexer
from .matrix import ScopeMatrix
from .embedders.base import known_fingerprint
from .store import VectorStore, path_for

if TYPE_CHECKING:
    from ..settings import Settings
    from .embedders.base import Embedder

MAX_MATRICES = 2  # projects whose vectors stay in memory (LRU): ~52 MB per 100k chunks
MATRICES = "matrices"  # the folder of the saved matrices, in the data folder
_MATRIX_NAME = re.compile(r"[0-9a-f]{32}\.arrays")  # saved_matrix's names: nothing else there is deleted


class SemanticParts:
    """One home's semantic parts; every change under the home's lock."""

    def __init__(self, home: Home):
        self.home = home
        self._store: VectorStore | None = None
        self._indexers: dict[str, Indexer] = {}  # model fingerprint -> its indexer
        self._matrices: OrderedDict = OrderedDict()
        self._last_kept: tuple | None = None  # what keep_matrices was last asked to keep

    def vector_store(self) -> VectorStore:
        """This home's ``embeddings.db`` (reopened if the file was deleted or replaced)."""
        with self.home.lock:
            old = self._store
            if old is not None and old.healthy():
                return old
            # Open (and if need be rebuild) the new file before closing the old
            # connection: closing checkpoints its WAL into whatever file it still
            # holds, which by then has been moved aside.
            self._store = fresh = VectorStore(path_for(self.home.data_dir))
            self._indexers.clear()
            self._matrices.clear()
        derived.retire(old)
        return fresh

    def indexer(self, settings: Settings, embedder: Embedder, vectors: VectorStore) -> Indexer:
        """The background indexer of ``vectors`` for ``embedder``'s model (a fresh one after it stopped)."""
        with self.home.lock:
            fp = known_fingerprint(embedder)
            worker = self._indexers.get(fp)
            if worker is None or worker.error or worker.store is not vectors:
                worker = self._indexers[fp] = Indexer(self.home.path, settings, embedder, vectors)
            return worker

    def indexers(self) -> list[Indexer]:
        with self.home.lock:
            return list(self._indexers.values())

    def matrix(self, vectors: VectorStore, fingerprint: str, scope_key: tuple, dimension: int,
               context_weight: float = 1.0) -> ScopeMatrix:
        """A scope's vectors in memory (the last MAX_MATRICES scopes asked for), scored with
        ``context_weight`` (the model's, and the fingerprint names the model)."""
        key = (id(vectors), fingerprint, scope_key, context_weight)
        with self.home.lock:
            found = self._matrices.get(key)
            if found is None:
                found = self._matrices[key] = ScopeMatrix(
                    dimension, context_weight, self.saved_matrix(fingerprint, scope_key, context_weight),
                    vectors.identity)
            self._matrices.move_to_end(key)
            while len(self._matrices) > MAX_MATRICES:
                self._matrices.popitem(last=False)
            return found

    def saved_matrix(self, fingerprint: str, scope_key: tuple, context_weight: float) -> Path:
        """The file a scope's matrix is saved in: one per model and scope, whichever store it
        came from (a rebuilt store's matrix is saved over the old one's)."""
        name = json.dumps([fingerprint, scope_key, context_weight])
        return self.home.data_dir / MATRICES / f"{hashlib.sha256(name.encode()).hexdigest()[:32]}.arrays"

    def keep_matrices(self, fingerprint: str, context_weight: float, scope_keys: frozenset[tuple]) -> list[str]:
        """Delete the saved matrices but those of ``scope_keys`` for this model: one of a project
        that is gone, or of another model or chunk size (another fingerprint), is never read
        again. Only when the scopes or the model differ from this process's last call, so a
        search pays for no more than a comparison. The names deleted.

        A process that read the file keeps what it read (on Linux a deleted file lives on while
        it is open or mapped); one that still wants it saves it again."""
        asked = (fingerprint, context_weight, scope_keys)  # the set is known_scopes', compared by identity first
        with self.home.lock:
            if asked == self._last_kept:
                return []
            self._last_kept = asked
        keep = {self.saved_matrix(fingerprint, key, context_weight).name for key in asked[2]}
        return arrays.prune(self.home.data_dir / MATRICES, _MATRIX_NAME, keep)


def of(home: Path) -> SemanticParts:
    return Home.of(home).slot("semantic.kept", SemanticParts)
