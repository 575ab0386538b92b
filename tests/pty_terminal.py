"""A program run in a real pseudo-terminal, as a person would see it."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import signal
import struct
import subprocess
import termios
import time
from pathlib import Path

# Colours, cursor movement and window titles: what a person does not read as text.
SCREEN_CODES = re.compile(r"\x1b\[[0-9;?<>=]*[a-zA-Z~]|\x1b\][^\x07]*\x07|\r")


def plain(text: str) -> str:
    return SCREEN_CODES.sub("", text)


class Terminal:
    """Starts ``argv`` with a pty as its terminal; ``raw`` is everything it printed so far."""

    def __init__(self, argv: list[str], env: dict, cwd: Path | None = None, stdout=None, columns: int | None = None):
        """``stdout``: where the program's stdout goes instead of the terminal (``subprocess.PIPE``: into a
        pipe, as in ``… | jq``); ``columns``: the terminal's width, as a window of that size tells it."""
        self._leader, follower = pty.openpty()
        if columns is not None:
            fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
        self.proc = subprocess.Popen(argv, stdin=follower, stdout=follower if stdout is None else stdout,
                                     stderr=follower, env=env, cwd=cwd, close_fds=True, start_new_session=True)
        os.close(follower)
        self._poller = select.poll()  # select() cannot watch descriptors above 1024
        self._poller.register(self._leader, select.POLLIN)
        self._chunks: list[bytes] = []
        self._open = True

    @property
    def raw(self) -> str:
        return b"".join(self._chunks).decode("utf-8", "replace")

    def _read(self) -> bool:
        """Take what arrived within 0.2 s; False once the program closed the terminal."""
        if not self._open:
            return False
        if self._poller.poll(200):
            try:
                data = os.read(self._leader, 65536)
            except OSError:  # the child closed the terminal
                data = b""
            if not data:
                self._open = False
                return False
            self._chunks.append(data)
        return True

    def wait_for(self, text: str, timeout: float = 120.0) -> str:
        """What was printed (as plain text) from now until ``text`` appears."""
        deadline, start = time.time() + timeout, len(self._chunks)
        while True:
            shown = plain(b"".join(self._chunks[start:]).decode("utf-8", "replace"))
            if text in shown:
                return shown
            assert time.time() < deadline and self._read(), f"never saw {text!r}; last output:\n{plain(self.raw)[-3000:]}"

    def type(self, line: str) -> None:
        os.write(self._leader, line.encode() + b"\r")

    def run_to_end(self, timeout: float) -> int:
        """Read until the program exits or closes the terminal; its exit code."""
        deadline = time.time() + timeout
        while time.time() < deadline and self._read():
            if self.proc.poll() is not None and not self._poller.poll(0):
                break
        return self.close()

    def close(self) -> int:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        code = self.proc.wait(timeout=30)
        if self._leader >= 0:
            os.close(self._leader)
            self._leader = -1
        return code
