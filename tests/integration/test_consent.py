"""Remote embedders through the real Hermes: nothing leaves before consent, consent per
(service, model, project), the key never shows, failures leave keyword search working.

The embedding service is a real HTTP server on loopback (``embed_server``)
that records every request it gets.
"""

from __future__ import annotations

import json
import logging
import os
import pty
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from cli_runs import MODULE, Outputs, cli_env, cli_process, run_cli
from embed_server import EmbeddingServer, Reply
from hermes_world import (EMBED_KEY, EMBED_MODEL, P_TEXTS, PLUGIN_KEY, TOOL_TEXT, World, call, plugin_module,
                          remote_settings, wait_idle)

SEARCH = "project_history_search"
MOVE = "project_session_move"
QUERY_MARK = "querymarker"


def search(remote_pq, who: str, query: str, **extra) -> dict:
    return call(SEARCH, {"query": query, "context": 0, **extra}, session_id=remote_pq[who])


def token(remote_pq, project: str, server: EmbeddingServer, who: str, model: str = EMBED_MODEL, **kw) -> str:
    """A genuine token for ``project``, given to the conversation of session ``who``."""
    return plugin_module("semantic.consent_tokens").token_for(remote_pq["home"], server.url, model,
                                                              ("explicit", remote_pq[project]), remote_pq[who], **kw)


def subprocess_cli(outputs: Outputs, home: Path, *argv, hermes: bool = False, cwd: Path | None = None):
    env = cli_env(home)
    env.pop("PHR_TEST_KEY", None)
    proc = cli_process(*argv, home=home, cwd=cwd, env=env, hermes=hermes)
    outputs.add(proc.stdout + proc.stderr)
    return proc


def every_path(remote_pq, server, capsys, monkeypatch, outputs: Outputs, *, before_consent: bool = True) -> None:
    """Every tool call, slash command and CLI command there is, from both projects."""
    from hermes_cli.plugins import get_plugin_command_handler

    home = remote_pq["home"]
    # genuine tokens of the asking conversation, for the other project
    q_tok_in_p, p_tok_in_q = token(remote_pq, "Q", server, "askP"), token(remote_pq, "P", server, "askQ")
    for who in ("askP", "askQ"):
        for mode in ("hybrid", "keyword", "semantic"):
            outputs.add(search(remote_pq, who, f"pelican quokka {QUERY_MARK} {mode}", mode=mode))
        outputs.add(search(remote_pq, who, f"zanzibar {QUERY_MARK}", include_tool_output=True, since="3650d", limit=50))
        outputs.add(search(remote_pq, who, f"{QUERY_MARK} ledger", project="Quokka"))
        outputs.add(search(remote_pq, who, f"{QUERY_MARK} harbour", project="Pelican", include_current_session=True))
        outputs.add(search(remote_pq, who, f"{QUERY_MARK} yes", consent="yes"))
        outputs.add(search(remote_pq, who, f"{QUERY_MARK} granted", consent="granted"))
        outputs.add(search(remote_pq, who, f"{QUERY_MARK} true", consent=True))
    outputs.add(search(remote_pq, "askP", f"{QUERY_MARK} wrong project token", consent=q_tok_in_p))
    outputs.add(search(remote_pq, "askQ", f"{QUERY_MARK} wrong project token", consent=p_tok_in_q))
    outputs.add(call(SEARCH, {"query": f"{QUERY_MARK} no ids"}))
    outputs.add(call(MOVE, {"project": "Quokka", "session": remote_pq["spare"]}, session_id=remote_pq["askP"]))
    outputs.add(call(MOVE, {"project": "Pelican", "session": remote_pq["spare"]}, session_id=remote_pq["askQ"]))
    outputs.add(call(MOVE, {"project": "nowhere"}, session_id=remote_pq["askP"]))

    handler = get_plugin_command_handler("recall")
    monkeypatch.setenv("HERMES_SESSION_ID", remote_pq["askP"])
    for line in (f"pelican {QUERY_MARK}", "status", f"search status {QUERY_MARK}", "move Quokka", "move Pelican", ""):
        outputs.add(handler(line))
    monkeypatch.delenv("HERMES_SESSION_ID")

    p_dir, q_dir = str(remote_pq["p_dir"]), str(remote_pq["q_dir"])
    for mode in ("hybrid", "keyword", "semantic"):
        run_cli(outputs, capsys, "search", f"pelican {QUERY_MARK}", "--dir", p_dir, "--mode", mode, home=home)
        run_cli(outputs, capsys, "search", f"zanzibar {QUERY_MARK}", "--dir", q_dir, "--mode", mode, "--json",
                "--tools", home=home)
    run_cli(outputs, capsys, "search", QUERY_MARK, "--project", "Quokka", "--dir", p_dir, home=home)
    for argv in (["status", p_dir], ["status", q_dir, "--json"], ["projects"], ["projects", "--json"],
                 ["session", remote_pq["p1"]], ["session", remote_pq["q1"], "--json"],
                 ["move", remote_pq["spare"], "Quokka"],
                 ["move", remote_pq["spare"], "Pelican", "--json"], ["config"], ["config", "--json"],
                 ["consent", "list"], ["consent", "list", "--json"], ["consent"],
                 ["consent", "grant", p_dir], ["consent", "grant", "--project", "Quokka", "--json"]):
        run_cli(outputs, capsys, *argv, home=home)
    codes = [run_cli(outputs, capsys, "index", p_dir, home=home),
             run_cli(outputs, capsys, "index", "--all", "--json", home=home),
             run_cli(outputs, capsys, "index", "--project", "Quokka", home=home)]
    if before_consent:
        assert codes == [4, 4, 4]  # nothing indexed: consent needed first
    monkeypatch.chdir(remote_pq["p_dir"])
    run_cli(outputs, capsys, "quickstart", f"pelican {QUERY_MARK}", home=home)
    run_cli(outputs, capsys, "quickstart", home=home)
    if before_consent:
        assert subprocess_cli(outputs, home, "index", "--all", cwd=remote_pq["p_dir"]).returncode == 4
        proc = subprocess_cli(outputs, home, "search", f"pelican {QUERY_MARK}", "--dir", p_dir, "--json", hermes=True)
        assert "consent_required" in proc.stdout, proc.stderr


