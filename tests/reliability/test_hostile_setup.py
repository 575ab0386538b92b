"""Hostile settings and homes (the third hostile sweep): a config.yaml built to cost, through Hermes's
dispatch and the command line. The rule is the plugin's own answer, a warning that names what was
wrong, and state.db unchanged: never a traceback, a hang or a wrong answer."""

from __future__ import annotations

import json

from cli_runs import Outputs, run_cli
from hermes_world import call, checkpoint, db_digest, enable_plugin, plugin_settings, websocket_app


def test_a_yaml_alias_bomb_in_a_setting_is_warned_about_in_a_few_characters(world, work, capsys):
    """Aliases make a ten-line config.yaml hold a list of 9^7 strings under 'context': the warning
    shows a few levels of it (the whole repr, cut to 80 characters afterwards, cost seconds at 9^7
    and minutes and gigabytes at 9^9), and the search goes on with the default."""
    app = work / "app"
    app.mkdir()
    world.project("App", app)
    world.session(("user", "the pelican deploy uses blue-green switching"), cwd=app)
    asker = world.session(cwd=app)
    world.close()
    checkpoint(world.home)
    plugin_settings(world.home, semantic=False)
    enable_plugin(world.home)
    levels = [f'l0: &l0 [{", ".join(["lol"] * 9)}]'] + [
        f"l{n}: &l{n} [{', '.join([f'*l{n - 1}'] * 9)}]" for n in range(1, 7)]
    config = world.home / "project-history-recall" / "config.yaml"
    config.write_text(config.read_text(encoding="utf-8") + "\n".join(levels) + "\ncontext: *l6\n", encoding="utf-8")
    before = db_digest(world.home / "state.db")

    found = call("project_history_search", {"query": "pelican deploy", "mode": "keyword"}, session_id=asker)
    assert found["success"] and found["results"], found
    outputs = Outputs()
    assert run_cli(outputs, capsys, "config", "--json", home=world.home) == 0
    shown = json.loads(outputs.texts[-1])
    warning = next(w for w in shown["warnings"] if "'context'" in w)
    assert "[...]" in warning and len(warning) < len(str(config)) + 200, warning
    assert shown["settings"]["context"] == 2
    assert db_digest(world.home / "state.db") == before


def test_a_project_is_found_by_its_name_in_any_unicode_form(world, work, capsys):
    """The tools' text arguments are NFKC-normalised; the names they are compared with were not, so a
    project named with full-width letters, or with accents decomposed (as macOS writes them), was
    "No project 'Report' ... Did you mean Ｒeport?" even when named exactly as created."""
    import unicodedata

    names = {"Ｒeport": "full-width", unicodedata.normalize("NFD", "Résumé"): "decomposed", "ﬁnance": "ligature"}
    asker = {}
    for n, (name, how) in enumerate(names.items()):
        folder = work / f"p{n}"
        folder.mkdir()
        world.project(name, folder)
        world.session(("user", f"the pelican deploy of the {how} project"), cwd=folder)
        asker[name] = world.session(cwd=folder)
    caller = _asking_from_another_project(world, work)
    before = db_digest(world.home / "state.db")
    outputs = Outputs()
    for name, how in names.items():
        for ref in {name, unicodedata.normalize("NFC", name), unicodedata.normalize("NFKC", name).upper()}:
            found = call("project_history_search", {"query": "pelican deploy", "mode": "keyword", "project": ref},
                         session_id=caller)
            assert found["success"] and found["project"]["name"] == name, (ref, found)
            assert how in found["results"][0]["snippet"]
            assert run_cli(outputs, capsys, "--json", "search", "pelican deploy", "--project", ref,
                           home=world.home) == 0
            assert json.loads(outputs.texts[-1])["project"]["name"] == name
    assert db_digest(world.home / "state.db") == before


