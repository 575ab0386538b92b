"""The benches' answer by answer log (``--questions``): one JSON line for each system's answer to each
question, with the gold's place as the tables count it, so a cell can be read question by question."""

from __future__ import annotations

import json

from bench_modules import bench

locomo = bench("locomo")


def test_gold_rank_counts_distinct_sessions_of_the_first_ten_results():
    assert locomo.gold_rank(["a", "b", "c"], {"c"}) == 3
    assert locomo.gold_rank(["a", "a", "b"], {"b"}) == 2  # a session's second result takes no place
    assert locomo.gold_rank([str(i) for i in range(12)], {"10"}) is None  # the eleventh result is out
    assert locomo.gold_rank([], {"a"}) is None


def test_scores_and_the_log_agree_on_each_answer(tmp_path):
    path = tmp_path / "answers.jsonl"
    log, scores = locomo.QuestionLog(path), locomo.Scores()
    answers = [("plugin:hybrid", ["s1", "s2", "s2", "s3"], {"s3"}), ("plugin:keyword", ["s4"], {"s3"})]
    for system, sessions, gold in answers:
        log.add(system, "conv-1", 2, "When did 她 go?", sessions, gold)
        scores.add(2, sessions, [], gold, set())
    log.close()
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert rows == [
        {"system": "plugin:hybrid", "where": "conv-1", "category": 2, "question": "When did 她 go?",
         "gold": ["s3"], "sessions": ["s1", "s2", "s3"], "rank": 3},
        {"system": "plugin:keyword", "where": "conv-1", "category": 2, "question": "When did 她 go?",
         "gold": ["s3"], "sessions": ["s4"], "rank": None},
    ]
    assert [rank for rank, _, _ in scores.rows[2]] == [row["rank"] for row in rows]


def test_without_a_path_nothing_is_written(tmp_path):
    log = locomo.QuestionLog(None)
    log.add("plugin:hybrid", "conv-1", 1, "q", ["s1"], {"s1"})
    log.close()
    assert list(tmp_path.iterdir()) == []
