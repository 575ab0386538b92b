"""Hits turned into what a person or a model reads: snippet, context entries, link."""

from __future__ import annotations

import re
import time
from typing import Callable

from .hermes.messages import MessageRow
from .keyword.querytext import ParsedQuery
from .redaction import MARGIN

SNIPPET_CHARS = 240
CONTEXT_CHARS = 400
MARK_OPEN, MARK_CLOSE = ">>>", "<<<"


def when(ts: float | None) -> str:
    if not ts:
        return ""
    try:
        return time.strftime("%Y-%m-%d %H:%M", time.localtime(float(ts)))
    except (OverflowError, OSError, ValueError):
        return ""


def warnings_field(warnings: tuple[str, ...]) -> dict:
    """A response's ``warnings`` entry: what it was answered without (a damaged ``recall.db``), none
    when nothing was missing."""
    return {"warnings": list(warnings)} if warnings else {}


def link(profile: str, session_id: str) -> str:
    """The reference Hermes's desktop renders and ``session_search`` reads back."""
    return f"@session:{profile}/{session_id}"


def term_pattern(query: ParsedQuery) -> re.Pattern | None:
    parts = []
    for term in sorted(query.terms, key=lambda t: -len(t.text)):
        text = re.escape(term.text)
        if term.kind == "word":  # never CJK: ``querytext`` cuts a CJK run into "cjk" terms
            stem = re.escape(term.stem) + r"\w*" if term.stem else text
            parts.append(rf"(?<!\w)(?:{text}|{stem})(?!\w)")
        else:
            parts.append(text)
    if not parts:
        return None
    return re.compile("|".join(parts), re.IGNORECASE)


# Secrets are masked in a piece cut ``MARGIN`` characters wider on each side than what is
# shown (masking all of a long message for a few hundred characters of it costs seconds), and
# the shown part is cut and marked only then: a marker inside a key (``sk->>>proj<<<-…``) or a
# cut through one leaves a string no mask recognises, and a key that straddles the piece's edge
# lies in the margin, never in what is shown.

def _clip(text: str, limit: int, mask: Callable[[str], str]) -> str:
    flat = " ".join(text.split())
    piece = mask(flat[: limit + MARGIN])
    return piece if len(piece) <= limit and len(flat) <= limit + MARGIN else piece[: limit - 1] + "…"


def snippet(text: str, pattern: re.Pattern | None, mask: Callable[[str], str], width: int = SNIPPET_CHARS) -> str:
    """A window of ``text`` around the first match, secrets masked, matches wrapped in >>> <<<."""
    flat = " ".join(text.split())
    first = pattern.search(flat) if pattern else None
    if pattern is None or first is None:
        return _clip(flat, width, mask)
    low = max(0, first.start() - width // 3 - MARGIN)
    high = min(len(flat), first.end() + width + MARGIN)
    piece = mask(flat[low:high])
    found = pattern.search(piece)  # None: the match was inside a secret, now masked
    start = max(0, found.start() - width // 3) if found else 0
    end = min(len(piece), start + width)
    start = max(0, min(start, end - width))
    marked = pattern.sub(lambda m: f"{MARK_OPEN}{m.group(0)}{MARK_CLOSE}", piece[start:end])
    return ("…" if low + start > 0 else "") + marked + ("…" if end < len(piece) or high < len(flat) else "")


def context_entry(row: MessageRow, anchor_id: int, mask: Callable[[str], str]) -> dict:
    entry = {"message_id": row.id, "role": row.role, "when": when(row.timestamp),
             "text": _clip(row.shown, CONTEXT_CHARS, mask)}
    if row.tool_name:
        entry["tool_name"] = row.tool_name
    if row.id == anchor_id:
        entry["hit"] = True
    return entry
