"""Each session's rows in state.db as the indexes' checks and the keyword lengths see them
(``hermes.changes``), on data Hermes's own SessionDB wrote."""

from __future__ import annotations

from project_history_recall.hermes.changes import (RECENT_ROWS, TAIL_ROWS, Change, Counted, Once, SessionState,
                                                   edit_windows, session_counts)
from project_history_recall.hermes.readonly import file_fingerprint
from project_history_recall.hermes.statedb import reading


def test_a_rewind_changes_only_the_active_rows(world):
    sid = world.session("first", ("assistant", "one"))
    asked = world.say(sid, "user", "second")
    last = world.say(sid, "assistant", "two")
    path = world.home / "state.db"
    with reading(path) as (conn, shape):
        assert session_counts(conn, [sid, "none"], shape) == {sid: Counted(4, last, 4), "none": Counted()}
        world.db.rewind_to_message(sid, asked)
        assert session_counts(conn, [sid], shape) == {sid: Counted(4, last, 2)}
        # The indexes' checks compare rows and the last id only (they check what is live when they read).
        assert session_counts(conn, [sid])[sid].seen == (4, last)


def test_a_search_reads_the_counts_once_while_state_db_is_as_it_was(world):
    a, b = world.session("a"), world.session("b", "c")
    path = world.home / "state.db"
    with reading(path) as (conn, shape):
        statements: list[str] = []
        conn.set_trace_callback(statements.append)
        try:
            once = Once(conn, shape, path)
            stamp = file_fingerprint(path)
            assert {k: v.rows for k, v in once([a, b], stamp).items()} == {a: 1, b: 2}
            assert once([b])[b].rows == 2 and once([a, b], stamp)[a].rows == 1
            assert len(statements) == 1
            # A check whose memo is stamped after a commit never takes counts read before it.
            world.say(a, "assistant", "more")
            later = file_fingerprint(path)
            assert later != stamp and once([a, b], later)[a].rows == 2 and len(statements) == 2
            # Nor counts of fewer sessions than it asks for.
            assert once([a, b, "other"], later)["other"] == Counted() and len(statements) == 3
        finally:
            conn.set_trace_callback(None)


def test_the_rows_checked_for_edits_are_the_recent_ones_and_a_grown_sessions_last(world):
    """``edit_windows``: the rows an index holds among the last RECENT_ROWS of state.db, and the last
    TAIL_ROWS it holds of a session that grew; never a session it redoes anyway, nor rows it does not hold."""
    old = world.session(*[f"old {i}" for i in range(TAIL_ROWS + 5)])
    old_ids = [m["id"] for m in world.db.get_messages(old)]
    busy = world.session(*[f"busy {i}" for i in range(RECENT_ROWS + 10)])
    busy_ids = [m["id"] for m in world.db.get_messages(busy)]
    redone = world.session("redone")
    last = world.db.get_messages(redone)[0]["id"]
    states = {old: SessionState(old, old_ids[-1], len(old_ids), old_ids[-1]),
              busy: SessionState(busy, busy_ids[-2], len(busy_ids) - 1, busy_ids[-2]),
              redone: SessionState(redone, last, 1, last)}
    members = [old, busy, redone]
    with reading(world.home / "state.db") as (conn, _shape):
        # ``old`` is past the last rows and did not grow; ``busy`` wrote all but the last of them.
        assert edit_windows(conn, states, members, {}) == {busy: busy_ids[-(RECENT_ROWS - 1)] - 1, redone: last - 1}
        grown = {old: Change(old, "append", old_ids[-1], (len(old_ids) + 1, last + 1)),
                 busy: Change(busy, "append", busy_ids[-2], (len(busy_ids), busy_ids[-1]))}
        windows = edit_windows(conn, states, members, {**grown, redone: Change(redone, "redo", 0, (1, last))})
        assert windows == {old: old_ids[-TAIL_ROWS] - 1, busy: busy_ids[-(RECENT_ROWS - 1)] - 1}
