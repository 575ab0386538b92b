"""The twelfth hostile sweep, the user's side: the command line in the environments people run it
in (a locale that is not UTF-8, a narrow terminal, a home the plugin cannot write). The rule as
before: the plugin's own answer, saying what is so, nothing written where nothing should be."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from cli_runs import MODULE, cli_env
from hermes_world import checkpoint, db_digest, enable_plugin, hermes_line, one_session_project, plugin_settings


@pytest.mark.parametrize("encoding", ["gb18030", "latin-1"])
def test_json_is_utf8_whatever_the_locale(world, work, encoding):
    """``--json`` in a locale that is not UTF-8 (zh_CN.GB18030, en_US.ISO-8859-1; ``PYTHONIOENCODING``
    stands in for it) was written in the locale's encoding: GB18030 bytes for 超时, a Latin-1 byte for
    é, which ``jq`` and every JSON reader (UTF-8, RFC 8259) read as garbage; ``hermes recall --json``
    writes UTF-8 there. It is now ASCII with ``\\uXXXX`` escapes, which reads back unchanged in UTF-8
    and in the locale's encoding alike."""
    app = one_session_project(world, work, "Café", ("user", "支付回调超时了, café"), ("assistant", "把 timeout 改成 15 秒"))
    before = db_digest(world.home / "state.db")
    env = cli_env(world.home, PYTHONIOENCODING=encoding)
    for argv in (["search", "超时", "--json"], ["projects", "--json"], ["status", "--json"]):
        done = subprocess.run([*MODULE, *argv], env=env, cwd=app, capture_output=True, timeout=300)
        assert done.returncode == 0 and done.stderr == b"", (argv, done.stderr)
        answer = json.loads(done.stdout.decode("utf-8"))  # raises on the locale's bytes
        assert json.loads(done.stdout.decode(encoding)) == answer
        assert "Café" in json.dumps(answer, ensure_ascii=False), (argv, answer)
        if argv[0] == "search":
            assert "超时" in answer["results"][0]["snippet"], answer
    assert db_digest(world.home / "state.db") == before


def _cells(text: str) -> int:
    """Columns a terminal gives ``text``: two for a wide (CJK) character."""
    import unicodedata

    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 0 if unicodedata.combining(c) else 1
               for c in text)


@pytest.mark.parametrize("columns", [8, 20, 21, 40, 80, 200])
@pytest.mark.parametrize("label", ["网店项目的后端服务重构计划 (semantic)", "Webshop v2 (semantic)",
                                   "Re\u0301sume\u0301 a\u0300 jour (keyword)", "x"])
def test_the_progress_line_fits_the_terminal_in_columns(label, columns):
    """``index``'s progress line is redrawn with a carriage return: a line as wide as the terminal or
    wider wraps, and every redraw then starts a new line. It was cut by characters, so a Chinese
    project's name (two columns a character) drew a 52-column line in a 40-column terminal, and a
    terminal narrower than 21 columns still got 20. It now fits in ``columns - 1`` cells."""
    from project_history_recall.ui import render

    for done in (0, 3, 10):
        line = render.progress_bar(label, done, 10, 1_234, 5_678, 90.0, columns=columns)
        assert _cells(line) <= max(columns - 1, 1), (line, _cells(line))
        assert line.strip(), line
    assert render.progress_bar(label, 3, 10, columns=200).startswith(label)


