"""History that Hermes or an importer wrote in shapes no chat produces, through Hermes's real dispatch.

One such message must never stop the search of its project: it is read as
far as it can be, and every other message is searched as always.
"""

from __future__ import annotations

import json
import math
import sqlite3

import pytest

from hermes_world import (background_workers, call, checkpoint, db_digest, enable_plugin, hits, plugin_settings,
                          write_as_importer)
from hermes_world import ids as ids_of

SEARCH = "project_history_search"
MODES = ("keyword", "hybrid", "semantic")


def _nested(depth: int, text: str) -> list:
    value: list = [{"type": "text", "text": text}]
    for _ in range(depth):
        value = [value]
    return value


def _search(asker: str, query: str, mode: str, **extra) -> dict:
    res = call(SEARCH, {"query": query, "mode": mode, "limit": 50, **extra}, session_id=asker)
    assert res["success"], (mode, extra, res)
    return res


@pytest.fixture
def nested(world, work):
    app = work / "app"
    app.mkdir()
    world.project("App", app)
    sid = world.session(("user", "the capybara sleeps"), cwd=app)
    deep = world.say(sid, "user", _nested(340, "a capybara in a deep burrow"))  # Hermes's own append_message
    deeper = world.say(sid, "assistant", "placeholder")
    # Deeper than Python's JSON parser goes: only an importer writes this.
    write_as_importer(world.home, "UPDATE messages SET content = ? WHERE id = ?",
                 "\x00json:" + "[" * 5_000 + '"abyssal capybara"' + "]" * 5_000, deeper)
    asker = world.session(cwd=app)
    return {"app": app, "sid": sid, "deep": deep, "deeper": deeper, "asker": asker}


@pytest.mark.parametrize("own_index", [True, False], ids=["own-keyword-index", "hermes-scan"])
def test_deeply_nested_list_content_is_searched(nested, world, own_index):
    plugin_settings(world.home, keyword_index=own_index)
    enable_plugin(world.home)
    for mode in MODES:
        res = _search(nested["asker"], "capybara", mode)
        assert res["results"], mode
    found = {r["message_id"]: r for r in _search(nested["asker"], "burrow", "keyword")["results"]}
    assert nested["deep"] in found
    assert ">>>burrow<<<" in found[nested["deep"]]["snippet"] and "[[" not in found[nested["deep"]]["snippet"]
    assert nested["deeper"] in {r["message_id"] for r in _search(nested["asker"], "abyssal", "keyword")["results"]}


def test_deeply_nested_list_content_in_recall_and_the_cli(nested, world, monkeypatch, capsys):
    from hermes_cli.plugins import get_plugin_command_handler

    from project_history_recall.ui import cli

    enable_plugin(world.home)
    monkeypatch.setenv("HERMES_SESSION_ID", nested["asker"])
    assert "burrow" in get_plugin_command_handler("recall")("burrow")
    monkeypatch.delenv("HERMES_SESSION_ID")
    assert cli.main(["search", "burrow", "--dir", str(nested["app"]), "--home", str(world.home)]) == 0
    assert "burrow" in capsys.readouterr().out


# Message times as an importer may leave them, and whether since 2000 / until 2000 keeps each.
TIMES = {
    "yesterday": ("yesterday", False, False),
    "blob": (b"\x01\x02", False, False),
    "far-future": (1e300, True, False),
    "infinite": (math.inf, True, False),
    "before-1970": (-86400.0 * 365 * 5, False, True),
    "huge-integer": (2**62, True, False),
}
Y2000 = "2000-01-01"


