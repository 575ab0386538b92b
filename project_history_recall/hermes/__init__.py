"""Hermes's data, read only, and the one thin edge that writes through Hermes.

- ``paths``: where a Hermes home keeps things (and the plugin's data folder);
- ``readonly``: opening Hermes's SQLite files read-only, retries, errors a person can act on;
- ``statedb``: ``state.db``'s layout, a message's text, short reads that never keep Hermes's writer waiting;
- ``messages``: what a search reads of messages and sessions (term lookups, live checks, hits, windows), and what
  the indexes and a request for consent read of the messages;
- ``catalog``: every session's attribution facts, kept in step cheaply;
- ``changes``: which sessions changed since one of the plugin's indexes looked, and what an index remembers of one;
- ``projects``: ``projects.db``, Hermes's explicit projects;
- ``facts``: the plain records those readers return;
- ``watch``: a value read from a small SQLite file, again only after a commit;
- ``host``: a running Hermes: who is calling, and Hermes's own write paths for a move.
"""
