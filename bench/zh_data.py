"""The daily sets (``bench/data/zh_daily.json``, ``bench/data/en_daily.json``): reading one and
checking it is whole.

Standard library only, so the unit tests load this file on its own.
"""

from __future__ import annotations

import json
from collections import Counter
from datetime import datetime
from pathlib import Path

PATH = Path(__file__).resolve().parent / "data" / "zh_daily.json"
EN_PATH = PATH.with_name("en_daily.json")
SPLITS = ("tune", "held-out")
DATE = "%Y-%m-%d %H:%M"
# Who the person and the assistant are in a set with no "speakers": any other speaker is someone
# messaging the person, quoted as the format shows.
SPEAKERS = {"user": "我", "assistant": "助手", "quoted": "{}：{}"}


def load(path: Path = PATH) -> dict:
    """The set, or ValueError naming every fault: a bench on a broken set measures nothing."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    found = problems(data)
    if found:
        name = (data.get("name") if isinstance(data, dict) else None) or "daily"
        raise ValueError(f"{path} is not a well-formed {name} set:\n  " + "\n  ".join(found))
    return data


def problems(data: dict) -> list[str]:
    """Every fault in the set: ids unique, sessions of 1-8 [speaker, text] messages with a date,
    each gold session in the asking person's project and each gold position in that session,
    the two splits the same size (one apart at most), the set's own ``speakers`` (if any) naming
    the user, the assistant and how others are quoted, ``answer_words`` (if any) a count."""
    if not isinstance(data, dict):
        return ["the file holds no JSON object"]
    out = []
    people = data.get("people") or []
    sessions: dict[str, tuple[str, int]] = {}  # session id -> (person, messages)
    for person in people:
        for s in person.get("sessions") or []:
            if s.get("id") in sessions:
                out.append(f"session {s.get('id')}: id used twice")
            messages = s.get("messages") or []
            sessions[s.get("id")] = (person.get("id"), len(messages))
            if not 1 <= len(messages) <= 8:
                out.append(f"session {s.get('id')}: {len(messages)} messages, not 1-8")
            if not all(isinstance(m, list) and len(m) == 2 and all(isinstance(x, str) and x.strip() for x in m)
                       for m in messages):
                out.append(f"session {s.get('id')}: a message is not [speaker, text]")
            try:
                datetime.strptime(s.get("date") or "", DATE)
            except ValueError:
                out.append(f"session {s.get('id')}: date {s.get('date')!r} is not {DATE}")
    if len({p.get("id") for p in people}) != len(people):
        out.append("a person id is used twice")
    questions = data.get("questions") or []
    if len({q.get("id") for q in questions}) != len(questions):
        out.append("a question id is used twice")
    for q in questions:
        if q.get("split") not in SPLITS:
            out.append(f"question {q.get('id')}: split {q.get('split')!r} is not one of {SPLITS}")
        if not (q.get("question") or "").strip():
            out.append(f"question {q.get('id')}: empty")
        if not q.get("gold"):
            out.append(f"question {q.get('id')}: no gold")
        for g in q.get("gold") or []:
            person, count = sessions.get(g.get("session"), (None, 0))
            if person != q.get("person"):
                out.append(f"question {q.get('id')}: gold session {g.get('session')} is not in {q.get('person')}'s")
            elif not g.get("messages") or not all(isinstance(i, int) and 0 <= i < count for i in g["messages"]):
                out.append(f"question {q.get('id')}: gold messages {g.get('messages')} not in {g.get('session')}")
    speakers = data.get("speakers", SPEAKERS)
    if not (isinstance(speakers, dict) and set(speakers) == set(SPEAKERS) and "{}" in str(speakers.get("quoted"))
            and all(isinstance(v, str) and v.strip() for v in speakers.values())):
        out.append(f"speakers {speakers!r} do not name the user, the assistant and how others are quoted")
    lengthen = data.get("answer_words", 0)
    if not isinstance(lengthen, int) or isinstance(lengthen, bool) or lengthen < 0:
        out.append(f"answer_words {lengthen!r} is not a count of words")
    split_sizes = Counter(q.get("split") for q in questions)
    if abs(split_sizes["tune"] - split_sizes["held-out"]) > 1:
        out.append(f"splits unbalanced: {dict(split_sizes)}")
    return out


def combined(sets: list[dict]) -> dict:
    """The sets as one: their people, sessions and questions side by side, each id prefixed with its
    set's name and ``/`` so none clash, each person marked with it (``source``), each question's split
    kept. One set comes back as it is. ValueError if the sets quote people differently or lengthen
    answers differently: one run reads every set's messages one way (lengthen each set first)."""
    if len(sets) == 1:
        return sets[0]
    speakers = [s.get("speakers", SPEAKERS) for s in sets]
    if any(s != speakers[0] for s in speakers) or len({s.get("answer_words", 0) for s in sets}) > 1:
        raise ValueError("the sets differ in speakers or answer_words; they cannot be read as one")
    names = [s.get("name") or "daily" for s in sets]
    if len(set(names)) != len(names):
        raise ValueError(f"a set is given twice: {names}")
    people, questions = [], []
    for name, data in zip(names, sets, strict=True):
        people += [{**p, "id": f"{name}/{p['id']}", "source": name,
                    "sessions": [{**s, "id": f"{name}/{s['id']}"} for s in p["sessions"]]} for p in data["people"]]
        questions += [{**q, "id": f"{name}/{q['id']}", "person": f"{name}/{q['person']}",
                       "gold": [{**g, "session": f"{name}/{g['session']}"} for g in q["gold"]]}
                      for q in data["questions"]]
    return {**sets[0], "name": "+".join(names), "people": people, "questions": questions}


def content(speaker: str, text: str, speakers: dict = SPEAKERS) -> tuple[str, str]:
    """(role, content) of one message as Hermes stores it, ``speakers`` as the set's."""
    if speaker == speakers["user"]:
        return "user", text
    if speaker == speakers["assistant"]:
        return "assistant", text
    return "assistant", speakers["quoted"].format(speaker, text)
