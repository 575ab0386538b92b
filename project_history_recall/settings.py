"""Settings: typed, validated once, and where each value came from.

Sources, later ones winning key by key:

1. the defaults below;
2. the plugin's own ``config.yaml`` in its data folder
   (``$HERMES_HOME/project-history-recall/config.yaml``);
3. Hermes's ``config.yaml``, section ``plugins.project-history-recall``;
4. Hermes's ``config.yaml``, ``plugins.entries.project-history-recall.settings``
   (what Hermes main's ``ctx.get_config`` reads);
5. the same two sections of Hermes's managed scope (``host.managed_folder``), which an
   administrator pins: they win over the user's, as its ``timezone`` does for Hermes.

In Hermes's files a ``${NAME}`` in a value is replaced by that variable, as Hermes replaces it
(``_expand_env_vars``): from the managed ``.env``, the profile's ``.env`` or the environment, the
first that has it; one that none has stays as written.

A bad value never stops the plugin: it is reported (naming the source and
the key) and the default is used instead. Secrets never live here: an API key
is named by the ``.env`` variable that holds it, and a warning never repeats
the value of a key that might hold one by mistake (``openai.api_key_env``).

Consents to send text to a remote embedder (``consents``) are not settings:
they are read from, and written to, the plugin's own config.yaml only (see
``semantic/consent.py``); anywhere else they are ignored with a warning.

``load`` returns a frozen ``Settings``, parsed and checked once per change of
any of the files; callers read attributes (``settings.openai.model``) and derive a
changed copy with ``dataclasses.replace``. A dataclass, not pydantic: a
dozen keys whose checks (ranges, choices, a URL, an environment variable's
name) fit in the functions below, and a dependency on every import path of
Hermes's process is not worth that.
"""

from __future__ import annotations

import copy
import os
import re
from dataclasses import asdict, dataclass, field, fields
from datetime import tzinfo
from pathlib import Path
from types import MappingProxyType
from typing import Any, Mapping
from zoneinfo import ZoneInfo

from .errors import brief
from .files import envfile, yamltext
from .files.filestamp import StampCache, file_stamp
from .hermes import host, paths

PLUGIN_KEY = paths.PLUGIN_KEY
FILE_NAME = "config.yaml"
# What one search may ask for: read by the search itself, the agent tool's schema and the CLI's
# options (which register with Hermes, so these live here, not with the search's engines).
MODES = ("hybrid", "keyword", "semantic")
MAX_LIMIT = 50
MAX_CONTEXT = 10

@dataclass(frozen=True)
class OpenAISettings:
    """An OpenAI-compatible ``/embeddings`` endpoint (``embedder: openai``)."""

    base_url: str = "https://api.openai.com/v1"
    model: str = "text-embedding-3-small"
    dimensions: int | None = None  # ask the endpoint for this many dimensions (if it supports it)
    api_key_env: str = "OPENAI_API_KEY"  # the variable in $HERMES_HOME/.env (or the environment)
    timeout: float = 10.0  # seconds per request (background indexing)
    query_timeout: float = 4.0  # seconds a search waits for its query's vector, retries included
    max_retries: int = 3  # on 429, 5xx and network errors, with backoff


