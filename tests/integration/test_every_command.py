"""Every subcommand as a new user meets it: the installed console script (and ``hermes recall``), in text
and with ``--json``, on the demo home and on a small real home. Only the documented exit codes, never a
traceback or an internal error; and the first ten minutes' rough edges, one test each."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from hermes_world import PLUGIN_KEY, make_repo, plugin_settings

PROG = "project-history-recall"
# What must never reach a person: a traceback, an internal error, an exception's name.
LEAKS = re.compile(r"Traceback|Internal error|\b[A-Z][A-Za-z]*(Error|Exception)\b")
QUERY = "what did we decide about retries"


@pytest.fixture
def people(tmp_path, installed):
    """A new user: a HOME with no ~/.hermes, a cache folder, a folder that is in no project, and how to run
    the installed programs there."""
    user, cache, elsewhere = tmp_path / "user", tmp_path / "cache", tmp_path / "elsewhere"
    for folder in (user, cache, elsewhere):
        folder.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("HERMES_HOME", "PYTHONPATH")}
    env.update(HOME=str(user), XDG_CACHE_HOME=str(cache), PYTHONPATH=str(installed), NO_COLOR="1", COLUMNS="60")

    def run(*args: str, cwd: Path = elsewhere, hermes_home: Path | None = None) -> subprocess.CompletedProcess:
        """The console script, or ``hermes recall`` when a home is given for Hermes."""
        if hermes_home is None:
            argv = [str(installed / "bin" / PROG), *args]
            extra = {}
        else:
            argv = [str(Path(sys.executable).with_name("hermes")), "recall", *args]
            extra = {"HERMES_HOME": str(hermes_home)}
        return subprocess.run(argv, env={**env, **extra}, cwd=cwd, capture_output=True, text=True, timeout=300)

    return {"run": run, "cache": cache, "elsewhere": elsewhere, "env": env}


def _small_home(world, work) -> dict:
    app = work / "app"
    (app / "src").mkdir(parents=True)
    notes = make_repo(work / "notes")
    pid = world.project("App", app)
    (work / "docs").mkdir()
    world.project("Docs", work / "docs")
    world.session(("user", "What did we decide about retries for uploads?"),
                  ("assistant", "Retry three times with exponential backoff, then give up."),
                  cwd=app, title="Retry policy for uploads")
    world.session(("user", "the websocket reconnect loop is flaky"), cwd=app / "src", title="Fix websocket")
    world.session(("user", "a reading list note about retries in distributed systems"), cwd=notes,
                  title="Reading list")
    world.session(("user", "a chat with no folder"), source="telegram", title="Telegram chat")
    plugin_settings(world.home)
    (world.home / "config.yaml").write_text(f"plugins:\n  enabled: [{PLUGIN_KEY}]\n", encoding="utf-8")
    return {"home": world.home, "app": app, "notes": notes, "pid": pid, "project": "App",
            "session": "Retry pol", "other_project": "Docs", "typo": "Appp"}


def _demo_home(people) -> dict:
    first = people["run"]("quickstart")
    assert first.returncode == 0, first.stdout + first.stderr
    root = people["cache"] / PROG / "demo"
    info = json.loads((root / "demo.json").read_text(encoding="utf-8"))
    return {"home": Path(info["home"]), "app": Path(info["work"]) / "webshop", "project": "Webshop",
            "session": "Retry pol", "other_project": "Notes", "typo": "Webshp"}


BOTH, TEXT, JSON = ((False, True), (False,), (True,))


def _commands(place: dict, elsewhere: Path) -> list[tuple[list[str], set[int], tuple[bool, ...]]]:
    """(arguments, the exit codes the README documents for them here, text and/or --json)."""
    app, session, other, own = str(place["app"]), place["session"], place["other_project"], place["project"]
    return [
        (["search", QUERY, "--dir", app], {0}, BOTH),
        (["search", QUERY], {1}, BOTH),  # run from a folder in no project
        (["search", QUERY, "--project", place["typo"]], {2}, BOTH),
        (["search", QUERY, "--dir", str(elsewhere / "no-such-folder")], {2}, BOTH),
        (["status"], {0}, BOTH),
        (["status", app], {0}, BOTH),
        (["projects"], {0}, BOTH),
        (["index", app], {0}, BOTH),
        (["index", "--all"], {0}, BOTH),
        (["index"], {2}, BOTH),  # in no project, and neither --project nor --all
        (["session", session], {0}, BOTH),
        (["move", session, other], {0}, TEXT),
        (["move", session, other], {1}, JSON),  # already there
        (["move", session, own], {0}, JSON),  # and back
        (["move", session, own], {1}, TEXT),
        (["quickstart"], {0}, BOTH),
        (["quickstart", QUERY], {0}, BOTH),
        (["config"], {0}, BOTH),
        (["consent", "list"], {0}, BOTH),
        (["consent", "grant", "--project", own, "--yes"], {1}, BOTH),  # the local model needs no consent
        (["consent"], {2}, BOTH),
        ([], {2}, BOTH),
        (["bogus"], {2}, TEXT),
        (["search", QUERY, "--bogus"], {2}, TEXT),
    ]


def _check(done: subprocess.CompletedProcess, args: list[str], allowed: set[int], as_json: bool) -> None:
    shown = done.stdout + done.stderr
    assert done.returncode in allowed, (args, done.returncode, shown[-2000:])
    assert not LEAKS.search(shown), (args, shown[-2000:])
    if done.returncode != 0:
        assert done.stderr or done.stdout, args
    if as_json and done.stdout.strip():
        json.loads(done.stdout)
    if done.returncode == 2 and not as_json:
        assert len(done.stderr.strip().splitlines()) == 1, (args, done.stderr)


def _every_command(people, place: dict) -> None:
    run, home = people["run"], str(place["home"])
    for args, allowed, formats in _commands(place, people["elsewhere"]):
        for as_json in formats:
            extra = ["--json"] if as_json else []
            _check(run(*args, *extra, "--home", home), args + extra, allowed, as_json)
    # Through Hermes: the same program, under the name the person typed.
    for args, allowed in [(["config"], {0}), (["config", "--json"], {0}),
                          (["search", QUERY, "--dir", str(place["app"])], {0}),
                          (["search", QUERY, "--project", place["typo"]], {2}), (["search", "x", "--bogus"], {2})]:
        done = run(*args, hermes_home=place["home"])
        _check(done, args, allowed, "--json" in args)
        if done.returncode == 2:
            assert done.stderr.startswith("hermes recall"), done.stderr
            assert PROG not in done.stderr and "usage:" not in done.stderr, done.stderr


def test_every_command_on_a_small_real_home(people, world, work):
    _every_command(people, _small_home(world, work))


def test_every_command_has_help(people):
    for command in ("search", "status", "projects", "index", "move", "session", "quickstart", "config",
                    "consent list", "consent grant"):
        helped = people["run"](*command.split(), "--help")
        assert helped.returncode == 0 and "usage:" in helped.stdout, (command, helped.stderr)
        assert "(default: None)" not in helped.stdout
    assert "keyword and semantic" in people["run"]("index", "--help").stdout


def test_every_command_on_the_demo_home(people):
    _every_command(people, _demo_home(people))
