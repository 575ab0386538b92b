"""The eighteenth hostile sweep, the user's side: the installed command line (and ``hermes recall``) on a
real Hermes home, as a person runs it the first time and as they mistype it. The rule as before: the
plugin's own answer, saying what is so and what to do next."""

from __future__ import annotations

import json
import resource
import signal
import subprocess
from pathlib import Path

import pytest

from cli_runs import HERMES_BIN, cli_env
from hermes_world import PLUGIN_KEY, checkpoint, enable_plugin, hermes_line, plugin_settings

PROG = "project-history-recall"


def _installed(installed: Path, home: Path, cwd: Path, *args: str, hermes: bool = False
               ) -> subprocess.CompletedProcess:
    """The console script pip installed (or ``hermes recall``, which finds the plugin by its entry point)."""
    env = cli_env(home)
    env["PYTHONPATH"] = str(installed)
    argv = [str(HERMES_BIN), "recall", *args] if hermes else [str(installed / "bin" / PROG), "--home", str(home), *args]
    return subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=600)


def _history(world, work, sessions: int) -> Path:
    """Project App of ``sessions`` sessions of 12 messages each, more than a search indexes by itself (its
    keyword index is first built in the background); one of them says 支付回调超时. Keyword-only."""
    app = work / "app"
    app.mkdir()
    world.project("App", app)
    for n in range(sessions):
        said = [("user", f"note {n}.{m} about the release checklist") for m in range(11)]
        first = "支付回调经常超时，帮我修改服务端的超时配置" if n == 7 else f"websocket reconnect {n}"
        world.session(("user", first), *said, cwd=app, title=f"chat {n}")
    world.close()
    checkpoint(world.home)
    plugin_settings(world.home, semantic=False)
    return app


@pytest.mark.parametrize("hermes", [False, True], ids=["console-script", "hermes-recall"])
def test_the_first_command_line_search_answers_from_the_keyword_index_it_built(world, work, installed, hermes):
    """The first search from the command line on a home of some history (here 150 sessions): its keyword
    index was built in the background, where the search did not wait for it, as the agent's tool does not.
    The tool's next search finds it built; the command line's process ends with the search, so a person
    got Hermes's own indexes (weaker on Chinese: 超时 is no trigram) and was told to run ``index`` for
    the rest, though the command waits up to a minute for the semantic index and the keyword build takes
    a second or two. Now the command line waits for the build, within that budget, and the answer comes
    from the index it built."""
    app = _history(world, work, sessions=150)
    if hermes:  # found by its entry point, as pip installed it
        (world.home / "config.yaml").write_text(f"plugins:\n  enabled: [{PLUGIN_KEY}]\n", encoding="utf-8")
    done = _installed(installed, world.home, app, "--json", "search", "超时", "--mode", "keyword", hermes=hermes)
    assert done.returncode == 0, done.stdout + done.stderr
    found = json.loads(done.stdout)
    assert found["keyword_status"] == "ready", found
    assert "keyword_index" not in found or found["keyword_index"]["sessions_indexed"] == 150, found
    assert not found.get("warnings"), found
    assert [r["title"] for r in found["results"]][:1] == ["chat 7"], found
    text = _installed(installed, world.home, app, "search", "超时", hermes=hermes)
    assert text.returncode == 0 and "index the rest" not in text.stdout and "warning" not in text.stdout, text.stdout