@pytest.fixture
def garbled_times(world, work):
    app = work / "app"
    app.mkdir()
    world.project("App", app)
    sid = world.session(("user", "capybara report is fine"), cwd=app)
    fine = world.say(sid, "assistant", "capybara noted, all fine")
    ids = {}
    for name, (value, _since, _until) in TIMES.items():
        ids[name] = world.say(sid, "user", f"capybara {name} entry")
        write_as_importer(world.home, "UPDATE messages SET timestamp = ? WHERE id = ?", value, ids[name])
    odd = world.session(("user", "capybara in a session with a text start"), cwd=app)
    write_as_importer(world.home, "UPDATE sessions SET started_at = 'last week' WHERE id = ?", odd)
    write_as_importer(world.home, "UPDATE sessions SET started_at = ? WHERE id = ?", -math.inf, sid)
    asker = world.session(cwd=app)
    return {"ids": ids, "fine": fine, "odd": odd, "asker": asker}


@pytest.mark.parametrize("own_index", [True, False], ids=["own-keyword-index", "hermes-scan"])
def test_garbled_times_are_no_times(garbled_times, world, own_index):
    plugin_settings(world.home, keyword_index=own_index)
    enable_plugin(world.home)
    checkpoint(world.home)
    before = db_digest(world.home / "state.db")
    ids, asker = garbled_times["ids"], garbled_times["asker"]
    for mode in MODES:
        res = _search(asker, "capybara", mode)
        shown = {h["message_id"]: h for h in hits(res)}
        if mode != "semantic":  # the semantic side may leave weak matches out
            assert set(ids.values()) | {garbled_times["fine"]} <= set(shown), (mode, res["results"])
        for name in ("yesterday", "blob", "far-future", "infinite"):
            if ids[name] in shown:
                assert shown[ids[name]]["when"] == "", (mode, name)
        since = set(ids_of(_search(asker, "capybara", mode, since=Y2000)))
        until = set(ids_of(_search(asker, "capybara", mode, until=Y2000)))
        for name, (_value, since_keeps, until_keeps) in TIMES.items():
            assert (ids[name] in since) <= since_keeps and (ids[name] in until) <= until_keeps, (mode, name)
            if mode != "semantic":
                assert (ids[name] in since, ids[name] in until) == (since_keeps, until_keeps), (mode, name)
    assert db_digest(world.home / "state.db") == before


def test_text_after_a_nul_is_searched_and_shown(world, work):
    app = work / "app"
    app.mkdir()
    world.project("App", app)
    sid = world.session(("user", "binary output: \x00\x01 then the zebra stripes"), cwd=app)
    asker = world.session(cwd=app)
    plugin_settings(world.home, semantic=False)
    enable_plugin(world.home)
    res = _search(asker, "zebra", "keyword")
    assert [r["session_id"] for r in res["results"]] == [sid] and ">>>zebra<<<" in res["results"][0]["snippet"]


@pytest.mark.parametrize("own_index", [True, False], ids=["own-keyword-index", "hermes-scan"])
def test_a_pasted_block_weighs_its_length(world, work, own_index):
    """Hermes stores list content (a pasted block, an attachment) as NUL + 'json:' + JSON, and
    text after a NUL is text too; SQLite's length() stops at the first NUL, so the scan of
    Hermes's indexes took a 4,000-character pasted log (and a long text after a NUL) for empty
    messages, the shortest of all, and put them above a short message about the very word."""
    app = work / "app"
    app.mkdir()
    world.project("App", app)
    log = "a long pasted log where kiwi shows up once " + " ".join(f"line{n} ok" for n in range(400))
    pasted = world.session(cwd=app)
    world.say(pasted, "user", [{"type": "text", "text": log}])  # Hermes's own append_message
    after_nul = world.session(("user", "\x00" + log), cwd=app)
    short = world.session(("user", "the kiwi rollout plan"), cwd=app)
    for n in range(5):
        world.session(("user", f"unrelated note {n}"), cwd=app)
    asker = world.session(cwd=app)
    world.close()
    plugin_settings(world.home, semantic=False, keyword_index=own_index)
    enable_plugin(world.home)
    res = _search(asker, "kiwi", "keyword", context=0)
    assert [r["session_id"] for r in res["results"]][0] == short
    assert {r["session_id"] for r in res["results"]} == {short, pasted, after_nul}


