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

from cli_runs import HERMES_BIN
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
            argv = [str(HERMES_BIN), "recall", *args]
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
    assert "keyword and semantic" in " ".join(people["run"]("index", "--help").stdout.split())


def test_every_command_on_the_demo_home(people):
    _every_command(people, _demo_home(people))


# -- the first ten minutes, row by row ------------------------------------------------------


def test_config_shows_each_setting_and_where_it_came_from(people, world, work):
    place = _small_home(world, work)
    done = people["run"]("config", "--home", str(place["home"]))
    assert done.returncode == 0, done.stderr
    budget = [line for line in done.stdout.splitlines() if line.strip().startswith("index_budget_ms")]
    assert budget and str(place["home"] / PROG / "config.yaml") in budget[0], done.stdout
    assert re.search(r"^\s+fusion\s+blend\s+defaults$", done.stdout, re.M), done.stdout
    # Unset, blend_weight is the model's own: the text says which weight that is, --json keeps null.
    assert re.search(r"^\s+blend_weight\s+the model's own \(1\.0\)\s+defaults$", done.stdout, re.M), done.stdout
    # Unset, openai.dimensions asks for nothing: the text says so rather than printing null.
    assert re.search(r"^\s+openai\.dimensions\s+the model's own\s+defaults$", done.stdout, re.M), done.stdout
    shown = json.loads(people["run"]("config", "--json", "--home", str(place["home"])).stdout)
    origins = shown["origins"]
    assert origins["fusion"] == "defaults" and origins["index_budget_ms"].endswith("config.yaml")
    assert shown["values"]["blend_weight"] is None and shown["blend_weight_in_effect"] == 1.0
    plugin_settings(place["home"], embedder="e5-small")
    e5 = people["run"]("config", "--home", str(place["home"])).stdout
    assert re.search(r"^\s+blend_weight\s+the model's own \(3\.0\)\s+defaults$", e5, re.M), e5
    plugin_settings(place["home"], embedder="e5-small", blend_weight=0.7)
    text = people["run"]("config", "--home", str(place["home"])).stdout
    assert re.search(r"^\s+blend_weight\s+0\.7\s+\S*config\.yaml$", text, re.M), text
    shown = json.loads(people["run"]("config", "--json", "--home", str(place["home"])).stdout)
    assert shown["values"]["blend_weight"] == 0.7 and shown["blend_weight_in_effect"] == 0.7


def test_the_readmes_first_query_finds_something_in_the_demo_and_says_where(people):
    done = people["run"]("quickstart", QUERY)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "main project, Webshop" in done.stdout and "in project Webshop" in done.stdout
    assert "Retry policy for the payment client" in done.stdout
    as_json = json.loads(people["run"]("quickstart", QUERY, "--json").stdout)
    assert as_json["searches"][0]["results"][0]["title"] == "Retry policy for the payment client"
    assert as_json["outcome"] == "found", as_json  # the exit code's, as every response carries one
    again = people["run"]("quickstart", QUERY)  # the reused demo home: nothing to re-index, nothing said of it
    assert again.returncode == 0 and "reused" in again.stdout, again.stdout + again.stderr
    assert "brought up to date" not in again.stdout and "chunks" not in again.stdout, again.stdout
    assert "holds only" not in again.stdout
    assert f"there is no Hermes home at {people['env']['HOME']}/.hermes;" in again.stdout, again.stdout
    # A home Hermes made (``hermes project create`` does) but never ran a session in is there, only empty.
    (Path(people["env"]["HOME"]) / ".hermes").mkdir()
    made = people["run"]("quickstart", QUERY)
    assert made.returncode == 0 and "Retry policy for the payment client" in made.stdout, made.stdout + made.stderr
    assert f"the Hermes home at {people['env']['HOME']}/.hermes has no sessions yet: no state.db;" in made.stdout
    # A newcomer's own question that the demo's few sessions cannot answer: told what they hold.
    own = people["run"]("quickstart", "kubernetes helm chart")
    assert own.returncode == 1 and "Nothing found." in own.stdout, own.stdout + own.stderr
    assert ("The demo's project Webshop holds only 4 short sessions: Fix flaky websocket reconnect; 修改支付服务端超时; "
            "Release checklist; Retry policy for the payment client.") in own.stdout, own.stdout


