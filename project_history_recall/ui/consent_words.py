"""What the agent, or a person, is told when a search needs consent: what would be sent, to
where, and how to agree (the agent: pass back the token; a person: run a command).

The engine refuses with data only (``semantic.consent_request``); the words are put on here,
at the edge that knows who reads them.
"""

from __future__ import annotations

from ..errors import counted
from ..semantic.consent_request import grant_command
from ..semantic.consent_tokens import TOKEN_LIFETIME

SENT_TEXT = ("the text of this project's user and assistant messages (long ones in pieces of about "
             "{chunk} characters), and the text of each search made in this project")
NOT_SENT = "tool output, system prompts, files, and the messages of other projects"


def described(asked: dict) -> dict:
    """``asked`` in words, for a person to decide: what would be sent and the question to ask."""
    size = {k: v for k, v in asked["would_send"].items() if k != "piece_chars"}
    project = asked["project"]
    name = project.get("name") or project.get("id")
    ask = (f"To search project '{name}' by meaning, Hermes would send {counted(size['messages'], 'user and assistant message')} "
           f"(about {counted(size['characters'], 'character')}) from {counted(size['sessions'], 'session')} of this "
           f"project, and the text of each search made in it, to the embedding service at {asked['service']} "
           f"(model {asked['model']}). Tool output, files and other projects' messages are not sent. Nothing has been "
           "sent so far. Do you agree?")
    return {**asked,
            "would_send": {"what": SENT_TEXT.format(chunk=asked["would_send"]["piece_chars"]), **size,
                           "not_sent": NOT_SENT},
            "ask_user": ask}


def for_agent(asked: dict) -> dict:
    """``asked`` in words for the agent's tool response: how to record the user's answer with
    its token. A call that named no conversation got no token; a person agrees on the command
    line instead."""
    out = described(asked)
    if "token" not in asked:
        why = asked.get("no_token", "This call does not say which conversation it comes from")
        out["how_to_record"] = (
            f"{why}, so the user's answer cannot be recorded through this tool. Tell the user what ask_user says; if they agree, they can run: "
            + grant_command("hermes recall", asked["project"]["id"]))
        return out
    out["how_to_record"] = (
        "Tell the user what ask_user says, in your own words, and wait for their answer. Only if they clearly "
        "agree in this conversation, call project_history_search again with the same query and consent set "
        "to this token, exactly. If they decline or do not answer, do not pass it: keyword search keeps "
        "working and nothing is sent. Never pass the token on your own. It counts in this conversation only, "
        f"for {TOKEN_LIFETIME // 60} minutes.")
    return out


def for_person(asked: dict, command: str) -> dict:
    """``asked`` in words for a person, without the agent's token: the command that grants it."""
    out = {k: v for k, v in described(asked).items() if k != "token"}
    out["how_to_record"] = grant_command(command, asked["project"].get("id"))
    return out


def in_response(response: dict, words) -> dict:
    """``response`` with its consent request, if it holds one, put in ``words(asked)``."""
    asked = response.get("consent")
    if isinstance(asked, dict) and asked.get("required"):
        return {**response, "consent": words(asked)}
    return response
