"""Which git repository holds a folder, found on disk as Hermes's sidebar finds it."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path


def _git_marker(candidate: Path) -> Path | None:
    """``candidate``'s own ``.git`` (a folder, or a linked worktree's file), if any."""
    marker = candidate / ".git"
    return marker if marker.is_dir() or marker.is_file() else None


def _git_marker_root(candidate: Path) -> str | None:
    """The repository root if ``candidate`` holds ``.git``; a worktree folds into its main repo."""
    marker = _git_marker(candidate)
    if marker is None:
        return None
    if marker.is_dir():
        return str(candidate)
    return _worktree_main(marker) or str(candidate)


def _physical(directory: str | Path) -> Path | None:
    """The folder git looks from: ``git -C`` enters it, so symlinks are followed
    and a ``..`` leaves the folder it reaches, not the one it is spelled after.
    None for a relative path or a folder that is not there (git finds no repository)."""
    start = Path(directory).expanduser()
    if not start.is_absolute():
        return None
    real = Path(os.path.realpath(start))
    return real if real.is_dir() else None


def _nearest_marker(directory: str | Path) -> Path | None:
    current = _physical(directory)
    if current is None:
        return None
    for candidate in (current, *current.parents):
        marker = _git_marker(candidate)
        if marker is not None:
            return marker
    return None


def find_git_root(directory: str | Path) -> str | None:
    """The repository holding ``directory``, found on disk without running git
    (like Hermes's sidebar probe). Folders that do not exist here — remote
    backends, another machine's paths — give None."""
    return GitRootCache(ttl=0)(str(directory))


def find_git_branch(directory: str | Path) -> str | None:
    """The branch checked out at ``directory`` (a short commit id when detached).

    What Hermes records as ``git_branch`` (``git branch --show-current``, else
    ``git rev-parse --short HEAD``), read from ``HEAD`` without running git.
    """
    try:
        marker = _nearest_marker(directory)
        if marker is None:
            return None
        git_dir = marker if marker.is_dir() else _gitdir_of(marker, marker.parent)
        if git_dir is None:
            return None
        head = (git_dir / "HEAD").read_text(encoding="utf-8", errors="replace")[:4096].strip()
    except (OSError, RuntimeError, ValueError):
        return None
    if head.startswith("ref:"):
        ref = head[len("ref:"):].strip()
        return ref.removeprefix("refs/heads/") or None
    return head[:7] if re.fullmatch(r"[0-9a-f]{40,64}", head) else None


def _gitdir_line(marker: Path) -> str | None:
    try:
        text = marker.read_text(encoding="utf-8", errors="replace")[:4096]
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("gitdir:"):
            return line[len("gitdir:"):].strip()
    return None


def _gitdir_of(marker: Path, top: Path) -> Path | None:
    line = _gitdir_line(marker)
    if not line:
        return None
    git_dir = Path(line)
    return git_dir if git_dir.is_absolute() else top / git_dir


def _worktree_main(marker: Path) -> str | None:
    line = _gitdir_line(marker)
    if not line:
        return None
    head, sep, _ = line.replace("\\", "/").partition("/.git/worktrees/")
    return os.path.realpath(head) if sep and head else None


class GitRootCache:
    """``find_git_root`` remembering every folder it passed on the way up, so
    the few hundred folders of a Hermes home cost a few hundred ``stat``s."""

    def __init__(self, ttl: float = 60.0):
        self._ttl = ttl
        self._cache: dict[str, tuple[float, str | None]] = {}

    def __call__(self, directory: str) -> str | None:
        now = time.monotonic()
        hit = self._cache.get(directory)
        if hit is not None and now - hit[0] < self._ttl:
            return hit[1]
        try:
            start = _physical(directory)
            passed: list[str] = [directory]
            root: str | None = None
            for candidate in (start, *start.parents) if start is not None else ():
                key = str(candidate)
                hit = self._cache.get(key)
                if hit is not None and now - hit[0] < self._ttl:
                    root = hit[1]
                    break
                passed.append(key)
                root = _git_marker_root(candidate)
                if root is not None:
                    break
        except (OSError, RuntimeError, ValueError):
            return None
        for key in passed:
            self._cache[key] = (now, root)
        return root