PEM_BODY = [f"MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC{n:04d}" + "Zq8x" * 3 for n in range(40)]
PEM = "-----BEGIN PRIVATE KEY-----\n" + "\n".join(PEM_BODY) + "\n-----END PRIVATE KEY-----"


def test_a_huge_message_costs_what_is_shown(world, work, monkeypatch):
    """Only pieces of a 3 MB message are masked and normalised, and a key just before the
    match (straddling where the snippet starts) is still masked whole."""
    from hermes_world import plugin_module

    app = work / "app"
    app.mkdir()
    world.project("App", app)
    sid = world.session(("user", "a capybara in a short message"), cwd=app)
    filler = "lorem ipsum dolor sit amet "
    huge = world.say(sid, "assistant", filler * 2000 + PEM + " capybara " + filler * 110_000)
    after = world.say(sid, "user", "and the capybara again")  # the huge message is in its window
    asker = world.session(cwd=app)
    plugin_settings(world.home, chunk_chars=20_000)  # a few chunks to embed, not a hundred
    enable_plugin(world.home)
    statedb, redaction = plugin_module("hermes.statedb"), plugin_module("redaction")
    textindex, chunking = plugin_module("keyword.textindex"), plugin_module("semantic.chunking")
    seen: dict[str, list[int]] = {"mask": [], "normalise": [], "prepare": []}
    for module, name in ((redaction, "mask"), (textindex, "normalise"), (chunking, "prepare")):
        # The defaults bind this iteration's function and name (B008 is the point here).
        def recorded(text, *args, _real=getattr(module, name), _name=name):  # noqa: B008
            seen[_name].append(len(text))
            return _real(text, *args)
        monkeypatch.setattr(module, name, recorded)

    for mode in MODES:
        res = _search(asker, "capybara", mode)
        shown = {h["message_id"]: h for h in hits(res)}
        if mode != "semantic":
            assert {huge, after} <= set(shown), mode
            snippet = shown[huge]["snippet"]
            assert ">>>capybara<<<" in snippet and "[redacted private key]" in snippet, snippet
            assert not any(line[:24] in snippet for line in PEM_BODY), snippet
            window = next(c for c in shown[after]["context"] if c["message_id"] == huge)
            assert len(window["text"]) <= 400 and "lorem ipsum" in window["text"]
    assert seen["mask"] and max(seen["mask"]) <= 2 * redaction.MARGIN + 1000, max(seen["mask"])
    assert seen["normalise"] and max(seen["normalise"]) <= statedb.MAX_TEXT_CHARS + 100
    assert seen["prepare"] and max(seen["prepare"]) <= statedb.MAX_TEXT_CHARS


@pytest.mark.parametrize("garbled", [(-math.inf,), (math.inf,), (-1.5e308, 1.5e308)],
                         ids=["minus-infinite", "infinite", "far-apart"])
def test_a_garbled_time_leaves_how_it_turned_out_to_the_others(world, work, garbled):
    """A question that asks how something turned out lifts the later of its best sessions, placed
    within the spread of their times. A message an importer stamped -inf, inf or ±1.5e308 (a number,
    so a time) among them left that spread infinite and every lift NaN: the later session lost its
    lift and the order fell to however a sort treats NaN."""
    import time

    world.project("App", work)
    now = time.time()
    world._clock = now - 60 * 86400
    world.session(("user", "cache eviction policy: LRU or LFU? the cache eviction policy decides the cache hit rate"),
                  cwd=work)
    world._clock = now - 2 * 86400
    late = world.session(("user", "we settled the eviction policy"), cwd=work)
    for value in garbled:
        odd = world.session(("user", "an eviction notice for the flat"), cwd=work)
        write_as_importer(world.home, "UPDATE messages SET timestamp = ? WHERE session_id = ?", value, odd)
    asker = world.session(cwd=work)
    plugin_settings(world.home, order_weight=5.0)
    enable_plugin(world.home)
    checkpoint(world.home)
    before = db_digest(world.home / "state.db")
    res = call(SEARCH, {"query": "what did we end up choosing for the cache eviction policy?", "mode": "keyword"},
               session_id=asker)
    assert [r["session_id"] for r in res["results"]][:1] == [late], res["results"]
    assert db_digest(world.home / "state.db") == before


