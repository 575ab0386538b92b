"""The background thread both derived indexes (``keywords.db``, ``embeddings.db``) keep
themselves in step with state.db by.

A search hands over the work it will not wait for: one item per session, queued per scope
(the scope's attribution key). One thread per index works through it, the most recently
asked scope first and within it the newest session first (Hermes's session ids start with
the date, so recent history becomes searchable soonest), and ends after ``idle_exit``
seconds with nothing to do: an idle Hermes keeps no thread of ours.

A scope found current is remembered with what that answer depended on (state.db's file
stamp, the index's commits, the scope's members), so the next search over an unchanged
scope neither asks state.db nor reads the index's rows again.

A subclass supplies ``_step``, one item's work; ``_redo`` and ``_due``, what a redo of a session
that is due whatever its counts say is (``_queued``); ``_held`` and ``_unmarked``, what the index
holds of a session and how it marks one to be redone (``changed``); and ``_idle`` if it has chores
for quiet times (the thread does them whenever its queues run empty, and when ``chores()`` asks
after a write made outside it).
"""

from __future__ import annotations

import enum
import logging
import threading
import time
from pathlib import Path
from typing import Generic, Protocol, TypeVar

from .files.derived import DerivedFile, StoreError
from .hermes.changes import Counted, Once, SessionState
from .hermes.paths import state_db_path
from .hermes.readonly import StateDBError, file_fingerprint

logger = logging.getLogger(__name__)

PAUSE = 0.5  # seconds before an item that failed for a passing reason (a lock) is tried again


class Item(Protocol):
    session_id: str
    kind: str  # "append": new rows only; anything else redoes the session
    seen: tuple[int, int]  # state.db's (count(*), max(id)) of the session when the item was planned


W = TypeVar("W", bound=Item)
S = TypeVar("S", bound=SessionState)  # what the index keeps of a session; a current scope's answer is its members'


class Step(enum.Enum):
    DONE = "done"  # the item is finished
    AGAIN = "again"  # it yielded to a more recently asked scope: it stays queued, to be picked again
    PAUSE = "pause"  # it failed for a passing reason: it stays queued, tried again after PAUSE
    DROP = "drop"  # its scope may no longer be worked on: all of the scope's queue goes


class Stop(Exception):
    """Raised by ``_step``: give up all queued work. ``reason`` becomes ``error`` (None: the
    index went bad and is replaced by the next search, so there is nothing to report)."""

    def __init__(self, reason: str | None):
        super().__init__(reason)
        self.reason = reason


