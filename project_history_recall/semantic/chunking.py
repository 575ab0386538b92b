"""Message text cut into the pieces that get one vector each. Pure.

The default model (USE multilingual, a deep-averaging network) averages over
its whole input, so a long message would dilute into one vague vector: long
text is cut into chunks of about ``size`` characters, preferably at a
paragraph, sentence or word boundary, with ``overlap`` characters repeated so
a thought that straddles a cut is still whole in one chunk.
"""

from __future__ import annotations

import hashlib
import re

_SPACE = re.compile(r"[ \t\r\f\v]+")
_BLANK_LINES = re.compile(r"\n\s*\n+")
# Places to cut, best first: a paragraph, a line, the end of a sentence
# (Latin or CJK punctuation), any space.
_CUTS = (re.compile(r"\n\n"), re.compile(r"\n"), re.compile(r"[.!?。！？；;](?:\s|$)|[。！？]"), re.compile(r"\s"))


def prepare(text: str) -> str:
    """The text that is embedded and hashed: spaces folded, blank lines kept as one."""
    text = _BLANK_LINES.sub("\n\n", text.replace("\x00", " "))
    return "\n".join(_SPACE.sub(" ", line).strip() for line in text.split("\n")).strip()


def content_hash(prepared: str) -> str:
    """Identifies a message's text; stored with each of its chunks."""
    return hashlib.blake2b(prepared.encode("utf-8", "surrogatepass"), digest_size=12).hexdigest()


def _cut(text: str, start: int, size: int) -> int:
    """Where the chunk starting at ``start`` should end (exclusive)."""
    hard = start + size
    if hard >= len(text):
        return len(text)
    window = text[start:hard]
    floor = size // 2  # never cut so early that chunks become tiny
    for pattern in _CUTS:
        best = -1
        for m in pattern.finditer(window):
            if m.end() > floor:
                best = m.end()
        if best > 0:
            return start + best
    return hard


def kept_overlap(size: int, overlap: int) -> int:
    """The overlap ``split`` keeps of the setting: at most half a chunk. Each chunk would otherwise
    start a few characters after the last (100 and 99, both valid settings: a chunk a character)."""
    return max(0, min(overlap, size // 2))


def split(text: str, size: int, overlap: int) -> list[tuple[int, str]]:
    """``[(offset, chunk)]`` covering ``text``; one chunk when it fits."""
    if not text:
        return []
    if len(text) <= size:
        return [(0, text)]
    overlap = kept_overlap(size, overlap)
    out: list[tuple[int, str]] = []
    start = 0
    while start < len(text):
        end = _cut(text, start, size)
        raw = text[start:end]
        piece = raw.strip()
        if piece:
            out.append((start + len(raw) - len(raw.lstrip()), piece))
        if end >= len(text):
            break
        nxt = max(end - overlap, start + 1)
        # Start the overlap at a word boundary so no chunk begins mid-word.
        space = text.find(" ", nxt, end)
        start = space + 1 if overlap and 0 <= space < end - 1 else nxt
    return out