def test_a_pasted_block_counts_in_what_indexing_would_read(world, work):
    """The estimate shown before a backfill and the consent request count a pasted block's
    characters, as indexing reads them: SQLite's length() stops at the NUL Hermes stores it behind."""
    from project_history_recall.hermes import messages
    from project_history_recall.hermes.statedb import reading

    sid = world.session(cwd=work)
    world.say(sid, "user", [{"type": "text", "text": "pasted " * 600}])  # Hermes's own append_message
    world.close()
    with reading(world.home / "state.db") as (conn, _shape):
        size = messages.conversation_size(conn, [sid])
        pieces = messages.pieces(conn, sid, 0, 2**62, 1000, 800)
    assert size["characters"] >= 4200 and pieces == 5, (size, pieces)  # 1,000 characters, then one for each 800 more


def test_a_folder_ten_thousand_levels_deep_costs_the_depth_of_the_projects(world, work, monkeypatch):
    """An importer's session whose folder is 10,000 levels inside App's: it belongs to App, and
    finding that looks up only as many of its ancestors as the deepest project folder has levels.
    Each ancestor was a key, all 10,000 of them (50 million characters, 3 s and 300 MB in the
    first search of each process; the fourth hostile sweep)."""
    app = work / "app"
    app.mkdir()
    world.project("App", app)
    deep = world.session(("user", "a capybara far down"), cwd=app)
    asker = world.session(cwd=app)
    world.close()
    write_as_importer(world.home, "UPDATE sessions SET cwd = ? WHERE id = ?", str(app) + "/level" * 10_000, deep)
    checkpoint(world.home)
    enable_plugin(world.home)
    looked_up = _ancestor_keys_built(monkeypatch)
    res = _search(asker, "capybara", "keyword")
    assert [r["session_id"] for r in res["results"]] == [deep]
    assert looked_up and max(looked_up) <= len(app.parts), looked_up


def test_a_project_folder_ten_thousand_levels_deep_costs_the_depths_of_the_projects(world, work, monkeypatch):
    """A project whose folder Hermes's ``projects_db`` took 10,000 levels deep, and a session there: the
    session is the project's, and finding that builds a key only at the depths project folders have.
    Before, the project's folder was indexed by building all 10,000 of its ancestors' keys, and each
    session's folder was looked up at every depth down to the deepest project's (50 million characters
    each, a second per new process)."""
    deep = work / "app"
    deep.mkdir()
    folder = str(deep) + "/level" * 10_000
    world.project("Deep", folder)
    here = world.session(("user", "a capybara far down"), cwd=folder)
    asker = world.session(cwd=folder)
    enable_plugin(world.home)
    built = _ancestor_keys_built(monkeypatch)
    res = _search(asker, "capybara", "keyword")
    assert [r["session_id"] for r in res["results"]] == [here]
    assert built and max(built) <= 2, built


