"""Command line: the same searches as the agent tool, for a person.

Standalone as ``project-history-recall …`` and inside Hermes as
``hermes recall …``. It parses, calls the library (``search``, ``move``,
``overview``, ``indexing``, ``consenting``) and prints what ``render``
makes of the response, or the response itself with ``--json``. Errors are one
line on stderr, never a traceback; usage errors too.

Exit codes come from the outcome each response carries (``errors.exit_code``): 0 found / done,
1 searched and found nothing (``move``: the session was already there;
``consent grant``: nothing to grant), 2 bad arguments, 3 Hermes's data could
not be read or written, 4 a remote embedder needs consent first (``index``:
nothing of that project was sent, or, its consent withdrawn mid-run, nothing
after the withdrawal).

With a remote embedder configured, no command sends anything before consent
is on record for the project (``consent grant``); the API key is scrubbed
from everything printed (``render.Output``).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import shlex
import shutil
import signal
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from .. import consenting, errors, indexing, move, overview, search
from .. import settings as config
from ..errors import EXIT_DATA, EXIT_FOUND, EXIT_USAGE, PluginError, UsageError
from ..files import envfile, owner
from ..hermes import host, paths
from ..hermes.host import Caller
from ..hermes.readonly import StateDBError, absent
from ..hermes.statedb import reading
from ..semantic import consent, embedders
from . import consent_words, demo, edge, render, terminal
from .arguments import DESCRIPTION, Parser, setup_parser

# A person running one search waits for the model and index (the agent's tool
# keeps the short budget and lets indexing go on in the background).
CLI_INDEX_BUDGET_MS = 60_000

# Words, a Chinese term, an exact error code, and a question in other words
# (in English, about a conversation held in Chinese).
DEMO_QUERIES = ("websocket reconnect", "超时", "ERR_CONNECTION_REFUSED", "payment callback taking too long")


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


def _command(prog: str, home: Path) -> str:
    """The command that runs this program again on ``home``, pasted into any shell in any folder:
    it names the home unless it is the default one, since a new shell may not have the
    ``HERMES_HOME`` (or ``--home``) this process was given."""
    home, default = Path(home).absolute(), Path.home() / ".hermes"
    profile = shlex.quote(home.name) if home.parent == default / "profiles" else None
    if prog.startswith("hermes"):
        return f"{_hermes(home)} recall"
    # Run as ``python -m`` from a checkout: ``env`` sets the module path in any shell.
    program = _program("project-history-recall") or (
        f"env PYTHONPATH={shlex.quote(str(Path(__file__).resolve().parents[2]))} "
        f"{shlex.quote(sys.executable)} -m project_history_recall.ui.cli")
    if home == default:  # with a profile made the default (`hermes profile use`), a bare command reads that one
        return program if paths.sticky_profile() is None else f"{program} --profile default"
    return f"{program} --profile {profile}" if profile else f"{program} --home {shlex.quote(str(home))}"


def _hermes(home: Path) -> str:
    """Hermes's own command on ``home``, pasted into any shell (see ``_command``)."""
    home, default = Path(home).absolute(), Path.home() / ".hermes"
    hermes = _program("hermes") or "hermes"
    if home == default:
        return hermes if paths.sticky_profile() is None else f"{hermes} --profile default"
    if home.parent == default / "profiles":
        return f"{hermes} --profile {shlex.quote(home.name)}"
    return f"env HERMES_HOME={shlex.quote(str(home))} {hermes}"


def _folder(value: str | None) -> str:
    """The folder a command is about (``value``, else the one it runs in); a folder that does not exist
    is a usage error, not an empty project."""
    if not value:
        try:
            return os.getcwd()
        except OSError:  # deleted (or moved away from) since the shell entered it
            raise UsageError("the folder this runs in no longer exists: cd to one, or give --dir FOLDER") from None
    # Lexically, as a shell's cd and Hermes's projects_db read a folder: ``absolute()`` kept the ``..`` of
    # ``--dir ../app``, and that spelling is no project's folder.
    folder = Path(os.path.abspath(_expanded(Path(value))))
    if not folder.is_dir():
        raise UsageError(f"no such folder: {value}" if not folder.exists() else f"not a folder: {value}")
    return str(folder)


