"""The agent-facing tools: schemas for the model, handlers for Hermes's dispatch.

Handlers follow Hermes's contract: ``handler(args, **kw) -> str`` (JSON),
never raising. The toolset is ``project_history`` rather than Hermes's
``project``: registering into ``project`` makes it a plugin toolset that
Hermes switches on for every platform, dragging core's
``project_list/create/switch`` along (hermes-agent 0.19.0, toolset resolution
in ``toolsets.py``).
"""

from __future__ import annotations

import json

from .. import settings as config
from ..hermes import host, paths
from . import edge, terminal

TOOLSET = "project_history"

SEARCH_SCHEMA = {
    "name": "project_history_search",
    "description": (
        "Search earlier sessions of THIS project (grouped with it by folder or repo), "
        "by keyword and by meaning. Use it instead of session_search when the user refers to past work here: "
        "'what did we decide about X'. "
        "mode: hybrid (default) for questions; keyword for exact error codes, symbols, file names; "
        "semantic for the same idea in other words or another language. Each result is one "
        "session, best first: its best message (message_id, snippet, context) and, in more_hits, its "
        "other matching messages. A time alone ('yesterday', '上周', 'last time') lists the sessions from then, "
        "newest first. Read around a message_id with "
        "session_search(session_id=..., around_message_id=..., profile=...); cite the session's link. "
        "project.kind 'home': nothing was searched; offer project_session_move, or use session_search. "
        "keyword_status, semantic_status (why: *_reason) and warnings say what it went without. "
        "semantic_status 'consent_required': keyword results are there, nothing sent; tell the user what "
        "'consent' says would be sent, and ask."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "query": {
                "type": "string",
                "description": "What to look for: a question, key words, an error code, a symbol or a path.",
            },
            "mode": {
                "type": "string",
                "enum": list(config.MODES),
                "description": "hybrid (default): words and meaning; keyword: exact terms, codes, "
                               "symbols; semantic: same question in other words.",
            },
            "limit": {"type": "integer", "minimum": 1, "maximum": config.MAX_LIMIT,
                      "description": "Number of sessions (default 10)."},
            "context": {"type": "integer", "minimum": 0, "maximum": config.MAX_CONTEXT,
                        "description": "Messages shown before and after each result's best message (default 2); "
                                       "more_hits come without."},
            "include_tool_output": {"type": "boolean",
                                    "description": "Also search tool output, by keyword: in keyword and hybrid "
                                                   "mode, never semantic (default false)."},
            "since": {"type": "string",
                      "description": "Only messages from this on: 2026-09-01, 2026-09-01 14:30, or an age ago as "
                                     "Hermes reads one: 30m (minutes), 12h, 7d, 2w, a bare 90 (days); months "
                                     "3mo, years 1y."},
            "until": {"type": "string",
                      "description": "Only messages before this (exclusive, later than since): a date or an age "
                                     "as for since."},
            "project": {"type": "string",
                        "description": "Search another project of this profile instead (id, slug, name or folder)."},
            "include_current_session": {"type": "boolean",
                                        "description": "Also search this session, with what Hermes compacted out of your "
                                                       "context (default false)."},
            "consent": {
                "type": "string",
                "description": "ONLY after the user clearly agreed, in this conversation, to what a "
                               "consent_required response's consent.ask_user describes: that response's "
                               "consent.token, copied exactly. It records the user's consent. Never set it "
                               "otherwise; true/yes are refused.",
            },
        },
        "required": ["query"],
    },
}


def _json(payload: dict) -> str:
    # json escapes C0 controls; DEL, C1 and bidi controls from history are escaped the same way
    # (``\uXXXX``), in case Hermes shows the result on a terminal; the JSON reads back unchanged.
    return terminal.shown(json.dumps(payload, ensure_ascii=False))


