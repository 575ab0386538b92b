"""The edges people and agents use; they parse, call the library and render.

- ``tools``: the two agent tools (schemas, handlers for Hermes's dispatch);
- ``cli``: ``hermes recall …`` and ``project-history-recall …``;
- ``slash``: ``/recall`` inside a session;
- ``demo``: the demo Hermes home the first run builds when there is none.
"""
