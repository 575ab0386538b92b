"""The last resort of every edge: the tools, the command line and ``/recall`` answer an exception
nobody caught in the same way.

It becomes the response ``errors.envelope`` makes of it: a ``PluginError``'s own, or the
one-line ``internal`` error for anything else (a bug, reported as one), which is also logged
with its traceback. The configured remote embedder's key is scrubbed from the response and
from the log: an exception's message holds whatever it was handed (a request's headers, a
line of ``.env``), and what a slash command raises, Hermes prints as it is.
"""

from __future__ import annotations

import logging
import traceback
from pathlib import Path

from .. import errors
from .. import settings as config
from ..files import envfile

logger = logging.getLogger(__name__)  # the package's NullHandler keeps it off a standalone stderr


def failure(home: Path, exc: Exception, where: str) -> dict:
    """The response for ``exc``, raised out of ``where`` (a tool, a command) in ``home``."""
    key = config.configured_key(home)
    if not isinstance(exc, errors.PluginError):
        logger.error("%s failed:\n%s", where, envfile.scrub_key("".join(traceback.format_exception(exc)), key))
    response = errors.envelope(exc)
    return {**response, "error": envfile.scrub_key(response["error"], key)}
