"""An OpenAI-compatible embeddings endpoint: OpenAI itself, or a local server
(Ollama, llama.cpp, vLLM, LM Studio …) that speaks the same API.

``POST {base_url}/embeddings`` with ``{"model", "input": [texts]}`` (and
``"dimensions"`` when configured); the answer's ``data[i].embedding`` are the
vectors. Only the standard library is used for HTTP (``urllib``): the plugin
also runs standalone, without Hermes and its ``httpx``.

Never called before the consent gate (``consent.check``) passed for the scope
whose text it embeds: this module sends whatever it is given. What it
guarantees itself:

- the API key (read from ``.env`` or the environment at each request, see
  ``envfile``) goes only into the ``Authorization`` header, and is scrubbed
  from every error message, whatever the service echoes back;
- redirects are refused (they would carry the key and the text to an address
  nobody agreed to);
- 429, 5xx and network errors are retried with exponential backoff, a
  ``Retry-After`` of up to ``MAX_RETRY_AFTER`` seconds is honoured (a longer
  one fails at once); background indexing gets ``openai.timeout`` per request,
  a search's query at most ``openai.query_timeout`` in all, retries included;
- after a failure, queries fail at once for ``COOLDOWN`` seconds instead of
  making every search wait for a service that just failed;
- the dimension is the configured one (a different answer is an error), or
  learned from the first answer and then fixed for this object's lifetime, so
  vectors of different sizes never share a fingerprint.
"""

from __future__ import annotations

import http.client
import ipaddress
import json
import logging
import random
import re
import threading
import time
import urllib.error
import urllib.request
from collections import OrderedDict
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import TYPE_CHECKING, Sequence
from urllib.parse import urlsplit

from ...files import envfile
from ...hermes import host
from ...version import __version__
from .. import chunking
from .base import EmbedderUnavailable, normalise, preprocessing_tag

if TYPE_CHECKING:
    from ...settings import Settings

logger = logging.getLogger(__name__)

RETRY_STATUSES = {429, 500, 502, 503, 504}
MAX_RETRY_AFTER = 30.0  # seconds; a service asking for longer is reported, not waited for
BACKOFF_BASE = 0.5
BACKOFF_CAP = 8.0
COOLDOWN = 10.0  # seconds queries fail fast after a failure
MAX_RESPONSE_BYTES = 64 << 20
MAX_QUERY_CHARS = 8000
QUERY_CACHE = 64


_HEADER_SAFE = re.compile(r"^[\x21-\x7e]+$")  # printable ASCII, no spaces: what a bearer token may hold


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req, fp, code, msg, headers, newurl):  # noqa: D401 - urllib's hook
        return None  # urllib then raises HTTPError with the 3xx status


def _is_loopback(host: str | None) -> bool:
    if not host:
        return False
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _opener(url: str):
    handlers: list = [_NoRedirect()]
    if _is_loopback(urlsplit(url).hostname):
        # A local server is never reached through the user's HTTP proxy.
        handlers.append(urllib.request.ProxyHandler({}))
    return urllib.request.build_opener(*handlers)


