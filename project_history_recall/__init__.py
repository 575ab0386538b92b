"""project-history-recall: a Hermes Agent plugin for recall within a project.

Hermes calls ``register(ctx)`` once per process, whether the package was
installed with pip (entry point ``hermes_agent.plugins``) or copied to
``$HERMES_HOME/plugins/project-history-recall/``. Everything else in the
package works without Hermes; only ``tools``/``host``/``cli`` touch it.
"""

from __future__ import annotations

import logging

from .version import __version__  # noqa: F401 - the package's public version

# What the plugin logs goes to its host's log (under Hermes, agent.log and errors.log). The standalone
# command line configures no logging, and Python wrote every warning bare on stderr beside the one
# line a command says ("keyword index unavailable: …" before the same words as the error), and would
# write a logged exception's traceback there. Once per logger: Hermes may import the package again.
_logger = logging.getLogger(__name__)
if not any(isinstance(h, logging.NullHandler) for h in _logger.handlers):
    _logger.addHandler(logging.NullHandler())


def register(ctx) -> None:
    from pathlib import Path

    from . import warmup
    from .ui import arguments, slash, tools

    for schema, handler, emoji in tools.TOOLS:
        ctx.register_tool(name=schema["name"], toolset=tools.TOOLSET, schema=schema, handler=handler, emoji=emoji)
    ctx.register_cli_command(
        name="recall",
        help="Search this project's earlier Hermes sessions",
        setup_fn=arguments.setup_parser,
        handler_fn=_recall,
        description=arguments.DESCRIPTION,
    )
    ctx.register_command("recall", slash.handle, description="Search this project's earlier sessions",
                         args_hint="<query> | status | move <project>")
    # Hermes 0.19.0 has the hook; a host without it only makes the first search slower.
    if callable(getattr(ctx, "register_hook", None)):
        ctx.register_hook("on_session_start", warmup.on_session_start)
    ctx.register_skill("recall", Path(__file__).parent / "skills" / "recall" / "SKILL.md",
                       description="Recall earlier sessions of this project and cite them")
    # Hermes 0.22 imports a directory install anew at every forced rediscovery (a plugin installed or
    # enabled while a gateway or the TUI runs) and unloads the copy it replaces, which kept its model,
    # vectors and indexes in memory (about 50 MB a time) for as long as the process lived. A pip
    # install is not imported again: its one copy goes on serving, so it keeps what it holds.
    if callable(getattr(ctx, "on_unload", None)) and __name__.startswith("hermes_plugins."):
        ctx.on_unload(_let_go)


def _let_go() -> None:
    from .home import Home
    from .semantic import embedders

    Home.forget_every()
    embedders.forget()


def _recall(args) -> None:
    """``hermes recall …``: the commands, and the engines behind them, load when one runs."""
    from .ui import cli

    cli.run_from_hermes(args)
