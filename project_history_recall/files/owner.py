"""The plugin's files in a home another user's Hermes writes, when a command ran as root there.

``sudo project-history-recall …`` (``sudo -E``, or ``HERMES_HOME`` given) made the data folder and its
files as root's: the user's own Hermes could then neither open the indexes nor record a move, until
someone ran ``chown -R``. Hermes hands back the config files it writes as root the same way
(``utils.atomic_yaml_write``); in a home of root's own nothing changes hands.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def give_back(data: Path, state_db: Path, home: Path) -> None:
    """Hand what root made under the data folder ``data`` (SQLite's WAL files and lock files included)
    to the user whose Hermes writes the home: ``state_db``'s owner, else the ``home`` folder's."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return
    try:
        owner = (state_db if state_db.is_file() else home).stat()
    except OSError:
        return
    if owner.st_uid == 0:
        return
    for path in _tree(data):
        with contextlib.suppress(OSError):
            if path.lstat().st_uid == 0:  # the link itself, never what it points to
                os.lchown(path, owner.st_uid, owner.st_gid)


def _tree(folder: Path):
    """``folder`` and everything under it, links not followed (but ``folder`` itself, as the plugin
    follows it)."""
    if not folder.is_dir():
        return
    yield folder
    for top, dirs, files in os.walk(folder):
        for name in dirs + files:
            yield Path(top) / name
