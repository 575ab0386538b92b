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
files carries the file along, and nobody agreed there.

How the agent records one: a ``consent_required`` response carries a token,
an HMAC of (service, model, project kind, project id, the conversation that
was asked, the time) under a random secret kept in the plugin's data folder
(``consent.secret``, owner-only). The agent passes it back as the
``consent`` argument only after the user agreed. A model cannot grant
consent by accident: ``true``, ``"yes"`` or a made-up string are refused;
the token is unguessable without the secret, and one scope's token does not
open another (another project, model or service).

A token proves that the user was asked in one conversation, so it counts in
that conversation only (its subagents and continuations included: the
conversation is the top of the caller's parent chain), and for an hour.
Hermes keeps every tool result, token included, and core ``session_search``
shows it to any later conversation: a token read there records nothing.
A call that names no conversation (no session id from the host) gets no
token; a person agrees on the command line instead (``consent grant``).
The token appears only in the tool response that asks (the CLI and /recall
show the command a person runs instead), is masked wherever a search shows
it from the history, and is never logged.

Deliberately not built: a revocation protocol. Deleting a record
from config.yaml by hand takes effect on the next embedding call (the gate
re-reads the file when it changes), but nothing is deleted remotely.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import json
import os
import re
import secrets as _random
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

from .. import settings as config
from ..errors import DONE, NOTHING, ConsentError
from ..files import configfile
from ..files.filestamp import StampCache, file_stamp
from ..hermes import paths
from . import embedders

SECRET_FILE = "consent.secret"
TOKEN_PREFIX = "consent-"
TOKEN_LIFETIME = 3600  # seconds a token counts after the response that gave it
# A token from the near future is a clock set back a little, not a forgery.
_CLOCK_SKEW = 300
# Sizes in a token: when it was issued (seconds), its conversation's tag, the HMAC.
_ISSUED, _TAG, _MAC = 5, 5, 20
_BODY = re.compile(r"[a-z2-7]{%d}" % ((_ISSUED + _TAG + _MAC) * 8 // 5))
# What a token looks like, to mask the ones quoted in the searched history (redaction).
TOKEN = re.compile(re.escape(TOKEN_PREFIX) + r"[a-z2-7]{32,}")
KEY = config.CONSENTS_KEY
SENT_TEXT = ("the text of this project's user and assistant messages (long ones in pieces of about "
             "{chunk} characters), and the text of each search made in this project")
NOT_SENT = "tool output, system prompts, files, and the messages of other projects"

_records = StampCache()


class ConsentRequired(ConsentError):
    """Semantic search for this scope needs the user's consent first."""


# -- the records ---------------------------------------------------------------------------
def _scope(service: str, model: str, project_key: tuple) -> tuple[str, str, str, str]:
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
    return _scope(record["service"], record["model"], (project["kind"], project["id"]))


def _given_in(record: dict, home: Path) -> bool:
    return record.get("home") == _home_id(home)


def records(home: Path) -> tuple[list[dict], list[str]]:
    """(the consent records given in this home, warnings about the others and malformed ones)
    from the plugin's config.yaml.

    Read again only when the file changed: the gate runs before every batch."""
    path = config.plugin_config_path(home)
    stamp = file_stamp(path)
    if stamp is None:
        return [], []
    return _records.get(str(path), stamp, lambda: _read_records(path, home))


def _read_records(path: Path, home: Path) -> tuple[list[dict], list[str]]:
    import yaml

    warnings: list[str] = []
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        raw = data.get(KEY) if isinstance(data, dict) else None
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raw, warnings = None, [f"{path}: could not be read ({type(exc).__name__}); no consent is on record"]
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
        else:
            valid.append(record)
    return valid, warnings


def on_record(home: Path, service: str, model: str, project_key: tuple) -> bool:
    wanted = _scope(service, model, project_key)
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
    wanted = _scope(service, model, (project["kind"], project["id"]))
    added = []

    def change(current):
        current = list(current) if isinstance(current, list) else []
        if any(_record_scope(r) == wanted and _given_in(r, home) for r in current):
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


# -- tokens ----------------------------------------------------------------------------------
def _secret(home: Path) -> bytes:
    """This profile's token key, created once (owner-only file in the plugin's data folder).

    Created complete or not at all (written aside, then hard-linked into
    place), so two processes asking at once end up with the same key."""
    path = paths.data_dir(home) / SECRET_FILE
    with contextlib.suppress(FileNotFoundError):
        data = path.read_bytes()
        if len(data) >= 32:
            return data
        path.unlink()  # not a key we made: one that every later token can rely on replaces it
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".consent.", dir=path.parent)  # mode 0600
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(_random.token_bytes(32))
            fh.flush()
            os.fsync(fh.fileno())
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass  # another process won: use its key
        except OSError:  # a file system without hard links
            os.replace(tmp, path)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
    return path.read_bytes()


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
    secret = _secret(home)
    issued = int(time.time() if issued_at is None else issued_at)
    tag = _conversation_tag(secret, conversation)
    raw = issued.to_bytes(_ISSUED, "big") + tag + _token_mac(secret, _scope(service, model, project_key), tag, issued)
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
    secret = _secret(home)
    if not hmac.compare_digest(mac, _token_mac(secret, _scope(service, model, project_key), tag, issued)):
        return "rejected"
    if not any(hmac.compare_digest(tag, _conversation_tag(secret, c)) for c in conversation):
        return "other_conversation"
    now = time.time()
    if not now - TOKEN_LIFETIME <= issued <= now + _CLOCK_SKEW:
        return "expired"
    return "valid"


# -- what the agent (or a person) is told -------------------------------------------------
def scope_size(conn, members: list[str]) -> dict:
    """How much would be sent: what indexing reads (every user/assistant row of the scope)."""
    row = conn.execute(
        "SELECT count(*), count(DISTINCT session_id), coalesce(sum(length(content)), 0) FROM messages "
        "WHERE session_id IN (SELECT value FROM json_each(?)) AND role IN ('user', 'assistant')",
        (json.dumps(members),)).fetchone()
    return {"messages": int(row[0]), "sessions": int(row[1]), "characters": int(row[2])}


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def describe(conn, embedder, project: dict, members: list[str], chunk_chars: int) -> dict:
    """What semantic search in ``project`` would send to ``embedder``, for a person to decide."""
    size = scope_size(conn, members)
    name = project.get("name") or project.get("id")
    service, model = embedder.provider, embedder.model
    ask = (f"To search project '{name}' by meaning, Hermes would send {_count(size['messages'], 'user and assistant message')} "
           f"(about {_count(size['characters'], 'character')}) from {_count(size['sessions'], 'session')} of this "
           f"project, and the text of each search made in it, to the embedding service at {service} "
           f"(model {model}). Tool output, files and other projects' messages are not sent. Nothing has been "
           "sent so far. Do you agree?")
    return {
        "required": True,
        "service": service,
        "model": model,
        "project": project,
        "would_send": {"what": SENT_TEXT.format(chunk=chunk_chars), **size, "not_sent": NOT_SENT},
        "nothing_sent_yet": True,
        "ask_user": ask,
    }


def request(home: Path, conn, embedder, project: dict, members: list[str], chunk_chars: int,
            conversation: tuple[str, ...]) -> dict:
    """``describe`` plus the token for ``conversation`` and how to use it: for the agent's tool
    response only."""
    out = describe(conn, embedder, project, members, chunk_chars)
    if not conversation:
        out["how_to_record"] = (
            "This call does not say which conversation it comes from, so the user's answer cannot be "
            "recorded through this tool. Tell the user what ask_user says; if they agree, they can run: "
            + grant_command("hermes recall", project["id"]))
        return out
    out["token"] = token_for(home, embedder.provider, embedder.model, (project["kind"], project["id"]),
                             conversation[0])
    out["how_to_record"] = (
        "Tell the user what ask_user says, in your own words, and wait for their answer. Only if they clearly "
        "agree in this conversation, call project_history_search again with the same query and consent set "
        "to this token, exactly. If they decline or do not answer, do not pass it: keyword search keeps "
        "working and nothing is sent. Never pass the token on your own. It counts in this conversation only, "
        f"for {TOKEN_LIFETIME // 60} minutes.")
    return out


def grant_command(command: str, project_id: object) -> str:
    """The command line with which a person agrees for one project."""
    import shlex

    return f"{command} consent grant --project {shlex.quote(str(project_id))}"


def for_person(consent_obj: dict, command: str) -> dict:
    """The consent object without its token, telling a person the command that grants it."""
    out = {k: v for k, v in consent_obj.items() if k not in ("token", "how_to_record")}
    out["how_to_record"] = grant_command(command, (consent_obj.get("project") or {}).get("id"))
    return out


# -- the agent's answer ------------------------------------------------------------------------
def accept(home: Path, settings, project: dict, token: str, conversation: tuple[str, ...], granted_by: str) -> dict:
    """Record the consent a token from a consent_required response stands for, when the
    token was given to ``conversation`` (the caller's) within the hour.

    Returns a note for the response: ``status`` recorded | already_recorded |
    not_needed | rejected | other_conversation | expired | not_recorded, and a ``message``."""
    remote, service, model = embedders.identity(settings)
    if not remote:
        return {"status": "not_needed", "message": "The configured embedder runs on this machine; no consent "
                                                   "is needed and the token was ignored."}
    if project.get("kind") == "home":
        return {"status": "not_needed", "message": "This session is in no project, so nothing is searched or "
                                                   "sent; the token was ignored."}
    status = token_status(home, token, service, model, (project["kind"], project["id"]), conversation)
    if status == "rejected":
        return {"status": status, "message": (
            f"That is not the consent token for sending project '{project.get('name')}' to {service} "
            f"(model {model}): a token only stands for the service, model and project of the response that "
            "gave it. Nothing was recorded or sent. If the user agreed, use the token of the consent_required "
            "response for this project.")}
    if status == "other_conversation":
        return {"status": status, "message": (
            "That consent token was given in another conversation"
            + ("" if conversation else " (and this call does not say which conversation it comes from)")
            + ". A token only shows that the user was asked in the conversation that received it, so nothing "
            "was recorded or sent. If the user wants this, ask them here: tell them what ask_user says and, "
            "only if they agree in this conversation, call again with this response's token.")}
    if status == "expired":
        return {"status": status, "message": (
            f"That consent token has expired: a token counts for {TOKEN_LIFETIME // 60} minutes after the "
            "response that gave it. Nothing was recorded or sent. Ask the user again: tell them what ask_user "
            "says and, only if they agree now, call again with this response's token.")}
    try:
        added = grant(home, service, model, project, granted_by)
    except configfile.ConfigWriteError as exc:
        return {"status": "not_recorded", "message": (
            f"The user's consent could not be recorded in {config.plugin_config_path(home)}: {exc}. "
            "Nothing was sent.")}
    if not added:
        return {"status": "already_recorded", "message": "Consent for this project and service was already "
                                                         "on record."}
    return {"status": "recorded", "message": (
        f"Consent recorded: project '{project.get('name')}' may be sent to {service} (model {model}). "
        "It will not be asked again for this project, service and model.")}


def annotate(response: dict, note: dict | None) -> dict:
    """Finish a search response with the note about a token the caller passed."""
    if not note:
        return response
    asked = response.get("consent")
    if isinstance(asked, dict) and asked.get("required"):
        asked["token_result"] = note  # still (or again) required: say why the token did not do it
    else:
        response["consent"] = {"required": False, **note}
    return response


# -- a person's consents (the command line) ---------------------------------------------------
def listing(home: Path) -> dict:
    """The consents on record, as a response."""
    found, warnings = records(home)
    return {"success": True, "outcome": DONE, "consents": found, "warnings": warnings, "file": str(config.plugin_config_path(home)),
            "note": "There is no revoke command: delete an entry from the file to withdraw it "
                    "(nothing already sent is deleted by the service)."}


def grant_for_person(home: Path, caller, project_ref: str | None, confirm=None,
                     granted_by: str = "a person, with the consent grant command") -> dict:
    """Record that a person agrees to send the caller's project (or ``project_ref``) to the
    configured remote embedder; the response (``recorded`` false when there was nothing to do).

    ``confirm(described)`` is asked first, with what would be sent (``describe``);
    None: the person already agreed (``--yes``). It returns whether they agree,
    or raises a ``PluginError`` to refuse (no terminal to ask on, say)."""
    from ..errors import PluginError, UsageError
    from ..hermes.statedb import reading
    from ..scope.resolve import resolve_scope

    try:
        settings = config.load(home)
        if not embedders.identity(settings)[0]:
            return {"success": True, "outcome": NOTHING, "recorded": False,
                    "message": "The configured embedder runs on this machine: no consent is needed."}
        with reading(paths.state_db_path(home)) as (conn, _shape):
            scope = resolve_scope(home, conn, caller, project_ref=project_ref, include_current=True)
            if scope.attribution.kind == "home":
                raise UsageError("this folder is in no project, so nothing of it is ever sent; name one with "
                                 "--project")
            embedder = embedders.load(settings)
            described = describe(conn, embedder, scope.attribution.as_json(), scope.members, settings.chunk_chars)
        project, service, model = described["project"], embedder.provider, embedder.model
        if on_record(home, service, model, scope.attribution.key):
            return {"success": True, "outcome": NOTHING, "recorded": False, "consent": described, "message": (
                f"Consent for project '{project['name']}' to {service} (model {model}) is already on record.")}
        if confirm is not None and not confirm(described):
            return {"success": True, "outcome": NOTHING, "recorded": False, "consent": described, "message": "Nothing recorded."}
        try:
            grant(home, service, model, project, granted_by)
        except configfile.ConfigWriteError as exc:
            raise configfile.ConfigWriteError(
                f"consent not recorded: {config.plugin_config_path(home)}: {exc}") from None
    except PluginError as exc:
        return exc.envelope()
    return {"success": True, "outcome": DONE, "recorded": True, "consent": described, "message": (
        f"Consent recorded: project '{project['name']}' may be sent to {service} (model {model}).")}
