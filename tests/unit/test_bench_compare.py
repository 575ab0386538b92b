"""``bench compare``: two systems' answers out of a ``--questions`` log, question by question."""

from __future__ import annotations

import json

from bench_modules import bench

compare = bench("compare")


def _log(tmp_path, rows):
    path = tmp_path / "answers.jsonl"
    path.write_text("".join(json.dumps(dict(zip(("system", "where", "category", "question", "rank"), row, strict=True),
                                            gold=["g"], sessions=["s"])) + "\n" for row in rows), encoding="utf-8")
    return path


def test_lists_the_questions_each_way_and_counts_every_cutoff(tmp_path, capsys):
    path = _log(tmp_path, [
        ("plugin:keyword", "conv-1", 4, "lost at one", 1), ("plugin:hybrid", "conv-1", 4, "lost at one", 2),
        ("plugin:keyword", "conv-1", 1, "out of the ten", 7), ("plugin:hybrid", "conv-1", 1, "out of the ten", None),
        ("plugin:keyword", "conv-2", 2, "gained", 3), ("plugin:hybrid", "conv-2", 2, "gained", 1),
        ("plugin:keyword", "conv-2", 2, "same", 2), ("plugin:hybrid", "conv-2", 2, "same", 2),
        ("plugin:keyword", "conv-2", 5, "adversarial", 1), ("plugin:hybrid", "conv-2", 5, "adversarial", None),
    ])
    out = compare.run(path)
    assert out["questions"] == 4  # the adversarial category is no table's
    assert out["lower"] == [("lost at one", 1, 2), ("out of the ten", 7, None)]
    assert out["higher"] == [("gained", 3, 1)]
    assert out["moved"] == {"hit@1": {"lost": 1, "gained": 1}, "hit@5": {"lost": 0, "gained": 0},
                            "hit@10": {"lost": 1, "gained": 0}}
    assert "7 -> >10  conv-1  1  out of the ten" in capsys.readouterr().out


def test_a_question_asked_twice_pairs_its_answers_in_order_and_filters_apply(tmp_path):
    path = _log(tmp_path, [
        ("plugin:keyword", "conv-1", 2, "twice", 1), ("plugin:hybrid", "conv-1", 2, "twice", 1),
        ("plugin:keyword", "conv-1", 2, "twice", 4), ("plugin:hybrid", "conv-1", 2, "twice", 3),
        ("plugin:keyword", "conv-2", 2, "elsewhere", 1), ("plugin:hybrid", "conv-2", 2, "elsewhere", 9),
    ])
    assert compare.run(path)["higher"] == [("twice", 4, 3)]
    assert compare.run(path, where={"conv-1"})["lower"] == []
    assert compare.run(path, categories={"3"})["questions"] == 0
    assert compare.run(path, ("plugin:hybrid", "plugin:keyword"), where={"conv-2"})["higher"] == [("elsewhere", 9, 1)]