@dataclass(frozen=True)
class Settings:
    semantic: bool = True  # semantic (and so hybrid) search on or off
    # local: the embedded offline model (USE); e5-small: multilingual-e5-small, offline, an optional
    # extra (slower to index, better by meaning); local+e5: both at once; openai: an OpenAI-compatible
    # endpoint
    embedder: str = "local"
    openai: OpenAISettings = field(default_factory=OpenAISettings)
    batch_size: int = 32  # texts per embedding call
    chunk_chars: int = 800  # long messages are split into chunks of about this size
    chunk_overlap: int = 100  # characters shared by neighbouring chunks
    fusion: str = "blend"  # blend: keyword score + weight x cosine; rrf: Reciprocal Rank Fusion
    # The cosine's weight in blend fusion (keyword scores are shares of the query); unset: the
    # embedder's own (USE 1.0, e5-small 3.0: see fusion.py)
    blend_weight: float | None = None
    rrf_k: int = 3  # Reciprocal Rank Fusion constant (small: trust the top ranks; LoCoMo-tuned)
    semantic_weight: float = 0.5  # in rrf fusion, the semantic list's vote, the keyword list's being 1
    context: int = 2  # messages shown around each hit by default
    index_budget_ms: int = 1500  # indexing a search may wait for; the rest continues in the background
    # How much a hit in the time a question names ("last week", "in May 2023", 上周) gains, as a share of
    # its own score at most; 0: dates in a question do not shape the ranking
    time_weight: float = 0.5
    # How much a later hit gains when a question asks how something turned out ("what did we end up
    # choosing", 后来…, 最后…), as a share of its own score at most; 0: the ranking ignores such words
    order_weight: float = 0.05
    keyword_index: bool = True  # keep the plugin's own keyword index (keywords.db); false: Hermes's indexes only
    # Where they came from (not settings themselves).
    home: Path | None = field(default=None, compare=False)  # the Hermes home (its .env holds the key)
    # Hermes's own ``timezone`` (the top level of its config.yaml): the zone its user speaks in.
    hermes_timezone: str = field(default="", compare=False)
    origins: Mapping[str, str] = field(default_factory=dict, compare=False)  # dotted key -> its source
    sources: tuple[str, ...] = field(default=(), compare=False)
    warnings: tuple[str, ...] = field(default=(), compare=False)

    def values(self) -> dict[str, Any]:
        """The settings as nested plain values (what ``config`` shows)."""
        return {f.name: (asdict(getattr(self, f.name)) if f.name == "openai" else getattr(self, f.name))
                for f in fields(self) if f.name not in _META}

    def value(self, dotted: str) -> Any:
        node: Any = self
        for part in dotted.split("."):
            node = getattr(node, part)
        return node


_META = {"home", "hermes_timezone", "origins", "sources", "warnings"}
DEFAULTS: dict[str, Any] = Settings().values()

