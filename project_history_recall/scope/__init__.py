"""Which sessions a search may see: every session is attributed to a project.

- ``pathkeys``: folder identity (segments; Windows paths case-folded);
- ``attribution``: the rules, pure (recorded move, deepest project folder, workspace, home);
- ``gitroot``: a folder's repository, found on disk as Hermes's sidebar finds it;
- ``records``: the plugin's own attribution records (``recall.db``), written only by a move;
- ``resolve``: one search's scope, from the caller and the rules;
- ``sessionref``: a session named by id, link or title.
"""
