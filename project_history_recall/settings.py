"""Settings: defaults, where they can be overridden, and validation.

Sources, later ones winning key by key:

1. the defaults below;
2. the plugin's own ``config.yaml`` in its data folder
   (``$HERMES_HOME/project-history-recall/config.yaml``);
3. Hermes's ``config.yaml``, section ``plugins.project-history-recall``;
4. Hermes's ``config.yaml``, ``plugins.entries.project-history-recall.settings``
   (what Hermes main's ``ctx.get_config`` reads).

A bad value never stops the plugin: it is reported (naming the source and
the key) and the default is used instead. Secrets never live here: an API key
is named by the ``.env`` variable that holds it, and a warning never repeats
the value of a key that might hold one by mistake (``openai.api_key_env``).

Consents to send text to a remote embedder (``consents``) are not settings:
they are read from, and written to, the plugin's own config.yaml only (see
``consent.py``); anywhere else they are ignored with a warning.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .files.filestamp import StampCache, file_stamp
from .hermes import paths

PLUGIN_KEY = paths.PLUGIN_KEY
FILE_NAME = "config.yaml"

DEFAULTS: dict[str, Any] = {
    "semantic": True,            # semantic (and so hybrid) search on or off
    "embedder": "local",         # local: the embedded offline model; openai: an OpenAI-compatible endpoint
    "openai": {
        "base_url": "https://api.openai.com/v1",
        "model": "text-embedding-3-small",
        "dimensions": None,      # ask the endpoint for this many dimensions (if it supports it)
        "api_key_env": "OPENAI_API_KEY",  # the variable in $HERMES_HOME/.env (or the environment)
        "timeout": 10.0,         # seconds per request (background indexing)
        "query_timeout": 4.0,    # seconds a search waits for its query's vector, retries included
        "max_retries": 3,        # on 429, 5xx and network errors, with backoff
    },
    "batch_size": 32,            # texts per embedding call
    "chunk_chars": 800,          # long messages are split into chunks of about this size
    "chunk_overlap": 100,        # characters shared by neighbouring chunks
    "fusion": "blend",           # blend: keyword score + weight x cosine; rrf: Reciprocal Rank Fusion
    "blend_weight": 0.7,         # the cosine's weight in blend fusion (keyword scores are shares of the query)
    "rrf_k": 3,                  # Reciprocal Rank Fusion constant (small: trust the top ranks; LoCoMo-tuned)
    "semantic_weight": 0.5,      # in rrf fusion, the semantic list's vote, the keyword list's being 1
    "context": 2,                # messages shown around each hit by default
    "index_budget_ms": 1500,     # indexing a search may wait for; the rest continues in the background
    "keyword_index": True,       # keep the plugin's own keyword index (keywords.db); false: Hermes's indexes only
}

_CHOICES = {"embedder": ("local", "openai"), "fusion": ("blend", "rrf")}
_RANGES = {
    "batch_size": (1, 2048),
    "chunk_chars": (100, 20000),
    "chunk_overlap": (0, 5000),
    "rrf_k": (1, 10000),
    "semantic_weight": (0.0, 10.0),
    "blend_weight": (0.0, 10.0),
    "context": (0, 10),
    "index_budget_ms": (0, 60000),
    "openai.timeout": (0.5, 300),
    "openai.query_timeout": (0.5, 60),
    "openai.max_retries": (0, 10),
    "openai.dimensions": (1, 16384),
}


# Keys whose bad values are not repeated in warnings: a key pasted where its
# variable's name belongs must not end up in a log or on screen.
_SECRET_PRONE = {"openai.api_key_env"}
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
DEFAULTS_SOURCE = "defaults"
CONSENTS_KEY = "consents"


@dataclass
class Settings:
    values: dict[str, Any]
    warnings: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    origins: dict[str, str] = field(default_factory=dict)  # dotted key -> the source its value came from
    home: Path | None = None  # the Hermes home these settings are for (its .env holds the key)

    def __getitem__(self, key: str) -> Any:
        node: Any = self.values
        for part in key.split("."):
            node = node[part]
        return node

    def get(self, key: str, default: Any = None) -> Any:
        try:
            return self[key]
        except (KeyError, TypeError):
            return default


def plugin_config_path(home: Path) -> Path:
    return paths.data_dir(home) / FILE_NAME


def _read_yaml(path: Path, warnings: list[str]) -> dict:
    if not path.is_file():
        return {}
    try:
        import yaml

        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except Exception as exc:  # malformed YAML, unreadable file
        warnings.append(f"{path}: could not be read ({type(exc).__name__}); its settings were ignored")
        return {}
    if not isinstance(data, dict):
        warnings.append(f"{path}: expected a mapping at the top level; ignored")
        return {}
    return data


def _hermes_sections(home: Path, warnings: list[str]) -> list[tuple[str, dict]]:
    path = home / "config.yaml"
    data = _read_yaml(path, warnings)
    plugins = data.get("plugins") if isinstance(data.get("plugins"), dict) else {}
    out = []
    section = plugins.get(PLUGIN_KEY)
    if section is not None:
        out.append((f"{path} plugins.{PLUGIN_KEY}", section))
    entries = plugins.get("entries") if isinstance(plugins.get("entries"), dict) else {}
    entry = entries.get(PLUGIN_KEY) if isinstance(entries.get(PLUGIN_KEY), dict) else {}
    if entry.get("settings") is not None:
        out.append((f"{path} plugins.entries.{PLUGIN_KEY}.settings", entry["settings"]))
    return out


def normalise_base_url(value: Any) -> str | None:
    """``scheme://host[:port]/path`` with the scheme and host lower-cased and no
    trailing slash, or None when it is not an http(s) base address. Credentials,
    queries and fragments are refused: they would be shown wherever the service
    is named (consent requests, status), and the key belongs in .env."""
    from urllib.parse import urlsplit

    if not isinstance(value, str):
        return None
    try:
        parts = urlsplit(value.strip())
        port = parts.port  # raises ValueError for a bad port
    except ValueError:
        return None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname or parts.username is not None \
            or parts.password is not None or parts.query or parts.fragment or "@" in parts.netloc:
        return None
    host = parts.hostname.lower()
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{host}:{port}" if port is not None else host
    return f"{parts.scheme.lower()}://{netloc}{parts.path.rstrip('/')}"


def _check(key: str, value: Any, default: Any) -> tuple[bool, Any]:
    """(valid, normalised value) for one leaf."""
    if key == "openai.base_url":
        url = normalise_base_url(value)
        return url is not None, url
    if key == "openai.api_key_env":
        ok = isinstance(value, str) and bool(_ENV_NAME.match(value.strip()))
        return ok, value.strip() if ok else value
    if key in _CHOICES:
        ok = isinstance(value, str) and value.strip().lower() in _CHOICES[key]
        return ok, value.strip().lower() if ok else value
    if isinstance(default, bool):
        if isinstance(value, bool):
            return True, value
        if isinstance(value, str) and value.strip().lower() in ("true", "false", "on", "off", "yes", "no"):
            return True, value.strip().lower() in ("true", "on", "yes")
        return False, value
    if key in _RANGES:
        low, high = _RANGES[key]
        if value is None and default is None:
            return True, None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return False, value
        if not low <= value <= high:
            return False, value
        return True, type(default)(value) if isinstance(default, (int, float)) else value
    if isinstance(default, str) or default is None:
        return isinstance(value, str) and bool(value.strip()), value.strip() if isinstance(value, str) else value
    return isinstance(value, type(default)), value


def _invalid(source: str, dotted: str, value: Any, default: Any) -> str:
    if dotted in _SECRET_PRONE:
        return (f"{source}: '{dotted}' must be the name of a variable in $HERMES_HOME/.env (like OPENAI_API_KEY), "
                f"not the key itself (the value is not shown); using {default!r}")
    if dotted == "openai.base_url":
        return (f"{source}: '{dotted}' must be an http(s) address like https://api.openai.com/v1 without "
                f"credentials or a query (the value is not shown); using {default!r}")
    return f"{source}: '{dotted}' = {value!r:.80} is not valid; using {default!r}"


def _merge(target: dict, defaults: dict, overlay: dict, source: str, warnings: list[str], prefix: str = "",
           origins: dict[str, str] | None = None) -> None:
    if not isinstance(overlay, dict):
        warnings.append(f"{source}: {'section ' + repr(prefix.rstrip('.')) if prefix else 'settings'}: "
                        "expected a mapping; ignored")
        return
    for key, value in overlay.items():
        dotted = f"{prefix}{key}"
        if key not in defaults:
            warnings.append(f"{source}: unknown setting '{dotted:.80}' ignored")
            continue
        if isinstance(defaults[key], dict):
            _merge(target[key], defaults[key], value, source, warnings, f"{dotted}.", origins)
            continue
        ok, normalised = _check(dotted, value, defaults[key])
        if ok:
            target[key] = normalised
            if origins is not None:
                origins[dotted] = source
        else:
            warnings.append(_invalid(source, dotted, value, defaults[key]))


def _leaves(values: dict, prefix: str = "") -> list[str]:
    out = []
    for key, value in values.items():
        out += _leaves(value, f"{prefix}{key}.") if isinstance(value, dict) else [f"{prefix}{key}"]
    return out


_loaded = StampCache()


def load(home: Path) -> Settings:
    """The effective settings for ``home``: a copy the caller may change.

    Parsed again only when one of the two files changes (a tool call reads
    the settings more than once, and Hermes's config.yaml can be long)."""
    stamp = (file_stamp(plugin_config_path(home)), file_stamp(home / "config.yaml"))
    return copy.deepcopy(_loaded.get(str(home), stamp, lambda: _load(home)))


def _load(home: Path) -> Settings:
    warnings: list[str] = []
    values = copy.deepcopy(DEFAULTS)
    origins = {key: DEFAULTS_SOURCE for key in _leaves(DEFAULTS)}
    sources = [DEFAULTS_SOURCE]
    own = str(plugin_config_path(home))
    layers = [(own, _read_yaml(plugin_config_path(home), warnings))]
    layers += _hermes_sections(home, warnings)
    for source, overlay in layers:
        if overlay:
            if isinstance(overlay, dict) and CONSENTS_KEY in overlay:
                # Consents are the plugin's own records, not settings (consent.py reads them).
                if source != own:
                    warnings.append(f"{source}: '{CONSENTS_KEY}' is only read from {own}; ignored here")
                overlay = {k: v for k, v in overlay.items() if k != CONSENTS_KEY}
            _merge(values, DEFAULTS, overlay, source, warnings, origins=origins)
            sources.append(source)
    if values["chunk_overlap"] >= values["chunk_chars"]:
        warnings.append(f"'chunk_overlap' must be smaller than 'chunk_chars'; using {DEFAULTS['chunk_overlap']}")
        values["chunk_overlap"] = min(DEFAULTS["chunk_overlap"], values["chunk_chars"] // 2)
        origins["chunk_overlap"] = DEFAULTS_SOURCE
    return Settings(values, warnings, sources, origins, home)