# -- nothing before consent ------------------------------------------------------------------------------
def test_nothing_is_sent_before_consent_on_any_path(remote_pq, server, capsys, monkeypatch):
    outputs = Outputs()
    every_path(remote_pq, server, capsys, monkeypatch, outputs)
    wait_idle()
    assert server.count() == 0, [r.inputs for r in server.requests]
    # what the agent was told, and what a person sees instead
    asked = json.loads(outputs.texts[0])
    assert asked["semantic_status"] == "consent_required" and asked["results"], asked
    c = asked["consent"]
    assert c["service"] == server.url and c["model"] == EMBED_MODEL and c["project"]["name"] == "Pelican"
    assert c["would_send"]["messages"] == 5 and c["would_send"]["sessions"] == 4  # P's user/assistant rows
    assert c["nothing_sent_yet"] and "Pelican" in c["ask_user"] and server.url in c["ask_user"]
    assert plugin_module("semantic.consent_tokens").token_status(remote_pq["home"], c["token"], server.url, EMBED_MODEL,
                                                                 ("explicit", remote_pq["P"]), (remote_pq["askP"],)) == "valid"
    # a token only ever appears in the tool responses that ask
    tokens = {t for text in outputs.texts for t in plugin_module("redaction").CONSENT_TOKEN.findall(text)}
    assert c["token"] in tokens
    for text in outputs.texts:
        if any(t in text for t in tokens):
            assert text.startswith("{") and '"consent_required"' in text, text[:300]
    assert "consent grant --project" in outputs  # a person is told the command instead
    # a made-up or boolean "consent" grants nothing
    bools = [json.loads(t) for t in outputs.texts if t.startswith("{") and "only ever the token" in t]
    assert bools and all(b["success"] is False and b["error_code"] == "bad_argument" for b in bools)
    assert not plugin_module("semantic.consent").records(remote_pq["home"])[0]


# -- consent per project, service and model -------------------------------------------------------------------
def test_after_consent_only_that_projects_text_is_sent_and_another_project_asks_again(remote_pq, server):
    first = search(remote_pq, "askP", "pelican worker version")
    assert first["semantic_status"] == "consent_required" and server.count() == 0
    agreed = search(remote_pq, "askP", "pelican worker version", consent=first["consent"]["token"])
    assert agreed["consent"]["status"] == "recorded", agreed
    assert agreed["semantic_status"] in ("ready", "partial"), agreed
    assert any(r["score_source"] in ("semantic", "both") for r in agreed["results"])
    wait_idle()
    sent = server.texts()
    assert sent and all("quokka" not in t.lower() and "zanzibar" not in t.lower() for t in sent)
    assert TOOL_TEXT not in json.dumps(sent)
    p_text = set(P_TEXTS) | {"what did we decide about pelican", "a pelican note to move", "pelican worker version"}
    assert set(sent) <= p_text, set(sent) - p_text
    assert set(P_TEXTS) <= set(sent)  # the project was indexed

    before = server.count()
    from_q = search(remote_pq, "askQ", "zanzibar ledger")
    assert from_q["semantic_status"] == "consent_required" and from_q["consent"]["project"]["name"] == "Quokka"
    reused = search(remote_pq, "askQ", "zanzibar ledger", consent=first["consent"]["token"])
    assert reused["semantic_status"] == "consent_required"
    assert reused["consent"]["token_result"]["status"] == "rejected"
    other = search(remote_pq, "askP", "ledger", project="Quokka")  # Q's history searched from P: Q's consent
    assert other["semantic_status"] == "consent_required" and other["consent"]["project"]["name"] == "Quokka"
    wait_idle()
    assert server.count() == before

    again = search(remote_pq, "askP", "harbour deployment")  # same scope: never asked again
    assert again["semantic_status"] in ("ready", "partial") and "consent" not in again
    # the user's file kept its comment and settings; the consent sits in it
    text = remote_pq["config"].read_text(encoding="utf-8")
    assert text.startswith("# my remote embedder, chosen on purpose\n") and "embedder: openai" in text
    data = yaml.safe_load(text)
    assert data["openai"]["model"] == EMBED_MODEL and [c["project"]["id"] for c in data["consents"]] == [remote_pq["P"]]
    # a new process does not ask again either
    outputs = Outputs()
    proc = subprocess_cli(outputs, remote_pq["home"], "search", "pelican harbour", "--dir", str(remote_pq["p_dir"]),
                          "--json")
    assert json.loads(proc.stdout)["semantic_status"] in ("ready", "partial"), proc.stdout + proc.stderr


