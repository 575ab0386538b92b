"""Hermetic test setup: a throwaway HOME and HERMES_HOME before Hermes is imported.

Hermes creates files in its home at import time and freezes
``hermes_state.DEFAULT_DB_PATH`` then, so both variables are pointed at a
sandbox here, at conftest import, before any test module imports Hermes.
The real ``~/.hermes`` is checked at the end of the run: it must be exactly
as it was.
"""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# pytest-xdist's workers start from this process's environment, after HOME
# below points at the sandbox: the real home is handed down to them here.
REAL_HERMES = Path(os.environ.setdefault("PHR_TESTS_REAL_HOME", os.path.expanduser("~"))) / ".hermes"
SANDBOX = Path(tempfile.mkdtemp(prefix="phr-tests-"))
# Not in pytest's base folder, which pytest cleans: without this every process of every run left
# one behind. The first handler registered runs last, after whatever Hermes registers to write there.
atexit.register(shutil.rmtree, SANDBOX, ignore_errors=True)
os.environ["HOME"] = str(SANDBOX / "user-home")
os.environ["HERMES_HOME"] = str(SANDBOX / "import-home")
(SANDBOX / "user-home").mkdir()
(SANDBOX / "import-home").mkdir()
for var in list(os.environ):
    if var.startswith(("HERMES_SESSION_", "TERMINAL_")):
        del os.environ[var]
os.environ.setdefault("TZ", "UTC")
# Import the package from the checkout through a folder that holds only the
# package: the checkout may also hold an *.egg-info from `pip install -e`,
# whose entry point would make Hermes load us as a pip plugin in every test.
SRC = SANDBOX / "src"
SRC.mkdir()
(SRC / "project_history_recall").symlink_to(REPO / "project_history_recall", target_is_directory=True)
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != REPO]
sys.path.insert(0, str(SRC))
sys.path.insert(1, str(REPO / "tests"))

import pytest  # noqa: E402


def _tree(path: Path) -> dict:
    if not path.exists():
        return {}
    out = {}
    for p in path.rglob("*"):
        try:
            st = p.lstat()
        except OSError:
            continue
        out[str(p)] = (st.st_size, st.st_mtime_ns)
    return out


_REAL_BEFORE = _tree(REAL_HERMES)


def pytest_sessionfinish(session, exitstatus):
    after = _tree(REAL_HERMES)
    if after != _REAL_BEFORE:
        changed = sorted(set(after) ^ set(_REAL_BEFORE) | {k for k in after if after.get(k) != _REAL_BEFORE.get(k)})
        session.exitstatus = 1
        print(f"\nREAL ~/.hermes WAS TOUCHED BY THE TESTS: {changed[:10]}", file=sys.stderr)


# A passed test's tmp_path is deleted once its teardown is done (a failed one's stays, for debugging):
# kept, as pytest keeps them, a CI run (three sessions) left 26 GB under /tmp/pytest-of-<user>, each
# Hermes home whose plugin loaded the embedded model holding that model's saved arrays (83 MB), and
# CI once failed with "database or disk is full" in Hermes's SessionDB on a machine with less room.
# Not pytest's tmp_path_retention_policy = "failed": a test's folder can hold what this process
# still uses. Hermes imports a directory-installed plugin from the home it was enabled in, and each
# of the plugin's subpackages stays bound to the home it was first imported from: deleted, a later
# test's lazy import from it fails. Such a folder waits until the process no longer uses it (on
# 0.19.0 the next home that enables the plugin takes the package over), or until the process ends
# (Hermes 0.22 keeps a copy of the plugin for every home that loaded it, each with its own copy of
# the embedded model, mapped from that home's saved arrays: hermes_world.seed_saved_model makes
# those arrays one file, linked into every home).
_TMP_PATH = pytest.StashKey[Path]()
_FAILED = pytest.StashKey[bool]()
_WAITING: list[Path] = []


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if report.failed:
        item.stash[_FAILED] = True
    elif report.when == "setup":
        path = (getattr(item, "funcargs", None) or {}).get("tmp_path")
        if path is not None:
            item.stash[_TMP_PATH] = path
    elif report.when == "teardown" and _TMP_PATH in item.stash and not item.stash.get(_FAILED, False):
        _WAITING.append(item.stash[_TMP_PATH])
        _delete_unused(_WAITING)
    return report


