"""The one gate every embedding call for a scope passes first, and the consents it checks.

Local embedders never send text anywhere, so they need no consent. A remote
embedder (``remote = True``, or anything that does not say) may only embed a
project's text after the user agreed for that exact (provider, model,
project); the semantic path calls ``check`` before ANY embedding call for a
scope, whether indexing, learning a model's dimension or embedding a query.

Consents are records in the plugin's own config.yaml, top-level
``consents:`` (edited in place, atomically, keeping the user's settings and
comments: ``configfile``)::

    consents:
    - service: https://api.openai.com/v1
      model: text-embedding-3-small
      project: {kind: explicit, id: p_abc, name: Hermes}
      home: /home/me/.hermes
      granted_at: '2026-09-01 14:30 UTC'
      granted_by: the user, in conversation 20260901_143022_a1b2

A record counts only in the Hermes home it names: a profile cloned with its
files carries the file along, and nobody agreed there. How a record is made:
the agent passes back a token (``consent_tokens``), or a person runs
``consent grant`` (``consenting``).

Deliberately not built: a revocation protocol. Deleting a record
from config.yaml by hand takes effect on the next embedding call (the gate
re-reads the file when it changes), but nothing is deleted remotely. A record
a person marked withdrawn instead (``revoked: true``, the obvious edit; no
release writes such a key) does not count either: read as a consent, it kept
sending what its author meant to stop. It stays in the file as they wrote it.
"""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from pathlib import Path

from .. import settings as config
from ..errors import ConsentError
from ..files import configfile, yamltext
from ..files.filestamp import StampCache, file_stamp, read_regular

KEY = config.CONSENTS_KEY
# Keys no release writes, by which a person marks a record withdrawn.
WITHDRAWN_KEYS = ("revoked", "revoked_at", "withdrawn", "withdrawn_at")

_records = StampCache()


class ConsentRequired(ConsentError):
    """Semantic search for this scope needs the user's consent first."""


def scope_of(service: str, model: str, project_key: tuple) -> tuple[str, str, str, str]:
    """What a consent is for, as records and tokens compare it."""
    kind, pid = project_key
    return (service.rstrip("/"), model, str(kind), str(pid))


def _home_id(home: Path) -> str:
    """The Hermes home (profile) a consent is given in. A profile cloned with all its files
    (``hermes profile create --clone-all``) copies the record, not the user's agreement: the
    new profile's messages were never part of what they agreed to send."""
    return os.path.realpath(home)


def _record_scope(record: object) -> tuple[str, str, str, str] | None:
    if not isinstance(record, dict):
        return None
    project = record.get("project")
    if not (isinstance(record.get("service"), str) and isinstance(record.get("model"), str)
            and isinstance(project, dict) and isinstance(project.get("kind"), str) and project.get("id")):
        return None
    return scope_of(record["service"], record["model"], (project["kind"], project["id"]))


def _given_in(record: dict, home: Path) -> bool:
    return record.get("home") == _home_id(home)


def withdrawn_by(record: dict) -> str | None:
    """The key by which a person marked ``record`` withdrawn, if they did. Any value but
    null or false withdraws it (``revoked: "yes"``, a date): a consent in doubt is not one."""
    return next((key for key in WITHDRAWN_KEYS if record.get(key) is not None and record[key] is not False), None)


def records(home: Path) -> tuple[list[dict], list[str]]:
    """(the consent records given in this home, warnings about the others, the malformed ones
    and those marked withdrawn) from the plugin's config.yaml.

    Read again only when the file changed: the gate runs before every batch."""
    return _read(home)[:2]


def withdrawn(home: Path) -> list[dict]:
    """The records of this home a person marked withdrawn (``withdrawn_by``): none of them counts."""
    return _read(home)[2]


def _read(home: Path) -> tuple[list[dict], list[str], list[dict]]:
    path = config.plugin_config_path(home)
    stamp = file_stamp(path)
    if stamp is None:
        return [], [], []
    return _records.get(str(path), stamp, lambda: _read_records(path, home))


def _read_records(path: Path, home: Path) -> tuple[list[dict], list[str], list[dict]]:
    import yaml

    warnings: list[str] = []
    marked: list[dict] = []
    try:
        data = yamltext.safe_load(read_regular(path).decode("utf-8")) or {}
        raw = data.get(KEY) if isinstance(data, dict) else None
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raw, warnings = None, [f"{path}: could not be read ({yamltext.reason(exc)}); no consent is on record"]
    valid = []
    if raw is not None and not isinstance(raw, list):
        warnings.append(f"{path}: '{KEY}' must be a list of records; ignored")
        raw = []
    for n, record in enumerate(raw or []):
        if _record_scope(record) is None:
            warnings.append(f"{path}: '{KEY}' entry {n + 1} lacks service, model or project.kind/id; ignored")
        elif not _given_in(record, home):
            given = record.get("home")
            warnings.append(f"{path}: '{KEY}' entry {n + 1} was given in "
                            + (f"another Hermes home ({given})" if isinstance(given, str) else
                               "another Hermes home, or before consents named theirs")
                            + f", not in {_home_id(home)}; it does not count here (agree again here to send "
                            "this profile's messages)")
        elif (key := withdrawn_by(record)) is not None:
            marked.append(record)
            warnings.append(f"{path}: '{KEY}' entry {n + 1} says {key}: {json.dumps(record[key], default=str)}, so it does not count: "
                            f"nothing of its project is sent on it (delete the entry to withdraw a consent; "
                            "no release reads that key)")
        else:
            valid.append(record)
    return valid, warnings, marked


def on_record(home: Path, service: str, model: str, project_key: tuple) -> bool:
    wanted = scope_of(service, model, project_key)
    return any(_record_scope(r) == wanted for r in records(home)[0])


def check(home: Path, embedder, project_key: tuple) -> None:
    """Return when ``embedder`` may embed text of ``project_key``; raise ConsentRequired otherwise."""
    if getattr(embedder, "remote", True) is False:
        return
    service, model = str(getattr(embedder, "provider", "?")), str(getattr(embedder, "model", "?"))
    if not on_record(home, service, model, project_key):
        raise ConsentRequired(
            f"semantic search here would send this project's messages to {service} (model {model}), and the "
            "user has not agreed to that for this project; nothing was sent")


def grant(home: Path, service: str, model: str, project: dict, granted_by: str) -> bool:
    """Record consent for (service, model, project); False if it was already on record.

    Raises ``configfile.ConfigWriteError`` (nothing written) when the file cannot be updated safely."""
    wanted = scope_of(service, model, (project["kind"], project["id"]))
    added = []

    def change(current):
        if current is not None and not isinstance(current, list):  # what the user wrote there stays
            raise configfile.ConfigWriteError(f"its '{KEY}' is not a list of records; move what it holds "
                                              "elsewhere first")
        current = list(current or [])
        if any(_record_scope(r) == wanted and _given_in(r, home) and withdrawn_by(r) is None for r in current):
            return current
        record = {"service": wanted[0], "model": model,
                  "project": {"kind": project["kind"], "id": project["id"], "name": project.get("name")},
                  "home": _home_id(home),
                  "granted_at": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                  "granted_by": granted_by}
        added.append(record)
        return current + [record]

    configfile.update_block(config.plugin_config_path(home), KEY, change)
    return bool(added)