@pytest.mark.parametrize("change", ["service", "model"])
def test_another_service_or_model_asks_again(remote_pq, server, change):
    first = search(remote_pq, "askP", "pelican")
    assert search(remote_pq, "askP", "pelican", consent=first["consent"]["token"])["consent"]["status"] == "recorded"
    other = EmbeddingServer(dimension=16)
    try:
        settings = {"base_url": other.url} if change == "service" else {"model": "another-model"}
        # Hermes's own config.yaml overrides the plugin's file (which keeps the consent)
        (remote_pq["home"] / "config.yaml").write_text(yaml.safe_dump({"plugins": {
            "enabled": [PLUGIN_KEY], "entries": {PLUGIN_KEY: {"settings": {"openai": settings}}}}}), encoding="utf-8")
        before = server.count()
        res = search(remote_pq, "askP", "pelican")
        assert res["semantic_status"] == "consent_required", res
        assert res["consent"]["service"] == (other.url if change == "service" else server.url)
        assert res["consent"]["model"] == (EMBED_MODEL if change == "service" else "another-model")
        assert res["consent"]["token"] != first["consent"]["token"]
        wait_idle()
        assert other.count() == 0 and server.count() == before
    finally:
        other.close()


def test_people_grant_and_list_consents_on_the_command_line(remote_pq, server, capsys):
    outputs = Outputs()
    home = remote_pq["home"]
    assert run_cli(outputs, capsys, "consent", "grant", "--project", "Quokka", home=home) == 2  # no --yes, no tty
    assert "add --yes" in outputs.texts[-1] and server.count() == 0
    assert run_cli(outputs, capsys, "consent", "grant", "--project", "Quokka", "--yes", home=home) == 0
    assert "Consent recorded" in outputs.texts[-1]
    assert run_cli(outputs, capsys, "consent", "grant", "--project", "Quokka", "--yes", home=home) == 1
    assert run_cli(outputs, capsys, "consent", "list", "--json", home=home) == 0
    listed = json.loads(outputs.texts[-1])["consents"]
    assert [(c["project"]["name"], c["service"], c["model"]) for c in listed] == [("Quokka", server.url, EMBED_MODEL)]
    assert server.count() == 0  # granting sends nothing
    assert run_cli(outputs, capsys, "index", "--project", "Quokka", "--json", home=home) == 0
    indexed = json.loads(outputs.texts[-1])
    assert indexed["projects"][0]["messages_embedded"] == 3 and indexed["model"].startswith(f"openai/{server.url}/")
    assert server.count() > 0 and all("pelican" not in t.lower() for t in server.texts())
    res = search(remote_pq, "askQ", "zanzibar ledger")
    assert res["semantic_status"] in ("ready", "partial") and "consent" not in res
    assert run_cli(outputs, capsys, "index", "--all", home=home) == 4  # Pelican still needs consent
    assert "Skipped Pelican" in outputs.texts[-1]
    wait_idle()
    assert server.texts() and all("pelican" not in t.lower() for t in server.texts())


def test_a_consent_stays_in_the_profile_it_was_given_in(remote_pq, server, capsys, monkeypatch):
    """A profile cloned with all its files carries the plugin's config.yaml, consents and all;
    nobody agreed in the new profile, so nothing of it is sent until someone does."""
    from hermes_cli.profiles import create_profile

    outputs = Outputs()
    assert run_cli(outputs, capsys, "consent", "grant", "--project", "Pelican", "--yes", home=remote_pq["home"]) == 0
    assert search(remote_pq, "askP", "pelican worker version")["semantic_status"] in ("ready", "partial")
    wait_idle()
    sent = server.count()
    assert sent > 0
    clone = create_profile("work", clone_all=True, no_alias=True)
    assert "consents:" in (clone / PLUGIN_KEY / "config.yaml").read_text(encoding="utf-8")
    monkeypatch.setenv("HERMES_HOME", str(clone))
    # The new profile's own history (Hermes starts it afresh; projects.db came along), in the same folder.
    work = World(clone)
    work.session(("user", "The pelican worker in the work profile pins version 9 of the queue client."),
                 cwd=remote_pq["p_dir"])
    asker = work.session(cwd=remote_pq["p_dir"])
    work.close()
    asked = call(SEARCH, {"query": "pelican worker version", "context": 0}, session_id=asker)
    assert asked["success"] and asked["semantic_status"] == "consent_required", asked
    assert asked["profile"] == "work" and asked["results"]  # keyword search goes on
    run_cli(outputs, capsys, "search", "pelican worker", "--dir", str(remote_pq["p_dir"]), "--json", home=clone)
    assert json.loads(outputs.texts[-1])["semantic_status"] == "consent_required"
    assert run_cli(outputs, capsys, "consent", "list", "--json", home=clone) == 0
    listed = json.loads(outputs.texts[-1])
    assert listed["consents"] == [] and "another Hermes home" in " ".join(listed["warnings"]), listed
    wait_idle()
    assert server.count() == sent  # nothing of the new profile was sent
    # Agreeing in the new profile counts there.
    assert run_cli(outputs, capsys, "consent", "grant", "--project", "Pelican", "--yes", home=clone) == 0
    again = call(SEARCH, {"query": "pelican worker version", "context": 0}, session_id=asker)
    assert again["semantic_status"] in ("ready", "partial"), again
    assert server.count() > sent


