"""One Hermes home as this process sees it: its paths, and a slot for every part kept for it.

A process can serve several homes (profiles; the tests, thousands). What is
kept between searches for one home lives in its ``Home``'s slots: the session
catalog and the attribution map (``scope.resolve``), the keyword index's
keeper (``keyword.textindex``), the vector store with its indexers and
in-memory matrices (``semantic.kept``). Each part puts itself in its slot on
first use; ``Home`` imports none of them, so every layer above can use it and
it depends on nothing but the paths.

Not here, on purpose: values read from small files and keyed by the file
(settings, ``.env``, consents through ``files.filestamp``; ``projects.db``
and ``recall.db`` through ``hermes.watch``), which refresh themselves when the
file changes; and what belongs to the process, whatever the home (the
embedding model, loaded once; a thread's read connection to ``state.db``).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Callable, TypeVar, cast

from .hermes import paths

T = TypeVar("T")


class Home:
    _homes: dict[str, "Home"] = {}
    _homes_lock = threading.Lock()

    @classmethod
    def of(cls, path: Path) -> "Home":
        key = str(Path(path).absolute())
        with cls._homes_lock:
            home = cls._homes.get(key)
            if home is None:
                home = cls._homes[key] = cls(Path(path))
            return home

    @classmethod
    def every(cls) -> list["Home"]:
        """Every home this process has served (tests wait for their background work)."""
        with cls._homes_lock:
            return list(cls._homes.values())

    @classmethod
    def forget_every(cls) -> None:
        """Let go of every home, and what its slots keep (a copy of the plugin Hermes unloaded:
        see ``register``). A background thread finishes the work it has in hand, then ends."""
        with cls._homes_lock:
            cls._homes.clear()

    def __init__(self, path: Path):
        self.path = path
        self.state_db = paths.state_db_path(path)
        self.data_dir = paths.data_dir(path)
        # Guards the slots, and what the parts in them keep (one lock: a part's swap is short).
        self.lock = threading.Lock()
        self._slots: dict[str, object] = {}

    def slot(self, name: str, make: Callable[["Home"], T]) -> T:
        """The part kept in slot ``name``, made by ``make(home)`` on first use (``make`` must not
        take ``lock``: it runs under it)."""
        with self.lock:
            part = self._slots.get(name)
            if part is None:
                part = self._slots[name] = make(self)
            return cast(T, part)  # a slot's name always goes with the same ``make``
