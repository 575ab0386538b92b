"""Keyword search latency at scale, against Hermes core on the same database.

Builds (once) a synthetic Hermes home with Hermes's own schema and triggers
(see ``synth.py``) and the plugin's keyword index for every project (timed),
then times, for each query class, the plugin's tool handler (scope
resolution, search, context windows, JSON) with its own keyword index and
with Hermes's indexes only (``keyword_index: false``), and core's
``SessionDB.search_messages`` (unscoped, the engine behind session_search),
with the same query strings in the same run.

Chinese questions are drawn from the synthetic Chinese text: three words of
a Chinese message in another session of the asker's project, put in a
question (``上次…的…是怎么处理的？``), so each has an answer.

``--hybrid P`` adds the hybrid half: the projects of P of the askers are
embedded through the plugin's own ``index`` path (``indexing.run``, timed),
then the same query strings of those askers are asked warm (after one
untimed search per project), each in keyword and in hybrid mode one right
after the other, through the same tool handler with semantic search on; the
table gives both modes' p50/p95 per class, their ratio, and the load average
while each class ran (``hybrid_plan`` says which queries and why by project).
"""

from __future__ import annotations

import json
import os
import random
import re
import sqlite3
import time
from pathlib import Path

from . import common, hybrid_plan, synth

CLASSES = ("english", "symbol", "zh2", "zh4", "zh-question")
_ZH_TEMPLATES = ("上次我们是怎么处理{0}和{1}的{2}问题的？", "之前讨论{0}的时候，{1}和{2}用了什么方案？",
                 "{0}为什么会影响{1}？当时{2}是怎么改的？", "我记得有一次{0}出了问题，和{1}、{2}有关，是哪次？")


def _queries(world: dict, per_class: int, seed: int) -> dict[str, list[str]]:
    from project_history_recall.keyword.querytext import STOP_WORDS

    rng = random.Random(seed)
    weights = synth._zipf_weights(len(synth.EN_WORDS))
    english = [(w, wt) for w, wt in zip(synth.EN_WORDS, weights, strict=True) if w not in STOP_WORDS and len(w) > 2]
    words, wts = zip(*english, strict=True)
    zh2 = [w for w in synth.ZH_WORDS if len(w) == 2]
    zh4 = [w for w in synth.ZH_WORDS if len(w) == 4]
    symbols = world["symbols"]
    return {
        "english": [rng.choices(words, wts)[0] for _ in range(per_class)],
        "symbol": [rng.choice(symbols) for _ in range(per_class)],
        "zh2": [rng.choice(zh2) for _ in range(per_class)],
        "zh4": [rng.choice(zh4) for _ in range(per_class)],
    }


def _zh_questions(home: Path, callers: list[str], seed: int) -> list[str]:
    """One Chinese question per caller, from a Chinese message of its project."""
    from project_history_recall.keyword import cjk

    han = re.compile(f"[{cjk.HAN}]")
    rng = random.Random(seed + 2)
    # Longest first, then by the words themselves: a set's order changes with each process's hash seed.
    vocabulary = sorted(set(synth.ZH_WORDS), key=lambda w: (len(w), w), reverse=True)
    conn = sqlite3.connect(f"file:{home / 'state.db'}?mode=ro", uri=True)
    out = []
    try:
        by_folder: dict[str, list[str]] = {}
        folder_of = {}
        for sid, cwd in conn.execute("SELECT id, cwd FROM sessions"):
            folder_of[sid] = cwd
            by_folder.setdefault(cwd, []).append(sid)
        for caller in callers:
            others = [s for s in by_folder.get(folder_of.get(caller), []) if s != caller] or [caller]
            texts = []
            for sid in rng.sample(others, min(5, len(others))):
                texts += [r[0] for r in conn.execute(
                    "SELECT content FROM messages WHERE session_id = ? AND role = 'user'", (sid,))
                    if han.search(r[0])]
            text = rng.choice(texts) if texts else "".join(rng.sample(synth.ZH_WORDS, 6))
            words = [w for w in vocabulary if w in text]
            picked = rng.sample(words, 3) if len(words) >= 3 else rng.sample(synth.ZH_WORDS, 3)
            out.append(rng.choice(_ZH_TEMPLATES).format(*picked))
    finally:
        conn.close()
    return out