def test_a_consent_is_added_to_the_block_a_byte_order_mark_opens(remote_pq, server):
    """The plugin's config.yaml saved with a byte-order mark (Windows Notepad writes one) where
    ``consents:`` is the first key, as the plugin writes it into a new file. YAML skips the mark,
    the plugin's editor did not: it found no ``consents:`` block and wrote a second one at the end,
    which wins. The first then showed consents that no longer decided anything: deleting one there,
    the way a consent is withdrawn, withdrew nothing."""
    home, config = remote_pq["home"], remote_pq["config"]
    assert cli_process("consent", "grant", "--yes", home=home, cwd=remote_pq["p_dir"]).returncode == 0
    settings = yaml.safe_load(config.read_text(encoding="utf-8"))
    consents = settings.pop("consents")
    config.write_text("\ufeff" + yaml.safe_dump({"consents": consents}) + yaml.safe_dump(settings), encoding="utf-8")
    assert cli_process("consent", "grant", "--yes", home=home, cwd=remote_pq["q_dir"]).returncode == 0
    text = config.read_text(encoding="utf-8")
    assert text.count("consents:") == 1, text
    listed = cli_process("--json", "consent", "list", home=home, cwd=remote_pq["p_dir"])
    assert sorted(c["project"]["name"] for c in json.loads(listed.stdout)["consents"]) == ["Pelican", "Quokka"]


@pytest.mark.parametrize("hermes", [False, True], ids=["standalone", "hermes-recall"])
def test_the_consent_question_is_asked_where_the_person_reads_it(remote_pq, server, hermes):
    """``consent grant --json | jq`` from a terminal: the question and its ``Agree? [y/N]`` went to
    stdout, into the pipe, so the person saw nothing while the command waited for an answer, and an
    answer typed blind recorded a consent and gave jq the question before the JSON. The question is
    asked on stderr, the terminal (and only where stderr is one), and stdout holds the answer alone."""
    from cli_runs import HERMES_BIN
    from pty_terminal import Terminal

    home = remote_pq["home"]
    argv = [str(HERMES_BIN), "recall"] if hermes else list(MODULE)
    term = Terminal([*argv, "--json", "consent", "grant", "--project", "Pelican"], cli_env(home),
                    cwd=remote_pq["p_dir"], stdout=subprocess.PIPE)
    try:
        asked = term.wait_for("Agree? [y/N]", timeout=60)
        assert "Pelican" in asked and "http://" in asked, asked
        term.type("y")
        answer, _ = term.proc.communicate(timeout=120)
    finally:
        code = term.close()
    assert code == 0 and json.loads(answer)["recorded"] is True, answer
    assert server.count() == 0
    listed = cli_process("--json", "consent", "list", home=home, cwd=remote_pq["p_dir"])
    assert [c["project"]["name"] for c in json.loads(listed.stdout)["consents"]] == ["Pelican"]
    # stderr somewhere the person does not read (a log) is no place to ask: --yes is needed, as from a pipe
    leader, follower = pty.openpty()
    try:
        logged = subprocess.run([*argv, "consent", "grant", "--project", "Quokka"], stdin=follower, stdout=follower,
                                stderr=subprocess.DEVNULL, env=cli_env(home), cwd=remote_pq["q_dir"], timeout=120)
    finally:
        os.close(follower)
        os.close(leader)
    assert logged.returncode == 2


# -- the key ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("line", [f"PHR_TEST_KEY={EMBED_KEY}   # the work key", f"PHR_TEST_KEY='{EMBED_KEY}' # work",
                                  f'export PHR_TEST_KEY="{EMBED_KEY}"\t# rotated in May',
                                  f"export\tPHR_TEST_KEY={EMBED_KEY}",
                                  # A key named by another variable, which dotenv puts in its place.
                                  f"OPENAI_API_KEY={EMBED_KEY}\nPHR_TEST_KEY=${{OPENAI_API_KEY}}",
                                  f'PHR_TEST_KEY="${{UNSET_KEY:-{EMBED_KEY}}}"'])
