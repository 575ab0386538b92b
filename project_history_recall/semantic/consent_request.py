"""A request for consent, as data: what semantic search in a project would send, to where,
and (for the agent) the token that records the user's yes (``consent_tokens``). The words
the agent or a person is told are put on at the edge (``ui/consent_words.py``)."""

from __future__ import annotations

import shlex
from pathlib import Path

from ..hermes import messages
from .consent_tokens import token_for


def describe(conn, embedder, project: dict, members: list[str], chunk_chars: int) -> dict:
    """What semantic search in ``project`` would send to ``embedder``: what indexing reads, every
    user and assistant message of ``members``, in pieces of about ``chunk_chars``."""
    return {
        "required": True,
        "service": embedder.provider,
        "model": embedder.model,
        "project": project,
        "would_send": {**messages.conversation_size(conn, members), "piece_chars": chunk_chars},
        "nothing_sent_yet": True,
    }


def request(home: Path, conn, embedder, project: dict, members: list[str], chunk_chars: int,
            conversation: tuple[str, ...]) -> dict:
    """``describe`` plus the token for ``conversation``, for the agent's tool response only. A
    call that names no conversation (no session id from the host) gets no token, nor one made where
    the key tokens are signed with cannot be read or kept (``no_token`` says why)."""
    out = describe(conn, embedder, project, members, chunk_chars)
    if conversation:
        try:
            out["token"] = token_for(home, embedder.provider, embedder.model, (project["kind"], project["id"]),
                                     conversation[0])
        except OSError as exc:  # consent.secret a FIFO or a folder, or a data folder that cannot be written
            out["no_token"] = f"The key consent tokens are signed with ({exc.filename}) cannot be used: {exc.strerror}"
    return out


def grant_command(command: str, project_id: object) -> str:
    """The command line with which a person agrees for one project."""
    return f"{command} consent grant --project {shlex.quote(str(project_id))}"
