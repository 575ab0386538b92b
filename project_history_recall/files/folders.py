"""Creating the plugin's own folders, and never anything above them."""

from __future__ import annotations

import errno
import os
from pathlib import Path


def make_own(folder: Path) -> None:
    """Create ``folder`` (the plugin's data folder, or one inside it) if it is missing.

    Never with its parents: above the data folder is the Hermes home, and a home
    deleted while the plugin works (a profile removed) must stay deleted, not come
    back holding only the plugin's files: where the folder above is gone, this
    raises ``FileNotFoundError``."""
    try:
        folder.mkdir(exist_ok=True)
    except FileExistsError:  # mkdir's own words name no reason: "File exists"
        raise FileExistsError(errno.EEXIST, _not_a_folder(folder)) from None


def unmakeable(folder: Path) -> str | None:
    """Why no file can be made in ``folder`` as ``make_own`` and a write there would have it, or None;
    makes nothing. Asked with the rights of this process's user (``os.access``), as the write would be."""
    try:
        if folder.is_dir():
            return None if os.access(folder, os.W_OK | os.X_OK) else f"{folder} is not writable"
        if folder.is_symlink() or folder.exists():
            return _not_a_folder(folder)
        parent = folder.parent
        if not parent.is_dir():
            return f"{folder} cannot be made: there is no folder {parent}"
        return None if os.access(parent, os.W_OK | os.X_OK) else f"{folder} cannot be made: {parent} is not writable"
    except OSError as exc:  # a name past the system's limits, a folder on the way that cannot be searched
        return f"{folder}: {exc.strerror or exc}"


def _not_a_folder(folder: Path) -> str:
    if folder.is_symlink() and not folder.exists():
        return f"{folder} links to {os.readlink(folder)}, which does not exist"
    return f"{folder} is not a folder"
