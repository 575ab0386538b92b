"""Consent tokens: how the agent shows that the user agreed, in the conversation that asked.

A ``consent_required`` response carries a token, an HMAC of (service, model,
project kind, project id, the conversation that was asked, the time) under the
home's secret (``consent_secret``). The agent passes it back as the ``consent``
argument only after the user agreed. A model cannot grant consent by accident:
``true``, ``"yes"`` or a made-up string are refused; the token is unguessable
without the secret, and one scope's token does not open another (another
project, model or service).

A token proves that the user was asked in one conversation, so it counts in
that conversation only (its subagents and continuations included: the
conversation is the top of the caller's parent chain), and for an hour.
Hermes keeps every tool result, token included, and core ``session_search``
shows it to any later conversation: a token read there records nothing.
The token appears only in the tool response that asks (the CLI and /recall
show the command a person runs instead), is masked wherever a search shows
it from the history (its shape, ``CONSENT_TOKEN``, is in ``redaction``, which sits below the
consent gate), and is never logged.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import time
from pathlib import Path

from ..redaction import CONSENT_TOKEN_PREFIX as TOKEN_PREFIX
from . import consent_secret
from .consent import scope_of

TOKEN_LIFETIME = 3600  # seconds a token counts after the response that gave it
# A token from the near future is a clock set back a little, not a forgery.
_CLOCK_SKEW = 300
# Sizes in a token: when it was issued (seconds), its conversation's tag, the HMAC.
_ISSUED, _TAG, _MAC = 5, 5, 20
_BODY = re.compile(r"[a-z2-7]{%d}" % ((_ISSUED + _TAG + _MAC) * 8 // 5))


def _hmac(secret: bytes, *parts: object) -> bytes:
    # ASCII JSON: a session id the host passes may hold a lone surrogate, which UTF-8 cannot encode.
    return hmac.new(secret, json.dumps(parts).encode("ascii"), hashlib.sha256).digest()


def _conversation_tag(secret: bytes, conversation: str) -> bytes:
    """A short keyed digest of a conversation id: the token names its conversation without
    showing it, and a refusal can still tell "another conversation" from "not a token"."""
    return _hmac(secret, "consent-conversation", conversation)[:_TAG]


def _token_mac(secret: bytes, scope: tuple, tag: bytes, issued: int) -> bytes:
    return _hmac(secret, "consent-v2", *scope, tag.hex(), issued)[:_MAC]


def token_for(home: Path, service: str, model: str, project_key: tuple, conversation: str,
              issued_at: float | None = None) -> str:
    """The token that grants exactly this scope, in ``conversation``, for ``TOKEN_LIFETIME``
    from ``issued_at`` (now)."""
    secret = consent_secret.key(home)
    issued = int(time.time() if issued_at is None else issued_at)
    tag = _conversation_tag(secret, conversation)
    raw = issued.to_bytes(_ISSUED, "big") + tag + _token_mac(secret, scope_of(service, model, project_key), tag, issued)
    return TOKEN_PREFIX + base64.b32encode(raw).decode("ascii").lower()


def token_status(home: Path, token: str, service: str, model: str, project_key: tuple,
                 conversation: tuple[str, ...]) -> str:
    """``valid``; ``rejected`` (not a token for this scope); ``other_conversation`` (issued
    to a conversation other than any of ``conversation``'s ids); or ``expired``."""
    body = token[len(TOKEN_PREFIX):] if token.startswith(TOKEN_PREFIX) else ""
    if not _BODY.fullmatch(body):
        return "rejected"
    raw = base64.b32decode(body.upper())
    issued, tag, mac = int.from_bytes(raw[:_ISSUED], "big"), raw[_ISSUED:_ISSUED + _TAG], raw[_ISSUED + _TAG:]
    secret = consent_secret.key(home)
    if not hmac.compare_digest(mac, _token_mac(secret, scope_of(service, model, project_key), tag, issued)):
        return "rejected"
    if not any(hmac.compare_digest(tag, _conversation_tag(secret, c)) for c in conversation):
        return "other_conversation"
    now = time.time()
    if not now - TOKEN_LIFETIME <= issued <= now + _CLOCK_SKEW:
        return "expired"
    return "valid"
