"""The fifth hostile sweep: what the command line and the tools meet in the environment they run
in. Profiles named as Hermes names them, the session Hermes names to the commands its agent runs,
and files of the home that are not files. The rule as before: the plugin's own answer or a
one-line usage error, about what was asked, nothing written where nothing should be, never a hang."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import textwrap

import pytest

from cli_runs import HERMES_BIN, MODULE, cli_env, cli_process
from conftest import REPO, SRC
from hermes_world import (PLUGIN_KEY, World, checkpoint, db_digest, enable_plugin, one_session_project,
                          plugin_settings, websocket_app)


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


SEARCH_CHILD = textwrap.dedent("""
    import json, sys
    import model_tools
    from hermes_cli import plugins
    plugins.discover_plugins(force=True)
    print(json.dumps([json.loads(model_tools.handle_function_call(
        "project_history_search", {"query": "pelican worker version", "mode": mode}, session_id=sys.argv[1]))
        for mode in ("keyword", "hybrid")]))
""")


@pytest.mark.parametrize("name", [".env", f"{PLUGIN_KEY}/config.yaml", f"{PLUGIN_KEY}/consent.secret"])
def test_a_fifo_among_the_homes_small_files_holds_nothing_up(remote_pq, world, name):
    """A FIFO at ``.env`` (where the remote embedder's key is), at the plugin's ``config.yaml``
    (where consents are) or at ``consent.secret`` (the key consent tokens are signed with): every
    search with a remote embedder, ``config`` and ``consent list`` waited for ever, in ``open()``,
    for a writer that never comes (the fourth sweep left ``.env`` untried). Each is now read only
    if it is a regular file: the search answers, by keyword at least, and the commands answer."""
    home = remote_pq["home"]
    world.close()
    checkpoint(home)
    path = home / name
    path.unlink(missing_ok=True)
    os.mkfifo(path)
    before = db_digest(home / "state.db")
    env = dict(cli_env(home), PHR_TEST_KEY="")
    if name != ".env":  # Hermes 0.22 reads .env itself as model_tools is imported (and waits there)
        proc = subprocess.run([sys.executable, "-c", SEARCH_CHILD, remote_pq["askP"]], env=env, capture_output=True,
                              text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr[-3000:]
        for res in json.loads(proc.stdout.strip().splitlines()[-1]):
            assert res["success"] and res["results"], res
            if name.endswith("consent.secret") and res["mode"] == "hybrid":
                assert "token" not in res["consent"] and "consent.secret" in res["consent"]["how_to_record"], res
        assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    for argv in (["search", "pelican worker version"], ["config"], ["consent", "list"]):
        done = cli_process("--json", *argv, env=env, cwd=remote_pq["p_dir"], timeout=120)
        assert done.returncode in (0, 3) and "Traceback" not in done.stderr, (argv, done.stdout, done.stderr)
        assert json.loads(done.stdout)["success"] is True, (argv, done.stdout)
    assert path.is_fifo()
    assert db_digest(home / "state.db") == before


def test_a_folder_named_to_the_command_line_run_inside_a_hermes_session_decides(world, work, tmp_path):
    """Hermes puts its session's id in the environment of every command its agent runs
    (``HERMES_SESSION_ID``), so that the command line leaves the running conversation out of its
    results. The command line took that session's project for the folder's: ``search --dir B``,
    ``status B`` and a search run in B's folder answered about the session's project A."""
    a, b = work / "a", work / "b"
    a.mkdir()
    b.mkdir()
    world.project("A", a)
    world.project("B", b)
    world.session(("user", "the websocket reconnect loop of project A"), cwd=a)
    in_b = world.session(("user", "the websocket reconnect loop of project B"), cwd=b)
    running = world.session(("user", "what about the websocket reconnect loop"), cwd=a)
    world.close()
    plugin_settings(world.home, semantic=False)
    env = dict(cli_env(world.home), HERMES_SESSION_ID=running)
    for argv, cwd in ((["search", "websocket reconnect", "--dir", str(b)], tmp_path),
                      (["search", "websocket reconnect"], b)):
        done = cli_process("--json", *argv, env=env, cwd=cwd)
        assert done.returncode == 0, done.stderr
        res = json.loads(done.stdout)
        assert res["project"]["name"] == "B" and [r["session_id"] for r in res["results"]] == [in_b], (argv, res)
    done = cli_process("--json", "status", str(b), env=env, cwd=tmp_path)
    assert done.returncode == 0 and json.loads(done.stdout)["project"]["name"] == "B", done.stdout
    # In the session's own project, its conversation is still left out.
    done = cli_process("--json", "search", "websocket reconnect", "--dir", str(a), env=env, cwd=tmp_path)
    res = json.loads(done.stdout)
    assert res["project"]["name"] == "A" and res.get("current_session_excluded") is True, res
    assert running not in {r["session_id"] for r in res["results"]} and len(res["results"]) == 1, res


@pytest.mark.parametrize("terminal_cwd", ["~no-such-user-here/work", "/" + "deep/" * 1000])
def test_a_working_folder_hermes_cannot_resolve_leaves_the_session_to_decide(world, work, monkeypatch,
                                                                             terminal_cwd):
    """Hermes resolves the agent's working folder from ``TERMINAL_CWD`` (its ``terminal.cwd`` setting)
    with ``expanduser``, which raises RuntimeError for ``~user`` of a user this machine lacks, and an
    OSError for a name too long to check. The plugin took only the OSError for "no folder known":
    with the other, every tool call and ``/recall`` answered ``internal``, though the session Hermes
    names decides the project. It is now a folder not known, as when the process's folder is gone."""
    from hermes_cli.plugins import get_plugin_command_handler

    from hermes_world import call, enable_plugin

    app = work / "app"
    app.mkdir()
    world.project("App", app)
    earlier = world.session(("user", "the websocket reconnect loop is flaky"), cwd=app)
    asker = world.session(cwd=app)
    enable_plugin(world.home)
    monkeypatch.setenv("TERMINAL_CWD", terminal_cwd)
    for mode in ("keyword", "hybrid"):
        res = call("project_history_search", {"query": "websocket", "mode": mode}, session_id=asker)
        assert res["success"] and [r["session_id"] for r in res["results"]] == [earlier], res
    monkeypatch.setenv("HERMES_SESSION_ID", asker)
    shown = get_plugin_command_handler("recall")("status")
    assert "project App" in shown and "Internal" not in shown, shown
    moved = call("project_session_move", {"project": "App"}, session_id=asker)
    assert moved["success"] and moved["reason"] == "already_in_project", moved


def test_folders_the_command_line_cannot_resolve_are_usage_errors(world, work, tmp_path):
    """``--home ~someone/…`` and ``--dir ~someone/…`` for a user this machine lacks (``expanduser``
    raises RuntimeError), and a command run in a folder deleted since (``os.getcwd()`` raises): the
    first printed a Python traceback, the others "Internal error" with exit 3. Each is now a one-line
    usage error (exit 2) saying which folder, and nothing is written."""
    from cli_runs import MODULE

    app, _asker = websocket_app(world, work)
    world.close()
    plugin_settings(world.home, semantic=False)
    before = _tree(world.home)
    env = cli_env(world.home)
    for argv in (["--home", "~no-such-user-here/hermes", "search", "websocket"],
                 ["search", "websocket", "--dir", "~no-such-user-here/app"], ["status", "~no-such-user-here"]):
        done = cli_process(*argv, env=env, cwd=app)
        assert done.returncode == 2 and done.stdout == "", (argv, done.stdout, done.stderr)
        assert len(done.stderr.strip().splitlines()) == 1 and "~no-such-user-here" in done.stderr, (argv, done.stderr)
    gone = tmp_path / "gone"
    for argv in (["search", "websocket"], ["status"], ["quickstart", "websocket"], ["quickstart"]):
        gone.mkdir()
        script = f"cd {shlex.quote(str(gone))} && rmdir {shlex.quote(str(gone))} && exec {shlex.join(MODULE + argv)}"
        done = subprocess.run(["sh", "-c", script], env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 2 and done.stdout == "", (argv, done.stdout, done.stderr)
        assert len(done.stderr.strip().splitlines()) == 1 and "--dir" in done.stderr, (argv, done.stderr)
        assert "Internal" not in done.stderr, (argv, done.stderr)
    assert _tree(world.home) == before


@pytest.mark.parametrize("shape", ["a-name-too-long", "a-path-too-long"])
def test_a_home_whose_name_is_too_long_is_told(world, work, monkeypatch, capsys, tmp_path, shape):
    """``HERMES_HOME`` (or ``--home``) naming a folder past the system's limits (a segment of 300
    characters, a path of 4,500): Python 3.11's ``Path.is_file``/``exists`` raise ENAMETOOLONG where
    they answer False for a missing file, and every search, move, ``/recall`` and ``session`` answered
    "Internal error: OSError". Each now says the home's files cannot be opened, and why."""
    from hermes_cli.plugins import get_plugin_command_handler

    from hermes_world import call, enable_plugin, hermes_line
    from project_history_recall.ui import cli

    _app, asker = websocket_app(world, work)
    enable_plugin(world.home)
    far = tmp_path / ("a" * 300 if shape == "a-name-too-long" else "/".join(["ab"] * 1500)) / "hermes"
    recall = get_plugin_command_handler("recall")  # before: Hermes 0.22 looks the command up in the home
    monkeypatch.setenv("HERMES_HOME", str(far))
    answers = [call("project_history_search", {"query": "websocket"}, session_id=asker),
               call("project_session_move", {"project": "App"}, session_id=asker)]
    for res in answers:
        if "success" not in res:  # Hermes 0.22 looks for the profile's plugins first, and fails there itself
            assert hermes_line() >= (0, 22) and "too long" in res["error"], res
            continue
        assert res["success"] is False and res["error_code"] == "unreadable", res
        assert "too long" in res["error"], res
    monkeypatch.setenv("HERMES_SESSION_ID", asker)
    for line in ("websocket", "status", "move App"):
        shown = recall(line)
        assert shown.startswith("recall: Cannot open") and "too long" in shown, (line, shown)
    monkeypatch.delenv("HERMES_SESSION_ID")
    for argv in (["status"], ["search", "websocket"], ["projects"], ["session", asker], ["index", "--all"]):
        assert cli.main([*argv, "--home", str(far)]) == 3, argv
        shown = capsys.readouterr()
        assert "too long" in shown.err and "Internal" not in shown.out + shown.err, (argv, shown)


@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
def test_an_output_that_cannot_take_every_character_gets_escapes(world, work, encoding):
    """The standalone command line with stdout in an encoding that lacks the history's characters (a
    Latin-1 or ASCII locale, ``PYTHONIOENCODING``, a Windows code page when redirected): every search
    whose answer held one (Chinese, the quotes around the query, a middle dot) failed whole, "Internal
    error: UnicodeEncodeError", exit 3, ``--json`` too. Text now shows such a character as a backslash
    escape, as Python writes stderr, and ``--json`` as ``\\uXXXX``, which reads back unchanged."""
    app = one_session_project(world, work, "App", ("user", "支付回调超时了"), ("assistant", "把 timeout 改成 15 秒 ✓"))
    before = db_digest(world.home / "state.db")
    env = cli_env(world.home, PYTHONIOENCODING=encoding)

    def run(*argv: str) -> subprocess.CompletedProcess:
        return subprocess.run([*MODULE, *argv], env=env, cwd=app, capture_output=True, encoding=encoding, timeout=300)

    shown = run("search", "超时")
    assert shown.returncode == 0 and shown.stderr == "", shown.stderr
    assert "\\u8d85\\u65f6" in shown.stdout and "15" in shown.stdout, shown.stdout
    done = run("search", "超时", "--json")
    assert done.returncode == 0 and done.stderr == "", done.stderr
    answer = json.loads(done.stdout)
    assert answer["success"] and "✓" in answer["results"][0]["context"][-1]["text"], answer
    for argv in (["status"], ["projects"], ["config"]):
        done = run(*argv)
        assert done.returncode == 0 and "Internal" not in done.stderr, (argv, done.stderr)
    assert db_digest(world.home / "state.db") == before


def _redirected_app(world, work):
    """Project App, keyword-only; a runner of the command line in App's folder through ``sh`` with a
    redirection (``closed(">&-", "search", "x")``); state.db's digest before."""
    app, _asker = websocket_app(world, work)
    world.close()
    checkpoint(world.home)
    plugin_settings(world.home, semantic=False)
    env = cli_env(world.home)

    def run(redirect: str, *argv: str) -> subprocess.CompletedProcess:
        script = f"exec {shlex.join(MODULE + list(argv))} {redirect}"
        return subprocess.run(["sh", "-c", script], env=env, cwd=app, capture_output=True, text=True, timeout=300)

    return app, run, db_digest(world.home / "state.db")


def test_standard_streams_closed_when_the_command_starts(world, work, server):
    """The command line started with stdin, stdout or stderr closed (``<&-``, ``>&-``, ``2>&-``: a
    daemon's or cron's job, a script that closed them), where Python makes the stream None. ``consent
    grant`` read stdin to tell a terminal, and failed "Internal error: AttributeError", exit 3; so did
    ``search`` with stdout closed, after searching; ``index`` with stderr closed failed as it started,
    and its error, written to the closed stream, raised again: the run died with exit 1 (the code for
    "nothing done") and no word. A closed stdin is now no terminal (consent needs ``--yes``, as from a
    pipe), and what is written to a closed stream goes nowhere, as Python's own ``print`` does: each
    command does its work and answers with its own exit code."""
    from hermes_world import remote_settings

    _app, closed, before = _redirected_app(world, work)
    for redirect, argv, code in (("<&-", ["search", "websocket"], 0), (">&-", ["search", "websocket"], 0),
                                 ("2>&-", ["search", "nothing-like-this"], 1), (">&-", ["status"], 0),
                                 ("2>&-", ["index"], 0), ("2>&-", ["index", "--all"], 0), (">&-", ["index"], 0)):
        done = closed(redirect, *argv)
        assert done.returncode == code and "Internal" not in done.stdout + done.stderr, (redirect, argv, done)
    remote_settings(world.home, server)
    (world.home / ".env").write_text("PHR_TEST_KEY=sk-phr-test-closed-stdin\n", encoding="utf-8")
    settings = (world.home / PLUGIN_KEY / "config.yaml").read_text(encoding="utf-8")
    done = closed("<&-", "consent", "grant")
    assert done.returncode == 2 and "--yes" in done.stderr and "Internal" not in done.stderr, done
    assert (world.home / PLUGIN_KEY / "config.yaml").read_text(encoding="utf-8") == settings
    assert server.count() == 0
    assert db_digest(world.home / "state.db") == before


def test_an_answer_the_disk_refuses_is_told_on_stderr(world, work):
    """stdout on a full disk (``> /dev/full``; a quota or an I/O error alike): the search was done, its
    answer refused, and the run said "Internal error: OSError", a bug of ours to a person whose disk is
    full. It now says on stderr that the answer could not be written, and why, with the data-error code
    3; what goes to a stderr that refuses is dropped, and the command does its work (``index``) and ends
    with its own code."""
    app, full, before = _redirected_app(world, work)
    done = full("2> /dev/full", "index")
    assert done.returncode == 0 and "Keyword index: 1 of 2 sessions brought up to date" in done.stdout, done
    for argv in (["search", "websocket"], ["search", "websocket", "--json"], ["status"], ["projects", "--json"]):
        done = full("> /dev/full", *argv)
        assert done.returncode == 3, (argv, done)
        assert done.stderr.strip().endswith("could not write the answer to the standard output: No space left on "
                                            "device"), (argv, done.stderr)
        assert "Internal" not in done.stderr and "Traceback" not in done.stderr, (argv, done.stderr)
    told = full("", "search", "websocket", "--project", "No such project")  # told on stderr
    done = full("2> /dev/full", "search", "websocket", "--project", "No such project")
    assert told.stderr and done.returncode == told.returncode != 0 and done.stdout == told.stdout, (told, done)
    assert cli_process("search", "websocket", "--json", env=cli_env(world.home), cwd=app).returncode == 0
    assert db_digest(world.home / "state.db") == before


def test_a_cache_folder_the_demo_cannot_be_made_in_is_told(tmp_path):
    """``quickstart`` with no Hermes home builds the demo under ``$XDG_CACHE_HOME``; that folder a
    file (or one the demo's folder cannot be made in) answered "Internal error: NotADirectoryError",
    the code of a bug. It is now the one-line data error of a demo that cannot be built, naming the
    folder, exit 3, ``--json`` too; the file is left as it was."""
    user = tmp_path / "new-user"
    user.mkdir()
    cache = tmp_path / "cache"
    cache.write_text("a file, not a folder\n", encoding="utf-8")
    env = cli_env(HOME=str(user), XDG_CACHE_HOME=str(cache))
    done = cli_process("quickstart", "websocket", cwd=tmp_path, env=env)
    assert done.returncode == 3 and done.stdout == "", done
    assert len(done.stderr.strip().splitlines()) == 1 and "Internal" not in done.stderr, done.stderr
    assert "could not build the demo home" in done.stderr and str(cache) in done.stderr, done.stderr
    answer = json.loads(cli_process("quickstart", "--json", cwd=tmp_path, env=env).stdout)
    assert answer["success"] is False and answer["outcome"] == "data" and answer["error_code"] != "internal", answer
    assert cache.read_text(encoding="utf-8") == "a file, not a folder\n"
    assert not (user / ".hermes").exists()


def test_a_relative_cache_folder_is_ignored_as_the_xdg_spec_says(tmp_path):
    """``XDG_CACHE_HOME=cache`` (relative, which the XDG spec has ignored): ``quickstart`` built the demo
    home in whatever folder it ran in, and the commands it printed named it relative to that folder,
    so they failed pasted anywhere else. The demo is now built under ``~/.cache``, nothing is made
    where the command ran, and the printed commands name it whole."""
    user, here = tmp_path / "new-user", tmp_path / "here"
    user.mkdir()
    here.mkdir()
    env = cli_env(HOME=str(user), XDG_CACHE_HOME="cache")
    done = cli_process("quickstart", "websocket", cwd=here, env=env)
    assert done.returncode == 0, done.stderr
    assert list(here.iterdir()) == []
    root = user / ".cache" / "project-history-recall" / "demo"
    assert (root / "demo.json").is_file()
    assert f"--home {root / 'home'}" in done.stdout and "recall status /" in done.stdout, done.stdout


def test_a_folder_named_with_dot_dot_is_the_folder_it_names(world, work):
    """``--dir ../app`` (and ``status ../app``, ``index ../app``) from a folder beside App's: the
    command line made the folder absolute but kept its ``..``, and ``…/sib/../app`` is no project's
    folder, so it searched an automatic project of nothing ("in no project"). The folder is now read
    as a shell's ``cd`` and Hermes's ``projects_db`` read it, ``..`` taken out: App, as from inside it."""
    app, _asker = websocket_app(world, work)
    beside = work / "sib"
    beside.mkdir()
    world.close()
    checkpoint(world.home)
    plugin_settings(world.home, semantic=False)
    env = cli_env(world.home)
    done = cli_process("search", "websocket", "--dir", "../app", "--json", env=env, cwd=beside)
    answer = json.loads(done.stdout)
    assert answer["success"] and answer["project"]["name"] == "App" and answer["results"], answer
    status = json.loads(cli_process("status", "../app", "--json", env=env, cwd=beside).stdout)
    assert status["project"]["name"] == "App", status
    indexed = cli_process("index", "../app", env=env, cwd=beside)
    assert indexed.returncode == 0 and "no project" not in indexed.stderr, indexed.stderr


@pytest.mark.parametrize("hermes", [False, True], ids=["standalone", "hermes-recall"])
def test_a_reader_gone_keeps_the_commands_exit_code(world, work, hermes):
    """stdout or stderr a pipe whose reader has gone (``… | head``, ``2>&1 | grep -q``, a log
    collector that died). A broken stdout ended every command with 0, "found", a failed search
    with ``--json`` included; a broken stderr did the same to every error, so a move or a search
    that failed said it succeeded to ``set -o pipefail`` and to any script. The command's own exit
    code stands now, whoever reads its words; what goes to a stderr whose reader left is dropped, as
    on a full disk, and the command goes on."""
    app, _asker = websocket_app(world, work)
    world.close()
    checkpoint(world.home)
    plugin_settings(world.home, semantic=False)
    if hermes:
        enable_plugin(world.home)
    before = db_digest(world.home / "state.db")

    def gone(which: str, *argv: str) -> tuple[int, str]:
        """(exit code, what the other stream said) with ``which`` stream's reader gone."""
        read, write = os.pipe()
        os.close(read)
        other = {"stderr" if which == "stdout" else "stdout": subprocess.PIPE}
        cmd = [str(HERMES_BIN), "recall", *argv] if hermes else [*MODULE, *argv]
        try:
            done = subprocess.run(cmd, env=cli_env(world.home), cwd=app, text=True, timeout=300,
                                  **{which: write}, **other)
        finally:
            os.close(write)
        return done.returncode, done.stderr if which == "stdout" else done.stdout

    for which, argv, code in (
            ("stdout", ["search", "websocket"], 0), ("stdout", ["search", "nothing-like-this"], 1),
            ("stdout", ["--json", "search", "websocket", "--project", "No such project"], 2),
            ("stdout", ["--json", "session", "no-such-session"], 2), ("stdout", ["--json", "status"], 0),
            ("stderr", ["search", "websocket", "--project", "No such project"], 2),
            ("stderr", ["session", "no-such-session"], 2), ("stderr", ["move", "no-such-session", "App"], 2),
            ("stderr", ["search", "websocket", "--dir", str(work / "gone")], 2),
            ("stderr", ["index"], 0)):
        exit_code, said = gone(which, *argv)
        assert exit_code == code, (which, argv, exit_code, said)
        assert "Traceback" not in said and "Exception ignored" not in said, (which, argv, said)
    assert db_digest(world.home / "state.db") == before


TESTS = REPO / "tests"


def test_a_home_reached_through_a_symlink_is_linked_as_its_profile(tmp_path):
    """``HERMES_HOME`` a symlink to a profile's folder (``~/.hermes/profiles/work``): Hermes reads the
    profile from the folder the link reaches (``get_active_profile_name``), the plugin read the link's
    own name, so every result linked ``@session:default/<id>``, and Hermes's ``session_search``, handed
    the link, looked in the default profile: "profile 'default': unable to open database file" (seen on
    both lines; this test compares the link with the profile Hermes names)."""
    user = tmp_path / "user"
    profile = user / ".hermes" / "profiles" / "work"
    profile.mkdir(parents=True)
    (user / ".hermes" / "config.yaml").write_text("{}\n", encoding="utf-8")
    app = tmp_path / "app"
    app.mkdir()
    env = cli_env(tmp_path / "link", HOME=str(user))
    made = subprocess.run([sys.executable, "-c", textwrap.dedent("""
        import sys
        from pathlib import Path
        sys.path.insert(0, sys.argv[2])
        from hermes_world import World
        world = World(Path(sys.argv[1]))
        world.project("App", sys.argv[3])
        print(world.session(("user", "the websocket reconnect loop of the work profile"), cwd=sys.argv[3]))
        world.close()
        """), str(profile), str(TESTS), str(app)], env=cli_env(profile, HOME=str(user)),
        capture_output=True, text=True, timeout=120)
    assert made.returncode == 0, made.stderr
    session = made.stdout.split()[-1]
    plugin_settings(profile, semantic=False)
    (tmp_path / "link").symlink_to(profile)
    # Enabled as `hermes plugins install` leaves it, for `hermes recall`.
    (profile / "config.yaml").write_text(f"plugins:\n  enabled: [{PLUGIN_KEY}]\n", encoding="utf-8")
    shutil.copytree(SRC / "project_history_recall", profile / "plugins" / PLUGIN_KEY,
                    ignore=shutil.ignore_patterns("__pycache__"))
    for hermes in (False, True):
        done = cli_process("--json", "search", "websocket", env=env, cwd=app, hermes=hermes)
        assert done.returncode == 0, done.stderr
        assert [r["link"] for r in json.loads(done.stdout)["results"]] == [f"@session:work/{session}"], done.stdout
    hermes_says = subprocess.run([sys.executable, "-c", "from hermes_cli.profiles import get_active_profile_name; "
                                  "print(get_active_profile_name())"], env=env, capture_output=True, text=True, timeout=120)
    assert hermes_says.stdout.split()[-1:] == ["work"], hermes_says.stdout + hermes_says.stderr


def test_the_command_line_says_an_error_once_and_logs_nothing_on_stderr(world, work):
    """A folder where ``keywords.db`` belongs: every standalone command wrote the plugin's log warning
    bare on stderr ("keyword index unavailable: …"), a search and ``status --json`` that succeeded
    included, and ``index`` said its error twice, once as that log line. The standalone command line
    configures no logging, and Python writes a warning (and a logged exception's traceback) to stderr
    then; under Hermes the record went to Hermes's log, as it still does. stderr now holds the
    command's own words only."""
    app, _asker = websocket_app(world, work)
    world.close()
    plugin_settings(world.home, semantic=False)
    enable_plugin(world.home)
    (world.home / PLUGIN_KEY / "keywords.db").mkdir()
    for hermes in (False, True):
        for argv in (["search", "websocket"], ["--json", "status"]):
            done = cli_process(*argv, home=world.home, cwd=app, hermes=hermes)
            assert done.returncode == 0 and done.stderr == "", (hermes, argv, done.stderr)
        done = cli_process("index", home=world.home, cwd=app, hermes=hermes)
        assert done.returncode == 3 and len(done.stderr.splitlines()) == 1, (hermes, done.stderr)
        assert "keywords.db: it is a folder, not a file" in done.stderr, done.stderr
