"""Message text cut into the pieces that get one vector each. Pure.

The default model (USE multilingual, a deep-averaging network) averages over
its whole input, so a long message would dilute into one vague vector: long
text is cut into chunks of about ``size`` characters, preferably at a
paragraph, sentence or word boundary, with ``overlap`` characters repeated so
a thought that straddles a cut is still whole in one chunk.

A short message is embedded after the messages just before it in its session
(``after_earlier``), as many as fit in one chunk with it: a reply ("六点 在南山文体
中心", "Yes, last week!") says little without what it answers. A message of
``SHORT_MESSAGE`` characters or more says enough alone and is embedded as it is.
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


# Below this many characters a message is read with what it answers. Half or more of the messages of
# Chinese chats and texts (a median of 14-19 characters in zh-daily, zh-sms and zh-life), few of
# LoCoMo-zh's (6%, a median of 47) or LoCoMo's (1%, a median of 109): every message embedded with
# its two before lifted semantic search everywhere, but blended into hybrid it lost questions of
# zh-daily, LoCoMo and LoCoMo-zh, whose longer turns say enough alone.
SHORT_MESSAGE = 20


def is_short(text: str) -> bool:
    """Whether a message of ``text`` (``prepare``d) is read with what it answers (``after_earlier``)."""
    return 0 < len(text) < SHORT_MESSAGE


def after_earlier(earlier: list[str], text: str, size: int, count: int) -> str:
    """What a message of ``text`` is embedded as (both ``prepare``d): a short one (``is_short``) after
    the last ``count`` of ``earlier``, the texts of its session's messages before it in order, those
    of them that fit whole in one chunk of ``size`` characters with it (the nearest first), a line
    apart; any other as it is. Only earlier messages: a message's text never changes when its
    session goes on, so what was embedded stays right."""
    if not is_short(text):
        return text
    kept = [text]
    room = size - len(text)
    for before in reversed(earlier[-count:] if count else []):
        room -= len(before) + 1
        if room < 0:
            break
        kept.append(before)
    return "\n".join(reversed(kept))
