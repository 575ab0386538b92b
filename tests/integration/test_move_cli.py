"""``move`` and ``session`` on the command line: standalone and as ``hermes recall``."""

from __future__ import annotations

import json

from cli_runs import cli_process
from hermes_world import PLUGIN_KEY, call, session_rows

MOVE = "project_session_move"


def test_session_shows_a_move_made_by_another_process(ab, world):
    assert call(MOVE, {"project": "Beta", "session": ab["sa"]}, session_id=ab["ask_a"])["moved"]
    shown = cli_process("session", ab["sa"], "--json", home=world.home)
    info = json.loads(shown.stdout)
    assert info["project"]["id"] == ab["B"] and info["attributed_by"] == "recorded"
    assert info["moves"][0]["from"]["id"] == ab["A"] and info["moves"][0]["from_cwd"] == str(ab["alpha"] / "src")


def test_cli_move_and_session(ab, world, capsys):
    from project_history_recall.ui import cli

    home = ["--home", str(world.home)]
    assert cli.main([*home, "move", "Alpha zebra", "Beta"]) == 0
    out = capsys.readouterr().out
    assert "Moved session 'Alpha zebra'" in out and "sidebar: agrees" in out
    assert cli.main([*home, "move", ab["sa"], "beta"]) == 1  # already there: nothing to do
    assert "already in project 'Beta'" in capsys.readouterr().out
    assert cli.main([*home, "move", ab["sa"], "nope"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "No project 'nope'" in err
    assert cli.main([*home, "move", "nobody", "Beta", "--json"]) == 2
    assert json.loads(capsys.readouterr().out)["error_code"] == "unknown_session"
    assert cli.main([*home, "session", f"@session:default/{ab['sa']}"]) == 0
    out = capsys.readouterr().out
    assert "project Beta" in out and "recorded" in out and "moved" in out
    assert cli.main([*home, "session", ab["sb"], "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["attributed_by"] == "folder" and info["moves"] == []


def test_hermes_recall_move_subcommand(ab, world):
    world.db.close()
    out = cli_process("move", ab["sa"], "Beta", "--json", home=world.home, hermes=True)
    assert out.returncode == 0, out.stderr + out.stdout
    assert json.loads(out.stdout[out.stdout.index("{"):])["moved"] is True
    assert session_rows(world.home)[ab["sa"]]["cwd"] == str(ab["beta"])
    assert (world.home / PLUGIN_KEY / "recall.db").is_file()