@pytest.mark.parametrize("fault", ["file", "link to nowhere", "indexes link to nowhere"])
def test_status_says_what_a_search_meets_where_no_index_can_be_made(world, work, tmp_path, capsys, fault):
    """A home whose data folder cannot be made or written (a file in its place, a link into a folder
    that does not exist; a home the user cannot write, as another user's or a read-only mount; the
    indexes links into a folder that does not exist, a disk not mounted), and no index built yet: every search answered from Hermes's indexes, saying the plugin's could not be
    made, while ``status`` said both were "indexing", "the next search builds it", for ever. It says
    what the search says now, naming the folder, and makes nothing."""
    from project_history_recall.ui import cli

    app, _asker = _app(world, work)
    data = world.home / "project-history-recall"
    if fault == "file":
        data.write_text("not a folder\n", encoding="utf-8")
    elif fault == "link to nowhere":
        data.symlink_to(tmp_path / "unmounted" / "recall-data")
    else:  # a disk not mounted: the fifth round's searches say so, status said "not built yet"
        data.mkdir()
        for name in ("keywords.db", "embeddings.db"):
            (data / name).symlink_to(tmp_path / "unmounted" / name)
    before = db_digest(world.home / "state.db")

    def answer(*argv: str) -> dict:
        assert cli.main([*argv, "--json", "--home", str(world.home)]) == 0, argv
        return json.loads(capsys.readouterr().out)

    status = answer("status", str(app))
    searched = answer("search", "websocket", "--dir", str(app))
    assert searched["results"], searched
    for side in ("keyword", "semantic"):
        assert searched[f"{side}_status"] == "unavailable", searched
        assert status[f"{side}_status"] == "unavailable", status
        assert str(data) in status[f"{side}_reason"] and "next search" not in status[f"{side}_reason"], status
    assert data.is_file() if fault == "file" else not (tmp_path / "unmounted").exists()
    assert db_digest(world.home / "state.db") == before


def _app(world, work):
    from hermes_world import websocket_app

    app, asker = websocket_app(world, work)
    world.close()
    checkpoint(world.home)
    return app, asker


def test_a_name_that_is_no_project_says_how_many_are_left_unnamed(world, work, capsys):
    """``--project Nope`` in a home of many projects (500 here) answered "Its projects: " and ten names,
    a full stop after them, as if they were all; it now says how many more there are."""
    from project_history_recall.ui import cli

    for i in range(500):
        folder = work / f"p{i:03d}"
        folder.mkdir()
        world.project(f"Proj {i:03d} 项目", folder)
    app, _asker = _app(world, work)
    assert cli.main(["search", "x", "--project", "Nope", "--home", str(world.home), "--dir", str(app)]) == 2
    said = capsys.readouterr().err
    assert "Its projects: " in said and " and 491 more." in said, said
    assert said.count("\n") == 1, said


def test_an_empty_no_color_leaves_the_colours_on(world, work):
    """``NO_COLOR`` turns colours off "when present and not an empty string" (no-color.org; Rich and
    termcolor read it so): ``NO_COLOR=`` (a profile that clears it, ``env NO_COLOR= …``) turned them off."""
    from cli_runs import run_in_terminal, terminal_env

    app, _asker = _app(world, work)
    plugin_settings(world.home, semantic=False)
    for value, coloured in (("", True), ("1", False), ("0", False)):
        env = {**terminal_env(world.home), "NO_COLOR": value}
        code, out = run_in_terminal(["search", "websocket", "--dir", str(app), "--mode", "keyword"], env)
        assert code == 0, out
        assert ("\x1b[1;33mwebsocket" in out) is coloured and ("«websocket»" in out) is not coloured, (value, out)


def test_a_home_named_with_a_tilde_no_shell_expanded(world, work, tmp_path):
    """``HERMES_HOME="~/.hermes"`` (quoted in a shell, an env file, a systemd unit: nothing expands the
    ``~``, Hermes neither) answered "There is no folder ~/.hermes (a profile deleted or renamed, or a
    mistyped path?)" to a person whose ``~/.hermes`` is right there; and a home that is a file, "There
    is no folder /etc/passwd". Each now says what it is."""
    from cli_runs import cli_process

    app, _asker = _app(world, work)
    user = tmp_path / "user"
    (user / ".hermes").mkdir(parents=True)
    a_file = tmp_path / "hermes.yaml"
    a_file.write_text("model: x\n", encoding="utf-8")
    # Hermes 0.22 expands the ``~`` itself (``get_hermes_home``), and the plugin reads the home it names.
    tilde = "'~'" if hermes_line() < (0, 22) else f"at {user / '.hermes' / 'state.db'}. Has Hermes run"
    for value, said in (("~/.hermes", tilde), (str(a_file), "is a file")):
        env = cli_env(None, HOME=str(user), HERMES_HOME=value)
        done = cli_process("search", "websocket", env=env, cwd=app)
        assert done.returncode == 3 and said in done.stderr and done.stderr.count("\n") == 1, (value, done.stderr)
        assert not (app / "~").exists()