def test_a_comment_after_the_key_in_env_is_no_part_of_it(remote_pq, server, line):
    """``.env`` with a comment after the key, as python-dotenv (which Hermes reads it with) and
    shells allow. The plugin took the comment, and the quotes around a quoted key, for part of the
    key: every request went out as ``Bearer sk-… # the work key``, which the service refused, and
    semantic search never worked though Hermes read the same file right. ``export`` and a tab, which
    dotenv takes too, named no variable at all. ``${OTHER}`` (``${OTHER:-default}``) went out as
    those very characters, where Hermes reads the other variable's value."""
    (remote_pq["home"] / ".env").write_text(f"# keys\n{line}\n", encoding="utf-8")
    home, p_dir = remote_pq["home"], remote_pq["p_dir"]
    assert cli_process("consent", "grant", "--yes", home=home, cwd=p_dir).returncode == 0
    done = cli_process("--json", "search", "pelican worker version", "--mode", "semantic", home=home, cwd=p_dir)
    assert done.returncode == 0 and json.loads(done.stdout)["semantic_status"] == "ready", done.stdout + done.stderr
    assert server.requests and {r.headers.get("Authorization") for r in server.requests} == {f"Bearer {EMBED_KEY}"}


@pytest.mark.parametrize("env_line", ["# no key in this profile", "PHR_TEST_KEY=${PHR_LAUNCH_KEY}"])
def test_a_gateway_serving_several_profiles_never_sends_the_launching_profiles_key(remote_pq, server, monkeypatch,
                                                                                   env_line):
    """A gateway started in one profile and serving others (``gateway.multiplex_profiles``) holds its
    launching profile's ``.env`` in the process's environment; Hermes hands a served profile only that
    profile's secrets (``agent.secret_scope.get_secret``, which refuses the environment there, and reads
    a served profile's ``.env`` without the environment). This profile consented, and keeps no key of its
    own, or names one of the environment's: the other profile's key went out with every request, on that
    profile's account."""
    import hermes_constants
    from agent import secret_scope

    home, p_dir = remote_pq["home"], remote_pq["p_dir"]
    (home / ".env").write_text(env_line + "\n", encoding="utf-8")
    assert cli_process("consent", "grant", "--yes", home=home, cwd=p_dir).returncode == 0
    launching = "sk-phr-launching-profile-Qm4Zr8Tc2Lw6"
    monkeypatch.setenv("PHR_TEST_KEY", launching)
    monkeypatch.setenv("PHR_LAUNCH_KEY", launching)
    # The gateway was launched in another home; this one is served, as Hermes serves a profile.
    launch_home = remote_pq["home"].parent / "launch-home"
    launch_home.mkdir()
    monkeypatch.setenv("HERMES_HOME", str(launch_home))
    served = hermes_constants.set_hermes_home_override(remote_pq["home"])
    secret_scope.set_multiplex_active(True)
    try:
        search(remote_pq, "askP", "pelican worker version", mode="semantic")
        wait_idle()
    finally:
        secret_scope.set_multiplex_active(False)
        hermes_constants.reset_hermes_home_override(served)
        monkeypatch.setenv("HERMES_HOME", str(remote_pq["home"]))
    assert server.requests, "the search sent nothing to look at"
    assert {r.headers.get("Authorization") for r in server.requests} == {None}
    # The launching profile's own home reads the environment, which is its own; so does a process of one profile.
    for multiplexed, query in ((True, "pelican harbour deploy"), (False, "pelican invoice exporter")):
        secret_scope.set_multiplex_active(multiplexed)
        try:
            search(remote_pq, "askP", query, mode="semantic")
        finally:
            secret_scope.set_multiplex_active(False)
        assert server.requests[-1].headers.get("Authorization") == f"Bearer {launching}", multiplexed


def test_the_key_never_shows_anywhere(remote_pq, server, capsys, monkeypatch, caplog, tmp_path):
    caplog.set_level(logging.DEBUG)
    log_file = tmp_path / "all.log"
    handler = logging.FileHandler(log_file, encoding="utf-8")
    handler.setLevel(logging.DEBUG)
    logging.getLogger().addHandler(handler)
    try:
        outputs = Outputs()
        every_path(remote_pq, server, capsys, monkeypatch, outputs, before_consent=False)
        first = search(remote_pq, "askP", "pelican")
        outputs.add(search(remote_pq, "askP", "pelican", consent=first["consent"]["token"]))
        wait_idle()
        assert any(r.headers.get("Authorization") == f"Bearer {EMBED_KEY}" for r in server.requests)
        # the user once pasted the key into a conversation: results show it masked
        pq_world_db = plugin_module("hermes.statedb")  # noqa: F841  (the plugin is loaded)
        from hermes_state import SessionDB

        db = SessionDB(db_path=remote_pq["home"] / "state.db")
        try:
            db.append_message(remote_pq["p2"], "user", f"my pelican key is {EMBED_KEY} keep it safe")
        finally:
            db.close()
        found = outputs.add(search(remote_pq, "askP", "pelican key safe", mode="keyword"))
        assert found["results"] and "[redacted]" in json.dumps(found)
        # the service fails and echoes the key back
        server.always = Reply(500, {"error": {"message": f"internal error for key {EMBED_KEY}"}})
        outputs.add(search(remote_pq, "askP", "a new question about pelican"))
        server.always = Reply(401, {"error": {"message": f"Incorrect API key provided: {EMBED_KEY}"}})
        outputs.add(search(remote_pq, "askP", "yet another pelican question"))
        every_path(remote_pq, server, capsys, monkeypatch, outputs, before_consent=False)
        run_cli(outputs, capsys, "index", "--project", "Pelican", "--json", home=remote_pq["home"])
        wait_idle()
        assert "HTTP 500" in outputs or "HTTP 401" in outputs or "refused the API key" in outputs
    finally:
        logging.getLogger().removeHandler(handler)
        handler.close()
    shown = outputs.texts + [r.getMessage() for r in caplog.records] + [log_file.read_text(encoding="utf-8")]
    shown += [p.read_text(encoding="utf-8", errors="replace") for p in (remote_pq["home"] / "logs").rglob("*")
              if p.is_file()]
    shown += [p.read_text(encoding="utf-8") for p in (remote_pq["home"] / PLUGIN_KEY).glob("*.yaml")]
    assert not [t for t in shown if EMBED_KEY in t]


