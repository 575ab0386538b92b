"""``python -m project_history_recall``: the command line, as the ``project-history-recall`` script runs it
(where the script is not on PATH: an install into a virtual environment that is not activated)."""

from .ui.cli import main

if __name__ == "__main__":  # imported (a walk of the package's modules), it runs nothing
    raise SystemExit(main())
