"""``bench zh-daily --distractors N``: LoCoMo-format conversations cut into short sessions and added
to a daily set, which must stay whole, keep its own sessions and questions, and hold what was asked."""

from __future__ import annotations

from datetime import datetime

import pytest
from bench_modules import bench

zh_data = bench("zh_data")
zh_daily = bench("zh_daily")

DATA = zh_data.load()


def _sample(name: str, sessions: list[int]) -> dict:
    conversation = {"speaker_a": f"{name}A", "speaker_b": f"{name}B"}
    for k, turns in enumerate(sessions, 1):
        conversation[f"session_{k}"] = [
            {"speaker": f"{name}{'AB'[i % 2]}", "dia_id": f"D{k}:{i + 1}", "text": f"{name} {k} 第{i}句"}
            for i in range(turns)]
        conversation[f"session_{k}_date_time"] = "1:56 pm on 8 May, 2023"
    return {"sample_id": name, "conversation": conversation, "qa": []}


SAMPLES = [_sample("x", [13, 7]), _sample("y", [30])]


def test_conversations_are_cut_into_short_runs_of_one_session_every_turn_once_in_order():
    runs = zh_daily.chopped(SAMPLES)
    assert runs == zh_daily.chopped(SAMPLES) != zh_daily.chopped(SAMPLES, seed="other")
    turns = [text for run in runs for _who, text in run]
    assert turns == [t["text"] for s in SAMPLES for k in (1, 2) for t in s["conversation"].get(f"session_{k}", [])]
    assert all(len({tuple(text.split()[:2]) for _who, text in run}) == 1 for run in runs)  # one session each
    # 2-4 turns; only a session's last run may be a single turn (three sessions here).
    assert all(1 <= len(run) <= 4 for run in runs) and sum(len(run) == 1 for run in runs) <= 3


def test_distractors_are_added_in_turn_to_the_people_and_answer_nothing():
    runs = len(zh_daily.chopped(SAMPLES))
    more = zh_daily.with_distractors(DATA, SAMPLES, runs)
    assert zh_data.problems(more) == [] and more["questions"] == DATA["questions"]
    added = [s for person, before in zip(more["people"], DATA["people"], strict=True)
             for s in person["sessions"][len(before["sessions"]):]]
    for person, before in zip(more["people"], DATA["people"], strict=True):
        assert person["sessions"][: len(before["sessions"])] == before["sessions"]
        assert len(person["sessions"]) - len(before["sessions"]) in (runs // len(DATA["people"]),
                                                                     -(-runs // len(DATA["people"])))
    assert len(added) == runs
    gold = {g["session"] for q in DATA["questions"] for g in q["gold"]}
    assert gold.isdisjoint(s["id"] for s in added)
    # The first speaker speaks as the person; the other is quoted by name.
    speakers = {who for s in added for who, _text in s["messages"]}
    assert speakers == {zh_data.SPEAKERS["user"], "xB", "yB"}
    dates = sorted(s["date"] for p in DATA["people"] for s in p["sessions"])
    assert all(dates[0] <= s["date"] <= dates[-1] for s in added)
    assert all(datetime.strptime(s["date"], zh_data.DATE) for s in added)


def test_a_smaller_count_takes_some_of_a_larger_ones_sessions_and_too_many_is_refused():
    def added(count):
        more = zh_daily.with_distractors(DATA, SAMPLES, count)
        return {tuple(map(tuple, s["messages"])) for p in more["people"] for s in p["sessions"]
                if s["id"].startswith("distractor")}

    assert len(added(5)) == 5 and added(5) < added(12)
    assert zh_daily.with_distractors(DATA, SAMPLES, 0) == DATA
    with pytest.raises(ValueError, match="the file gives"):
        zh_daily.with_distractors(DATA, SAMPLES, len(zh_daily.chopped(SAMPLES)) + 1)
