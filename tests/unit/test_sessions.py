"""Ranked hits turned into ranked sessions, pure."""

from __future__ import annotations

from project_history_recall.sessions import by_session


def _group(ranked, limit):
    return [(g.session_id, [m[1] for m in g.hits]) for g in by_session(ranked, lambda m: m[0], limit)]


def test_each_session_once_in_the_order_of_its_best_hit_with_its_further_hits_among_the_best():
    ranked = [("a", 1), ("b", 2), ("a", 3), ("c", 4), ("b", 5), ("a", 6)]
    # Messages 5 and 6 are not among the best four: they stay out.
    assert _group(ranked, 4) == [("a", [1, 3]), ("b", [2]), ("c", [4])]
    assert _group(ranked, 6) == [("a", [1, 3, 6]), ("b", [2, 5]), ("c", [4])]


def test_limit_counts_sessions_and_the_first_session_carries_all_its_leading_hits():
    ranked = [("a", n) for n in range(6)] + [(s, 10 + i) for i, s in enumerate("bcdefg")]
    assert _group(ranked, 3) == [("a", [0, 1, 2]), ("b", [10]), ("c", [11])]
    # Far down the list, a session still comes with its best hit.
    assert [sid for sid, _ in _group(ranked, 10)] == list("abcdefg")


def test_nothing_in_nothing_out():
    assert _group([], 10) == []
