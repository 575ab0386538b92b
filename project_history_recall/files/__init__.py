"""The plugin's own small files: derived databases, settings edits, the key, locks.

- ``derived``: opening ``embeddings.db``/``keywords.db``, and starting a broken one afresh;
- ``arrays``: arrays saved whole for the next process (a project's vectors, the model's state);
- ``configfile``: atomic edits of the plugin's ``config.yaml`` (consents);
- ``envfile``: the profile's ``.env`` (the remote embedder's key) and scrubbing the key;
- ``filestamp``: values read from small files, recomputed only when a file changes;
- ``locks``: one exclusive file lock for threads and processes.
- ``folders``: creating the plugin's own folders, never the Hermes home above them.
- ``yamltext``: reading YAML text, by PyYAML's C loader where it has one.
"""
