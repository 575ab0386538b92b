"""Searches and Hermes's writer at the same time: does a search ever hold Hermes up?

Builds a small Hermes home with Hermes's own ``SessionDB`` and
``projects_db`` (one project, ``--sessions`` sessions). A separate process
appends messages through ``SessionDB`` at about ``--rate`` a second for
``--seconds``, as a busy Hermes session would: first alone, then once for
each count in ``--searchers`` while that many threads call the plugin's
search handler with the shipped settings (so the plugin's indexers run too,
taking in the writer's rows). Each run gets a fresh home. It reports the
writer's throughput against the writer alone, its per-message latency and
errors, the searches' latency, and state.db's journal mode: Hermes 0.22 on
an SQLite older than 3.51.3 keeps state.db in rollback-journal mode, where a
reader's lock stops the writer from committing.

The reliability suite runs the same load and checks only that nothing
fails; the figures belong here because they depend on the machine.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from contextlib import closing
from pathlib import Path

from . import common

QUERIES = ("websocket", "超时", "ERR_CONNECTION_REFUSED", "load message", "ERR_LOAD_7", "reconnect fix")

# A separate process, as Hermes is: the plugin's threads must not slow it
# through the GIL, only through the database.
WRITER = textwrap.dedent("""
    import json, sys, time
    from hermes_state import SessionDB
    seconds, rate, folder = float(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
    try:
        db = SessionDB()
    except Exception as exc:  # Hermes would run without saving the user's messages
        print(json.dumps({"messages": 0, "errors": 1, "latencies": [], "seconds": seconds,
                          "open_error": f"{type(exc).__name__}: {exc}"}))
        raise SystemExit(0)
    sid = "20260901_777777_abcdef"
    db.create_session(sid, "cli", cwd=folder)
    latencies, errors, n = [], 0, 0
    start = time.time()
    while time.time() - start < seconds:
        t = time.perf_counter()
        try:
            db.append_message(sid, "user", f"websocket load message {n} 超时 ERR_LOAD_{n % 50}")
        except Exception:
            errors += 1
        latencies.append(time.perf_counter() - t)
        n += 1
        if n % 500 == 0:
            db._conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
        time.sleep(max(0.0, start + n / rate - time.time()))
    db.close()
    print(json.dumps({"messages": n, "errors": errors, "latencies": latencies, "seconds": time.time() - start}))
""")


def _ms(values: list[float]) -> dict:
    ms = [v * 1000 for v in values]
    return {"p50_ms": common.percentile(ms, 50), "p95_ms": common.percentile(ms, 95),
            "p99_ms": common.percentile(ms, 99), "max_ms": max(ms) if ms else float("nan")}


def run(seconds: float, searchers: list[int], rate: float, sessions: int) -> dict:
    info = common.begin()
    print(f"data: {sessions} sessions of one project; one writer process at up to {rate:g} messages/s for "
          f"{seconds:g} s, alone and with {', '.join(map(str, searchers))} searching thread(s); "
          "the plugin's shipped settings")
    runs = []
    for threads in [0, *searchers]:
        with tempfile.TemporaryDirectory(prefix="phr-bench-load-", ignore_cleanup_errors=True) as root:
            runs.append(_measure(Path(root), seconds, threads, rate, sessions))
    alone = runs[0]["writer"]["messages_per_s"]
    for r in runs:
        r["writer"]["vs_alone"] = r["writer"]["messages_per_s"] / alone if alone else float("nan")
    print(f"state.db journal mode: {', '.join(sorted({str(r['journal_mode']) for r in runs}))}")
    print()
    print(common.table(
        ["searching threads", "writer msgs", "msgs/s", "vs alone", "writer errors", "p50 ms", "p99 ms", "max ms",
         "searches", "failed", "search p50 ms", "search p95 ms", "search max ms"],
        [[r["load"]["searchers"] or "none (writer alone)", r["writer"]["messages"], r["writer"]["messages_per_s"],
          f"{r['writer']['vs_alone']:.1%}", r["writer"]["errors"], r["writer"]["p50_ms"], r["writer"]["p99_ms"],
          r["writer"]["max_ms"], r["search"]["searches"], r["search"]["failed"], r["search"]["p50_ms"],
          r["search"]["p95_ms"], r["search"]["max_ms"]] for r in runs]))
    for r in runs:
        if r["writer"].get("open_error"):
            print(f"writer with {r['load']['searchers']} searching threads could not open state.db: "
                  f"{r['writer']['open_error']}")
    return {"machine": info, "runs": runs}


def _measure(root: Path, seconds: float, searchers: int, rate: float, sessions: int) -> dict:
    home, app = root / "home", root / "work" / "app"
    home.mkdir(parents=True)
    app.mkdir(parents=True)
    os.environ["HERMES_HOME"] = str(home)  # before Hermes is imported, and the home every search reads
    asker = common.one_project_home(home, app, sessions, lambda n: f"超时 fix {n}")

    from project_history_recall.hermes.readonly import connect_readonly, journal_mode
    from project_history_recall.ui import tools

    if searchers:
        warm = json.loads(tools.handle_search({"query": "warm up"}, session_id=asker))
        if not warm.get("success"):
            raise RuntimeError(f"search failed: {warm}")

    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(seconds), str(rate), str(app)],
                              env=dict(os.environ, HERMES_HOME=str(home)), stdout=subprocess.PIPE, text=True)
    stop = time.time() + seconds
    took: list[float] = []
    failed: list[dict] = []
    lock = threading.Lock()

    def searcher(k: int) -> None:
        n = 0
        while time.time() < stop and writer.poll() is None:
            t = time.perf_counter()
            res = json.loads(tools.handle_search({"query": QUERIES[(k + n) % len(QUERIES)], "context": 1},
                                                 session_id=asker))
            with lock:
                took.append(time.perf_counter() - t)
                if not res.get("success"):
                    failed.append(res)
            n += 1

    threads = [threading.Thread(target=searcher, args=(k,)) for k in range(searchers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    out, _ = writer.communicate(timeout=seconds + 120)
    if writer.returncode != 0:
        raise RuntimeError(f"the writer failed (exit {writer.returncode})")
    report = json.loads(out.strip().splitlines()[-1])
    with closing(connect_readonly(home / "state.db")) as conn:
        mode = journal_mode(conn)
    return {
        "load": {"seconds": seconds, "searchers": searchers, "target_rate": rate, "sessions": sessions},
        "journal_mode": mode,
        "writer": {"messages": report["messages"], "errors": report["errors"],
                   "messages_per_s": report["messages"] / report["seconds"], **_ms(report["latencies"]),
                   **({"open_error": report["open_error"]} if "open_error" in report else {})},
        "search": {"searches": len(took), "failed": len(failed), "per_s": len(took) / seconds, **_ms(took)},
    }
