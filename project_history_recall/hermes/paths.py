"""Where things live for the active profile.

Every path is derived from the Hermes home at call time (Hermes freezes
``hermes_state.DEFAULT_DB_PATH`` at import, which goes stale under a profile
switch or a test's temporary home).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

PLUGIN_KEY = "project-history-recall"
_PROFILE_ID = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")


def hermes_home() -> Path:
    """The active profile's home, as Hermes itself resolves it when loaded."""
    try:
        # Stdlib-only module; honours the per-task override Hermes sets for
        # profile-scoped work. Absent when we run without Hermes installed.
        from hermes_constants import get_hermes_home
    except ImportError:
        value = os.environ.get("HERMES_HOME", "").strip()
        return Path(value) if value else Path.home() / ".hermes"
    return Path(get_hermes_home())


def hermes_home_root() -> Path:
    """The folder that holds ``profiles/`` (``~/.hermes`` in a standard install)."""
    try:
        from hermes_constants import get_default_hermes_root
    except ImportError:
        home = hermes_home()
        return home.parent.parent if home.parent.name == "profiles" else home
    return Path(get_default_hermes_root())


def profile_home(name: str) -> Path | None:
    """The home of the profile named ``name`` as Hermes's own ``--profile`` finds it: ``default``
    (in any case) is the root, another name is lower-cased; None when it is no profile name
    (``../..`` or a folder would name a folder outside ``profiles/``)."""
    canon = name.strip()
    if canon.casefold() == "default":
        return hermes_home_root()
    canon = canon.lower()
    return hermes_home_root() / "profiles" / canon if _PROFILE_ID.fullmatch(canon) else None


def sticky_profile() -> str | None:
    """The profile ``hermes profile use NAME`` made the default, where Hermes's own command line goes
    when given no ``--profile``: the name in the root's ``active_profile``, unless ``HERMES_HOME``
    already names a profile's folder (Hermes's ``_apply_profile_override``). None: none, or ``default``."""
    named = os.environ.get("HERMES_HOME", "").strip()
    if named and Path(named).parent.name == "profiles":
        return None
    try:
        name = (hermes_home_root() / "active_profile").read_text(encoding="utf-8-sig").strip()
    except (OSError, UnicodeDecodeError, ValueError):  # none, unreadable; a root whose name has a NUL
        return None
    return None if not name or name.casefold() == "default" else name


def state_db_path(home: Path) -> Path:
    return home / "state.db"


def projects_db_path(home: Path) -> Path:
    return home / "projects.db"


def data_dir(home: Path) -> Path:
    """The plugin's own files, beside Hermes's per-plugin folders.

    Not inside ``plugins/project-history-recall/``: that folder holds the code
    of a directory install, which ``hermes plugins update/remove`` replaces.
    """
    return home / PLUGIN_KEY


def profile_name(home: Path) -> str:
    """The profile segment Hermes puts in ``@session:<profile>/<id>`` links: the home's real folder, as
    Hermes's ``get_active_profile_name`` reads it (a ``HERMES_HOME`` that is a symlink to
    ``profiles/work`` is profile work, whose links Hermes looks up in that profile)."""
    try:
        real = Path(os.path.realpath(home))
    except (OSError, ValueError):  # a name past the system's limits, a NUL
        real = home
    for folder in (real, home):
        if folder.parent.name == "profiles" and _PROFILE_ID.fullmatch(folder.name):
            return folder.name
    return "default"


def junk_roots(home: Path) -> tuple[list[str], list[str]]:
    """(home directories, Hermes homes) that never form automatic projects."""
    user_home = Path.home()
    homes = {str(user_home)}
    hermes = {str(home)}
    for path, bucket in ((user_home, homes), (home, hermes)):
        try:
            bucket.add(str(path.resolve()))
        except OSError:
            pass
    return sorted(homes), sorted(hermes)


