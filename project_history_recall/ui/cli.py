"""Command line: the same searches as the agent tool, for a person.

Standalone as ``project-history-recall …`` and inside Hermes as
``hermes recall …``. Output is readable cards, or the tool's JSON with
``--json``. Errors are one line on stderr, never a traceback.

Exit codes: 0 found / done, 1 searched and found nothing (``move``: the
session was already there; ``consent grant``: nothing to grant), 2 bad
arguments, 3 Hermes's data could not be read or written, 4 a remote embedder
needs consent first (``index``; nothing was sent).

With a remote embedder configured, no command sends anything before consent
is on record for the project (``consent grant``); the API key is scrubbed
from everything printed.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import sys
from pathlib import Path

from .. import errors, move, overview, results, search
from ..home import Home
from .. import settings as config
from ..errors import EXIT_CONSENT, EXIT_DATA, EXIT_FOUND, EXIT_NOTHING, EXIT_USAGE
from ..files import configfile, envfile
from ..hermes import paths
from ..hermes.host import Caller
from ..hermes.readonly import StateDBError
from ..hermes.statedb import reading
from ..scope.resolve import ScopeError, attribution_map, resolve_scope
from ..semantic import consent, embedders, indexer
from ..semantic import engine as semantic
from . import demo

DESCRIPTION = (
    "Search earlier Hermes sessions of the project a folder belongs to, by keyword and by meaning."
)
# A person running one search waits for the model and index (the agent's tool
# keeps the short budget and lets indexing go on in the background).
CLI_INDEX_BUDGET_MS = 60_000

# Words, a Chinese term, an exact error code, and a question in other words
# (in English, about a conversation held in Chinese).
DEMO_QUERIES = ("websocket reconnect", "超时", "ERR_CONNECTION_REFUSED", "payment callback taking too long")


class _Parser(argparse.ArgumentParser):
    """Usage errors in one line on stderr (argparse prints the usage block too), exit code 2."""

    def error(self, message: str):
        self.exit(EXIT_USAGE, f"{self.prog}: {message} (see --help)\n")


def _within(low: int, high: int):
    """An argparse type for a whole number in [low, high]: the bounds the tool's schema gives."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a whole number, not {text!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be from {low} to {high}, not {value}")
        return value
    return parse


def _add_global_options(p: argparse.ArgumentParser, standalone: bool, top: bool) -> None:
    """Options that go before or after the subcommand.

    On the subcommands their default is SUPPRESS, so an option given before
    the subcommand is not overwritten by the subcommand's default."""
    unset = {} if top else {"default": argparse.SUPPRESS}
    if standalone:
        p.add_argument("--home", type=Path, help="Hermes home to read (default: $HERMES_HOME or ~/.hermes)", **unset)
        p.add_argument("--profile", help="Hermes profile to read (under ~/.hermes/profiles/)", **unset)
    p.add_argument("--json", action="store_true", help="print the JSON response", **unset)


def _add_search_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("query", nargs="+", help="words, a question, an error code, a symbol or a path")
    p.add_argument("--dir", default=None, help="search the project of this folder (default: the current one)")
    p.add_argument("--project", help="search this project instead (id, slug, name or folder)")
    p.add_argument("--mode", choices=search.MODES, default="hybrid")
    p.add_argument("--limit", type=_within(1, search.MAX_LIMIT), default=10,
                   help=f"results to show, 1 to {search.MAX_LIMIT} (default: 10)")
    p.add_argument("--context", type=_within(0, search.MAX_CONTEXT), default=None,
                   help="messages shown around each hit (default: the 'context' setting, 2)")
    p.add_argument("--tools", action="store_true", help="also search tool output")
    p.add_argument("--since", help="only after this date (2026-09-01) or age (7d, 2w)")
    p.add_argument("--until", help="only before this date")


