"""The sixteenth hostile sweep, the user's side: what people get wrong in the shell and in the files
when they set the plugin up (an option given a variable that is not set). The rule as before: the
plugin's own answer, saying what is so, nothing written where nothing should be."""

from __future__ import annotations

import pytest

from cli_runs import cli_process
from hermes_world import checkpoint, db_digest, enable_plugin, plugin_settings, websocket_app

BLANK = [["search", "websocket", "--project", ""], ["search", "websocket", "--dir", " "],
         ["search", "websocket", "--since", ""], ["search", "websocket", "--until", ""],
         ["status", ""], ["index", "--project", ""], ["index", ""], ["consent", "grant", "", "--yes"],
         ["consent", "grant", "--project", "", "--yes"]]


@pytest.mark.parametrize("hermes", [False, True], ids=["standalone", "hermes recall"])
def test_an_option_given_a_blank_value_is_refused(world, work, hermes):
    """``--project "$PROJ"``, ``index "$DIR"``, ``--since "$FROM"`` with the variable unset (or a script's
    blank field) read as the option left out: the search answered for the current folder's project,
    ``index --project ""`` indexed it, as if that had been asked. Each is now a usage error naming the
    option, and nothing is made in the data folder."""
    app, _asker = websocket_app(world, work)
    world.close()
    checkpoint(world.home)
    plugin_settings(world.home, semantic=False)
    if hermes:
        enable_plugin(world.home)
    before = db_digest(world.home / "state.db")
    for argv in BLANK:
        done = cli_process(*argv, home=world.home, cwd=app, hermes=hermes)
        said = done.stderr
        assert done.returncode == 2 and done.stdout == "" and said.count("\n") == 1, (argv, done)
        assert "is empty (an unset variable?)" in said and "Traceback" not in said, (argv, said)
    assert not (world.home / "project-history-recall" / "keywords.db").exists()
    assert db_digest(world.home / "state.db") == before


def test_a_blank_home_or_profile_is_refused(world, work):
    """``--home "$H"`` with ``H`` unset read the current folder as the Hermes home ("No Hermes session
    database at state.db"), and ``--profile "$P"`` the default profile, without a word."""
    app, _asker = websocket_app(world, work)
    world.close()
    checkpoint(world.home)
    for argv in (["--home", "", "status"], ["status", "--profile", ""], ["--profile", " ", "projects"]):
        done = cli_process(*argv, home=world.home, cwd=app)
        assert done.returncode == 2 and done.stdout == "", (argv, done)
        assert "is empty (an unset variable?)" in done.stderr and done.stderr.count("\n") == 1, (argv, done.stderr)
