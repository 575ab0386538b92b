"""Creating the plugin's own folders, and never anything above them."""

from __future__ import annotations

from pathlib import Path


def make_own(folder: Path) -> None:
    """Create ``folder`` (the plugin's data folder, or one inside it) if it is missing.

    Never with its parents: above the data folder is the Hermes home, and a home
    deleted while the plugin works (a profile removed) must stay deleted, not come
    back holding only the plugin's files: where the folder above is gone, this
    raises ``FileNotFoundError``."""
    folder.mkdir(exist_ok=True)