def setup_parser(parser: argparse.ArgumentParser, standalone: bool = False) -> None:
    """Subcommands; shared by the standalone script and ``hermes recall`` (where Hermes
    chooses the home: ``hermes --profile NAME recall …``)."""
    _add_global_options(parser, standalone, top=True)
    common = argparse.ArgumentParser(add_help=False)
    _add_global_options(common, standalone, top=False)
    sub = parser.add_subparsers(dest="recall_command", metavar="COMMAND", parser_class=_Parser)

    def command(name: str, **kw) -> argparse.ArgumentParser:
        return sub.add_parser(name, parents=[common], **kw)

    _add_search_args(command("search", help="search a project's earlier sessions"))
    st = command("status", help="which project a folder belongs to and how much is in scope")
    st.add_argument("dir", nargs="?", default=None)
    command("projects", help="list this profile's projects with their session counts")
    mv = command("move", help="move a session into another project (its folder moves too)")
    mv.add_argument("session", help="session id, @session: link or title")
    mv.add_argument("project", help="target project: id, slug, name or folder")
    se = command("session", help="which project a session is in, and why")
    se.add_argument("session", help="session id, @session: link or title")
    ix = command("index", help="build or update the semantic index ahead of time (a project, or all)")
    ix.add_argument("dir", nargs="?", default=None, help="index the project of this folder (default: the current one)")
    ix.add_argument("--project", help="index this project instead (id, slug, name or folder)")
    ix.add_argument("--all", action="store_true", help="index every project of this profile")
    qs = command("quickstart", help="search your Hermes home from here, or a demo home if you have none")
    qs.add_argument("query", nargs="*")
    qs.add_argument("--demo", action="store_true", help="use the demo home even if you have one")
    command("config", help="the effective settings, where each comes from, and any warnings (secrets masked)")
    co = command("consent", help="consents to send a project's messages to a remote embedder")
    co_sub = co.add_subparsers(dest="consent_command", metavar="ACTION", parser_class=_Parser)
    co_sub.add_parser("list", parents=[common], help="the consents on record")
    cg = co_sub.add_parser("grant", parents=[common], help="agree that a project's messages may be sent to the "
                                                           "configured remote embedder")
    cg.add_argument("dir", nargs="?", default=None, help="the project of this folder (default: the current one)")
    cg.add_argument("--project", help="this project instead (id, slug, name or folder)")
    cg.add_argument("--yes", action="store_true", help="do not ask (needed when not run from a terminal)")
    # How a person runs us (`project-history-recall` or `hermes recall`), for the hints we print.
    parser.set_defaults(prog=parser.prog or "project-history-recall")


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


def _unfinished(response: dict, command: str | None) -> str | None:
    """For a one-shot process, what replaces "continues in the background" / "on the next search":
    what this command did, and the command that finishes the job (None: say what the tool says)."""
    if command is None or response.get("semantic_status") not in ("indexing", "partial"):
        return None
    index = response.get("semantic_index") or {}
    project = (response.get("project") or {}).get("id")
    finish = f"to index the rest, run: {command} index --project {shlex.quote(str(project))}"
    if "sessions" not in index:
        return f"the embedding model was not ready within the {CLI_INDEX_BUDGET_MS // 1000} s this command waits; {finish}"
    return (f"{index.get('sessions_indexed', 0)} of {index['sessions']} sessions indexed within the "
            f"{CLI_INDEX_BUDGET_MS // 1000} s this command waits; {finish}")


def format_search(response: dict, style: _Style, command: str | None = None) -> str:
    """``command``: how to run this program again, when it is a one-shot process (the CLI)."""
    lines = []
    scope = f"{_project_label(response['project'])}, {response.get('sessions_in_scope', 0)} sessions searched"
    lines.append(style.bold(f"“{response.get('query', '')}” in {scope}"))
    used = response.get("searched_with", response.get("mode"))
    line = f"mode {response.get('mode')} (searched with {used})"
    if response.get("mode") != "keyword":  # keyword mode never asked for the semantic side
        reason = _unfinished(response, command) or response.get("semantic_reason")
        line += f"; semantic: {response.get('semantic_status')}" + (f" — {reason}" if reason else "")
    lines.append(style.dim(line))
    if response.get("reason"):
        lines.append("")
        lines.append(response["reason"])
    asked = response.get("consent")
    if isinstance(asked, dict):
        lines.append("")
        if asked.get("required"):
            lines.append(asked.get("ask_user", ""))
            if asked.get("how_to_record"):
                lines.append(f"To agree, run: {asked['how_to_record']}")
        if (asked.get("token_result") or asked).get("message"):
            lines.append((asked.get("token_result") or asked)["message"])
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