def _build_keyword_index(home: Path) -> dict:
    """The plugin's keyword index for every project (what background indexing
    leaves behind); a no-op when it is current."""
    from project_history_recall.hermes import paths
    from project_history_recall.keyword import textindex
    from project_history_recall.scope.resolve import attribution_map
    from project_history_recall.hermes.statedb import reading

    with reading(home / "state.db") as (conn, _shape):
        amap = attribution_map(home, conn)
    keeper = textindex.keeper(home)
    t0 = time.perf_counter()
    sessions = sum(keeper.build(key, members) for key, members in amap.by_project.items()
                   if key[0] != "home")
    t1 = time.perf_counter()
    merge_steps = keeper.settle()  # as the keeper does after a background build, and the index command
    seconds = time.perf_counter() - t0
    size = sum(p.stat().st_size for p in paths.data_dir(home).glob(textindex.FILE_NAME + "*"))
    return {"sessions_indexed": sessions, "seconds": seconds, "bytes": size,
            "merge_seconds": time.perf_counter() - t1, "merge_steps": merge_steps}


def _callers(home: Path, n: int, seed: int) -> list[str]:
    conn = sqlite3.connect(f"file:{home / 'state.db'}?mode=ro", uri=True)
    try:
        ids = [r[0] for r in conn.execute("SELECT id FROM sessions WHERE source = 'cli' AND cwd IS NOT NULL")]
    finally:
        conn.close()
    rng = random.Random(seed + 1)
    return [rng.choice(ids) for _ in range(n)]


