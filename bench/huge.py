"""Keyword search with and without one huge message in the project.

Builds a small Hermes home with Hermes's own ``SessionDB`` (one project,
``--sessions`` sessions of a few short messages), times the plugin's search
handler (mode keyword, semantic off, context 2) for a word in a few of
them, then appends one message of ``--mb`` MB that holds the word near its
start (so it is a hit, and in the windows of its neighbours) and times the
same search again. What a hit on the huge message costs is what the search
reads of it.
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

from . import common

FILLER = "lorem ipsum dolor sit amet consectetur "


def _append_huge(home: Path, sid: str, size: int) -> None:
    from hermes_state import SessionDB

    db = SessionDB(db_path=home / "state.db")
    try:
        db.append_message(sid, "user", "a capybara " + FILLER * (size // len(FILLER)))
        db.append_message(sid, "assistant", "noted")
    finally:
        db.close()


def _time(tools, asker: str, repeats: int) -> dict:
    took = []
    for _ in range(repeats):
        t = time.perf_counter()
        res = json.loads(tools.handle_search({"query": "capybara", "mode": "keyword", "context": 2},
                                             session_id=asker))
        took.append((time.perf_counter() - t) * 1000)
        if not res.get("success"):
            raise RuntimeError(f"search failed: {res}")
    return {"p50_ms": common.percentile(took, 50), "p95_ms": common.percentile(took, 95), "max_ms": max(took),
            "results": len(res["results"])}


def run(sessions: int, megabytes: float, repeats: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="phr-bench-huge-", ignore_cleanup_errors=True) as root:
        home, app = Path(root) / "home", Path(root) / "work" / "app"
        info = common.begin(home)
        app.mkdir(parents=True)
        asker = common.one_project_home(home, app, sessions, lambda n: "the capybara test passes" if n % 20 == 0 else f"fix {n}")
        sid = common.session_id(0)
        (home / "project-history-recall").mkdir()
        (home / "project-history-recall" / "config.yaml").write_text("semantic: false\n", encoding="utf-8")
        print(f"data: {sessions} sessions of one project; 'capybara' in {len(range(0, sessions, 20))} of "
              f"their messages; search: mode keyword, context 2, {repeats} times each")

        from project_history_recall.ui import tools

        _time(tools, asker, 1)  # the first search builds the keyword index
        without = _time(tools, asker, repeats)
        _append_huge(home, sid, int(megabytes * 1_000_000))
        _time(tools, asker, 1)  # indexes the new messages
        with_huge = _time(tools, asker, repeats)
    figures = {"machine": info, "sessions": sessions, "huge_message_mb": megabytes, "repeats": repeats,
               "without": without, "with": with_huge}
    print()
    print(common.table(["project", "results", "p50 ms", "p95 ms", "max ms"],
                       [["without the huge message", without["results"], without["p50_ms"], without["p95_ms"],
                         without["max_ms"]],
                        [f"with one {megabytes:g} MB message that is a hit", with_huge["results"],
                         with_huge["p50_ms"], with_huge["p95_ms"], with_huge["max_ms"]]]))
    return figures
