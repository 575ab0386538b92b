"""Writing one top-level block of the plugin's own config.yaml, and nothing else.

The file is the user's: their settings, comments and layout must survive the
plugin writing its records (``consents``) into it. So the file is not
re-serialised; its text is edited:

1. items added at the end of a list the block holds are written after its
   last line, the lines before left to the character (a person's comments
   and their own keys in a record among them); any other change replaces the
   lines of the top-level ``<key>:`` block (the key and everything indented
   or ``- `` listed under it) by a freshly dumped block, or the block is
   appended at the end;
2. the result is parsed and compared with the original parse: every other
   key must be exactly as it was and ``<key>`` exactly the new value; if not
   (flow-style documents, anchors, several documents …), nothing is written
   and the caller is told why;
3. the new text goes to a temporary file in the same folder, is flushed to
   disk, and replaces the old file with one ``os.replace`` (atomic on POSIX
   and Windows), then the folder is synced: a crash at any moment leaves the
   old file or the new one, never half of either;
4. all of it under an exclusive lock, so two processes recording at once do
   not lose each other's record.

A symlinked config.yaml (dotfile managers) is written through: the link
stays, its target changes. Only the plugin's own file is ever written; Hermes's
``config.yaml`` never is.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import tempfile
from pathlib import Path
from typing import Any, Callable

from ..errors import DataError
from .derived import not_a_file
from .filestamp import read_regular
from . import yamltext
from .folders import make_own
from .locks import FileLock

LOCK_NAME = ".config.lock"
_ITEM = re.compile(r"^( *)- ")  # a list item's line, and its indent
_TMP_PREFIX = ".config.yaml."
_TMP_SUFFIX = ".tmp"
_BOM = "\ufeff"


class ConfigWriteError(DataError):
    """The file could not be updated safely; it was left as it was."""

    codes = ("config_write_failed",)


def _block_span(lines: list[str], key: str) -> tuple[int, int] | None:
    """[start, end) of the top-level ``key:`` block, or None."""
    head = re.compile(rf"^{re.escape(key)}\s*:(\s|$)")
    # The first line may open with a byte-order mark (Windows Notepad writes one), which YAML skips.
    start = next((i for i, line in enumerate(lines) if head.match(line.lstrip(_BOM) if i == 0 else line)), None)
    if start is None:
        return None
    end = start + 1
    while end < len(lines):
        line = lines[end]
        if line.strip() == "" or line[0] in " \t" or line.startswith(("-", "#")):
            end += 1
            continue
        break
    # Blank lines and column-0 comments at the end belong to what follows.
    while end > start + 1 and (lines[end - 1].strip() == "" or lines[end - 1].startswith("#")):
        end -= 1
    return start, end


def _mapping(text: str) -> dict:
    """The YAML document ``text`` as a mapping ({} when empty); ConfigWriteError otherwise."""
    import yaml

    try:
        parsed = yamltext.safe_load(text) if text.strip() else {}
    except yaml.YAMLError as exc:
        raise ConfigWriteError(f"it is not valid YAML ({type(exc).__name__}); fix it first") from None
    if parsed is None:  # only comments
        parsed = {}
    if not isinstance(parsed, dict):
        raise ConfigWriteError("its top level is not a mapping")
    return parsed


def replace_block(text: str, key: str, value: Any) -> str:
    """``text`` with its top-level ``key`` set to ``value``, everything else kept
    to the character. Pure; raises ConfigWriteError when that cannot be done."""
    return _replace(text, _mapping(text), key, value)


def _replace(text: str, before: dict, key: str, value: Any) -> str:
    import yaml

    block = yaml.safe_dump({key: value}, allow_unicode=True, sort_keys=False, default_flow_style=False)
    lines = text.splitlines(keepends=True)
    span = _block_span(lines, key)
    if span is None:
        sep = "" if not text or text.endswith("\n") else "\n"
        new = f"{text}{sep}{block}"
    else:
        new = "".join(lines[:span[0]]) + block + "".join(lines[span[1]:])
    if not _reads_as(new, {**before, key: value}):
        raise ConfigWriteError("its layout cannot be edited without disturbing other settings "
                               f"(write '{key}' as an ordinary top-level block)")
    return new


def _appended(text: str, before: dict, key: str, value: Any) -> str | None:
    """``text`` with the items ``value`` adds at the end of the block-style list ``key`` holds
    written after the block's last line, the lines before kept to the character; None when
    ``value`` is not such a list, or the text would not read as it should."""
    import yaml

    held = before.get(key)
    if not (isinstance(held, list) and held and isinstance(value, list) and len(value) > len(held)
            and value[:len(held)] == held):
        return None
    lines = text.splitlines(keepends=True)
    span = _block_span(lines, key)
    first = next((m for m in (_ITEM.match(line) for line in lines[span[0] + 1:span[1]]) if m), None) if span else None
    if span is None or first is None:  # a flow-style list (``key: [...]``)
        return None
    dumped = yaml.safe_dump(value[len(held):], allow_unicode=True, sort_keys=False, default_flow_style=False)
    head = "".join(lines[:span[1]])
    new = (head + ("" if head.endswith("\n") else "\n")
           + "".join(first.group(1) + line for line in dumped.splitlines(keepends=True)) + "".join(lines[span[1]:]))
    return new if _reads_as(new, {**before, key: value}) else None


def _reads_as(text: str, expected: dict) -> bool:
    import yaml

    try:
        return yamltext.safe_load(text) == expected
    except yaml.YAMLError:
        return False


@contextlib.contextmanager
def locked(folder: Path):
    """An exclusive lock between processes and threads (advisory)."""
    make_own(folder)
    with FileLock(folder / LOCK_NAME):
        yield


def _sync_folder(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # Windows cannot open a folder; its rename is durable enough
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_atomic(path: Path, text: str) -> None:
    """Replace ``path``'s content with ``text``: all of it or none of it."""
    target = path.resolve() if path.is_symlink() else path
    folder = target.parent
    folder.mkdir(parents=True, exist_ok=True)
    for stale in folder.glob(f"{_TMP_PREFIX}*{_TMP_SUFFIX}"):  # left by a crash mid-write
        with contextlib.suppress(OSError):
            stale.unlink()
    fd, tmp = tempfile.mkstemp(prefix=_TMP_PREFIX, suffix=_TMP_SUFFIX, dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        with contextlib.suppress(OSError):
            os.chmod(tmp, stat.S_IMODE(target.stat().st_mode) if target.exists() else 0o600)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _sync_folder(folder)


def update_block(path: Path, key: str, change: Callable[[Any], Any]) -> Any:
    """Set top-level ``key`` of the YAML file at ``path`` to ``change(current value)``.

    Returns the new value. ``change`` may raise to abort; nothing is written then.
    Raises ConfigWriteError (file untouched) when the edit cannot be made safely.
    """
    with locked(path.parent):
        # Something other than a file there (a FIFO, whose read waits for ever; a symlink to itself) is not
        # the user's settings to edit, nor to replace.
        why = not_a_file(path)
        if why is not None:
            raise ConfigWriteError(why)
        try:
            text = read_regular(path).decode("utf-8") if path.exists() else ""
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigWriteError(f"it cannot be read ({type(exc).__name__})") from None
        current = _mapping(text)
        value = change(current.get(key))
        new = _appended(text, current, key, value) or _replace(text, current, key, value)
        if new != text:
            try:
                write_atomic(path, new)
            except OSError as exc:
                raise ConfigWriteError(f"it cannot be written ({type(exc).__name__}: {exc.strerror or exc})") from None
        return value