def test_an_argument_left_out_is_not_said_to_start_with_a_dash(world, work, installed):
    """``move SESSION`` with the project forgotten, or ``search`` with no query: the refusal added "a
    session (query) that starts with '-' goes after '--'" to people who had typed no such word, and for
    ``move`` named the session, which was given, not the project, which was not. That hint is for a word
    argparse took for an option; it stays for those (``move -x App``)."""
    app = _history(world, work, sessions=1)
    (world.home / "config.yaml").write_text(f"plugins:\n  enabled: [{PLUGIN_KEY}]\n", encoding="utf-8")
    for hermes in (False, True):
        prog = "hermes recall" if hermes else PROG
        for argv, missing in ((["move", "20260901_000001_000001"], "project"), (["search"], "query"),
                              (["search", "--mode", "keyword"], "query")):
            done = _installed(installed, world.home, app, *argv, hermes=hermes)
            said = done.stderr.strip()
            assert done.returncode == 2 and said == (f"{prog} {argv[0]}: the following arguments are required: "
                                                     f"{missing} (see {prog} {argv[0]} --help)"), (argv, said)
        dashed = _installed(installed, world.home, app, "move", "-x", "App", hermes=hermes).stderr
        assert f"a session that starts with '-' goes after '--', as in: {prog} move -- -x" in dashed, dashed


@pytest.mark.parametrize("shape", ["file", "missing", "tilde"])
def test_settings_and_consents_of_a_home_that_is_not_there_say_so(tmp_path, installed, shape):
    """``HERMES_HOME`` naming a file, a folder that is not there, or ``~/.hermes`` quoted so that nothing
    expanded it: every command that reads Hermes's data says why there is none (exit 3), but ``config``
    showed the defaults and ``consent list`` "No consents on record." (exit 0) without a word, to a
    person asking why their settings or consent were not taken; ``quickstart`` said "there is no Hermes
    home" at a file that is there. Each now says what is wrong with the home, in the same words."""
    home = {"file": tmp_path / "hermes.yaml", "missing": tmp_path / "gone", "tilde": Path("~/.hermes")}[shape]
    if shape == "file":
        home.write_text("plugins: {}\n", encoding="utf-8")
    # Hermes 0.22 expands the ``~`` itself (``get_hermes_home``), and the plugin reads the home it names.
    tilde = "nothing expanded its '~'" if hermes_line() < (0, 22) else f"There is no folder {tmp_path / 'user'}"
    why = {"file": f"{home} is a file, not a folder.", "missing": f"There is no folder {home}", "tilde": tilde}[shape]
    env = cli_env(home, HOME=str(tmp_path / "user"), XDG_CACHE_HOME=str(tmp_path / "cache"))
    env["PYTHONPATH"] = str(installed)
    (tmp_path / "user").mkdir()

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([str(installed / "bin" / PROG), *args], env=env, cwd=tmp_path, capture_output=True,
                              text=True, timeout=600)

    assert why in run("projects").stderr  # as every command reading Hermes's data says it
    shown = run("config")
    assert shown.returncode == 0 and why in shown.stdout, shown.stdout
    report = json.loads(run("--json", "config").stdout)
    assert any(why in w for w in report["warnings"]), report
    consents = run("consent", "list")
    assert consents.returncode == 0 and why in consents.stdout, consents.stdout
    assert any(why in w for w in json.loads(run("--json", "consent", "list").stdout)["warnings"])
    if shape == "file":
        demo = run("quickstart", "--json")
        assert demo.returncode == 0, demo.stderr
        text = run("quickstart").stdout
        assert f"{home} is a file, not a folder" in text.splitlines()[0], text


def test_index_all_beside_a_named_project_is_refused(world, work, installed):
    """``index --all --project App`` (or ``index app --all``): --all won without a word, and every project
    of the home was indexed (with e5, hours; with a remote embedder, every project with a consent sent)
    for a person who named one. Now a usage error naming both, and nothing is indexed."""
    app = _history(world, work, sessions=1)
    data = world.home / PLUGIN_KEY
    for argv in (["index", "--all", "--project", "App"], ["index", str(app), "--all"]):
        done = _installed(installed, world.home, app, *argv)
        assert done.returncode == 2 and done.stdout == "", (argv, done)
        assert "--all" in done.stderr and len(done.stderr.strip().splitlines()) == 1, (argv, done.stderr)
        assert not (data / "keywords.db").exists(), argv
    assert _installed(installed, world.home, app, "index", "--all").returncode == 0


