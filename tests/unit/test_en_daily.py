"""The en-daily bench set and its long answers: the set is whole, its questions point at what the
user said, and lengthening the assistant's replies (``zh_daily.lengthen``) is deterministic, keeps
every message where the gold says it is, and adds what the bench claims (the user's key words
restated, filler from the other people's replies only)."""

from __future__ import annotations

import copy
import json
import re
from collections import Counter

import pytest
from bench_modules import bench

zh_data = bench("zh_data")
zh_daily = bench("zh_daily")
longhist = bench("longhist")

DATA = zh_data.load(zh_data.EN_PATH)
SPEAKERS = DATA["speakers"]


def test_the_set_is_whole_and_as_large_as_promised():
    assert zh_data.problems(DATA) == []
    assert len(DATA["people"]) == 3
    assert all(len(p["sessions"]) == 50 for p in DATA["people"])
    splits = Counter(q["split"] for q in DATA["questions"])
    assert set(splits) == {"tune", "held-out"} and abs(splits["tune"] - splits["held-out"]) <= 1
    assert {(q["person"], q["split"]) for q in DATA["questions"]} == {
        (p["id"], s) for p in DATA["people"] for s in zh_data.SPLITS}
    assert all(25 <= n <= 40 for n in Counter(q["person"] for q in DATA["questions"]).values())


def test_the_unseen_set_is_whole_too():
    # en_fresh.json: the same format, gold also on what the assistant said ("what did you suggest").
    fresh = zh_data.load(zh_data.EN_PATH.with_name("en_fresh.json"))
    assert [len(p["sessions"]) for p in fresh["people"]] == [50, 50, 50]
    assert {(q["person"], q["split"]) for q in fresh["questions"]} == {
        (p["id"], s) for p in fresh["people"] for s in zh_data.SPLITS}
    assert zh_data.problems(zh_daily.lengthen(fresh, 300)) == []


def test_every_session_is_a_user_talking_with_the_assistant_and_gold_is_what_the_user_said():
    sessions = {s["id"]: s for p in DATA["people"] for s in p["sessions"]}
    for s in sessions.values():
        speakers = [speaker for speaker, _ in s["messages"]]
        assert speakers == [SPEAKERS["user"], SPEAKERS["assistant"]] * (len(speakers) // 2), s["id"]
    for q in DATA["questions"]:
        for g in q["gold"]:
            assert all(sessions[g["session"]]["messages"][i][0] == SPEAKERS["user"] for i in g["messages"]), q["id"]
        # Asked in the person's own voice, as the imitated set's questions are.
        assert re.search(r"\b(I|my|me|we|our|us)\b", q["question"]), q["id"]


@pytest.mark.parametrize(("speaker", "role", "content"), [
    ("me", "user", "today"), ("assistant", "assistant", "today"), ("Sam", "assistant", "Sam: today")])
def test_the_sets_speakers_become_hermes_roles(speaker, role, content):
    assert zh_data.content(speaker, "today", SPEAKERS) == (role, content)


@pytest.mark.parametrize(("key", "value", "fault"), [
    ("speakers", {"user": "me", "assistant": "assistant"}, "do not name the user"),
    ("speakers", {"user": "me", "assistant": "assistant", "quoted": "no slot"}, "do not name the user"),
    ("answer_words", -5, "is not a count of words"),
    ("answer_words", "300", "is not a count of words"),
])
def test_bad_speakers_or_answer_length_are_refused(tmp_path, key, value, fault):
    data = {**copy.deepcopy(DATA), key: value}
    assert any(fault in f for f in zh_data.problems(data))
    bad = tmp_path / "en_daily.json"
    bad.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ValueError, match="not a well-formed en-daily set"):
        zh_data.load(bad)


LONG = zh_daily.lengthen(DATA, 300)


def test_lengthening_is_deterministic_and_keeps_every_message_in_place():
    assert zh_daily.lengthen(DATA, 300) == LONG
    assert zh_daily.lengthen(DATA, 300, seed="other") != LONG
    assert LONG["questions"] == DATA["questions"] and zh_data.problems(LONG) == []
    for person, long_person in zip(DATA["people"], LONG["people"], strict=True):
        for s, long_s in zip(person["sessions"], long_person["sessions"], strict=True):
            assert [m[0] for m in long_s["messages"]] == [m[0] for m in s["messages"]]
            for (speaker, text), (_, long_text) in zip(s["messages"], long_s["messages"], strict=True):
                if speaker == SPEAKERS["user"]:
                    assert long_text == text
                else:
                    # The written reply first, then about 300 words more.
                    assert long_text.startswith(text + "\n\n")
                    assert 280 <= len(long_text[len(text):].split()) <= 400


def test_long_answers_restate_the_users_key_words_and_hold_no_fact_of_the_person():
    said = [(p["id"], speaker, text) for p in DATA["people"] for s in p["sessions"] for speaker, text in s["messages"]]
    corpus = longhist.Corpus(text for _p, _s, text in said)
    for person, long_person in zip(DATA["people"], LONG["people"], strict=True):
        own = " ".join(text for pid, _s, text in said if pid == person["id"])
        others = set(corpus.impersonal(text for pid, speaker, text in said
                                       if pid != person["id"] and speaker == SPEAKERS["assistant"]))
        for s, long_s in zip(person["sessions"], long_person["sessions"], strict=True):
            for k in range(1, len(s["messages"]), 2):
                written, user = s["messages"][k][1], s["messages"][k - 1][1]
                filler = long_s["messages"][k][1][len(written):].strip().split("\n\n")
                keys = corpus.keys(user)
                assert keys and all(w in filler[0].casefold() for w in keys), (s["id"], k)
                # Every sentence after each paragraph's opening frame is another person's advice.
                for paragraph in filler:
                    for sentence in longhist._SENTENCE.split(paragraph)[1:]:
                        assert sentence in others or any(sentence == c.format(longhist._listed(keys[:2]))
                                                         for c in longhist.CLOSERS), sentence
                        assert sentence not in own
