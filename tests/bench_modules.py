"""The bench package's modules, for unit tests of its data builders.

Loaded by file, as a package (its modules import each other relatively): the checkout is kept off
sys.path in the tests (see conftest).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

_BENCH = Path(__file__).resolve().parents[1] / "bench"


def bench(name: str) -> ModuleType:
    """``bench.<name>``, the package loaded once from the checkout."""
    if "bench" not in sys.modules:
        spec = importlib.util.spec_from_file_location("bench", _BENCH / "__init__.py",
                                                      submodule_search_locations=[str(_BENCH)])
        assert spec and spec.loader
        sys.modules["bench"] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules["bench"])
    return importlib.import_module(f"bench.{name}")
