"""Bringing a project's indexes (or every project's) up to date now, ahead of the searches.

A search keeps both indexes in step by itself, a little at a time and in the
background; ``run`` does the whole job at once, in the calling thread, for a
person who would rather wait now (the ``index`` command, the demo). It
updates the plugin's keyword index (``keywords.db``) and the semantic index
(``embeddings.db``), and returns a dict like ``search.run``: never raises for
anything a caller sends.

Nothing of a project is sent to a remote embedder without consent on record
for it: such a project is skipped (``skipped_for_consent``) and the rest is
indexed. A consent withdrawn while its project is indexed stops that project
before the next batch (the gate asks before each); its entry says how much
was sent before, under the consent (``sent_before_withdrawal``).

One run at a time per home (a lock file in the data folder): a second run
waits for the first and then finds only what the first left undone, instead
of embedding the same messages twice over.
"""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator

from . import settings as config
from .errors import CONSENT, DONE, DataError, PluginError, UsageError, counted
from .files import derived
from .files.folders import make_own
from .files.locks import FileLock, LockTimeout
from .hermes import paths
from .hermes.host import Caller
from .hermes.statedb import reading
from .keyword import textindex
from .scope.resolve import HOME_REASON, attribution_map, auto_name, resolve_scope
from .semantic import consent, consent_request, indexer
from .semantic import engine as semantic
from .semantic import kept as semantic_parts
from .semantic.embedders.base import known_fingerprint

if TYPE_CHECKING:
    from .settings import Settings

# (stage "keyword" | "semantic", the project's name, sessions done, of total, the semantic pass so far or None)
OnProgress = Callable[[str, str, int, int, "indexer.Progress | None"], None]

_TOTALS = ("sessions", "sessions_updated", "messages_embedded", "chunks_embedded", "messages_removed",
           "messages_changed", "deleted_sessions_dropped", "seconds", "embed_seconds")


def targets(home: Path, caller: Caller, project: str | None = None,
            every: bool = False) -> list[tuple[tuple, str | None, list[str]]]:
    """(project key, its name, its sessions) for the caller's project, the named one, or every project."""
    with reading(paths.state_db_path(home)) as (conn, _shape):
        if every:
            amap = attribution_map(home, conn)
            names = {("explicit", p.id): p.name for p in amap.ctx.projects}
            return [(key, names.get(key) or auto_name(key[1]), sids)
                    for key, sids in sorted(amap.by_project.items(), key=lambda kv: str(kv[0]))
                    if key[0] != "home"]
        scope = resolve_scope(home, conn, caller, project_ref=project, include_current=True)
    if scope.attribution.kind == "home":
        raise UsageError(HOME_REASON)
    return [(scope.attribution.key, scope.attribution.name, scope.members)]


LOCK_NAME = "index.lock"


@contextmanager
def _one_run_at_a_time(home: Path, on_wait: Callable[[], None] | None) -> Iterator[None]:
    lock = FileLock(paths.data_dir(home) / LOCK_NAME)
    try:
        make_own(paths.data_dir(home))
        lock.acquire(timeout=0)
    except LockTimeout:
        if on_wait is not None:
            on_wait()
        lock.acquire()
    except OSError:
        # No data folder to hold a lock in: the indexes cannot be written either, and say so themselves.
        yield
        return
    try:
        yield
    finally:
        lock.release()


def run(home: Path, caller: Caller, *, project: str | None = None, every: bool = False,
        on_progress: OnProgress | None = None, grant_command: str = "hermes recall",
        on_wait: Callable[[], None] | None = None,
        on_estimate: Callable[[dict], None] | None = None) -> dict:
    """Index the caller's project (or ``project``, or ``every`` project); the response dict.

    ``model``, ``index``, ``projects`` and ``totals`` tell of the semantic
    index, ``keyword`` of the keyword index. ``grant_command``: how the person
    runs this program, for the consent hint of a skipped project. ``on_wait``
    is called when another run holds the home's index lock, before waiting.
    ``on_estimate`` is told, before anything is embedded, how much there is to
    embed and about how long it takes (``indexer.estimate``; it is in the
    response as ``estimate`` too). ``repaired``: an index found damaged on the
    way, and built anew."""
    try:
        wanted = targets(home, caller, project, every)
        with _one_run_at_a_time(home, on_wait):
            out, repaired = derived.after_repair(
                lambda: _run(home, config.load(home), wanted, on_progress, grant_command, on_estimate))
    except PluginError as exc:
        return exc.envelope()
    return {**out, "repaired": repaired} if repaired else out


def _run(home: Path, settings: Settings, wanted, on_progress: OnProgress | None, grant_command: str,
         on_estimate: Callable[[dict], None] | None) -> dict:
    out: dict = {"success": True, "outcome": DONE}
    if settings.keyword_index:
        out["keyword"] = _keyword(home, wanted, on_progress)
    ready = semantic.prepare(home, settings, wait=None)
    if ready.status == "disabled":
        return {**out, "semantic_status": ready.status, "semantic_reason": ready.reason}
    if not ready.usable:
        raise DataError(f"semantic index not built: {ready.reason}", semantic_status=ready.status)
    return {**out, "semantic_status": "ready",
            **_semantic(home, settings, ready, wanted, on_progress, grant_command, on_estimate)}


