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


def reason(exc: Exception) -> str:
    """Why a config.yaml could not be read, for the person who will mend it: where YAML stopped and why
    (a tab, a colon out of place; YAML's reasons name characters and tokens, not the values around
    them), or that the text is not UTF-8, as an editor saving in the system's code page (GBK, Latin-1)
    or Notepad's "Unicode" writes it, which a bare UnicodeDecodeError did not tell."""
    if isinstance(exc, UnicodeDecodeError):
        raw = exc.object
        if raw[:2] in (b"\xff\xfe", b"\xfe\xff"):
            return "UTF-16 text, not UTF-8: save it as UTF-8"
        line = raw[:exc.start].count(b"\n") + 1
        return f"not UTF-8 text, at line {line}: save it as UTF-8"
    mark, problem = getattr(exc, "problem_mark", None), getattr(exc, "problem", None)
    if mark is None:
        return type(exc).__name__
    return (f"{type(exc).__name__} at line {mark.line + 1}, column {mark.column + 1}"
            + (f": {problem:.120}" if problem else ""))
