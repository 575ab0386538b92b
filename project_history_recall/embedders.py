"""What every embedder offers the semantic path.

An embedder turns texts into unit-length float32 vectors. Its ``fingerprint``
names everything that changes the vectors (provider, model, version,
dimension, preprocessing) and is stored with every vector, so vectors from
different models never mix. ``remote`` embedders send text off the machine
and need the user's consent first (see ``consent``); local ones do not.
"""

from __future__ import annotations

from typing import Protocol, Sequence, runtime_checkable



class EmbedderUnavailable(RuntimeError):
    """The embedder cannot run here; the message says why and what to do."""


@runtime_checkable
class Embedder(Protocol):
    provider: str  # "local" or the remote service's base URL
    model: str
    dimension: int
    remote: bool
    fingerprint: str

    def embed_documents(self, texts: Sequence[str]) -> "numpy.ndarray":  # noqa: F821
        """(len(texts), dimension) float32, rows L2-normalised."""

    def embed_query(self, text: str) -> "numpy.ndarray":  # noqa: F821
        """(dimension,) float32, L2-normalised."""
