"""What the agent, or a person, is told when a search needs consent: what would be sent, to
where, and how to agree (the agent: a token, ``consent_tokens``; a person: a command)."""

from __future__ import annotations

import shlex
from pathlib import Path

from ..hermes import messages
from .consent_tokens import TOKEN_LIFETIME, token_for

SENT_TEXT = ("the text of this project's user and assistant messages (long ones in pieces of about "
             "{chunk} characters), and the text of each search made in this project")
NOT_SENT = "tool output, system prompts, files, and the messages of other projects"


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def describe(conn, embedder, project: dict, members: list[str], chunk_chars: int) -> dict:
    """What semantic search in ``project`` would send to ``embedder``, for a person to decide."""
    size = messages.conversation_size(conn, members)  # what indexing reads: every user/assistant row
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
    response only. A call that names no conversation (no session id from the host) gets no
    token; a person agrees on the command line instead."""
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
    return f"{command} consent grant --project {shlex.quote(str(project_id))}"


def for_person(consent_obj: dict, command: str) -> dict:
    """The consent object without its token, telling a person the command that grants it."""
    out = {k: v for k, v in consent_obj.items() if k not in ("token", "how_to_record")}
    out["how_to_record"] = grant_command(command, (consent_obj.get("project") or {}).get("id"))
    return out