@atexit.register  # before Hermes registers its own exit handlers (its log's last flush): run after them
def _delete_waiting() -> None:
    for folder in _WAITING:
        shutil.rmtree(folder, ignore_errors=True)


def _delete_unused(folders: list[Path]) -> None:
    """Delete the folders this process no longer uses: no module was imported from one (nor may a package
    import more from it), Hermes does not log there (0.19.0 logs, for the whole process, to the first home
    it set logging up in, and reports every record it then fails to write), and no background worker of
    the plugin is busy with a home there (a later test's ``wait_idle`` waits for every home's)."""
    places = []
    for module in list(sys.modules.values()):
        places.append(getattr(module, "__file__", None))
        places.extend(getattr(module, "__path__", None) or [])
    log_files = getattr(sys.modules.get("hermes_logging"), "rotating_file_handlers", list)
    places.extend(getattr(handler, "baseFilename", None) for handler in log_files())
    helpers = sys.modules.get("hermes_world")
    if helpers is not None:
        places.extend(f"{home}{os.sep}" for home, worker in helpers.background_workers() if not worker.wait_idle(0))
    base = f"{folders[0].parent}{os.sep}"  # every tmp_path is a folder of pytest's base folder
    used = {place[len(base):].split(os.sep, 1)[0]
            for place in places if isinstance(place, str) and place.startswith(base)}
    for folder in list(folders):
        if folder.name not in used:
            shutil.rmtree(folder, ignore_errors=True)
            folders.remove(folder)


def sizes(variable: str, full: int | float, quick: int | float) -> list:
    """Two runs of a reliability test: ``quick`` in the everyday suite, and
    ``full`` (the size the README's figures claim; ``$variable`` changes it)
    under the ``slow`` marker, which CI selects with ``-m slow``."""
    kind = type(full)
    return [pytest.param(quick, id="quick"),
            pytest.param(kind(os.environ.get(variable, full)), id="full", marks=pytest.mark.slow)]


@pytest.fixture
def home(tmp_path, monkeypatch):
    """An empty Hermes home for one test, active for Hermes and the plugin."""
    hermes_home = tmp_path / "hermes"
    hermes_home.mkdir()
    monkeypatch.setenv("HERMES_HOME", str(hermes_home))
    return hermes_home


@pytest.fixture
def work(tmp_path):
    """A folder for the user's projects, outside the Hermes home."""
    path = tmp_path / "work"
    path.mkdir()
    return path


@pytest.fixture
def world(home, work):
    """Hermes's own SessionDB on the test's home (see hermes_world), closed after the test."""
    from hermes_world import World

    w = World(home)
    yield w
    w.close()


@pytest.fixture
def server():
    """A real OpenAI-compatible embeddings server on loopback that records every request (embed_server)."""
    from embed_server import EmbeddingServer

    s = EmbeddingServer(dimension=32)
    yield s
    s.close()


@pytest.fixture(scope="session")
def installed(tmp_path_factory):
    """The package as pip installs it (a real wheel build, its console script in ``bin/``), in a folder of
    its own outside the tests' sys.path: put it on PYTHONPATH to use it (Hermes then finds its entry point)."""
    import shutil
    import subprocess

    target = tmp_path_factory.mktemp("pip-site")
    src = tmp_path_factory.mktemp("src") / "repo"
    shutil.copytree(REPO, src, ignore=shutil.ignore_patterns(".git", ".venv*", "__pycache__", "*.egg-info", "build"))
    done = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target), str(src)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return target


