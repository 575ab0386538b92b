"""The sixteenth hostile sweep, the user's side: what people get wrong in the shell and in the files
when they set the plugin up (an option given a variable that is not set). The rule as before: the
plugin's own answer, saying what is so, nothing written where nothing should be."""

from __future__ import annotations

import pytest

from cli_runs import cli_process
from hermes_world import checkpoint, db_digest, enable_plugin, one_session_project, plugin_settings

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
    app = one_session_project(world, work, "App", ("user", "the websocket reconnect loop is flaky"))
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
    app = one_session_project(world, work, "App", ("user", "the websocket reconnect loop is flaky"))
    for argv in (["--home", "", "status"], ["status", "--profile", ""], ["--profile", " ", "projects"]):
        done = cli_process(*argv, home=world.home, cwd=app)
        assert done.returncode == 2 and done.stdout == "", (argv, done)
        assert "is empty (an unset variable?)" in done.stderr and done.stderr.count("\n") == 1, (argv, done.stderr)


def _profile_with(root, work, words: str, monkeypatch):
    """A Hermes home at ``root`` (a profile's, or the root's) whose project App (``work/app``) holds one
    session saying ``words``, the plugin enabled and keyword-only."""
    from hermes_world import World

    root.mkdir(parents=True, exist_ok=True)
    world = World(root)
    app = work / "app"
    app.mkdir(exist_ok=True)
    world.project("App", app)
    world.session(("user", words), cwd=app)
    world.close()
    checkpoint(root)
    plugin_settings(root, semantic=False)
    monkeypatch.setenv("HERMES_HOME", str(root))  # where Hermes's plugin manager looks
    enable_plugin(root)
    return app


def test_the_profile_hermes_profile_use_chose_is_the_one_read(tmp_path, work, monkeypatch):
    """After ``hermes profile use work``, ``hermes recall`` reads profile work (Hermes's command line reads
    the root's ``active_profile`` when no ``--profile`` is given), but the standalone command, the
    README's and ``scripts/recall``'s, read the default profile, and Hermes printed on its stderr that
    "any data this process writes will land in the wrong profile". Both now read the same profile; a
    sticky profile since deleted is named, with the command that switches back."""
    from cli_runs import cli_env

    root = tmp_path / "user" / ".hermes"
    app = _profile_with(root, work, "the alpine default-profile retry plan", monkeypatch)
    _profile_with(root / "profiles" / "work", work, "the zanzibar work-profile retry plan", monkeypatch)
    (root / "active_profile").write_text("work\n", encoding="utf-8")  # what `hermes profile use work` writes
    env = cli_env(None, HOME=str(tmp_path / "user"))
    for hermes in (False, True):
        done = cli_process("search", "zanzibar", "--mode", "keyword", "--json", env=env, cwd=app, hermes=hermes)
        assert done.returncode == 0 and "HERMES_HOME fallback" not in done.stderr, (hermes, done)
        assert "@session:work/" in done.stdout and "alpine" not in done.stdout, (hermes, done.stdout)
    for given in (["--profile", "default"], ["-p", "default"], ["search", "-p", "default"]):  # -p: as hermes -p
        argv = [*given, "alpine"] if given[0] == "search" else [*given, "search", "alpine"]
        done = cli_process(*argv, "--mode", "keyword", env=env, cwd=app)
        assert done.returncode == 0 and "@session:default/" in done.stdout, (given, done)
    (root / "active_profile").write_text("gone\n", encoding="utf-8")
    done = cli_process("status", env=env, cwd=app)
    assert done.returncode == 3 and done.stdout == "" and done.stderr.count("\n") == 1, done
    assert "'gone'" in done.stderr and "hermes profile use default" in done.stderr, done.stderr


def test_both_commands_say_their_version(world, work):
    """``project-history-recall --version`` (what a bug report asks for first) was "unrecognized
    arguments"; ``hermes --version`` names Hermes's only. Both commands now say the plugin's, the one
    its packaging and Hermes's plugin list give."""
    import tomllib

    import yaml

    from conftest import REPO

    enable_plugin(world.home)
    packaged = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
    listed = yaml.safe_load((REPO / "project_history_recall" / "plugin.yaml").read_text(encoding="utf-8"))["version"]
    for hermes in (False, True):
        done = cli_process("--version", home=world.home, cwd=work, hermes=hermes)
        assert done.returncode == 0 and done.stdout == f"project-history-recall {packaged}\n", (hermes, done)
    assert str(listed) == packaged
