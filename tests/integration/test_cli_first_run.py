"""The command line as a new user meets it: options anywhere, one-line usage errors, and
hints that work when pasted into another shell, in another folder."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

from cli_runs import cli_env, cli_process
from conftest import SRC
from hermes_world import EMBED_KEY, PLUGIN_KEY, call, enable_plugin, wait_idle, websocket_app


def _pasted(line: str, cwd: Path, home: Path) -> subprocess.CompletedProcess:
    """A printed command run as a person pastes it: a new shell, another folder, a HOME whose
    ~/.hermes does not exist, no HERMES_HOME and no PYTHONPATH."""
    env = {k: v for k, v in os.environ.items() if k not in ("HERMES_HOME", "PYTHONPATH")}
    env.update(HOME=str(home), NO_COLOR="1")
    return subprocess.run(["bash", "-c", line], env=env, cwd=cwd, capture_output=True, text=True, timeout=240)


def _project(world, folder: Path, name: str, said: str, title: str) -> Path:
    """An explicit project of a new folder, with one session that said ``said``."""
    folder.mkdir()
    world.project(name, folder)
    world.session(("user", said), cwd=folder, title=title)
    return folder


def _small_world(world, work) -> Path:
    app = _project(world, work / "app", "App", "the websocket reconnect loop is flaky", "Fix websocket")
    auto = work / "loose"
    auto.mkdir()
    subprocess.run(["git", "init", "-q", str(auto)], check=True)
    world.session(("user", "a websocket note in a plain repository"), cwd=auto, title="Loose note")
    return app


def test_global_options_go_before_or_after_the_subcommand(world, work, tmp_path):
    app = _small_world(world, work)
    before = cli_process("--home", str(world.home), "--json", "search", "websocket", "--dir", str(app), cwd=tmp_path)
    after = cli_process("search", "websocket", "--dir", str(app), "--home", str(world.home), "--json", cwd=tmp_path)
    assert before.returncode == after.returncode == 0, (before.stderr, after.stderr)
    assert json.loads(before.stdout)["results"] and json.loads(after.stdout)["results"]
    assert json.loads(before.stdout)["results"][0]["link"] == json.loads(after.stdout)["results"][0]["link"]
    both = cli_process("search", "x", "--home", str(world.home), "--profile", "other", cwd=tmp_path)
    assert both.returncode == 2 and len(both.stderr.strip().splitlines()) == 1, both.stderr


def test_the_package_runs_as_the_command_line(world, work, tmp_path):
    """``python -m project_history_recall`` said "'project_history_recall' is a package and cannot be
    directly executed": the package runs as the command line it installs."""
    import sys

    app = _small_world(world, work)
    args = ("--home", str(world.home), "--json", "search", "websocket", "--dir", str(app))
    package = subprocess.run([sys.executable, "-m", "project_history_recall", *args], env=cli_env(world.home),
                             cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert package.returncode == 0, package.stderr[-2000:]
    assert json.loads(package.stdout)["results"][0]["link"] == json.loads(
        cli_process(*args, cwd=tmp_path).stdout)["results"][0]["link"]


def test_limit_out_of_range_is_a_one_line_usage_error(world, work, tmp_path):
    app = _small_world(world, work)
    for bad in ("0", "-3", "51", "ten"):
        done = cli_process("search", "websocket", "--dir", str(app), "--home", str(world.home), "--limit", bad,
                           cwd=tmp_path)
        assert done.returncode == 2 and done.stdout == "", (bad, done)
        assert len(done.stderr.strip().splitlines()) == 1 and "--limit" in done.stderr, done.stderr
    for usage in (["bogus"], ["search"], ["status", "--nope"], ["consent", "grant", "--what"]):
        done = cli_process("--home", str(world.home), *usage, cwd=tmp_path)
        assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, (usage, done.stderr)
    one = cli_process("search", "websocket", "--dir", str(app), "--home", str(world.home), "--limit", "1", "--json",
                      cwd=tmp_path)
    assert len(json.loads(one.stdout)["results"]) == 1


def test_keyword_mode_says_nothing_of_a_next_search(world, work, tmp_path):
    app = _small_world(world, work)
    done = cli_process("search", "websocket", "--dir", str(app), "--home", str(world.home), "--mode", "keyword",
                       cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "Fix websocket" in done.stdout
    assert "next search" not in done.stdout and "semantic:" not in done.stdout, done.stdout
    assert "background" not in done.stdout


def test_a_hybrid_search_says_what_a_hit_s_last_word_means(world, work, tmp_path):
    """Each hit's line ends with the engine that found it (``· both``, ``· keyword``, ``· semantic``),
    which only docs/first-run.md explained: a hybrid search's mode line now says so. Keyword mode,
    whose hits all say ``keyword``, and ``--json`` (``score_source``) are left as they were."""
    app = _small_world(world, work)
    said = "; each hit ends with the engine that found it, or both)"

    def search(*extra: str) -> str:
        done = cli_process("search", "websocket", "--dir", str(app), "--home", str(world.home), *extra, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        return done.stdout

    hybrid = search()
    assert f"mode hybrid (searched with keyword+semantic{said}; semantic: ready" in hybrid.splitlines(), hybrid
    assert re.search(r"^ 1\. Fix websocket · .* · (both|keyword|semantic)$", hybrid, re.MULTILINE), hybrid
    assert "mode keyword (searched with keyword)" in search("--mode", "keyword").splitlines()
    assert "engine that found it" not in search("--json")


def test_projects_labels_automatic_projects(world, work, tmp_path):
    _small_world(world, work)
    done = cli_process("projects", "--home", str(world.home), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "(auto )" not in done.stdout and "()" not in done.stdout, done.stdout
    loose = [line for line in done.stdout.splitlines() if "loose" in line]
    assert loose and "(auto)" in loose[0] and str(work / "loose") in loose[0], done.stdout


def test_a_folder_in_no_project_offers_project_names_that_paste(world, work, tmp_path):
    """``(projects: Web shop)`` beside ``--project NAME`` was pasted as ``--project Web shop``, which
    the shell splits; and a first run with no query said "in no project", then "Next: search it"."""
    shop = _project(world, work / "shop", "Web shop", "what did we decide about retries", "Retry policy")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = cli_process("search", "retries", "--home", str(world.home), cwd=elsewhere)
    assert done.returncode == 1 and "(projects: 'Web shop')" in done.stdout, done.stdout
    offered = re.search(r"search a project: +(.+) --project NAME +\(projects: (.+)\)", done.stdout)
    pasted = _pasted(f"{offered.group(1).replace('QUERY', 'retries')} --project {offered.group(2)}",
                     elsewhere, tmp_path / "fresh-user")
    assert pasted.returncode == 0 and "Retry policy" in pasted.stdout, (offered.group(0), pasted.stderr)
    index = cli_process("index", "--home", str(world.home), cwd=elsewhere)
    assert index.returncode == 2 and "--project NAME ('Web shop') or --all" in index.stderr, index.stderr
    first = cli_process("quickstart", "--home", str(world.home), cwd=elsewhere)
    assert first.returncode == 0 and "is in no project" in first.stdout, first.stdout
    assert "Next: search it" not in first.stdout, first.stdout
    here = cli_process("quickstart", "--home", str(world.home), cwd=shop)
    assert here.returncode == 0 and "Next: search it" in here.stdout, here.stdout


def test_consent_hint_keeps_the_home_and_works_when_pasted(remote_pq, tmp_path):
    home = remote_pq["home"]
    done = cli_process("search", "pelican", "--dir", str(remote_pq["p_dir"]), "--home", str(home), cwd=tmp_path,
                       env=cli_env(PHR_TEST_KEY=EMBED_KEY))
    hint = re.search(r"To agree, run: (.+)", done.stdout)
    assert hint, done.stdout
    assert "--home" in hint.group(1) and str(home) in hint.group(1)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    granted = _pasted(hint.group(1) + " --yes", elsewhere, tmp_path / "fresh-user")
    assert granted.returncode == 0, (hint.group(1), granted.stderr)
    assert "Consent recorded" in granted.stdout
    listed = cli_process("consent", "list", "--json", "--home", str(home), cwd=tmp_path)
    assert [c["project"]["id"] for c in json.loads(listed.stdout)["consents"]] == [remote_pq["P"]]


def test_demo_home_is_reused_enabled_and_its_hints_work_when_pasted(tmp_path):
    import shutil

    import yaml

    cache, user = tmp_path / "cache", tmp_path / "new-user"
    user.mkdir()
    env = cli_env(HOME=str(user), XDG_CACHE_HOME=str(cache))
    first = cli_process("quickstart", cwd=tmp_path, env=env)
    assert first.returncode == 0, first.stderr
    assert "built it just now" in first.stdout
    root = cache / "project-history-recall" / "demo"
    home = root / "home"
    again = cli_process("quickstart", "websocket", cwd=tmp_path, env=env)
    assert again.returncode == 0 and "reused" in again.stdout, again.stdout + again.stderr
    assert sorted(p.name for p in root.iterdir()) == [".lock", "demo.json", "home", "work"]
    # the printed search, pasted into a new shell elsewhere, finds what the demo showed
    shown = [line[2:] for line in first.stdout.splitlines() if line.startswith("$ cd ")]
    assert len(shown) == 4 and all(f"--home {home}" in line for line in shown), shown
    pasted = _pasted(shown[0], tmp_path, user)
    assert pasted.returncode == 0, (shown[0], pasted.stderr)
    assert "Fix flaky websocket reconnect" in pasted.stdout
    # Hermes loads the plugin there (enabled in the demo home's config.yaml)
    config = yaml.safe_load((home / "config.yaml").read_text(encoding="utf-8"))
    assert "project-history-recall" in config["plugins"]["enabled"]
    shutil.copytree(SRC / "project_history_recall", home / "plugins" / "project-history-recall",
                    ignore=shutil.ignore_patterns("__pycache__"))  # a directory install, as `hermes plugins install`
    hint = first.stdout.strip().splitlines()[-1].split("too: ", 1)[1]
    hermes = _pasted(hint, tmp_path, user)
    assert hermes.returncode == 0, (hint, hermes.stdout, hermes.stderr)
    assert "Webshop" in hermes.stdout
    # a broken demo home is built again, in the same place
    (home / "state.db").unlink()
    rebuilt = cli_process("quickstart", "websocket", cwd=tmp_path, env=env)
    assert rebuilt.returncode == 0 and "built it just now" in rebuilt.stdout, rebuilt.stdout + rebuilt.stderr
    assert sorted(p.name for p in root.iterdir()) == [".lock", "demo.json", "home", "work"]


def test_recall_and_the_cli_print_the_same_cards(world, work, monkeypatch, capsys):
    from hermes_cli.plugins import get_plugin_command_handler

    from hermes_world import enable_plugin
    from project_history_recall.ui import cli

    app = _small_world(world, work)
    me = world.session(cwd=app, title="current chat")
    enable_plugin(world.home)
    monkeypatch.setenv("HERMES_SESSION_ID", me)
    slash = get_plugin_command_handler("recall")("websocket")
    monkeypatch.delenv("HERMES_SESSION_ID")
    monkeypatch.setenv("NO_COLOR", "1")
    assert cli.main(["search", "websocket", "--dir", str(app), "--context", "1", "--home", str(world.home)]) == 0
    printed = capsys.readouterr().out

    def cards(text: str) -> list[str]:  # the results, after the header lines (the CLI's is one-shot)
        return text[text.index("\n 1. "):].rstrip().splitlines()

    assert "Fix websocket" in slash and cards(slash) == cards(printed), (slash, printed)


def test_index_and_consent_are_library_calls_that_return_dicts(remote_pq):
    from project_history_recall import consenting, indexing
    from project_history_recall.hermes.host import Caller

    home = remote_pq["home"]
    asked = []
    refused = consenting.grant_for_person(home, Caller(cwd=str(remote_pq["p_dir"])), None,
                                          lambda described: asked.append(described) or False)
    assert refused["success"] and refused["recorded"] is False and asked[0]["project"]["name"] == "Pelican"
    assert consenting.listing(home)["consents"] == []
    seen = []
    done = indexing.run(home, Caller(), every=True, on_progress=lambda *event: seen.append(event[:2]),
                        grant_command="recall-cli")
    assert done["success"] and done["projects"] == []  # nothing sent: both projects wait for consent
    assert sorted(s["project"]["name"] for s in done["skipped_for_consent"]) == ["Pelican", "Quokka"]
    assert done["skipped_for_consent"][0]["how_to_record"].startswith("recall-cli consent grant --project ")
    assert done["keyword"]["sessions_updated"] > 0 and ("keyword", "Pelican") in seen
    granted = consenting.grant_for_person(home, Caller(), "Quokka")
    assert granted["recorded"] is True and consenting.listing(home)["consents"][0]["project"]["name"] == "Quokka"
    again = indexing.run(home, Caller(), project="Quokka")
    assert again["projects"][0]["messages_embedded"] == 3 and "skipped_for_consent" not in again
    assert again["keyword"]["sessions_updated"] == 0  # already brought up to date above
    bad = indexing.run(home, Caller(), project="no-such-project")
    assert bad["success"] is False and bad["error_code"] != "internal"


def test_errors_and_progress_never_show_the_key(remote_pq, tmp_path):
    key = EMBED_KEY
    (remote_pq["home"] / ".env").write_text(f"PHR_TEST_KEY={key}\n", encoding="utf-8")
    done = cli_process("search", "pelican", "--project", f"x{key}", "--home", str(remote_pq["home"]), cwd=tmp_path)
    assert done.returncode == 2 and "[redacted]" in done.stderr, done.stderr
    assert key[:8] not in done.stderr + done.stdout


def test_status_before_any_search_makes_no_file_and_says_the_indexes_are_not_built(world, work, monkeypatch):
    """``status`` on a home never searched created an empty keywords.db and embeddings.db (with their
    WAL, shared-memory and lock files) in the plugin's data folder: a read that wrote. Now the command
    line's and ``/recall``'s status make no file there and say the indexes are not built yet; the first
    search builds both, and status then says they are ready."""
    from hermes_cli.plugins import get_plugin_command_handler

    app, asker = websocket_app(world, work)
    enable_plugin(world.home)
    data = world.home / PLUGIN_KEY

    def files() -> list[str]:
        return sorted(str(p.relative_to(data)) for p in data.rglob("*"))

    before = files()
    status = json.loads(cli_process("--home", str(world.home), "status", "--json", cwd=app).stdout)
    assert status["keyword_status"] == status["semantic_status"] == "indexing", status
    assert status["keyword_index"]["sessions_indexed"] == status["semantic_index"]["sessions_indexed"] == 0, status
    assert "not built yet" in status["keyword_reason"] and "not built yet" in status["semantic_reason"], status
    text = cli_process("--home", str(world.home), "status", cwd=app).stdout
    assert re.search(r"^ +keyword: indexing — 0/\d+ sessions indexed — the keyword index is not built yet", text,
                     re.MULTILINE), text
    monkeypatch.setenv("HERMES_SESSION_ID", asker)
    shown = get_plugin_command_handler("recall")("status")
    assert "the keyword index is not built yet" in shown and "the semantic index is not built yet" in shown, shown
    assert files() == before
    res = call("project_history_search", {"query": "websocket reconnect", "mode": "hybrid"}, session_id=asker)
    assert res["results"] and res["keyword_status"] == res["semantic_status"] == "ready", res
    assert (data / "keywords.db").exists() and (data / "embeddings.db").exists()
    wait_idle(300)
    after = json.loads(cli_process("--home", str(world.home), "status", "--json", cwd=app).stdout)
    assert after["keyword_status"] == after["semantic_status"] == "ready", after


def test_the_demo_is_built_by_a_directory_install(world, work, tmp_path):
    """``hermes recall quickstart --demo`` with the plugin installed as Hermes installs it
    (``hermes plugins install``: a folder in ``$HERMES_HOME/plugins/``, imported as
    ``hermes_plugins.…``) failed "could not build the demo home (is hermes-agent installed?):
    ModuleNotFoundError: No module named 'project_history_recall'": the child that builds it
    imported the package by a name only a pip install gives it. Built, its last line offered ``hermes
    recall`` in the demo home, where Hermes found no plugin (a directory install lives in the home it
    was installed in): "'recall' is not a `hermes` command"."""
    websocket_app(world, work)
    world.close()
    enable_plugin(world.home)
    env = {k: v for k, v in cli_env(world.home, XDG_CACHE_HOME=str(tmp_path / "cache")).items() if k != "PYTHONPATH"}
    done = cli_process("quickstart", "--demo", "websocket", hermes=True, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "built it just now" in done.stdout and "Fix flaky websocket reconnect" in done.stdout, done.stdout
    hint = done.stdout.strip().splitlines()[-1].split("too: ", 1)[1]
    offered = _pasted(hint, tmp_path, tmp_path / "fresh-user")
    assert offered.returncode == 0 and "Webshop" in offered.stdout, (hint, offered.stdout, offered.stderr)


def test_a_demo_home_without_its_projects_or_the_plugin_is_built_again(tmp_path):
    """A demo home whose ``projects.db`` was deleted, or whose ``config.yaml`` no longer enables the
    plugin, was reused as whole (only its sessions were counted): quickstart said its searches ran
    "in the demo's main project, Webshop" while each searched an automatic project of that folder,
    and ended saying Hermes finds the plugin there, where ``hermes recall`` was no command."""
    user = tmp_path / "new-user"
    user.mkdir()
    env = cli_env(HOME=str(user), XDG_CACHE_HOME=str(tmp_path / "cache"))
    home = tmp_path / "cache" / "project-history-recall" / "demo" / "home"
    assert cli_process("quickstart", "websocket", cwd=tmp_path, env=env).returncode == 0
    for damage in ("projects.db", "config.yaml"):
        for path in home.glob(f"{damage}*"):
            path.unlink()
        again = cli_process("quickstart", "websocket", cwd=tmp_path, env=env)
        assert again.returncode == 0 and "built it just now" in again.stdout, (damage, again.stdout + again.stderr)
        assert "in project Webshop" in again.stdout and "automatic project" not in again.stdout, (damage, again.stdout)


def test_a_query_or_session_that_starts_with_a_dash_is_told_how_to_pass_it(world, work, tmp_path):
    """argparse takes every word that starts with ``-`` for an option: ``session -x`` said "the
    following arguments are required: session" to a person who gave one, and ``search -v`` or
    ``search rm -rf`` refused the query, with nothing on how to search for it. The refusal now says
    that such a word goes after ``--``, and the line it shows does what was meant."""
    app = _small_world(world, work)
    enable_plugin(world.home)
    for hermes in (False, True):
        prog = "hermes recall" if hermes else "project-history-recall"
        for argv, hint in ((["session", "-x"], "session -- -x"), (["search", "-v"], "search -- -x"),
                           (["search", "rm", "-rf"], "search -- -x"), (["move", "-x", "App"], "move -- -x")):
            done = cli_process(*argv, home=world.home, cwd=app, hermes=hermes)
            assert done.returncode == 2 and done.stdout == "", (argv, done)
            assert len(done.stderr.strip().splitlines()) == 1 and f"{prog} {hint}" in done.stderr, (argv, done.stderr)
        session = cli_process("--json", "session", "--", "-x", home=world.home, cwd=app, hermes=hermes)
        assert json.loads(session.stdout)["error_code"] == "unknown_session", session.stdout + session.stderr
        search = cli_process("--json", "search", "--", "rm", "-rf", home=world.home, cwd=app, hermes=hermes)
        assert json.loads(search.stdout)["query"] == "rm -rf", search.stdout + search.stderr
