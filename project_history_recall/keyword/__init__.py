"""The keyword engine: a query's concepts, weighted within the scope.

- ``querytext``: what a person typed into terms and concepts, pure;
- ``cjk``: Chinese, Japanese and Korean cut into words (rjieba, lazily);
- ``textindex``: the plugin's own keyword index (``keywords.db``), kept in step with state.db;
- ``engine``: each term's messages in the scope (from that index, or Hermes's), handed to ``scoring``;
- ``scoring``: the candidates scored and ranked, BM25-like within the scope (it counts, weighs, sorts);
- ``lengths``: the scope's message lengths, which BM25 weighs a message's length against;
- ``answerkind``: the kind of answer a question asks for (a number, a length of time, a
  moment), and whether a message says one.
"""