# -- failures ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("failure", ["429", "500", "timeout"])
@pytest.mark.parametrize("dimensions", [None, 32])
def test_service_failures_are_unavailable_and_keyword_search_goes_on(remote_pq, server, capsys, failure, dimensions):
    # a known dimension goes straight to background indexing; an unknown one asks with the query first
    remote_settings(remote_pq["home"], server, timeout=0.5, query_timeout=0.5, max_retries=1, dimensions=dimensions)
    outputs = Outputs()
    assert run_cli(outputs, capsys, "consent", "grant", "--project", "Pelican", "--yes", home=remote_pq["home"]) == 0
    if failure == "timeout":
        server.delay = 3
    else:
        server.always = Reply(int(failure), {"error": {"message": "try later"}}, {"Retry-After": "0"})
    res = search(remote_pq, "askP", "pelican worker version")
    assert res["success"] and res["semantic_status"] == "unavailable", res
    expected = "did not answer within 0.5 s" if failure == "timeout" else f"HTTP {failure}"
    assert expected in res["semantic_reason"], res["semantic_reason"]
    assert res["searched_with"] == "keyword" and res["results"]
    assert "worker" in json.dumps(res["results"])


def test_a_token_quoted_in_the_history_is_not_shown_by_searches(remote_pq, server, world):
    asked = search(remote_pq, "askQ", "zanzibar")
    q_tok = asked["consent"]["token"]
    world.say(remote_pq["askQ"], "tool", json.dumps(asked))  # Hermes keeps every tool result
    world.say(remote_pq["p1"], "assistant", f"Pelican note: the quokka token was {q_tok}, do not reuse it")
    for query in ("quokka token reuse", "consent"):  # "consent" marks the token's own first word
        found = search(remote_pq, "askP", query, mode="keyword", include_tool_output=True)
        shown = json.dumps(found).replace(">>>", "").replace("<<<", "")
        assert found["results"] and q_tok[-16:] not in shown and "consent-[redacted]" in shown, (query, shown)
    assert server.count() == 0


# -- a token belongs to the conversation that asked --------------------------------------------------------------
def test_a_token_from_another_conversation_records_nothing_and_sends_nothing(remote_pq, server, world):
    asked = search(remote_pq, "askP", "pelican worker version")
    p_tok = asked["consent"]["token"]
    world.say(remote_pq["askP"], "tool", json.dumps(asked))  # Hermes keeps the whole tool result, token included
    world.say(remote_pq["askP"], "user", "No. Do NOT send anything to that service.")
    other = world.session(("user", "look up the pelican worker"), cwd=remote_pq["p_dir"], title="another chat in P")
    for ids in ({"session_id": other}, {"task_id": other}):  # the CLI names it by both, the TUI's durable id
        replayed = call(SEARCH, {"query": "pelican worker version", "context": 0, "consent": p_tok}, **ids)
        assert replayed["success"] and replayed["semantic_status"] == "consent_required", replayed
        note = replayed["consent"]["token_result"]
        assert note["status"] == "other_conversation" and "another conversation" in note["message"], note
        assert replayed["consent"]["token"] != p_tok  # this conversation's own request, to ask its user
    wait_idle()
    assert not plugin_module("semantic.consent").records(remote_pq["home"])[0]
    assert server.count() == 0


def test_a_subagent_of_the_conversation_that_asked_may_record_it(remote_pq, server, world):
    asked = search(remote_pq, "askP", "pelican worker version")
    child = world.session(parent=remote_pq["askP"], title="subagent")  # no folder of its own: it is askP's conversation
    agreed = call(SEARCH, {"query": "pelican worker version", "context": 0, "consent": asked["consent"]["token"]},
                  session_id=child)
    assert agreed["consent"]["status"] == "recorded", agreed
    # the record names the conversation the user agreed in, not the subagent
    assert plugin_module("semantic.consent").records(remote_pq["home"])[0][0]["granted_by"] == \
        f"the user, in conversation {remote_pq['askP']} (project_history_search)"


