"""One search's context: built once by ``search.run``, read by both engines."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

from .hermes.changes import Once
from .hermes.messages import Filters
from .hermes.statedb import Shape
from .keyword.querytext import ParsedQuery
from .scope.resolve import Scope
from .settings import Settings


@dataclass(frozen=True)
class SearchContext:
    home: Path
    settings: Settings
    conn: sqlite3.Connection  # the request's read-only state.db connection (``statedb.reading``)
    shape: Shape
    scope: Scope
    filters: Filters  # the request's roles, since and until
    query: ParsedQuery  # ``query.raw``: the text as asked, which the semantic engine embeds
    counts: Once  # the scope's sessions' rows in state.db, read once for both engines
    # The process ends with this search (the command line): what it leaves to the background ends
    # with it, so the keyword index's build is waited for too, within the budget.
    one_shot: bool = False