def _semantic_line(response: dict) -> str:
    parts = [response["semantic_status"]]
    index = response.get("semantic_index")
    if isinstance(index, dict) and "sessions" in index:
        parts.append(f"{index.get('sessions_indexed', 0)}/{index['sessions']} sessions indexed")
    if response.get("semantic_reason"):
        parts.append(response["semantic_reason"])
    return " — ".join(parts)


def format_status(response: dict) -> str:
    rows = [
        ("folder", response.get("folder") or "-"),
        ("project", _project_label(response["project"])),
        ("attributed by", response.get("attributed_by")),
        ("in scope", f"{response['sessions_in_scope']} sessions, ~{response['messages_in_scope']} messages"),
        ("semantic", _semantic_line(response)),
        ("hermes home", f"{response['hermes_home']} (profile {response['profile']})"),
    ]
    asked = response.get("consent")
    if isinstance(asked, dict) and asked.get("how_to_record"):
        rows.insert(5, ("to agree", asked["how_to_record"]))
    return "\n".join(f"{k:>14}: {v}" for k, v in rows)


def format_projects(response: dict) -> str:
    lines = [f"Projects in {response['hermes_home']} (profile {response['profile']}):"]
    for p in response["projects"]:
        flag = " [archived]" if p.get("archived") else ""
        if p["kind"] == "explicit":
            kind, where = f"explicit {p['id']}", ", ".join(p.get("folders", []))
        else:  # an automatic project's id is its folder
            kind, where = p["kind"], p["id"]
        lines.append(f"  {p['sessions']:>5}  {p['name']}{flag}  ({kind}) {where}")
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
    return errors.exit_code(response)


def _folder(value: str | None) -> str:
    return str(Path(value).expanduser().absolute()) if value else os.getcwd()


def _caller(folder: str) -> Caller:
    return Caller.of(os.environ.get("HERMES_SESSION_ID"), cwd=folder)


def for_person(response: dict, command: str) -> dict:
    """A search response as a person sees it: a consent request names the command
    that grants it, never the agent's token."""
    asked = response.get("consent")
    if isinstance(asked, dict) and asked.get("required"):
        response = {**response, "consent": consent.for_person(asked, command)}
    return response


def cmd_search(home: Path, args: argparse.Namespace) -> int:
    request = {
        "query": " ".join(args.query), "mode": args.mode, "limit": args.limit, "context": args.context,
        "include_tool_output": args.tools, "since": args.since, "until": args.until, "project": args.project,
    }
    response = for_person(search.run(home, _caller(_folder(args.dir)), request, index_budget_ms=CLI_INDEX_BUDGET_MS),
                          _command(args, home))
    return _emit(response, args.json, lambda r: format_search(r, _Style.for_stream(sys.stdout), _command(args, home)))


def _program(name: str) -> str | None:
    """A console script of this Python as a command that works pasted into any shell: the bare
    name only when it is on PATH outside a virtual environment (activating one is per shell),
    else its full path; None when this Python has no such script."""
    script = Path(sys.executable).with_name(name)
    if not script.is_file():
        return None
    found = shutil.which(name)
    if found and sys.prefix == sys.base_prefix and Path(found).resolve() == script.resolve():
        return name
    return shlex.quote(str(script))


def _command(args: argparse.Namespace, home: Path) -> str:
    """The command that runs this program again on ``home``, pasted into any shell in any folder:
    it names the home unless it is the default one, since a new shell may not have the
    ``HERMES_HOME`` (or ``--home``) this process was given."""
    home, default = Path(home).absolute(), Path.home() / ".hermes"
    profile = shlex.quote(home.name) if home.parent == default / "profiles" else None
    if getattr(args, "prog", "").startswith("hermes"):
        hermes = _program("hermes") or "hermes"
        if home == default:
            return f"{hermes} recall"
        if profile:
            return f"{hermes} --profile {profile} recall"
        return f"env HERMES_HOME={shlex.quote(str(home))} {hermes} recall"
    # Run as ``python -m`` from a checkout: ``env`` sets the module path in any shell.
    program = _program("project-history-recall") or (
        f"env PYTHONPATH={shlex.quote(str(Path(__file__).resolve().parents[2]))} "
        f"{shlex.quote(sys.executable)} -m project_history_recall.ui.cli")
    if home == default:
        return program
    return f"{program} --profile {profile}" if profile else f"{program} --home {shlex.quote(str(home))}"


