"""Which message ranks first, through Hermes's real dispatch, whatever index answers.

When hundreds of messages hold every word of a query, the one that matches
best must still come first: not the one whose id, position in the project
or place in the keyword index's build order happens to sort first.
"""

from __future__ import annotations

import random
import sqlite3
from contextlib import closing

import pytest

from hermes_world import call, enable_plugin, plugin_module, plugin_settings

SEARCH = "project_history_search"
WORDS = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliett", "kilo",
         "lima", "mike")
BEST = "kilo lima kilo lima kilo lima"


def _project(world, work, where: tuple[int, int]) -> tuple[str, int]:
    """30 sessions of 40 messages of 8-14 random words, with BEST at session,
    message ``where``: every other message holding both query words is longer
    and holds each of them less often. Returns (the asker, BEST's message id)."""
    folder = work / "drills"
    folder.mkdir()
    world.project("Drills", folder)
    rnd = random.Random(17)
    best = None
    for s in range(30):
        sid = world.session(cwd=folder, title=f"drill {s}")
        for m in range(40):
            if (s, m) == where:
                best = world.say(sid, "user", BEST)
            else:
                text = " ".join(rnd.choice(WORDS) for _ in range(rnd.randint(8, 14)))
                world.say(sid, "user" if m % 2 == 0 else "assistant", text)
    return world.session(cwd=folder), best


def _first(asker: str) -> int:
    res = call(SEARCH, {"query": "kilo lima", "mode": "keyword", "context": 0}, session_id=asker)
    assert res["success"] and res["results"], res
    return res["results"][0]["message_id"]


POSITIONS = [(0, 0), (14, 21), (29, 39)]


@pytest.mark.parametrize("where", POSITIONS, ids=["oldest", "middle", "newest"])
def test_best_message_first_on_hermes_indexes(world, work, monkeypatch, where):
    asker, best = _project(world, work, where)
    plugin_settings(world.home, keyword_index=False, semantic=False)
    enable_plugin(world.home)
    # Hermes's FTS5 indexes, not a scan of the scope's rows.
    monkeypatch.setattr(plugin_module("keyword.engine"), "SCAN_LIMIT", 0)
    assert _first(asker) == best


@pytest.mark.parametrize("where", POSITIONS, ids=["oldest", "middle", "newest"])
def test_best_message_first_while_and_after_the_index_builds_in_the_background(world, work, where):
    asker, best = _project(world, work, where)
    plugin_settings(world.home, semantic=False)
    enable_plugin(world.home)
    keeper = plugin_module("keyword.textindex").keeper(world.home)
    assert _first(asker) == best  # answered from Hermes's data: too much to index inline
    assert keeper.wait_idle(120)
    assert _first(asker) == best  # answered from keywords.db, built newest session first


@pytest.mark.parametrize("where", POSITIONS, ids=["oldest", "middle", "newest"])
def test_best_message_first_on_the_index_built_by_index_all(world, work, where):
    asker, best = _project(world, work, where)
    plugin_settings(world.home, semantic=False)
    enable_plugin(world.home)
    cli = plugin_module("ui.cli")
    assert cli.main(["--home", str(world.home), "index", "--all"]) == 0
    assert _first(asker) == best


@pytest.mark.parametrize("keyword_index", [True, False], ids=["own-index", "hermes-indexes"])
def test_a_long_answer_about_the_words_ranks_above_one_that_names_them_once(world, work, keyword_index):
    """Two answers of the same length hold both words of the query; the older one is about them
    (says them four times), the newer names them once. Counted by presence alone they tie, and a
    tie goes to the newer message."""
    folder = work / "ops"
    folder.mkdir()
    world.project("Ops", folder)
    rnd = random.Random(5)
    for _ in range(6):
        world.session(*(" ".join(rnd.choice(WORDS) for _ in range(12)) for _ in range(4)), cwd=folder)
    filler = [rnd.choice(WORDS) for _ in range(40)]
    about = world.say(world.session(cwd=folder, title="about"), "assistant",
                      " ".join(["kubernetes ingress"] * 4 + filler))
    # The same length: the words it does not say are spelt with one letter changed.
    world.say(world.session(cwd=folder, title="in passing"), "assistant",
              " ".join(["kubernetes ingress"] + ["xubernetes ingrezs"] * 3 + filler))
    asker = world.session(cwd=folder)
    plugin_settings(world.home, keyword_index=keyword_index, semantic=False)
    enable_plugin(world.home)
    res = call(SEARCH, {"query": "kubernetes ingress", "mode": "keyword", "context": 0}, session_id=asker)
    assert res["success"] and [r["message_id"] for r in res["results"]][:1] == [about], res