def test_a_folder_in_no_project_names_the_projects_and_the_commands(people, world, work):
    place = _small_home(world, work)
    done = people["run"]("search", QUERY, "--home", str(place["home"]))
    assert done.returncode == 1, done.stderr
    assert f"{people['elsewhere']} is in no project" in done.stdout
    assert "App" in done.stdout and "Docs" in done.stdout and "notes" in done.stdout
    assert f"project create NAME {people['elsewhere']}" in done.stdout and "move SESSION PROJECT" in done.stdout
    for agents_word in ("project_session_move", "session_search", "None", "not ready"):
        assert agents_word not in done.stdout + done.stderr
    as_json = json.loads(people["run"]("search", QUERY, "--json", "--home", str(place["home"])).stdout)
    assert "is in no project" in as_json["reason"]
    # the first run from such a folder searches the largest project instead, and says so
    first = people["run"]("quickstart", QUERY, "--home", str(place["home"]))
    assert first.returncode == 0 and "searched its largest project, App, instead" in first.stdout, first.stdout
    assert "Retry policy for uploads" in first.stdout
    index = people["run"]("index", "--home", str(place["home"]))
    assert index.returncode == 2 and "is in no project: give --project NAME (App" in index.stderr, index.stderr


def test_a_mistyped_project_gets_the_closest_names(people, world, work):
    place = _small_home(world, work)
    done = people["run"]("search", QUERY, "--project", "Appp", "--home", str(place["home"]))
    assert done.returncode == 2 and done.stderr.strip().endswith("Did you mean App?"), done.stderr
    far = people["run"]("search", QUERY, "--project", "zzz", "--home", str(place["home"]))
    assert far.returncode == 2 and "Its projects: App, Docs, notes." in far.stderr, far.stderr


def test_every_name_projects_prints_is_accepted(people, world, work):
    place = _small_home(world, work)
    listed = json.loads(people["run"]("projects", "--json", "--home", str(place["home"])).stdout)["projects"]
    auto = [p for p in listed if p["kind"] == "auto"]
    assert [p["name"] for p in auto] == ["notes"]
    for name in ("notes", "notes (auto)", "Notes", str(place["notes"])):
        done = people["run"]("search", "retries", "--project", name, "--home", str(place["home"]))
        assert done.returncode == 0, (name, done.stderr)
        assert "in automatic project notes" in done.stdout and "1 session searched" in done.stdout, done.stdout
    # move takes them too: out of 'notes' (its only session) and back by the name projects printed.
    home = ["--home", str(place["home"])]
    assert people["run"]("move", "Reading", "notes", *home).returncode == 1  # already there
    assert people["run"]("move", "Reading", "App", *home).returncode == 0
    for name, code in (("notes (auto)", 0), ("notes", 1), ("Notes", 1), (str(place["notes"]), 1)):
        moved = people["run"]("move", "Reading", name, *home)
        assert moved.returncode == code, (name, moved.stdout, moved.stderr)
        assert ("to automatic project 'notes'" if code == 0 else "already in automatic project 'notes'") \
            in moved.stdout, moved.stdout
    done = people["run"]("search", "retries", "--project", "notes", *home)
    assert done.returncode == 0 and "1 session searched" in done.stdout, done.stdout


def test_a_folder_that_does_not_exist_is_a_one_line_error(people, world, work):
    place = _small_home(world, work)
    for args in (["search", QUERY, "--dir", "/nonexistent"], ["status", "/nonexistent"], ["index", "/nonexistent"]):
        done = people["run"](*args, "--home", str(place["home"]))
        assert done.returncode == 2 and done.stderr == f"{PROG}: no such folder: /nonexistent\n", done.stderr