class Worker(Generic[W, S]):
    """One index's background thread, its queues and its memo of current scopes."""

    thread_name = "phr-worker"
    what = "indexing"  # for the log and ``error``
    idle_exit = 30.0  # seconds the thread waits for work before it ends

    def __init__(self, home: Path, file: DerivedFile):
        self.home = home
        self._file = file
        self._cond = threading.Condition()
        # scope key -> session id -> its item; the most recently asked scope last
        self._queues: dict[tuple, dict[str, W]] = {}
        self._busy = False  # an item is being worked on (it is still in its queue, or was dropped)
        self._chores = False  # asked for the idle chores (``chores``) and not yet begun on them
        self._thread: threading.Thread | None = None
        self._memo: dict[tuple, tuple[tuple, dict[str, S]]] = {}  # scope key -> (what the answer depended on, the answer)
        self.error: str | None = None

    # -- what a subclass supplies ---------------------------------------------------------
    def _step(self, key: tuple, item: W) -> Step:
        raise NotImplementedError

    def _redo(self, key: tuple, state: S, seen: tuple[int, int]) -> W:
        """An item of ``key``'s scope that redoes ``state``'s session, due whatever the session's counts
        say, as of state.db's ``seen``: queued when its mark in the index could not be written."""
        raise NotImplementedError

    def _due(self, item: W, state: S) -> bool:
        """Whether ``item``, queued, is such a redo (``_redo``) and still due for ``state``'s session."""
        raise NotImplementedError

    def _held(self, session_ids: list[str]) -> dict[str, S]:
        """What the index holds of those of ``session_ids`` it holds."""
        raise NotImplementedError

    def _unmarked(self, session_ids: list[str], deadline: float) -> list[str]:
        """Mark ``session_ids`` in the index's file to be redone, so that a later search does it if a
        redo queued now is lost with the process; returns those another process's write lock kept
        unmarked until ``deadline`` (``time.monotonic``)."""
        raise NotImplementedError

    def _idle(self) -> None:
        """Called when the queues ran empty, before the thread waits for more (``wait_idle`` waits
        for it too); a long chore should go on only while ``quiet()``."""

    def chores(self) -> None:
        """Have the thread do its idle chores soon, as after work of its own, for a write made
        outside it (a search's small catch-up). The caller does not wait: the thread (started if
        none runs) does them."""
        with self._cond:
            self._chores = True
            self._start()
            self._cond.notify_all()

    def _failed(self, exc: Exception) -> Step:
        """What a step does when state.db (or another of Hermes's files) cannot be read, or the
        index's own file cannot be written: another process's lock passes, so the item is tried
        again after PAUSE; anything else does not, and all queued work is given up (``Stop``), with
        its reason and no traceback. State.db gone with a home deleted or renamed, or not a Hermes
        database any more; a full disk, a file-size limit, a read-only folder; a remote embedder
        failing: tried again every PAUSE, such an item kept the thread busy for as long as the
        process ran, never idle, a warning logged at each try. The next search plans its scope
        afresh."""
        if isinstance(exc, StateDBError) and exc.code == "locked" or isinstance(exc, StoreError) and exc.locked:
            logger.warning("%s paused: %s", self.what, exc)
            return Step.PAUSE
        logger.warning("%s stopped: %s", self.what, exc)
        raise Stop(str(exc)) from exc

    def quiet(self) -> bool:
        """Nothing is queued: an idle chore may go on."""
        with self._cond:
            return self._next() is None

    # -- the memo -------------------------------------------------------------------------
    def _recall(self, key: tuple, members: list[str]) -> tuple[tuple, dict[str, S] | None]:
        """(what an answer for ``key`` depends on now, the answer remembered for exactly that,
        else None). Nothing queued for the scope may change it either."""
        stamp = (file_fingerprint(state_db_path(self.home)), self._file.commits(), hash(frozenset(members)))
        with self._cond:
            known = self._memo.get(key)
            if known is not None and known[0] == stamp and not self._queues.get(key):
                return stamp, known[1]
        return stamp, None

    @staticmethod
    def _counted(counts: Once | None, members: list[str], stamp: tuple) -> dict[str, Counted] | None:
        """The search's ``counts`` of ``members``, read after ``stamp`` (``_recall``'s) was taken so
        that an answer remembered with that stamp misses no later commit; None when the caller
        has none (the index then reads its own)."""
        return counts(members, stamp[0]) if counts is not None else None

    def _index_unchanged(self, key: tuple, stamp: tuple) -> dict[str, S] | None:
        """The answer remembered for ``key`` when only state.db changed since (Hermes writes it all
        through a session): the index has not committed since, so what it says of the same members
        is what it said then; state.db must still be asked whether they are current."""
        with self._cond:
            known = self._memo.get(key)
        return known[1] if known is not None and known[0][1:] == stamp[1:] else None

    def _restamp(self, stamp: tuple) -> tuple:
        """``stamp`` with the index's commits as they are now, after work on the scope: take it
        before reading the answer, so that a commit in between only makes the memo miss once."""
        return stamp[0], self._file.commits(), stamp[2]

    def _remember(self, key: tuple, stamp: tuple, answer: dict[str, S]) -> dict[str, S]:
        """``answer`` for ``key``, read after ``stamp`` was taken, until anything in it changes."""
        with self._cond:
            self._memo[key] = (stamp, answer)
        return answer

    # -- redos the counts do not tell -----------------------------------------------------------
    def _replan(self, key: tuple, state: S, work: dict[str, W]) -> W:
        """A redo (``_redo``) of ``state``'s session as of the counts its planned ``work`` was made from,
        else those the index holds."""
        planned = work.get(state.session_id)
        return self._redo(key, state, planned.seen if planned is not None else (state.seen_count, state.seen_max_id))

    def _queued(self, key: tuple, states: dict[str, S], work: dict[str, W]) -> dict[str, W]:
        """The scope's queued redos still due (``_due``) of its members (``states``), as of the counts
        now: one queued while another process held off its mark in the file is in neither the counts
        nor the file, so a plan made from them alone would leave it out, and replace the queue that
        holds it (``_submit``). An append planned for the session becomes its redo."""
        out: dict[str, W] = {}
        for item in self._waiting(key):
            st, planned = states.get(item.session_id), work.get(item.session_id)
            if st is not None and (planned is None or planned.kind == "append") and self._due(item, st):
                out[item.session_id] = self._replan(key, st, work)
        return out

    def changed(self, key: tuple, session_ids: list[str], wait: float) -> None:
        """Have the sessions in which a search found a message that no longer says what was indexed
        indexed again: marked in the index's file (``_unmarked``), waiting at most ``wait`` for
        another process's write lock, else their redo (``_redo``) queued for ``key``'s scope now.
        Only a session the index holds is; one marked already, or with a redo queued that is still
        due (``_due``), is left be."""
        deadline = time.monotonic() + wait
        queued = {item.session_id: item for item in self._waiting(key)}
        held = {sid: st for sid, st in self._held(session_ids).items()
                if st.seen_count >= 0 and not (sid in queued and self._due(queued[sid], st))}
        if not held:
            return
        later = {sid: self._redo(key, held[sid], (held[sid].seen_count, held[sid].seen_max_id))
                 for sid in self._unmarked([sid for sid in session_ids if sid in held], deadline)}
        if later:
            self._add(key, later)

    # -- the queues -----------------------------------------------------------------------
    def _submit(self, key: tuple, work: dict[str, W], wait: float = 0.0) -> int:
        """Make ``work`` the scope's queue and the scope the most recently asked; wait up to
        ``wait`` seconds for it to be done. Returns how many items are still queued."""
        with self._cond:
            self._queues.pop(key, None)
            if not work:
                return 0
            self._queues[key] = dict(work)  # the thread empties it; the caller's stays as planned
            self._start()
            self._cond.notify_all()
            deadline = time.monotonic() + max(0.0, wait)
            while self._queues.get(key) and self.error is None:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(left)
            return len(self._queues.get(key) or {})

    def _waiting(self, key: tuple) -> list[W]:
        """The items the scope's queue holds now (the thread may finish any of them meanwhile)."""
        with self._cond:
            return list(self._queues.get(key, {}).values())

    def _add(self, key: tuple, work: dict[str, W]) -> None:
        """Queue ``work`` beside what the scope's queue holds (an item of the same session
        replaced), for the thread; the caller does not wait."""
        with self._cond:
            self._queues.setdefault(key, {}).update(work)
            self._start()
            self._cond.notify_all()

    def _start(self) -> None:
        """A thread for the queues and the chores, unless one runs (``_cond`` held)."""
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._run, name=self.thread_name, daemon=True)
            self._thread.start()

    def _newer_scope_waiting(self, item: W) -> bool:
        """A scope asked for more recently than ``item``'s has work that does not include it."""
        with self._cond:
            newest: dict[str, W] = next(reversed(self._queues.values()), {})
            return bool(newest) and item.session_id not in newest

    def wait_idle(self, timeout: float) -> bool:
        """True once nothing is queued or being worked on, and the chores asked for are done
        (for tests; searches never wait, and the ``index`` command works in its own thread)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while any(self._queues.values()) or self._busy or self._chores:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)
            return True

    # -- the thread -----------------------------------------------------------------------
    def _next(self) -> tuple[tuple, W] | None:
        for key in reversed(self._queues):
            queue = self._queues[key]
            if queue:
                return key, queue[max(queue)]
        return None

    def _run(self) -> None:
        while True:
            with self._cond:
                idle = self._busy = self._next() is None
                self._chores = False  # done now if idle, else once the queues run empty
            if idle:
                try:
                    self._idle()
                except Exception:  # a chore is only housekeeping: logged, and the thread goes on
                    logger.exception("%s: an idle chore failed", self.what)
                finally:
                    with self._cond:
                        self._busy = False
                        self._cond.notify_all()
            with self._cond:
                # Asked again once the wait timed out, under the lock: work or chores handed over
                # in that instant saw this thread alive and started no other.
                if not self._cond.wait_for(lambda: self._chores or self._next() is not None, self.idle_exit):
                    self._thread = None
                    return
                found = self._next()
                if found is None:
                    continue  # chores were asked for: the top of the loop does them
                key, item = found
                self._busy = True
            try:
                step = self._step(key, item)
            except Stop as stop:
                self._stop(stop.reason)
                return
            except Exception as exc:  # never end the thread silently
                logger.exception("%s failed", self.what)
                self._stop(f"{self.what} failed: {type(exc).__name__}: {exc}")
                return
            if step is Step.PAUSE:
                time.sleep(PAUSE)
            with self._cond:
                # Work done makes the idle chores due (merging what it wrote): flagged in the same hold
                # of the lock that ends the step, so ``wait_idle`` cannot slip in before the top of the
                # loop begins them (a test read an unmerged index after ``wait_idle``, under load).
                self._busy, self._chores = False, True
                if step is Step.DROP:
                    self._queues.pop(key, None)
                elif step is Step.DONE:
                    queue = self._queues.get(key)
                    if queue and queue.get(item.session_id) is item:
                        del queue[item.session_id]
                    for other in self._queues.values():  # the same session may be queued for two scopes
                        if other.get(item.session_id) is not None and other[item.session_id].seen == item.seen:
                            del other[item.session_id]
                self._cond.notify_all()

    def _stop(self, reason: str | None) -> None:
        """Give up all queued work; searches report ``reason`` and the next one starts afresh."""
        with self._cond:
            self.error = reason
            self._queues.clear()
            self._busy = self._chores = False
            self._thread = None
            self._cond.notify_all()
