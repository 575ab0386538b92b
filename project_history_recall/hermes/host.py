"""The thin edge that talks to a running Hermes.

Everything Hermes-specific a tool handler needs lives here, imported lazily so
the rest of the package runs (and is tested) without Hermes.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from ..errors import DataError
from ..files import envfile
from . import paths


@dataclass(frozen=True)
class Caller:
    """Who is asking: the session ids the host offers (best first) and a folder."""

    session_ids: tuple[str, ...] = ()
    cwd: str | None = None
    # The command line: the folder it is given (or runs in) decides the project, and the session
    # (the one Hermes names to the commands its agent runs) only which conversation to leave out.
    by_folder: bool = False

    @classmethod
    def of(cls, *ids: str | None, cwd: str | None = None, by_folder: bool = False) -> "Caller":
        return cls(tuple(i.strip() for i in ids if isinstance(i, str) and i.strip()), cwd, by_folder)


def _session_env(name: str) -> str:
    try:
        from gateway.session_context import get_session_env
    except ImportError:
        return os.environ.get(name, "")
    return get_session_env(name, "") or ""


def _agent_cwd() -> str | None:
    try:
        from agent.runtime_cwd import resolve_agent_cwd
    except ImportError:
        return os.getcwd()
    try:
        return str(resolve_agent_cwd())
    except (OSError, RuntimeError, ValueError):
        # A folder Hermes cannot resolve is none known: TERMINAL_CWD's ``~user`` of a user this machine
        # lacks (RuntimeError from expanduser), a NUL (ValueError), a name too long or gone (OSError).
        return None


def _multiplexed() -> bool:
    """Whether Hermes serves several profiles in this process (``gateway.multiplex_profiles``). Its flag
    lives in ``agent.secret_scope``, which such a process has imported; it is not imported here, where
    it would only cost the command line its time."""
    scope = sys.modules.get("agent.secret_scope")
    return scope is not None and bool(scope.is_multiplex_active())


def command_for_another_profile(home: Path) -> str | None:
    """Why a slash command must not answer from ``home`` (None: it may). A gateway serving several
    profiles runs a plugin's command in the profile of the bot that received it, which may serve
    another profile's chat: Hermes binds the chat's profile for its own commands, not for a plugin's
    (nor does its desktop backend, which serves several profiles once a machine has two). The chat's
    profile is the one its session key names (``agent:<profile>:…``, ``agent:main:…`` for the
    default), else the session's profile (the desktop's sessions); Hermes 0.19.0 gives a plugin's
    command no session."""
    if not _multiplexed():
        return None
    parts = _session_env("HERMES_SESSION_KEY").split(":")
    named = parts[1] if len(parts) > 2 and parts[0] == "agent" else ""
    chat = {"main": "default", "main~": "main"}.get(named, named) or _session_env("HERMES_SESSION_PROFILE").strip()
    mine = paths.profile_name(home)
    if chat == mine:
        return None
    whose = f"this chat belongs to profile '{chat}'" if chat else "Hermes does not say which profile this chat belongs to"
    return (f"this gateway serves several profiles; {whose}, and Hermes runs /recall in profile '{mine}': "
            "nothing was searched or changed. Ask in the conversation instead: the agent searches this chat's "
            "own profile.")


def timezone_variable() -> str:
    """``HERMES_TIMEZONE`` when it speaks for the profile served. A gateway serving several profiles
    (``gateway.multiplex_profiles``) puts its launching profile's ``timezone`` there for the whole
    process; Hermes 0.22 then reads each routed profile's own config.yaml, and so does the plugin on
    both lines (0.19.0 read the variable for every profile)."""
    return "" if _multiplexed() else os.environ.get("HERMES_TIMEZONE", "").strip()


def managed_folder() -> Path | None:
    """The folder of Hermes's managed scope, where an administrator pins what wins over the user's own
    files. Found as ``hermes_cli.managed_scope.get_managed_dir`` finds it (``HERMES_MANAGED_DIR`` when
    set and a folder, else ``/etc/hermes`` when there), not by importing it: importing ``hermes_cli``
    re-wraps the process's stdout as UTF-8, past the standalone command line's own handling of a
    terminal that cannot show every character. None when there is none."""
    override = os.environ.get("HERMES_MANAGED_DIR", "").strip()
    folder = Path(override) if override else Path("/etc/hermes")
    # os.path: False, where Path.is_dir raises, for a name past the system's limits or holding a NUL.
    return folder if os.path.isdir(folder) else None


def managed_config(managed: Path | None) -> Path | None:
    """The config.yaml of the managed scope ``managed`` (``managed_folder``): what an administrator pins
    there wins over the user's config.yaml, leaf by leaf."""
    return managed / "config.yaml" if managed is not None else None


def environment(home: Path, managed: Path | None) -> envfile.Environment:
    """The environment as Hermes hands it to the profile of ``home``, under the managed scope
    ``managed`` (``managed_folder``), whose ``.env`` Hermes loads last over the profile's ``.env`` and
    the environment, so a key an administrator pins there is the one used. A gateway serving several
    profiles holds its launching profile's ``.env`` in the environment, so for another profile
    Hermes reads a variable only from that profile's scope, nothing where none is bound
    (``get_secret``), and its ``.env`` without the environment. The launching profile's own home
    reads the environment, which is its own (the plugin's background threads bind no scope)."""
    pinned = managed / ".env" if managed is not None else None
    if not _multiplexed() or _same_folder(home, _launch_home()):
        return envfile.Environment(pinned=pinned)
    return envfile.Environment(get=_served_secret, expands=False, pinned=pinned)


