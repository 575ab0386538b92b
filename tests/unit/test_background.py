"""The background worker both indexes build on, with a real thread: the order it works in,
``wait_idle``, the thread ending when idle and starting again for new work, what each kind
of step does to the queues, and the memo of current scopes."""

from __future__ import annotations

import sqlite3
import threading

import pytest

from project_history_recall import background
from project_history_recall.background import Step, Stop
from project_history_recall.files.derived import DerivedFile
from project_history_recall.hermes.changes import Change, SessionState

A, B = ("auto", "/a"), ("auto", "/b")
LONG = 60  # a bound for waits that end as soon as the thread has done its part


class Scripted(background.Worker[Change, SessionState]):
    """Works through items as scripted per session (the default: done), once ``gate`` opens."""

    thread_name = "phr-test-worker"
    idle_exit = 0.05  # any value works: the test only waits for the thread to end

    def __init__(self, home, file, script=None):
        super().__init__(home, file)
        self.gate = threading.Event()
        self.working = threading.Event()
        self.script = {sid: list(steps) for sid, steps in (script or {}).items()}
        self.done: list[tuple[tuple, str]] = []
        self.threads: set[threading.Thread] = set()

    def _step(self, key, item):
        self.threads.add(threading.current_thread())
        self.working.set()
        assert self.gate.wait(LONG)
        steps = self.script.get(item.session_id)
        step = steps.pop(0) if steps else Step.DONE
        if isinstance(step, Exception):
            raise step
        self.done.append((key, item.session_id))
        return step


def _work(*sids: str, seen=(1, 1)) -> dict[str, Change]:
    return {sid: Change(sid, "append", 0, seen) for sid in sids}


@pytest.fixture
def home(tmp_path):
    sqlite3.connect(tmp_path / "state.db").close()
    return tmp_path


@pytest.fixture
def index(home):
    file = DerivedFile(home / "derived.db", "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
                       "CREATE TABLE IF NOT EXISTS t (x);", 1)
    yield file
    file.close()


def test_newest_scope_then_newest_session_first_and_idle_once_all_is_done(home, index):
    worker = Scripted(home, index)
    worker._submit(A, _work("s1", "s2"))
    assert worker.working.wait(LONG)  # the thread holds /a's newest session
    worker._submit(B, _work("s3"))
    assert not worker.wait_idle(0)  # nothing can finish while the gate is shut
    worker.gate.set()
    assert worker.wait_idle(LONG)
    assert worker.done == [(A, "s2"), (B, "s3"), (A, "s1")]


def test_the_thread_ends_when_idle_and_new_work_starts_another(home, index):
    worker = Scripted(home, index)
    worker.gate.set()
    worker._submit(A, _work("s1"))
    assert worker.wait_idle(LONG)
    (first,) = worker.threads
    first.join(LONG)
    assert not first.is_alive()
    worker._submit(A, _work("s2"))
    assert worker.wait_idle(LONG)
    assert worker.done == [(A, "s1"), (A, "s2")]
    assert len(worker.threads) == 2


def test_a_caller_may_wait_for_its_scope_to_be_done(home, index):
    worker = Scripted(home, index)
    worker.gate.set()
    planned = _work("s1", "s2")
    assert worker._submit(A, planned, wait=LONG) == 0
    assert list(planned) == ["s1", "s2"]  # the queue is the worker's own: the caller's plan stays whole
    assert worker._submit(B, {}) == 0  # nothing to do: no thread is asked for anything
    assert worker.done == [(A, "s2"), (A, "s1")]


def test_a_pause_tries_again_a_drop_forgets_the_scope(home, index, monkeypatch):
    monkeypatch.setattr(background, "PAUSE", 0)
    worker = Scripted(home, index, {"s2": [Step.PAUSE, Step.DONE], "s4": [Step.DROP]})
    worker._submit(A, _work("s1", "s2"))
    assert worker.working.wait(LONG)
    worker._submit(B, _work("s3", "s4"))
    worker.gate.set()
    assert worker.wait_idle(LONG)
    # s2 paused, then /b (asked since) dropped at s4 so s3 never ran, then s2 again and done.
    assert worker.done == [(A, "s2"), (B, "s4"), (A, "s2"), (A, "s1")]
    assert worker.error is None


