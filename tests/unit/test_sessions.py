"""Ranked hits turned into ranked sessions, pure."""

from __future__ import annotations

import random

from project_history_recall.sessions import by_session, deciding, firsts, leading, raised


def _group(ranked, limit, reserved=()):
    return [(g.session_id, [m[1] for m in g.hits]) for g in by_session(ranked, lambda m: m[0], limit, reserved)]


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
    assert _group([], 10, ["a"]) == []


def test_a_reserved_session_takes_the_place_of_the_last_others_and_keeps_its_place_in_the_order():
    ranked = [("a", 1), ("b", 2), ("c", 3), ("a", 4), ("d", 5), ("e", 6)]
    assert _group(ranked, 3, ["e"]) == [("a", [1]), ("b", [2]), ("e", [6])]
    assert _group(ranked, 3, ["e", "d"]) == [("a", [1]), ("d", [5]), ("e", [6])]
    # Already among the first: nothing moves.
    assert _group(ranked, 3, ["b"]) == _group(ranked, 3)
    # A reserved session the list does not hold reserves nothing.
    assert _group(ranked, 3, ["z"]) == _group(ranked, 3)


def test_raised_moves_later_sessions_up_to_end_at_their_place_and_the_rest_down():
    groups = by_session([(s, n) for n, s in enumerate("abcdefg")], lambda m: m[0], 7)
    order = lambda gs: "".join(g.session_id for g in gs)  # noqa: E731
    assert order(raised(groups, ["f"], 3)) == "abfcdeg"
    assert order(raised(groups, ["g", "e"], 3)) == "aegbcdf"
    # One already at or above the place stays there; the other still ends at it.
    assert order(raised(groups, ["b", "f"], 3)) == "abfcdeg"
    # At or above their place, or not among the groups: nothing moves.
    assert raised(groups, ["c"], 3) is groups and raised(groups, ["z"], 3) is groups
    assert raised(groups, [], 3) is groups
    # The first place never moves, and a group moves whole, with its hits.
    assert order(raised(groups, ["f", "g"], 2)) == "afgbcde"  # two from place 2: past the place
    assert order(raised(groups, ["f"], 1)) == "afbcdeg"  # to place 1: lands at 2
    assert raised(groups, ["e"], 2)[1].hits == [("e", 4)]


def test_firsts_are_the_first_distinct_sessions():
    ranked = [("a", 1), ("a", 2), ("b", 3), ("c", 4)]
    assert firsts(ranked, lambda m: m[0], 2) == ["a", "b"]
    assert firsts(ranked, lambda m: m[0], 0) == []
    assert firsts(ranked, lambda m: m[0], 9) == ["a", "b", "c"]


def test_leading_holds_every_item_before_the_next_session_opens():
    ranked = [("a", 1), ("b", 2), ("a", 3), ("c", 4), ("b", 5), ("a", 6)]
    assert leading(ranked, lambda m: m[0], 2) == [("a", 1), ("b", 2), ("a", 3)]
    # Further hits of the first sessions after the next one opens are not among them.
    assert leading(ranked, lambda m: m[0], 1) == [("a", 1)]
    assert leading(ranked, lambda m: m[0], 3) == ranked
    assert leading(ranked, lambda m: m[0], 0) == []
    assert leading([], lambda m: m[0], 3) == []


def test_deciding_gives_the_groups_of_the_list_without_every_rejected_item_and_asks_only_within_reach():
    rng = random.Random(7)
    for _ in range(2000):
        limit = rng.randint(1, 6)
        reserved = rng.sample("abcdefghz", rng.randint(0, limit))
        # (session, message, doubtful, rejected)
        ranked = [(rng.choice("abcdefgh"), n, rng.random() < 0.5, rng.random() < 0.3) for n in range(rng.randint(0, 30))]
        asked: list = []

        def rejects(batch, asked=asked):
            asked.extend(batch)
            return {at for at, item in enumerate(batch) if item[3]}

        found = deciding(ranked, lambda m: m[0], limit, lambda m: m[2], rejects, reserved)
        truth = [m for m in ranked if not (m[2] and m[3])]
        assert _group(found, limit, reserved) == _group(truth, limit, reserved)
        present = {m[0] for m in truth}
        assert {s for s in reserved if s in present} <= {sid for sid, _ in _group(found, limit, reserved)}
        assert all(m[2] for m in asked) and len(set(asked)) == len(asked)
        # Nothing beyond what it returns was asked about but the items it left out (unless a
        # reserved session far down lost every hit to a rejection: that leaves the reach shorter).
        gone = {m[0] for m in ranked} - present
        assert all(m in found or m[3] for m in asked) or any(s in gone for s in reserved)


def test_deciding_asks_nothing_when_the_sessions_are_found_before_any_doubtful_item():
    ranked = [("a", 1, False, False), ("b", 2, False, False), ("c", 3, True, True)]
    asked = []
    assert deciding(ranked, lambda m: m[0], 2, lambda m: m[2], lambda batch: asked.extend(batch) or set()) == ranked[:2]
    assert asked == []
