"""One error type for everything a person can act on.

Every failure the plugin reports is a ``PluginError``: a message a person
can act on, an ``error_code`` a program can branch on, and extras (the
candidates of an ambiguous project, say). ``envelope`` turns any exception
into the JSON Hermes's tools return (``{"success": false, "error": …,
"error_code": …}``); the command line's exit code comes from the error's
class (``exit_code``), so no list of code strings is kept by hand anywhere.

The three kinds, by what the person should do:

- ``UsageError``: the request cannot be done as asked (a bad argument, an
  unknown project): change the request. Exit code 2.
- ``DataError``: Hermes's data or the plugin's own files could not be read
  or written (missing, locked, corrupt, a full disk): nothing was changed;
  fix the file or try again. Exit code 3.
- ``ConsentError``: a remote embedder needs the user's consent first. Exit 4.
"""

from __future__ import annotations

EXIT_FOUND, EXIT_NOTHING, EXIT_USAGE, EXIT_DATA, EXIT_CONSENT = 0, 1, 2, 3, 4

# error_code -> exit code, filled by each class's ``codes`` (see __init_subclass__).
_EXIT_BY_CODE: dict[str, int] = {}


class PluginError(Exception):
    """A failure with a message a person can act on, a code, and extras for the response."""

    code = "error"
    codes: tuple[str, ...] = ()  # every code this class is raised with (the first is the default)
    exit_code = EXIT_DATA

    def __init_subclass__(cls, **kw) -> None:
        super().__init_subclass__(**kw)
        if cls.codes:
            cls.code = cls.codes[0]
        for code in cls.codes:
            _EXIT_BY_CODE.setdefault(code, cls.exit_code)

    def __init__(self, message: str, code: str | None = None, **extra: object):
        super().__init__(message)
        if code is not None:
            self.code = code
        self.extra = extra

    def envelope(self) -> dict:
        return {"success": False, "error": str(self), "error_code": self.code, **self.extra}


class UsageError(PluginError):
    codes: tuple[str, ...] = ("bad_argument",)
    exit_code = EXIT_USAGE


class DataError(PluginError):
    codes: tuple[str, ...] = ("error", "internal")
    exit_code = EXIT_DATA


class ConsentError(PluginError):
    codes: tuple[str, ...] = ("consent_required",)
    exit_code = EXIT_CONSENT


def envelope(exc: BaseException) -> dict:
    """The response for any exception: its own envelope, or an internal error (a bug, reported as one)."""
    if isinstance(exc, PluginError):
        return exc.envelope()
    return {"success": False, "error": f"Internal error: {type(exc).__name__}: {exc}", "error_code": "internal"}


def exit_code(response: dict) -> int:
    """The command line's exit code for a response: found / done (0), found or did nothing (1),
    done but a project was left for the user's consent (4), or its error's class."""
    if response.get("success"):
        if response.get("skipped_for_consent"):
            return ConsentError.exit_code
        if response.get("moved") is False or response.get("recorded") is False:
            return EXIT_NOTHING
        return EXIT_FOUND if response.get("results", True) else EXIT_NOTHING
    return _EXIT_BY_CODE.get(response.get("error_code", ""), EXIT_DATA)
