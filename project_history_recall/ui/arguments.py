"""The command line's arguments: what ``hermes recall`` and ``project-history-recall`` accept.

Apart from the commands (``cli``) because Hermes builds its parser, this one included, every
time it starts: the parser needs the settings' limits, the commands need the engines.
"""

from __future__ import annotations

import argparse
import difflib
import sys
import types
from typing import Any, NoReturn
from pathlib import Path

from .. import settings as config
from ..errors import EXIT_USAGE
from ..version import __version__

DESCRIPTION = (
    "Search earlier Hermes sessions of the project a folder belongs to, by keyword and by meaning."
)


def _usage_error(parser: argparse.ArgumentParser, message: str) -> NoReturn:
    """One line on stderr naming the command as the person typed it (argparse prints the usage block too)."""
    parser.exit(EXIT_USAGE, f"{parser.prog}: {message}{_dash_hint(parser, message)} (see {parser.prog} --help)\n")


def _dash_hint(parser: argparse.ArgumentParser, message: str) -> str:
    """argparse reads every word that starts with ``-`` as an option, so a query, session id or title
    that does (``search -v``, ``session -x``) was refused as an unknown option, or left the argument
    "required" though the person gave it: how to pass one, where that may be what happened."""
    words = [a for a in parser._actions if not a.option_strings and a.nargs != argparse.PARSER]
    unknown = [w for w in message.split(":", 1)[1].split() if w.startswith("-")] \
        if message.startswith("unrecognized arguments:") else []
    # "Required" after no such word: the argument was left out (``move SESSION`` without the project).
    if not words or not (unknown or message.startswith("the following arguments are required:")
                         and _taken_for_options(parser)):
        return ""
    # An option's name mistyped (``consent grant --dir X``) is likelier than a value that starts with '-'.
    options = [o for a in parser._actions for o in a.option_strings if o.startswith("--")]
    named = unknown[0].split("=", 1)[0] if unknown and unknown[0].startswith("--") else ""
    close = difflib.get_close_matches(named, options, n=1) if named else []
    mistyped = (f"; {named} is no option of {parser.prog}" + (f" (did you mean {close[0]}?)" if close else "")
                if named else "")
    return f"{mistyped}; a {words[0].dest} that starts with '-' goes after '--', as in: {parser.prog} -- -x"


def _taken_for_options(parser: argparse.ArgumentParser) -> bool:
    """Whether a word given to ``parser`` before any ``--`` starts with '-' and is none of its options."""
    given = getattr(parser, "_words_given", [])
    before = given[:given.index("--")] if "--" in given else given
    options = {o for a in parser._actions for o in a.option_strings}
    return any(w.startswith("-") and w != "-" and w.split("=", 1)[0] not in options for w in before)


def _parse_strictly(parser: argparse.ArgumentParser, args=None, namespace=None):
    """Unknown arguments are refused by the (sub)command they were given to. Left over, they would reach
    the top-level parser, which under ``hermes recall`` is Hermes's: it prints its whole usage."""
    parser._words_given = list(sys.argv[1:] if args is None else args)  # type: ignore[attr-defined]
    namespace, extras = argparse.ArgumentParser.parse_known_args(parser, args, namespace)
    if extras:
        _usage_error(parser, f"unrecognized arguments: {' '.join(extras)}")
    return namespace, extras


class Parser(argparse.ArgumentParser):
    """Usage errors in one line on stderr, exit code 2."""

    error = _usage_error
    parse_known_args = _parse_strictly


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


def _given(text: str) -> str:
    """An argparse type for a value that names something: blank is refused, not read as the option left
    out. ``--project "$PROJ"`` with the variable unset would otherwise search (or index, or move into)
    the current folder's project, ``--home ""`` read the current folder as a home, without a word."""
    if not text.strip():
        raise argparse.ArgumentTypeError("is empty (an unset variable?): give a value, or leave it out")
    return text


def _home(text: str) -> Path:
    return Path(_given(text))


def _add_global_options(p: argparse.ArgumentParser, standalone: bool, top: bool) -> None:
    """Options that go before or after the subcommand.

    On the subcommands their default is SUPPRESS, so an option given before
    the subcommand is not overwritten by the subcommand's default."""
    unset: dict[str, Any] = {} if top else {"default": argparse.SUPPRESS}
    if top:  # what a bug report needs first
        p.add_argument("--version", action="version", version=f"project-history-recall {__version__}")
    if standalone:
        p.add_argument("--home", type=_home, help="Hermes home to read (default: $HERMES_HOME or ~/.hermes)", **unset)
        p.add_argument("--profile", "-p", type=_given, **unset,
                       help="Hermes profile to read: default, or one under ~/.hermes/profiles/ (-p as in hermes -p)")
    else:  # the README's --home is the standalone command's: said so, not left to read as a command or a query
        p.add_argument("--home", nargs="?", action=_NoHome, help=argparse.SUPPRESS)
    p.add_argument("--json", action="store_true", help="print the JSON response", **unset)


