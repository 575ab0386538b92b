"""Hybrid's results with the semantic side's reserved sessions raised to end at the middle when
they stand far out of the question's background over the scope (``search.STANDOUT_Z``), and the
first of them first when it stands as far above the fused first's best message (``search._led``)."""

from __future__ import annotations

import pytest

from project_history_recall import search
from project_history_recall.hits import BOTH, KEYWORD, SEMANTIC, Hit
from project_history_recall.keyword.engine import Source
from project_history_recall.semantic.engine import Outcome

# Ten sessions the blend ranks "a" to "j"; the semantic side ranks "j" first, then "i", then "b".
RANKED = [Hit(n, s, 1.0 - n / 100, KEYWORD, 0.0) for n, s in enumerate("abcdefgh")] + [
    Hit(98, "i", 0.31, BOTH, 0.0), Hit(99, "j", 0.3, BOTH, 0.0)]
BACKGROUND = (0.1, 0.05)  # 4.5 deviations above: 0.325


def _order(monkeypatch, j: float, i: float = 0.2, searched_with: str = "keyword+semantic", limit: int = 10,
           background: tuple[float, float] = BACKGROUND, similarity: dict[int, float] | None = None) -> str:
    outcome = Outcome("ready", hits=[Hit(99, "j", j, SEMANTIC, 0.0), Hit(97, "j", j - 0.01, SEMANTIC, 0.0),
                                     Hit(98, "i", i, SEMANTIC, 0.0), Hit(1, "b", 0.9, SEMANTIC, 0.0)],
                      background=background, similarity=similarity or {})
    # Hybrid reserves places for the semantic side's first sessions, a fifth of the results.
    monkeypatch.setattr(search, "_ranked",
                        lambda req, ctx, windows: (RANKED, ["j", "i"][: req.limit // 5], searched_with, outcome, Source()))
    groups, _, _, _ = search._search(search.SearchRequest("q", limit=limit), None, [])
    return "".join(g.session_id for g in groups)


def test_a_semantic_first_that_stands_out_ends_at_the_middle(monkeypatch):
    assert _order(monkeypatch, 0.35) == "abcdjefghi"
    assert _order(monkeypatch, 0.3) == "abcdefghij"


def test_both_reserved_sessions_that_stand_out_end_there_in_their_order(monkeypatch):
    assert _order(monkeypatch, 0.35, 0.34) == "abcijdefgh"
    # The second alone stands out: it alone moves.
    assert _order(monkeypatch, 0.3, 0.34) == "abcdiefghj"


def test_only_the_reserved_share_counts(monkeypatch):
    # With five results one session of each engine is reserved: "b", the semantic side's third
    # session, is never raised however it stands, and the middle is the second place.
    assert _order(monkeypatch, 0.35, 0.34, limit=5) == "ajbcd"


@pytest.mark.parametrize("searched_with", ["keyword", "semantic"])
def test_only_hybrid_moves_them(monkeypatch, searched_with):
    assert _order(monkeypatch, 0.9, 0.9, searched_with) == "abcdefghij"


def test_nothing_moves_without_a_background_or_with_few_results(monkeypatch):
    assert _order(monkeypatch, 0.9, 0.9, background=(0.1, 0.0)) == "abcdefghij"
    # Fewer than five results reserve no place, so none is raised.
    assert _order(monkeypatch, 0.9, 0.9, limit=3) == "abc"


def test_a_semantic_first_far_above_the_fused_first_takes_the_first_place(monkeypatch):
    # "a"'s best message (0.1) stands 5 deviations below "j"'s (0.35): "j" leads.
    assert _order(monkeypatch, 0.35, similarity={0: 0.1, 99: 0.35}) == "jabcdefghi"
    # Reserved but not standing out, it comes from the tenth place just the same.
    assert _order(monkeypatch, 0.3, background=(0.15, 0.04), similarity={0: 0.1, 99: 0.3}) == "jabcdefghi"


def test_the_semantic_first_is_measured_against_the_fused_first_alone(monkeypatch):
    # 4 deviations above "a"'s message: under the bar.
    assert _order(monkeypatch, 0.35, similarity={0: 0.15, 99: 0.35}) == "abcdjefghi"
    # A close second of the blend ("b") does not hold the semantic first back.
    assert _order(monkeypatch, 0.35, similarity={0: 0.1, 1: 0.34, 99: 0.35}) == "jabcdefghi"


def test_no_lead_without_the_fused_firsts_cosine_or_outside_hybrid(monkeypatch):
    # A keyword match whose cosine was never computed is not measured against.
    assert _order(monkeypatch, 0.35, similarity={99: 0.35}) == "abcdjefghi"
    assert _order(monkeypatch, 0.9, 0.9, "keyword", similarity={0: 0.1}) == "abcdefghij"
    assert _order(monkeypatch, 0.9, 0.9, background=(0.1, 0.0), similarity={0: 0.1}) == "abcdefghij"