def _project(value: str | None) -> str | None:
    """A project as the person named it, a folder relative to this one (``.``, ``./app``, ``../app``) made
    absolute, lexically as ``_folder`` makes one: the library, which has no folder of its own, takes
    a folder only whole and looked these up as names ("No project '.' in this profile")."""
    if value is None or not (value in (".", "..") or value.startswith(("./", "../"))):
        return value
    return os.path.normpath(os.path.join(_folder(None), value))


def _expanded(path: Path) -> Path:
    try:
        return path.expanduser()
    except RuntimeError:  # ``~name`` of a user this machine lacks
        raise UsageError(f"no such folder: {path} (no user {path.parts[0][1:]!r} here)") from None


def _caller(folder: str) -> Caller:
    return Caller.of(os.environ.get("HERMES_SESSION_ID"), cwd=folder, by_folder=True)


@dataclasses.dataclass
class _Run:
    """One command: its home, its arguments, where it writes."""

    home: Path
    args: argparse.Namespace
    out: render.Output

    @property
    def command(self) -> str:
        return _command(getattr(self.args, "prog", ""), self.home)

    @property
    def one_shot(self) -> render.OneShot:
        return render.OneShot(self.command, CLI_INDEX_BUDGET_MS // 1000)

    def emit(self, response: dict, fmt) -> int:
        """The response as JSON (``--json``) or as text; its exit code, whether or not anyone read it
        (``… | head`` ends the reader early, and ``set -o pipefail`` still reads the code)."""
        try:
            if self.args.json:
                self.out.json(response)
            elif not response.get("success"):
                self.out.error(response.get("error", "failed"))
            else:
                self.out.print(fmt(response))
        except BrokenPipeError:
            pass
        return errors.exit_code(response)

    def search(self, caller: Caller, request: dict) -> dict:
        """A search as a person runs it: waiting for the model and index, told the command that
        grants a consent."""
        response = search.run(self.home, caller, request, index_budget_ms=CLI_INDEX_BUDGET_MS, one_shot=True)
        return render.for_person(response, self.command)


def _in_no_project(response: dict) -> bool:
    """The folder a response is about is in no project: Hermes's home bucket, or a folder no session
    has worked in (an automatic project of nothing)."""
    project = response.get("project") or {}
    return project.get("kind") == "home" or (project.get("kind") == "auto" and not response.get("sessions_in_scope"))


def _live_projects(home: Path) -> list[dict]:
    """This home's projects as ``projects`` lists them, largest first; archived ones left out."""
    listed = overview.list_projects(home).get("projects", [])
    return sorted((p for p in listed if not p.get("archived")), key=lambda p: -p["sessions"])


def _names_to_pick(home: Path) -> str:
    """The largest projects' names as they go after ``--project``: quoted where a shell needs it
    (``--project Web shop``, pasted, searched for "shop" in no project)."""
    return ", ".join(shlex.quote(p["name"]) for p in _live_projects(home)[:8]) or "none yet"


def _nowhere(run: _Run, folder: str) -> str:
    """What a person can do from a folder that is in no project."""
    names = _names_to_pick(run.home)
    return "\n".join([
        f"{folder} is in no project of {run.home}, so there is no project history to search here.",
        f"  search a project:        {run.command} search QUERY --project NAME   (projects: {names})",
        f"  make this folder one:    {_hermes(run.home)} project create NAME {shlex.quote(folder)}",
        f"  put a session in one:    {run.command} move SESSION PROJECT"])


def cmd_search(run: _Run) -> int:
    a = run.args
    folder = _folder(a.dir)
    response = run.search(_caller(folder), {
        "query": " ".join(a.query), "mode": a.mode, "limit": a.limit, "context": a.context,
        "include_tool_output": a.tools, "since": a.since, "until": a.until, "project": _project(a.project)})
    if response.get("success") and not a.project and _in_no_project(response):
        return run.emit({**response, "reason": _nowhere(run, folder)}, lambda r: r["reason"])
    return run.emit(response, lambda r: render.format_search(r, run.out.style(), run.one_shot))


def cmd_status(run: _Run, folder: str | None = None) -> int:
    return _status(run, folder or _folder(run.args.dir))[0]


def _status(run: _Run, folder: str) -> tuple[int, dict]:
    """``status`` of ``folder``, printed; its exit code and response."""
    response = render.for_person(overview.status(run.home, _caller(folder)), run.command)
    if response.get("success") and _in_no_project(response):
        response = {**response, "reason": _nowhere(run, folder)}
    return run.emit(response, lambda r: "\n\n".join(filter(None, [render.format_status(r), r.get("reason")]))), response


def cmd_quickstart(run: _Run) -> int:
    query = " ".join(run.args.query).strip()
    real = not run.args.demo and paths.state_db_path(run.home).is_file()
    if real:
        _folder(None)  # one deleted since is said before state.db is read (its reader makes its WAL index)
    if real and _had_a_session(run.home):
        if query:
            return _search_here(run, query)
        code, response = _status(run, _folder(None))
        # From a folder in no project, searching "it" finds nothing: the lines above say what to do instead.
        if not run.args.json and response.get("success") and not response.get("reason"):
            run.out.print(f"\nNext: search it, e.g.  {run.command} search 'what did we decide about X'")
        return code
    try:
        info, built = demo.ensure()
    except PluginError as exc:
        return run.emit(exc.envelope(), render.format_message)
    demo_run = dataclasses.replace(run, home=Path(info["home"]))
    text = not run.args.json
    why = "you asked for the demo" if run.args.demo else _no_history(run.home)
    made = "built it just now with Hermes's own SessionDB" if built else "built on an earlier run, reused"
    if text:
        run.out.print(f"Using the demo home at {demo_run.home} ({why}; {made}).")
    # Index it up front (seconds, offline) so every demo search shows hybrid results; a reused
    # home has nothing new, and then there is nothing to say.
    indexed = _indexed(demo_run, Caller(), every=True)
    if text and not indexed.get("success"):
        run.out.print(indexed["error"])  # every failed response says why
    elif text and _index_changed(indexed):
        run.out.print(render.format_index(indexed))
    folder = str(Path(info["work"]) / demo.MAIN_PROJECT)
    if text:
        run.out.print(f"The searches below run in the demo's main project, "
                      f"{demo.EXPLICIT_PROJECTS[demo.MAIN_PROJECT]}, from its folder {folder}.\n")
    responses = []
    for q in ([query] if query else DEMO_QUERIES):
        response = demo_run.search(Caller(cwd=folder), {"query": q, "context": 1})
        responses.append(response)
        if text:
            run.out.print(f"$ cd {shlex.quote(folder)} && {demo_run.command} search {shlex.quote(q)}")
            run.out.print(render.format_search(response, run.out.style(), demo_run.one_shot)
                          if response.get("success") else response["error"])
            if response.get("success") and not response.get("results"):
                run.out.print(_demo_holds(demo.MAIN_PROJECT))
            run.out.print()
    hermes = f"{_hermes(demo_run.home)} recall status {shlex.quote(folder)}"
    best = min(responses, key=errors.exit_code)  # one search that found something: the demo did its work
    if text:
        run.out.print(f"The plugin is enabled in the demo home, so Hermes finds it there too: {hermes}")
    else:
        run.out.json({"success": True, "outcome": best["outcome"], "demo_home": str(demo_run.home),
                      "built_now": built, "indexed": indexed, "searched_from": folder, "searches": responses,
                      "hermes": hermes})
    return errors.exit_code(best)


def _had_a_session(home: Path) -> bool:
    """Whether Hermes has had a session in ``home``: its state.db holds one (``hermes`` opened and quit
    before a word makes the file, with none in it). One that cannot be read for another reason
    (damaged, locked) counts, so that the command says what is wrong with it."""
    try:
        with reading(paths.state_db_path(home)) as (conn, _shape):
            return conn.execute("SELECT 1 FROM sessions LIMIT 1").fetchone() is not None
    except StateDBError as exc:
        return exc.code not in ("missing", "empty")


def _no_history(home: Path) -> str:
    """Why the demo is searched: a home Hermes made (``hermes project create`` makes one) but never
    ran a session in is there, only without sessions."""
    db = paths.state_db_path(home)
    if db.is_file():
        return f"the Hermes home at {home} has no sessions yet: its {db.name} holds none"
    if home.is_dir():
        return f"the Hermes home at {home} has no sessions yet: no {db.name}"
    if home.exists():
        return f"the Hermes home {home} is a file, not a folder"
    return f"there is no Hermes home at {home}"


def _demo_holds(project: str) -> str:
    """After a question of a person's own found nothing in the demo: it holds only a few short
    sessions, which "Nothing found." alone does not say."""
    held = demo.titles(project)
    return (f"The demo's project {demo.EXPLICIT_PROJECTS[project]} holds only {len(held)} short sessions: "
            f"{'; '.join(held)}. Ask about one of them, or run without a query to see the demo's own searches.")


def _search_here(run: _Run, query: str) -> int:
    """The first search in a real home: this folder's project, or, when the folder is in none, the
    home's largest project, saying so."""
    folder = _folder(None)
    request = {"query": query, "context": 1}
    response = run.search(_caller(folder), request)
    largest = _live_projects(run.home)[:1] if response.get("success") and _in_no_project(response) else []
    if largest and largest[0]["sessions"]:
        main = largest[0]
        response = run.search(_caller(folder), {**request, "project": main["id"]})
        response["searched_instead"] = (
            f"{folder} is in no project of {run.home}; searched its largest project, {main['name']}, instead "
            f"(the others: {run.command} projects; pick one with --project NAME).")
        if not run.args.json:
            run.out.print(response["searched_instead"])
    elif largest or _in_no_project(response):
        return run.emit({**response, "reason": _nowhere(run, folder)}, lambda r: r["reason"])
    return run.emit(response, lambda r: render.format_search(r, run.out.style(), run.one_shot))


def _index_changed(response: dict) -> bool:
    """Whether an index run brought anything up to date."""
    totals = response.get("totals") or {}
    return bool((response.get("keyword") or {}).get("sessions_updated") or response.get("skipped_for_consent")
                or any(totals.get(k) for k in ("messages_embedded", "messages_removed", "messages_changed",
                                               "deleted_sessions_dropped")))


# When stderr is not a terminal (a log, CI), a line after this long and as often again: a long run
# is not silent, a short one (the demo's) says nothing.
PROGRESS_EVERY_S = 30.0
# An index estimated to take longer than this is announced before it starts (a first index with e5).
LONG_INDEX_S = 30


def _indexed(run: _Run, caller: Caller, project: str | None = None, every: bool = False) -> dict:
    """``indexing.run`` with a progress bar on a terminal, and a line now and then elsewhere."""
    on_terminal = terminal.takes_escapes(sys.stderr)
    drawn = []
    last = time.monotonic()

    def progress(stage: str, name: str, done: int, total: int, p) -> None:
        nonlocal last
        rate = p.chunks / p.embed_seconds if p is not None and p.embed_seconds else 0.0
        counts = (done, total, p.messages if p else 0, p.chunks if p else 0, rate)
        if on_terminal:
            columns = terminal.columns(sys.stderr)  # where the line is drawn
            run.out.progress(render.progress_bar(f"{name} ({stage})", *counts, columns=columns))
            drawn.append(True)
        elif time.monotonic() - last >= PROGRESS_EVERY_S:
            run.out.note(render.progress_bar(f"indexing {name} ({stage})", *counts, columns=120))
            last = time.monotonic()

    def estimate(e: dict) -> None:
        # Worth a line only before a wait a person would wonder about (a first index with e5).
        if run.args.json or (e.get("estimated_seconds") or 0) < LONG_INDEX_S:
            return
        if drawn:  # the keyword index's bar: the note takes its place
            run.out.progress(None, keep=False)
            drawn.clear()
        run.out.note(f"Indexing {render.estimate_text(e)}; Ctrl-C stops, the next run resumes.")

    def waiting() -> None:
        run.out.note("another index run is under way in this home: waiting for it, then doing only what it "
                     "leaves undone")

    finished = False
    try:
        response = indexing.run(run.home, caller, project=project, every=every,
                                on_progress=None if run.args.json else progress, grant_command=run.command,
                                on_wait=waiting, on_estimate=estimate)
        finished = True
        return response
    finally:
        # A finished run's last bar (one project's, "Webshop v2 (semantic) 1/1", even when nothing was
        # indexed) gives way to the summary; an interrupted one's stays, to show where it stopped, and
        # what follows starts on a line of its own.
        if drawn:
            run.out.progress(None, keep=not finished)


def cmd_index(run: _Run) -> int:
    a = run.args
    if a.all and (a.project or a.dir):
        # Either may be what was meant, and --all is the larger run by far (hours with e5).
        raise UsageError(f"give --all or a project ({'--project ' + shlex.quote(a.project) if a.project else a.dir}), not both")
    caller = _caller(_folder(a.dir))
    if not (a.project or a.all) and _in_no_project(overview.status(run.home, caller)):
        raise UsageError(f"{caller.cwd} is in no project: give --project NAME ({_names_to_pick(run.home)}) or --all")
    return run.emit(_indexed(run, caller, _project(a.project), a.all), render.format_index)


# -- settings and consents -------------------------------------------------------------------
def config_report(home: Path) -> dict:
    """The effective settings with where each came from; the key only as set/not set."""
    settings = config.load(home)
    records, consent_warnings = consent.records(home)
    remote, service, model = embedders.identity(settings)
    leaves = {key: settings.value(key) for key in settings.origins}
    return {
        "success": True,
        "outcome": errors.DONE,
        "hermes_home": str(home),
        "profile": paths.profile_name(home),
        "sources": list(settings.sources),
        "settings": settings.values(),
        "origins": dict(settings.origins),
        "values": leaves,
        "secrets": {"openai.api_key": envfile.describe(home, settings.openai.api_key_env, host.environment(home, host.managed_folder()))},
        "embedder": {"remote": remote, "service": service, "model": model,
                     "consent_needed": remote},
        # ``values`` holds blend_weight as set (null: the model's own); this is the weight hybrid uses.
        "blend_weight_in_effect": embedders.blend_weight(settings),
        "consents": len(records),
        "warnings": [*_not_a_home(home, "these are the defaults"), *settings.warnings, *consent_warnings],
        "plugin_config": str(config.plugin_config_path(home)),
    }


def _not_a_home(home: Path, so: str) -> list[str]:
    """A warning for a command that reads only the plugin's settings, which would otherwise show what
    it found (the defaults, no consent) of a home that is not there, as of one that is."""
    why = absent(home)
    return [f"{why} No Hermes home is read there: {so}."] if why else []


def cmd_consent(run: _Run) -> int:
    action = getattr(run.args, "consent_command", None)
    if action == "list":
        listed = consenting.listing(run.home)
        listed["warnings"] = [*_not_a_home(run.home, "no consent can be on record"), *listed["warnings"]]
        return run.emit(listed, render.format_consents)
    if action != "grant":
        run.out.error(f"say what to do: consent list, or consent grant [DIR] [--project P] "
                      f"(see {run.args.prog} consent --help)")
        return EXIT_USAGE

    def confirm(described: dict) -> bool:
        """The yes/no question, asked only on a terminal, where the person reads it (stderr) and answers it."""
        if not (terminal.is_terminal(sys.stdin) and terminal.is_terminal(sys.stderr)):
            raise UsageError(f"nothing recorded: add --yes to agree without a prompt "
                             f"({described['would_send']['messages']:,} messages of "
                             f"'{described['project']['name']}' to {described['service']})")
        question = consent_words.described(described)["ask_user"].replace("Hermes would send", "this would send")
        return run.out.ask(question, "Agree? [y/N] ") in ("y", "yes")

    response = consenting.grant_for_person(run.home, _caller(_folder(run.args.dir)), _project(run.args.project),
                                           None if run.args.yes else confirm)
    return run.emit(consent_words.in_response(response, consent_words.described), render.format_message)


COMMANDS = {
    "index": cmd_index,
    "search": cmd_search,
    "status": cmd_status,
    "projects": lambda run: run.emit(overview.list_projects(run.home), render.format_projects),
    "quickstart": cmd_quickstart,
    "move": lambda run: run.emit(move.run(run.home, Caller(), {"session": run.args.session,
                                                                "project": _project(run.args.project)}),
                                 render.format_move),
    "session": lambda run: run.emit(overview.session_info(run.home, run.args.session), render.format_session),
    "config": lambda run: run.emit(config_report(run.home), render.format_config),
    "consent": cmd_consent,
}


def dispatch(home: Path, args: argparse.Namespace) -> int:
    prog = getattr(args, "prog", "") or "project-history-recall"
    out = render.Output(home, prog)
    command = COMMANDS.get(getattr(args, "recall_command", None) or "")
    if command is None:
        out.error("say what to do: search, status, projects, index, move, session, quickstart, config or "
                  f"consent (see {prog} --help)")
        return EXIT_USAGE
    run = _Run(home, args, out)
    with _stoppable():
        try:
            return _run(run, command)
        finally:
            # Run as root (sudo) on another user's home: what it made there is that user's.
            owner.give_back(paths.data_dir(home), paths.state_db_path(home), home)


class _Stopped(BaseException):
    """SIGTERM or SIGHUP arrived: the command ends as a Ctrl-C ends it."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


# Signals that end a command the way a Ctrl-C does. Left to their default, they ended the process
# where it stood: ``timeout``, systemd and a closed terminal stopped an ``index --all`` without a
# word, and what a root command had made in another user's home stayed root's.
_STOPPING = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))


@contextmanager
def _stoppable() -> Iterator[None]:
    """For the block, SIGTERM and SIGHUP raise ``_Stopped`` where the command stands, so that its
    ``finally`` blocks run. A second such signal meets the default again and ends the process at
    once; a signal the caller ignores (``nohup``) stays ignored."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum, _frame):
        signal.signal(signum, signal.SIG_DFL)
        raise _Stopped(signum)

    before = {sig: signal.getsignal(sig) for sig in _STOPPING}
    for sig, handler in before.items():
        if handler is not signal.SIG_IGN:
            signal.signal(sig, stop)
    try:
        yield
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)


