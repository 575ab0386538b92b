"""Keyword search latency at scale, against Hermes core on the same database.

Builds (once) a synthetic Hermes home with Hermes's own schema and triggers
(see ``synth.py``), then times, for each query class, the plugin's tool
handler (scope resolution, search, context windows, JSON) and core's
``SessionDB.search_messages`` (unscoped, the engine behind session_search),
with the same query strings in the same run.
"""

from __future__ import annotations

import json
import os
import random
import sqlite3
import time
from pathlib import Path

from . import common, synth

CLASSES = ("english", "symbol", "zh2", "zh4")


def _queries(world: dict, per_class: int, seed: int) -> dict[str, list[str]]:
    from project_history_recall.querytext import STOP_WORDS

    rng = random.Random(seed)
    weights = synth._zipf_weights(len(synth.EN_WORDS))
    english = [(w, wt) for w, wt in zip(synth.EN_WORDS, weights) if w not in STOP_WORDS and len(w) > 2]
    words, wts = zip(*english)
    zh2 = [w for w in synth.ZH_WORDS if len(w) == 2]
    zh4 = [w for w in synth.ZH_WORDS if len(w) == 4]
    symbols = world["symbols"]
    return {
        "english": [rng.choices(words, wts)[0] for _ in range(per_class)],
        "symbol": [rng.choice(symbols) for _ in range(per_class)],
        "zh2": [rng.choice(zh2) for _ in range(per_class)],
        "zh4": [rng.choice(zh4) for _ in range(per_class)],
    }


def _callers(home: Path, n: int, seed: int) -> list[str]:
    conn = sqlite3.connect(f"file:{home / 'state.db'}?mode=ro", uri=True)
    try:
        ids = [r[0] for r in conn.execute("SELECT id FROM sessions WHERE source = 'cli' AND cwd IS NOT NULL")]
    finally:
        conn.close()
    rng = random.Random(seed + 1)
    return [rng.choice(ids) for _ in range(n)]


def run(home: Path, spec: synth.SynthSpec, per_class: int) -> dict:
    home.mkdir(parents=True, exist_ok=True)
    os.environ["HERMES_HOME"] = str(home)  # before Hermes is imported
    info = common.machine()
    common.print_machine(info)
    if not (home / "synth-world.json").exists():
        print(f"building {spec.messages:,} messages / {spec.sessions:,} sessions / {spec.projects} projects "
              f"in {home} (once; several minutes)…", flush=True)
        world = synth.build(home, spec, progress=lambda s, t, m: print(f"  {m:,} messages", flush=True)
                            if s % 4000 == 0 else None)
        print(f"built in {world.seconds:.0f} s")
    world = synth.load_world(home)
    print(f"data: {world['messages']:,} messages, {world['sessions']:,} sessions, "
          f"{len(world['project_folders'])} projects; state.db {os.path.getsize(home / 'state.db') / 2**20:,.0f} MiB")

    from hermes_state import SessionDB

    from project_history_recall import tools

    # The keyword engine is measured alone: a first search would otherwise
    # start indexing the project in the background, competing for the cores.
    # (Only in the synthetic home this benchmark built.)
    plugin_config = home / "project-history-recall" / "config.yaml"
    plugin_config.parent.mkdir(exist_ok=True)
    plugin_config.write_text("semantic: false\n", encoding="utf-8")

    queries = _queries(world, per_class, spec.seed)
    callers = _callers(home, per_class, spec.seed)

    t0 = time.perf_counter()
    first = json.loads(tools.handle_search({"query": "warm up", "mode": "keyword"}, session_id=callers[0]))
    cold_ms = (time.perf_counter() - t0) * 1000
    assert first.get("success"), first

    core = SessionDB(db_path=home / "state.db")
    rows = []
    figures = {"machine": info, "cold_first_call_ms": cold_ms, "classes": {}}
    try:
        for cls in CLASSES:
            ours, theirs, found_ours, found_core, scope_sizes = [], [], 0, 0, []
            for q, sid in zip(queries[cls], callers):
                t = time.perf_counter()
                out = json.loads(tools.handle_search({"query": q, "mode": "keyword", "limit": 10, "context": 2},
                                                     session_id=sid))
                ours.append((time.perf_counter() - t) * 1000)
                if not out.get("success"):
                    raise RuntimeError(f"search failed for {q!r}: {out}")
                found_ours += bool(out["results"])
                scope_sizes.append(out["sessions_in_scope"])
                t = time.perf_counter()
                res = core.search_messages(q, role_filter=["user", "assistant"], limit=10)
                theirs.append((time.perf_counter() - t) * 1000)
                found_core += bool(res)
            stats = {
                "plugin_p50": common.percentile(ours, 50), "plugin_p95": common.percentile(ours, 95),
                "core_p50": common.percentile(theirs, 50), "core_p95": common.percentile(theirs, 95),
                "plugin_found": found_ours / len(ours), "core_found": found_core / len(theirs),
                "median_scope_sessions": sorted(scope_sizes)[len(scope_sizes) // 2],
            }
            figures["classes"][cls] = stats
            rows.append([cls, len(ours), stats["plugin_p50"], stats["plugin_p95"], stats["core_p50"],
                         stats["core_p95"], f"{stats['plugin_found']:.0%}", f"{stats['core_found']:.0%}",
                         stats["median_scope_sessions"]])
    finally:
        core.close()
    print(f"\nfirst call (reads every session's folder, builds attribution): {cold_ms:.0f} ms")
    print("latency in ms; plugin = project_history_search handler, mode=keyword, limit 10, context 2 "
          "(scoped to the caller's project); core = SessionDB.search_messages, unscoped, limit 10\n")
    print(common.table(["class", "queries", "plugin p50", "plugin p95", "core p50", "core p95",
                        "plugin hits", "core hits", "scope (sessions, median)"], rows))
    return figures
