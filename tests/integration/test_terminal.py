"""What a person sees: the CLI run in a real pseudo-terminal, colours and all."""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import sys
import time

from conftest import SRC
from hermes_world import World

ANSI = re.compile(r"\x1b\[[0-9;]*m")


def run_in_terminal(args: list[str], env: dict, timeout: float = 240.0) -> tuple[int, str]:
    """Run the CLI with a pty as its terminal; returns (exit code, everything it printed)."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "project_history_recall.cli", *args], stdin=follower,
                            stdout=follower, stderr=follower, env=env, close_fds=True)
    os.close(follower)
    chunks, deadline = [], time.time() + timeout
    poller = select.poll()  # select() cannot watch descriptors above 1024
    poller.register(leader, select.POLLIN)
    try:
        while time.time() < deadline:
            if poller.poll(200):
                try:
                    data = os.read(leader, 65536)
                except OSError:  # the child closed the terminal
                    break
                if not data:
                    break
                chunks.append(data)
            elif proc.poll() is not None:
                break
    finally:
        os.close(leader)
    code = proc.wait(timeout=30)
    return code, b"".join(chunks).decode("utf-8", "replace")


def _env(home) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    env.update(HERMES_HOME=str(home), PYTHONPATH=str(SRC), TERM="xterm-256color", COLUMNS="100")
    return env


def test_first_run_without_a_hermes_home_shows_real_demo_searches(tmp_path):
    code, out = run_in_terminal(["quickstart"], _env(tmp_path / "no-such-home"))
    plain = ANSI.sub("", out)
    assert code == 0, out[-2000:]
    assert "Traceback" not in plain
    assert "built a demo home with Hermes's own SessionDB" in plain
    for title in ("Fix flaky websocket reconnect", "修改支付服务端超时"):
        assert title in plain
    assert "\x1b[1;33m" in out  # the matched words are highlighted in a terminal
    assert "@session:default/" in plain


def test_search_in_a_terminal_highlights_and_links(home, work):
    w = World(home)
    app = work / "app"
    app.mkdir()
    w.project("App", app)
    sid = w.session(("user", "the websocket reconnect loop is flaky"), cwd=app, title="Fix websocket")
    w.close()
    code, out = run_in_terminal(["search", "websocket", "--dir", str(app), "--mode", "keyword"], _env(home))
    plain = ANSI.sub("", out)
    assert code == 0, out
    assert "Fix websocket" in plain and f"@session:default/{sid}" in plain
    assert "\x1b[1;33mwebsocket\x1b[0m" in out
    code, out = run_in_terminal(["search", "zzzznothing", "--dir", str(app), "--mode", "keyword"], _env(home))
    assert code == 1 and "Nothing found" in ANSI.sub("", out)
