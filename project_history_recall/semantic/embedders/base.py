"""What every embedder offers the semantic path.

An embedder turns texts into unit-length float32 vectors. Its ``fingerprint``
names everything that changes the vectors (provider, model, version,
dimension, preprocessing including how messages are chunked) and is stored
with every vector, so vectors from different models or settings never mix.
``remote`` embedders send text off the machine and need the user's consent
first (``consent.check``); local ones do not.
"""

from __future__ import annotations

from typing import Protocol, Sequence, runtime_checkable

from ...errors import DataError

# Bump when chunking.prepare/split change the text a vector is made from.
PREPROCESSING_VERSION = 1


class EmbedderUnavailable(DataError):
    """The embedder cannot run here; the message says why and what to do."""

    codes = ("semantic_unavailable",)


@runtime_checkable
class Embedder(Protocol):
    provider: str  # "local" or the remote service's base URL
    model: str
    dimension: int | None  # None: a remote model not asked yet
    remote: bool
    fingerprint: str | None  # None while the dimension is unknown
    context_weight: float  # a chunk's neighbours' weight in its score (matrix.py)
    reference_chunks_per_second: float | None  # for time estimates before this process has measured
    cosine_baseline: float  # the cosine of unrelated texts, mapped to 0 in scores (matrix.py)

    def embed_documents(self, texts: Sequence[str]) -> "numpy.ndarray":  # noqa: F821
        """(len(texts), dimension) float32, rows L2-normalised."""

    def embed_query(self, text: str) -> "numpy.ndarray":  # noqa: F821
        """(dimension,) float32, L2-normalised."""


def preprocessing_tag(chunk_chars: int, chunk_overlap: int) -> str:
    return f"prep{PREPROCESSING_VERSION}-chunk{chunk_chars}o{chunk_overlap}"


def normalise(x):
    import numpy as np

    norms = np.linalg.norm(x, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return x / norms
