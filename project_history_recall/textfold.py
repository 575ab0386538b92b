"""Text as the plugin compares it: the keyword index and a question's words, a project's name and a
reference to it, a session's title. Pure.

NFKC folds compatibility forms (``ＡＰＩ`` is ``API``, decomposed accents as macOS writes them are
composed) and case folding the capitals. A few characters neither reaches are folded here, the same
way on both sides of every comparison.
"""

from __future__ import annotations

import re
import unicodedata
from itertools import chain

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
