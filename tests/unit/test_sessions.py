"""Ranked messages turned into ranked sessions, pure."""

from __future__ import annotations

import pytest

from project_history_recall.sessions import by_session, session_score


def _group(ranked, limit, support=0.0, decay=0.5):
    return by_session(ranked, lambda m: m[0], lambda m: m[2], limit, support=support, decay=decay)


def test_session_score_is_the_best_plus_a_decaying_sum_of_the_others():
    assert session_score([0.2, 1.0, 0.4], support=0.5, decay=0.5) == pytest.approx(1.0 + 0.5 * (0.4 + 0.5 * 0.2))
    assert session_score([0.7], support=0.5, decay=0.5) == pytest.approx(0.7)
    assert session_score([], support=0.5, decay=0.5) == 0.0
    # A negative score (a cosine below the model's baseline) takes nothing away.
    assert session_score([0.5, -0.3], support=0.5, decay=0.5) == pytest.approx(0.5)


def test_a_session_with_several_matches_outranks_one_with_a_single_slightly_better_one():
    ranked = [("a", 1, 0.9), ("b", 2, 0.8), ("b", 3, 0.6), ("b", 4, 0.5)]
    assert [g.session_id for g in _group(ranked, 10, support=0.5, decay=0.5)] == ["b", "a"]
    # With no support from the others it is the best message that counts.
    assert [g.session_id for g in _group(ranked, 10, support=0.0, decay=0.5)] == ["a", "b"]


def test_a_heap_of_weak_matches_does_not_bury_one_strong_one():
    ranked = [("a", 1, 1.0)] + [("b", n, 0.2) for n in range(2, 30)]
    assert [g.session_id for g in _group(ranked, 10, support=0.5, decay=0.5)] == ["a", "b"]


def test_each_session_once_best_message_first_then_its_further_hits_among_the_best_messages():
    ranked = [("a", 1, 0.9), ("b", 2, 0.8), ("a", 3, 0.7), ("c", 4, 0.6), ("b", 5, 0.5), ("a", 6, 0.1)]
    groups = _group(ranked, 4, support=0.0, decay=0.5)
    assert [g.session_id for g in groups] == ["a", "b", "c"]
    # Message 6 of session a is not among the best four messages, 5 of session b neither.
    assert [[m[1] for m in g.hits] for g in groups] == [[1, 3], [2], [4]]


def test_limit_counts_sessions_and_the_best_session_carries_all_its_leading_messages():
    ranked = [("a", n, 1.0 - n / 100) for n in range(6)] + [(s, 10 + i, 0.3) for i, s in enumerate("bcdefg")]
    groups = _group(ranked, 3, support=0.5, decay=0.5)
    assert [g.session_id for g in groups] == ["a", "b", "c"]
    assert [m[1] for m in groups[0].hits] == [0, 1, 2]
    assert all(len(g.hits) == 1 for g in groups[1:])


def test_the_best_message_leads_its_session_even_when_found_lower_in_the_list():
    # A list appended from another source (the keyword engine's further matches) may hold a
    # session's better message after a worse one; ties keep the list's order.
    ranked = [("a", 1, 0.2), ("b", 2, 0.5), ("a", 3, 0.6)]
    groups = _group(ranked, 10, support=0.0, decay=0.5)
    assert [(g.session_id, [m[1] for m in g.hits]) for g in groups] == [("a", [3, 1]), ("b", [2])]
    tied = _group([("x", 1, 0.5), ("y", 2, 0.5)], 10, support=0.0, decay=0.5)
    assert [g.session_id for g in tied] == ["x", "y"]


def test_nothing_in_nothing_out():
    assert _group([], 10) == []
    assert session_score([], support=0.5) == 0.0
