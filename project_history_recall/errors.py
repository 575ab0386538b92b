"""One error type for everything a person can act on, and what every response says happened.

Every failure the plugin reports is a ``PluginError``: a message a person
can act on, an ``error_code`` a program can branch on, and extras (the
candidates of an ambiguous project, say). ``envelope`` turns any exception
into the JSON Hermes's tools return (``{"success": false, "error": …,
"error_code": …, "outcome": …}``).

Every response, success or failure, carries an ``outcome``, set where the
response is built; the command line's exit code is read from it
(``exit_code``), never guessed from the response's shape:

- ``found`` / ``done``: a search found something, a command did what it was
  asked. Exit code 0.
- ``nothing``: a search found nothing, or there was nothing to do (a session
  already in its project, a consent already on record or declined). Exit 1.
- ``usage``: the request cannot be done as asked (a bad argument, an unknown
  project): change the request (``UsageError``). Exit 2.
- ``data``: Hermes's data or the plugin's own files could not be read or
  written (missing, locked, corrupt, a full disk): nothing was changed; fix the
  file or try again (``DataError``). ``internal``: a bug, reported as one.
  Exit 3.
- ``consent``: a remote embedder needs the user's consent first
  (``ConsentError``, or an index run that left a project for it). Exit 4.
"""

from __future__ import annotations

import reprlib

FOUND, DONE, NOTHING, USAGE = "found", "done", "nothing", "usage"
DATA, INTERNAL, CONSENT = "data", "internal", "consent"
EXIT_FOUND, EXIT_NOTHING, EXIT_USAGE, EXIT_DATA, EXIT_CONSENT = 0, 1, 2, 3, 4
_EXIT_BY_OUTCOME = {FOUND: EXIT_FOUND, DONE: EXIT_FOUND, NOTHING: EXIT_NOTHING, USAGE: EXIT_USAGE,
                    DATA: EXIT_DATA, INTERNAL: EXIT_DATA, CONSENT: EXIT_CONSENT}


# How a message shows a value it refuses: a few levels and items of it. Its whole ``repr`` goes as
# deep as the value (an argument nested thousands of levels raised RecursionError) and as wide (a
# YAML alias bomb: nine levels of nine aliases in ten lines took minutes and gigabytes).
_BRIEF = reprlib.Repr()
_BRIEF.maxlevel, _BRIEF.maxstring, _BRIEF.maxother = 2, 80, 80


def brief(value: object, width: int = 80) -> str:
    """``value`` as Python writes it, a few levels deep, in at most ``width`` characters."""
    return _BRIEF.repr(value)[:width]


def counted(n: int, noun: str, plural: str = "s") -> str:
    """``n`` of ``noun`` as a message says it: "1 batch", "3 batches", "1,024 chunks"."""
    return f"{n:,} {noun}{'' if n == 1 else plural}"


class PluginError(Exception):
    """A failure with a message a person can act on, a code, and extras for the response."""

    code = "error"
    codes: tuple[str, ...] = ()  # every code this class is raised with (the first is the default)
    outcome = DATA

    def __init_subclass__(cls, **kw) -> None:
        super().__init_subclass__(**kw)
        if cls.codes:
            cls.code = cls.codes[0]

    def __init__(self, message: str, code: str | None = None, **extra: object):
        super().__init__(message)
        if code is not None:
            self.code = code
        self.extra = extra

    def envelope(self) -> dict:
        return {"success": False, "error": str(self), "error_code": self.code, "outcome": self.outcome,
                **self.extra}


class UsageError(PluginError):
    codes: tuple[str, ...] = ("bad_argument",)
    outcome = USAGE


class DataError(PluginError):
    codes: tuple[str, ...] = ("error",)
    outcome = DATA


class ConsentError(PluginError):
    codes: tuple[str, ...] = ("consent_required",)
    outcome = CONSENT


def envelope(exc: BaseException) -> dict:
    """The response for any exception: its own envelope, or an internal error (a bug, reported as
    one, in one line: the traceback is for the log)."""
    if isinstance(exc, PluginError):
        return exc.envelope()
    message = " ".join(str(exc).split())
    return {"success": False, "error": f"Internal error: {type(exc).__name__}: {message}",
            "error_code": INTERNAL, "outcome": INTERNAL}


def exit_code(response: dict) -> int:
    """The command line's exit code for a response: the one of the outcome it was built with."""
    return _EXIT_BY_OUTCOME[response["outcome"]]
