"""The long-histories stand-in of ``bench longhist``: the same file gives the same histories, every
evidence turn is in exactly one message of its own conversation, and the histories have the shape
the bench claims (sessions a project, short user messages, long answers restating them, distractors
of other conversations renamed or kept apart, all before the question)."""

from __future__ import annotations

import copy
import re
import sqlite3

import pytest
from bench_modules import bench

longhist = bench("longhist")
locomo = bench("locomo")

PEOPLE = [("Alice", "Bruno"), ("Chen", "Dana"), ("Emil", "Faye"), ("Gus", "Alice")]  # the last shares a name


def _word(i: int) -> str:
    out = ""
    while True:
        out += chr(97 + i % 26)
        i //= 26
        if not i:
            return "wq" + out


def _data(sessions: int = 3, turns: int = 8) -> list:
    """A LoCoMo-shaped file: every turn has words of its own and one sentence about no one."""
    data, i = [], 0
    for n, (a, b) in enumerate(PEOPLE):
        c: dict = {"speaker_a": a, "speaker_b": b}
        for k in range(1, sessions + 1):
            c[f"session_{k}_date_time"] = f"10:00 am on {k + 1} May, 2023"
            c[f"session_{k}"] = []
            for t in range(turns):
                c[f"session_{k}"].append({
                    "speaker": (a, b)[t % 2], "dia_id": f"D{k}:{t + 1}",
                    "text": f"Hey {(b, a)[t % 2]}, I found a {_word(i)} near the {_word(i + 1)} today. "
                            f"Such a {_word(i + 2)} can really brighten a {_word(i + 3)} morning."})
                i += 4
        data.append({"sample_id": f"conv-{n}", "conversation": c,
                     "qa": [{"question": "?", "evidence": [f"D{k}:{turns - 1}"], "category": 4}
                            for k in range(1, sessions + 1)]})
    return data


