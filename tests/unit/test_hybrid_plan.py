"""Which queries the hybrid half of ``bench speed`` times: its keyword twin must be the same queries and askers."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

# By file: the checkout is kept off sys.path in the tests (see conftest), and this module needs nothing else.
_spec = importlib.util.spec_from_file_location(
    "hybrid_plan", Path(__file__).resolve().parents[2] / "bench" / "hybrid_plan.py")
assert _spec and _spec.loader
hybrid_plan = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(hybrid_plan)

PROJECT_OF = {"a1": "A", "a2": "A", "b1": "B", "c1": "C", "d1": "D"}


def test_projects_are_the_first_distinct_ones_in_the_askers_order():
    callers = ["b1", "a1", "b1", "stray", "a2", "c1", "d1"]
    assert hybrid_plan.pick_projects(callers, PROJECT_OF, 3) == ["B", "A", "C"]
    assert hybrid_plan.pick_projects(callers, PROJECT_OF, 10) == ["B", "A", "C", "D"]
    assert hybrid_plan.pick_projects(["stray"], PROJECT_OF, 2) == []


def test_each_project_keeps_its_askers_queries_of_every_class_in_their_order():
    callers = ["a1", "b1", "c1", "a2"]
    queries = {"english": ["e0", "e1", "e2", "e3"], "zh2": ["z0", "z1", "z2", "z3"]}
    assert hybrid_plan.grouped(queries, callers, PROJECT_OF, ["A", "C", "D"]) == [
        ("A", [("english", "e0", "a1"), ("english", "e3", "a2"), ("zh2", "z0", "a1"), ("zh2", "z3", "a2")]),
        ("C", [("english", "e2", "c1"), ("zh2", "z2", "c1")]),
    ]


def test_a_class_with_a_query_too_few_is_refused():
    with pytest.raises(ValueError, match="3 english queries for 4 callers"):
        hybrid_plan.grouped({"english": ["e0", "e1", "e2"]}, ["a1", "b1", "c1", "a2"], PROJECT_OF, ["A"])