def _emit(response: dict, as_json: bool, fmt) -> int:
    if as_json:
        print(json.dumps(response, ensure_ascii=False, indent=2))
        return _exit_for(response)
    if not response.get("success"):
        return _fail(response.get("error", "failed"), _exit_for(response))
    print(fmt(response))
    return _exit_for(response)


def cmd_quickstart(home: Path, args: argparse.Namespace) -> int:
    query = " ".join(args.query).strip()
    if not args.demo and paths.state_db_path(home).is_file():
        if not query:
            print(format_status(overview.status(home, _caller(os.getcwd()))))
            print(f"\nNext: search it, e.g.  {_command(args, home)} search 'what did we decide about X'")
            return EXIT_FOUND
        response = for_person(search.run(home, _caller(os.getcwd()), {"query": query, "context": 1},
                                         index_budget_ms=CLI_INDEX_BUDGET_MS), _command(args, home))
        return _emit(response, False, lambda r: format_search(r, _Style.for_stream(sys.stdout), _command(args, home)))
    try:
        info, built = demo.ensure()
    except RuntimeError as exc:
        return _fail(str(exc), EXIT_DATA)
    demo_home = Path(info["home"])
    command = _command(args, demo_home)
    why = "you asked for the demo" if args.demo else f"there is no Hermes home at {home}"
    made = "built it just now with Hermes's own SessionDB" if built else "built on an earlier run, reused"
    print(f"Using the demo home at {demo_home} ({why}; {made}).")
    # Index it up front (seconds, offline) so every demo search shows hybrid results.
    cmd_index(demo_home, argparse.Namespace(all=True, json=False, dir=None, project=None))
    print()
    folder = str(Path(info["work"]) / "webshop")
    code = EXIT_NOTHING
    for q in ([query] if query else DEMO_QUERIES):
        response = for_person(search.run(demo_home, Caller(cwd=folder), {"query": q, "context": 1},
                                         index_budget_ms=CLI_INDEX_BUDGET_MS), command)
        print(f"$ cd {shlex.quote(folder)} && {command} search {shlex.quote(q)}")
        print(format_search(response, _Style.for_stream(sys.stdout), command) if response.get("success")
              else response.get("error"))
        print()
        code = min(code, _exit_for(response))
    print(f"The plugin is enabled in the demo home, so Hermes finds it there too: "
          f"{_command(argparse.Namespace(prog='hermes recall'), demo_home)} status {shlex.quote(folder)}")
    return code


def _index_targets(home: Path, args: argparse.Namespace) -> list[tuple[tuple, str, list[str]]]:
    """(project key, label, its sessions) for each project to index."""
    with reading(paths.state_db_path(home)) as (conn, _shape):
        if args.all:
            amap = attribution_map(home, conn)
            names = {("explicit", p.id): p.name for p in amap.ctx.projects}
            return [(key, names.get(key, str(key[1])), sids)
                    for key, sids in sorted(amap.by_project.items(), key=lambda kv: str(kv[0]))
                    if key[0] != "home"]
        scope = resolve_scope(home, conn, _caller(_folder(args.dir)), project_ref=args.project,
                              include_current=True)
    if scope.attribution.kind == "home":
        raise ScopeError(search.HOME_REASON)
    return [(scope.attribution.key, scope.attribution.name, list(scope.session_ids))]


def _bar(stream, label: str, progress: indexer.Progress, done: int, total: int) -> None:
    width = 24
    filled = int(width * done / total) if total else width
    rate = progress.chunks / progress.embed_seconds if progress.embed_seconds else 0.0
    stream.write(f"\r{label[:28]:<28} [{'#' * filled}{'.' * (width - filled)}] {done}/{total} sessions · "
                 f"{progress.messages:,} messages · {progress.chunks:,} chunks · {rate:,.0f} chunks/s ")
    stream.flush()


