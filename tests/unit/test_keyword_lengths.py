"""A scope's message lengths, summed per session and kept while each session holds."""

from __future__ import annotations

import math

import pytest

from project_history_recall.keyword.lengths import UNEQUAL, Lengths, PerSession


def test_lengths_sum_the_messages_and_their_logarithms_a_length_under_one_counting_one():
    got = Lengths.of([0, 1, 10, 100])
    assert (got.count, got.total) == (4, 112.0) and got.logs == pytest.approx(math.log(10) + math.log(100))
    assert Lengths.of([]) == Lengths()


def test_only_unequal_lengths_have_a_mean_for_the_ranking():
    # Short questions beside long replies: the mean (505) is 5 times the geometric mean (100).
    unequal = Lengths.of([10, 1000] * 20)
    assert unequal.unequal_mean() == pytest.approx(505.0)
    # A chat of alike turns, and long messages alike, have none: the candidates' mean stands.
    assert Lengths.of([60, 80, 120, 150] * 10).unequal_mean() is None
    assert Lengths.of([1100, 1300, 900] * 10).unequal_mean() is None
    assert Lengths().unequal_mean() is None
    # Just at the bar: a mean twice the geometric mean.
    low, high = 1.0, (2 + math.sqrt(3)) ** 2  # (1 + h) / 2 == 2 * sqrt(h)
    at_bar = Lengths.of([low, high])
    assert at_bar.total / 2 == pytest.approx(UNEQUAL * math.sqrt(high))
    assert Lengths.of([low, high * 1.01]).unequal_mean() is not None and Lengths.of([low, high * 0.99]).unequal_mean() is None


def test_a_session_is_read_again_only_once_its_generation_changed():
    kept, asked = PerSession(), []

    def read(stale):
        asked.append(sorted(stale))
        return {k: Lengths.of(rows[k]) for k in stale if k in rows}

    rows = {"a": [10, 20], "b": [30], "c": []}
    assert kept.scope({"a": 1, "b": 1, "c": 0}, read) == Lengths.of([10, 20, 30])
    assert kept.scope({"a": 1, "b": 1}, read) == Lengths.of([10, 20, 30]) and asked == [["a", "b", "c"]]
    rows["b"] = [30, 40]  # b was written to
    assert kept.scope({"a": 1, "b": 2}, read) == Lengths.of([10, 20, 30, 40]) and asked[-1] == ["b"]
    assert kept.scope({"b": 2}, read) == Lengths.of([30, 40]) and len(asked) == 2  # a scope of fewer sessions


def test_each_sessions_count_is_as_the_last_scope_saw_it_and_zero_for_one_never_seen():
    kept = PerSession()
    kept.scope({"a": 1, "b": 1}, lambda stale: {"a": Lengths.of([10, 20, 30])})
    assert kept.counts(["a", "b", "c"]) == [3, 0, 0]  # "b" holds no message; "c" was never seen
