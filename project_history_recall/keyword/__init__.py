"""The keyword engine: a query's concepts, weighted within the scope.

- ``querytext``: what a person typed into terms and concepts, pure;
- ``cjk``: Chinese, Japanese and Korean cut into words (rjieba, lazily);
- ``textindex``: the plugin's own keyword index (``keywords.db``), kept in step with state.db;
- ``engine``: each term's messages in the scope (from that index, or Hermes's), scored.
"""