def cmd_index(home: Path, args: argparse.Namespace) -> int:
    settings = config.load(home)
    try:
        targets = _index_targets(home, args)
    except ScopeError as exc:
        return _fail(str(exc), EXIT_USAGE)
    except StateDBError as exc:
        return _fail(str(exc), EXIT_DATA)
    ready = semantic.prepare(home, settings, wait=None)
    if not ready.usable:
        if args.json:
            print(json.dumps({"success": False, "error": ready.reason, "semantic_status": ready.status}))
            return EXIT_DATA
        return _fail(f"semantic index not built: {ready.reason}", EXIT_DATA)
    embedder = ready.embedder
    show = not args.json and sys.stderr.isatty()
    summary, skipped = [], []
    worker = None
    for key, label, sids in targets:
        try:
            consent.check(home, embedder, key)  # before anything of this project is read for sending
        except consent.ConsentRequired:
            skipped.append({"project": {"kind": key[0], "id": key[1], "name": label},
                            "reason": f"no consent to send its messages to {embedder.provider} "
                                      f"(model {embedder.model}); nothing was sent",
                            "how_to_record": consent.grant_command(_command(args, home), key[1])})
            continue
        try:
            if embedder.dimension is None:  # a remote model answers once before anything is looked up
                with reading(paths.state_db_path(home)) as (conn, shape):
                    sample = indexer.first_text(conn, shape, sids, settings.chunk_chars, settings.chunk_overlap)
                if sample is not None:
                    embedder.embed_documents([sample])
            if embedder.dimension is None:  # nothing in this project to embed (yet)
                progress = indexer.Progress()
            else:
                worker = worker or Home.of(home).indexer(settings, embedder, ready.store)
                progress = worker.index_now(key, sids, on_progress=(
                    lambda p, d, t, label=label: _bar(sys.stderr, label, p, d, t)) if show else None)
        except embedders.EmbedderUnavailable as exc:
            if show:
                sys.stderr.write("\n")
            return _fail(f"semantic index not built: {exc}", EXIT_DATA)
        if show:
            sys.stderr.write("\n")
        summary.append({"project": {"kind": key[0], "id": key[1], "name": label}, "sessions": len(sids),
                        "sessions_updated": progress.sessions, "messages_embedded": progress.messages,
                        "chunks_embedded": progress.chunks, "messages_removed": progress.removed,
                        "messages_changed": progress.changed, "deleted_sessions_dropped": progress.sessions_removed,
                        "seconds": round(progress.seconds, 2),
                        "embed_seconds": round(progress.embed_seconds, 2)})
    totals = {k: sum(s[k] for s in summary) for k in ("sessions", "sessions_updated", "messages_embedded",
                                                     "chunks_embedded", "messages_removed", "messages_changed",
                                                     "deleted_sessions_dropped", "seconds", "embed_seconds")}
    response = {"success": True, "model": embedder.fingerprint, "index": str(ready.store.path),
                "projects": summary, "totals": totals}
    if skipped:
        response["skipped_for_consent"] = skipped
    code = EXIT_CONSENT if skipped else EXIT_FOUND
    if args.json:
        print(json.dumps(response, ensure_ascii=False, indent=2))
        return code
    rate = totals["chunks_embedded"] / totals["embed_seconds"] if totals["embed_seconds"] else 0.0
    if summary:
        print(f"Indexed {len(summary)} project(s), {totals['sessions']:,} sessions with {embedder.model} "
              f"into {ready.store.path}")
        print(f"  embedded {totals['messages_embedded']:,} messages as {totals['chunks_embedded']:,} chunks "
              f"({rate:,.0f} chunks/s); removed {totals['messages_removed']:,} deleted and re-embedded "
              f"{totals['messages_changed']:,} changed messages; dropped the vectors of "
              f"{totals['deleted_sessions_dropped']:,} deleted sessions; {totals['seconds']:.1f} s")
    for item in skipped:
        print(f"Skipped {item['project']['name']}: {item['reason']}. To agree: {item['how_to_record']}")
    return code


