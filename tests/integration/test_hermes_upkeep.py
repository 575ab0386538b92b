"""What Hermes's own upkeep of ``state.db`` does to project history between two calls.

Hermes keeps its file with commands of its own: ``hermes sessions optimize`` (0.22) fills its FTS
indexes anew in chunks, and a Ctrl-C leaves it half-way until it is run again; ``SessionDB.vacuum``,
``prune_sessions``, ``archive_sessions``, ``optimize_fts`` and ``rebuild_fts`` rewrite rows and
indexes under a process that has searched already. Each is driven through Hermes's own ``SessionDB``,
and the plugin is asked through Hermes's dispatch.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing

import pytest

from hermes_world import call, db_digest, enable_plugin, found, only_on, plugin_module, plugin_settings

SEARCH = "project_history_search"


class _Interrupted(Exception):
    """The user's Ctrl-C in ``hermes sessions optimize`` (which says it is safe, and resumes)."""


@only_on((0, 22), "the chunked refill of the FTS indexes (hermes sessions optimize) is 0.22's")
@pytest.mark.parametrize("scan_limit", [10_000, 0], ids=["small-scope", "big-scope"])
def test_a_refill_of_hermes_indexes_stopped_half_way_loses_no_message(world, work, monkeypatch, scan_limit):
    app = work / "app"
    app.mkdir()
    world.project("App", app)
    said = "pelican harbour: ERR_PELICAN_DOCK 支付回调超时"
    early = world.session(("user", said), cwd=app)
    for n in range(30):
        world.session(("user", f"filler talk number {n} about nothing much"), cwd=app)
    late = world.session(("user", said), cwd=app)
    asker = world.session(cwd=app)
    # An index left empty with messages (the state a 0.19 home's upgrade leaves once its old index is
    # set aside), then refilled five rows a chunk and stopped after two chunks: the first ten messages
    # are indexed again, the later ones not yet.
    with closing(sqlite3.connect(world.home / "state.db")) as conn:
        for table in ("messages_fts", "messages_fts_trigram"):
            conn.execute(f"INSERT INTO {table}({table}) VALUES('delete-all')")
        conn.commit()
    world.db._FTS_REBUILD_CHUNK_ROWS = 5

    def progress(info):
        if info["phase"] == "backfill" and info["indexed"] >= 10:
            raise _Interrupted

    with pytest.raises(_Interrupted):
        world.db.optimize_fts_storage(progress_cb=progress, vacuum=False)
    assert world.db.fts_rebuild_status()["indexed"] == 10
    # Hermes's own search, the yardstick: it reads the rows not indexed yet as substrings meanwhile.
    assert {m["session_id"] for m in world.db.search_messages("pelican")} == {early, late}
    plugin_settings(world.home, keyword_index=False, semantic=False)
    enable_plugin(world.home)
    monkeypatch.setattr(plugin_module("keyword.engine"), "SCAN_LIMIT", scan_limit)
    before = db_digest(world.home / "state.db")

    for query in ("pelican harbour", "pelicans", "ERR_PELICAN_DOCK", "支付回调超时"):
        res = call(SEARCH, {"query": query, "mode": "keyword"}, session_id=asker)
        assert found(res) == {early, late}, (query, res)
    assert db_digest(world.home / "state.db") == before