def _keyword(home: Path, wanted, on_progress: OnProgress | None) -> dict:
    keeper = textindex.keeper(home)
    updated = 0
    for key, name, sids in wanted:
        updated += keeper.build(key, sids, on_progress=(
            (lambda done, total, name=name: on_progress("keyword", name, done, total, None))
            if on_progress else None))
    keeper.settle()  # also what an earlier run or the background left unmerged
    return {"index": str(keeper.index.path), "sessions": sum(len(s) for _, _, s in wanted),
            "sessions_updated": updated, **_rebuilt(keeper.index)}


def _rebuilt(index: derived.DerivedFile) -> dict:
    """``rebuilt``: why the run began the index afresh (another version of the plugin laid it out),
    when it did: a run that embeds everything again says why, for a remote model at a price."""
    return {"rebuilt": index.rebuilt_reason} if index.rebuilt_reason else {}


def _semantic(home: Path, settings: Settings, ready: semantic.Outcome, wanted, on_progress: OnProgress | None,
              grant_command: str, on_estimate: Callable[[dict], None] | None) -> dict:
    (embedder, store), worker = ready.parts(), None
    done: list[dict[str, Any]] = []
    skipped: list[dict[str, Any]] = []
    estimate = None
    if not embedder.remote:  # a remote model's projects may be skipped for consent, and its speed is unknown
        chunks, fp = 0, known_fingerprint(embedder)  # an offline model's size is fixed
        with reading(paths.state_db_path(home)) as (conn, _shape):
            for _key, _name, sids in wanted:
                work = indexer.plan(conn, store.states(fp, sids), sids)
                chunks += indexer.pending_chunks(conn, work, settings.chunk_chars, settings.chunk_overlap)
        estimate = indexer.estimate(chunks, embedder, semantic.measured_rate(home, fp))
        if on_estimate:
            on_estimate(estimate)
    for key, name, sids in wanted:
        try:
            consent.check(home, embedder, key)  # before anything of this project is read for sending
        except consent.ConsentRequired:
            skipped.append({"project": _project(key, name),
                            "reason": f"no consent to send its messages to {embedder.provider} "
                                      f"(model {embedder.model}); nothing was sent",
                            "how_to_record": consent_request.grant_command(grant_command, key[1])})
            continue
        with reading(paths.state_db_path(home)) as (conn, shape):
            sample = (indexer.first_text(conn, shape, sids, settings.chunk_chars, settings.chunk_overlap)
                      if embedder.dimension is None else None)
        progress = indexer.Progress()  # stays empty when there is nothing in this project to embed (yet)
        asked = int(sample is not None)  # the piece that asks the model its vector size goes first
        try:
            if semantic.learn_size(embedder, sample):
                worker = worker or semantic_parts.of(home).indexer(settings, embedder, store)
                worker.index_now(key, sids, progress=progress, on_progress=(
                    (lambda p, d, t, name=name: on_progress("semantic", name, d, t, p)) if on_progress else None))
        except consent.ConsentRequired:
            skipped.append(_withdrawn(key, name, embedder, progress.batches + asked, progress.chunks + asked,
                                      grant_command))
            continue
        done.append({"project": _project(key, name), "sessions": len(sids),
                     "sessions_updated": progress.sessions, "messages_embedded": progress.messages,
                     "chunks_embedded": progress.chunks, "messages_removed": progress.removed,
                     "messages_changed": progress.changed, "deleted_sessions_dropped": progress.sessions_removed,
                     "seconds": round(progress.seconds, 2), "embed_seconds": round(progress.embed_seconds, 2)})
    out: dict[str, object] = {
        "model": embedder.fingerprint, "model_name": embedder.model, "index": str(store.path), "projects": done,
        "totals": {k: sum(s[k] for s in done) for k in _TOTALS}, **_rebuilt(store)}
    if estimate is not None:
        out["estimate"] = estimate
    if skipped:
        out["skipped_for_consent"] = skipped
        out["outcome"] = CONSENT
    return out


def _project(key: tuple, name: str | None) -> dict:
    """How the response names a project: its attribution key's kind and id, and its name."""
    return {"kind": key[0], "id": key[1], "name": name}


def _withdrawn(key: tuple, name: str, embedder, batches: int, chunks: int, grant_command: str) -> dict:
    """A project whose consent was withdrawn while it was indexed (the gate asks before each
    batch): what had been sent before, under the consent, and that nothing was after."""
    return {"project": _project(key, name),
            "reason": f"its consent to send its messages to {embedder.provider} (model {embedder.model}) was "
                      f"withdrawn while it was indexed: {counted(batches, 'batch', 'es')} of "
                      f"{counted(chunks, 'chunk')} had been sent before, with consent; nothing was sent after the "
                      "withdrawal",
            "sent_before_withdrawal": {"batches": batches, "chunks": chunks},
            "how_to_record": consent_request.grant_command(grant_command, key[1])}
