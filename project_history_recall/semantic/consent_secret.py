"""The key consent tokens are signed with: a random secret per Hermes home (profile), kept in
the plugin's data folder (``consent.secret``, owner-only) and never shown or logged."""

from __future__ import annotations

import contextlib
import os
import secrets as _random
import tempfile
from pathlib import Path

from ..files.filestamp import read_regular
from ..files.folders import make_own
from ..hermes import paths

SECRET_FILE = "consent.secret"


def key(home: Path) -> bytes:
    """This profile's token key, created once.

    Created complete or not at all (written aside, then hard-linked into
    place), so two processes asking at once end up with the same key."""
    path = paths.data_dir(home) / SECRET_FILE
    with contextlib.suppress(FileNotFoundError):
        data = read_regular(path)
        if len(data) >= 32:
            return data
        path.unlink()  # not a key we made: one that every later token can rely on replaces it
    make_own(path.parent)
    fd, tmp = tempfile.mkstemp(prefix=".consent.", dir=path.parent)  # mode 0600
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(_random.token_bytes(32))
            fh.flush()
            os.fsync(fh.fileno())
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass  # another process won: use its key
        except OSError:  # a file system without hard links
            os.replace(tmp, path)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
    return read_regular(path)
