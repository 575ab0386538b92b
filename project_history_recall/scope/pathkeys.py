"""Path identity the way Hermes's sidebar compares paths.

Stored paths are already absolute, so nothing here touches the file system:
no ``realpath``, no ``abspath``. Two spellings of one folder (trailing
separator, ``\\`` vs ``/``, Windows case) get the same key; ``/w/app`` and
``/w/app2`` never do, because matching works on whole segments, not string
prefixes.
"""

from __future__ import annotations

import re
from typing import Collection

_SEPARATORS = re.compile(r"[/\\]")
_WINDOWS_DRIVE = re.compile(r"^[A-Za-z]:[/\\]")


def segments(path: str | None) -> list[str]:
    return [s for s in _SEPARATORS.split((path or "").strip().rstrip("/\\")) if s]


def is_windows_path(path: str | None) -> bool:
    # Drive letters, UNC (\\srv, //srv) and backslash-rooted spellings compare
    # case-insensitively even when Hermes runs on POSIX (remote backends, WSL).
    value = (path or "").strip()
    return bool(_WINDOWS_DRIVE.match(value)) or value.startswith(("\\", "//"))


def comparison_segments(path: str | None) -> list[str]:
    segs = segments(path)
    return [s.casefold() for s in segs] if is_windows_path(path) else segs


def _root_prefix(path: str | None) -> str:
    # Keep a POSIX root visible so keys read as paths ("/w/app", not "w/app");
    # Windows keys start at the drive or server name.
    value = (path or "").strip()
    return "/" if value.startswith("/") and not value.startswith("//") else ""


def path_key(path: str | None) -> str:
    """Canonical identity of a folder; empty for an empty path."""
    segs = comparison_segments(path)
    return _root_prefix(path) + "/".join(segs) if segs else ""


def ancestor_keys(path: str | None, depths: Collection[int] | None = None) -> list[str]:
    """Keys of ``path`` and each of its ancestors, deepest first; with ``depths``, only of those that
    many segments deep (the keys of a path n segments deep hold n²/2 segments in all)."""
    segs = comparison_segments(path)
    prefix = _root_prefix(path)
    ends = range(len(segs), 0, -1) if depths is None else sorted((d for d in depths if 0 < d <= len(segs)),
                                                                  reverse=True)
    return [prefix + "/".join(segs[:end]) for end in ends]


def key_depth(path: str | None) -> int:
    """How many segments ``path``'s key has (its own key is the first of ``ancestor_keys``)."""
    return len(comparison_segments(path))


def is_under(folder: str | None, target: str | None) -> bool:
    """True when ``target`` is ``folder`` or inside it, segment by segment."""
    f = comparison_segments(folder)
    t = comparison_segments(target)
    return bool(f) and len(f) <= len(t) and t[: len(f)] == f


def base_name(path: str | None) -> str:
    segs = segments(path)
    return segs[-1] if segs else ""