@pytest.mark.parametrize("content, query", [
    (1e20, "20"), (12345678901234, "12345678901234"), ("zebra\x00quagga here", "zebra"),
    ("\x00zebra quagga", "zebra"), (b"zebra quagga \xff\xfe bytes", "zebra"),
    ([{"type": "text", "text": "zebra\x00 in a list"}], "zebra"), ("zebra " + "ﷺ" * 100_500, "zebra"),
], ids=["float", "int", "nul-inside", "nul-first", "not-utf8", "list-with-nul", "nfkc-past-the-cap"])
def test_no_text_hermes_stores_is_taken_for_one_edited_in_place(world, work, monkeypatch, content, query):
    """The keyword index tells a text edited in place by its digest while Hermes may still rewrite it
    (``Keeper._edited``), by its length when a search reads it (``_OwnIndex.outdated``): each shape
    Hermes stores must read back with the digest and length it was indexed with, or its session would
    be indexed again by every search."""
    from hermes_world import plugin_module

    folder = work / "p"
    folder.mkdir()
    world.project("P", folder)
    sid = world.session(("user", "hello there"), cwd=folder)
    asker = world.session(cwd=folder)
    mid = world.say(sid, "user", content)
    enable_plugin(world.home)
    textindex = plugin_module("keyword.textindex")
    marked: list = []
    monkeypatch.setattr(textindex.TextIndex, "mark_dirty", lambda self, sessions, *_: marked.append(sessions))
    for n in range(2):
        assert mid in ids_of(_search(asker, query, "keyword"))
        world.say(asker, "user", f"state.db changed {n}")  # the next search checks the rows again
    assert not marked, marked


def _ancestor_keys_built(monkeypatch) -> list[int]:
    """How many ancestor keys each call of ``attribution.ancestor_keys`` builds, from now on."""
    from hermes_world import plugin_module

    attribution = plugin_module("scope.attribution")
    built: list[int] = []

    def recorded(path, *args, _real=attribution.ancestor_keys):
        keys = _real(path, *args)
        built.append(len(keys))
        return keys

    monkeypatch.setattr(attribution, "ancestor_keys", recorded)
    return built


def test_a_big_row_among_those_hermes_may_rewrite_is_not_read_again_and_again(world, work, monkeypatch):
    """A block of 20 MB pasted (Hermes stores it as list content) among the rows Hermes may still
    rewrite: both indexes read all of it again to check it before every search after state.db
    changed, 0.1 s each (a search took 0.29 s where it had taken 0.01), until 256 more rows were
    written. A big row found as indexed is read again only when its size or first bytes change; a
    rewrite that changes them is still found by its new words."""
    from hermes_world import plugin_module

    folder = work / "p"
    folder.mkdir()
    world.project("P", folder)
    sid = world.session(("user", "hello there"), cwd=folder)
    asker = world.session(cwd=folder)
    big = world.say(sid, "user", [{"type": "text", "text": "a pasted log line about the capybara " * 550_000}])
    enable_plugin(world.home)
    textindex, messages = plugin_module("keyword.textindex"), plugin_module("hermes.messages")
    read: list[int] = []

    def spying(real):
        def spy(content, *rest):
            read.append(len(content) if isinstance(content, str | bytes) else 0)
            return real(content, *rest)
        return spy

    for module, name in ((textindex, "digest"), (messages, "decode_content")):
        monkeypatch.setattr(module, name, spying(getattr(module, name)))
    for n in range(3):
        # The first rounds' background indexing (embedding the big row reads it whole) may still run
        # on a busy machine: only what this round's checks read counts.
        for where, worker in background_workers():
            if where.absolute() == world.home.absolute():
                assert worker.wait_idle(120)
        read.clear()
        for mode in ("keyword", "hybrid"):
            assert big in ids_of(_search(asker, "capybara", mode))
        world.say(asker, "user", f"state.db changed {n}")  # the next search checks the rows again
    assert max(read) < 1 << 20, read  # the last round: no check read it whole
    write_as_importer(world.home, "UPDATE messages SET content = ? WHERE id = ?", "\x00json:" + json.dumps(
        [{"type": "text", "text": "a pasted log line about the wombat " * 550_000}]), big)
    for mode in ("keyword", "hybrid"):
        assert ids_of(_search(asker, "wombat", mode))[:1] == [big], mode