FILLER = ("papa", "quebec", "romeo", "sierra", "tango", "uniform", "victor", "whiskey", "xray", "yankee", "zulu",
          "amber", "basalt", "cobalt", "dune", "ember", "fjord", "garnet", "harbor", "iris")


def _unequal_project(world, work) -> tuple[str, int]:
    """20 sessions of a short question and a ~300-word reply of filler words; three replies say "kilo",
    "lima" and "mike" by chance, and one short question says "kilo lima" (the asker's answer; its
    session's reply says "mike").
    Returns (the asker, that question's message id)."""
    folder = work / "chats"
    folder.mkdir()
    world.project("Chats", folder)
    rnd = random.Random(5)
    best = None
    for s in range(20):
        sid = world.session(cwd=folder, title=f"chat {s}")
        words = [rnd.choice(FILLER) for _ in range(300)]
        if s in (3, 8, 15):
            for at, word in zip(rnd.sample(range(300), 3), ("kilo", "lima", "mike"), strict=True):
                words[at] = word
        if s == 11:
            words[rnd.randrange(300)] = "mike"  # the session holds all three words, as the others do
        if s == 11:
            best = world.say(sid, "user", "what about the kilo lima")
        else:
            world.say(sid, "user", " ".join(rnd.choice(FILLER) for _ in range(5)))
        world.say(sid, "assistant", " ".join(words))
    return world.session(cwd=folder), best


@pytest.mark.parametrize("index", ["own", "hermes-fts", "hermes-scan"])
def test_a_short_message_with_the_words_beats_long_replies_that_say_them_by_chance(world, work, monkeypatch, index):
    """A scope of short questions beside long replies weighs a message's length against the scope's
    mean, not against its candidates' (the long replies, ``keyword.lengths``): a reply 60 times longer
    that says the question's three words among 300 others is not the answer, the short message with
    two is (not neighbours in the question: their nearness does not decide it)."""
    asker, best = _unequal_project(world, work)
    plugin_settings(world.home, keyword_index=index == "own", semantic=False)
    enable_plugin(world.home)
    if index == "own":
        assert plugin_module("ui.cli").main(["--home", str(world.home), "index", "--all"]) == 0
    if index == "hermes-fts":
        monkeypatch.setattr(plugin_module("keyword.engine"), "SCAN_LIMIT", 0)
    res = call(SEARCH, {"query": "kilo mike lima", "mode": "keyword", "context": 0}, session_id=asker)
    assert res["success"] and res["results"][0]["message_id"] == best, res


def test_the_scope_s_lengths_follow_a_rewind_and_a_restore_at_once(world, work, monkeypatch):
    """On Hermes's indexes each session's message lengths are kept across searches while it is
    unchanged (``keyword.lengths``). A rewind (/undo) and a restore change neither a session's row
    count nor its last id, only Hermes's ``active`` flag: the next search weighs lengths without the
    rewound messages, and with the restored ones, as a cold process does."""
    asker, _best = _unequal_project(world, work)
    folder = work / "chats"
    long = world.session(cwd=folder, title="a long aside")
    asked = world.say(long, "user", "tell me all about the kilo")
    world.say(long, "assistant", " ".join(["zulu kilo"] * 2000))
    plugin_settings(world.home, keyword_index=False, semantic=False)
    enable_plugin(world.home)
    engine = plugin_module("keyword.engine")
    used = []
    read = engine._HermesIndexes.scope_lengths
    monkeypatch.setattr(engine._HermesIndexes, "scope_lengths", lambda self: used.append(read(self)) or used[-1])
    with closing(sqlite3.connect(f"file:{world.home / 'state.db'}?mode=ro", uri=True)) as conn:
        scope = [sid for (sid,) in conn.execute("SELECT id FROM sessions WHERE cwd = ? AND id != ?",
                                                (str(folder), asker))]

    def weighed_as_hermes_shows_them() -> None:
        res = call(SEARCH, {"query": "kilo mike lima", "mode": "keyword", "context": 0}, session_id=asker)
        assert res["success"] and res["results"], res
        shown = [len(m["content"]) for sid in scope for m in world.db.get_messages(sid)
                 if m["role"] in ("user", "assistant")]
        expected = plugin_module("keyword.lengths").Lengths.of(shown)
        assert (used[-1].count, used[-1].total) == (expected.count, expected.total)
        assert used[-1].logs == pytest.approx(expected.logs)

    weighed_as_hermes_shows_them()
    world.db.rewind_to_message(long, asked)
    weighed_as_hermes_shows_them()
    if hasattr(world.db, "restore_rewound"):  # 0.19's (0.22 has none)
        world.db.restore_rewound(long, asked)
        weighed_as_hermes_shows_them()