def test_the_same_session_planned_alike_for_two_scopes_is_done_once(home, index):
    worker = Scripted(home, index)
    worker._submit(A, _work("s1"))
    assert worker.working.wait(LONG)
    worker._submit(B, _work("s9"))
    worker._submit(A, _work("s1", "s2", seen=(2, 2)))  # s1 grew since: planned again for /a
    worker._submit(B, _work("s1", "s9", seen=(2, 2)))
    worker.gate.set()
    assert worker.wait_idle(LONG)
    # /a's s1 as first planned, then /b (asked last); its s1 done makes /a's alike s1 done too.
    assert worker.done == [(A, "s1"), (B, "s9"), (B, "s1"), (A, "s2")]


@pytest.mark.parametrize("failure, error", [(Stop("the service is gone"), "the service is gone"),
                                            (Stop(None), None),
                                            (RuntimeError("boom"), "indexing failed: RuntimeError: boom")])
def test_a_stop_gives_up_every_queue_and_says_why(home, index, failure, error):
    worker = Scripted(home, index, {"s2": [failure]})
    worker._submit(A, _work("s1", "s2"))
    assert worker.working.wait(LONG)
    worker._submit(B, _work("s3"))
    worker.gate.set()
    assert worker.wait_idle(LONG)
    assert worker.done == [] and worker.error == error
    (thread,) = worker.threads
    thread.join(LONG)
    assert not thread.is_alive()


def test_a_current_scope_is_remembered_until_state_db_the_index_or_its_members_change(home, index):
    worker = Scripted(home, index)
    stamp, known = worker._recall(A, ["s1"])
    assert known is None
    assert worker._remember(A, stamp, {"s1": "state"}) == {"s1": "state"}
    assert worker._recall(A, ["s1"])[1] == {"s1": "state"}
    assert worker._recall(A, ["s1", "s2"])[1] is None  # other members
    assert worker._recall(B, ["s1"])[1] is None  # another scope
    index.transaction(lambda conn: conn.execute("INSERT INTO t VALUES (1)"))
    assert worker._recall(A, ["s1"])[1] is None  # the index committed
    stamp, _ = worker._recall(A, ["s1"])
    worker._remember(A, stamp, {"s1": "later"})
    with sqlite3.connect(home / "state.db") as hermes:
        hermes.execute("CREATE TABLE sessions (id TEXT)")
    assert worker._recall(A, ["s1"])[1] is None  # state.db changed
    stamp, _ = worker._recall(A, ["s1"])
    worker._remember(A, stamp, {"s1": "now"})
    worker._submit(A, _work("s1"))  # work queued for the scope: its answer will change
    assert worker._recall(A, ["s1"])[1] is None
    worker.gate.set()
    assert worker.wait_idle(LONG)


class Chores(Scripted):
    """With an idle chore that holds until ``chore`` is set: ``began`` has the thread that did it and
    whether all was quiet then, ``ended`` whether all was quiet when it was let go."""

    def __init__(self, home, file):
        super().__init__(home, file)
        self.chore = threading.Event()
        self.began: list[tuple[threading.Thread, bool]] = []
        self.ended: list[bool] = []

    def _idle(self):
        self.began.append((threading.current_thread(), self.quiet()))
        assert self.chore.wait(LONG)
        self.ended.append(self.quiet())

    def wait_begun(self, n: int) -> None:
        while len(self.began) < n:
            threading.Event().wait(0.01)


def test_an_idle_chore_is_waited_for_and_sees_new_work(home, index):
    worker = Chores(home, index)
    worker.gate.set()
    worker._submit(A, _work("s1"))
    worker.wait_begun(1)
    assert not worker.wait_idle(0)  # the chore is still going
    worker._submit(B, _work("s2"))  # a search hands work over meanwhile
    worker.chore.set()
    assert worker.wait_idle(LONG)
    assert worker.began[0][1] is True and worker.ended[0] is False
    assert worker.done == [(A, "s1"), (B, "s2")]


