"""The zh-daily bench set is well-formed: what ``bench zh-daily`` scores must point at real messages."""

from __future__ import annotations

import copy
import importlib.util
import json
from collections import Counter
from pathlib import Path

import pytest

# By file: the checkout is kept off sys.path in the tests (see conftest), and this module needs nothing else.
_spec = importlib.util.spec_from_file_location("zh_data", Path(__file__).resolve().parents[2] / "bench" / "zh_data.py")
assert _spec and _spec.loader
zh_data = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(zh_data)

DATA = zh_data.load()


def test_the_set_is_whole_and_as_large_as_promised():
    assert zh_data.problems(DATA) == []
    sessions = [s for p in DATA["people"] for s in p["sessions"]]
    assert len(DATA["people"]) >= 5 and len(sessions) >= 250 and len(DATA["questions"]) >= 100
    splits = Counter(q["split"] for q in DATA["questions"])
    assert set(splits) == {"tune", "held-out"} and abs(splits["tune"] - splits["held-out"]) <= 1
    # Every person is asked about, in both splits.
    assert {(q["person"], q["split"]) for q in DATA["questions"]} == {
        (p["id"], s) for p in DATA["people"] for s in zh_data.SPLITS}


def test_the_unseen_sms_set_is_whole_in_the_same_format():
    sms = zh_data.load(zh_data.PATH.with_name("zh_sms.json"))
    assert sms["name"] == "zh-sms" and zh_data.problems(sms) == []
    assert len(sms["people"]) == 4 and sum(len(p["sessions"]) for p in sms["people"]) == 240
    assert len(sms["questions"]) == 80
    # Written apart from zh-daily: no session or question of one is in the other.
    daily = {text for p in DATA["people"] for s in p["sessions"] for _, text in s["messages"]}
    assert not daily & {text for p in sms["people"] for s in p["sessions"] for _, text in s["messages"]}
    assert not {q["question"] for q in DATA["questions"]} & {q["question"] for q in sms["questions"]}
    assert {(q["person"], q["split"]) for q in sms["questions"]} == {
        (p["id"], s) for p in sms["people"] for s in zh_data.SPLITS}


def test_the_unseen_chat_set_is_whole_in_the_same_format():
    chat = zh_data.load(zh_data.PATH.with_name("zh_chat.json"))
    assert chat["name"] == "zh-chat" and zh_data.problems(chat) == []
    assert len(chat["people"]) == 4 and sum(len(p["sessions"]) for p in chat["people"]) == 198
    assert len(chat["questions"]) == 96
    # Chats with the assistant only: every message is the person's or the assistant's.
    said = [m for p in chat["people"] for s in p["sessions"] for m in s["messages"]]
    assert {speaker for speaker, _ in said} == {zh_data.SPEAKERS["user"], zh_data.SPEAKERS["assistant"]}
    # Written apart from zh-daily and zh-sms: no message or question of one is in another.
    sms = zh_data.load(zh_data.PATH.with_name("zh_sms.json"))
    others = {text for d in (DATA, sms) for p in d["people"] for s in p["sessions"] for _, text in s["messages"]}
    assert not others & {text for _, text in said}
    assert not {q["question"] for d in (DATA, sms) for q in d["questions"]} & {q["question"] for q in chat["questions"]}
    assert {(q["person"], q["split"]) for q in chat["questions"]} == {
        (p["id"], s) for p in chat["people"] for s in zh_data.SPLITS}


def test_the_fresh_set_is_whole_in_the_same_format():
    fresh = zh_data.load(zh_data.PATH.with_name("zh_fresh.json"))
    assert fresh["name"] == "zh-fresh" and zh_data.problems(fresh) == []
    assert len(fresh["people"]) == 4 and sum(len(p["sessions"]) for p in fresh["people"]) == 241
    assert len(fresh["questions"]) == 80
    # Written apart from the three sets tuned on: no message or question of one is in another.
    others = [DATA] + [zh_data.load(zh_data.PATH.with_name(name)) for name in ("zh_sms.json", "zh_chat.json")]
    said = {text for d in others for p in d["people"] for s in p["sessions"] for _, text in s["messages"]}
    assert not said & {text for p in fresh["people"] for s in p["sessions"] for _, text in s["messages"]}
    assert not {q["question"] for d in others for q in d["questions"]} & {q["question"] for q in fresh["questions"]}
    assert {(q["person"], q["split"]) for q in fresh["questions"]} == {
        (p["id"], s) for p in fresh["people"] for s in zh_data.SPLITS}


def test_the_long_life_set_is_one_history_whole_in_the_same_format():
    life = zh_data.load(zh_data.PATH.with_name("zh_life.json"))
    assert life["name"] == "zh-life" and zh_data.problems(life) == []
    # One person's two years: the length the other sets lack, with every question about that one history.
    assert len(life["people"]) == 1 and len(life["people"][0]["sessions"]) == 213
    assert len(life["questions"]) == 80
    # Written apart from every other zh set: no message or question of one is in another.
    others = [DATA] + [zh_data.load(zh_data.PATH.with_name(name))
                       for name in ("zh_sms.json", "zh_chat.json", "zh_fresh.json")]
    said = {text for d in others for p in d["people"] for s in p["sessions"] for _, text in s["messages"]}
    assert not said & {text for p in life["people"] for s in p["sessions"] for _, text in s["messages"]}
    assert not {q["question"] for d in others for q in d["questions"]} & {q["question"] for q in life["questions"]}
    assert {(q["person"], q["split"]) for q in life["questions"]} == {
        (p["id"], s) for p in life["people"] for s in zh_data.SPLITS}


def _broken(path, value):
    data = copy.deepcopy(DATA)
    node = data
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return data


@pytest.mark.parametrize(("path", "value", "fault"), [
    (("questions", 0, "gold", 0, "session"), "nope", "gold session nope is not in"),
    (("questions", 0, "gold", 0, "messages"), [99], "gold messages [99] not in"),
    (("questions", 0, "person"), "chenjing", "is not in chenjing's"),
    (("questions", 1, "split"), "tune", "splits unbalanced"),
    (("questions", 0, "split"), "train", "is not one of"),
    (("questions", 1, "id"), "q001", "question id is used twice"),
    (("people", 0, "sessions", 1, "id"), "lx01", "id used twice"),
    (("people", 0, "sessions", 0, "messages"), [], "0 messages"),
    (("people", 0, "sessions", 0, "messages", 0), ["我"], "not [speaker, text]"),
    (("people", 0, "sessions", 0, "date"), "2025-09-02", "is not"),
])
def test_a_broken_set_is_refused_with_the_fault_named(tmp_path, path, value, fault):
    found = zh_data.problems(_broken(path, value))
    assert any(fault in f for f in found), found
    bad = tmp_path / "zh_daily.json"
    bad.write_text(json.dumps(_broken(path, value), ensure_ascii=False), encoding="utf-8")
    with pytest.raises(ValueError, match="not a well-formed zh-daily set"):
        zh_data.load(bad)


def test_a_file_of_something_else_is_refused(tmp_path):
    bad = tmp_path / "zh_daily.json"
    bad.write_text("[]", encoding="utf-8")
    with pytest.raises(ValueError, match="no JSON object"):
        zh_data.load(bad)


@pytest.mark.parametrize(("speaker", "role", "content"), [
    ("我", "user", "今天"), ("助手", "assistant", "今天"), ("妈妈", "assistant", "妈妈：今天")])
def test_speakers_become_hermes_roles(speaker, role, content):
    assert zh_data.content(speaker, "今天") == (role, content)
