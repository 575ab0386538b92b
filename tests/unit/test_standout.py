"""Hybrid's results with the semantic side's first session raised into the first half when it
stands far out of the question's background over the scope (``search.STANDOUT_Z``)."""

from __future__ import annotations

import pytest

from project_history_recall import search
from project_history_recall.hits import BOTH, KEYWORD, SEMANTIC, Hit
from project_history_recall.semantic.engine import Outcome

# Ten sessions the blend ranks "a" to "j"; the semantic side's best message is in "j".
RANKED = [Hit(n, s, 1.0 - n / 100, KEYWORD, 0.0) for n, s in enumerate("abcdefghi")] + [Hit(99, "j", 0.3, BOTH, 0.0)]
BACKGROUND = (0.1, 0.05)


def _order(monkeypatch, best: float, searched_with: str = "keyword+semantic", limit: int = 10,
           background: tuple[float, float] = BACKGROUND) -> str:
    outcome = Outcome("ready", hits=[Hit(99, "j", best, SEMANTIC, 0.0), Hit(1, "b", 0.2, SEMANTIC, 0.0)],
                      background=background)
    monkeypatch.setattr(search, "_ranked", lambda req, ctx: (RANKED, ["j"], searched_with, outcome))
    groups, _, _ = search._search(search.SearchRequest("q", limit=limit), None)
    return "".join(g.session_id for g in groups)


def test_a_semantic_first_that_stands_out_comes_among_the_first_half(monkeypatch):
    # 0.1 + 4.5 × 0.05 = 0.325: above it, "j" takes the fifth place; the first four keep theirs.
    assert _order(monkeypatch, 0.35) == "abcdjefghi"
    assert _order(monkeypatch, 0.3) == "abcdefghij"


@pytest.mark.parametrize("searched_with", ["keyword", "semantic"])
def test_only_hybrid_moves_it(monkeypatch, searched_with):
    assert _order(monkeypatch, 0.9, searched_with) == "abcdefghij"


def test_never_into_the_first_place_and_not_without_a_background(monkeypatch):
    # Three results: the middle is the second place, never the first.
    assert _order(monkeypatch, 0.9, limit=3) == "ajb"
    assert _order(monkeypatch, 0.9, background=(0.1, 0.0)) == "abcdefghij"
