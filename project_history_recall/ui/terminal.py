"""Text for a terminal: what the searched history says, never what it could make a terminal do.

History holds pasted logs, fetched pages and what gateway users typed, so a title, a message or
a project name can carry escape sequences that clear the screen, set the window title, write the
clipboard (OSC 52) or ring the bell, C1 controls that terminals obey like escapes (U+009B is a
one-character CSI), and bidi controls that show text in another order than it is stored (U+202E).
Each such character becomes a visible ``\\uXXXX``: the reader sees that something was there, and
the same escape inside a JSON string reads back as the very character, so JSON stays exact.
"""

from __future__ import annotations

import os
import re
import secrets
import unicodedata

# C0 controls but the newline, DEL and C1; and Unicode's Bidi_Control characters (ALM, LRM, RLM,
# the embeddings and overrides U+202A-U+202E, the isolates U+2066-U+2069).
_UNSAFE = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def is_terminal(stream) -> bool:
    """Whether ``stream`` is a terminal; a stream closed when the command started (``<&-``, ``2>&-``) is
    None in Python, and no terminal."""
    return stream is not None and stream.isatty()


def takes_escapes(stream) -> bool:
    """Whether ``stream`` is a terminal that reads escape sequences: ``TERM=dumb`` (Emacs's shell, some
    CI consoles) says it does not, and Hermes's own colours (``hermes_cli.colors``) stay off there."""
    return is_terminal(stream) and os.environ.get("TERM") != "dumb"


def shown(text: str) -> str:
    """``text`` with every character that acts on a terminal, or reorders what it shows, escaped."""
    return _UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def columns(stream, fallback: int = 80) -> int:
    """The width of the terminal ``stream`` writes to: ``COLUMNS`` when set, else the window's. Not
    ``shutil.get_terminal_size``, which asks stdout's: with ``… > log`` a line drawn on stderr, the
    terminal, was given the file's fallback width."""
    try:
        return max(int(os.environ.get("COLUMNS", "")), 0) or _window(stream) or fallback
    except ValueError:
        return _window(stream) or fallback


def _window(stream) -> int:
    try:
        return os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, ValueError, OSError):  # closed, or not a terminal
        return 0


def cells(text: str) -> int:
    """The columns a terminal gives ``text``: two for a wide (Chinese, Japanese, Korean) character,
    none for a combining mark."""
    return sum(_cell(ch) for ch in text)


def cut(text: str, room: int) -> str:
    """The longest start of ``text`` that fits in ``room`` columns."""
    used = 0
    for i, ch in enumerate(text):
        used += _cell(ch)
        if used > room:
            return text[:i]
    return text


def _cell(ch: str) -> int:
    if unicodedata.combining(ch):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in "WF" else 1


class Screen:
    """``shown`` for one process, plus colours that only this process can place.

    A colour is placed as a placeholder holding a tag drawn at random per process; ``shown``
    escapes every control character first and only then turns placeholders into SGR sequences.
    History cannot know the tag, so it can neither colour text nor slip a sequence through.
    """

    def __init__(self):
        self._tag = secrets.token_hex(8)
        self._placed = re.compile(f"\ue000{self._tag}([0-9;]*)\ue001")

    def sgr(self, code: str) -> str:
        return f"\ue000{self._tag}{code}\ue001"

    def shown(self, text: str) -> str:
        return self._placed.sub(lambda m: f"\x1b[{m.group(1)}m", shown(text))
