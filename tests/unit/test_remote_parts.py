"""Settings, .env, the consent records' file edits and tokens, and the OpenAI-compatible
embedder against a real loopback server (no Hermes needed)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import yaml

from conftest import SRC
from embed_server import EmbeddingServer, Reply
from project_history_recall import redaction
from project_history_recall import settings as config
from project_history_recall.files import configfile, envfile
from project_history_recall.hermes import host
from project_history_recall.semantic import consent, consent_secret, consent_tokens
from project_history_recall.semantic.embedders import openai as remote_embedder
from project_history_recall.semantic.embedders.base import EmbedderUnavailable
from project_history_recall.semantic.embedders.openai import OpenAIEmbedder

KEY = "sk-unit-Zq9xW3vK7pL2mN8rT4yB"



def own_config(home: Path, text: str) -> Path:
    path = config.plugin_config_path(home)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


# -- settings ---------------------------------------------------------------------------------
def test_precedence_and_where_each_value_came_from(home):
    own = own_config(home, "embedder: openai\nbatch_size: 8\nopenai:\n  model: a\n  timeout: 3\n")
    (home / "config.yaml").write_text(textwrap.dedent("""\
        plugins:
          project-history-recall:
            batch_size: 16
            openai: {model: b}
          entries:
            project-history-recall:
              settings:
                openai: {model: c}
        """), encoding="utf-8")
    s = config.load(home)
    assert (s.embedder, s.batch_size, s.openai.model, s.openai.timeout) == ("openai", 16, "c", 3.0)
    assert s.origins["embedder"] == str(own) and s.origins["openai.timeout"] == str(own)
    assert s.origins["batch_size"].endswith("plugins.project-history-recall")
    assert s.origins["openai.model"].endswith("plugins.entries.project-history-recall.settings")
    assert s.origins["rrf_k"] == "defaults"
    # every key has a default, and so an origin
    assert set(s.origins) == set(config._leaves(config.DEFAULTS))
    assert s.home == home and not s.warnings


def test_bad_values_are_named_and_fall_back_without_showing_secrets(home):
    own_config(home, textwrap.dedent(f"""\
        embedder: cloud
        batch_size: -3
        openai:
          api_key_env: "{KEY}"
          base_url: "https://user:{KEY}@example.com/v1"
          timeout: fast
          api_key: "{KEY}"
        consents: []
        """))
    (home / "config.yaml").write_text("plugins:\n  project-history-recall:\n    consents: [x]\n", encoding="utf-8")
    s = config.load(home)
    text = "\n".join(s.warnings)
    for key in ("'embedder'", "'batch_size'", "'openai.api_key_env'", "'openai.base_url'", "'openai.timeout'",
                "'openai.api_key'", "'consents' is only read from"):
        assert key in text, key
    assert KEY not in text
    assert (s.embedder, s.batch_size, s.openai.api_key_env) == ("local", 32, "OPENAI_API_KEY")
    assert s.openai.base_url == "https://api.openai.com/v1"


def test_a_fraction_where_a_whole_number_belongs_is_named_not_cut_down(home):
    """openai.dimensions: 5.5 is no size a model answers in; it was asked for as 5, a size
    nobody wrote. A whole number written 64.0 is that number."""
    (home / "config.yaml").write_text(textwrap.dedent("""\
        plugins:
          project-history-recall:
            batch_size: 7.9
            context: 1.5
            openai: {dimensions: 5.5, max_retries: 2.0, timeout: 2.5}
        """), encoding="utf-8")
    s = config.load(home)
    text = "\n".join(s.warnings)
    for key in ("'batch_size' = 7.9", "'context' = 1.5", "'openai.dimensions' = 5.5"):
        assert key in text, text
    assert (s.batch_size, s.context, s.openai.dimensions) == (32, 2, None)
    assert (s.openai.max_retries, s.openai.timeout) == (2, 2.5) and type(s.openai.max_retries) is int
    own_config(home, "openai:\n  dimensions: 64.0\n")
    (home / "config.yaml").unlink()
    s = config.load(home)
    assert s.openai.dimensions == 64 and type(s.openai.dimensions) is int and not s.warnings


def test_base_url_is_normalised(home):
    own_config(home, "openai:\n  base_url: 'HTTP://LocalHost:11434/v1/'\n")
    assert config.load(home).openai.base_url == "http://localhost:11434/v1"


def test_a_variable_named_in_hermes_config_is_read_as_hermes_reads_it(home, monkeypatch):
    """Hermes replaces ``${NAME}`` in its config.yaml (the profile's ``.env`` over the shell's); one
    that nothing sets stays as written, and here is then no variable name, so the default holds."""
    (home / ".env").write_text("EMBED_URL=http://localhost:11434/v1\n", encoding="utf-8")
    monkeypatch.setenv("EMBED_MODEL", "nomic-embed-text")
    monkeypatch.delenv("NOT_SET_ANYWHERE", raising=False)
    (home / "config.yaml").write_text(textwrap.dedent("""\
        timezone: ${USER_ZONE}
        plugins:
          project-history-recall:
            openai:
              base_url: ${EMBED_URL}
              model: ${EMBED_MODEL}
              api_key_env: ${NOT_SET_ANYWHERE}
        """), encoding="utf-8")
    monkeypatch.setenv("USER_ZONE", "Asia/Shanghai")
    s = config.load(home)
    assert (s.openai.base_url, s.openai.model, s.hermes_timezone) == (
        "http://localhost:11434/v1", "nomic-embed-text", "Asia/Shanghai")
    assert s.openai.api_key_env == "OPENAI_API_KEY" and any("openai.api_key_env" in w for w in s.warnings)
    monkeypatch.setenv("EMBED_MODEL", "mxbai-embed-large")  # a variable changed is read again
    assert config.load(home).openai.model == "mxbai-embed-large"
    (home / ".env").write_text("EMBED_URL=http://127.0.0.1:8080/v1\n", encoding="utf-8")
    assert config.load(home).openai.base_url == "http://127.0.0.1:8080/v1"


def test_numbers_and_switches_written_as_text_are_read_as_hermes_reads_them(home, monkeypatch):
    """A ``${NAME}`` Hermes's files replace is always text, and a quoted number is text to YAML: Hermes
    reads both as the number (its settings' coercion), and 1/0 as on/off. Text that is no number, or a
    number out of range, is still refused with the value shown."""
    monkeypatch.setenv("PHR_CONTEXT", "4")
    monkeypatch.setenv("PHR_SEMANTIC", "0")
    (home / "config.yaml").write_text(textwrap.dedent("""\
        plugins:
          project-history-recall:
            context: ${PHR_CONTEXT}
            semantic: ${PHR_SEMANTIC}
            keyword_index: 1
            batch_size: " 64 "
            semantic_weight: "0.7"
            openai: {dimensions: "256", timeout: "2.5"}
            chunk_chars: "lots"
            rrf_k: "1e400"
            order_weight: "nan"
            index_budget_ms: "2.5"
        """), encoding="utf-8")
    s = config.load(home)
    assert (s.context, s.semantic, s.keyword_index, s.batch_size, s.semantic_weight) == (4, False, True, 64, 0.7)
    assert (s.openai.dimensions, s.openai.timeout) == (256, 2.5) and type(s.context) is int
    assert (s.chunk_chars, s.rrf_k, s.order_weight, s.index_budget_ms) == (800, 3, 0.05, 1500)
    assert sorted(w.split("'")[1] for w in s.warnings) == ["chunk_chars", "index_budget_ms", "order_weight", "rrf_k"]
    assert any("'chunk_chars' = 'lots' is not valid" in w for w in s.warnings)


def test_a_refused_setting_says_what_it_takes(home):
    """``embedder: e5`` (for e5-small), ``context: -1``, ``semantic: maybe`` each said only "is not valid;
    using …", sending the person to the README for the names and bounds. The warning now says them."""
    own_config(home, "embedder: e5\ncontext: -1\nsemantic: maybe\nsemantic_weight: 11\nopenai: {model: '', dimensions: 0.5}\n")
    said = "\n".join(config.load(home).warnings)
    for part in ("'embedder' = 'e5' is not valid (one of local, e5-small, local+e5, openai); using 'local'",
                 "'context' = -1 is not valid (a whole number from 0 to 10); using 2",
                 "'semantic' = 'maybe' is not valid (true or false); using true",
                 "'semantic_weight' = 11 is not valid (a number from 0.0 to 10.0); using 0.5",
                 "'openai.model' = '' is not valid (a text that is not blank)",
                 "'openai.dimensions' = 0.5 is not valid (a whole number from 1 to 16384); using null"):
        assert part in said, (part, said)


def test_settings_put_where_nothing_reads_them_are_named(home):
    """The plugin's settings at the top level of Hermes's config.yaml, under the package's name
    (``project_history_recall``) or another case, or in its Hermes entry beside ``settings`` were
    read by nothing, and ``config`` and ``status`` showed the defaults without a word. Each place is
    now named with where settings go; Hermes's own keys of the entry are left alone."""
    (home / "config.yaml").write_text(textwrap.dedent("""\
        project-history-recall: {semantic: false}
        plugins:
          enabled: [project-history-recall]
          project_history_recall: {semantic: false}
          Project-History-Recall: {context: 3}
          entries:
            project-history-recall:
              allow_tool_override: false
              enabled: true
              config: {semantic: false}
              context: 3
              settings: {batch_size: 8}
        """), encoding="utf-8")
    s = config.load(home)
    assert (s.semantic, s.context, s.batch_size) == (True, 2, 8)
    named = sorted(w.split("'")[1] for w in s.warnings)
    assert named == sorted(["project-history-recall", "plugins.project_history_recall", "plugins.Project-History-Recall",
                            "plugins.entries.project-history-recall.config",
                            "plugins.entries.project-history-recall.context"]), named
    assert all("go under 'plugins.project-history-recall'" in w for w in s.warnings), s.warnings


@pytest.mark.parametrize("enabled,said", [
    ("project-history-recall", "'plugins.enabled' is a text, not a list: Hermes enables no plugin from it"),
    ("[project_history_recall]", "'plugins.enabled' names 'project_history_recall': Hermes knows the plugin as"),
    ("[Project-History-Recall, other]", "'plugins.enabled' names 'Project-History-Recall': Hermes knows the"),
    ("[project-history-recall]", None), ("[project-history-recall, project_history_recall]", None),
    ("other", None), ("[]", None)])
def test_the_plugin_enabled_in_a_way_hermes_does_not_take_is_said(home, enabled, said):
    """``enabled: project-history-recall`` (a text: Hermes reads only a list, so it enables nothing) or the
    plugin under another spelling: Hermes loaded no plugin and said nothing, ``hermes recall`` was
    "invalid choice" and the agent had no tools, while ``status`` here looked fine. It says so now."""
    (home / "config.yaml").write_text(f"plugins:\n  enabled: {enabled}\n", encoding="utf-8")
    warnings = config.load(home).warnings
    assert [w.split(": ", 1)[1][:len(said)] for w in warnings] == ([said] if said else []), warnings


# -- .env ----------------------------------------------------------------------------------------
def test_env_file_is_read_like_hermes_does(home, monkeypatch):
    (home / ".env").write_text("\ufeff# comment\nexport A_KEY='one two'\nB_KEY=\"q\\\"x\"\nnot a line\nC_KEY=plain\n",
                               encoding="utf-8")
    assert envfile.parse((home / ".env").read_text(encoding="utf-8")) == {"A_KEY": "one two", "B_KEY": 'q"x',
                                                                          "C_KEY": "plain"}
    monkeypatch.setenv("C_KEY", "from-shell")
    monkeypatch.setenv("D_KEY", "only-shell")
    assert envfile.lookup(home, "C_KEY") == ("plain", ".env")  # .env wins, as in Hermes
    assert envfile.lookup(home, "D_KEY") == ("only-shell", "environment")
    assert envfile.lookup(home, "NOPE") == (None, "")
    shown = envfile.describe(home, "C_KEY")
    assert shown["set"] and "plain" not in str(shown)


def test_a_key_an_administrator_pins_in_the_managed_env_wins_as_in_hermes(home, tmp_path, monkeypatch):
    """Hermes loads the managed scope's ``.env`` last, with override: its value beats the profile's
    ``.env`` and the shell's; a variable it does not pin is read as ever."""
    managed = tmp_path / "managed"
    managed.mkdir()
    (managed / ".env").write_text("C_KEY=pinned-by-admin\n", encoding="utf-8")
    (home / ".env").write_text("C_KEY=mine\nD_KEY=also-mine\n", encoding="utf-8")
    monkeypatch.setenv("C_KEY", "from-shell")
    monkeypatch.setenv("HERMES_MANAGED_DIR", str(managed))
    environment = host.environment(home, host.managed_folder())
    assert envfile.lookup(home, "C_KEY", environment) == ("pinned-by-admin", envfile.PINNED)
    assert envfile.lookup(home, "D_KEY", environment) == ("also-mine", ".env")
    shown = envfile.describe(home, "C_KEY", environment)
    assert shown["from"] == str(managed / ".env") and "pinned-by-admin" not in str(shown)
    own_config(home, "embedder: openai\nopenai:\n  api_key_env: C_KEY\n")
    assert config.configured_key(home) == "pinned-by-admin"  # the key the remote embedder sends
    monkeypatch.setenv("HERMES_MANAGED_DIR", str(tmp_path / "no-such-folder"))
    assert envfile.lookup(home, "C_KEY", host.environment(home, host.managed_folder())) == ("mine", ".env")



def test_loading_the_settings_looks_for_the_managed_scope_once(home, tmp_path, monkeypatch):
    """Its config.yaml and its ``.env`` sit in one folder: one look for it per load, not one per file."""
    managed = tmp_path / "managed"
    managed.mkdir()
    (managed / "config.yaml").write_text("plugins:\n  project-history-recall:\n    batch_size: 7\n", encoding="utf-8")
    monkeypatch.setenv("HERMES_MANAGED_DIR", str(managed))
    looks = []
    isdir = os.path.isdir
    monkeypatch.setattr(host.os.path, "isdir", lambda path: looks.append(path) or isdir(path))
    assert config.load(home).batch_size == 7
    assert looks.count(managed) == 1, looks

# -- editing config.yaml --------------------------------------------------------------------------
USER_TEXT = textwrap.dedent("""\
    # my settings, keep this comment
    embedder: openai   # remote, on purpose
    openai:
      model: nomic-embed-text  # local ollama

    consents:
    - service: http://old
      model: m
      project: {kind: explicit, id: p_1, name: One}
    # a note before the next key
    batch_size: 8
    """)


def test_replace_block_keeps_everything_else_to_the_character():
    new = configfile.replace_block(USER_TEXT, "consents", [{"service": "s", "model": "m"}])
    assert new.startswith("# my settings, keep this comment\nembedder: openai   # remote, on purpose\n")
    assert "# local ollama" in new and "# a note before the next key\nbatch_size: 8\n" in new
    assert yaml.safe_load(new) == {"embedder": "openai", "openai": {"model": "nomic-embed-text"},
                                   "consents": [{"service": "s", "model": "m"}], "batch_size": 8}
    appended = configfile.replace_block("a: 1  # c", "consents", [])
    assert appended.startswith("a: 1  # c\n") and yaml.safe_load(appended) == {"a": 1, "consents": []}


@pytest.mark.parametrize("held", [USER_TEXT, USER_TEXT.replace("\n- ", "\n  - ").replace("\n  model: m\n",
                                                                                         "\n    model: m\n")
                                  .replace("\n  project:", "\n    project:"),
                                  "consents: [{service: http://old}]  # flow style\n"])
def test_a_record_added_to_the_list_leaves_the_records_before_it_as_written(home, held):
    """A record a person edited by hand (``revoked: true``, a comment, a flow-style mapping) stays as
    they wrote it when a consent is recorded after it: the new one is appended after the block; a
    block written in flow style is written anew, its data kept."""
    path = own_config(home, held)
    before = yaml.safe_load(held)
    added = {"service": "s", "model": "m2"}
    configfile.update_block(path, "consents", lambda current: [*current, added])
    text = path.read_text(encoding="utf-8")
    assert yaml.safe_load(text) == {**before, "consents": [*before["consents"], added]}
    if "flow style" not in held:
        kept = held.split("# a note before the next key")[0].rstrip("\n")
        assert text.startswith(kept + "\n") and text.endswith("# a note before the next key\nbatch_size: 8\n"), text


def test_replace_block_refuses_what_it_cannot_edit_safely():
    with pytest.raises(configfile.ConfigWriteError):
        configfile.replace_block("{a: 1, consents: []}\n", "consents", [1])
    with pytest.raises(configfile.ConfigWriteError):
        configfile.replace_block("a: [unclosed\n", "consents", [1])
    with pytest.raises(configfile.ConfigWriteError):
        configfile.replace_block("- a list\n", "consents", [1])


def _crash_writing(home: Path, when: str) -> subprocess.CompletedProcess:
    """Grant a consent in a child process that dies (os._exit) at ``when``."""
    code = textwrap.dedent(f"""
        import os, sys
        from pathlib import Path
        from project_history_recall.files import configfile
        from project_history_recall.semantic import consent
        real_replace, real_fsync = os.replace, os.fsync
        def die(*a, **k):
            os._exit(9)
        if {when!r} == "before-replace":
            os.replace = die               # the new text is on disk, aside; the old file untouched
        else:
            def replace_then_die(*a, **k):
                real_replace(*a, **k)
                os._exit(9)
            os.replace = replace_then_die  # dies right after the switch
        consent.grant(Path(sys.argv[1]), "http://svc/v1", "m", {{"kind": "explicit", "id": "p_2", "name": "Two"}}, "t")
    """)
    env = dict(os.environ, PYTHONPATH=str(SRC))
    return subprocess.run([sys.executable, "-c", code, str(home)], env=env, capture_output=True, text=True)


@pytest.mark.parametrize("when", ["before-replace", "after-replace"])
def test_a_crash_mid_write_leaves_the_old_file_or_the_new_one(home, when):
    path = own_config(home, USER_TEXT)
    proc = _crash_writing(home, when)
    assert proc.returncode == 9, proc.stderr
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    ids = [c["project"]["id"] for c in data["consents"]]
    assert ids == (["p_1"] if when == "before-replace" else ["p_1", "p_2"])
    assert data["batch_size"] == 8 and "# my settings" in path.read_text(encoding="utf-8")
    # the next write cleans up what the crash left aside, and works
    assert consent.grant(home, "http://svc/v1", "m3", {"kind": "explicit", "id": "p_3", "name": "3"}, "t")
    assert not list(path.parent.glob(".config.yaml.*.tmp"))
    assert [c["project"]["id"] for c in consent.records(home)[0]][-1] == "p_3"


def test_a_symlinked_config_is_written_through(home, tmp_path):
    real = tmp_path / "dotfiles" / "phr.yaml"
    real.parent.mkdir()
    real.write_text("batch_size: 4\n", encoding="utf-8")
    link = config.plugin_config_path(home)
    link.parent.mkdir(parents=True)
    link.symlink_to(real)
    consent.grant(home, "http://svc/v1", "m", {"kind": "auto", "id": "/w/a", "name": "a"}, "t")
    assert link.is_symlink() and "consents:" in real.read_text(encoding="utf-8")


# -- tokens -------------------------------------------------------------------------------------------
def test_tokens_are_bound_to_one_scope_one_conversation_and_one_home(home, tmp_path):
    scope = ("http://s/v1", "m", ("explicit", "p_1"))
    t = consent_tokens.token_for(home, *scope, "conv-a")
    assert consent_tokens.token_status(home, t, "http://s/v1/", "m", ("explicit", "p_1"), ("conv-a",)) == "valid"
    assert consent_tokens.token_status(home, t, *scope, ("root", "conv-a")) == "valid"  # anywhere in its lineage
    for other in (("http://s2/v1", "m", ("explicit", "p_1")), ("http://s/v1", "m2", ("explicit", "p_1")),
                  ("http://s/v1", "m", ("explicit", "p_2")), ("http://s/v1", "m", ("auto", "p_1"))):
        assert consent_tokens.token_status(home, t, *other, ("conv-a",)) == "rejected"
    assert consent_tokens.token_status(home, t, *scope, ("conv-b",)) == "other_conversation"
    assert consent_tokens.token_status(home, t, *scope, ()) == "other_conversation"
    old = consent_tokens.token_for(home, *scope, "conv-a", issued_at=time.time() - consent_tokens.TOKEN_LIFETIME - 1)
    assert consent_tokens.token_status(home, old, *scope, ("conv-a",)) == "expired"
    future = consent_tokens.token_for(home, *scope, "conv-a", issued_at=time.time() + 3600)
    assert consent_tokens.token_status(home, future, *scope, ("conv-a",)) == "expired"
    # one flipped character, the token of the scheme before conversations, or another home's: not tokens
    flipped = t[:-1] + ("a" if t[-1] != "a" else "b")
    other_home = tmp_path / "other"
    other_home.mkdir()
    for forged in (flipped, "consent-" + "a" * 32, consent_tokens.token_for(other_home, *scope, "conv-a"), "yes", ""):
        assert consent_tokens.token_status(home, forged, *scope, ("conv-a",)) == "rejected", forged
    assert t.startswith(redaction.CONSENT_TOKEN_PREFIX) and redaction.CONSENT_TOKEN.fullmatch(t)  # masked when quoted
    odd = consent_tokens.token_for(home, *scope, "conv-\ud800-项目")  # whatever id a host passes
    assert consent_tokens.token_status(home, odd, *scope, ("conv-\ud800-项目",)) == "valid"
    secret = home / "project-history-recall" / consent_secret.SECRET_FILE
    assert secret.stat().st_mode & 0o077 == 0


# -- the embedder, against a real server -----------------------------------------------------------------
def embedder(home: Path, server: EmbeddingServer, **kw) -> OpenAIEmbedder:
    (home / ".env").write_text(f"UNIT_EMBED_KEY={KEY}\n", encoding="utf-8")
    opts = dict(api_key_env="UNIT_EMBED_KEY", timeout=5, query_timeout=5, max_retries=2, batch_size=2)
    opts.update(kw)
    return OpenAIEmbedder(home, server.url, "unit-model", **opts)


def test_batches_keep_order_and_learn_the_dimension(home, server):
    emb = embedder(home, server)
    assert emb.dimension is None and emb.fingerprint is None
    vecs = emb.embed_documents(["alpha", "beta", "gamma", "delta", "epsilon"])
    assert vecs.shape == (5, 32) and server.count() == 3
    assert [r.inputs for r in server.requests] == [["alpha", "beta"], ["gamma", "delta"], ["epsilon"]]
    assert emb.dimension == 32 and emb.fingerprint.startswith(f"openai/{server.url}/unit-model/d32/")
    assert server.requests[0].headers["Authorization"] == f"Bearer {KEY}"
    assert "dimensions" not in server.requests[0].json
    again = emb.embed_documents(["gamma"])
    assert abs(float(again[0] @ vecs[2]) - 1.0) < 1e-5  # the answer's index decides the order, not its position
    assert KEY not in repr(emb)


def test_configured_dimensions_are_asked_for_and_checked(home, server):
    emb = embedder(home, server, dimensions=12)
    assert emb.fingerprint.split("/")[-2] == "d12"
    assert emb.embed_query("hello").shape == (12,)
    assert server.requests[0].json["dimensions"] == 12
    server.answer_dimension = 5
    with pytest.raises(EmbedderUnavailable, match="5-dimensional vectors where 12"):
        emb.embed_documents(["other"])


def test_retries_honour_retry_after_then_succeed(home, server):
    server.fail_next.extend([Reply(429, {"error": {"message": "slow down"}}, {"Retry-After": "0"}),
                             Reply(503, "busy", {"Retry-After": "0"})])
    emb = embedder(home, server)
    assert emb.embed_documents(["x"]).shape == (1, 32)
    assert server.count() == 3


@pytest.mark.parametrize("status", [429, 500])
def test_persistent_errors_become_unavailable_with_the_reason(home, server, status, monkeypatch):
    monkeypatch.setattr(remote_embedder, "COOLDOWN", 3600.0)  # however slow this machine is
    server.always = Reply(status, {"error": {"message": f"nope, your key {KEY} is fine"}}, {"Retry-After": "0"})
    emb = embedder(home, server, max_retries=1)
    with pytest.raises(EmbedderUnavailable) as exc:
        emb.embed_documents(["x"])
    reason = str(exc.value)
    assert f"HTTP {status}" in reason and "after 2 attempts" in reason and KEY not in reason
    assert "[redacted]" in reason and server.count() == 2
    # queries fail at once while the service cools down: no new request
    with pytest.raises(EmbedderUnavailable, match="a few seconds ago"):
        emb.embed_query("q")
    assert server.count() == 2


@pytest.mark.parametrize("reply, expected", [
    (Reply(429, "", {"Retry-After": "3600"}), "asks to wait 3600 s"),  # reported, not waited for
    (Reply(401, {"error": {"message": f"Incorrect API key provided: {KEY[:6]}***{KEY[-4:]}"}}),
     "refused the API key (HTTP 401)"),  # without the body: services quote parts of the key
    (Reply(307, "", {"Location": "http://127.0.0.1:9/elsewhere"}), "redirected"),  # not followed
])
def test_what_retrying_cannot_fix_fails_at_once(home, server, reply, expected):
    server.always = reply
    with pytest.raises(EmbedderUnavailable) as exc:
        embedder(home, server).embed_documents(["x"])
    assert expected in str(exc.value) and KEY[-4:] not in str(exc.value)
    assert server.count() == 1


def test_a_slow_service_times_out(home, server):
    server.delay = 5
    emb = embedder(home, server, timeout=0.5, query_timeout=0.5, max_retries=0)
    with pytest.raises(EmbedderUnavailable, match="did not answer within 0.5 s"):
        emb.embed_documents(["x"])


def test_nonsense_answers_are_unavailable(home, server):
    server.always = Reply(200, {"data": [{"embedding": [1, 2]}, {"embedding": [3, 4]}]})
    with pytest.raises(EmbedderUnavailable, match="2 vectors for 1 texts"):
        embedder(home, server).embed_documents(["x"])
    server.always = Reply(200, "<html>")
    with pytest.raises(EmbedderUnavailable, match="not an OpenAI embeddings response"):
        embedder(home, server).embed_documents(["x"])


def test_a_key_no_header_can_carry_is_refused_without_showing_it(home, server):
    emb = embedder(home, server)
    bad = "sk-two words-Zq9xW3vK7pL2"
    (home / ".env").write_text(f'UNIT_EMBED_KEY="{bad}"\n', encoding="utf-8")
    with pytest.raises(EmbedderUnavailable) as exc:
        emb.embed_documents(["x"])
    assert "cannot carry" in str(exc.value) and bad not in str(exc.value) and "two words" not in str(exc.value)
    assert server.count() == 0
