"""Hits turned into what a person or a model reads: snippet, context entries, link."""

from __future__ import annotations

import re
import time
import unicodedata
from dataclasses import dataclass
from typing import Callable

from . import textfold
from .hermes.messages import MessageRow
from .keyword import cjk
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


def _blanked(folded: str) -> str:
    """``folded`` with each CJK character a space, in its place: the index reads a word beside one as a
    word (``youer`` in 修改youer服务端)."""
    return cjk.SCRIPT_RUN.sub(lambda m: " " * (m.end() - m.start()), folded) if not folded.isascii() else folded


@dataclass(frozen=True)
class Marks:
    """What a snippet marks: the query's terms where the index found them, in the text as it folds it
    (``textfold``: ``ＡＰＩ``, ``Straße``, a word across a zero-width space are found as ``api``,
    ``strasse``, the word), with CJK characters taken for spaces around ``words``."""

    words: re.Pattern | None
    others: re.Pattern | None

    def found(self, text: str, every: bool = True) -> list[tuple[int, int]]:
        """Where in ``text`` the terms stand, in order, overlapping ones joined; only where the first
        does unless ``every``."""
        folded, shifts = textfold.folded_each(text)
        views = [(self.words, _blanked(folded))] if self.words is not None else []
        if self.others is not None:
            views.append((self.others, folded))
        if every:
            spans = [m.span() for pattern, view in views for m in pattern.finditer(view)]
        else:
            spans = [m.span() for m in (pattern.search(view) for pattern, view in views) if m is not None]
        if shifts is not None:  # positions in the fold, back to those in the text
            spans = [(shifts.start(s), shifts.end(e)) for s, e in spans]
        joined: list[tuple[int, int]] = []
        for start, end in sorted(spans):
            if joined and start < joined[-1][1]:
                joined[-1] = (joined[-1][0], max(end, joined[-1][1]))
            else:
                joined.append((start, end))
        return joined if every else joined[:1]


def _marked(text: str, spans: list[tuple[int, int]]) -> str:
    out, at = [], 0
    for start, end in spans:
        out += [text[at:start], MARK_OPEN, text[start:end], MARK_CLOSE]
        at = end
    return "".join(out) + text[at:]


def term_marks(query: ParsedQuery) -> Marks | None:
    words, others = [], []
    for term in sorted(query.terms, key=lambda t: -len(t.text)):
        if term.kind == "word":  # never CJK: ``querytext`` cuts a CJK run into "cjk" terms; folded already
            text = re.escape(term.text)
            stem = re.escape(term.stem) + r"\w*" if term.stem else text
            words.append(rf"(?<!\w)(?:{text}|{stem})(?!\w)")
        elif folded := textfold.normalise(term.text):
            others.append(re.escape(folded))
    if not words and not others:
        return None
    return Marks(*(re.compile("|".join(parts)) if parts else None for parts in (words, others)))


# Secrets are masked in a piece cut ``MARGIN`` characters wider on each side than what is
# shown (masking all of a long message for a few hundred characters of it costs seconds), and
# the shown part is cut and marked only then: a marker inside a key (``sk->>>proj<<<-…``) or a
# cut through one leaves a string no mask recognises, and a key that straddles the piece's edge
# lies in the margin, never in what is shown.

def _clip(text: str, limit: int, mask: Callable[[str], str]) -> str:
    flat = " ".join(text.split())
    piece = mask(flat[: limit + MARGIN])
    return piece if len(piece) <= limit and len(flat) <= limit + MARGIN else piece[: limit - 1] + "…"


def snippet(text: str, marks: Marks | None, mask: Callable[[str], str], width: int = SNIPPET_CHARS) -> str:
    """A window of ``text`` around the first match, secrets masked, matches wrapped in >>> <<<. A text
    with a match is shown NFC-composed: a decomposed accent (as macOS writes one) is found so."""
    flat = " ".join(text.split())
    composed = flat if unicodedata.is_normalized("NFC", flat) else unicodedata.normalize("NFC", flat)
    # A text shown whole is searched once; in a longer one the first match is looked for, and what is
    # shown of it is searched again.
    whole = len(composed) <= width
    spans = marks.found(composed, every=whole) if marks else []
    if marks is None or not spans:
        return _clip(flat, width, mask)
    flat = composed
    complete: str | None = composed if whole else None  # the text ``spans`` holds every match of
    low = max(0, spans[0][0] - width // 3 - MARGIN)
    high = min(len(flat), spans[0][1] + width + MARGIN)
    piece = mask(flat[low:high])
    if piece != flat:
        spans, complete = marks.found(piece, every=False), None  # none: the match was inside a secret, now masked
    start = max(0, spans[0][0] - width // 3) if spans else 0
    end = min(len(piece), start + width)
    start = max(0, min(start, end - width))
    cut = piece[start:end]
    marked = _marked(cut, spans if cut == complete else marks.found(cut))
    return ("…" if low + start > 0 else "") + marked + ("…" if end < len(piece) or high < len(flat) else "")


def context_entry(row: MessageRow, anchor_id: int, mask: Callable[[str], str]) -> dict:
    entry = {"message_id": row.id, "role": row.role, "when": when(row.timestamp),
             "text": _clip(row.shown, CONTEXT_CHARS, mask)}
    if row.tool_name:
        entry["tool_name"] = row.tool_name
    if row.id == anchor_id:
        entry["hit"] = True
    return entry
