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
is named by the ``.env`` variable that holds it.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import paths

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
        "timeout": 10.0,         # seconds per request
        "max_retries": 3,        # on 429 and 5xx, with backoff
    },
    "batch_size": 32,            # texts per embedding call
    "chunk_chars": 800,          # long messages are split into chunks of about this size
    "chunk_overlap": 100,        # characters shared by neighbouring chunks
    "fusion": "blend",           # blend: keyword score + weight x cosine; rrf: Reciprocal Rank Fusion
    "blend_weight": 0.7,         # the cosine's weight in blend fusion (keyword scores are scaled to 0..1)
    "rrf_k": 3,                  # Reciprocal Rank Fusion constant (small: trust the top ranks; LoCoMo-tuned)
    "semantic_weight": 0.5,      # in rrf fusion, the semantic list's vote, the keyword list's being 1
    "context": 2,                # messages shown around each hit by default
    "index_budget_ms": 1500,     # indexing a search may wait for; the rest continues in the background
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
    "openai.max_retries": (0, 10),
    "openai.dimensions": (1, 16384),
}


@dataclass
class Settings:
    values: dict[str, Any]
    warnings: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)

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


def _check(key: str, value: Any, default: Any) -> tuple[bool, Any]:
    """(valid, normalised value) for one leaf."""
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


def _merge(target: dict, defaults: dict, overlay: dict, source: str, warnings: list[str], prefix: str = "") -> None:
    if not isinstance(overlay, dict):
        warnings.append(f"{source}: expected a mapping; ignored")
        return
    for key, value in overlay.items():
        dotted = f"{prefix}{key}"
        if key not in defaults:
            warnings.append(f"{source}: unknown setting '{dotted}' ignored")
            continue
        if isinstance(defaults[key], dict):
            _merge(target[key], defaults[key], value, source, warnings, f"{dotted}.")
            continue
        ok, normalised = _check(dotted, value, defaults[key])
        if ok:
            target[key] = normalised
        else:
            warnings.append(f"{source}: '{dotted}' = {value!r} is not valid; using {defaults[key]!r}")


def load(home: Path) -> Settings:
    warnings: list[str] = []
    values = copy.deepcopy(DEFAULTS)
    sources = ["defaults"]
    layers = [(str(plugin_config_path(home)), _read_yaml(plugin_config_path(home), warnings))]
    layers += _hermes_sections(home, warnings)
    for source, overlay in layers:
        if overlay:
            # Settings the plugin itself keeps beside the user's (consents) are not settings.
            overlay = {k: v for k, v in overlay.items() if k != "consents"} if isinstance(overlay, dict) else overlay
            _merge(values, DEFAULTS, overlay, source, warnings)
            sources.append(source)
    if values["chunk_overlap"] >= values["chunk_chars"]:
        warnings.append(f"'chunk_overlap' must be smaller than 'chunk_chars'; using {DEFAULTS['chunk_overlap']}")
        values["chunk_overlap"] = min(DEFAULTS["chunk_overlap"], values["chunk_chars"] // 2)
    return Settings(values, warnings, sources)
