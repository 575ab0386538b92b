"""The plugin's version, at the bottom of the package: the remote embedder names it in its
User-Agent, and nothing below the package's ``__init__`` may import that."""

__version__ = "0.1.0"
