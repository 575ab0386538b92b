"""The plugin's command line as tests run it: in a new process (``python -m project_history_recall.ui.cli``
or ``hermes recall``), in a pseudo-terminal, or in this process with everything it shows collected."""

from __future__ import annotations

import io
import json
import os
import resource
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from conftest import SRC
from pty_terminal import Terminal

MODULE = [sys.executable, "-m", "project_history_recall.ui.cli"]
HERMES_BIN = Path(sys.executable).with_name("hermes")


def cli_env(home: Path | None = None, *, color: bool = False, **extra: str) -> dict:
    """The environment of a CLI process: the package from this checkout on PYTHONPATH, ``home`` as
    HERMES_HOME (none: no HERMES_HOME at all, as for a person who never set one), NO_COLOR unless
    ``color``, and ``extra`` variables."""
    env = {k: v for k, v in os.environ.items() if k not in ("HERMES_HOME", "PYTHONPATH", "NO_COLOR")}
    env["PYTHONPATH"] = str(SRC)
    if home is not None:
        env["HERMES_HOME"] = str(home)
    if not color:
        env["NO_COLOR"] = "1"
    env.update(extra)
    return env


def terminal_env(home: Path) -> dict:
    """The environment of a CLI run in a colour terminal 100 columns wide (see run_in_terminal)."""
    return cli_env(home, color=True, TERM="xterm-256color", COLUMNS="100")


def cli_process(*args: str, home: Path | None = None, cwd: Path | None = None, env: dict | None = None,
                hermes: bool = False, limit_file_size: bool = False, timeout: float = 300) -> subprocess.CompletedProcess:
    """The command line in a new process, its output captured as text.

    ``home`` is its HERMES_HOME and, unless ``cwd`` is given, the folder it runs in; ``env`` replaces
    ``cli_env(home)``; ``hermes`` runs it as ``hermes recall``; ``limit_file_size``: no file of its may
    grow (EFBIG)."""
    def no_growth():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))

    cmd = [str(HERMES_BIN), "recall", *args] if hermes else [*MODULE, *args]
    return subprocess.run(cmd, env=cli_env(home) if env is None else env, cwd=cwd or home, capture_output=True,
                          text=True, timeout=timeout, preexec_fn=no_growth if limit_file_size else None)


def index_signalled(home, folder, signum: int, after_batches: int = 3) -> subprocess.CompletedProcess:
    """``index FOLDER`` on ``home`` in a process of its own that sends itself ``signum`` (SIGKILL; SIGTERM
    or SIGHUP, as ``timeout``, systemd or a closed terminal send them) once ``after_batches`` batches
    of embeddings are committed."""
    script = textwrap.dedent(f"""
        import os, sys
        sys.path.insert(0, {str(SRC)!r})
        from project_history_recall.semantic import indexer
        from project_history_recall.ui import cli
        batches = []
        real = indexer.Indexer._embed_and_store
        def signalled(self, *a, **k):
            real(self, *a, **k)
            batches.append(1)
            if len(batches) == {after_batches}:
                os.kill(os.getpid(), {int(signum)})
        indexer.Indexer._embed_and_store = signalled
        raise SystemExit(cli.main(["--home", {str(home)!r}, "index", {str(folder)!r}]))
    """)
    return subprocess.run([sys.executable, "-c", script], env=cli_env(home), capture_output=True, text=True,
                          timeout=600)


def run_in_terminal(args: list[str], env: dict, timeout: float = 240.0) -> tuple[int, str]:
    """Run the CLI with a pty as its terminal; returns (exit code, everything it printed)."""
    term = Terminal([*MODULE, *args], env)
    code = term.run_to_end(timeout)
    return code, term.raw


class Outputs:
    """Everything shown anywhere: tool results, CLI output, slash output, log records."""

    def __init__(self):
        self.texts: list[str] = []

    def add(self, value) -> object:
        self.texts.append(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False))
        return value

    def __contains__(self, needle: str) -> bool:
        return any(needle in t for t in self.texts)


def run_cli(outputs: Outputs, capsys, *argv, home: Path, stdin: str = "") -> int:
    """The CLI's ``main`` in this process on ``home``, its output added to ``outputs``; returns its exit code."""
    from project_history_recall.ui import cli as ui_cli

    old = sys.stdin
    sys.stdin = io.StringIO(stdin)  # not a terminal: nothing can be agreed to by pressing enter
    try:
        code = ui_cli.main(["--home", str(home), *argv])
    finally:
        sys.stdin = old
    captured = capsys.readouterr()
    outputs.add(captured.out + captured.err)
    return code
