"""What a person reads: every response as text, the same on the command line and in ``/recall``.

The responses are the library's dicts (``search.run``, ``move.run``,
``overview``, ``indexing.run``, ``consenting``); nothing here decides or
looks anything up. ``Output`` is the one place the command line writes, and
``/recall`` returns ``scrubbed`` text: in both, the remote embedder's API key
is masked and terminal control characters are escaped (``terminal``), whatever
the searched history or an error message holds.
"""

from __future__ import annotations

import codecs
import json
import os
import shlex
import sys
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from .. import results
from .. import settings as config
from ..errors import counted
from ..hits import TIME
from ..files import envfile
from ..keyword.engine import from_hermes
from . import consent_words, terminal

class Style:
    """Colours in a terminal (unless NO_COLOR is set and not empty, or TERM=dumb), plain marks elsewhere.
    Colours are placed through the terminal's ``Screen``: any other escape sequence is shown as text there."""

    def __init__(self, screen: terminal.Screen | None = None):
        self.screen = screen

    @classmethod
    def for_stream(cls, stream, screen: terminal.Screen) -> "Style":
        return cls(screen if terminal.takes_escapes(stream) and not os.environ.get("NO_COLOR") else None)

    def _sgr(self, code: str, text: str) -> str:
        return f"{self.screen.sgr(code)}{text}{self.screen.sgr('0')}" if self.screen else text

    def mark(self, text: str) -> str:
        on, off = (self.screen.sgr("1;33"), self.screen.sgr("0")) if self.screen else ("«", "»")
        return text.replace(results.MARK_OPEN, on).replace(results.MARK_CLOSE, off)

    def dim(self, text: str) -> str:
        return self._sgr("2", text)

    def bold(self, text: str) -> str:
        return self._sgr("1", text)


def project_label(project: dict) -> str:
    if project.get("kind") == "home":
        return "no project (home bucket)"
    kind = "project" if project.get("kind") == "explicit" else "automatic project"
    return f"{kind} {project.get('name')} ({project.get('id')})"


@dataclass(frozen=True)
class OneShot:
    """A process that ends after one command (the CLI): nothing goes on in the background and
    there is no next search, so a message says what it did and the command that finishes."""

    command: str  # how to run the program again, on the same home
    waited_s: int  # how long a search waits for the model and the index


def _finish(response: dict, one_shot: OneShot) -> str:
    """The command that indexes the rest of the response's project."""
    project = (response.get("project") or {}).get("id")
    return f"to index the rest, run: {one_shot.command} index --project {shlex.quote(str(project))}"


def _unfinished(response: dict, one_shot: OneShot | None) -> str | None:
    """For a one-shot process, what replaces "continues in the background" / "on the next search"
    (None: say what the tool says)."""
    if one_shot is None or response.get("semantic_status") not in ("indexing", "partial"):
        return None
    index = response.get("semantic_index") or {}
    finish = _finish(response, one_shot)
    if "sessions" not in index:
        return f"the embedding model was not ready within the {one_shot.waited_s} s this command waits; {finish}"
    return (f"{index.get('sessions_indexed', 0)} of {index['sessions']} sessions indexed within the "
            f"{one_shot.waited_s} s this command waits; {finish}")


def _warnings(response: dict, one_shot: OneShot | None) -> list[str]:
    """The response's warnings; for a one-shot process, the keyword index's, which says its build goes
    on "meanwhile" (it ends with the process), says how far it got and the command that finishes."""
    said = response.get("warnings", [])
    if one_shot is None or response.get("keyword_status") != "indexing":
        return said
    index = response.get("keyword_index") or {}
    unfinished = (f"keyword index: {index.get('sessions_indexed', 0)} of {index.get('sessions', '?')} sessions "
                  f"indexed when this command searched; {from_hermes(meanwhile=False)}; {_finish(response, one_shot)}")
    # The keyword side's warning is its keyword_reason, word for word (``keyword.Source``).
    return [unfinished if w == response.get("keyword_reason") else w for w in said]


# What the last word of a hit's line (``score_source``) means, where it varies: a newcomer at the
# terminal reads "· both" with nothing else to explain it.
_LEGEND = "; each hit ends with the engine that found it, or both"


def _mixed(response: dict) -> bool:
    """Whether the results may each have been found by either engine: hybrid mode, both engines ran."""
    return response.get("searched_with") == "keyword+semantic" and bool(response.get("results"))


