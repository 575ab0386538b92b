"""What every embedder offers the semantic path.

An embedder turns texts into unit-length float32 vectors. Its ``fingerprint``
names everything that changes the vectors (provider, model, version,
dimension, preprocessing including how messages are chunked) and is stored
with every vector, so vectors from different models or settings never mix.
``remote`` embedders send text off the machine and need the user's consent
first (``consent.check``); local ones do not.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, Sequence, runtime_checkable

from ...errors import DataError

if TYPE_CHECKING:
    import numpy

# Bump when chunking.prepare/split change the text a vector is made from.
PREPROCESSING_VERSION = 1


class EmbedderUnavailable(DataError):
    """The embedder cannot run here; the message says why and what to do."""

    codes = ("semantic_unavailable",)


@runtime_checkable
class Embedder(Protocol):
    # Read-only to the callers, so an embedder whose size is fixed may say
    # ``dimension: int`` (and ``fingerprint: str``).
    @property
    def provider(self) -> str:
        """"local" or the remote service's base URL."""

    @property
    def model(self) -> str: ...

    @property
    def dimension(self) -> int | None:
        """None: a remote model not asked yet."""

    @property
    def remote(self) -> bool: ...

    @property
    def fingerprint(self) -> str | None:
        """None while the dimension is unknown."""

    @property
    def context_weight(self) -> float:
        """A chunk's neighbours' weight in its score (matrix.py)."""

    @property
    def context_before(self) -> int:
        """How many earlier messages of its session a message is embedded after, as fit in its
        chunk (``chunking.after_earlier``); 0: each message alone."""

    @property
    def reference_chunks_per_second(self) -> float | None:
        """For time estimates before this process has measured."""

    @property
    def cosine_baseline(self) -> float:
        """The cosine of unrelated texts, mapped to 0 in scores (matrix.py)."""

    @property
    def fusion_weight(self) -> float:
        """The weight of a (baseline-mapped) cosine against the keyword shares in hybrid search (fusion.py)."""

    def embed_documents(self, texts: Sequence[str]) -> numpy.ndarray:
        """(len(texts), dimension) float32, rows L2-normalised."""

    def embed_query(self, text: str) -> numpy.ndarray:
        """(dimension,) float32, L2-normalised."""


def known_fingerprint(embedder: Embedder) -> str:
    """``embedder``'s fingerprint where its vector size must be known by now (an indexer is
    made only after ``learn_size`` or for a model of fixed size)."""
    fp = embedder.fingerprint
    if fp is None:
        raise AssertionError(f"the vector size of {embedder.model} is not known yet")
    return fp


def preprocessing_tag(chunk_chars: int, chunk_overlap: int, before: int = 0) -> str:
    """``before``: the embedder's ``context_before`` (named only when it embeds any)."""
    from ..chunking import SHORT_MESSAGE

    return f"prep{PREPROCESSING_VERSION}-chunk{chunk_chars}o{chunk_overlap}" + (
        f"-after{before}below{SHORT_MESSAGE}" if before else "")


def normalise(x):
    import numpy as np

    norms = np.linalg.norm(x, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return x / norms
