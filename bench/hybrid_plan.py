"""Which of ``bench speed``'s queries the hybrid half times, and in what order.

Pure (no package imports), so the unit tests load it by file.

Only a few projects are embedded (embedding all 1M messages would take hours),
so the hybrid half keeps the keyword half's own query strings whose asker is in
one of them. They are grouped by project: a process serves one conversation, so
one project, and only its last two projects' vectors stay in memory; asking
across twenty projects in turn would time reading a project's vectors back, not
a warm search.
"""

from __future__ import annotations

from typing import Hashable


def pick_projects(callers: list[str], project_of: dict[str, Hashable], count: int) -> list[Hashable]:
    """The projects of the first callers, the first ``count`` distinct ones in the callers' order
    (a caller outside every project is passed over)."""
    picked: list[Hashable] = []
    for caller in callers:
        project = project_of.get(caller)
        if project is not None and project not in picked:
            picked.append(project)
            if len(picked) == count:
                break
    return picked


def grouped(queries: dict[str, list[str]], callers: list[str], project_of: dict[str, Hashable],
            projects: list[Hashable]) -> list[tuple[Hashable, list[tuple[str, str, str]]]]:
    """Each of ``projects`` with its ``(class, query, caller)`` triples: the ``i``-th query of each
    class is asked by ``callers[i]``, as in the keyword half; only callers in ``projects`` count."""
    by_project: dict[Hashable, list[tuple[str, str, str]]] = {p: [] for p in projects}
    for cls, strings in queries.items():
        if len(strings) != len(callers):
            raise ValueError(f"{len(strings)} {cls} queries for {len(callers)} callers")
        for query, caller in zip(strings, callers, strict=True):
            project = project_of.get(caller)
            if project in by_project:
                by_project[project].append((cls, query, caller))
    return [(p, asked) for p, asked in by_project.items() if asked]