def format_search(response: dict, style: Style, one_shot: OneShot | None = None) -> str:
    lines = []
    searched = response.get("sessions_in_scope", 0)
    scope = f"{project_label(response['project'])}, {searched} session{'' if searched == 1 else 's'} searched"
    lines.append(style.bold(f"“{response.get('query', '')}” in {scope}"))
    used = response.get("searched_with", response.get("mode"))
    line = f"mode {response.get('mode')} (searched with {used}{_LEGEND if _mixed(response) else ''})"
    # Keyword mode never asks the semantic side, nor does a question of a time alone (its sessions are
    # found by their times): what it says of the model's loading would be about no search of this one.
    if response.get("mode") != "keyword" and used != TIME:
        reason = _unfinished(response, one_shot) or response.get("semantic_reason")
        line += f"; semantic: {response.get('semantic_status')}" + (f" — {reason}" if reason else "")
    lines.append(style.dim(line))
    lines += [f"warning: {w}" for w in _warnings(response, one_shot)]
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
        _hit_lines(lines, hit, style)
        more = hit.get("more_hits", [])
        for other in more:
            lines.append(f"    also {other.get('when', '')} · {other.get('role')} · {other.get('score_source')}")
            _hit_lines(lines, other, style)
        ids = ", ".join(str(h["message_id"]) for h in [hit, *more])
        lines.append(style.dim(f"    {hit['link']} · message{'s' if more else ''} {ids}"))
    return "\n".join(lines)


def _hit_lines(lines: list[str], hit: dict, style: Style) -> None:
    """One message of a result: its snippet, then the messages around it."""
    lines.append(f"    {style.mark(hit.get('snippet', ''))}")
    for ctx in hit.get("context", []):
        if ctx.get("hit"):
            continue
        lines.append(style.dim(f"      {ctx['role']}: {ctx['text'][:160]}"))


def duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def estimate_text(estimate: dict) -> str:
    """``indexer.estimate`` for a person: how much is left to embed, and about how long it takes."""
    text = f"~{estimate['chunks_pending']:,} chunks to embed"
    if estimate.get("estimated_seconds") is not None:
        text += (f", about {duration(estimate['estimated_seconds'])} at ~{estimate['chunks_per_second']:,.0f} "
                 "chunks/s")
    return text


def _index_line(response: dict, side: str) -> str:
    """The ``status`` line of the ``side`` ("keyword", "semantic") index."""
    parts = [response[f"{side}_status"]]
    index = response.get(f"{side}_index")
    if isinstance(index, dict) and "sessions" in index:
        parts.append(f"{index.get('sessions_indexed', 0)}/{index['sessions']} sessions indexed")
        if index.get("chunks_pending"):
            parts.append(estimate_text(index))
    if response.get(f"{side}_reason"):
        parts.append(response[f"{side}_reason"])
    return " — ".join(parts)


_JOURNAL = {
    "wal": "WAL journal (reads never block Hermes's writer)",
    "rollback": "rollback journal (a read blocks Hermes's writer while it runs; each read is kept to milliseconds)",
}


def format_status(response: dict) -> str:
    rows = [
        ("folder", response.get("folder") or "-"),
        ("project", project_label(response["project"])),
        ("attributed by", response.get("attributed_by")),
        ("in scope", f"{counted(response['sessions_in_scope'], 'session')}, "
                     f"~{counted(response['messages_in_scope'], 'message')}"),
        ("keyword", _index_line(response, "keyword")),
        ("semantic", _index_line(response, "semantic")),
        ("state.db", _JOURNAL.get(response.get("journal_mode") or "", "-")),
        ("hermes home", f"{response['hermes_home']} (profile {response['profile']})"),
    ]
    asked = response.get("consent")
    if isinstance(asked, dict) and asked.get("how_to_record"):
        rows.insert(6, ("to agree", asked["how_to_record"]))
    rows += [("warning", w) for w in response.get("warnings", [])]
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
    lines += [f"warning: {w}" for w in response.get("warnings", [])]
    return "\n".join(lines)


def format_move(response: dict) -> str:
    if not response.get("moved"):
        return "\n".join([response["message"], *(f"     note: {n}" for n in response.get("notes", []))])
    lines = [response["message"]]
    rows = [("session", f"{response['session_id']}  {response.get('title') or ''}".rstrip()),
            ("from", project_label(response["previous_project"])),
            ("to", project_label(response["project"])),
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
        ("project", project_label(response["project"])),
        ("attributed by", response.get("attributed_by")),
        ("folder", response.get("cwd") or "-"),
        ("git root", response.get("git_repo_root") or "-"),
    ]
    for m in response.get("moves", []):
        rows.append(("moved", f"{m['when']}: {project_label(m['from'])} -> {project_label(m['to'])}"
                              f" ({m.get('from_cwd') or '-'} -> {m.get('to_cwd') or '-'})"))
    return "\n".join(f"{k:>14}: {v}" for k, v in rows)


