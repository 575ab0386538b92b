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


def test_cli_moves_a_session_back_into_its_automatic_project(autos, world, capsys):
    from project_history_recall.ui import cli

    home = ["--home", str(world.home)]
    n1, notes = autos["n1"], str(autos["notes"])
    assert cli.main([*home, "projects"]) == 0
    assert f" notes  (auto) {notes}" in capsys.readouterr().out  # the name `move` takes, as printed
    assert cli.main([*home, "move", n1, "P"]) == 0
    capsys.readouterr()
    assert cli.main([*home, "move", n1, "notes (auto)"]) == 0
    out = capsys.readouterr().out
    assert "to automatic project 'notes'" in out and "sidebar: agrees" in out, out
    assert session_rows(world.home)[n1]["cwd"] == notes
    assert cli.main([*home, "move", n1, "notes"]) == 1  # already there
    assert "already in automatic project 'notes'" in capsys.readouterr().out
    assert cli.main([*home, "session", n1, "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["project"] == {"kind": "auto", "id": notes, "name": "notes"} and info["attributed_by"] == "workspace"
    assert [(m["from"]["kind"], m["to"]["kind"], m["to"]["name"]) for m in info["moves"]] == \
        [("auto", "explicit", "P"), ("explicit", "auto", "notes")]
    assert cli.main([*home, "session", n1]) == 0
    assert f"project P ({autos['P']}) -> automatic project notes ({notes})" in capsys.readouterr().out


def test_hermes_recall_move_back_through_hermes(autos, world):
    world.db.close()
    for target in ("P", "gitrepo (auto)"):
        out = cli_process("move", autos["g1"], target, "--json", home=world.home, hermes=True)
        assert out.returncode == 0, out.stderr + out.stdout
        assert json.loads(out.stdout[out.stdout.index("{"):])["moved"] is True
    row = session_rows(world.home)[autos["g1"]]
    assert (row["cwd"], row["git_branch"], row["git_repo_root"]) == (str(autos["repo"]), "dev", str(autos["repo"]))


def test_a_project_named_by_a_folder_relative_to_this_one(ab, world):
    """``move SESSION .`` in a project's folder, ``search --project ../beta`` beside it, ``index
    --project ./alpha`` above it: the command line handed the library the text as typed, and the
    library, which has no folder of its own, takes a folder only whole, so each said "No project '.'
    in this profile" (or './alpha'). A folder relative to the one the command runs in is made whole
    first, lexically, as ``--dir ../beta`` already is."""
    work = ab["alpha"].parent
    for hermes in (False, True):
        moved = cli_process("--json", "move", ab["sb"], ".", home=world.home, cwd=ab["alpha"], hermes=hermes)
        assert json.loads(moved.stdout)["moved"], moved.stdout + moved.stderr
        back = cli_process("--json", "move", ab["sb"], "../beta", home=world.home, cwd=ab["alpha"], hermes=hermes)
        assert json.loads(back.stdout)["moved"], back.stdout + back.stderr
        found = cli_process("--json", "search", "zebra", "--project", "../beta", home=world.home, cwd=ab["alpha"],
                            hermes=hermes)
        assert json.loads(found.stdout)["project"]["id"] == ab["B"], found.stdout + found.stderr
        indexed = cli_process("--json", "index", "--project", "./alpha", home=world.home, cwd=work, hermes=hermes)
        assert indexed.returncode == 0 and json.loads(indexed.stdout)["success"], indexed.stdout + indexed.stderr
    assert session_rows(world.home)[ab["sb"]]["cwd"] == str(ab["beta"])
