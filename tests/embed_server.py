"""A real HTTP server on loopback that speaks the OpenAI embeddings API and records every request.

Vectors are deterministic: words (and, for CJK, characters) hashed into
``dimension`` buckets, so texts sharing words are near each other and a
search through it finds something. Failures are scripted per request
(``fail_next``) or for all (``always``); ``delay`` makes every answer slow,
in small sleeps that end when the server stops, so no test waits on it.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

_WORD = re.compile(r"[\w]+", re.UNICODE)
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict
    body: bytes
    json: object = None

    @property
    def inputs(self) -> list[str]:
        if isinstance(self.json, dict):
            value = self.json.get("input")
            return [value] if isinstance(value, str) else list(value or [])
        return []


@dataclass
class Reply:
    status: int
    body: object = None  # dict -> JSON; bytes/str as is
    headers: dict = field(default_factory=dict)


def vector(text: str, dimension: int) -> list[float]:
    out = [0.0] * dimension
    tokens = [w.lower() for w in _WORD.findall(text)] + _CJK.findall(text)
    for token in tokens or [text]:
        h = int.from_bytes(hashlib.blake2b(token.encode("utf-8", "surrogatepass"), digest_size=4).digest(), "big")
        out[h % dimension] += 1.0 if (h >> 16) & 1 else -1.0
    if not any(out):
        out[0] = 1.0
    return out


class EmbeddingServer:
    def __init__(self, dimension: int = 64, path: str = "/v1"):
        self.dimension = dimension
        self.prefix = path
        self.requests: list[Recorded] = []
        self.fail_next: deque[Reply] = deque()
        self.always: Reply | None = None
        self.delay = 0.0
        self.answer_dimension: int | None = None  # answer with this size instead (a changed model)
        self._stop = threading.Event()
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # quiet
                pass

            def _record(self) -> Recorded:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                try:
                    parsed = json.loads(body) if body else None
                except ValueError:
                    parsed = None
                rec = Recorded(self.command, self.path, dict(self.headers.items()), body, parsed)
                with server._lock:
                    server.requests.append(rec)
                return rec

            def _send(self, reply: Reply) -> None:
                body = reply.body
                if isinstance(body, (dict, list)):
                    body = json.dumps(body).encode()
                elif isinstance(body, str):
                    body = body.encode()
                body = body or b""
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    for k, v in reply.headers.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(body)
                except OSError:  # the client gave up (a timeout test)
                    pass

            def _handle(self):
                rec = self._record()
                end = time.monotonic() + server.delay
                while time.monotonic() < end and not server._stop.is_set():
                    time.sleep(0.02)
                with server._lock:
                    scripted = server.fail_next.popleft() if server.fail_next else server.always
                if scripted is not None:
                    return self._send(scripted)
                if self.command != "POST" or self.path != server.prefix + "/embeddings":
                    return self._send(Reply(404, {"error": {"message": f"no route {self.path}"}}))
                texts = rec.inputs
                dim = server.answer_dimension or (rec.json or {}).get("dimensions") or server.dimension
                data = [{"object": "embedding", "index": i, "embedding": vector(t, dim)} for i, t in enumerate(texts)]
                data.reverse()  # the API gives an index for each: the client must not rely on order
                self._send(Reply(200, {"object": "list", "data": data, "model": (rec.json or {}).get("model"),
                                       "usage": {"prompt_tokens": 0, "total_tokens": 0}}))

            do_POST = do_GET = do_PUT = do_DELETE = do_PATCH = _handle

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._server.block_on_close = False
        self._thread = threading.Thread(target=self._server.serve_forever, name="embed-server", daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}{self.prefix}"

    def texts(self) -> list[str]:
        with self._lock:
            return [t for r in self.requests for t in r.inputs]

    def raw(self) -> bytes:
        with self._lock:
            return b"".join(r.body for r in self.requests) + b"".join(
                json.dumps(r.headers).encode() for r in self.requests)

    def count(self) -> int:
        with self._lock:
            return len(self.requests)

    def reset(self) -> None:
        with self._lock:
            self.requests.clear()

    def close(self) -> None:
        self._stop.set()
        self._server.shutdown()
        self._server.server_close()