def test_the_progress_line_fits_the_terminal_it_is_drawn_on(world, work):
    """``index --all > index.log`` (or ``| tee``) in a terminal 40 columns wide: the progress line is
    drawn on stderr, the terminal, but its width was asked of stdout, the file, which has none, so it
    was drawn 79 columns wide and every redraw wrapped. The width is now the terminal's it is drawn on."""
    import subprocess as sp

    from cli_runs import terminal_env
    from pty_terminal import Terminal

    app = work / "网店的一个名字很长很长的项目文件夹"
    app.mkdir()
    world.project("网店的一个名字很长很长的项目 Web shop with a long name", app)
    for i in range(3):
        world.session(("user", f"支付回调超时了 {i}"), ("assistant", "把 timeout 改成 15 秒"), cwd=app)
    world.close()
    checkpoint(world.home)
    plugin_settings(world.home, semantic=False)
    env = {k: v for k, v in terminal_env(world.home).items() if k not in ("COLUMNS", "LINES")}
    term = Terminal([*MODULE, "index", "--all"], env, cwd=app, stdout=sp.PIPE, columns=40)
    assert term.run_to_end(240) == 0, term.raw
    drawn = [part.replace("\x1b[K", "") for part in term.raw.replace("\r\n", "\n").split("\r")]
    bars = [line for line in drawn if "/3" in line]
    assert bars and all(_cells(line.split("\n")[0]) <= 39 for line in bars), bars


def test_hermes_recall_given_a_home_says_how_to_give_one(world, work, tmp_path):
    """The README's ``--home DIR`` is the standalone command's; Hermes chooses the home of ``hermes
    recall``. Given one, ``hermes recall --home DIR projects`` answered "invalid choice: 'DIR'" and
    ``hermes recall search x --home DIR`` that a query starting with '-' goes after '--'. Both now
    say how to name a home there."""
    from cli_runs import cli_process

    app, _asker = _app(world, work)
    plugin_settings(world.home, semantic=False)
    enable_plugin(world.home)
    other = tmp_path / "other-home"
    other.mkdir()
    for argv in (["--home", str(other), "projects"], ["search", "websocket", "--home", str(other)],
                 ["projects", f"--home={other}"]):
        done = cli_process(*argv, home=world.home, cwd=app, hermes=True)
        said = done.stderr
        assert done.returncode == 2 and said.count("\n") == 1, (argv, said)
        assert "HERMES_HOME=" in said and "--profile" in said and "invalid choice" not in said, (argv, said)
        assert "starts with '-'" not in said, (argv, said)
    assert list(other.iterdir()) == []


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root, as sudo gives it")
def test_a_command_run_as_root_leaves_the_homes_owner_its_files(world, work, tmp_path):
    """``sudo project-history-recall …`` (``sudo -E``, or ``HERMES_HOME`` given) on a home another user's
    Hermes writes: every command made the data folder and its files as root's (``status`` saves the
    model there, a search its indexes), after which that user's own searches had neither index ("Permission
    denied"), every move was refused (recall.db could not be made) and ``index`` failed, until someone
    ran ``chown -R``. What a command makes there now goes to the home's owner, as Hermes hands back the
    config files it writes as root; in a home of root's own nothing changes hands. Each command in a
    process of its own, as run: one that ends takes its background work with it."""
    from cli_runs import cli_process

    other = work / "other"
    other.mkdir()
    world.project("Other", other)
    app, asker = _app(world, work)
    plugin_settings(world.home, semantic=False)
    data = world.home / "project-history-recall"
    outside = tmp_path / "outside.txt"
    outside.write_text("the user's\n", encoding="utf-8")
    (data / "notes.txt").symlink_to(outside)
    user, group = 65534, 65534
    for path in (world.home, world.home / "state.db", data, data / "config.yaml", data / "notes.txt"):
        os.lchown(path, user, group)
    for argv, code in ((["status", str(app)], 0), (["search", "websocket", "--dir", str(app)], 0),
                       (["index", "--all"], 0), (["move", asker, str(other)], 0)):
        done = cli_process(*argv, "--home", str(world.home), env=cli_env(None), cwd=app)
        assert done.returncode == code, (argv, done.stdout, done.stderr)
        made = [p for p in [data, *data.rglob("*")] if p.lstat().st_uid != user]
        assert not made, (argv, made)
    assert outside.stat().st_uid == 0  # a link's target is not the data folder's
    mine = tmp_path / "root-home"
    shutil.copytree(world.home, mine, symlinks=True)
    shutil.rmtree(mine / "project-history-recall")
    for path in (mine, mine / "state.db"):
        os.chown(path, 0, 0)
    assert cli_process("status", str(app), "--home", str(mine), env=cli_env(None), cwd=app).returncode == 0
    assert all(p.lstat().st_uid == 0 for p in [mine / "project-history-recall", *mine.rglob("project-history-recall/*")])