def _trimmed_warning(limit: int) -> str:
    return (f"The answer was cut to stay within Hermes's limit of {limit:,} characters for one tool result "
            "('trimmed' counts what was left out, from the lowest results up): ask with a smaller limit or "
            "context, or read around a hit with session_search.")


def _fitted(payload: dict, limit: int) -> str:
    """``payload`` as JSON within ``limit`` characters. Past it, the context windows of the lowest results
    go first, then their more_hits, then the lowest results themselves; ``trimmed`` counts them (the
    windows emptied, the further hits and the results left out)."""
    text = _json(payload)
    results = payload.get("results")
    if len(text) <= limit or not isinstance(results, list):
        return text
    kept = [dict(r) for r in results]
    trimmed = {"context_windows": 0, "more_hits": 0, "results": 0}
    fitted = {**payload, "results": kept, "trimmed": trimmed,
              "warnings": [*payload.get("warnings", []), _trimmed_warning(limit)]}
    cuts = [(r, "context", "context_windows") for r in reversed(kept)] + \
           [(r, "more_hits", "more_hits") for r in reversed(kept)]
    over = len(_json(fitted)) - limit
    for result, key, counted in cuts:
        if over <= 0:
            over = len(_json(fitted)) - limit  # the estimates below, checked
            if over <= 0:
                break
        if result.get(key):
            over -= len(_json(result[key])) - 2
            trimmed[counted] += 1 if key == "context" else len(result[key])
            result[key] = []
    for result in kept:
        if "more_hits" in result and not result["more_hits"]:
            del result["more_hits"]  # absent, as for a result that has none
    text = _json(fitted)
    while len(text) > limit and len(kept) > 1:
        kept.pop()
        trimmed["results"] += 1
        text = _json(fitted)
    return text


def _answer(tool: str, run, args: dict, kw: dict) -> str:
    """``run(home, caller, args)`` for Hermes's dispatch: JSON out, never a traceback, within Hermes's
    limit for one tool result."""
    home = paths.hermes_home()
    try:
        text = _fitted(run(home, host.caller_from_dispatch(kw), args), host.tool_result_limit())
    except Exception as exc:
        text = _json(edge.failure(home, exc, tool))
    # Belt and braces: the remote embedder's key never leaves in a tool result,
    # even if it sits in the searched history itself.
    return config.scrub_configured(home, text)


# The use cases load on the first call: registering the plugin, in every Hermes process, must not
# load the engines (numpy, the embedders, the modules that open SQLite files).
def handle_search(args: dict, **kw) -> str:
    from .. import search
    from . import consent_words

    return _answer("project_history_search",
                   lambda home, caller, a: consent_words.in_response(search.run(home, caller, a), consent_words.for_agent),
                   args, kw)


MOVE_SCHEMA = {
    "name": "project_session_move",
    "description": (
        "Move a session into another project of this profile. Afterwards the session is searched as part "
        "of that project (project_history_search), and its working folder moves to the project's primary "
        "folder (an automatic project's: its folder), so Hermes's sidebar follows. Use it when the user says a conversation belongs to another "
        "project, or to file a session that is in no project (project.kind 'home'). Without 'session' it "
        "moves the current conversation. Nothing changes when it fails; moving a session into the project "
        "it is already in changes nothing and says so."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "project": {"type": "string",
                        "description": "The target project: its id, slug, name or one of its folders; an "
                                       "automatic project by its name ('notes' or 'notes (auto)') or folder."},
            "session": {
                "type": "string",
                "description": "The session to move: a session id, a search result's link "
                               "(@session:<profile>/<id>) or the session's title. Default: this conversation.",
            },
        },
        "required": ["project"],
    },
}


def handle_move(args: dict, **kw) -> str:
    from .. import move

    return _answer("project_session_move", move.run, args, kw)


# What register(ctx) registers: (schema, handler, emoji), all in TOOLSET.
TOOLS = (
    (SEARCH_SCHEMA, handle_search, "📂"),
    (MOVE_SCHEMA, handle_move, "📦"),
)
