"""Sessions a schedule ran rather than a person: ranked after the person's own, as Hermes ranks them.

A cron job run in a project's folder (Hermes's ``workdir`` jobs) leaves a session there every time it
runs, each repeating the same words: the project's name, "report", "deploy". Ranked by those words
alone, a few weeks of them fill every place and the user's own conversation that holds the words is
not shown. Hermes's ``session_search`` orders its hits the user's sessions first, the cron ones after,
each in its own order (its "recall blindness", #19434); so does this plugin. A cron session still comes
when it is all that holds the words, and is still read as history: it is only placed after.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Callable, Collection, TypeVar

T = TypeVar("T")

# The sources Hermes's session_search places after the others (``_DEMOTED_SESSION_SOURCES``).
SOURCES = ("cron",)


def among(conn: sqlite3.Connection, session_ids: Collection[str]) -> frozenset[str]:
    """Those of ``session_ids`` a schedule ran, by their rows in ``state.db``."""
    if not session_ids:
        return frozenset()
    marks = ", ".join("?" * len(SOURCES))
    rows = conn.execute(f"SELECT id FROM sessions WHERE source IN ({marks}) "
                        "AND id IN (SELECT value FROM json_each(?))", (*SOURCES, json.dumps(sorted(session_ids))))
    return frozenset(row[0] for row in rows)


def after(items: list[T], session_of: Callable[[T], str], automated: Collection[str]) -> list[T]:
    """``items`` (best first) with those of the ``automated`` sessions moved after the rest, each part
    in its order."""
    if not automated:
        return items
    return ([item for item in items if session_of(item) not in automated]
            + [item for item in items if session_of(item) in automated])