def _launch_home() -> Path | None:
    """The home the process was launched for, as Hermes decides whether a task serves another
    profile (None where Hermes is not loaded)."""
    constants = sys.modules.get("hermes_constants")
    find = getattr(constants, "get_routing_process_hermes_home", None) or getattr(constants, "get_process_hermes_home",
                                                                                   None)
    return Path(find()) if callable(find) else None


def _same_folder(one: Path, other: Path | None) -> bool:
    try:
        return other is not None and os.path.realpath(one) == os.path.realpath(other)
    except (OSError, ValueError):  # a name past the system's limits
        return False


def _served_secret(name: str) -> str | None:
    from agent.secret_scope import UnscopedSecretError, get_secret

    try:
        return get_secret(name)
    except UnscopedSecretError:
        return None


def caller_from_dispatch(kw: dict) -> Caller:
    """The calling session as Hermes's dispatch describes it.

    ``session_id`` is the agent's session (in a subagent: the child);
    ``task_id`` is the durable id in the TUI; the session env is the CLI's
    fallback (it is "" inside the TUI). Any may be missing: a direct
    ``registry.dispatch`` or the MCP bridge passes no ids at all.
    """
    return Caller.of(
        kw.get("session_id") if isinstance(kw.get("session_id"), str) else None,
        kw.get("task_id") if isinstance(kw.get("task_id"), str) else None,
        _session_env("HERMES_SESSION_ID"),
        _session_env("HERMES_SESSION_KEY"),
        cwd=_agent_cwd(),
    )


def tool_result_limit() -> int:
    """Hermes's limit for one tool result, in characters: a longer result reaches the model as a
    1,500-character preview of its JSON, cut mid-way, the rest saved to a file."""
    try:
        from tools.budget_config import DEFAULT_RESULT_SIZE_CHARS
    except ImportError:  # a Hermes without it: the limit it has had since the budget came in
        return 100_000
    return int(DEFAULT_RESULT_SIZE_CHARS)


# --- Moving a session: Hermes's own write paths ------------------------


class HermesMissing(DataError):
    """hermes-agent is not importable, so there is no Hermes write path to use."""

    codes = ("no_hermes",)


def _session_db_class():
    try:
        from hermes_state import SessionDB
    except ImportError as exc:
        raise HermesMissing(
            "Moving a session needs Hermes itself (hermes-agent): the working folder is written "
            "by Hermes's own SessionDB, never by this plugin."
        ) from exc
    return SessionDB


def can_clear_git_meta() -> bool:
    """True on Hermes releases whose ``update_session_cwd`` can reset git fields.

    Hermes main added ``replace_git_meta``; 0.19.0 writes only the non-empty
    values it is given, so it cannot clear a stale ``git_repo_root``.
    """
    import inspect

    try:
        method = _session_db_class().update_session_cwd
        return "replace_git_meta" in inspect.signature(method).parameters
    except (HermesMissing, TypeError, ValueError):
        return False


def write_session_cwd(home: Path, session_id: str, cwd: str, git_branch: str | None,
                      git_repo_root: str | None, replace_git_meta: bool) -> None:
    """Persist a session's working folder with Hermes's own ``SessionDB.update_session_cwd``.

    Raises whatever Hermes raises; the caller undoes its own record then.
    """
    db = _session_db_class()(db_path=paths.state_db_path(home))
    try:
        if replace_git_meta:
            db.update_session_cwd(session_id, cwd, git_branch, git_repo_root, replace_git_meta=True)
        else:
            db.update_session_cwd(session_id, cwd, git_branch, git_repo_root)
    finally:
        db.close()


def workspace_callback():
    """The GUI gateway's workspace hook, or None outside the TUI/desktop process.

    ``tools.project_tools`` is only consulted when already imported: if it was
    never loaded, nothing can have set the hook, and importing it would drag
    Hermes's tool registry into a plain CLI run.
    """
    module = sys.modules.get("tools.project_tools")
    callback = getattr(module, "_workspace_callback", None) if module is not None else None
    return callback if callable(callback) else None


def call_workspace_callback(callback, session_id: str, folder: str, project_name: str, project_id: str | None):
    """Call the workspace hook with the arguments this Hermes expects.

    0.19.0 takes ``(task_id, path, name)``; newer releases also take the
    project id (which attaches the session to that project) and may return
    whether they found the live session. ``project_id`` is None for an
    automatic project: no project id is passed then (None where one is required).
    """
    import inspect

    try:
        params: Iterable[inspect.Parameter] = list(inspect.signature(callback).parameters.values())
    except (TypeError, ValueError):
        params = ()
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    takes_id = len(positional) >= 4 or any(p.kind is p.VAR_POSITIONAL for p in params)
    if project_id is None:
        required = [p for p in positional if p.default is p.empty]
        takes_id = len(required) >= 4
    if takes_id:
        return callback(session_id, folder, project_name, project_id)
    return callback(session_id, folder, project_name)
