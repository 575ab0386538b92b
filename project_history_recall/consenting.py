"""Consent, as the agent and a person give it: the agent passes back the token of a
``consent_required`` response (``accept``, from a search), a person runs ``consent grant``
(``grant_for_person``) or lists what is on record (``listing``). The records and the gate
are ``semantic.consent``; the token, ``semantic.consent_tokens``."""

from __future__ import annotations

from pathlib import Path

from . import settings as config
from .errors import DONE, NOTHING, PluginError, UsageError
from .files import configfile
from .hermes import paths
from .hermes.statedb import reading
from .scope.resolve import resolve_scope
from .semantic import consent, consent_request, consent_tokens, embedders


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
    status = consent_tokens.token_status(home, token, service, model, (project["kind"], project["id"]), conversation)
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
            f"That consent token has expired: a token counts for {consent_tokens.TOKEN_LIFETIME // 60} minutes "
            "after the response that gave it. Nothing was recorded or sent. Ask the user again: tell them what "
            "ask_user says and, only if they agree now, call again with this response's token.")}
    try:
        added = consent.grant(home, service, model, project, granted_by)
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


def listing(home: Path) -> dict:
    """The consents on record, as a response."""
    found, warnings = consent.records(home)
    return {"success": True, "outcome": DONE, "consents": found, "withdrawn": consent.withdrawn(home),
            "warnings": warnings, "file": str(config.plugin_config_path(home)),
            "note": "There is no revoke command: delete an entry from the file to withdraw it "
                    "(nothing already sent is deleted by the service)."}


def grant_for_person(home: Path, caller, project_ref: str | None, confirm=None,
                     granted_by: str = "a person, with the consent grant command") -> dict:
    """Record that a person agrees to send the caller's project (or ``project_ref``) to the
    configured remote embedder; the response (``recorded`` false when there was nothing to do).

    ``confirm(described)`` is asked first, with what would be sent (``describe``);
    None: the person already agreed (``--yes``). It returns whether they agree,
    or raises a ``PluginError`` to refuse (no terminal to ask on, say)."""
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
            described = consent_request.describe(conn, embedder, scope.attribution.as_json(), scope.members,
                                                 settings.chunk_chars)
        project, service, model = described["project"], embedder.provider, embedder.model
        if consent.on_record(home, service, model, scope.attribution.key):
            return {"success": True, "outcome": NOTHING, "recorded": False, "consent": described, "message": (
                f"Consent for project '{project['name']}' to {service} (model {model}) is already on record.")}
        if confirm is not None and not confirm(described):
            return {"success": True, "outcome": NOTHING, "recorded": False, "consent": described,
                    "message": "Nothing recorded."}
        try:
            consent.grant(home, service, model, project, granted_by)
        except configfile.ConfigWriteError as exc:
            raise configfile.ConfigWriteError(
                f"consent not recorded: {config.plugin_config_path(home)}: {exc}") from None
    except PluginError as exc:
        return exc.envelope()
    return {"success": True, "outcome": DONE, "recorded": True, "consent": described, "message": (
        f"Consent recorded: project '{project['name']}' may be sent to {service} (model {model}).")}