@pytest.mark.parametrize("left", ["tables, no session", "0 bytes"])
def test_quickstart_in_a_home_where_hermes_has_had_no_session_yet(tmp_path, left):
    """``hermes`` opened and quit before a word (its ``SessionDB`` made ``state.db``, with no session in
    it), or a ``state.db`` left at 0 bytes: the README's first command showed the demo only when there was
    no ``state.db`` at all. Here it answered "is in no project … (projects: none yet)", or "has no Hermes
    sessions in it" with exit 3. Both are a home where Hermes has had no session yet: the demo, saying so,
    and nothing written to the home."""
    from cli_runs import cli_process

    user = tmp_path / "new-user"
    hermes_home = user / ".hermes"
    hermes_home.mkdir(parents=True)
    if left == "0 bytes":
        (hermes_home / "state.db").write_bytes(b"")
    else:
        import hermes_state

        hermes_state.SessionDB(db_path=hermes_home / "state.db").close()
    before = {p.name: p.read_bytes() for p in hermes_home.iterdir()}
    env = cli_env(None, HOME=str(user), XDG_CACHE_HOME=str(tmp_path / "cache"))
    done = cli_process("quickstart", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Using the demo home" in done.stdout and "no sessions yet" in done.stdout, done.stdout
    after = {p.name: p.read_bytes() for p in hermes_home.iterdir() if not p.name.endswith(("-wal", "-shm"))}
    assert after == before  # SQLite's own WAL index of a reader aside


def test_a_full_width_yes_at_the_consent_question_agrees(remote_pq, server):
    """A Chinese input method left in full-width mode types ``ｙ`` for y: ``Agree? [y/N]`` took it for
    no ("nothing recorded", exit 1), though the person agreed. An answer is read as NFKC folds it; what
    is not y or yes is still no, and nothing is ever sent by agreeing."""
    from pty_terminal import Terminal

    home = remote_pq["home"]
    for typed, recorded in (("ｙ", True), ("ｎ", False)):
        project = "Pelican" if recorded else "Quokka"
        term = Terminal([*MODULE, "--json", "consent", "grant", "--project", project], cli_env(home),
                        cwd=remote_pq["p_dir"], stdout=subprocess.PIPE)
        try:
            term.wait_for("Agree? [y/N]", timeout=60)
            term.type(typed)
            answer, _ = term.proc.communicate(timeout=120)
        finally:
            code = term.close()
        assert code == (0 if recorded else 1) and json.loads(answer)["recorded"] is recorded, (typed, answer)
    assert server.count() == 0
