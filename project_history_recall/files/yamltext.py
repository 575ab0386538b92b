"""Reading YAML text: one loader for every config.yaml the plugin reads.

PyYAML's pure-Python ``SafeLoader`` took about 10 s over a 5.7 MB config.yaml, read by the settings
and again by the consents. Its C counterpart (libyaml, in PyYAML's wheels) gives the same values
several times as fast, and its errors carry the same line and column, in libyaml's own words ("found
a tab character that violates indentation"). A PyYAML built without libyaml has only the pure-Python
loader, and that is used.
"""

from __future__ import annotations

from typing import Any


def safe_load(text: str) -> Any:
    """What ``yaml.safe_load(text)`` gives, by the C loader where PyYAML has one."""
    import yaml

    try:
        return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except UnicodeEncodeError:
        # libyaml reads UTF-8, which a lone surrogate cannot be encoded in; the pure-Python loader
        # refuses one as a YAMLError, as it does any character YAML does not allow.
        return yaml.load(text, Loader=yaml.SafeLoader)
