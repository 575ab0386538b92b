"""Semantic indexing and search at scale (measurements, not tests).

1. No-op incremental check at 1M messages: a copy of the synthetic 1M-message
   home (``synth.py``), one typical project indexed, then the per-search
   top-up timed (a) when nothing changed anywhere and (b) after Hermes wrote a
   message into another project's session (state.db changed, this scope not).
   ``--no-1m`` leaves it out.
2. A one-project home with ~100k user/assistant messages (~100k chunks in
   scope): indexing throughput against the raw embedder throughput on a
   sample of the same chunks, measured in the same run (before and after);
   then, in a fresh process, warm hybrid query latency and peak RSS.
3. The first search of a fresh process (what every ``hermes chat -q`` is),
   in a 10k-message home and in that one: Hermes loads its plugins, fires
   ``on_session_start`` through its plugin manager, and ``--delay`` seconds
   later the first ``project_history_search`` goes through its dispatch.
   Printed as its own block: whether semantic search was ``ready``, the
   call's wall time, the warm-up's, and the process's peak RSS, beside the
   hardware and the load average of each trial. Each trial is its own
   process: the model is loaded once per process.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time
from pathlib import Path

from . import common, synth


def _status_mb() -> dict:
    """This process's memory figures from /proc/self/status, in MB, by name (``VmRSS``...)."""
    with open("/proc/self/status") as fh:
        return {line.split(":")[0]: int(line.split()[1]) / 1024 for line in fh if line.split()[-1:] == ["kB"]}


def _rss_mb() -> float:
    return _status_mb().get("VmRSS", float("nan"))


def _rss_parts_mb() -> dict:
    """RSS split into memory of its own (anonymous) and pages of mapped files (state.db is read
    through mmap: its pages count once per connection that touched them, and the kernel can drop them;
    so can the model's mapped arrays)."""
    status = _status_mb()
    return {"anon": status.get("RssAnon"), "file": status.get("RssFile")}


def _peak_mb() -> float:
    """This process's peak RSS. Not ``ru_maxrss``: Linux carries that across exec, so a fresh
    process started by a bigger one would report its parent's peak."""
    return _status_mb().get("VmHWM", float("nan"))


def _copy_home(src: Path, dst: Path) -> None:
    if (dst / "state.db").exists():
        return
    dst.mkdir(parents=True, exist_ok=True)
    for name in ("state.db", "projects.db", "synth-world.json"):
        shutil.copy2(src / name, dst / name)


def _chunk_texts(conn, sessions: list[str], settings) -> list[str]:
    from project_history_recall.semantic import chunking
    from project_history_recall.hermes.statedb import decode_content

    texts = []
    for (content,) in conn.execute(
            "SELECT content FROM messages WHERE session_id IN (SELECT value FROM json_each(?)) "
            "AND role IN ('user', 'assistant') ORDER BY id", (json.dumps(sessions),)):
        text = chunking.prepare(decode_content(content))
        texts.extend(p for _, p in chunking.split(text, settings.chunk_chars, settings.chunk_overlap))
    return texts


def _raw_rate(embedder, texts: list[str], batch: int) -> float:
    # Calls the embedder directly, past the consent gate: only ever the local model.
    if getattr(embedder, "remote", True) is not False:
        raise SystemExit("benchmarks measure the embedded local model only (set 'embedder: local')")
    embedder.embed_documents(texts[:batch])  # warm-up: first calls pay one-off set-up costs
    t0 = time.perf_counter()
    for i in range(0, len(texts), batch):
        embedder.embed_documents(texts[i:i + batch])
    return len(texts) / (time.perf_counter() - t0)


