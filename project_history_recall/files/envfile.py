"""Secrets: the API key a remote embedder needs, and keeping it out of everything we print.

The key lives in ``$HERMES_HOME/.env`` (where ``hermes setup`` and
``hermes plugins install`` put secrets) or in the environment, under the
variable that the ``openai.api_key_env`` setting names. It is never stored in
a config file, and it is read at the moment a request is made: it is not kept
on any object, so no ``repr``, log line or traceback can carry it, and
rotating it in ``.env`` takes effect on the next request.

The file is read here rather than with Hermes's ``get_env_value`` because the
standalone CLI runs without Hermes and may read another profile
(``--home``) than the one Hermes would pick. It follows Hermes's own rules:
``.env`` wins over a value inherited from the shell (``load_hermes_dotenv``
loads it with ``override=True``), and the ``.env`` of an administrator's managed
scope wins over both (Hermes loads it last, with ``override=True``); ``export``
prefixes and quotes are accepted, a comment after the value is no part of it, a
byte-order mark is ignored.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping

from .filestamp import StampCache, file_stamp, read_regular

ENV_FILE = ".env"
PINNED = "managed .env"
# What a variable name may look like (the same rule as Hermes's save_env_value).
NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
MASK = "[redacted]"
# Shorter values are not scrubbed from what we print: a 3-character "key" would
# blank out ordinary words, and nothing that short is a real credential.
MIN_SCRUB_LEN = 6
# A piece of the key at least this long is masked too: a key broken by a line
# break, half pasted, or cut by a window must not show its first half either.
# Shorter pieces carry too little of a random key to matter.
MIN_FRAGMENT = 8

_parsed = StampCache()


def env_path(home: Path) -> Path:
    return home / ENV_FILE


# A quoted value, then at most a comment (python-dotenv's grammar, which Hermes reads ``.env`` with).
_QUOTED = re.compile(r"""\s*(?:"((?:\\.|[^"\\])*)"|'((?:\\.|[^'\\])*)')\s*(?:#.*)?$""")
# ``export`` and the blanks after it (a tab too, as python-dotenv takes it).
_EXPORT = re.compile(r"^export[ \t]+")
# A comment after an unquoted value: a ``#`` that follows whitespace (``KEY=sk-… # the work key``).
_COMMENT = re.compile(r"\s+#.*")
# A variable's value named in another's (python-dotenv's grammar: ``$NAME`` alone is kept as written).
_VARIABLE = re.compile(r"\$\{(?P<name>[^}:]*)(?::-(?P<default>[^}]*))?\}")


def _unquote(raw: str) -> str | None:
    """The value of ``KEY=raw`` as Hermes reads it; None for a line python-dotenv cannot parse (a quote
    left open), which Hermes skips."""
    quoted = _QUOTED.match(raw)
    if quoted is not None:
        double, single = quoted.groups()
        if double is not None:
            return re.sub(r'\\(["\\])', r"\1", double)
        return re.sub(r"\\(['\\])", r"\1", single)
    value = raw.strip()
    if value[:1] in ("'", '"'):
        return None
    return _COMMENT.sub("", value).strip()


def _expanded(value: str, known: Mapping[str, str]) -> str:
    """``value`` with each ``${NAME}`` (``${NAME:-default}``) in it replaced by what ``known`` holds for
    NAME, else the default, else nothing, as python-dotenv expands it for Hermes, in quotes or not:
    ``EMBED_KEY=${OPENAI_API_KEY}`` names the key that variable holds."""
    return _VARIABLE.sub(lambda m: known[m["name"]] if m["name"] in known else m["default"] or "", value)


def parse(text: str, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """``KEY=VALUE`` lines of a ``.env`` file, ``${NAME}`` read from the file's lines above it, else
    ``environ`` (Hermes loads the profile's ``.env`` over the environment). Pure."""
    out: dict[str, str] = {}
    for line in text.lstrip("\ufeff").splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        line = _EXPORT.sub("", line, count=1)
        name, _, raw = line.partition("=")
        name, value = name.strip(), _unquote(raw)
        if NAME.match(name) and value is not None:
            out[name] = _expanded(value, {**(environ or {}), **out})
    return out


@dataclass(frozen=True)
class Environment:
    """Where a variable ``.env`` lacks is read (``get``), and whether a ``${NAME}`` in ``.env`` may
    name one of the process's environment (``expands``). Under Hermes, as Hermes hands them to the
    profile served (``host.environment``)."""

    get: Callable[[str], str | None] = os.environ.get
    expands: bool = True
    # The managed scope's ``.env``, whose variables win over the profile's and the environment's.
    pinned: Path | None = None


def read(home: Path, expands: bool = True) -> dict[str, str]:
    """The profile's ``.env``, parsed (``${NAME}`` from the process's environment too when
    ``expands``); re-read only when the file changes."""
    return read_file(env_path(home), expands)


def read_file(path: Path, expands: bool = True) -> dict[str, str]:
    """The ``.env`` file at ``path``, parsed as ``read`` parses the profile's."""
    stamp = file_stamp(path)
    if stamp is None:
        return {}
    try:
        return _parsed.get(f"{path}\0{expands}", stamp, lambda: parse(
            read_regular(path).decode("utf-8", errors="replace"), os.environ if expands else None))
    except OSError:
        return {}


def lookup(home: Path, name: str | None, environment: Environment = Environment()) -> tuple[str | None, str]:
    """(the value, where it was found: "managed .env" | ".env" | "environment" | "") for variable ``name``."""
    if not name or not NAME.match(name):
        return None, ""
    value = read_file(environment.pinned).get(name) if environment.pinned is not None else None
    if value:
        return value, PINNED
    value = read(home, environment.expands).get(name)
    if value:
        return value, ENV_FILE
    value = environment.get(name)
    if value:
        return value, "environment"
    return None, ""


def scrub(text: str, *secrets: str | None, min_len: int = MIN_SCRUB_LEN) -> str:
    """``text`` with every occurrence of each secret replaced by a mask."""
    for secret in secrets:
        if secret and len(secret) >= min_len and secret in text:
            text = text.replace(secret, MASK)
    return text


def scrub_key(text: str, key: str | None) -> str:
    """``text`` with every run of at least ``MIN_FRAGMENT`` characters of ``key`` (the whole key
    included) replaced by a mask."""
    if not key or len(key) < MIN_SCRUB_LEN:
        return text
    size = min(MIN_FRAGMENT, len(key))
    # Every such run holds one of the key's aligned half-size blocks: a few lookups rule most texts out.
    half = size // 2
    if not any(key[i:i + half] in text for i in range(0, len(key) - half + 1, half)):
        return text
    spans = []
    for piece in {key[i:i + size] for i in range(len(key) - size + 1)}:
        at = text.find(piece)
        while at != -1:
            spans.append((at, at + size))
            at = text.find(piece, at + 1)
    if not spans:
        return text
    out: list[str] = []
    done = 0
    for start, end in sorted(spans):
        if start > done or not out:  # overlapping and touching runs share one mask
            out += [text[done:start], MASK]
        done = max(done, end)
    return "".join(out) + text[done:]


def describe(home: Path, name: str | None, environment: Environment = Environment()) -> dict:
    """What may be shown about the key: the variable's name and whether (and where) it is set."""
    value, where = lookup(home, name, environment)
    shown = {"variable": name, "set": bool(value)}
    if value:
        shown["from"] = {ENV_FILE: str(env_path(home)), PINNED: str(environment.pinned)}.get(where, "the environment")
        shown["value"] = "****"
    return shown

