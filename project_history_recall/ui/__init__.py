"""The edges people and agents use; they parse, call the library and render.

- ``tools``: the two agent tools (schemas, handlers for Hermes's dispatch);
- ``cli``: ``hermes recall …`` and ``project-history-recall …``; ``arguments``: what they accept
  (Hermes builds that parser at every start, so it loads no command);
- ``slash``: ``/recall`` inside a session;
- ``edge``: the last resort of the three above: an exception nobody caught becomes the same
  one-line error everywhere, logged, the remote embedder's key scrubbed from both;
- ``render``: every response as text, the same for the CLI and ``/recall``; the one place the
  CLI writes (the remote embedder's key is scrubbed there);
- ``consent_words``: what a request for consent tells the agent (the token and how to use it) or
  a person (the command that agrees), put on the data the engine refuses with;
- ``terminal``: control and bidi characters from history escaped for every edge above, so
  history cannot drive a terminal;
- ``demo``: the demo Hermes home the first run builds when there is none (kept in the cache
  folder and reused).
"""