def noop_check(home: Path, repeats: int) -> dict:
    from hermes_state import SessionDB

    from project_history_recall.hermes import changes
    from project_history_recall import settings as config
    from project_history_recall.semantic import kept
    from project_history_recall.semantic import engine as semantic
    from project_history_recall.hermes.host import Caller
    from project_history_recall.scope.resolve import resolve_scope
    from project_history_recall.hermes.statedb import reading

    settings = config.load(home)
    ready = semantic.prepare(home, settings, wait=None)
    worker = kept.of(home).indexer(settings, ready.embedder, ready.store)
    conn = sqlite3.connect(f"file:{home / 'state.db'}?mode=ro", uri=True)
    callers = [r[0] for r in conn.execute(
        "SELECT id FROM sessions WHERE source = 'cli' AND cwd IS NOT NULL ORDER BY id")]
    conn.close()
    # A typical project: the median scope among a sample of callers.
    sized = []
    with reading(home / "state.db") as (conn, _shape):
        for sid in random.Random(3).sample(callers, 40):
            scope = resolve_scope(home, conn, Caller.of(sid), include_current=True)
            sized.append((scope.message_estimate, sid, scope))
    sized.sort(key=lambda t: t[0])
    _, caller, scope = sized[len(sized) // 2]
    members = list(scope.session_ids)
    key = scope.attribution.key
    t0 = time.perf_counter()
    progress = worker.index_now(key, members)
    index_s = time.perf_counter() - t0
    quiet, changed, groupby = [], [], []
    other = next(s for s in callers if s not in set(members))
    writer = SessionDB(db_path=home / "state.db")
    try:
        with reading(home / "state.db") as (conn, shape):
            worker.top_up(conn, shape, key, members, 0)
        for i in range(repeats):
            with reading(home / "state.db") as (conn, shape):
                t = time.perf_counter()
                summary = worker.top_up(conn, shape, key, members, 0)
                quiet.append((time.perf_counter() - t) * 1000)
                assert summary["pending"] == 0, summary
            writer.append_message(other, "user", f"a message in another project {i}")
            with reading(home / "state.db") as (conn, shape):
                t = time.perf_counter()
                summary = worker.top_up(conn, shape, key, members, 0)
                changed.append((time.perf_counter() - t) * 1000)
                assert summary["pending"] == 0, summary
                t = time.perf_counter()
                changes.session_counts(conn, members)
                groupby.append((time.perf_counter() - t) * 1000)
    finally:
        writer.close()
    with reading(home / "state.db") as (conn, _shape):
        total = conn.execute("SELECT max(id) FROM messages").fetchone()[0]
    return {
        "messages_in_home": total, "scope_sessions": len(members), "scope_messages": scope.message_estimate,
        "indexed_chunks": progress.chunks, "index_seconds": index_s,
        "noop_nothing_changed_ms": {"p50": statistics.median(quiet), "max": max(quiet)},
        "noop_state_db_changed_elsewhere_ms": {"p50": statistics.median(changed), "max": max(changed)},
        "per_session_count_query_ms": {"p50": statistics.median(groupby)},
        "repeats": repeats,
    }


def index_one_project(home: Path, messages: int, sample: int) -> dict:
    from project_history_recall import settings as config
    from project_history_recall.semantic import kept
    from project_history_recall.semantic import engine as semantic
    from project_history_recall.hermes.host import Caller
    from project_history_recall.scope.resolve import resolve_scope
    from project_history_recall.hermes.statedb import reading

    if not (home / "synth-world.json").exists():
        home.mkdir(parents=True, exist_ok=True)
        print(f"building a one-project home with {messages:,} messages in {home}…", flush=True)
        synth.build(home, synth.SynthSpec(messages=messages, sessions=max(10, messages // 100), projects=1, seed=11))
    settings = config.load(home)
    ready = semantic.prepare(home, settings, wait=None)
    worker = kept.of(home).indexer(settings, ready.embedder, ready.store)
    conn = sqlite3.connect(f"file:{home / 'state.db'}?mode=ro", uri=True)
    caller = conn.execute("SELECT id FROM sessions WHERE source = 'cli' AND cwd IS NOT NULL LIMIT 1").fetchone()[0]
    conn.close()
    with reading(home / "state.db") as (conn, _shape):
        scope = resolve_scope(home, conn, Caller.of(caller), include_current=True)
        texts = _chunk_texts(conn, scope.session_ids, settings)
    sample_texts = random.Random(5).sample(texts, min(sample, len(texts)))
    raw_before = _raw_rate(ready.embedder, sample_texts, settings.batch_size)
    last = [0.0]

    def report(p, done, total):
        if time.monotonic() - last[0] > 30:
            last[0] = time.monotonic()
            print(f"  {done}/{total} sessions, {p.chunks:,} chunks", flush=True)

    t0 = time.perf_counter()
    progress = worker.index_now(scope.attribution.key, list(scope.session_ids), on_progress=report)
    wall = time.perf_counter() - t0
    raw_after = _raw_rate(ready.embedder, sample_texts, settings.batch_size)
    raw = (raw_before + raw_after) / 2
    return {
        "caller": caller, "scope_sessions": len(scope.session_ids), "chunks_in_scope": len(texts),
        "chunks_indexed": progress.chunks, "index_wall_seconds": wall,
        "indexing_chunks_per_s": progress.chunks / wall if wall else None,
        "raw_embedder_chunks_per_s": {"before": raw_before, "after": raw_after, "mean": raw, "sample": len(sample_texts)},
        "indexing_vs_raw": (progress.chunks / wall) / raw if wall and raw else None,
        "indexing_process_peak_rss_mb": _peak_mb(),
        "keyword_index_build_s": _build_keyword_index(home, caller),
    }


def _build_keyword_index(home: Path, caller: str) -> float:
    """The scope's keyword index, as background indexing leaves it (seconds; ~0 when current)."""
    from project_history_recall.hermes.host import Caller
    from project_history_recall.keyword import textindex
    from project_history_recall.scope.resolve import resolve_scope
    from project_history_recall.hermes.statedb import reading

    with reading(home / "state.db") as (conn, _shape):
        scope = resolve_scope(home, conn, Caller.of(caller), include_current=True)
    t = time.perf_counter()
    textindex.keeper(home).build(scope.attribution.key, scope.members)
    return time.perf_counter() - t


def serve(home: Path, caller: str, queries: int) -> dict:
    """In a fresh process: warm hybrid latency and RSS with the whole scope in memory."""
    from project_history_recall import search
    from project_history_recall.hermes.host import Caller

    base = _rss_mb()
    rng = random.Random(9)
    words = [w for w in synth.EN_WORDS[60:] if len(w) > 3]
    asks = [f"{rng.choice(words)} {rng.choice(words)}" for _ in range(queries)]
    t = time.perf_counter()
    first = search.run(home, Caller.of(caller), {"query": "how did we fix the timeout", "context": 2})
    cold = (time.perf_counter() - t) * 1000
    assert first["success"], first
    lat, statuses, sources = [], set(), set()
    for q in asks:
        t = time.perf_counter()
        out = search.run(home, Caller.of(caller), {"query": q, "limit": 10, "context": 2})
        lat.append((time.perf_counter() - t) * 1000)
        statuses.add(out["semantic_status"])
        sources.update(r["score_source"] for r in out["results"])
    return {"cold_first_ms": cold, "hybrid_p50_ms": statistics.median(lat),
            "hybrid_p95_ms": common.percentile(lat, 95), "queries": len(lat), "statuses": sorted(statuses),
            "score_sources": sorted(sources), "rss_before_mb": base, "rss_after_mb": _rss_mb(),
            "peak_rss_mb": _peak_mb(), "searched_with": first["searched_with"]}


FIRST_QUESTION = "how did we fix the timeout"
PLUGIN_KEY = "project-history-recall"
PLUGIN_TOOL = "project_history_search"


def _enable_plugin(home: Path) -> None:
    """Hermes loads a pip plugin only when config.yaml enables it."""
    config = home / "config.yaml"
    if not config.exists():
        config.write_text(f"plugins:\n  enabled: [{PLUGIN_KEY}]\n", encoding="utf-8")


def first_call(home: Path, caller: str, delay: float) -> dict:
    """In a fresh process, as in a new ``hermes chat -q``: Hermes loads its plugins, fires
    ``on_session_start`` through its plugin manager, and ``delay`` seconds later the model's
    first ``project_history_search`` goes through Hermes's dispatch."""
    import threading

    os.environ["HERMES_HOME"] = str(home)
    from hermes_cli import plugins
    import model_tools  # Hermes discovers and registers its plugins here, as when it starts

    loaded = {p["key"]: p for p in plugins.get_plugin_manager().list_plugins()}.get(PLUGIN_KEY)
    if not loaded or not loaded["enabled"] or loaded["error"]:
        raise SystemExit(f"Hermes did not load the plugin: {loaded}")
    load_at_start = os.getloadavg()[0]
    started, cpu = time.perf_counter(), time.process_time()
    returned = plugins.invoke_hook("on_session_start", session_id=caller, model="bench/model", platform="cli")
    warm_thread = next((t for t in threading.enumerate() if t.name == "phr-warm-up"), None)
    warmed: list[float] = []
    if warm_thread is not None:
        threading.Thread(target=lambda: (warm_thread.join(), warmed.append(time.perf_counter() - started)),
                         daemon=True).start()
    time.sleep(max(0.0, started + delay - time.perf_counter()))

    def search(query: str) -> tuple[dict, float]:
        t = time.perf_counter()
        raw = model_tools.handle_function_call(PLUGIN_TOOL, {"query": query, "context": 2},
                                               task_id=caller, session_id=caller)
        return json.loads(raw), (time.perf_counter() - t) * 1000

    made_at = time.perf_counter() - started
    out, wall_ms = search(FIRST_QUESTION)
    if not out.get("success"):
        raise SystemExit(f"the first search failed: {out}")
    rss_first = _rss_mb()
    warm_done_before = bool(warmed) and warmed[0] <= made_at
    if warm_thread is not None:
        warm_thread.join()
    # A few more searches, as a session goes on: the memory the process keeps.
    for query in ("socket retry backoff", "cache memory leak", "deploy docker image"):
        search(query)
    return {"hook_returned": returned, "delay_s": delay, "call_made_at_s": made_at, "first_call_ms": wall_ms,
            "semantic_status": out["semantic_status"], "searched_with": out["searched_with"],
            "warm_up_s": warmed[0] if warmed else None, "warm_up_done_before_call": warm_done_before,
            "process_cpu_s": time.process_time() - cpu, "load_average": [load_at_start, os.getloadavg()[0]],
            "rss_after_first_mb": rss_first, "rss_after_four_mb": _rss_mb(), "rss_parts_mb": _rss_parts_mb(),
            "peak_rss_mb": _peak_mb()}


def _fresh(command: str, home: Path, *args) -> dict:
    proc = subprocess.run([sys.executable, "-m", "bench", command, *map(str, (home, *args))], capture_output=True,
                          text=True, env=dict(os.environ, HERMES_HOME=str(home)),
                          cwd=Path(__file__).resolve().parents[1])
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-2000:])
    return json.loads(proc.stdout.strip().splitlines()[-1])


def first_calls(home: Path, caller: str, delay: float, runs: int) -> dict:
    """``runs`` fresh processes, one after another, each with its first search ``delay`` s after session start.

    One more goes first, reported apart ("the process before them"): the first process after
    indexing saves what the next ones read back (the model's arrays, the project's vectors in
    one file), so it stands for a project's first search after its index was built."""
    _enable_plugin(home)
    prime = _fresh("_first", home, caller, delay)
    done = [_fresh("_first", home, caller, delay) for _ in range(runs)]
    walls = [d["first_call_ms"] for d in done]
    return {
        "trials": runs, "delay_s": delay,
        "ready": sum(d["semantic_status"] == "ready" for d in done),
        "semantic_status": [d["semantic_status"] for d in done],
        "searched_with": [d["searched_with"] for d in done],
        "first_call_ms": [round(w, 1) for w in walls],
        "first_call_p50_ms": round(statistics.median(walls), 1), "first_call_max_ms": round(max(walls), 1),
        "warm_up_s": [None if d["warm_up_s"] is None else round(d["warm_up_s"], 2) for d in done],
        "process_cpu_s": [round(d["process_cpu_s"], 2) for d in done],
        "load_average": [[round(x, 1) for x in d["load_average"]] for d in done],
        "rss_after_first_mb": round(max(d["rss_after_first_mb"] for d in done), 1),
        "rss_after_four_mb": round(max(d["rss_after_four_mb"] for d in done), 1),
        "rss_parts_mb": done[-1]["rss_parts_mb"],
        "peak_rss_mb": round(max(d["peak_rss_mb"] for d in done), 1),
        "peak_rss_each_mb": [round(d["peak_rss_mb"], 1) for d in done],
        "first_process": {key: prime[key] for key in ("semantic_status", "first_call_ms", "warm_up_s", "peak_rss_mb",
                                                     "load_average")},
    }


def print_first_calls(info: dict, homes: list[tuple[str, int, dict]]) -> None:
    """The first-call block: hardware and load beside each home's figures."""
    print(f"\nFirst search of a fresh process, made {homes[0][2]['delay_s']:g} s after on_session_start "
          f"(Hermes's plugin manager and dispatch)")
    print(f"hardware: {info['cpu']}, {info['cores']} cores, {info['ram_gib']} GiB RAM; "
          f"software: Python {info['python']}, {info['hermes_agent']}")
    rows = []
    for name, chunks, f in homes:
        loads = [a for pair in f["load_average"] for a in pair]
        rows.append([name, f"{chunks:,}", f"{f['ready']}/{f['trials']}", f["first_call_p50_ms"],
                     f["first_call_max_ms"], f"{max(w for w in f['warm_up_s'] if w is not None):.2f}"
                     if any(w is not None for w in f["warm_up_s"]) else "-",
                     f["peak_rss_mb"], f"{min(loads):.1f}-{max(loads):.1f}"])
        first = f["first_process"]
        rows.append([f"{name}: the process before them", f"{chunks:,}",
                     "1/1" if first["semantic_status"] == "ready" else "0/1", round(first["first_call_ms"], 1),
                     round(first["first_call_ms"], 1), "-" if first["warm_up_s"] is None else f"{first['warm_up_s']:.2f}",
                     round(first["peak_rss_mb"], 1), f"{first['load_average'][0]:.1f}"])
    print(common.table(["home", "chunks in scope", "ready", "wall p50 ms", "wall max ms", "warm-up max s",
                        "peak RSS MB", "load average (1 min)"], rows))
    for name, _chunks, f in homes:
        print(f"  {name}: {json.dumps(f)}")


def run(src_1m: Path | None, scratch: Path, messages_100k: int, messages_10k: int, repeats: int, queries: int,
        delay: float, runs: int) -> dict:
    info = common.begin()
    figures: dict = {"machine": info}
    if src_1m is not None:
        home1m = scratch / "home1m"
        _copy_home(src_1m, home1m)
        os.environ["HERMES_HOME"] = str(home1m)
        print(f"data: copy of {src_1m} in {home1m}")
        figures["noop"] = noop_check(home1m, repeats)
        print(json.dumps(figures["noop"], indent=2))
    home100k = scratch / "home100k"
    figures["index"] = index_one_project(home100k, messages_100k, 3000)
    print(json.dumps(figures["index"], indent=2))
    figures["serve"] = _fresh("_serve", home100k, figures["index"]["caller"], queries)
    print(json.dumps(figures["serve"], indent=2))
    home10k = scratch / "home10k"
    figures["index_10k"] = index_one_project(home10k, messages_10k, 300)
    blocks = []
    for name, home, index in (("10k messages", home10k, figures["index_10k"]),
                              ("100k chunks", home100k, figures["index"])):
        found = first_calls(home, index["caller"], delay, runs)
        figures[f"first_call_{name.split()[0]}"] = found
        blocks.append((name, index["chunks_in_scope"], found))
    print_first_calls(info, blocks)
    return figures