def test_an_expired_token_records_nothing_and_the_response_asks_again(remote_pq, server):
    from project_history_recall.semantic.consent_tokens import TOKEN_LIFETIME

    old = token(remote_pq, "P", server, "askP", issued_at=time.time() - TOKEN_LIFETIME - 60)
    res = search(remote_pq, "askP", "pelican worker version", consent=old)
    assert res["semantic_status"] == "consent_required", res
    note = res["consent"]["token_result"]
    assert note["status"] == "expired" and "expired" in note["message"], note
    wait_idle()
    assert not plugin_module("semantic.consent").records(remote_pq["home"])[0] and server.count() == 0
    # the fresh token in the same response is this conversation's, and counts
    agreed = search(remote_pq, "askP", "pelican worker version", consent=res["consent"]["token"])
    assert agreed["consent"]["status"] == "recorded", agreed


def test_a_call_that_names_no_conversation_gets_no_token(remote_pq, server, monkeypatch):
    monkeypatch.chdir(remote_pq["p_dir"])  # the agent's folder: Pelican, but no session id from the host
    asked = call(SEARCH, {"query": "pelican worker version", "context": 0})
    assert asked["semantic_status"] == "consent_required" and "token" not in asked["consent"], asked
    assert "consent grant --project" in asked["consent"]["how_to_record"]
    replayed = call(SEARCH, {"query": "pelican worker version", "context": 0,
                             "consent": token(remote_pq, "P", server, "askP")})
    assert replayed["consent"]["token_result"]["status"] == "other_conversation", replayed
    wait_idle()
    assert not plugin_module("semantic.consent").records(remote_pq["home"])[0] and server.count() == 0


def test_a_session_hermes_moved_out_is_not_embedded_under_the_projects_consent(remote_pq, server, world, monkeypatch):
    """Hermes moves a session of Pelican (consented) into Quokka (not) with ``update_session_cwd``,
    and its chat goes on there. A warm process's catalog takes the move in only with its next full
    read, so Pelican's next search still counted the session among Pelican's and its background
    indexer sent the new messages to the service under Pelican's consent (left by the fifth
    hostile sweep). The indexer now reads the session's project again before it sends."""
    first = search(remote_pq, "askP", "pelican worker version")
    assert search(remote_pq, "askP", "pelican worker version",
                  consent=first["consent"]["token"])["consent"]["status"] == "recorded"
    wait_idle()
    monkeypatch.setattr(plugin_module("scope.resolve").catalog(remote_pq["home"]), "max_staleness", float("inf"))
    world.db.update_session_cwd(remote_pq["spare"], str(remote_pq["q_dir"]))
    world.say(remote_pq["spare"], "user", "quokka salaries are in the zanzibar ledger, moved chat")
    world.say(remote_pq["p2"], "user", "the pelican harbour got a second crane")
    before = server.count()
    res = search(remote_pq, "askP", "harbour crane", mode="hybrid")
    assert res["semantic_status"] in ("ready", "partial"), res
    wait_idle()
    sent = server.texts()[before:]
    assert not any("zanzibar" in text for text in sent), sent
    assert any("second crane" in text for text in sent), sent  # Pelican's own new message still goes