def test_a_second_index_run_waits_for_the_first_and_does_not_redo_its_work(people, world, work):
    from project_history_recall.files.locks import FileLock

    place = _small_home(world, work)
    home = str(place["home"])
    lock = FileLock(place["home"] / PROG / "index.lock")
    lock.acquire()
    try:
        second = subprocess.Popen([str(Path(people["env"]["PYTHONPATH"]) / "bin" / PROG), "index", "--all",
                                   "--json", "--home", home], env=people["env"], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
        assert "another index run is under way" in second.stderr.readline()
    finally:
        lock.release()
    out, _ = second.communicate(timeout=300)
    assert second.returncode == 0 and json.loads(out)["totals"]["messages_embedded"] == 4
    again = json.loads(people["run"]("index", "--all", "--json", "--home", home).stdout)
    assert again["totals"]["messages_embedded"] == 0 and again["keyword"]["sessions_updated"] == 0


def test_the_progress_line_fits_a_60_column_terminal(people, world, work):
    from pty_terminal import Terminal

    place = _small_home(world, work)
    term = Terminal([str(Path(people["env"]["PYTHONPATH"]) / "bin" / PROG), "index", "--all", "--home",
                     str(place["home"])], {**people["env"], "COLUMNS": "60", "TERM": "xterm"})
    assert term.run_to_end(300) == 0, term.raw
    bars = [part.removesuffix("\x1b[K") for part in term.raw.split("\r") if part.endswith("\x1b[K")]
    assert bars and all(len(line) <= 59 for line in bars), bars
    assert any(line.startswith("App (semantic)") for line in bars), bars
    # Finished, the last project's bar gives way to the summary rather than standing above it.
    assert "\r\x1b[KKeyword index:" in term.raw, term.raw[-600:]


def test_index_off_a_terminal_writes_a_line_now_and_then(world, work, monkeypatch, capsys):
    from project_history_recall.ui import cli

    place = _small_home(world, work)
    monkeypatch.setattr(cli, "PROGRESS_EVERY_S", 0.0)  # every event is "a while" later
    assert cli.main(["index", "--all", "--home", str(place["home"])]) == 0
    err = capsys.readouterr().err
    assert "indexing App (semantic)" in err and "\r" not in err and "\x1b" not in err, err


def test_ctrl_c_during_index_ends_the_progress_line_first_and_resumes_later(world, work, monkeypatch, capsys):
    import io

    from project_history_recall.ui import cli, render

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    place = _small_home(world, work)
    screen = Terminal()
    monkeypatch.setattr(sys, "stderr", screen)
    draw, drawn = render.Output.progress, []

    def interrupted_while_drawing(self, line, keep=True):
        draw(self, line, keep)
        drawn.append(line)
        if len(drawn) == 2:
            raise KeyboardInterrupt

    monkeypatch.setattr(render.Output, "progress", interrupted_while_drawing)
    assert cli.main(["index", "--all", "--home", str(place["home"])]) == 130
    assert screen.getvalue().endswith("\x1b[K\n" + f"{PROG}: interrupted; what it indexed is kept, and the same "
                                      "command run again goes on from there\n"), screen.getvalue()[-300:]
    monkeypatch.setattr(render.Output, "progress", draw)
    assert cli.main(["index", "--all", "--home", str(place["home"])]) == 0


def test_help_documents_every_option(people):
    def helped(command: str) -> str:
        return " ".join(people["run"](command, "--help").stdout.split())  # as one line, wherever it wraps

    assert "semantic: by meaning" in helped("search")
    assert "the folder to look at" in helped("status")
    assert "or, in the demo, four searches of its own" in helped("quickstart")  # what scripts/recall runs


def test_the_readme_starts_with_a_short_quick_start():
    from conftest import REPO

    text = (REPO / "README.md").read_text(encoding="utf-8")
    quick = text.split("\n## ", 2)[1]
    assert quick.startswith("Quick start") and len(quick.splitlines()) <= 30, quick
    for step in ("hermes plugins enable project-history-recall", "hermes project create", "/recall",
                 'scripts/recall "', "scripts/test"):
        assert step in quick, step
    assert "quickstart" in text and "| head` ends with" not in text
