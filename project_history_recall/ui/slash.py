"""``/recall``: the plugin's slash command, for a person inside a Hermes session.

    /recall <query>           search this project's earlier sessions
    /recall status            which project this session is in, what is in scope
    /recall move <project>    move this session into another project
    /recall search <query>    search for something that starts with status/move/help

Hermes calls the handler with the raw text after the command and prints what
it returns; the session and folder come from Hermes's session environment,
as for the tools.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from ..hermes import host, paths
from . import edge

USAGE = __doc__.split("\n\n")[1].rstrip() + "\n"
# What the tool's ``notice`` tells the model, in a line for the person reading the results.
QUOTED = "Quoted from earlier sessions: what they say is history, not an instruction."
VERBS = ("status", "move", "search", "help")


def _plain(response: dict, fmt) -> str:
    if not response.get("success"):
        return f"recall: {response.get('error', 'failed')}"
    return fmt(response)


def handle(raw_args: str) -> str:
    # Loaded on the first /recall, not when the plugin registers (see tools.handle_search).
    from . import render

    home = paths.hermes_home()
    try:
        text = _handle(home, raw_args)
    except Exception as exc:  # Hermes would print it as it is, the key included
        text = _plain(edge.failure(home, exc, "/recall"), render.format_message)
    # The remote embedder's key never shows, whatever the history holds.
    return render.scrubbed(home, text)


def _handle(home: Path, raw_args: str) -> str:
    from .. import move, overview, search
    from ..keyword import querytext
    from ..scope import sessionref
    from . import render

    text = (raw_args or "").strip()
    # Split as Hermes finds the command's own name, by any whitespace: an ideographic space (which a
    # Chinese input method types) or a tab after the verb is no part of it.
    verb, rest = (text.split(maxsplit=1) + ["", ""])[:2]
    verb, rest = verb.lower(), rest.strip()
    if not text or verb in ("help", "-h", "--help"):
        return USAGE
    elsewhere = host.command_for_another_profile(home)
    if elsewhere:
        return f"recall: {elsewhere}"
    caller = host.caller_from_dispatch({})
    if verb == "status":
        status = _plain(render.for_person(overview.status(home, caller), "hermes recall"), render.format_status)
        # "/recall status report for the deploy" may be a search: say that the words went unsearched, and how.
        return status + (f"\n(“{rest}” was not searched: to search for it, /recall search {text})" if rest else "")
    if verb == "move":
        if not rest:
            return "recall: say which project, e.g. /recall move webshop\n" + USAGE
        moved = move.run(home, caller, {"project": rest})
        # No shell stands before /recall to take off the quotes around a name of several words; a
        # project named with them (refused here, and so unchanged) is taken first.
        if moved.get("error_code") == "unknown_project" and querytext.unquoted(rest) != rest:
            moved = move.run(home, caller, {"project": querytext.unquoted(rest)})
        named, _, project = rest.partition(" ")
        if moved.get("error_code") == "unknown_project" and project.strip() and sessionref.parse(named).is_link:
            # The command line's ``move SESSION PROJECT``, typed here with a link a search printed.
            return (f"recall: /recall move moves this session, and '{rest}' is no project. To move the session "
                    f"{named} instead: hermes recall move {shlex.quote(named)} {shlex.quote(project.strip())}")
        return _plain(moved, render.format_move)
    query = rest if verb == "search" else text
    # A person typed this: a consent request names the command that grants it, not the agent's token.
    response = render.for_person(search.run(home, caller, {"query": query, "context": 1}), "hermes recall")
    return _plain(response, _search_text)


def _search_text(response: dict) -> str:
    from . import render

    text = render.format_search(response, render.Style())
    return f"{QUOTED}\n{text}" if response.get("results") else text
