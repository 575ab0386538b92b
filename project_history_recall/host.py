"""The thin edge that talks to a running Hermes.

Everything Hermes-specific a tool handler needs lives here, imported lazily so
the rest of the package runs (and is tested) without Hermes.
"""

from __future__ import annotations

import os

from .scope import Caller


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
    except OSError:
        return None


def caller_from_dispatch(kw: dict) -> Caller:
    """The calling session as Hermes's dispatch describes it (host doc §5).

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