def _retry_after(value: str | None) -> float | None:
    """Seconds from a ``Retry-After`` header (delta-seconds or an HTTP date)."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError, IndexError, OverflowError):
        return None


def _service_message(payload: bytes) -> str:
    """The error message an OpenAI-style service put in its body, short and on one line."""
    text = payload[:4096].decode("utf-8", "replace")
    try:
        obj = json.loads(text)
        err = obj.get("error") if isinstance(obj, dict) else None
        if isinstance(err, dict) and isinstance(err.get("message"), str):
            text = err["message"]
        elif isinstance(err, str):
            text = err
    except ValueError:
        pass
    return " ".join(text.split())[:300]


class _Failure(Exception):
    """One attempt failed: ``reason`` for people; ``retry`` whether trying again may help."""

    def __init__(self, reason: str, retry: bool, wait: float | None = None):
        super().__init__(reason)
        self.reason, self.retry, self.wait = reason, retry, wait


class OpenAIEmbedder:
    """Vectors from ``POST {base_url}/embeddings``."""

    remote = True
    context_weight = 1.0  # not measured for remote models: the default model's
    context_before = 0  # each message alone: measured on USE only
    reference_chunks_per_second = None  # the service's speed, unknown until it answers
    cosine_baseline = 0.0
    fusion_weight = 1.0  # not measured for remote models: USE's, the more cautious one

    def __init__(self, home: Path | None, base_url: str, model: str, *, dimensions: int | None = None,
                 api_key_env: str | None = "OPENAI_API_KEY", timeout: float = 10.0, query_timeout: float = 4.0,
                 max_retries: int = 3, batch_size: int = 32, chunk_chars: int = 800, chunk_overlap: int = 100):
        self.home = home
        self.provider = base_url.rstrip("/")
        self.model = model
        self.requested_dimensions = dimensions
        self.api_key_env = api_key_env
        self.timeout = float(timeout)
        self.query_timeout = float(query_timeout)
        self.max_retries = int(max_retries)
        self.batch_size = max(1, int(batch_size))
        self._url = self.provider + "/embeddings"
        self._prep = preprocessing_tag(chunk_chars, chunk_overlap)
        self._lock = threading.Lock()
        self._queries: OrderedDict[str, object] = OrderedDict()
        self._last_failure: tuple[float, str] | None = None
        self.dimension: int | None = None
        self.fingerprint: str | None = None
        if dimensions:
            self._learn(int(dimensions))

    @classmethod
    def from_settings(cls, settings: Settings) -> "OpenAIEmbedder":
        return cls(settings.home, settings.openai.base_url, settings.openai.model,
                   dimensions=settings.openai.dimensions, api_key_env=settings.openai.api_key_env,
                   timeout=settings.openai.timeout, query_timeout=settings.openai.query_timeout,
                   max_retries=settings.openai.max_retries, batch_size=settings.batch_size,
                   chunk_chars=settings.chunk_chars, chunk_overlap=settings.chunk_overlap)

    def __repr__(self) -> str:  # never the key: it is not an attribute, and this says so
        return f"OpenAIEmbedder({self.provider!r}, model={self.model!r}, dimension={self.dimension})"

    def fingerprint_parts(self) -> tuple[str, str]:
        """What comes before and after the dimension in this embedder's fingerprints."""
        return f"openai/{self.provider}/{self.model}/d", f"/{self._prep}"

    def fingerprint_for(self, dimension: int) -> str:
        head, tail = self.fingerprint_parts()
        return f"{head}{dimension}{tail}"

    def _learn(self, dimension: int) -> None:
        self.dimension = dimension
        self.fingerprint = self.fingerprint_for(dimension)

    # -- the two calls the semantic path makes --------------------------------------
    def embed_documents(self, texts: Sequence[str]):
        """Background indexing and the CLI: retries with backoff, ``timeout`` per request."""
        import numpy as np

        out = []
        for i in range(0, len(texts), self.batch_size):
            out.append(self._embed(list(texts[i:i + self.batch_size]), deadline=None))
        if not out:
            return np.zeros((0, self.dimension or 0), dtype=np.float32)
        return np.vstack(out)

    def embed_query(self, text: str):
        """A search's query: at most ``query_timeout`` seconds in all, and at once
        unavailable while the service is cooling down after a failure."""
        text = chunking.prepare(text)[:MAX_QUERY_CHARS]
        with self._lock:
            if text in self._queries:
                self._queries.move_to_end(text)
                return self._queries[text]
            failed = self._last_failure
        if failed and time.monotonic() - failed[0] < COOLDOWN:
            raise EmbedderUnavailable(f"{failed[1]} (a few seconds ago; semantic search resumes when the "
                                      "service answers again)")
        vec = self._embed([text], deadline=time.monotonic() + self.query_timeout)[0]
        with self._lock:
            self._queries[text] = vec
            while len(self._queries) > QUERY_CACHE:
                self._queries.popitem(last=False)
        return vec

    # -- requests ------------------------------------------------------------------------
    def _embed(self, texts: list[str], deadline: float | None):
        key, _where = (envfile.lookup(self.home, self.api_key_env, host.environment(self.home, host.managed_folder()))
                       if self.home is not None else (None, ""))
        # "" is refused by OpenAI
        body: dict[str, object] = {"model": self.model, "input": [t if t else " " for t in texts]}
        if self.requested_dimensions:
            body["dimensions"] = int(self.requested_dimensions)
        data = json.dumps(body).encode("utf-8")
        attempt = 0
        while True:
            attempt += 1
            left = None if deadline is None else deadline - time.monotonic()
            try:
                if left is not None and left <= 0:
                    raise _Failure(f"no answer from the embedding service at {self.provider} within "
                                   f"{self.query_timeout:g} s", retry=False)
                payload = self._post(data, key, self.timeout if left is None else min(self.timeout, left),
                                     self.timeout if deadline is None else min(self.timeout, self.query_timeout))
                vecs = self._vectors(payload, len(texts))
            except _Failure as failure:
                reason = envfile.scrub(failure.reason, key, min_len=1)  # the service's words: mask any length
                wait = failure.wait if failure.wait is not None else min(
                    BACKOFF_CAP, BACKOFF_BASE * 2 ** (attempt - 1)) * (0.5 + random.random() / 2)
                give_up = not failure.retry or attempt > self.max_retries
                if failure.wait is not None and failure.wait > MAX_RETRY_AFTER:
                    reason += f"; it asks to wait {failure.wait:.0f} s before trying again"
                    give_up = True
                if not give_up and deadline is not None and time.monotonic() + wait >= deadline:
                    give_up = True
                if give_up:
                    if attempt > 1:
                        reason += f" (after {attempt} attempts)"
                    with self._lock:
                        self._last_failure = (time.monotonic(), reason)
                    raise EmbedderUnavailable(reason) from None
                logger.info("embedding service %s: %s; trying again in %.1f s", self.provider, reason, wait)
                time.sleep(wait)
                continue
            with self._lock:
                self._last_failure = None
            return vecs

    def _post(self, data: bytes, key: str | None, timeout: float, nominal: float) -> bytes:
        """One request; ``nominal`` is the timeout people configured (``timeout`` may be what is left of it)."""
        request = urllib.request.Request(self._url, data=data, method="POST", headers={
            "Content-Type": "application/json", "Accept": "application/json",
            "User-Agent": f"project-history-recall/{__version__}"})
        where = f"the embedding service at {self.provider}"
        if key:
            if not _HEADER_SAFE.match(key):
                # http.client would raise with the header's value in its message.
                raise _Failure(f"the key in {self.api_key_env} has characters a request header cannot carry "
                               "(a line break, a space, a non-ASCII character?); check $HERMES_HOME/.env",
                               retry=False)
            request.add_unredirected_header("Authorization", f"Bearer {key}")
        try:
            with _opener(self._url).open(request, timeout=timeout) as response:
                payload = response.read(MAX_RESPONSE_BYTES + 1)
        except urllib.error.HTTPError as exc:
            status = exc.code
            try:
                body = exc.read(4096)
            except Exception:  # the connection broke while reading the error body
                body = b""
            finally:
                exc.close()
            if status in (401, 403):
                # Not the body: services quote (parts of) the key they refused.
                raise _Failure(f"{where} refused the API key (HTTP {status}); check {self.api_key_env} in "
                               "$HERMES_HOME/.env", retry=False) from None
            if 300 <= status < 400:
                raise _Failure(f"{where} redirected the request (HTTP {status}); set openai.base_url to the "
                               "address it answers at (redirects are not followed)", retry=False) from None
            message = _service_message(body)
            reason = f"{where} answered HTTP {status}" + (f": {message}" if message else "")
            if status == 404:
                reason += f" (is {self._url} the embeddings endpoint, and model '{self.model}' available?)"
            raise _Failure(reason, retry=status in RETRY_STATUSES,
                           wait=_retry_after(exc.headers.get("Retry-After")) if exc.headers else None) from None
        except (TimeoutError, OSError, http.client.HTTPException) as exc:
            # URLError is an OSError, a socket timeout a TimeoutError; a cut answer an HTTPException.
            inner = getattr(exc, "reason", exc)
            if isinstance(inner, TimeoutError) or "timed out" in str(inner):
                raise _Failure(f"{where} did not answer within {nominal:g} s", retry=True) from None
            raise _Failure(f"{where} cannot be reached: {type(inner).__name__}: {inner}", retry=True) from None
        except Exception as exc:  # anything else urllib raises: its type only, its message may hold headers
            raise _Failure(f"{where}: the request failed ({type(exc).__name__})", retry=False) from None
        if len(payload) > MAX_RESPONSE_BYTES:
            raise _Failure(f"{where} sent an answer larger than {MAX_RESPONSE_BYTES >> 20} MiB", retry=False)
        return payload

    def _vectors(self, payload: bytes, count: int):
        import numpy as np

        where = f"the embedding service at {self.provider}"
        try:
            obj = json.loads(payload)
            data = obj["data"]
            if not isinstance(data, list) or not all(isinstance(d, dict) for d in data):
                raise TypeError
            if all(isinstance(d.get("index"), int) for d in data):
                data = sorted(data, key=lambda d: d["index"])
            vecs = np.asarray([d["embedding"] for d in data], dtype=np.float32)
        except (ValueError, KeyError, TypeError):
            raise _Failure(f"{where} sent an answer that is not an OpenAI embeddings response", retry=False) from None
        if vecs.ndim != 2 or len(vecs) != count or vecs.shape[1] == 0:
            raise _Failure(f"{where} sent {len(vecs)} vectors for {count} texts", retry=False)
        if not np.isfinite(vecs).all():
            raise _Failure(f"{where} sent vectors with non-numbers in them", retry=False)
        with self._lock:
            if self.dimension is None:
                self._learn(int(vecs.shape[1]))
            elif vecs.shape[1] != self.dimension:
                hint = ("it may not support 'dimensions': remove openai.dimensions or set it to "
                        f"{vecs.shape[1]}") if self.requested_dimensions else \
                    "the model behind that name changed; semantic search resumes with a new index after a restart"
                raise _Failure(f"{where} sent {vecs.shape[1]}-dimensional vectors where {self.dimension} were "
                               f"expected ({hint})", retry=False)
        return normalise(vecs)

