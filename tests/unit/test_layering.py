"""The package's layering, checked on its source: every import goes to the same or a lower
layer, and no import cycle, imports inside functions included (ARCHITECTURE.md explains the
layers).

Imports under ``if TYPE_CHECKING:`` never run, so they cannot make an import fail half-way or
load anything: they are left out of the cycle count, but must point down like the rest.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import project_history_recall

PACKAGE = project_history_recall.__name__
ROOT = Path(project_history_recall.__file__).parent

# Lowest first. A module belongs to the first entry naming it or a package above it;
# "" is the package's own __init__ (register).
LAYERS = (
    ("base", ("errors", "version", "hits", "lunar", "textfold")),
    ("files", ("files",)),
    ("hermes", ("hermes",)),
    ("core", ("settings", "redaction", "home", "background")),
    ("scope", ("scope",)),
    ("engines", ("keyword", "semantic", "context")),
    ("pieces", ("fusion", "sessions", "results", "timewords", "timeonly", "orderwords")),
    ("use cases", ("search", "indexing", "consenting", "overview", "move", "warmup")),
    ("edges", ("ui",)),
    ("plugin", ("", "__main__")),
)
LIBRARY = ("hermes", "scope", "keyword", "semantic", "files")  # never import the edges


@dataclass(frozen=True)
class Import:
    module: str  # relative to the package: "scope.resolve"; "" for the package itself
    path: str  # the module's file, relative to the package
    line: int
    target: str
    type_only: bool

    def __str__(self) -> str:
        return f"{self.path}:{self.line} imports {self.target or PACKAGE}"


def _modules() -> dict[str, Path]:
    out = {}
    for path in ROOT.rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _type_only_lines(tree: ast.AST) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for inner in node.body:
                lines.update(range(inner.lineno, (inner.end_lineno or inner.lineno) + 1))
    return lines


def _own(name: str) -> str | None:
    """``name`` (absolute) as a module of the package, relative to it; None for another package's."""
    if name == PACKAGE:
        return ""
    return name[len(PACKAGE) + 1:] if name.startswith(PACKAGE + ".") else None


def _imports(module: str, path: Path) -> list[Import]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    type_only = _type_only_lines(tree)
    here = [PACKAGE] + (module.split(".") if module else [])
    if path.name != "__init__.py":
        here = here[:-1]  # a module's relative imports start from its package
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = here[: len(here) - node.level + 1] if node.level else []
            source = ".".join(base + ([node.module] if node.module else []))
            # ``from .semantic import consent`` imports the module consent; ``from .x import name``, x.
            names = [f"{source}.{a.name}" if _own(f"{source}.{a.name}") in MODULES else source for a in node.names]
        else:
            continue
        for name in dict.fromkeys(names):
            target = _own(name)
            if target is not None and target != module:
                out.append(Import(module, path.relative_to(ROOT).as_posix(), node.lineno, target,
                                  node.lineno in type_only))
    return out


IMPORTS = [imp for module, path in sorted(MODULES.items()) for imp in _imports(module, path)]


def layer_of(module: str) -> int:
    for rank, (_name, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if module == prefix or (prefix and module.startswith(prefix + ".")):
                return rank
    raise AssertionError(f"{module or PACKAGE} is in no layer: add it to LAYERS (tests/unit/test_layering.py) "
                         "and to ARCHITECTURE.md")


def test_every_module_has_a_layer():
    assert len(MODULES) > 40  # the walk found the package
    for module in MODULES:
        layer_of(module)


def test_every_import_goes_to_the_same_or_a_lower_layer():
    upward = [f"{imp} ({LAYERS[layer_of(imp.module)][0]} -> {LAYERS[layer_of(imp.target)][0]})"
              for imp in IMPORTS if layer_of(imp.target) > layer_of(imp.module)]
    assert not upward, "imports that reach up a layer:\n" + "\n".join(upward)


def test_the_library_never_imports_the_edges():
    found = [str(imp) for imp in IMPORTS
             if imp.module.split(".")[0] in LIBRARY and imp.target.split(".")[0] == "ui"]
    assert not found, "\n".join(found)


def test_no_import_cycle_counting_imports_inside_functions():
    edges: dict[str, list[Import]] = {module: [] for module in MODULES}
    for imp in IMPORTS:
        if not imp.type_only:
            edges[imp.module].append(imp)
    cycles = [_one_cycle(edges, set(c)) for c in _components(edges) if len(c) > 1]
    assert not cycles, "import cycles (one loop of each shown):\n" + "\n".join(
        "  " + "\n  ".join(str(imp) for imp in cycle) + "\n" for cycle in cycles)


def _one_cycle(edges: dict[str, list[Import]], component: set[str]) -> list[Import]:
    """The shortest loop through the first module of a cycle, import by import."""
    start = min(component)
    came: dict[str, Import] = {}
    frontier = [start]
    while frontier:
        following = []
        for module in frontier:
            for imp in edges[module]:
                if imp.target == start:
                    loop = [imp]
                    while loop[0].module != start:
                        loop.insert(0, came[loop[0].module])
                    return loop
                if imp.target in component and imp.target not in came:
                    came[imp.target] = imp
                    following.append(imp.target)
        frontier = following
    raise AssertionError(f"no loop through {start}")


def _components(edges: dict[str, list[Import]]) -> list[list[str]]:
    """Strongly connected components (Tarjan's algorithm, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    for start in edges:
        if start in index:
            continue
        work = [(start, iter(edges[start]))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, pending = work[-1]
            step = next(pending, None)
            if step is not None:
                nxt = step.target
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(edges[nxt])))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                out.append(component)
    return out


def test_the_checker_sees_imports_inside_functions_and_names_their_line():
    # The review that set these rules found a cycle hidden by function-level imports.
    late = [imp for imp in IMPORTS if imp.module == "" and imp.target == "ui.cli"]
    assert late and str(late[0]).startswith("__init__.py:") and late[0].line > 1