# -- settings and consents -------------------------------------------------------------------
def config_report(home: Path) -> dict:
    """The effective settings with where each came from; the key only as set/not set."""
    settings = config.load(home)
    records, consent_warnings = consent.records(home)
    remote, service, model = embedders.identity(settings)
    leaves = {key: settings.value(key) for key in settings.origins}
    return {
        "success": True,
        "hermes_home": str(home),
        "profile": paths.profile_name(home),
        "sources": settings.sources,
        "settings": settings.values(),
        "origins": settings.origins,
        "values": leaves,
        "secrets": {"openai.api_key": envfile.describe(home, settings.openai.api_key_env)},
        "embedder": {"remote": remote, "service": service, "model": model,
                     "consent_needed": remote},
        "consents": len(records),
        "warnings": settings.warnings + consent_warnings,
        "plugin_config": str(config.plugin_config_path(home)),
    }


def format_config(response: dict) -> str:
    lines = [f"Settings for {response['hermes_home']} (profile {response['profile']})",
             f"  sources, later ones win: {' < '.join(response['sources'])}", ""]
    width = max(len(k) for k in response["values"])
    for key, value in response["values"].items():
        shown = json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else value
        lines.append(f"  {key:<{width}}  {shown:<28}  {response['origins'][key]}")
    key = response["secrets"]["openai.api_key"]
    where = f"set, in {key['from']} (not shown)" if key["set"] else "not set"
    lines.append(f"  {'openai.api_key':<{width}}  {where}  (variable {key['variable']})")
    emb = response["embedder"]
    lines.append("")
    if emb["remote"]:
        lines.append(f"Embedder: {emb['model']} at {emb['service']}, off this machine: each project needs "
                     f"consent before anything is sent; {response['consents']} consent(s) on record.")
    else:
        lines.append("Embedder: the embedded offline model; nothing leaves this machine, no consent needed.")
    if response["warnings"]:
        lines.append("")
        lines.append("Warnings:")
        lines += [f"  - {w}" for w in response["warnings"]]
    return "\n".join(lines)


def cmd_config(home: Path, args: argparse.Namespace) -> int:
    return _emit(config_report(home), args.json, format_config)


def cmd_consent(home: Path, args: argparse.Namespace) -> int:
    action = getattr(args, "consent_command", None)
    if action == "list":
        return _consent_list(home, args)
    if action == "grant":
        return _consent_grant(home, args)
    return _fail("say what to do: consent list, or consent grant [DIR] [--project P] (see --help)", EXIT_USAGE)


def _consent_list(home: Path, args: argparse.Namespace) -> int:
    records, warnings = consent.records(home)
    response = {"success": True, "consents": records, "warnings": warnings,
                "file": str(config.plugin_config_path(home)),
                "note": "There is no revoke command: delete an entry from the file to withdraw it "
                        "(nothing already sent is deleted by the service)."}

    def fmt(r: dict) -> str:
        if not r["consents"]:
            lines = ["No consents on record."]
        else:
            lines = [f"Consents on record in {r['file']}:"]
            for c in r["consents"]:
                p = c["project"]
                lines.append(f"  {p.get('name') or p['id']} ({p['kind']} {p['id']}) -> {c['model']} at "
                             f"{c['service']}; {c.get('granted_at', '?')}, {c.get('granted_by', '?')}")
        lines += [f"  warning: {w}" for w in r["warnings"]]
        lines.append(r["note"])
        return "\n".join(lines)

    return _emit(response, args.json, fmt)


