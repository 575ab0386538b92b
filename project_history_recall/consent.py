"""The one gate every embedding call for a scope passes first.

Local embedders never send text anywhere, so they need no consent. A remote
embedder (``remote = True``) may only embed a project's text after the user
agreed for that (provider, model, project); recording and asking for that
consent is issue 5 and is not built, so a remote embedder is always refused
here. The semantic path calls ``check`` before ANY embedding call for a
scope, whether indexing or embedding a query.
"""

from __future__ import annotations

from pathlib import Path


class ConsentRequired(Exception):
    """Semantic search for this scope needs the user's consent first."""


def check(home: Path, embedder, project_key: tuple) -> None:
    """Return when ``embedder`` may embed text of ``project_key``; raise ConsentRequired otherwise."""
    if getattr(embedder, "remote", True) is not False:  # unknown counts as remote
        raise ConsentRequired(
            f"{embedder.provider} would receive this project's messages; recording consent for remote "
            "embedders is not built yet, so nothing was sent"
        )