@pytest.mark.parametrize("there", ["not-a-list", "fifo", "loop"])
def test_a_consent_is_not_recorded_over_what_the_file_holds_instead(remote_pq, server, there):
    """Where a consent is recorded (the plugin's own config.yaml) holding what no record can join:
    ``consents:`` not a list (a note the user wrote there) was replaced by the new record, the note
    lost; a FIFO in the file's place held ``consent grant`` for ever (settings read from Hermes's
    config.yaml: the plugin's is skipped as not a file), and a symlink to itself failed it as an
    internal error. Each is now refused, naming the file, and nothing is written or sent."""
    import os

    home, own = remote_pq["home"], remote_pq["config"]
    settings = yaml.safe_load(own.read_text(encoding="utf-8"))
    if there == "not-a-list":
        own.write_text(own.read_text(encoding="utf-8") + "consents: ask me again after the March audit\n",
                       encoding="utf-8")
    else:
        hermes = home / "config.yaml"
        hermes.write_text(yaml.safe_dump({**yaml.safe_load(hermes.read_text(encoding="utf-8")),
                                          "plugins": {"enabled": [PLUGIN_KEY], PLUGIN_KEY: settings}}),
                          encoding="utf-8")
        own.unlink()
        if there == "fifo":
            os.mkfifo(own)
        else:
            own.symlink_to(own.name)
    before = sorted((p.name, p.is_fifo() or p.is_symlink() or p.read_bytes()) for p in own.parent.iterdir()
                    if p.name.startswith("config.yaml"))
    try:
        done = cli_process("consent", "grant", "--project", "Quokka", "--yes", "--json", home=home, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("consent grant did not answer within 60 s")
    out = json.loads(done.stdout)
    assert done.returncode != 0 and out["success"] is False and out["error_code"] == "config_write_failed", out
    assert str(own) in out["error"] and "Traceback" not in done.stderr, (out, done.stderr[-2000:])
    assert sorted((p.name, p.is_fifo() or p.is_symlink() or p.read_bytes()) for p in own.parent.iterdir()
                  if p.name.startswith("config.yaml")) == before
    assert server.count() == 0


@pytest.mark.parametrize("mark", ["revoked: true", "withdrawn_at: 2026-12-01"])
def test_a_consent_marked_withdrawn_by_hand_sends_nothing_more(remote_pq, server, world, capsys, mark):
    """A person withdraws a consent the obvious way, writing ``revoked: true`` into its record (no
    release writes or read such a key): the record still counted and the project's new messages
    went on being sent. Now a record marked so does not count, ``consent list`` shows it as not
    counting and how to withdraw, and ``consent grant`` records a new one beside it, the person's
    lines left as they wrote them."""
    outputs = Outputs()
    home, own = remote_pq["home"], remote_pq["config"]
    assert run_cli(outputs, capsys, "consent", "grant", "--project", "Pelican", "--yes", home=home) == 0
    assert search(remote_pq, "askP", "pelican worker version")["semantic_status"] in ("ready", "partial")
    wait_idle()
    sent = server.count()
    assert sent > 0
    text = own.read_text(encoding="utf-8")
    assert text.count("  granted_by:") == 1
    text = text.replace("  granted_by:", f"  {mark}  # changed my mind\n  granted_by:")
    own.write_text(text, encoding="utf-8")
    world.say(remote_pq["p2"], "user", "the pelican harbour got a second crane after the withdrawal")
    res = search(remote_pq, "askP", "harbour crane", mode="hybrid")
    assert res["semantic_status"] == "consent_required" and res["results"], res  # keyword search goes on
    assert run_cli(outputs, capsys, "index", "--project", "Pelican", home=home) == 4
    wait_idle()
    assert server.count() == sent  # nothing more was sent, not even the question
    assert run_cli(outputs, capsys, "consent", "list", home=home) == 0
    listed = outputs.texts[-1]
    assert "No consents on record." in listed and "Marked withdrawn by hand, so not counting" in listed, listed
    assert mark.split(":")[0] in listed and "delete the entry to withdraw" in listed, listed
    assert run_cli(outputs, capsys, "consent", "list", "--json", home=home) == 0
    as_json = json.loads(outputs.texts[-1])
    assert as_json["consents"] == [] and [c["project"]["name"] for c in as_json["withdrawn"]] == ["Pelican"]
    assert own.read_text(encoding="utf-8") == text  # reading wrote nothing
    assert run_cli(outputs, capsys, "consent", "grant", "--project", "Pelican", "--yes", home=home) == 0
    assert "Consent recorded" in outputs.texts[-1]
    after = own.read_text(encoding="utf-8")
    assert after.startswith(text), after  # the person's lines, comment and all, as they wrote them
    records = yaml.safe_load(after)["consents"]
    assert len(records) == 2 and mark.split(":")[0] in records[0] and not set(records[1]) & {"revoked", "withdrawn_at"}
    again = search(remote_pq, "askP", "harbour crane", mode="hybrid")
    assert again["semantic_status"] in ("ready", "partial"), again
    wait_idle()
    assert any("second crane" in t for t in server.texts()[sent:])


def test_an_index_stopped_by_a_consent_withdrawn_mid_run_says_what_was_sent_before(remote_pq, server, world):
    """A consent deleted from config.yaml while ``index`` sends a project's batches stops the project
    before its next batch, as before; its message said "nothing was sent", of batches sent before the
    withdrawal with consent. Now it says how many were, and that nothing went after."""
    home, own = remote_pq["home"], remote_pq["config"]
    settings = own.read_text(encoding="utf-8")
    own.write_text(settings.replace("index_budget_ms:", "batch_size: 1\nindex_budget_ms:"), encoding="utf-8")
    withdrawn = own.read_text(encoding="utf-8")
    for n in range(8):
        world.say(remote_pq["p2"], "user", f"pelican harbour note {n}: crane {n} was serviced")
    assert cli_process("consent", "grant", "--project", "Pelican", "--yes", home=home).returncode == 0
    server.delay = 0.3
    run = subprocess.Popen([*MODULE, "index", "--project", "Pelican", "--json"], env=cli_env(home), cwd=home,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while server.count() < 3 and run.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        own.write_text(withdrawn, encoding="utf-8")  # the record deleted, the way consent list says
        out, err = run.communicate(timeout=120)
    finally:
        if run.poll() is None:
            run.kill()
    assert run.returncode == 4, err[-3000:]
    res = json.loads(out)
    stopped = res["skipped_for_consent"][0]
    sent = stopped["sent_before_withdrawal"]
    assert stopped["project"]["name"] == "Pelican" and sent["batches"] == server.count() >= 3, (sent, server.count())
    assert sent["chunks"] == sum(len(r.inputs) for r in server.requests), sent
    assert server.count() < 10  # stopped: not every message went
    reason = stopped["reason"]
    assert f"{sent['batches']} batches of {sent['chunks']} chunks had been sent before, with consent" in reason, reason
    assert "nothing was sent after the withdrawal" in reason and "nothing was sent," not in reason, reason
    server.delay = 0.0
    again = cli_process("index", "--project", "Pelican", home=home)
    assert again.returncode == 4 and "Skipped Pelican" in again.stdout and "nothing was sent" in again.stdout, again
    assert server.count() == sent["batches"]
