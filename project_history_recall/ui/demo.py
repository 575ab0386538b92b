"""A small, real Hermes home for first runs and tests.

Written with Hermes's own ``SessionDB`` and ``projects_db`` (so the schema,
FTS tables and triggers are exactly Hermes's), into a folder of its own.
Needs ``hermes-agent`` installed. ``build`` must run where ``HERMES_HOME``
points at ``home`` before Hermes is imported (Hermes creates files in its
home at import time); ``ensure`` does that in a child process.

The first run's demo home is built once under the user's cache folder and
reused (with its indexes) by every later run, and built again when it is
missing, broken, or made by another version of this file or of Hermes.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from importlib import metadata
from pathlib import Path

DAY = 86400.0
T0 = 1_788_000_000.0  # 2026-08-29, so the demo reads as recent history

# (project, sub-folder, title, [(role, text)...]); project None = no folder.
CONVERSATIONS = [
    ("webshop", "", "Fix flaky websocket reconnect", [
        ("user", "The websocket client drops every few minutes with ERR_CONNECTION_REFUSED and never comes back."),
        ("assistant", "The reconnect loop in src/net/socket.py gives up after one try. I added exponential "
                      "backoff (0.5s doubling to 30s) and a heartbeat ping every 20s."),
        ("user", "Tests pass now, thanks. Keep the backoff cap at 30 seconds."),
    ]),
    ("webshop", "src", "修改支付服务端超时", [
        ("user", "支付回调经常超时，帮我修改youer服务端的超时配置。"),
        ("assistant", "我把 payment_gateway.timeout 从 5 秒改成 15 秒，并在服务端加了重试；配置在 config/payment.yaml。"),
        ("user", "数据库连接池也要调大一点，现在是 10。"),
        ("assistant", "已将数据库连接池 pool_size 调整为 30，并加了监控告警。"),
    ]),
    ("webshop", "", "Release checklist", [
        ("user", "What do we need before tagging v2.4?"),
        ("assistant", "Run the migration dry-run, bump the version in pyproject.toml, and update CHANGELOG.md. "
                      "The Windows build failed last time with error 0x80070005 (access denied) — run it as admin."),
    ]),
    ("webshop", "", "Retry policy for the payment client", [
        ("user", "What did we decide about retries when the payment provider times out?"),
        ("assistant", "Retry at most 3 times, only on timeouts and 5xx answers, with exponential backoff "
                      "(1s, 2s, 4s). Never retry a charge without its idempotency key."),
    ]),
    ("webshop_v2%", "", "Prefix-sharing sibling project", [
        ("user", "This folder name shares a prefix with webshop and has % and _ in it."),
        ("assistant", "The websocket settings here are unrelated to the webshop repo."),
    ]),
    ("notes", "", "Reading list", [
        ("user", "Remind me which book about distributed systems I liked."),
        ("assistant", "You liked 'Designing Data-Intensive Applications'; you found the chapter on "
                      "replication lag the most useful."),
    ]),
    ("scratch-repo", "", "Try a git worktree", [
        ("user", "Why does my scratch repo complain about a detached HEAD?"),
        ("assistant", "You checked out a tag. Create a branch with git switch -c fix-head."),
    ]),
    (None, "", "Telegram chat", [
        ("user", "What's a good name for a cat?"),
        ("assistant", "Miso, Pixel or Tofu."),
    ]),
]

EXPLICIT_PROJECTS = {"webshop": "Webshop", "webshop_v2%": "Webshop v2", "notes": "Notes"}
MAIN_PROJECT = "webshop"  # where the first run's searches run: the one with the most history


def titles(project: str) -> list[str]:
    """The titles of a demo project's conversations: what a search there can find."""
    return [title for name, _, title, _ in CONVERSATIONS if name == project]