def format_config(response: dict) -> str:
    lines = [f"Settings for {response['hermes_home']} (profile {response['profile']})",
             f"  sources, later ones win: {' < '.join(response['sources'])}", ""]
    width = max(len(k) for k in response["values"])
    for key, value in response["values"].items():
        shown = json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else value
        if key == "blend_weight" and value is None:
            shown = f"the model's own ({response['blend_weight_in_effect']})"
        elif key == "openai.dimensions" and value is None:
            shown = "the model's own"  # nothing is asked for; the endpoint answers with its full size
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


def for_person(response: dict, command: str) -> dict:
    """A search or status response as a person sees it: a consent request names the command
    that grants it, never the agent's token."""
    return consent_words.in_response(response, lambda asked: consent_words.for_person(asked, command))


def format_index(response: dict) -> str:
    lines = []
    kw = response.get("keyword")
    if kw:
        lines.append(f"Keyword index: {kw['sessions_updated']:,} of {kw['sessions']:,} sessions brought up to date "
                     f"in {kw['index']}")
        if kw.get("rebuilt"):
            lines.append(f"  {kw['rebuilt']}")
    if response.get("semantic_status") != "ready":
        lines.append(f"Semantic index: not built: {response.get('semantic_reason')}")
    elif response["projects"]:
        totals = response["totals"]
        rate = totals["chunks_embedded"] / totals["embed_seconds"] if totals["embed_seconds"] else 0.0
        lines.append(f"Indexed {len(response['projects'])} project(s), {totals['sessions']:,} sessions with "
                     f"{response['model_name']} into {response['index']}")
        lines.append(f"  {_index_work(totals, rate)}; {totals['seconds']:.1f} s")
        if response.get("rebuilt"):
            lines.append(f"  {response['rebuilt']}")
    if response.get("repaired"):
        lines.append(f"Repaired: {response['repaired']}")
    for item in response.get("skipped_for_consent", []):
        done = "Stopped" if "sent_before_withdrawal" in item else "Skipped"
        lines.append(f"{done} {item['project']['name']}: {item['reason']}. To agree: {item['how_to_record']}")
    return "\n".join(lines)


def _index_work(totals: dict, rate: float) -> str:
    """What an index run did. The removals and re-embeddings only when there were some: a first
    run's line of "removed 0 … 0 … 0" read as something having gone wrong."""
    done = [f"embedded {totals['messages_embedded']:,} messages as {totals['chunks_embedded']:,} chunks "
            f"({rate:,.0f} chunks/s)"]
    if totals["messages_removed"]:
        done.append(f"removed {totals['messages_removed']:,} deleted messages")
    if totals["messages_changed"]:
        done.append(f"re-embedded {totals['messages_changed']:,} changed messages")
    if totals["deleted_sessions_dropped"]:
        done.append(f"dropped the vectors of {totals['deleted_sessions_dropped']:,} deleted sessions")
    return "; ".join(done)


def progress_bar(label: str, done: int, total: int, messages: int = 0, chunks: int = 0,
                 rate: float = 0.0, columns: int = 80) -> str:
    """One line of at most ``columns - 1`` columns of the terminal (a full-width line wraps in some
    terminals, and every redraw then starts a new line; a Chinese character takes two). What gives
    way first: the rates, then the bar, and only then the label."""
    room = max(columns - 1, 1)
    wide = terminal.cells(label)
    sessions = f" {done:,}/{total:,} sessions"
    rates = f" · {messages:,} messages · {chunks:,} chunks · {rate:,.0f} chunks/s" if messages or chunks else ""
    counts = next((c for c in (sessions + rates, sessions) if wide + len(c) + 7 <= room), f" {done:,}/{total:,}")
    width = min(24, room - wide - len(counts) - 3)
    bar = ""
    if width >= 4:
        filled = int(width * done / total) if total else width
        bar = f" [{'#' * filled}{'.' * (width - filled)}]"
    if wide + len(bar) + len(counts) > room:
        label = terminal.cut(label, room - len(counts) - 1) + "…"
    return terminal.cut(f"{label}{bar}{counts}", room)  # a terminal narrower than the counts


def _consent_line(c: dict) -> str:
    p = c["project"]
    return (f"  {p.get('name') or p['id']} ({p['kind']} {p['id']}) -> {c['model']} at "
            f"{c['service']}; {c.get('granted_at', '?')}, {c.get('granted_by', '?')}")


def format_consents(response: dict) -> str:
    if not response["consents"]:
        lines = ["No consents on record."]
    else:
        lines = [f"Consents on record in {response['file']}:"]
        lines += [_consent_line(c) for c in response["consents"]]
    if response["withdrawn"]:
        lines.append("Marked withdrawn by hand, so not counting (nothing of these is sent on them):")
        lines += [_consent_line(c) for c in response["withdrawn"]]
    lines += [f"  warning: {w}" for w in response["warnings"]]
    lines.append(response["note"])
    return "\n".join(lines)


