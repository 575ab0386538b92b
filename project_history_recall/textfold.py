"""Text as the plugin compares it: the keyword index and a question's words, a project's name and a
reference to it, a session's title. Pure.

NFKC folds compatibility forms (``ＡＰＩ`` is ``API``, decomposed accents as macOS writes them are
composed) and case folding the capitals. A few characters neither reaches are folded here, the same
way on both sides of every comparison.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from itertools import accumulate, chain
from typing import Iterator

# Characters that break no word where they stand, yet cut it in two for a tokenizer: a zero-width
# space, a soft hyphen, a word joiner, a byte-order mark (web pages and editors leave them inside
# words). Deleted. The joiners (ZWJ, ZWNJ) stay: they belong to emoji sequences and to Persian and
# Indic spelling.
INVISIBLE = "\u00ad\u200b\u2060\ufeff"
# Hebrew points and Arabic harakat (and the tatweel that stretches an Arabic word) are written or left
# out at will, as Latin accents are: deleted (الخَادِم is الخادم), as the keyword index reads é as e.
# Inside a word they also cut it in two for the index, which keeps marks in no token.
_ABJAD_MARKS = "\u0640" + "".join(chr(c) for c in chain(range(0x0591, 0x05C8), range(0x0610, 0x06EE))
                                   if unicodedata.category(chr(c)) == "Mn")
# After case folding: the Turkish capital İ casefolds to i with a combining dot above, and dotless ı
# stays itself, so DIŞ (Turkish dış) folds to diş, TOPLANTI to toplanti and İZMİR to neither izmir
# nor İzmir's fold. Both read as i.
_FOLDS = {**dict.fromkeys(map(ord, INVISIBLE + _ABJAD_MARKS)), ord("ı"): "i"}
# The characters ``_FOLDS`` changes: looking for them costs a message ~1 µs, where folding every
# Chinese message made it ~20 µs (of ~140) slower to index.
_TO_FOLD = re.compile("[" + re.escape(INVISIBLE + _ABJAD_MARKS) + "ı\u0307]")


def normalise(text: str) -> str:
    """``text`` as it is compared: compatibility forms folded (``ＡＰＩ`` → ``api``), case folded,
    invisible breaks and Hebrew and Arabic vowel marks deleted, Turkish i's made one."""
    text = unicodedata.normalize("NFKC", text).casefold()
    if text.isascii() or not _TO_FOLD.search(text):
        return text
    return text.translate(_FOLDS).replace("i\u0307", "i")


# -- where a fold's characters came from (a snippet marks what was found in the text as written) --------

_KEPT = 1 << 16  # characters whose fold is kept: bounds what a text of every character could take


class _EachCharacter(dict):
    """``normalise`` of each character, by code point (the key ``str.translate`` asks for). A fold of one
    character is kept once asked: a history holds few distinct characters. Any other (deleted, or
    several) is asked for again at each of its places, so that the caller learns which the text held
    (``_asked``): positions in the fold differ from those in the text after them."""

    def __missing__(self, code: int) -> str:
        folded = _uneven.get(code)
        if folded is None:
            folded = normalise(chr(code))
            if len(folded) == 1:
                if len(self) < _KEPT:
                    self[code] = folded
                return folded
            if len(_uneven) < _KEPT:
                _uneven[code] = folded
        _asked.codes.add(code)
        return folded


_uneven: dict[int, str] = {}
_asked = threading.local()  # str.translate asks in the thread that calls it
_EACH = _EachCharacter()


@dataclass(frozen=True)
class Shifts:
    """Where a text's characters whose fold is not one character stand (``folded_each``), in order: in
    the text (``at``) and in the fold (``into``), and how long each one's fold is (``length``)."""

    at: tuple[int, ...]
    into: tuple[int, ...]
    length: tuple[int, ...]

    def start(self, pos: int) -> int:
        """Where in the text the character stands whose fold holds position ``pos`` of the fold."""
        k = bisect_right(self.into, pos) - 1
        if k < 0:
            return pos
        if pos < self.into[k] + self.length[k]:
            return self.at[k]
        return self.at[k] + 1 + pos - self.into[k] - self.length[k]

    def end(self, pos: int) -> int:
        """Where in the text a piece of the fold ending at ``pos`` ends: after the character that holds
        its last position, and the characters deleted right after it (a vowel mark stays on its letter)."""
        end = self.start(pos - 1) + 1
        k = bisect_left(self.at, end)
        while k < len(self.at) and self.at[k] == end and not self.length[k]:
            end, k = end + 1, k + 1
        return end


def folded_each(text: str) -> tuple[str, Shifts | None]:
    """``text`` as ``normalise`` folds it, one character at a time, and where the characters whose fold
    is not one character stand; None when there is none, and each character's fold is in its place. A
    fold that joins characters is not made: a decomposed accent stays two characters (compose the text
    first), compatibility jamo stay apart."""
    if text.isascii():
        return text.lower(), None
    # Most texts (Chinese included) hold nothing NFKC or the deletions change, nor a letter whose case
    # folds to several (ß): case folding alone, a character for a character, is their fold.
    if unicodedata.is_normalized("NFKC", text) and not _TO_FOLD.search(text):
        folded = text.casefold()
        if len(folded) == len(text):
            return folded, None
    _asked.codes = set()
    folded = text.translate(_EACH)
    if not _asked.codes:
        return folded, None
    at = sorted(i for code in _asked.codes for i in _places(text, chr(code)))
    length = tuple(len(_EACH[ord(text[i])]) for i in at)
    shifts = accumulate((n - 1 for n in length[:-1]), initial=0)  # the fold's length so far, less the text's
    return folded, Shifts(tuple(at), tuple(i + shift for i, shift in zip(at, shifts, strict=True)), length)


def _places(text: str, ch: str) -> Iterator[int]:
    at = text.find(ch)
    while at >= 0:
        yield at
        at = text.find(ch, at + 1)