def build(home: Path, work: Path | None = None) -> dict:
    """Create the demo home; returns {'home', 'work', 'sessions': {title: id}, 'projects': {folder: id}}."""
    from hermes_cli import projects_db
    from hermes_state import SessionDB

    home.mkdir(parents=True, exist_ok=True)
    work = work or home.parent / (home.name + "-work")
    folders = {}
    for name, _, _, _ in CONVERSATIONS:
        if name:
            folders[name] = work / name
            (work / name / "src").mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(folders["scratch-repo"])], check=False,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    project_ids = {}
    with projects_db.connect_closing(home / "projects.db") as conn:
        for folder_name, label in EXPLICIT_PROJECTS.items():
            project_ids[folder_name] = projects_db.create_project(
                conn, name=label, folders=[str(folders[folder_name])])

    db = SessionDB(db_path=home / "state.db")
    session_ids = {}
    try:
        for n, (name, sub, title, turns) in enumerate(CONVERSATIONS):
            started = T0 + n * DAY
            sid = f"20260829_{100000 + n:06d}_{n:06x}"
            cwd = str(folders[name] / sub) if name else None
            db.create_session(sid, "cli" if name else "telegram", model="demo/model", cwd=cwd)
            db.set_session_title(sid, title)
            for k, (role, text) in enumerate(turns):
                db.append_message(sid, role, text, timestamp=started + 60 * k)
            session_ids[title] = sid
        # A subagent the first conversation spawned: no folder of its own.
        child = "20260829_200000_c0ffee"
        db.create_session(child, "subagent", parent_session_id=session_ids["Fix flaky websocket reconnect"],
                          model_config={"_delegate_from": session_ids["Fix flaky websocket reconnect"]})
        db.append_message(child, "assistant", "Subagent report: heartbeat interval verified at 20s.",
                          timestamp=T0 + 3600)
        session_ids["subagent"] = child
    finally:
        db.close()
    return {"home": str(home), "work": str(work), "sessions": session_ids, "projects": project_ids}


MARKER = "demo.json"  # beside home/ and work/: what was built, and from what


def demo_root() -> Path:
    # The XDG spec has a relative XDG_CACHE_HOME ignored: taken, it built the demo in whatever folder
    # the command ran in, and the commands printed for later named it relative to that folder.
    cache = os.environ.get("XDG_CACHE_HOME") or ""
    base = Path(cache) if os.path.isabs(cache) else Path.home() / ".cache"
    return base / "project-history-recall" / "demo"