@pytest.mark.parametrize("written", ["openai:\n  api_key: {key}\n", "OPENAI_API_KEY: {key}\n", "openai:\n  key: {key}\n"])
def test_a_key_written_into_the_settings_is_said_to_belong_in_dot_env(world, work, installed, written):
    """The API key written into the plugin's ``config.yaml`` (``openai.api_key: sk-…``, the way most tools
    take one, or the variable's line of ``.env`` pasted there): "unknown setting 'openai.api_key' ignored",
    and the remote embedder had no key, with nothing said of where a key goes. Now the warning says: in
    the home's ``.env``, under the variable ``openai.api_key_env`` names; the key itself is never shown."""
    key = "sk-proj-Zq8Lm2Xv7Rt4Wn1Kp9Hc"
    app = _history(world, work, sessions=1)
    settings = world.home / PLUGIN_KEY / "config.yaml"
    settings.write_text("semantic: false\nembedder: openai\n" + written.format(key=key), encoding="utf-8")
    text = _installed(installed, world.home, app, "config")
    report = json.loads(_installed(installed, world.home, app, "--json", "config").stdout)
    [said] = [w for w in report["warnings"] if "key" in w.lower()]
    assert f"{world.home / '.env'}" in said and "OPENAI_API_KEY=" in said and "never read" in said, said
    assert said in text.stdout and key[4:12] not in text.stdout + text.stderr + json.dumps(report), text.stdout


def test_a_keyword_build_that_stops_part_way_is_not_taken_for_a_built_index(world, work, installed):
    """The command line waits for the keyword index's first build (above); a build that stops part way
    (here the file may grow no further: a full disk or a quota) gives up its queue, and the wait ended
    as if the work were done: the index, a few sessions of 150, was taken as current and answered alone.
    A stopped build is said as one not finished; Hermes's indexes answer, as before."""
    app = _history(world, work, sessions=150)

    def small_files():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails (EFBIG), as on a full disk
        resource.setrlimit(resource.RLIMIT_FSIZE, (160 * 1024, 160 * 1024))

    env = cli_env(world.home)
    env["PYTHONPATH"] = str(installed)
    done = subprocess.run([str(installed / "bin" / PROG), "--json", "search", "超时", "--mode", "keyword"], env=env,
                          cwd=app, capture_output=True, text=True, timeout=600, preexec_fn=small_files)
    found = json.loads(done.stdout)
    assert found["keyword_status"] != "ready" and found.get("warnings"), found
    assert [r["title"] for r in found["results"]][:1] == ["chat 7"], found


def test_recall_move_given_a_session_and_a_project_says_how_to_move_that_session(world, work, monkeypatch):
    """``/recall move`` moves the session it is typed in; the command line's ``move SESSION PROJECT`` typed
    there, with a link a search printed (``/recall move @session:default/… Other``), answered "No project
    '@session:default/… Other' in this profile", as if the project were misspelled. Now it says what
    ``/recall move`` moves and the command that moves the session named; nothing is moved."""
    from hermes_cli.plugins import get_plugin_command_handler

    app, other = work / "app", work / "other"
    app.mkdir()
    other.mkdir()
    world.project("App", app)
    world.project("Other", other)
    old = world.session(("user", "websocket reconnect keeps failing"), cwd=app, title="Fix websocket")
    me = world.session(cwd=app, title="current chat")
    enable_plugin(world.home)
    monkeypatch.setenv("HERMES_SESSION_ID", me)
    handler = get_plugin_command_handler("recall")
    for named in (f"@session:default/{old}", f"session:{old}"):
        said = handler(f"move {named} Other")
        assert said.startswith("recall: ") and "/recall move moves this session" in said, said
        assert f"hermes recall move {named} Other" in said, said
    assert "project App" in handler("status")
    moved = handler("move Other")  # the move of this session is as before
    assert "Moved session" in moved and "Other" in moved, moved