def _run(run: _Run, command) -> int:
    """``command``'s exit code, whatever stops it."""
    try:
        return command(run)
    except KeyboardInterrupt:
        run.out.error("interrupted" + _kept(run))
        return 130
    except _Stopped as exc:
        run.out.error(f"stopped by {signal.Signals(exc.signum).name}" + _kept(run))
        return 128 + exc.signum
    except BrokenPipeError:
        # The reader stopped early (`… | head`) while a command printed more than one answer
        # (``quickstart``'s searches): what it wanted was printed. Python would report the pipe again
        # when it flushes stdout at exit.
        render.silence(sys.stdout)
        return EXIT_FOUND
    except render.OutputLost as exc:  # not a bug of ours: said where it still can be
        run.out.error(f"could not write the answer to the standard output: {exc}")
        return EXIT_DATA
    except Exception as exc:  # a PluginError raised before the library was called (a bad --dir), or a bug
        prog = getattr(run.args, "prog", "") or "project-history-recall"
        return run.emit(edge.failure(run.home, exc, f"{prog} {run.args.recall_command}"), render.format_message)


def _kept(run: _Run) -> str:
    """What an interrupted command leaves, where that is news: an index run keeps every batch it
    committed, and the next run goes on from there."""
    if getattr(run.args, "recall_command", None) != "index":
        return ""
    return "; what it indexed is kept, and the same command run again goes on from there"


