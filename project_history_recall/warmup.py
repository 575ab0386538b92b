"""A fresh process made ready for its first search while the session starts.

Every ``hermes chat -q`` is a new process. Left cold, its first search
builds the attribution map, waits for the embedding model, reads the
project's vectors and checks its keyword index, so it may answer by keyword
alone. Hermes calls ``on_session_start`` on the first turn of a new session,
before it asks the model anything; by the time the model asks for a search,
this has done that work in a daemon thread (about half a CPU-second at 100k
chunks, most of it reading back what earlier processes saved: the model's
state and the project's vectors).

The hook returns at once, never raises into Hermes, and does nothing for a
session that is in no project. On a host that never calls it, the first
search does the same work itself, as before.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

from .hermes import host, paths
from .hermes.host import Caller

logger = logging.getLogger(__name__)


def on_session_start(**kwargs) -> None:
    """Hermes's hook (``session_id``, ``model``, ``platform`` and more, by keyword)."""
    try:
        # Read here, in Hermes's thread: the profile and the session's folder
        # live in context variables a new thread does not inherit.
        home = paths.hermes_home()
        caller = host.caller_from_dispatch(kwargs)
        threading.Thread(target=_warm_quietly, args=(home, caller), name="phr-warm-up", daemon=True).start()
    except Exception:
        logger.exception("warming up for the first search failed")


def _warm_quietly(home: Path, caller: Caller) -> None:
    from .errors import PluginError

    try:
        warm(home, caller)
    except PluginError as exc:  # state.db missing or locked: the first search says so itself
        logger.warning("warming up for the first search stopped: %s", exc)
    except Exception:
        logger.exception("warming up for the first search failed")


def warm(home: Path, caller: Caller) -> None:
    """Do now what the caller's first search would (nothing for a session in no project)."""
    from . import settings as config
    from .hermes.statedb import reading
    from .scope.resolve import resolve_scope
    from .semantic import engine as semantic

    settings = config.load(home)
    with reading(paths.state_db_path(home)) as (conn, _shape):
        scope = resolve_scope(home, conn, caller)
    if scope.attribution.kind == "home":
        return
    semantic.warm(home, settings, scope)
    if settings.keyword_index:
        _check_keyword_index(home, scope)
    # The modules only a search uses, imported now rather than in the first search's time.
    from . import search  # noqa: F401


def _check_keyword_index(home: Path, scope) -> None:
    """The scope's keyword index checked (and a little brought up to date) as the first search
    would: its keeper remembers the answer while nothing changes, so that search reuses it."""
    import sqlite3

    from .files import derived
    from .hermes.statedb import reading
    from .keyword import textindex

    try:
        with reading(paths.state_db_path(home)) as (conn, _shape):
            textindex.keeper(home).ready(conn, scope.attribution.key, scope.members)
    except (derived.StoreError, sqlite3.Error, OSError) as exc:  # the first search falls back to Hermes's indexes
        logger.warning("warming up the keyword index stopped: %s", exc)