@pytest.mark.parametrize("table, column", [
    ("sessions", "title"), ("sessions", "source"), ("sessions", "cwd"), ("sessions", "git_branch"),
    ("sessions", "git_repo_root"), ("sessions", "parent_session_id"), ("sessions", "model_config"),
    ("messages", "tool_name"), ("projects", "name"), ("projects", "slug"), ("projects", "primary_path"),
    ("project_folders", "path"),
])
def test_a_blob_in_a_text_column_is_read_as_text(world, work, monkeypatch, capsys, table, column):
    """SQLite keeps a blob written into a TEXT column (by an importer, or left by a damaged page) as a
    blob, and Python's sqlite3 hands it over as bytes, past the decoding every text gets: a session
    titled with bytes failed every search of its project as ``internal`` (a string pattern on bytes),
    a git root of bytes likewise, where a text that is not UTF-8 was searched like any other. Each
    such value is now read as text (``statedb.text_sql``): the session is found, and nothing of
    Hermes's is written."""
    from hermes_cli.plugins import get_plugin_command_handler

    from project_history_recall.ui import cli

    app = work / "app"
    app.mkdir()
    world.project("App", app)
    sid = world.session(("user", "the capybara migration plan"), cwd=app, title="Capybara plan")
    world.say(sid, "tool", "capybara listing from a tool", tool_name="ls")
    asker = world.session(cwd=app)
    value = str(app).encode() if column in ("cwd", "git_repo_root", "primary_path", "path") else b"odd \xff\x00 bytes"
    if table == "sessions":
        write_as_importer(world.home, f"UPDATE sessions SET {column} = ? WHERE id = ?", value, sid)
    elif table == "messages":
        write_as_importer(world.home, "UPDATE messages SET tool_name = ? WHERE tool_name IS NOT NULL", value)
    else:  # the project's row, or its folder's
        conn = sqlite3.connect(world.home / "projects.db")
        with conn:
            conn.execute(f"UPDATE {table} SET {column} = ?", (value,))
        conn.close()
    enable_plugin(world.home)
    checkpoint(world.home)
    before = db_digest(world.home / "state.db")
    for mode in ("keyword", "hybrid"):
        res = call(SEARCH, {"query": "capybara", "mode": mode, "include_tool_output": True}, session_id=asker)
        assert sid in {r["session_id"] for r in res["results"]}, (mode, res)
    monkeypatch.setenv("HERMES_SESSION_ID", asker)
    assert not get_plugin_command_handler("recall")("capybara").startswith("recall: Internal")
    assert not get_plugin_command_handler("recall")("status").startswith("recall: Internal")
    monkeypatch.delenv("HERMES_SESSION_ID")
    for argv in (["session", sid], ["projects"], ["search", "capybara", "--dir", str(app)]):
        assert cli.main([*argv, "--home", str(world.home)]) in (0, 1), argv
        assert "Internal error" not in capsys.readouterr().out, argv
    checkpoint(world.home)
    assert db_digest(world.home / "state.db") == before



def test_a_session_whose_id_is_a_blob_does_not_stop_the_search(world, work):
    """The same for the key itself: a session id (and its messages' session id) an importer wrote as a
    blob reached the scope as bytes, and every keyword search of the project failed as ``internal``
    (bytes are no JSON). Read as text, it names no messages (SQLite tells a blob from a text), so
    that session is not searched (Hermes cannot open it by id either) and the others are."""
    app = work / "app"
    app.mkdir()
    world.project("App", app)
    fine = world.session(("user", "the capybara migration plan"), cwd=app)
    odd = world.session(("user", "the capybara under a blob id"), cwd=app)
    asker = world.session(cwd=app)
    conn = sqlite3.connect(world.home / "state.db")
    with conn:
        for table, column in (("sessions", "id"), ("messages", "session_id")):
            conn.execute(f"UPDATE {table} SET {column} = CAST({column} AS BLOB) WHERE {column} = ?", (odd,))
    conn.close()
    enable_plugin(world.home)
    for mode in MODES:
        assert [r["session_id"] for r in _search(asker, "capybara", mode)["results"]] == [fine], mode
    world.say(asker, "user", "state.db changed")  # the catalog takes the change in, the blob row with it
    for mode in MODES:
        assert [r["session_id"] for r in _search(asker, "capybara", mode)["results"]] == [fine], mode