def run_from_hermes(args: argparse.Namespace) -> None:
    """``hermes recall …``: Hermes has already chosen the profile's home."""
    raise SystemExit(dispatch(paths.hermes_home(), args))


def main(argv: list[str] | None = None) -> int:
    parser = Parser(prog="project-history-recall", description=DESCRIPTION)
    setup_parser(parser, standalone=True)
    args = parser.parse_args(argv)
    if args.home and args.profile:
        parser.error("give --home or --profile, not both")
    if args.home:
        try:
            home = _expanded(args.home)
        except UsageError as exc:
            parser.error(f"--home: {exc}")
    elif args.profile:
        named = paths.profile_home(args.profile)
        if named is None:
            parser.error(f"'{args.profile}' is not a profile name (lower-case letters, digits, - and _)")
        elif not named.is_dir():
            parser.error(f"no Hermes profile '{args.profile}' at {named}")
        home = named
    elif (sticky := paths.sticky_profile()) is not None:
        # `hermes profile use work`: `hermes recall` reads work, and so must this command.
        named = paths.profile_home(sticky)
        if named is None or not named.is_dir():
            parser.exit(EXIT_DATA, f"{parser.prog}: the profile {sticky!r} that `hermes profile use` made the "
                                   f"default is not there ({named or 'not a profile name'}); switch back with: "
                                   "hermes profile use default, or give --profile NAME\n")
        home = named
    else:
        home = paths.hermes_home()
    return dispatch(home, args)


if __name__ == "__main__":
    raise SystemExit(main())
