"""The semantic engine: vectors of the project's messages, searched by meaning.

- ``embedders``: the embedded offline model (``local``), the optional ``e5`` and the two at once
  (``pair``), and OpenAI-compatible services (``openai``);
- ``chunking``: message text into the pieces that get one vector each, pure;
- ``store``: ``embeddings.db``, the vectors;
- ``indexer``: keeping the store in step with state.db, in the background;
- ``consent``: the one gate before any text leaves the machine, and the consent records it checks;
- ``consent_tokens``: the token that shows the user agreed in the conversation that asked, signed
  with ``consent_secret``'s key;
- ``consent_request``: a consent request as data (what would be sent, to where, the agent's token);
  the words are ``ui/consent_words``'s;
- ``matrix``: a scope's vectors in memory, searched exactly, pure numpy;
- ``blas``: numpy's BLAS held to one thread, one capped call at a time;
- ``engine``: one search's semantic side and its status;
- ``kept``: what the engine keeps per Hermes home (the store, its indexers and matrices).
"""
