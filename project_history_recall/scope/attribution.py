"""Which project a session belongs to: pure functions, no I/O.

First match wins:

1. recorded  - a move recorded by this plugin, naming a live project, while the
               session's folder is still the one that move left it in;
2. folder    - the deepest folder of a live explicit project that holds the
               session's cwd or git root (a tie goes to the cwd);
3. workspace - an automatic project keyed by the git root or else the cwd,
               unless that key is junk (the home directory, ``HERMES_HOME``
               or anything under it);
4. home      - nothing to go on.

A session with no location and no record of its own (a subagent, a legacy
compression continuation) inherits from its nearest ancestor that has one,
which is normally the root of its conversation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable, Mapping

from ..hermes.facts import ProjectInfo, SessionFacts
from .pathkeys import ancestor_keys, base_name, is_under, key_depth, path_key


@dataclass(frozen=True)
class Attribution:
    kind: str  # "explicit" | "auto" | "home"
    id: str | None
    name: str | None
    via: str  # "recorded" | "folder" | "workspace" | "inherited" | "none"

    @property
    def key(self) -> tuple[str, str | None]:
        """What two sessions must share to be in the same scope."""
        return (self.kind, self.id)

    def as_json(self) -> dict:
        return {"kind": self.kind, "id": self.id, "name": self.name}


HOME = Attribution(kind="home", id=None, name="home", via="none")


class FolderIndex:
    """Folder key -> (project, depth) for the live explicit projects.

    Projects come in creation order; when two declare the same folder the
    first keeps it, as in Hermes's sidebar.
    """

    def __init__(self, projects: Iterable[ProjectInfo]):
        self._by_key: dict[str, tuple[ProjectInfo, int]] = {}
        for project in projects:
            if project.archived:
                continue
            for folder in project.folders:
                key = path_key(folder)
                if key and key not in self._by_key:
                    self._by_key[key] = (project, key_depth(folder))
        # A folder can match only at a depth some project folder has: a session's folder 20,000 levels
        # deep (an importer's), each level a key, cost seconds per search of a new process, and so did
        # a project folder as deep, for its own ancestors and as the depth every folder was looked up to.
        self._depths = frozenset(d for _project, d in self._by_key.values())

    def match(self, target: str | None) -> tuple[ProjectInfo | None, int]:
        for key in ancestor_keys(target, self._depths):
            hit = self._by_key.get(key)
            if hit:
                return hit
        return None, -1


def deepest_match(index: FolderIndex, targets: Iterable[str | None]) -> ProjectInfo | None:
    """The project owning the deepest folder above any of ``targets``.

    Targets come best first (the cwd, then the git root): on equal depth the
    earlier one wins, exactly as Hermes's sidebar breaks the tie.
    """
    best, best_depth = None, -1
    for target in targets:
        if target:
            project, depth = index.match(target)
            if project is not None and depth > best_depth:
                best, best_depth = project, depth
    return best


@dataclass(frozen=True)
class JunkPolicy:
    """Workspace keys that never form an automatic project."""

    home_keys: frozenset[str] = frozenset()
    hermes_home_keys: tuple[str, ...] = ()

    @classmethod
    def from_paths(cls, home_dirs: Iterable[str], hermes_homes: Iterable[str]) -> "JunkPolicy":
        return cls(
            home_keys=frozenset(k for k in (path_key(p) for p in home_dirs) if k),
            hermes_home_keys=tuple(k for k in (path_key(p) for p in hermes_homes) if k),
        )

    def is_junk(self, path: str) -> bool:
        key = path_key(path)
        if not key or key in self.home_keys:
            return True
        return any(is_under(h, key) for h in self.hermes_home_keys)


@dataclass
class AttributionContext:
    """Everything resolution needs besides the session rows."""

    projects: list[ProjectInfo]
    # session id -> (project id, the folder its move left it in; None: not known)
    records: Mapping[str, tuple[str, str | None]] = field(default_factory=dict)
    junk: JunkPolicy = field(default_factory=JunkPolicy)
    # cwd -> the repository it is in, probed on disk like Hermes's sidebar
    # does (0.19.0 only persists git roots for TUI sessions). None: no probe.
    git_root: Callable[[str], str | None] | None = None

    def __post_init__(self) -> None:
        self.index = FolderIndex(self.projects)
        self.live = {p.id: p for p in self.projects if not p.archived}
        # Thousands of sessions share a few hundred folders; resolve each once.
        self.by_location: dict[tuple, Attribution | None] = {}


def _explicit(project: ProjectInfo, via: str) -> Attribution:
    return Attribution(kind="explicit", id=project.id, name=project.name, via=via)


def _effective_root(facts: SessionFacts, ctx: AttributionContext) -> str:
    cwd = (facts.cwd or "").strip()
    if cwd and ctx.git_root is not None:
        probed = ctx.git_root(cwd)
        if probed:
            return probed
    # A persisted root only counts while the cwd is inside it: Hermes 0.19.0
    # keeps a stale root after a move to a non-git folder (main ignores
    # such roots too).
    root = (facts.git_repo_root or "").strip()
    if root and cwd and not is_under(root, cwd):
        return ""
    return root


def resolve_own(facts: SessionFacts, ctx: AttributionContext) -> Attribution | None:
    """Attribution from the session's own record or location; None if it has neither."""
    recorded = ctx.records.get(facts.id)
    # A record holds while the session is where its move left it: once Hermes puts it elsewhere (its
    # own move, ``project_switch``, a deleted folder healed), Hermes's folder decides, as in its sidebar.
    if recorded and recorded[0] in ctx.live and (
            recorded[1] is None or path_key(recorded[1]) == path_key(facts.cwd or "")):
        return _explicit(ctx.live[recorded[0]], "recorded")
    location = (facts.cwd, facts.git_repo_root)
    if location not in ctx.by_location:
        ctx.by_location[location] = _resolve_location(facts, ctx)
    return ctx.by_location[location]


