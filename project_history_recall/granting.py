"""A person agrees to send a project to the remote embedder (``consent grant``).

A use case, above the layers it combines: the scope of the caller's project
(``scope``), what would be sent from state.db, and the consent records
(``semantic.consent``). The agent's way to agree, a token, is checked in the
search itself (``consent.accept``).
"""

from __future__ import annotations

from pathlib import Path

from . import settings as config
from .errors import PluginError, UsageError
from .files import configfile
from .hermes import paths
from .hermes.statedb import reading
from .scope.resolve import resolve_scope
from .semantic import consent, embedders


def grant_for_person(home: Path, caller, project_ref: str | None, confirm=None,
                     granted_by: str = "a person, with the consent grant command") -> dict:
    """Record that a person agrees to send the caller's project (or ``project_ref``) to the
    configured remote embedder; the response (``recorded`` false when there was nothing to do).

    ``confirm(described)`` is asked first, with what would be sent (``consent.describe``);
    None: the person already agreed (``--yes``). It returns whether they agree,
    or raises a ``PluginError`` to refuse (no terminal to ask on, say)."""
    try:
        settings = config.load(home)
        if not embedders.identity(settings)[0]:
            return {"success": True, "recorded": False,
                    "message": "The configured embedder runs on this machine: no consent is needed."}
        with reading(paths.state_db_path(home)) as (conn, _shape):
            scope = resolve_scope(home, conn, caller, project_ref=project_ref, include_current=True)
            if scope.attribution.kind == "home":
                raise UsageError("this folder is in no project, so nothing of it is ever sent; name one with "
                                 "--project")
            embedder = embedders.load(settings)
            described = consent.describe(conn, embedder, scope.attribution.as_json(), scope.members,
                                         settings.chunk_chars)
        project, service, model = described["project"], embedder.provider, embedder.model
        if consent.on_record(home, service, model, scope.attribution.key):
            return {"success": True, "recorded": False, "consent": described, "message": (
                f"Consent for project '{project['name']}' to {service} (model {model}) is already on record.")}
        if confirm is not None and not confirm(described):
            return {"success": True, "recorded": False, "consent": described, "message": "Nothing recorded."}
        try:
            consent.grant(home, service, model, project, granted_by)
        except configfile.ConfigWriteError as exc:
            raise configfile.ConfigWriteError(
                f"consent not recorded: {config.plugin_config_path(home)}: {exc}") from None
    except PluginError as exc:
        return exc.envelope()
    return {"success": True, "recorded": True, "consent": described, "message": (
        f"Consent recorded: project '{project['name']}' may be sent to {service} (model {model}).")}