def test_a_turkish_project_is_found_by_its_name_in_either_case_and_either_i(world, work):
    """Case folding alone reads İ as i with a combining dot, and never meets ı with i: a project named
    "İzmir Ofisi" was "No project 'izmir ofisi'" and "No project 'İZMİR OFİSİ'" (the thirteenth hostile
    sweep), as was "Dış İşler" written in capitals (DIŞ İŞLER) or on a keyboard without ı."""
    names = ("İzmir Ofisi", "Dış İşler")
    for n, name in enumerate(names):
        folder = work / f"p{n}"
        folder.mkdir()
        world.project(name, folder)
        world.session(("user", f"the pelican deploy of {name}"), cwd=folder)
    caller = _asking_from_another_project(world, work)
    before = db_digest(world.home / "state.db")
    refs = {"İzmir Ofisi": ("izmir ofisi", "İZMİR OFİSİ", "IZMIR OFISI"), "Dış İşler": ("DIŞ İŞLER", "diş işler")}
    for name, spellings in refs.items():
        for ref in spellings:
            found = call("project_history_search", {"query": "pelican deploy", "mode": "keyword", "project": ref},
                         session_id=caller)
            assert found["success"] and found["project"]["name"] == name, (ref, found)
    assert db_digest(world.home / "state.db") == before


def test_a_project_is_found_by_its_folder_spelled_in_full_width(world, work, capsys):
    """A folder is named as the file system spells it: NFKC folds full-width brackets and digits
    (common in Chinese folder names) into others, which name another folder, so the search's
    ``project`` argument, normalised with the query, named no project by the very folder Hermes
    recorded."""
    folder = work / "报告（２０２４）"
    folder.mkdir()
    world.project("Report", folder)
    world.session(("user", "the pelican deploy of the report"), cwd=folder)
    caller = _asking_from_another_project(world, work)
    found = call("project_history_search", {"query": "pelican deploy", "mode": "keyword", "project": str(folder)},
                 session_id=caller)
    assert found["success"] and found["project"]["name"] == "Report", found
    outputs = Outputs()
    assert run_cli(outputs, capsys, "--json", "search", "pelican deploy", "--project", str(folder),
                   home=world.home) == 0
    assert json.loads(outputs.texts[-1])["project"]["name"] == "Report"


def _asking_from_another_project(world, work) -> str:
    """The asking session, in a project "Other" apart from the one its search names; the home
    closed and the plugin enabled, keyword search only."""
    other = work / "other"
    other.mkdir()
    world.project("Other", other)
    caller = world.session(cwd=other)
    world.close()
    checkpoint(world.home)
    plugin_settings(world.home, semantic=False)
    enable_plugin(world.home)
    return caller


def test_status_says_the_settings_file_was_ignored_and_where_it_broke(world, work):
    """A tab in the plugin's config.yaml (YAML refuses one for indentation) throws the whole file
    out, ``semantic: false`` with it. Only ``config`` said so, and only "could not be read
    (ScannerError)": ``status`` and ``/recall status``, where a person looks, showed semantic search
    ready as if it were their choice. Status now carries the settings' warnings, and the warning
    says where YAML stopped and why."""
    from cli_runs import cli_process

    app, _asker = websocket_app(world, work)
    world.close()
    enable_plugin(world.home)
    config = world.home / "project-history-recall" / "config.yaml"
    config.write_text("index_budget_ms: 60000\nsemantic: false\nopenai:\n\tmodel: mine\n", encoding="utf-8")
    # YAML's reason as the loader words it: libyaml (PyYAML's C loader, used where PyYAML has it) says
    # "found character that cannot start any token", the pure-Python one names the tab in it.
    said = "config.yaml: could not be read (ScannerError at line 4, column 1: found character"
    for hermes in (False, True):
        shown = cli_process("status", home=world.home, cwd=app, hermes=hermes)
        assert shown.returncode == 0 and said in shown.stdout, (hermes, shown.stdout + shown.stderr)
        assert "that cannot start any token); its settings were ignored" in shown.stdout, shown.stdout
        answer = json.loads(cli_process("--json", "status", home=world.home, cwd=app, hermes=hermes).stdout)
        assert any(said in w for w in answer["warnings"]), answer
