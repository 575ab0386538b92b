"""What a person sees: the CLI run in a real pseudo-terminal, colours and all."""

from __future__ import annotations

import os
import sys

from conftest import SRC
from hermes_world import World
from pty_terminal import Terminal, plain


def run_in_terminal(args: list[str], env: dict, timeout: float = 240.0) -> tuple[int, str]:
    """Run the CLI with a pty as its terminal; returns (exit code, everything it printed)."""
    term = Terminal([sys.executable, "-m", "project_history_recall.ui.cli", *args], env)
    code = term.run_to_end(timeout)
    return code, term.raw


def _env(home) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    env.update(HERMES_HOME=str(home), PYTHONPATH=str(SRC), TERM="xterm-256color", COLUMNS="100")
    return env


def test_first_run_without_a_hermes_home_shows_real_demo_searches(tmp_path):
    env = _env(tmp_path / "no-such-home")
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")  # where the demo home is kept
    code, out = run_in_terminal(["quickstart"], env)
    seen = plain(out)
    assert code == 0, out[-2000:]
    assert "Traceback" not in seen
    assert "built it just now with Hermes's own SessionDB" in seen
    for title in ("Fix flaky websocket reconnect", "修改支付服务端超时"):
        assert title in seen
    assert "\x1b[1;33m" in out  # the matched words are highlighted in a terminal
    assert "@session:default/" in seen


def test_search_in_a_terminal_highlights_and_links(home, work):
    w = World(home)
    app = work / "app"
    app.mkdir()
    w.project("App", app)
    sid = w.session(("user", "the websocket reconnect loop is flaky"), cwd=app, title="Fix websocket")
    w.close()
    code, out = run_in_terminal(["search", "websocket", "--dir", str(app), "--mode", "keyword"], _env(home))
    seen = plain(out)
    assert code == 0, out
    assert "Fix websocket" in seen and f"@session:default/{sid}" in seen
    assert "\x1b[1;33mwebsocket\x1b[0m" in out
    code, out = run_in_terminal(["search", "zzzznothing", "--dir", str(app), "--mode", "keyword"], _env(home))
    assert code == 1 and "Nothing found" in plain(out)