_CHOICES = {"embedder": ("local", "e5-small", "local+e5", "openai"), "fusion": ("blend", "rrf")}
# Inclusive bounds; bounds both written as integers make the setting a whole number.
_RANGES = {
    "batch_size": (1, 2048),
    "chunk_chars": (100, 20000),
    "chunk_overlap": (0, 5000),
    "rrf_k": (1, 10000),
    "semantic_weight": (0.0, 10.0),
    "blend_weight": (0.0, 10.0),
    "time_weight": (0.0, 10.0),
    "order_weight": (0.0, 10.0),
    "context": (0, MAX_CONTEXT),
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


def plugin_config_path(home: Path) -> Path:
    return paths.data_dir(home) / FILE_NAME


def _read_yaml(path: Path, warnings: list[str]) -> dict:
    # os.path: False too where the file cannot be looked for (a home whose name is too long for the
    # system), where Path.is_file raises.
    if not os.path.isfile(path):
        return {}
    try:
        data = yamltext.safe_load(path.read_text(encoding="utf-8")) or {}
    except Exception as exc:  # malformed YAML, unreadable file
        warnings.append(f"{path}: could not be read ({yamltext.reason(exc)}); its settings were ignored")
        return {}
    if not isinstance(data, dict):
        warnings.append(f"{path}: expected a mapping at the top level; ignored")
        return {}
    return data


def _dict_or_empty(value: object) -> dict:
    return value if isinstance(value, dict) else {}


def _hermes_sections(path: Path, data: dict) -> list[tuple[str, dict]]:
    plugins = _dict_or_empty(data.get("plugins"))
    out = []
    section = plugins.get(PLUGIN_KEY)
    if section is not None:
        out.append((f"{path} plugins.{PLUGIN_KEY}", section))
    entry = _dict_or_empty(_dict_or_empty(plugins.get("entries")).get(PLUGIN_KEY))
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
        # Hermes reads 1 and 0 as on and off too (its truthy strings), and a ``${NAME}`` is always text.
        word = str(value).strip().lower() if isinstance(value, (str, int)) else None
        if word in ("true", "false", "on", "off", "yes", "no", "1", "0"):
            return True, word in ("true", "on", "yes", "1")
        return False, value
    if key in _RANGES:
        low, high = _RANGES[key]
        if value is None and default is None:
            return True, None
        value = _number(value)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
            return False, value
        if isinstance(low, int) and isinstance(high, int):
            # A count: 5.5 dimensions or 7.9 texts a batch is a mistake to show, not 5 or 7 to use.
            whole = float(value).is_integer()
            return whole, int(value) if whole else value
        return True, type(default)(value) if isinstance(default, float) else value
    if isinstance(default, str) or default is None:
        return isinstance(value, str) and bool(value.strip()), value.strip() if isinstance(value, str) else value
    return isinstance(value, type(default)), value


def _number(value: Any) -> Any:
    """A number written as text (quoted in YAML, or a ``${NAME}`` Hermes's files replaced, which is
    always text) as the number, as Hermes reads its own numeric settings; anything else unchanged."""
    if not isinstance(value, str):
        return value
    try:
        return float(value.strip())
    except ValueError:
        return value


def _invalid(source: str, dotted: str, value: Any, default: Any) -> str:
    if dotted in _SECRET_PRONE:
        return (f"{source}: '{dotted}' must be the name of a variable in $HERMES_HOME/.env (like OPENAI_API_KEY), "
                f"not the key itself (the value is not shown); using {default!r}")
    if dotted == "openai.base_url":
        return (f"{source}: '{dotted}' must be an http(s) address like https://api.openai.com/v1 without "
                f"credentials or a query (the value is not shown); using {default!r}")
    # As YAML writes them (true, null), since that is where the person will type the value.
    shown = "null" if default is None else str(default).lower() if isinstance(default, bool) else repr(default)
    return f"{source}: '{dotted}' = {brief(value)} is not valid ({_allowed(dotted, default)}); using {shown}"


def _allowed(dotted: str, default: Any) -> str:
    """What the setting takes, so the person can mend it without the README."""
    if dotted in _CHOICES:
        return "one of " + ", ".join(_CHOICES[dotted])
    if isinstance(default, bool):
        return "true or false"
    if dotted in _RANGES:
        low, high = _RANGES[dotted]
        return f"{'a whole number' if isinstance(low, int) and isinstance(high, int) else 'a number'} from {low} to {high}"
    return "a text that is not blank"


def _merge(target: dict, defaults: dict, overlay: dict, source: str, warnings: list[str], prefix: str = "",
           origins: dict[str, str] | None = None) -> None:
    if not isinstance(overlay, dict):
        warnings.append(f"{source}: {'section ' + repr(prefix.rstrip('.')) if prefix else 'settings'}: "
                        "expected a mapping; ignored")
        return
    for key, value in overlay.items():
        dotted = f"{prefix}{key}"
        if key not in defaults:
            if not _key_like(key):  # said by ``_keys_written``, with where a key goes
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


# A name under which someone wrote an API key itself (``openai.api_key``, ``OPENAI_API_KEY``, ``token``).
_KEY_LIKE = re.compile(r"(?:^|[_-])(?:api[_-]?key|key|token|secret)$", re.IGNORECASE)


def _key_like(key: object) -> bool:
    return isinstance(key, str) and bool(_KEY_LIKE.search(key.strip()))


def _keys_written(overlay: object, prefix: str = "") -> list[str]:
    """Where in ``overlay`` a key seems written itself: the names no setting has that an API key goes by."""
    if not isinstance(overlay, dict):
        return []
    out = []
    for key, value in overlay.items():
        dotted = f"{prefix}{key}"
        out += _keys_written(value, f"{dotted}.") if isinstance(value, dict) else [dotted] if _key_like(key) else []
    return out


def _leaves(values: dict, prefix: str = "") -> list[str]:
    out = []
    for key, value in values.items():
        out += _leaves(value, f"{prefix}{key}.") if isinstance(value, dict) else [f"{prefix}{key}"]
    return out


_loaded = StampCache()
# The variables a ``${NAME}`` in Hermes's files named when a home's settings were last read: a change
# to one reads them again, as Hermes's own config cache does.
_named: dict[str, tuple[str, ...]] = {}
_VARIABLE = re.compile(r"\$\{([^}]+)\}")  # Hermes's own pattern: no default, no bare $NAME


def load(home: Path) -> Settings:
    """The effective settings for ``home`` (frozen: shared, never copied).

    Parsed again only when one of the files changes (a tool call reads
    the settings more than once, and Hermes's config.yaml can be long)."""
    folder = host.managed_folder()  # looked up once: both of the managed scope's files are read
    managed = host.managed_config(folder)
    environment = host.environment(home, folder)
    named = _named.get(str(home), ())
    stamp = (file_stamp(plugin_config_path(home)), file_stamp(home / "config.yaml"),
             *(file_stamp(path) if path is not None else None
               for path in (managed, environment.pinned, envfile.env_path(home) if named else None)),
             tuple(environment.get(name) for name in named))
    return _loaded.get(str(home), stamp, lambda: _load(home, managed, environment))


def _ours(key: object) -> bool:
    """A key that names this plugin, spelled otherwise (``project_history_recall``, the package's name)."""
    return isinstance(key, str) and key.strip().lower().replace("_", "-") == PLUGIN_KEY


def _misplaced(data: dict) -> list[str]:
    """Where in a Hermes config.yaml someone put the plugin's settings that no reader looks: at the top
    level, under another spelling of its name, or beside ``settings`` in its entry. Read by nothing, and
    said by nothing, they looked taken."""
    plugins = _dict_or_empty(data.get("plugins"))
    entries = _dict_or_empty(plugins.get("entries"))
    entry = _dict_or_empty(entries.get(PLUGIN_KEY))
    return ([str(k) for k in data if _ours(k)]
            + [f"plugins.{k}" for k in plugins if _ours(k) and k != PLUGIN_KEY]
            + [f"plugins.entries.{k}" for k in entries if _ours(k) and k != PLUGIN_KEY]
            + [f"plugins.entries.{PLUGIN_KEY}.{k}" for k, v in entry.items()
               if k != "settings" and (k in DEFAULTS or isinstance(v, dict) and any(n in DEFAULTS for n in v))])


def _enabled_amiss(data: dict) -> list[str]:
    """Ways of naming the plugin in ``plugins.enabled`` that Hermes does not take: a text where it reads
    only a list (so it enables nothing from it), or the plugin under another spelling. Hermes says
    nothing of either, and the agent goes without the tools while this command searches as ever."""
    enabled = _dict_or_empty(data.get("plugins")).get("enabled")
    if isinstance(enabled, str) and PLUGIN_KEY in enabled.lower().replace("_", "-"):
        return [f"'plugins.enabled' is a text, not a list: Hermes enables no plugin from it "
                f"(write enabled: [{PLUGIN_KEY}])"]
    listed = enabled if isinstance(enabled, list) else []
    near = [name for name in listed if _ours(name)]
    if near and PLUGIN_KEY not in listed:
        return [f"'plugins.enabled' names {near[0].strip()!r:.80}: Hermes knows the plugin as {PLUGIN_KEY!r} "
                "and does not load it"]
    return []


def _hermes_read(path: Path, warnings: list[str], home: Path, environment: envfile.Environment, named: set[str]
                 ) -> dict:
    """What the settings take from a Hermes config.yaml (its ``plugins`` and ``timezone``), ``${NAME}``
    replaced as Hermes replaces it."""
    data = _read_yaml(path, warnings)
    warnings += [f"{path}: '{where:.80}' is not read for settings; they go under 'plugins.{PLUGIN_KEY}' (ignored)"
                 for where in _misplaced(data)] + [f"{path}: {said}" for said in _enabled_amiss(data)]
    return {key: _expanded(data[key], home, environment, named) for key in ("plugins", "timezone") if key in data}


def _expanded(value: Any, home: Path, environment: envfile.Environment, named: set[str]) -> Any:
    """``value`` with each ``${NAME}`` in its strings replaced as Hermes replaces it; the names in ``named``."""
    if isinstance(value, dict):
        return {k: _expanded(v, home, environment, named) for k, v in value.items()}
    if isinstance(value, list):
        return [_expanded(v, home, environment, named) for v in value]
    if not isinstance(value, str):
        return value

    def variable(m: re.Match[str]) -> str:
        named.add(m[1])
        found, _ = envfile.lookup(home, m[1], environment)
        return m[0] if found is None else found

    return _VARIABLE.sub(variable, value)


def _load(home: Path, managed: Path | None, environment: envfile.Environment) -> Settings:
    warnings: list[str] = []
    values = copy.deepcopy(DEFAULTS)
    origins = {key: DEFAULTS_SOURCE for key in _leaves(DEFAULTS)}
    sources = [DEFAULTS_SOURCE]
    own = str(plugin_config_path(home))
    layers = [(own, _read_yaml(plugin_config_path(home), warnings))]
    named: set[str] = set()
    hermes = _hermes_read(home / "config.yaml", warnings, home, environment, named)
    layers += _hermes_sections(home / "config.yaml", hermes)
    # What an administrator pinned in Hermes's managed scope comes last: it wins, as in Hermes.
    pinned: dict = {}
    if managed is not None:
        pinned = _hermes_read(managed, warnings, home, environment, named)
        layers += _hermes_sections(managed, pinned)
    _named[str(home)] = tuple(sorted(named))
    for source, overlay in layers:
        if overlay:
            if isinstance(overlay, dict) and CONSENTS_KEY in overlay:
                # Consents are the plugin's own records, not settings (consent.py reads them).
                if source != own:
                    warnings.append(f"{source}: '{CONSENTS_KEY}' is only read from {own}; ignored here")
                overlay = {k: v for k, v in overlay.items() if k != CONSENTS_KEY}
            _merge(values, DEFAULTS, overlay, source, warnings, origins=origins)
            sources.append(source)
    variable = values["openai"]["api_key_env"]
    warnings += [f"{source}: '{dotted:.80}' ignored: an API key is never read from a settings file; put it in "
                 f"{envfile.env_path(home)} as {variable}=… (the variable 'openai.api_key_env' names)"
                 for source, overlay in layers for dotted in _keys_written(overlay)]
    if values["chunk_overlap"] >= values["chunk_chars"]:
        values["chunk_overlap"] = min(DEFAULTS["chunk_overlap"], values["chunk_chars"] // 2)
        warnings.append(f"'chunk_overlap' must be smaller than 'chunk_chars'; using {values['chunk_overlap']}")
        origins["chunk_overlap"] = DEFAULTS_SOURCE
    openai = OpenAISettings(**values.pop("openai"))
    zone = next((z for z in (pinned.get("timezone"), hermes.get("timezone")) if isinstance(z, str) and z.strip()), "")
    return Settings(**values, openai=openai, home=home, origins=MappingProxyType(origins), sources=tuple(sources),
                    warnings=tuple(warnings), hermes_timezone=zone.strip())


def user_zone(settings: Settings) -> tzinfo | None:
    """The zone the user gave Hermes, found as Hermes finds it (``HERMES_TIMEZONE`` where it speaks for
    this profile, else config.yaml's ``timezone``), in which they say "yesterday" or a bare date. None:
    the machine's own, as Hermes then uses too, also for a name it does not know (it logs that, and so
    keeps its own reading)."""
    name = host.timezone_variable() or settings.hermes_timezone
    if not name:
        return None
    try:
        return ZoneInfo(name)
    except (ValueError, KeyError, OSError):  # ZoneInfoNotFoundError is a KeyError
        return None


def configured_key(home: Path) -> str | None:
    """The key the configured remote embedder would use, if there is one (here, not in
    ``envfile``: which variable holds it is a setting, and the files sit below the settings)."""
    try:
        settings = load(home)
    except Exception:  # reading settings must never break output
        return None
    if settings.embedder != "openai":
        return None
    return envfile.lookup(home, settings.openai.api_key_env, host.environment(home, host.managed_folder()))[0]


def scrub_configured(home: Path, text: str) -> str:
    return envfile.scrub_key(text, configured_key(home))
