"""``bench zh-daily --data A --data B …``: several daily sets read as one, whose ids must not clash,
whose people, sessions and questions must all be kept, each person marked with its set."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from bench_modules import bench

zh_data = bench("zh_data")
zh_daily = bench("zh_daily")

SETS = [zh_data.load(zh_data.PATH.with_name(f"{name}.json")) for name in ("zh_daily", "zh_sms", "zh_chat")]


def test_the_sets_become_one_whole_set_every_id_prefixed_with_its_own_set():
    one = zh_data.combined(SETS)
    assert zh_data.problems(one) == [] and one["name"] == "zh-daily+zh-sms+zh-chat"
    assert len(one["people"]) == sum(len(d["people"]) for d in SETS)
    assert len(one["questions"]) == sum(len(d["questions"]) for d in SETS)
    assert sum(len(p["sessions"]) for p in one["people"]) == sum(len(p["sessions"]) for d in SETS for p in d["people"])
    # Each person is its set's, with that set's sessions as written; each question its set's, split kept.
    for data in SETS:
        name = data["name"]
        mine = [p for p in one["people"] if p["source"] == name]
        assert [p["id"] for p in mine] == [f"{name}/{p['id']}" for p in data["people"]]
        assert [m for p in mine for s in p["sessions"] for m in s["messages"]] == [
            m for p in data["people"] for s in p["sessions"] for m in s["messages"]]
        asked = [q for q in one["questions"] if q["id"].startswith(f"{name}/")]
        assert [(q["question"], q["split"]) for q in asked] == [(q["question"], q["split"]) for q in data["questions"]]
        assert all(q["person"].startswith(f"{name}/") and all(g["session"].startswith(f"{name}/") for g in q["gold"])
                   for q in asked)
    assert Counter(q["split"] for q in one["questions"]) == sum(
        (Counter(q["split"] for q in d["questions"]) for d in SETS), Counter())
    # The inputs are left as they were.
    assert SETS[0]["people"][0]["id"] == "linxiao"


def test_one_set_is_itself_and_distractors_go_on_top_of_the_combined_set():
    assert zh_data.combined(SETS[:1]) is SETS[0]
    sample = {"sample_id": "x", "conversation": {"speaker_a": "A", "speaker_b": "B", "session_1": [
        {"speaker": "AB"[i % 2], "dia_id": f"D1:{i}", "text": f"第{i}句"} for i in range(12)]}, "qa": []}
    more = zh_daily.with_distractors(zh_data.combined(SETS[:2]), [sample], 3)
    assert zh_data.problems(more) == []
    assert sum(s["id"].startswith("distractor") for p in more["people"] for s in p["sessions"]) == 3


def test_sets_that_read_their_messages_differently_or_twice_are_refused():
    other = json.loads(json.dumps(SETS[1]))
    other["speakers"] = {"user": "Me", "assistant": "AI", "quoted": "{}: {}"}
    with pytest.raises(ValueError, match="speakers or answer_words"):
        zh_data.combined([SETS[0], other])
    with pytest.raises(ValueError, match="answer_words"):
        zh_data.combined([SETS[0], {**SETS[1], "answer_words": 40}])
    with pytest.raises(ValueError, match="given twice"):
        zh_data.combined([SETS[0], SETS[0]])
