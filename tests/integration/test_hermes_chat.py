"""A real interactive ``hermes chat`` in a pseudo-terminal: what a person types and sees.

No model is called: slash commands run before anything is sent, and the
configured endpoint is a closed local port.
"""

from __future__ import annotations

import os

from cli_runs import HERMES_BIN
from hermes_world import World, enable_plugin, only_on
from pty_terminal import Terminal, plain


@only_on((0, 19), "0.22's chat first asks about shared metrics, and after that the line typed into this "
                  "pseudo-terminal never reached /recall (not solved yet); /recall on 0.22 runs in "
                  "test_slash_and_skill")
def test_recall_and_the_tool_list_in_a_real_hermes_chat(home, work, tmp_path):
    w = World(home)
    app = work / "app"
    app.mkdir()
    w.project("App", app)
    hit = w.session(("user", "the websocket reconnect loop is flaky"), ("assistant", "added backoff 超时 handling"),
                    cwd=app, title="Fix websocket")
    w.session(("user", "websocket in another project"), cwd=work)
    w.close()
    enable_plugin(home)
    with (home / "config.yaml").open("a", encoding="utf-8") as config:
        config.write("model:\n  provider: custom\n  base_url: http://127.0.0.1:9/v1\n  default: no-model\n")
    (home / ".env").write_text("OPENAI_API_KEY=not-a-key\n", encoding="utf-8")
    user_home = tmp_path / "person"
    user_home.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "PYTHONPATH")}
    env.update(HERMES_HOME=str(home), HOME=str(user_home), TERM="xterm-256color", COLUMNS="140", LINES="50")

    term = Terminal([str(HERMES_BIN), "chat", "--cli"], env, cwd=app)
    try:
        term.wait_for("❯", timeout=180)
        term.type("/recall websocket")
        shown = term.wait_for(f"@session:default/{hit}")
        assert "project App" in shown and "Fix websocket" in shown and "«websocket»" in shown
        assert "another project" not in shown
        term.type("/recall 超时")
        assert "超时" in term.wait_for(f"@session:default/{hit}")
        term.type("/recall status")
        assert "attributed by: folder" in term.wait_for("hermes home:")
        term.type("/tools")
        tools = term.wait_for("Total:")
        assert "[project_history]" in tools
        assert "project_history_search - Search earlier sessions of THIS project" in tools
        assert "project_session_move - Move a session into another project" in tools
        term.type("/exit")
        term.wait_for("Goodbye", timeout=60)
    finally:
        term.close()
    screen = plain(term.raw)
    assert "Traceback" not in screen and "Plugin command error" not in screen