def _user_and_answers(session: dict) -> list[tuple[tuple, tuple]]:
    messages = session["messages"]
    assert [m[0] for m in messages] == ["user", "assistant"] * (len(messages) // 2)
    return list(zip(messages[::2], messages[1::2], strict=True))


def test_the_same_file_gives_the_same_histories_and_another_seed_others():
    data = _data()
    first = longhist.layouts(data, words=120, sessions=8)
    assert longhist.layouts(copy.deepcopy(data), words=120, sessions=8) == first
    assert longhist.layouts(data, words=120, sessions=8, seed="other") != first


@pytest.mark.parametrize("names", ["shared", "distinct"])
def test_every_evidence_turn_is_in_one_user_message_of_its_own_conversation(names):
    data = _data()
    for sample, sessions in zip(data, longhist.layouts(data, words=120, sessions=8, names=names), strict=True):
        held: dict[str, list] = {}
        for s in sessions:
            for role, text, dias, _offset in s["messages"]:
                for dia in dias:
                    held.setdefault(dia, []).append((s["source"][0], role, text))
        turns = {t["dia_id"]: t for k in range(1, 4) for t in sample["conversation"][f"session_{k}"]}
        assert held.keys() == turns.keys()
        for dia, places in held.items():
            assert len(places) == 1
            source, role, text = places[0]
            assert (source, role) == (sample["sample_id"], "user")
            assert f"{turns[dia]['speaker']}: {turns[dia]['text']}" in text


@pytest.mark.parametrize("names", ["shared", "distinct"])
def test_a_project_holds_its_sessions_and_distractors_of_other_conversations_before_the_question(names):
    data = _data()
    for n, sessions in enumerate(longhist.layouts(data, words=120, sessions=8, exchanges=2, names=names)):
        own = [s for s in sessions if s["source"][0] == data[n]["sample_id"]]
        others = [s for s in sessions if s not in own]
        assert len(sessions) == 8 and len(own) == 3 and len(others) == 5
        assert len({s["source"] for s in others}) == 5
        assert [s["t0"] for s in sessions] == sorted(s["t0"] for s in sessions) and sessions[-1] is own[-1]
        assert all(own[0]["t0"] <= s["t0"] and s["end"] < own[-1]["end"] for s in others)
        mine = set(PEOPLE[n])
        for s in others:
            theirs = set(PEOPLE[int(s["source"][0].split("-")[1])])
            assert len(s["messages"]) <= 2 * 2 and not any(m[2] for m in s["messages"])
            users = [u[1] for u, _ in _user_and_answers(s)]
            lines = [line for text in users for line in text.split("\n")]
            if names == "shared":  # renamed: only the asked conversation's names are left
                assert all(line.split(":")[0] in mine for line in lines)
                assert not any(re.search(rf"\b{x}\b", text) for x in theirs - mine for text in users)
            else:  # kept: and no one shares a name with the asked conversation
                assert not mine & theirs and all(line.split(":")[0] in theirs for line in lines)


def test_answers_are_long_and_restate_the_key_words_of_the_user_message_they_answer():
    data = _data()
    corpus = longhist.corpus_of(data)
    for words in (120, 400):
        for sessions in longhist.layouts(data, words=words, sessions=8):
            for s in sessions:
                for (_, question, _, asked), (_, reply, _, answered) in _user_and_answers(s):
                    keys = corpus.keys(question)
                    # The turn's own words, not the words every turn has or the names.
                    assert keys and not set(keys) & {"found", "near", "today", "alice", "bruno"}
                    assert all(re.search(rf"\b{k}\b", reply) for k in keys)
                    assert words <= len(reply.split()) <= 2 * words and len(question.split()) < len(reply.split())
                    assert answered > asked
                    # Filled with the sentences about no one, none with a name in it.
                    assert not any(re.search(rf"\b{name}\b", reply) for pair in PEOPLE for name in pair)


@pytest.mark.parametrize(("kwargs", "fault"), [
    ({"names": "mixed"}, "names must be"), ({"words": 0}, "must each be 1 or more"),
    ({"turns": 0}, "must each be 1 or more"), ({"sessions": 0}, "must each be 1 or more")])
def test_bad_settings_are_refused_with_the_fault_named(kwargs, fault):
    with pytest.raises(ValueError, match=fault):
        longhist.layouts(_data(), **kwargs)


def test_written_through_hermes_every_evidence_turn_maps_to_its_session_and_the_question_comes_last(tmp_path):
    data = _data()
    layouts = longhist.layouts(data, words=120, sessions=6)
    convs = locomo.build(data, tmp_path / "home", layouts=layouts)
    with sqlite3.connect(tmp_path / "home" / "state.db") as db:
        for sample in data:
            conv = convs[sample["sample_id"]]
            for k in range(1, 4):
                for turn in sample["conversation"][f"session_{k}"]:
                    session, content = db.execute("SELECT session_id, content FROM messages WHERE id = ?",
                                                  (conv["dia"][turn["dia_id"]],)).fetchone()
                    assert turn["text"] in content and conv["session_of"][conv["dia"][turn["dia_id"]]] == session
            sids = set(conv["session_of"].values())
            assert len(sids) == 6
            latest = db.execute("SELECT max(timestamp) FROM messages WHERE session_id IN (%s)" % ",".join("?" * 6),
                                sorted(sids)).fetchone()[0]
            assert conv["asked_at"] > latest
    db.close()


def test_with_focus_a_session_is_answered_about_its_evidence_turn_from_the_first_answer_on():
    data = _data()
    corpus = longhist.corpus_of(data)
    pointed = {(sample["sample_id"], k): corpus.keys(sample["conversation"][f"session_{k}"][-2]["text"])
               for sample in data for k in range(1, 4)}

    def foreign_in_first_answers(focus: bool) -> int:
        found = 0
        for sample, sessions in zip(data, longhist.layouts(data, words=400, sessions=8, exchanges=4, focus=focus),
                                    strict=True):
            # Its own sessions: the sentences answers are filled from are other conversations'.
            for s in (s for s in sessions if s["source"][0] == sample["sample_id"]):
                (_, question, _, _), (_, reply, _, _) = _user_and_answers(s)[0]
                # The evidence turn is in the last block: the first answer names its words only if carried.
                found += sum(1 for k in pointed[s["source"]] if k not in question and re.search(rf"\b{k}\b", reply))
        return found

    assert foreign_in_first_answers(False) == 0 and foreign_in_first_answers(True) > 0


def test_even_keeps_the_same_distractors_whole():
    data = _data(sessions=3, turns=24)  # 3 user messages a session at 8 turns, more than one exchange
    windows = longhist.layouts(data, words=120, turns=8, sessions=8, exchanges=1)
    whole = longhist.layouts(data, words=120, turns=8, sessions=8, exchanges=1, even=True)
    for sample, cut, kept in zip(data, windows, whole, strict=True):
        assert sorted(s["source"] for s in cut) == sorted(s["source"] for s in kept)
        mine = [s for s in cut if s["source"][0] == sample["sample_id"]]
        assert mine == [s for s in kept if s["source"][0] == sample["sample_id"]]
        assert {len(s["messages"]) for s in cut if s not in mine} == {2}
        assert {len(s["messages"]) for s in kept if s not in mine} == {6}


def test_with_about_every_answer_of_a_session_restates_its_questions_in_every_paragraph():
    def asked_word(conv: str, session: int) -> str:  # letters only: a digit would split the word
        return "zq" + "abcd"[int(conv[-1])] + "xyz"[session - 1]

    data = _data()
    for sample in data:
        for k, qa in enumerate(sample["qa"], 1):
            # Its one key word: every turn says "near the", so they are common words.
            qa["question"] = f"Near the {asked_word(sample['sample_id'], k)}?"

    for about in (False, True):
        for sessions in longhist.layouts(data, words=400, sessions=8, about=about):
            for s in sessions:  # distractors about their own conversation's questions too
                for _, (_, reply, _, _) in _user_and_answers(s):
                    paragraphs = reply.split("\n\n")
                    assert len(paragraphs) > 2
                    named = [re.search(rf"\b{asked_word(*s['source'])}\b", p) for p in paragraphs]
                    assert all(named) if about else not any(named)


def test_with_content_no_function_word_of_a_question_is_a_key_word():
    texts = [_word(i) for i in range(200)] + ["How many pets does James have?"]
    question = "How many pets does James have?"
    assert longhist.Corpus(texts, ["James"]).keys(question) == ["how", "many", "pets", "does", "have"]
    assert longhist.Corpus(texts, ["James"], longhist.FUNCTION_WORDS).keys(question) == ["many", "pets"]
    data = _data()
    assert longhist.corpus_of(data, content=True).common == longhist.corpus_of(data).common | longhist.FUNCTION_WORDS