def format_message(response: dict) -> str:
    return response["message"]


def scrubbed(home: Path, text: str) -> str:
    """``text`` without the configured remote embedder's key (or any long piece of it), its
    terminal control characters escaped."""
    return terminal.shown(config.scrub_configured(home, text))


class OutputLost(Exception):
    """A write to stdout refused by the file behind it (a full disk, a quota, an I/O error): what the
    command had to say is lost, whatever it did."""

    def __init__(self, cause: OSError):
        super().__init__(cause.strerror or str(cause))


def silence(stream) -> None:
    """Point ``stream``'s file at /dev/null, once it refused a write or its reader left, so that
    Python's flush at exit does not fail on the same bytes again and print a traceback."""
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, stream.fileno())
    finally:
        os.close(null)


class Output:
    """The one place the command line writes to stdout and stderr, so neither the key scrub nor
    the escaping of control characters can be missed: the key is looked up once per command
    (it is read from ``.env`` or the environment at request time, never kept on an object that
    could print it)."""

    def __init__(self, home: Path, prog: str = "project-history-recall"):
        self._key = config.configured_key(home)
        self._screen = terminal.Screen()
        self._prog = prog  # as the person typed it: `hermes recall` or the standalone script

    def _safe(self, text: str) -> str:
        return self._screen.shown(envfile.scrub_key(text, self._key))

    def _write(self, stream, text: str, start: str = "", end: str = "") -> None:
        if stream is None:  # closed when the command started (`>&-`): Python's own print writes nothing then
            return
        try:
            stream.write(_encodable(stream, start + self._safe(text) + end))
            stream.flush()
        except OSError as exc:
            # A full disk, a quota, an I/O error, a reader gone. Without its progress and notes the
            # command can still do its work and end with its own code; without its answer it has
            # nothing to give, and stops.
            silence(stream)
            if stream is sys.stdout:
                if isinstance(exc, BrokenPipeError):
                    raise  # the reader stopped early (`… | head`): nothing to say, and no one to say it to
                raise OutputLost(exc) from exc

    def print(self, text: str = "") -> None:
        self._write(sys.stdout, text + "\n")

    def json(self, response: dict) -> None:
        # default=str: a date a person wrote in config.yaml unquoted is a date to YAML (``consent list``).
        # JSON is read as UTF-8 (RFC 8259, jq): where stdout writes another encoding (a GB18030 or
        # Latin-1 locale), \uXXXX escapes, plain ASCII there, read back as the same JSON.
        self.print(json.dumps(response, ensure_ascii=not _writes_utf8(sys.stdout), indent=2, default=str))

    def error(self, text: str) -> None:
        self._write(sys.stderr, f"{self._prog}: {text}\n")

    def note(self, text: str) -> None:
        """A line of progress on stderr, for a log as much as a terminal."""
        self._write(sys.stderr, text + "\n")

    def progress(self, line: str | None, keep: bool = True) -> None:
        """A progress line redrawn in place on stderr (cleared to the end, since it may have
        shrunk; the carriage return and that clearing are the only control sequences it lets
        through); None ends it, leaving its last state on screen or, ``keep`` False, erasing it."""
        if line is None:
            self._write(sys.stderr, "\n" if keep else "", start="" if keep else "\r", end="" if keep else "\033[K")
        else:
            self._write(sys.stderr, line, start="\r", end="\033[K")

    def ask(self, question: str, prompt: str) -> str:
        """A yes/no question on the terminal, on stderr: stdout may go to a pipe or a file (``--json |
        jq``), where the person would never see the question, and it would spoil the answer there. The
        answer, lower case ("" at end of input), NFKC-folded: a Chinese input method left in full-width
        mode types ``ｙ`` for y."""
        self._write(sys.stderr, f"{question}\n{prompt}")
        try:
            return unicodedata.normalize("NFKC", input()).strip().lower()
        except EOFError:
            return ""

    def style(self) -> Style:
        return Style.for_stream(sys.stdout, self._screen)


def _writes_utf8(stream) -> bool:
    try:
        return codecs.lookup(getattr(stream, "encoding", None) or "utf-8").name == "utf-8"
    except LookupError:
        return False


def _encodable(stream, text: str) -> str:
    """``text`` as ``stream`` can write it: a character its encoding lacks (a Latin-1 or ASCII locale,
    ``PYTHONIOENCODING``, a Windows code page) becomes a backslash escape, as Python writes it on stderr,
    instead of an error that loses the whole answer."""
    encoding = getattr(stream, "encoding", None) or "utf-8"
    try:
        text.encode(encoding)
    except UnicodeEncodeError:
        return text.encode(encoding, "backslashreplace").decode(encoding)
    except LookupError:  # an encoding Python does not know cannot have been set on a stream
        pass
    return text
