"""What the plugin reads of Hermes's data: a project, and the facts of a session that decide its project.

Plain records, shared by the readers (``projects``, ``catalog``) and the pure
attribution rules (``scope.attribution``), which never read a file.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class ProjectInfo:
    """An explicit project as ``projects.db`` describes it."""

    id: str
    slug: str
    name: str
    folders: tuple[str, ...] = ()
    primary_path: str | None = None
    archived: bool = False


@dataclass(frozen=True)
class SessionFacts:
    """The columns of a ``sessions`` row that decide attribution."""

    id: str
    cwd: str | None = None
    git_repo_root: str | None = None
    parent_session_id: str | None = None
    message_count: int = field(default=0, compare=False)  # sizes work; never decides attribution
    # False for what Hermes's own session_search leaves out (archived, hidden,
    # subagent runs): such a session still has a project, but is not searched.
    searchable: bool = True