def _resolve_location(facts: SessionFacts, ctx: AttributionContext) -> Attribution | None:
    cwd = (facts.cwd or "").strip()
    root = _effective_root(facts, ctx)
    if not cwd and not root:
        return None

    best = deepest_match(ctx.index, (cwd, root))
    if best is not None:
        return _explicit(best, "folder")

    workspace = root or cwd
    if ctx.junk.is_junk(workspace):
        return HOME
    return Attribution(kind="auto", id=path_key(workspace), name=base_name(workspace), via="workspace")


def attribute(
    session_id: str,
    sessions: Mapping[str, SessionFacts],
    ctx: AttributionContext,
    memo: dict[str, Attribution] | None = None,
) -> Attribution:
    """Attribution of one session, inheriting along ``parent_session_id``."""
    memo = {} if memo is None else memo
    chain: list[str] = []
    seen: set[str] = set()
    current: str | None = session_id
    found = HOME
    while current and current not in seen:
        if current in memo:
            found = memo[current]
            break
        seen.add(current)
        facts = sessions.get(current)
        if facts is None:
            break
        own = resolve_own(facts, ctx)
        if own is not None:
            found = own
            memo[current] = own
            break
        chain.append(current)
        current = facts.parent_session_id
    inherited = found if found.kind == "home" else Attribution(found.kind, found.id, found.name, "inherited")
    for sid in chain:
        memo[sid] = inherited
    if session_id in memo:
        return memo[session_id]
    return found


def attribute_all(sessions: Mapping[str, SessionFacts], ctx: AttributionContext) -> dict[str, Attribution]:
    memo: dict[str, Attribution] = {}
    for sid in sessions:
        attribute(sid, sessions, ctx, memo)
    return memo


def lineage(session_id: str, sessions: Mapping[str, SessionFacts]) -> list[str]:
    """``session_id`` and its parent chain, nearest first, up to the top."""
    chain = [session_id]
    while True:
        facts = sessions.get(chain[-1])
        parent = facts.parent_session_id if facts else None
        if not parent or parent in chain or parent not in sessions:
            return chain
        chain.append(parent)


def lineage_root(session_id: str, sessions: Mapping[str, SessionFacts]) -> str:
    """The top of ``session_id``'s parent chain (itself when it has no parent)."""
    return lineage(session_id, sessions)[-1]