@pytest.fixture
def remote_pq(world, work, server):
    """Projects Pelican (P) and Quokka (Q), each with distinctive text (hermes_world's P_TEXTS, Q_TEXTS),
    sessions asking from each, and a remote embedder (``server``) configured with its key in .env."""
    from hermes_world import EMBED_KEY, P_TEXTS, Q_TEXTS, TOOL_TEXT, enable_plugin, remote_settings

    p_dir, q_dir = work / "pelican", work / "quokka"
    p_dir.mkdir()
    q_dir.mkdir()
    out = {"home": world.home, "p_dir": p_dir, "q_dir": q_dir,
           "P": world.project("Pelican", p_dir), "Q": world.project("Quokka", q_dir)}
    out["p1"] = world.session(("user", P_TEXTS[0]), ("assistant", P_TEXTS[1]), cwd=p_dir, title="P deploy")
    world.say(out["p1"], "tool", TOOL_TEXT)
    out["p2"] = world.session(("user", P_TEXTS[2]), cwd=p_dir, title="P invoices")
    out["q1"] = world.session(("user", Q_TEXTS[0]), ("assistant", Q_TEXTS[1]), cwd=q_dir, title="Q roadmap")
    out["askP"] = world.session(("user", "what did we decide about pelican"), cwd=p_dir, title="asking in P")
    out["askQ"] = world.session(("user", "what about quokka"), cwd=q_dir, title="asking in Q")
    out["spare"] = world.session(("user", "a pelican note to move"), cwd=p_dir, title="spare")
    (world.home / ".env").write_text(f"PHR_TEST_KEY={EMBED_KEY}\n", encoding="utf-8")
    out["config"] = remote_settings(world.home, server)
    enable_plugin(world.home)
    return out


@pytest.fixture
def ab(world, work):
    """Alpha (a git repo on branch main) and Beta (a plain folder), with history in each and askers."""
    from hermes_world import enable_plugin, make_repo

    alpha = make_repo(work / "alpha")
    (alpha / "src").mkdir()
    beta = work / "beta"
    beta.mkdir()
    a = world.project("Alpha", alpha)
    b = world.project("Beta", beta)
    sa = world.session(("user", "zebra crossing bug in the alpha parser"), ("assistant", "fixed the zebra case"),
                       cwd=alpha / "src", root=alpha, title="Alpha zebra")
    sa2 = world.session(("user", "another alpha note about parsing"), cwd=alpha, title="Alpha other")
    sb = world.session(("user", "yak shaving in beta, the zebra is not here"), cwd=beta, title="Beta yak")
    tg = world.session(("user", "quokka question from telegram"), source="telegram", title="Telegram quokka")
    ask_a = world.session(cwd=alpha, title="asking from Alpha")
    ask_b = world.session(cwd=beta, title="asking from Beta")
    enable_plugin(world.home)
    return {"A": a, "B": b, "alpha": alpha, "beta": beta, "sa": sa, "sa2": sa2, "sb": sb, "tg": tg,
            "ask_a": ask_a, "ask_b": ask_b}


@pytest.fixture
def autos(world, work):
    """Automatic projects 'notes' (a plain folder) and 'gitrepo' (a repository on branch dev),
    two sessions in each, and an explicit project P; nothing moved yet."""
    from hermes_world import enable_plugin, make_repo

    notes = work / "notes"
    notes.mkdir()
    repo = make_repo(work / "gitrepo", branch="dev")
    p = work / "p"
    p.mkdir()
    pid = world.project("P", p)
    n1 = world.session(("user", "walrus migration notes"), cwd=notes, title="Notes walrus")
    n2 = world.session(("user", "a second note, about otters"), cwd=notes)
    g1 = world.session(("user", "narwhal branch work"), cwd=repo, root=repo, title="Repo narwhal")
    world.db.update_session_cwd(g1, str(repo), git_branch="dev")
    g2 = world.session(("user", "more repository work"), cwd=repo, root=repo)
    ask_p = world.session(cwd=p, title="asking from P")
    enable_plugin(world.home)
    return {"notes": notes, "repo": repo, "p": p, "P": pid, "n1": n1, "n2": n2, "g1": g1, "g2": g2, "ask_p": ask_p}
