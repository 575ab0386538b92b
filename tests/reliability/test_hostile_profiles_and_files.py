"""The fifth hostile sweep: profiles named as Hermes names them, and files of the home that are
not files. The rule as before: the plugin's own answer or a one-line usage error, nothing written
where nothing should be, never a hang."""

from __future__ import annotations

import json

from cli_runs import cli_env, cli_process
from hermes_world import World, plugin_settings


def _tree(folder) -> dict:
    return {str(p): p.stat().st_size if p.is_file() else None for p in sorted(folder.rglob("*"))}


def test_the_command_lines_profile_is_named_as_hermes_names_it(world, work, tmp_path):
    """``--profile`` joined its text to ``profiles/``: ``default`` (the name every link and hint
    gives the root profile, and Hermes's ``--profile default``) named no profile, ``Work`` none
    though Hermes lower-cases it to ``work``, and ``/some/folder`` or ``../..`` read any folder
    as a Hermes home."""
    app = work / "app"
    app.mkdir()
    world.project("App", app)
    world.session(("user", "the websocket reconnect loop of the default profile"), cwd=app)
    world.close()
    plugin_settings(world.home, semantic=False)
    profile = world.home / "profiles" / "work"
    profile.mkdir(parents=True)
    other = World(profile)
    other.session(("user", "the websocket reconnect loop of the work profile"), cwd=app)
    other.close()
    plugin_settings(profile, semantic=False)
    # Run from inside the work profile, as Hermes's `hermes --profile work` sets it.
    env = cli_env(profile)

    def search(name: str):
        return cli_process("--profile", name, "--json", "search", "websocket", "--dir", str(app), env=env,
                           cwd=tmp_path)

    for name, which in (("default", "default"), ("Default", "default"), ("Work", "work"), ("work", "work")):
        done = search(name)
        assert done.returncode == 0, (name, done.stderr)
        found = json.loads(done.stdout)
        assert [r["snippet"] for r in found["results"]] and all(f"of the {which} profile" in r["snippet"]
                                                                for r in found["results"]), (name, found)
    before = _tree(tmp_path)
    for name in ("../..", "work/../..", str(world.home), "..", "wörk", " "):
        done = search(name)
        assert done.returncode == 2 and done.stdout == "", (name, done.stdout)
        assert len(done.stderr.strip().splitlines()) == 1 and "profile" in done.stderr, (name, done.stderr)
    assert _tree(tmp_path) == before
