"""The embedders there are, and the one the settings name, loaded once per process.

``local`` (``local.py``) is the embedded default, offline; ``e5-small``
(``e5.py``) is a stronger offline model, an optional extra; ``local+e5``
(``pair.py``) is both at once. ``openai``
(``openai.py``) is any OpenAI-compatible ``/embeddings`` endpoint, remote:
its ``dimension`` (and so its ``fingerprint``) may be unknown (None) until
its first answer, when ``openai.dimensions`` is not set; callers learn it,
after the consent gate, before they look anything up by fingerprint.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, overload

from ...hermes import paths
from .base import Embedder, EmbedderUnavailable
from .e5 import MultilingualE5Small
from .local import EmbeddedModel, UniversalSentenceEncoder
from .pair import UseAndE5

# The offline models by their ``embedder`` setting; anything else is ``openai``.
OFFLINE: dict[str, type[EmbeddedModel]] = {"local": UniversalSentenceEncoder, "e5-small": MultilingualE5Small,
                                            "local+e5": UseAndE5}
MODELS = "models"  # in the data folder: what loading a model computes, kept for the next process

logger = logging.getLogger(__name__)

if TYPE_CHECKING:
    from ...settings import Settings

_cache: dict[tuple, Embedder] = {}
_failures: dict[tuple, str] = {}
_loading: dict[tuple, threading.Event] = {}
_lock = threading.Lock()
# Counted up by ``forget``: a load begun before keeps nothing it finishes after.
_generation = 0


def identity(settings: Settings) -> tuple[bool, str, str]:
    """(remote, provider, model) of the configured embedder, without loading it:
    what a consent is recorded for."""
    offline = OFFLINE.get(settings.embedder)
    if offline is not None:
        return False, offline.provider, offline.model
    return True, settings.openai.base_url, settings.openai.model


def blend_weight(settings: Settings) -> float:
    """The weight hybrid search blends the cosine with: the ``blend_weight`` setting, or when it
    is unset the configured model's own (``fusion_weight``), known without loading the model."""
    if settings.blend_weight is not None:
        return settings.blend_weight
    offline = OFFLINE.get(settings.embedder)
    if offline is not None:
        return offline.fusion_weight
    from .openai import OpenAIEmbedder

    return OpenAIEmbedder.fusion_weight


def _key(settings: Settings) -> tuple:
    if settings.embedder in OFFLINE:
        return (settings.embedder, settings.chunk_chars, settings.chunk_overlap)
    # A remote embedder depends on every openai.* setting and, through its key, on the profile.
    return (settings.embedder, str(settings.home), settings.openai,
            settings.batch_size, settings.chunk_chars, settings.chunk_overlap)


def _build(settings: Settings) -> Embedder:
    offline = OFFLINE.get(settings.embedder)
    if offline is not None:
        return offline(settings.chunk_chars, settings.chunk_overlap,
                       saved_in=None if settings.home is None else paths.data_dir(settings.home) / MODELS)
    from .openai import OpenAIEmbedder

    return OpenAIEmbedder.from_settings(settings)


def _load_now(key: tuple, settings: Settings, done: threading.Event, generation: int) -> None:
    try:
        embedder = _build(settings)
    except EmbedderUnavailable as exc:
        _keep(_failures, key, str(exc), generation)
    except Exception as exc:  # anything else the model throws while loading
        logger.exception("the embedded model failed to load")  # the status below says what, the log where
        _keep(_failures, key, f"the embedded model failed to load: {type(exc).__name__}: {exc}", generation)
    else:
        _keep(_cache, key, embedder, generation)
    finally:
        with _lock:
            if _loading.get(key) is done:  # after ``forget``, a later load's may be there
                del _loading[key]
        done.set()


def _keep(kept: dict, key: tuple, value: object, generation: int) -> None:
    """What a load begun in ``generation`` came to, unless ``forget`` let go of everything since: a
    model finished after its copy of the plugin was unloaded would stay in that copy's memory."""
    with _lock:
        if generation == _generation:
            kept[key] = value


@overload
def load(settings: Settings, wait: None = None) -> Embedder: ...
@overload
def load(settings: Settings, wait: float | None) -> Embedder | None: ...


def load(settings: Settings, wait: float | None = None) -> Embedder | None:
    """The configured embedder, loaded once per process (the default model takes 1-2 s).

    Loading runs in a background thread; this waits for it at most ``wait``
    seconds (None: until loaded) and returns None if it is still loading.
    Raises ``EmbedderUnavailable`` with a reason a person can act on.
    """
    key = _key(settings)
    if settings.embedder not in OFFLINE:
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
            threading.Thread(target=_load_now, args=(key, settings, done, _generation), name="phr-model-load",
                             daemon=True).start()
    done.wait(wait)
    with _lock:
        if key in _failures:
            raise EmbedderUnavailable(_failures[key])
        return _cache.get(key)


def forget() -> None:
    """Let go of the loaded models, and of those still loading when they finish (a copy of the
    plugin Hermes unloaded: see ``register``)."""
    global _generation
    with _lock:
        _generation += 1
        _cache.clear()
        _failures.clear()
        _loading.clear()


def stored_fingerprint(embedder: Embedder, store) -> str | None:
    """The fingerprint an embedder that learns its size (one with ``fingerprint_parts``) stored
    its vectors under in an earlier process, while its size is not known yet in this one
    (status reports). Here, not in that embedder's module: the engine asks whichever
    embedder is configured."""
    parts = getattr(embedder, "fingerprint_parts", None)
    if parts is None:
        return None
    head, tail = parts()
    found = [fp for fp in store.fingerprints()
             if fp.startswith(head) and fp.endswith(tail) and fp[len(head):len(fp) - len(tail)].isdigit()]
    return found[0] if len(found) == 1 else None