class _NoHome(argparse.Action):
    def __call__(self, parser, namespace, values, option_string=None) -> None:
        parser.error("Hermes chooses the home of hermes recall: HERMES_HOME=DIR hermes recall …, or hermes "
                     "--profile NAME recall …; --home DIR is project-history-recall's")


def _add_search_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("query", nargs="+", help="words, a question, an error code, a symbol or a path")
    p.add_argument("--dir", type=_given, default=None, help="search the project of this folder (default: the current one)")
    p.add_argument("--project", type=_given, help="search this project instead (id, slug, name or folder)")
    p.add_argument("--mode", choices=config.MODES, default="hybrid",
                   help="hybrid (default): both engines; keyword: exact terms, error codes, symbols, paths; "
                        "semantic: by meaning, also across languages")
    p.add_argument("--limit", type=_within(1, config.MAX_LIMIT), default=10,
                   help=f"results to show, 1 to {config.MAX_LIMIT} (default: 10)")
    p.add_argument("--context", type=_within(0, config.MAX_CONTEXT), default=None,
                   help="messages shown around each hit (default: the 'context' setting, 2)")
    p.add_argument("--tools", action="store_true", help="also search tool output")
    p.add_argument("--since", type=_given, help="only from this date (2026-09-01) or age ago, as Hermes reads one: 30m "
                                   "(minutes), 12h, 7d, 2w, 90 (days); 3mo (months), 1y")
    p.add_argument("--until", type=_given, help="only before this date or age (exclusive; later than --since)")


def setup_parser(parser: argparse.ArgumentParser, standalone: bool = False) -> None:
    """Subcommands; shared by the standalone script and ``hermes recall`` (where Hermes
    chooses the home: ``hermes --profile NAME recall …``)."""
    if not standalone:
        # Hermes creates this parser with its own class: these two methods are
        # replaced on the instance on purpose (what Parser does by subclassing).
        parser.error = types.MethodType(_usage_error, parser)  # type: ignore[method-assign]
        parser.parse_known_args = types.MethodType(_parse_strictly, parser)  # type: ignore[method-assign]
    _add_global_options(parser, standalone, top=True)
    common = Parser(add_help=False)  # a parent: only its arguments are used
    _add_global_options(common, standalone, top=False)
    sub = parser.add_subparsers(dest="recall_command", metavar="COMMAND", parser_class=Parser)

    def command(name: str, **kw) -> argparse.ArgumentParser:
        # The one-line help heads the subcommand's own --help as well.
        return sub.add_parser(name, parents=[common], description=kw.get("help"), **kw)

    _add_search_args(command("search", help="search a project's earlier sessions"))
    st = command("status", help="which project a folder belongs to and how much is in scope")
    st.add_argument("dir", nargs="?", type=_given, default=None, help="the folder to look at (default: the current one)")
    command("projects", help="list this profile's projects with their session counts")
    mv = command("move", help="move a session into another project (its folder moves too)")
    mv.add_argument("session", help="session id, @session: link or title")
    mv.add_argument("project", help="target project: id, slug, name or folder, or an automatic one as `projects` prints it")
    se = command("session", help="which project a session is in, and why")
    se.add_argument("session", help="session id, @session: link or title")
    ix = command("index", help="build or update the keyword and semantic indexes now (a project, or all)")
    ix.add_argument("dir", nargs="?", type=_given, default=None, help="index the project of this folder (default: the current one)")
    ix.add_argument("--project", type=_given, help="index this project instead (id, slug, name or folder)")
    ix.add_argument("--all", action="store_true", help="index every project of this profile")
    qs = command("quickstart", help="search your Hermes home from here, or a demo home if you have none")
    qs.add_argument("query", nargs="*", help="what to search for (none: show where this folder belongs, or, in "
                                             "the demo, four searches of its own)")
    qs.add_argument("--demo", action="store_true", help="use the demo home even if you have one")
    command("config", help="the effective settings, where each comes from, and any warnings (secrets masked)")
    co = command("consent", help="consents to send a project's messages to a remote embedder")
    co_sub = co.add_subparsers(dest="consent_command", metavar="ACTION", parser_class=Parser)
    co_sub.add_parser("list", parents=[common], help="the consents on record")
    cg = co_sub.add_parser("grant", parents=[common], help="agree that a project's messages may be sent to the "
                                                           "configured remote embedder")
    cg.add_argument("dir", nargs="?", type=_given, default=None, help="the project of this folder (default: the current one)")
    cg.add_argument("--project", type=_given, help="this project instead (id, slug, name or folder)")
    cg.add_argument("--yes", action="store_true", help="do not ask (needed when not run from a terminal)")
    # How a person runs us (`project-history-recall` or `hermes recall`), for the hints we print.
    parser.set_defaults(prog=parser.prog or "project-history-recall")
