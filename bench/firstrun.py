"""What the first run costs: one project of ``--messages`` messages indexed from nothing.

A synthetic one-project home (``synth.py``, built once; about 75% of its
rows are user/assistant messages, the rest tool output that is not
embedded) is copied afresh for each offline model and thread count, and
indexed in a fresh process the way ``index`` does it: the model loaded, the
keyword index built, every session embedded. Wall time and the process's CPU
time are both reported: on a machine busy with other jobs the wall time says
more about the other jobs than about the model, CPU time less so.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from . import common, synth

PRISTINE = ("state.db", "projects.db", "synth-world.json")


def _scope(home: Path):
    import sqlite3

    from project_history_recall.hermes.host import Caller
    from project_history_recall.hermes.statedb import reading
    from project_history_recall.scope.resolve import resolve_scope

    conn = sqlite3.connect(f"file:{home / 'state.db'}?mode=ro", uri=True)
    try:
        # The caller is a session of the explicit project (the biggest scope).
        caller = conn.execute("SELECT id FROM sessions WHERE source = 'cli' AND cwd IS NOT NULL "
                              "AND cwd NOT LIKE '%/auto/%' LIMIT 1").fetchone()[0]
    finally:
        conn.close()
    with reading(home / "state.db") as (conn, _shape):
        scope = resolve_scope(home, conn, Caller.of(caller), include_current=True)
        messages = conn.execute("SELECT count(*) FROM messages WHERE session_id IN (SELECT value FROM json_each(?))",
                                (json.dumps(list(scope.session_ids)),)).fetchone()[0]
    return scope, messages


def measure(home: Path, embedder_name: str, threads: int) -> dict:
    """In a fresh process (the thread count is fixed when a model loads): index the project once."""
    os.environ["HERMES_HOME"] = str(home)
    from project_history_recall import settings as config
    from project_history_recall.keyword import textindex
    from project_history_recall.semantic import embedders, kept

    settings = config.load(home)
    load_avg = os.getloadavg()
    cpu0, t0 = time.process_time(), time.perf_counter()
    embedder = embedders.OFFLINE[embedder_name](settings.chunk_chars, settings.chunk_overlap, threads=threads)
    load_s = time.perf_counter() - t0
    scope, messages = _scope(home)
    t = time.perf_counter()
    textindex.keeper(home).build(scope.attribution.key, scope.members)
    keyword_s = time.perf_counter() - t
    parts = kept.of(home)
    worker = parts.indexer(settings, embedder, parts.vector_store())
    cpu1, t = time.process_time(), time.perf_counter()
    progress = worker.index_now(scope.attribution.key, list(scope.session_ids))
    semantic_s, semantic_cpu = time.perf_counter() - t, time.process_time() - cpu1
    return {
        "embedder": embedder_name, "model": embedder.fingerprint, "threads": threads,
        "project_sessions": len(scope.session_ids), "project_messages": messages,
        "messages_embedded": progress.messages, "chunks": progress.chunks,
        "model_load_s": load_s, "keyword_index_s": keyword_s, "semantic_index_s": semantic_s,
        "semantic_cpu_s": semantic_cpu, "total_s": time.perf_counter() - t0, "total_cpu_s": time.process_time() - cpu0,
        "chunks_per_s": progress.chunks / semantic_s if semantic_s else None,
        "chunks_per_cpu_s": progress.chunks / semantic_cpu if semantic_cpu else None,
        "load_average_before": [round(x, 2) for x in load_avg],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
    }


def run(scratch: Path, messages: int, names: list[str], thread_counts: list[int]) -> dict:
    info = common.begin()
    source = scratch / f"home-{messages}"
    if not (source / "synth-world.json").exists():
        source.mkdir(parents=True, exist_ok=True)
        print(f"building a one-project home with {messages:,} messages in {source}…", flush=True)
        synth.build(source, synth.SynthSpec(messages=messages, sessions=max(10, messages // 100), projects=1,
                                            seed=11))
    figures: dict = {"machine": info, "messages_in_home": messages, "runs": []}
    rows = []
    for name in names:
        for threads in thread_counts:
            home = scratch / f"run-{name}-{threads}"
            shutil.rmtree(home, ignore_errors=True)
            home.mkdir(parents=True)
            for item in PRISTINE:
                shutil.copy2(source / item, home / item)
            proc = subprocess.run([sys.executable, "-m", "bench", "_firstrun", str(home), name, str(threads)],
                                  env=dict(os.environ, HERMES_HOME=str(home)), capture_output=True, text=True,
                                  cwd=Path(__file__).resolve().parents[1])
            if proc.returncode != 0:
                raise RuntimeError(proc.stderr[-2000:])
            r = json.loads(proc.stdout.strip().splitlines()[-1])
            figures["runs"].append(r)
            print(json.dumps(r), flush=True)
            rows.append([name, threads, r["project_messages"], r["chunks"], r["model_load_s"], r["keyword_index_s"],
                         r["semantic_index_s"], r["semantic_cpu_s"], r["chunks_per_s"], r["chunks_per_cpu_s"],
                         f"{r['total_s'] / 60:.1f} min", f"{r['load_average_before'][0]} → {r['load_average_after'][0]}"])
    print(f"\nfirst run of a {messages:,}-message project (one explicit project; its scope as counted)\n")
    print(common.table(["model", "threads", "messages", "chunks", "load s", "keyword s", "semantic s",
                        "semantic CPU s", "chunks/s", "chunks/CPU-s", "total", "load avg 1 min"], rows))
    return figures