def _recipe() -> str:
    """What the demo home is made from: its conversations and Hermes's version."""
    try:
        hermes = metadata.version("hermes-agent")
    except metadata.PackageNotFoundError:
        hermes = "?"
    text = json.dumps([CONVERSATIONS, sorted(EXPLICIT_PROJECTS.items()), hermes], ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _reusable(root: Path, recipe: str) -> dict | None:
    """The recorded build when it is still whole and of this recipe, else None. Whole: its sessions,
    its projects (without them the searches said "the demo's main project, Webshop" of an automatic
    one) and the plugin enabled (the last line says Hermes finds it there)."""
    try:
        info = json.loads((root / MARKER).read_text(encoding="utf-8"))
        if info.get("recipe") != recipe or not all(Path(info["work"], name).is_dir()
                                                   for name in EXPLICIT_PROJECTS):
            return None
        home = Path(info["home"])
        sessions = _read(home / "state.db", "SELECT count(*) FROM sessions")[0][0]
        projects = {row[0] for row in _read(home / "projects.db", "SELECT id FROM projects WHERE NOT archived")}
        whole = (sessions == len(info["sessions"]) and projects == set(info["projects"].values())
                 and _enabled(home))
    except (OSError, ValueError, KeyError, TypeError, AttributeError, sqlite3.Error):
        return None
    return info if whole else None


def _read(path: Path, sql: str) -> list:
    with contextlib.closing(sqlite3.connect(path.as_uri() + "?mode=ro", uri=True)) as conn:
        return conn.execute(sql).fetchall()


def _enabled(home: Path) -> bool:
    """Whether the home's ``config.yaml`` lists the plugin in ``plugins.enabled``."""
    import yaml

    from ..files import yamltext
    from ..hermes.paths import PLUGIN_KEY

    try:
        config = yamltext.safe_load((home / "config.yaml").read_text(encoding="utf-8"))
    except yaml.YAMLError:
        return False
    return PLUGIN_KEY in ((config or {}).get("plugins") or {}).get("enabled", ())


def enable_plugin(home: Path) -> None:
    """List the plugin in the home's ``plugins.enabled`` (Hermes loads only what is listed there)."""
    from ..files import configfile
    from ..hermes.paths import PLUGIN_KEY

    def change(current):
        plugins = dict(current) if isinstance(current, dict) else {}
        enabled = plugins.get("enabled")
        if not isinstance(enabled, list):
            enabled = []
        plugins["enabled"] = enabled if PLUGIN_KEY in enabled else [*enabled, PLUGIN_KEY]
        return plugins

    configfile.update_block(home / "config.yaml", "plugins", change)


# The child loads this very file, whatever the package is called where it runs: a directory install
# (``hermes plugins install``) is imported by Hermes as ``hermes_plugins.…``, and ``project_history_recall``
# is no module of the child's Python then. ``build`` needs only the standard library and Hermes.
_BUILD = ("import importlib.util, json, sys; from pathlib import Path; "
          "spec = importlib.util.spec_from_file_location('phr_demo', sys.argv[1]); "
          "demo = importlib.util.module_from_spec(spec); spec.loader.exec_module(demo); "
          "print(json.dumps(demo.build(Path(sys.argv[2]), Path(sys.argv[3]))))")


def ensure(root: Path | None = None) -> tuple[dict, bool]:
    """(the demo home's build info, whether it was built just now), reusing a sound one;
    raises ``DataError`` when it cannot be built.

    Built in a child process, so Hermes's import-time files land in the demo
    home and never in a real one; one process at a time builds (a lock file)."""
    from ..errors import DataError

    root = root or demo_root()
    try:
        info, built = _ensured(root)
    except OSError as exc:  # the cache folder a file, not writable, the disk full
        raise DataError(f"could not build the demo home in {root}: {exc.strerror or exc}") from None
    _link_plugin(Path(info["home"]))
    return info, built


def _link_plugin(home: Path) -> None:
    """Make this copy of the plugin one Hermes finds in the demo home. A pip install is found there by
    its entry point; a directory install (``hermes plugins install``, which Hermes imports as
    ``hermes_plugins.…``) lives in the home it was installed in, so ``hermes recall`` in the demo home,
    which quickstart's last line offers, was no command. The demo home gets a link to it (a copy where
    links cannot be made); without either the demo still works, the offer alone is wrong."""
    from ..hermes.paths import PLUGIN_KEY

    if not __name__.startswith("hermes_plugins."):
        return
    package, target = Path(__file__).resolve().parents[1], home / "plugins" / PLUGIN_KEY
    if target.exists() or target.is_symlink():
        return
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            target.symlink_to(package, target_is_directory=True)
        except OSError:
            shutil.copytree(package, target, ignore=shutil.ignore_patterns("__pycache__"))
    except OSError:
        pass


def _ensured(root: Path) -> tuple[dict, bool]:
    from ..errors import DataError
    from ..files.locks import FileLock

    root.mkdir(parents=True, exist_ok=True)
    recipe = _recipe()
    with FileLock(root / ".lock"):
        info = _reusable(root, recipe)
        if info is not None:
            return info, False
        for part in ("home", "work", MARKER):  # only what an earlier build of ours made
            target = root / part
            if target.is_dir():
                shutil.rmtree(target)
            elif target.exists():
                target.unlink()
        home = root / "home"
        proc = subprocess.run([sys.executable, "-c", _BUILD, __file__, str(home), str(root / "work")],
                              env=dict(os.environ, HERMES_HOME=str(home)), capture_output=True, text=True)
        if proc.returncode != 0:
            tail = (proc.stderr.strip().splitlines() or ["unknown error"])[-1]
            raise DataError(f"could not build the demo home (is hermes-agent installed?): {tail}")
        info = {**json.loads(proc.stdout.strip().splitlines()[-1]), "recipe": recipe}
        enable_plugin(home)
        (root / MARKER).write_text(json.dumps(info, ensure_ascii=False, indent=1), encoding="utf-8")
        return info, True