def run(home: Path, spec: synth.SynthSpec, per_class: int, hybrid_projects: int = 0,
        responses: Path | None = None) -> dict:
    info = common.begin(home)
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

    from project_history_recall.ui import tools

    # The keyword engine is measured alone: a first search would otherwise
    # start indexing the project in the background, competing for the cores.
    # (Only in the synthetic home this benchmark built.)
    plugin_config = home / "project-history-recall" / "config.yaml"
    plugin_config.parent.mkdir(exist_ok=True)
    plugin_config.write_text("semantic: false\n", encoding="utf-8")

    queries = _queries(world, per_class, spec.seed)
    callers = _callers(home, per_class, spec.seed)
    queries["zh-question"] = _zh_questions(home, callers, spec.seed)
    built = _build_keyword_index(home)
    print(f"keyword index: {built['sessions_indexed']:,} sessions indexed in {built['seconds']:.0f} s "
          f"(0 when it was current), its segments merged in {built['merge_steps']} steps, "
          f"{built['merge_seconds']:.1f} s of it; keywords.db {built['bytes'] / 2**20:,.0f} MiB")

    t0 = time.perf_counter()
    first = json.loads(tools.handle_search({"query": "warm up", "mode": "keyword"}, session_id=callers[0]))
    cold_ms = (time.perf_counter() - t0) * 1000
    assert first.get("success"), first

    core = SessionDB(db_path=home / "state.db")
    rows = []
    figures = {"machine": info, "cold_first_call_ms": cold_ms, "keyword_index": built, "classes": {}}

    def plugin(q: str, sid: str, times: list[float]) -> dict:
        out, took = _timed_search(q, "keyword", sid)
        times.append(took)
        return out

    try:
        for cls in CLASSES:
            ours, hermes_only, theirs, found_ours, found_core, scope_sizes = [], [], [], 0, 0, []
            load = []
            for q, sid in zip(queries[cls], callers, strict=True):
                out = plugin(q, sid, ours)
                found_ours += bool(out["results"])
                scope_sizes.append(out["sessions_in_scope"])
            plugin_config.write_text("semantic: false\nkeyword_index: false\n", encoding="utf-8")
            for q, sid in zip(queries[cls], callers, strict=True):
                plugin(q, sid, hermes_only)
            plugin_config.write_text("semantic: false\n", encoding="utf-8")
            for q in queries[cls]:
                t = time.perf_counter()
                res = core.search_messages(q, role_filter=["user", "assistant"], limit=10)
                theirs.append((time.perf_counter() - t) * 1000)
                found_core += bool(res)
                load.append(os.getloadavg()[0])
            stats = {
                "plugin_p50": common.percentile(ours, 50), "plugin_p95": common.percentile(ours, 95),
                "hermes_indexes_p50": common.percentile(hermes_only, 50),
                "hermes_indexes_p95": common.percentile(hermes_only, 95),
                "core_p50": common.percentile(theirs, 50), "core_p95": common.percentile(theirs, 95),
                "plugin_found": found_ours / len(ours), "core_found": found_core / len(theirs),
                "median_scope_sessions": sorted(scope_sizes)[len(scope_sizes) // 2],
                "load_1min": [round(min(load), 2), round(max(load), 2)],
            }
            figures["classes"][cls] = stats
            rows.append([cls, len(ours), stats["plugin_p50"], stats["plugin_p95"], stats["hermes_indexes_p50"],
                         stats["hermes_indexes_p95"], stats["core_p50"], stats["core_p95"],
                         f"{stats['plugin_found']:.0%}", f"{stats['core_found']:.0%}", stats["median_scope_sessions"],
                         f"{min(load):.1f}-{max(load):.1f}"])
    finally:
        core.close()
    print(f"\nfirst call (reads every session's folder, builds attribution): {cold_ms:.0f} ms")
    print("latency in ms; plugin = project_history_search handler, mode=keyword, limit 10, context 2 "
          "(scoped to the caller's project), with its keyword index and with Hermes's indexes only; "
          "core = SessionDB.search_messages, unscoped, limit 10; load = 1-min load average while the class ran\n")
    print(common.table(["class", "queries", "plugin p50", "plugin p95", "Hermes idx p50", "Hermes idx p95",
                        "core p50", "core p95", "plugin hits", "core hits", "scope (sessions, median)",
                        "load (1 min)"], rows))
    if hybrid_projects:
        figures["hybrid"] = hybrid(home, queries, callers, hybrid_projects, plugin_config, responses)
    return figures


def _timed_search(query: str, mode: str, caller: str, raw: dict | None = None) -> tuple[dict, float]:
    """(the response, ms); ``raw``: where the response is also kept as the tool returned it."""
    from project_history_recall.ui import tools

    t = time.perf_counter()
    text = tools.handle_search({"query": query, "mode": mode, "limit": 10, "context": 2}, session_id=caller)
    took = (time.perf_counter() - t) * 1000
    out = json.loads(text)
    if raw is not None:
        raw[f"{mode} {caller} {query}"] = text
    if not out.get("success"):
        raise RuntimeError(f"{mode} search failed for {query!r}: {out}")
    return out, took


def hybrid(home: Path, queries: dict[str, list[str]], callers: list[str], count: int, plugin_config: Path,
           responses: Path | None = None) -> dict:
    """Hybrid against keyword latency, warm, over the same queries of the askers in ``count`` projects.

    ``responses``: a file of every timed tool response, byte for byte. If it exists (another
    version of the code wrote it on the same home), each response is compared with it: a change
    meant to make search faster must answer the same."""
    from project_history_recall import indexing
    from project_history_recall.hermes.host import Caller
    from project_history_recall.hermes.statedb import reading
    from project_history_recall.scope.resolve import attribution_map

    plugin_config.write_text("", encoding="utf-8")  # the defaults: semantic search on, the embedded model
    with reading(home / "state.db") as (conn, _shape):
        amap = attribution_map(home, conn)
        project_of = {sid: key for key, members in amap.by_project.items() if key[0] != "home" for sid in members}
        projects = hybrid_plan.pick_projects(callers, project_of, count)
        groups = hybrid_plan.grouped(queries, callers, project_of, projects)
        messages = conn.execute(
            "SELECT count(*) FROM messages WHERE role IN ('user', 'assistant') AND session_id IN "
            "(SELECT value FROM json_each(?))",
            (json.dumps([s for p in projects for s in amap.by_project[p]]),)).fetchone()[0]
    load_before = os.getloadavg()
    print(f"\nhybrid: embedding {len(projects)} projects ({sum(len(amap.by_project[p]) for p in projects):,} "
          f"sessions, {messages:,} user/assistant messages) through the plugin's index command; "
          f"load average {[round(x, 2) for x in load_before]}", flush=True)
    chunks, seconds = 0, 0.0
    for project, asked in groups:
        t = time.perf_counter()
        out = indexing.run(home, Caller.of(asked[0][2]))
        seconds += time.perf_counter() - t
        if not out.get("success") or out.get("semantic_status") != "ready":
            raise RuntimeError(f"indexing {project} failed: {out}")
        chunks += out["totals"]["chunks_embedded"]
    rate = f", {chunks / seconds:.0f} chunks/s" if chunks and seconds else ""
    print(f"embedded {chunks:,} chunks in {seconds:.0f} s{rate} (0 chunks when the index was current); "
          f"load average {[round(x, 2) for x in os.getloadavg()]}", flush=True)

    times: dict[str, dict[str, list[float]]] = {cls: {"keyword": [], "hybrid": []} for cls in CLASSES}
    # Sessions each response shows: a mode that finds more has more snippets and windows to read.
    shown: dict[str, dict[str, list[int]]] = {cls: {"keyword": [], "hybrid": []} for cls in CLASSES}
    loads: dict[str, list[float]] = {cls: [] for cls in CLASSES}
    not_hybrid = []
    raw: dict[str, str] = {}
    n = 0
    for _project, asked in groups:
        # Warm: the model loaded and this project's vectors in memory, as after a conversation's first search.
        _timed_search("how did we fix the timeout", "hybrid", asked[0][2])
        for cls, query, caller in asked:
            # Each mode goes first every other time: neither gains from what the other left in the caches.
            for mode in (("keyword", "hybrid") if n % 2 == 0 else ("hybrid", "keyword")):
                out, took = _timed_search(query, mode, caller, raw)
                times[cls][mode].append(took)
                shown[cls][mode].append(len(out["results"]))
                if mode == "hybrid" and (out["semantic_status"] != "ready" or out["searched_with"] != "keyword+semantic"):
                    not_hybrid.append((query, out["semantic_status"], out["searched_with"]))
            loads[cls].append(os.getloadavg()[0])
            n += 1
    plugin_config.write_text("semantic: false\n", encoding="utf-8")
    same = _compared(raw, responses) if responses is not None else None
    if not_hybrid:
        raise RuntimeError(f"{len(not_hybrid)} hybrid searches did not use both engines, e.g. {not_hybrid[:3]}")

    figures: dict = {"projects": len(projects), "askers": sum(len({c for _, _, c in a}) for _, a in groups),
                     "user_assistant_messages": messages, "chunks_embedded": chunks, "embed_seconds": seconds,
                     "classes": {}, "responses_compared": same}
    rows = []
    for cls in [*CLASSES, "all"]:
        if cls == "all":
            kw = [t for c in CLASSES for t in times[c]["keyword"]]
            hy = [t for c in CLASSES for t in times[c]["hybrid"]]
            load = [x for c in CLASSES for x in loads[c]]
            results = {m: [x for c in CLASSES for x in shown[c][m]] for m in ("keyword", "hybrid")}
        else:
            kw, hy, load, results = times[cls]["keyword"], times[cls]["hybrid"], loads[cls], shown[cls]
        if not kw:
            continue
        stats = {"queries": len(kw), "keyword_p50": common.percentile(kw, 50), "keyword_p95": common.percentile(kw, 95),
                 "hybrid_p50": common.percentile(hy, 50), "hybrid_p95": common.percentile(hy, 95),
                 "load_1min": [round(min(load), 2), round(max(load), 2)],
                 "sessions_shown_mean": {m: sum(v) / len(v) for m, v in results.items()}}
        stats["p50_ratio"] = stats["hybrid_p50"] / stats["keyword_p50"]
        figures["classes"][cls] = stats
        rows.append([cls, len(kw), stats["keyword_p50"], stats["keyword_p95"], stats["hybrid_p50"],
                     stats["hybrid_p95"], f"{stats['p50_ratio']:.2f}",
                     "{keyword:.1f} / {hybrid:.1f}".format(**stats["sessions_shown_mean"]),
                     f"{stats['load_1min'][0]:.1f}-{stats['load_1min'][1]:.1f}"])
    print(f"\nlatency in ms, warm (one untimed search per project first); the same queries of the "
          f"{figures['askers']} askers in these {len(projects)} projects, each asked in keyword and in hybrid mode "
          f"one after the other (project_history_search handler, limit 10, context 2, semantic search on, "
          f"embedder local); load = 1-min load average while the class ran\n")
    if same is not None:
        print(f"responses byte-identical to {responses}: {same['identical']} of {same['compared']}"
              + (f"; differing, e.g.: {same['differing'][:3]}" if same["differing"] else ""))
    print(common.table(["class", "queries", "keyword p50", "keyword p95", "hybrid p50", "hybrid p95",
                        "hybrid/keyword p50", "sessions shown (keyword / hybrid)", "load (1 min)"], rows))
    return figures


def _compared(raw: dict[str, str], path: Path) -> dict | None:
    """``raw`` written to ``path``, or compared with what another run wrote there (None: written)."""
    if not path.exists():
        path.write_text(json.dumps(raw, ensure_ascii=False), encoding="utf-8")
        return None
    before = json.loads(path.read_text(encoding="utf-8"))
    keys = [k for k in raw if k in before]
    differing = [k for k in keys if raw[k] != before[k]]
    return {"compared": len(keys), "identical": len(keys) - len(differing), "differing": differing}
