"""Each session's rows in state.db as the indexes' checks and the keyword lengths see them
(``hermes.changes``), on data Hermes's own SessionDB wrote."""

from __future__ import annotations

from hermes_world import write_as_importer

from project_history_recall.hermes.changes import (BIG_ROW_CHARS, RECENT_ROWS, TAIL_ROWS, BigRows, Change, Counted, Once,
                                                   SessionState, edit_windows, is_big, session_counts)
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


class _Opens:
    """A connection that counts its blob opens (``sqlite3.Connection.blobopen`` cannot be patched)."""

    def __init__(self, conn):
        self.conn, self.opened = conn, 0

    def blobopen(self, *args, **kw):
        self.opened += 1
        return self.conn.blobopen(*args, **kw)


def test_only_rows_once_found_big_are_opened_to_be_checked(world):
    """Opening every row of an edit window as a blob, before every search after a write, stalled
    Hermes 0.22's writer; rows are read whole as before, and only those found big are stamped."""
    sid = world.session(*[f"small message {n}" for n in range(40)])
    big = world.say(sid, "user", "a pasted block " * 10_000)
    with reading(world.home / "state.db") as (conn, _shape):
        counting, rows = _Opens(conn), BigRows()
        assert rows.unchanged(counting, sid, 0, big) == [] and counting.opened == 0
        rows.found(counting, sid, [(big, False)])
        assert counting.opened == 1
        assert rows.unchanged(counting, sid, 0, big) == [big] and counting.opened == 2
        assert rows.unchanged(counting, sid, big, big + 5) == [] and counting.opened == 2  # not in that window
        assert rows.unchanged(counting, "another", 0, big) == [] and counting.opened == 2
    assert is_big("x" * (BIG_ROW_CHARS + 1)) and not is_big("x" * BIG_ROW_CHARS, None, 7)
    world.close()
    write_as_importer(world.home, "UPDATE messages SET content = ? WHERE id = ?", "a pasted blocks " * 10_000, big)
    with reading(world.home / "state.db") as (conn, _shape):
        assert rows.unchanged(conn, sid, 0, big) == []  # its size changed: read whole again
