"""What Hermes 0.22 keeps out of a conversation's live context, and what project history makes of it.

Hermes 0.22 never deletes a message to shrink a conversation: compaction
summarises it in place (the originals become ``active=0, compacted=1``) and a
rewind or /undo takes turns back (``active=0, compacted=0``). Its own
session_search still finds compacted messages (they are what was said) and
never finds rewound ones (the user took them back); so does the plugin, in
every mode.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing

from hermes_world import call, enable_plugin, ids, only_on

pytestmark = only_on((0, 22), "messages.active and messages.compacted, and Hermes's in-place compaction and "
                              "rewind that set them, are newer than 0.19.0")


def _flags(home, ids):
    with closing(sqlite3.connect(f"file:{home / 'state.db'}?mode=ro", uri=True)) as conn:
        return {r[0]: (r[1], r[2]) for r in conn.execute(
            f"SELECT id, active, compacted FROM messages WHERE id IN ({','.join('?' * len(ids))})", ids)}


def _shown(res: dict) -> set[int]:
    """Every message id a search showed: results, their more_hits and their context windows."""
    return set(ids(res)) | {c["message_id"] for r in res["results"] for c in r.get("context", [])}


def test_compacted_messages_are_history_and_rewound_ones_are_not(world, work):
    app = work / "app"
    app.mkdir()
    world.project("App", app)
    sid = world.session(cwd=app, title="Reconnects")
    said = [world.say(sid, "user", "the websocket reconnect loop gives up after one try"),
            world.say(sid, "assistant", "added exponential backoff and a heartbeat ping every 20 seconds")]
    summary = {"role": "user", "content": "[Earlier turns, summarised] the reconnect loop was fixed"}
    world.db.archive_and_compact(sid, [summary])
    taken_back = world.say(sid, "user", "pelican migration across the estuary in spring")
    world.db.replace_messages(sid, [summary], archive_dropped=True)
    asker = world.session(cwd=app)
    assert _flags(world.home, said + [taken_back]) == {said[0]: (0, 1), said[1]: (0, 1), taken_back: (0, 0)}
    # Hermes's own search, the yardstick: compacted rows found, the rewound one not.
    assert {m["id"] for m in world.db.search_messages("heartbeat")} == {said[1]}
    assert world.db.search_messages("pelican") == []
    enable_plugin(world.home)

    for mode in ("keyword", "semantic", "hybrid"):
        found = call("project_history_search", {"query": "heartbeat ping backoff", "mode": mode, "context": 2},
                     session_id=asker)
        # The compacted message is the session's best hit or one of its more_hits; the rewound one is
        # neither, nor in any context window.
        assert said[1] in ids(found), (mode, found)
        assert taken_back not in _shown(found), (mode, found)
        gone = call("project_history_search", {"query": "pelican migration estuary", "mode": mode, "context": 2},
                    session_id=asker)
        assert taken_back not in _shown(gone), (mode, gone)
