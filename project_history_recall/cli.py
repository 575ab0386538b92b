"""Command line: the same searches as the agent tool, for a person.

Standalone as ``project-history-recall …`` and inside Hermes as
``hermes recall …``. Output is readable cards, or the tool's JSON with
``--json``. Errors are one line on stderr, never a traceback.

Exit codes: 0 found / done, 1 searched and found nothing (``move``: the
session was already there), 2 bad arguments, 3 Hermes's data could not be
read or written.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from . import move, overview, paths, results, search
from .scope import Caller

DESCRIPTION = (
    "Search earlier Hermes sessions of the project a folder belongs to, by keyword "
    "(and by meaning once the semantic index is installed)."
)
EXIT_FOUND, EXIT_NOTHING, EXIT_USAGE, EXIT_DATA = 0, 1, 2, 3
_DATA_CODES = {"missing", "empty", "corrupt", "locked", "schema", "unreadable", "error", "internal",
               "hermes_write_failed", "record_failed", "no_hermes"}

DEMO_QUERIES = ("websocket reconnect", "超时", "ERR_CONNECTION_REFUSED")


def _add_search_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("query", nargs="+", help="words, a question, an error code, a symbol or a path")
    p.add_argument("--dir", default=None, help="search the project of this folder (default: the current one)")
    p.add_argument("--project", help="search this project instead (id, slug, name or folder)")
    p.add_argument("--mode", choices=search.MODES, default="hybrid")
    p.add_argument("--limit", type=int, default=10)
    p.add_argument("--context", type=int, default=1, help="messages shown around each hit (default 1)")
    p.add_argument("--tools", action="store_true", help="also search tool output")
    p.add_argument("--since", help="only after this date (2026-09-01) or age (7d, 2w)")
    p.add_argument("--until", help="only before this date")
    p.add_argument("--json", action="store_true", help="print the tool's JSON")


def setup_parser(parser: argparse.ArgumentParser) -> None:
    """Subcommands; shared by the standalone script and ``hermes recall``."""
    sub = parser.add_subparsers(dest="recall_command", metavar="COMMAND")
    _add_search_args(sub.add_parser("search", help="search a project's earlier sessions"))
    st = sub.add_parser("status", help="which project a folder belongs to and how much is in scope")
    st.add_argument("dir", nargs="?", default=None)
    st.add_argument("--json", action="store_true")
    pr = sub.add_parser("projects", help="list this profile's projects with their session counts")
    pr.add_argument("--json", action="store_true")
    mv = sub.add_parser("move", help="move a session into another project (its folder moves too)")
    mv.add_argument("session", help="session id, @session: link or title")
    mv.add_argument("project", help="target project: id, slug or name")
    mv.add_argument("--json", action="store_true")
    se = sub.add_parser("session", help="which project a session is in, and why")
    se.add_argument("session", help="session id, @session: link or title")
    se.add_argument("--json", action="store_true")
    qs = sub.add_parser("quickstart", help="search your Hermes home from here, or a demo home if you have none")
    qs.add_argument("query", nargs="*")
    qs.add_argument("--demo", action="store_true", help="use the demo home even if you have one")


class _Style:
    def __init__(self, color: bool = False):
        self.color = color

    @classmethod
    def for_stream(cls, stream) -> "_Style":
        return cls(stream.isatty() and os.environ.get("NO_COLOR") is None)

    def mark(self, text: str) -> str:
        if self.color:
            return text.replace(results.MARK_OPEN, "\033[1;33m").replace(results.MARK_CLOSE, "\033[0m")
        return text.replace(results.MARK_OPEN, "«").replace(results.MARK_CLOSE, "»")

    def dim(self, text: str) -> str:
        return f"\033[2m{text}\033[0m" if self.color else text

    def bold(self, text: str) -> str:
        return f"\033[1m{text}\033[0m" if self.color else text


def _project_label(project: dict) -> str:
    if project.get("kind") == "home":
        return "no project (home bucket)"
    kind = "project" if project.get("kind") == "explicit" else "automatic project"
    return f"{kind} {project.get('name')} ({project.get('id')})"


def format_search(response: dict, style: _Style) -> str:
    lines = []
    scope = f"{_project_label(response['project'])}, {response.get('sessions_in_scope', 0)} sessions searched"
    lines.append(style.bold(f"“{response.get('query', '')}” in {scope}"))
    state = response.get("semantic_status")
    used = response.get("searched_with", response.get("mode"))
    lines.append(style.dim(f"mode {response.get('mode')} (searched with {used}); semantic: {state}"
                           + (f" — {response['semantic_reason']}" if response.get("semantic_reason") else "")))
    if response.get("reason"):
        lines.append("")
        lines.append(response["reason"])
    if not response.get("results") and not response.get("reason"):
        lines.append("")
        lines.append("Nothing found.")
    for n, hit in enumerate(response.get("results", []), 1):
        lines.append("")
        title = hit.get("title") or "(untitled session)"
        lines.append(f"{n:>2}. {style.bold(title)} · {hit.get('when', '')} · {hit.get('role')} · {hit.get('score_source')}")
        lines.append(f"    {style.mark(hit.get('snippet', ''))}")
        for ctx in hit.get("context", []):
            if ctx.get("hit"):
                continue
            lines.append(style.dim(f"      {ctx['role']}: {ctx['text'][:160]}"))
        lines.append(style.dim(f"    {hit['link']} · message {hit['message_id']}"))
    return "\n".join(lines)


def format_status(response: dict) -> str:
    rows = [
        ("folder", response.get("folder") or "-"),
        ("project", _project_label(response["project"])),
        ("attributed by", response.get("attributed_by")),
        ("in scope", f"{response['sessions_in_scope']} sessions, ~{response['messages_in_scope']} messages"),
        ("semantic", f"{response['semantic_status']} — {response.get('semantic_reason', '')}"),
        ("hermes home", f"{response['hermes_home']} (profile {response['profile']})"),
    ]
    return "\n".join(f"{k:>14}: {v}" for k, v in rows)


def format_projects(response: dict) -> str:
    lines = [f"Projects in {response['hermes_home']} (profile {response['profile']}):"]
    for p in response["projects"]:
        flag = " [archived]" if p.get("archived") else ""
        where = ", ".join(p.get("folders", [])) if p["kind"] == "explicit" else p["id"]
        lines.append(f"  {p['sessions']:>5}  {p['name']}{flag}  ({p['kind']} {p['id'] if p['kind'] == 'explicit' else ''}) {where}")
    lines.append(f"  {response['home_bucket_sessions']:>5}  (no project: home bucket)")
    return "\n".join(lines)


def format_move(response: dict) -> str:
    if not response.get("moved"):
        return response["message"]
    lines = [response["message"]]
    rows = [("session", f"{response['session_id']}  {response.get('title') or ''}".rstrip()),
            ("from", _project_label(response["previous_project"])),
            ("to", _project_label(response["project"])),
            ("folder", f"{response.get('previous_cwd') or '-'} -> {response['cwd']}")]
    sidebar = response.get("sidebar", {})
    rows.append(("sidebar", "agrees" if sidebar.get("agrees") else sidebar.get("reason", "differs")))
    if sidebar.get("note"):
        rows.append(("", sidebar["note"]))
    lines += [f"{k:>9}: {v}" for k, v in rows]
    lines += [f"     note: {n}" for n in response.get("notes", [])]
    return "\n".join(lines)


def format_session(response: dict) -> str:
    rows = [
        ("session", f"{response['session_id']}  {response.get('title') or ''}".rstrip()),
        ("link", response["link"]),
        ("project", _project_label(response["project"])),
        ("attributed by", response.get("attributed_by")),
        ("folder", response.get("cwd") or "-"),
        ("git root", response.get("git_repo_root") or "-"),
    ]
    for m in response.get("moves", []):
        rows.append(("moved", f"{m['when']}: {_project_label(m['from'])} -> {_project_label(m['to'])}"
                              f" ({m.get('from_cwd') or '-'} -> {m.get('to_cwd') or '-'})"))
    return "\n".join(f"{k:>14}: {v}" for k, v in rows)


def _fail(message: str, code: int) -> int:
    print(f"project-history-recall: {message}", file=sys.stderr)
    return code


def _exit_for(response: dict) -> int:
    if response.get("success") and response.get("moved") is False:
        return EXIT_NOTHING
    if response.get("success"):
        return EXIT_FOUND if response.get("results", True) else EXIT_NOTHING
    return EXIT_DATA if response.get("error_code") in _DATA_CODES else EXIT_USAGE


def _folder(value: str | None) -> str:
    return str(Path(value).expanduser().absolute()) if value else os.getcwd()


def _caller(folder: str) -> Caller:
    return Caller.of(os.environ.get("HERMES_SESSION_ID"), cwd=folder)


def cmd_search(home: Path, args: argparse.Namespace) -> int:
    request = {
        "query": " ".join(args.query), "mode": args.mode, "limit": args.limit, "context": args.context,
        "include_tool_output": args.tools, "since": args.since, "until": args.until, "project": args.project,
    }
    response = search.run(home, _caller(_folder(args.dir)), request)
    return _emit(response, args.json, lambda r: format_search(r, _Style.for_stream(sys.stdout)))


def _emit(response: dict, as_json: bool, fmt) -> int:
    if as_json:
        print(json.dumps(response, ensure_ascii=False, indent=2))
        return _exit_for(response)
    if not response.get("success"):
        return _fail(response.get("error", "failed"), _exit_for(response))
    print(fmt(response))
    return _exit_for(response)


def _build_demo_home() -> tuple[Path, dict]:
    """A fresh demo home, built in a child process so Hermes's import-time
    files land in the demo folder and never in a real home."""
    base = Path(tempfile.mkdtemp(prefix="phr-demo-"))
    home = base / "home"
    env = dict(os.environ, HERMES_HOME=str(home))
    code = "import json, sys; from pathlib import Path; from project_history_recall import demo; " \
           "print(json.dumps(demo.build(Path(sys.argv[1]))))"
    proc = subprocess.run([sys.executable, "-c", code, str(home)], env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["unknown error"])[-1]
        raise RuntimeError(f"could not build the demo home (is hermes-agent installed?): {tail}")
    return home, json.loads(proc.stdout.strip().splitlines()[-1])


def cmd_quickstart(home: Path, args: argparse.Namespace) -> int:
    query = " ".join(args.query).strip()
    if not args.demo and paths.state_db_path(home).is_file():
        if not query:
            print(format_status(overview.status(home, _caller(os.getcwd()))))
            print('\nNext: search it, e.g.  project-history-recall search "what did we decide about X"')
            return EXIT_FOUND
        response = search.run(home, _caller(os.getcwd()), {"query": query, "context": 1})
        return _emit(response, False, lambda r: format_search(r, _Style.for_stream(sys.stdout)))
    try:
        demo_home, info = _build_demo_home()
    except RuntimeError as exc:
        return _fail(str(exc), EXIT_DATA)
    print(f"No Hermes home at {home}; built a demo home with Hermes's own SessionDB at {demo_home}.\n")
    folder = str(Path(info["work"]) / "webshop")
    code = EXIT_NOTHING
    for q in ([query] if query else DEMO_QUERIES):
        response = search.run(demo_home, Caller(cwd=folder), {"query": q, "context": 1})
        print(f"$ cd {folder} && project-history-recall search {json.dumps(q, ensure_ascii=False)}")
        print(format_search(response, _Style.for_stream(sys.stdout)) if response.get("success") else response.get("error"))
        print()
        code = min(code, _exit_for(response))
    return code


COMMANDS = {
    "search": cmd_search,
    "status": lambda home, args: _emit(overview.status(home, _caller(_folder(args.dir))), args.json, format_status),
    "projects": lambda home, args: _emit(overview.list_projects(home), args.json, format_projects),
    "quickstart": cmd_quickstart,
    "move": lambda home, args: _emit(move.run(home, Caller(), {"session": args.session, "project": args.project}),
                                     args.json, format_move),
    "session": lambda home, args: _emit(overview.session_info(home, args.session), args.json, format_session),
}


def dispatch(home: Path, args: argparse.Namespace) -> int:
    command = COMMANDS.get(getattr(args, "recall_command", None) or "")
    if command is None:
        return _fail("say what to do: search, status, projects, move, session or quickstart (see --help)", EXIT_USAGE)
    try:
        return command(home, args)
    except KeyboardInterrupt:
        return _fail("interrupted", 130)
    except Exception as exc:  # one line for a person, never a traceback
        return _fail(f"{type(exc).__name__}: {exc}", EXIT_DATA)


def run_from_hermes(args: argparse.Namespace) -> None:
    """``hermes recall …``: Hermes has already chosen the profile's home."""
    raise SystemExit(dispatch(paths.hermes_home(), args))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="project-history-recall", description=DESCRIPTION)
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--home", type=Path, help="Hermes home to read (default: $HERMES_HOME or ~/.hermes)")
    where.add_argument("--profile", help="Hermes profile to read (under ~/.hermes/profiles/)")
    setup_parser(parser)
    args = parser.parse_args(argv)
    if args.home:
        home = args.home.expanduser()
    elif args.profile:
        home = paths.hermes_home_root() / "profiles" / args.profile
        if not home.is_dir():
            return _fail(f"no Hermes profile '{args.profile}' at {home}", EXIT_USAGE)
    else:
        home = paths.hermes_home()
    return dispatch(home, args)


if __name__ == "__main__":
    raise SystemExit(main())