def test_chores_asked_for_are_done_by_the_thread_and_waited_for(home, index):
    worker = Chores(home, index)
    worker.chores()  # a search wrote itself, nothing is queued: a thread starts for the chores alone
    assert not worker.wait_idle(0)  # the caller did not wait for them
    worker.wait_begun(1)
    worker.chores()  # asked again while they run: done once more after
    worker.chore.set()
    assert worker.wait_idle(LONG)
    threads = {thread for thread, _quiet in worker.began}
    assert len(worker.began) == 2 and threading.current_thread() not in threads and worker.done == []
    (thread,) = threads
    thread.join(LONG)
    assert not thread.is_alive()  # and the thread ends when idle, as after work


def test_a_failing_idle_chore_is_logged_and_the_thread_goes_on_to_new_work(home, index, caplog):
    class Failing(Scripted):
        def _idle(self):
            raise RuntimeError("merge broke")

    worker = Failing(home, index)
    worker.gate.set()
    worker._submit(A, _work("s1"))
    assert worker.wait_idle(LONG)
    worker._submit(B, _work("s2"))  # handed over while the same thread may still be waiting
    assert worker.wait_idle(LONG)
    assert worker.done == [(A, "s1"), (B, "s2")] and worker.error is None
    assert any("an idle chore failed" in r.getMessage() and r.exc_info for r in caplog.records)


def test_after_state_db_alone_changed_the_index_answer_is_still_known(home, index):
    worker = Scripted(home, index)
    stamp, _ = worker._recall(A, ["s1"])
    worker._remember(A, stamp, {"s1": "state"})
    with sqlite3.connect(home / "state.db") as hermes:  # Hermes writes a session
        hermes.execute("CREATE TABLE sessions (id TEXT)")
    stamp, known = worker._recall(A, ["s1"])
    assert known is None  # state.db must be asked again
    assert worker._index_unchanged(A, stamp) == {"s1": "state"}  # the index need not be
    assert worker._index_unchanged(B, stamp) is None
    assert worker._index_unchanged(A, worker._recall(A, ["s1", "s2"])[0]) is None  # other members
    index.transaction(lambda conn: conn.execute("INSERT INTO t VALUES (1)"))
    assert worker._index_unchanged(A, worker._recall(A, ["s1"])[0]) is None  # the index committed


class Marking(Scripted):
    """Holds ``held``; a session in ``locked`` cannot be marked (another process's write lock)."""

    def __init__(self, home, file, held, locked=()):
        super().__init__(home, file)
        self.held, self.locked, self.marked = held, set(locked), []

    def _held(self, session_ids):
        return {sid: self.held[sid] for sid in session_ids if sid in self.held}

    def _unmarked(self, session_ids, deadline):
        self.marked += [sid for sid in session_ids if sid not in self.locked]
        return [sid for sid in session_ids if sid in self.locked]

    def _redo(self, key, state, seen):
        return Change(state.session_id, "redo", 0, seen)

    def _due(self, item, state):
        return item.kind == "redo"


def test_a_changed_session_is_marked_else_its_redo_queued_and_one_left_to_others_is_not_asked_again(
        home, index, monkeypatch):
    """``changed``: only sessions the index holds, not marked already nor with a redo still due
    queued, are marked; those the lock kept unmarked have their redo queued, as of the counts
    the index holds."""
    held = {sid: SessionState(sid, 5, 3, 9) for sid in ("s1", "s2", "s3", "s4")}
    held["s2"].seen_count = -1  # marked already
    worker = Marking(home, index, held, locked={"s4"})
    monkeypatch.setattr(worker, "_start", lambda: None)  # no thread: the queue stays as it is looked at
    worker._add(A, {"s3": Change("s3", "redo", 0, (3, 9))})  # its redo still due
    worker.changed(A, ["s1", "s2", "s3", "s4", "gone"], 0.0)
    assert worker.marked == ["s1"]
    assert {item.session_id: (item.kind, item.seen) for item in worker._waiting(A)} == {
        "s3": ("redo", (3, 9)), "s4": ("redo", (3, 9))}
