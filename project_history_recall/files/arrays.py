"""Arrays kept in one file between processes: read back whole and checked, or not at all.

What a process rebuilds slowly from another source (a project's vectors from
``embeddings.db`` row by row) is saved here as one contiguous file, so the next
process reads it in one go. The file is only ever a copy: one that is
missing, cut short, altered, or saved for something else reads as None, and
the caller rebuilds from the source as if it had never been saved.

Layout: a magic line, the header's length and its JSON (the caller's fields
and each array's dtype and shape), the arrays' bytes each at a 64-byte
boundary, then the CRC-32 of everything after the magic line. Written to a
temporary file in the same folder and moved into place with one
``os.replace``, so a reader sees the old file or the new one, never half.

A file nobody will read again (``prune``) is deleted, never truncated: a
process still reading or mapping it keeps the old contents (on Linux a
removed file lives on while it is open or mapped; where it cannot be removed
while open, it stays until a later prune).
"""

from __future__ import annotations

import json
import logging
import os
import re
import struct
import threading
import time
import zlib
from collections.abc import Container
from contextlib import suppress
from pathlib import Path

from .filestamp import open_regular
from .folders import make_own

logger = logging.getLogger(__name__)

MAGIC = b"project-history-recall arrays 1\n"
_ALIGN = 64
_READ = 1 << 20  # bytes read at a time while checking a file whose arrays are mapped, not read
# A temporary file (``save``'s, below) this old was left by a writer that died mid-save: a save takes seconds.
ABANDONED = 3600.0
_TEMPORARY = re.compile(r"\.(.+)\.\d+\.\d+\.tmp")


class _Unusable(Exception):
    """The file is not exactly what ``save`` wrote."""


def _pad(at: int) -> int:
    return -at % _ALIGN


def save(path: Path, fields: dict, arrays: list) -> bool:
    """Write ``arrays`` (numpy arrays) and ``fields`` (JSON values) to ``path``; False if the
    file could not be written (a full disk, a read-only folder: the caller goes on without it)."""
    import numpy as np

    parts = [np.ascontiguousarray(a) for a in arrays]
    header = json.dumps({"fields": fields, "arrays": [[a.dtype.str, list(a.shape)] for a in parts]}).encode()
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")  # one per writer (_TEMPORARY)
    try:
        for folder in (path.parent.parent, path.parent):  # the data folder, then the file's own
            make_own(folder)
        with open(tmp, "wb") as fh:
            fh.write(MAGIC)
            head = struct.pack("<Q", len(header)) + header
            head += b"\0" * _pad(len(MAGIC) + len(head))
            fh.write(head)
            crc = zlib.crc32(head)
            for a in parts:
                body = a.data.cast("B") if a.size else b""
                fh.write(body)
                crc = zlib.crc32(body, crc)
                gap = b"\0" * _pad(len(body))
                fh.write(gap)
                crc = zlib.crc32(gap, crc)
            fh.write(struct.pack("<I", crc))
        os.replace(tmp, path)
        return True
    except OSError as exc:
        logger.warning("could not save %s (it is rebuilt when needed): %s", path, exc)
        with suppress(OSError):
            tmp.unlink(missing_ok=True)
        return False


def prune(folder: Path, ours: re.Pattern[str], keep: Container[str], unused_for: float = 0.0) -> list[str]:
    """Delete the files ``save`` wrote in ``folder`` that will not be read again: those whose
    whole name ``ours`` matches, except the names in ``keep`` and those read or written within
    ``unused_for`` seconds, and the temporary files of such names that a writer left behind
    (untouched for ``ABANDONED``). Anything else is left alone. The names deleted; one that
    cannot be deleted is skipped."""
    try:
        entries = list(os.scandir(folder))
    except OSError:  # no folder: nothing was saved
        return []
    now, gone = time.time(), []
    for entry in entries:
        left = _TEMPORARY.fullmatch(entry.name)
        if not ours.fullmatch(left.group(1) if left else entry.name) or (left is None and entry.name in keep):
            continue
        idle = ABANDONED if left else unused_for
        try:
            if not entry.is_file(follow_symlinks=False):
                continue
            st = entry.stat(follow_symlinks=False)
            if idle and now - max(st.st_atime, st.st_mtime) < idle:
                continue  # a save under way, or a file another process may still read
            os.unlink(entry.path)
        except OSError as exc:
            logger.info("could not delete %s (it is tried again later): %s", entry.path, exc)
            continue
        gone.append(entry.name)
    if gone:
        logger.info("deleted %d saved file(s) no longer used from %s: %s", len(gone), folder, ", ".join(gone))
    return gone


def load(path: Path, mapped: bool = False, spare: int = 0) -> tuple[dict, list] | None:
    """(``fields``, arrays) as ``save`` wrote them, or None when the file is missing or is not
    exactly such a file. ``mapped``: the arrays are read-only maps of the file (their pages
    come from the disk cache as they are used) instead of copies in memory. ``spare``: each
    array (not mapped) gets that many more rows, uninitialised, to grow into without a copy
    (pages never written take no memory)."""
    import numpy as np

    try:
        with open_regular(path) as fh:
            size = os.fstat(fh.fileno()).st_size
            if fh.read(len(MAGIC)) != MAGIC:
                raise _Unusable("not such a file")
            (length,) = struct.unpack("<Q", fh.read(8))
            if length > size:
                raise _Unusable("cut short")
            raw = fh.read(length)
            described = json.loads(raw)
            at = len(MAGIC) + 8 + length
            head_pad = fh.read(_pad(at))
            crc = zlib.crc32(head_pad, zlib.crc32(raw, zlib.crc32(struct.pack("<Q", length))))
            at += len(head_pad)
            arrays, offsets = [], []
            for dtype, shape in described["arrays"]:
                nbytes = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
                if at + nbytes + _pad(nbytes) + 4 > size:
                    raise _Unusable("cut short")
                offsets.append(at)
                if mapped:
                    crc = _crc_of(fh, nbytes + _pad(nbytes), crc)
                else:
                    grown = np.empty((shape[0] + spare, *shape[1:]), dtype=dtype)
                    body = grown[: shape[0]].data.cast("B") if nbytes else b""
                    if nbytes and fh.readinto(body) != nbytes:
                        raise _Unusable("cut short")
                    crc = zlib.crc32(fh.read(_pad(nbytes)), zlib.crc32(body, crc))
                    arrays.append(grown)
                at += nbytes + _pad(nbytes)
            trailer = fh.read(4)
            if len(trailer) != 4 or struct.unpack("<I", trailer)[0] != crc or fh.read(1):
                raise _Unusable("its checksum does not match")
            if mapped:  # the file just checked, through its open handle (a newer one may replace it by now)
                arrays = [np.memmap(fh, dtype=dtype, mode="r", offset=off, shape=tuple(shape)).view(np.ndarray)
                          if int(np.prod(shape)) else np.empty(shape, dtype=dtype)
                          for (dtype, shape), off in zip(described["arrays"], offsets, strict=True)]
    except FileNotFoundError:
        return None
    except (_Unusable, OSError, ValueError, KeyError, TypeError, IndexError, struct.error) as exc:
        logger.info("not using %s (%s); rebuilding what it held", path, exc)
        return None
    return described["fields"], arrays


def _crc_of(fh, nbytes: int, crc: int) -> int:
    while nbytes > 0:
        block = fh.read(min(_READ, nbytes))
        if not block:
            raise _Unusable("cut short")
        crc = zlib.crc32(block, crc)
        nbytes -= len(block)
    return crc