def _consent_grant(home: Path, args: argparse.Namespace) -> int:
    settings = config.load(home)
    remote, _service, _model = embedders.identity(settings)
    if not remote:
        print("The configured embedder runs on this machine: no consent is needed.")
        return EXIT_NOTHING
    try:
        with reading(paths.state_db_path(home)) as (conn, _shape):
            scope = resolve_scope(home, conn, _caller(_folder(args.dir)), project_ref=args.project,
                                  include_current=True)
            if scope.attribution.kind == "home":
                return _fail("this folder is in no project, so nothing of it is ever sent; name one with --project",
                             EXIT_USAGE)
            embedder = embedders.load(settings)
            members = scope.members
            described = consent.describe(conn, embedder, scope.attribution.as_json(), members,
                                         settings.chunk_chars)
    except ScopeError as exc:
        return _fail(str(exc), EXIT_USAGE)
    except StateDBError as exc:
        return _fail(str(exc), EXIT_DATA)
    except embedders.EmbedderUnavailable as exc:
        return _fail(str(exc), EXIT_USAGE)
    project = described["project"]
    if consent.on_record(home, embedder.provider, embedder.model, scope.attribution.key):
        message = f"Consent for project '{project['name']}' to {embedder.provider} (model {embedder.model}) is already on record."
        _emit({"success": True, "recorded": False, "message": message, "consent": described}, args.json,
              lambda r: r["message"])
        return EXIT_NOTHING
    if not args.yes:
        question = described["ask_user"].replace("Hermes would send", "this would send")
        if not sys.stdin.isatty():
            return _fail("nothing recorded: add --yes to agree without a prompt "
                         f"({described['would_send']['messages']:,} messages of '{project['name']}' to "
                         f"{embedder.provider})", EXIT_USAGE)
        print(question)
        try:
            answer = input("Agree? [y/N] ").strip().lower()
        except EOFError:
            answer = ""
        if answer not in ("y", "yes"):
            print("Nothing recorded.")
            return EXIT_NOTHING
    try:
        consent.grant(home, embedder.provider, embedder.model, project, "a person, with the consent grant command")
    except configfile.ConfigWriteError as exc:
        return _fail(f"consent not recorded: {config.plugin_config_path(home)}: {exc}", EXIT_DATA)
    message = (f"Consent recorded: project '{project['name']}' may be sent to {embedder.provider} "
               f"(model {embedder.model}).")
    return _emit({"success": True, "recorded": True, "message": message, "consent": described}, args.json,
                 lambda r: r["message"])


COMMANDS = {
    "index": cmd_index,
    "search": cmd_search,
    "status": lambda home, args: _emit(for_person(overview.status(home, _caller(_folder(args.dir))), _command(args, home)),
                                       args.json, format_status),
    "projects": lambda home, args: _emit(overview.list_projects(home), args.json, format_projects),
    "quickstart": cmd_quickstart,
    "move": lambda home, args: _emit(move.run(home, Caller(), {"session": args.session, "project": args.project}),
                                     args.json, format_move),
    "session": lambda home, args: _emit(overview.session_info(home, args.session), args.json, format_session),
    "config": cmd_config,
    "consent": cmd_consent,
}


class _Scrubbed:
    """A text stream that never lets the remote embedder's key through."""

    def __init__(self, stream, key: str):
        self._stream, self._key = stream, key

    def write(self, text: str) -> int:
        return self._stream.write(envfile.scrub_key(text, self._key))

    def __getattr__(self, name):
        return getattr(self._stream, name)


def dispatch(home: Path, args: argparse.Namespace) -> int:
    command = COMMANDS.get(getattr(args, "recall_command", None) or "")
    if command is None:
        return _fail("say what to do: search, status, projects, index, move, session, quickstart, config or "
                     "consent (see --help)", EXIT_USAGE)
    key = envfile.configured_key(home)
    saved = sys.stdout, sys.stderr
    if key:
        sys.stdout, sys.stderr = _Scrubbed(sys.stdout, key), _Scrubbed(sys.stderr, key)
    try:
        return command(home, args)
    except KeyboardInterrupt:
        return _fail("interrupted", 130)
    except Exception as exc:  # one line for a person, never a traceback
        return _fail(f"{type(exc).__name__}: {exc}", EXIT_DATA)
    finally:
        sys.stdout, sys.stderr = saved


def run_from_hermes(args: argparse.Namespace) -> None:
    """``hermes recall …``: Hermes has already chosen the profile's home."""
    raise SystemExit(dispatch(paths.hermes_home(), args))


def main(argv: list[str] | None = None) -> int:
    parser = _Parser(prog="project-history-recall", description=DESCRIPTION)
    setup_parser(parser, standalone=True)
    args = parser.parse_args(argv)
    if args.home and args.profile:
        parser.error("give --home or --profile, not both")
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
