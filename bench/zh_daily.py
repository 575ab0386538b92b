"""Retrieval quality on the daily sets: zh-daily (short daily-life sessions in colloquial Chinese) and
en-daily (one English user's focused chats with an assistant, long answers); questions that paraphrase.

The set (``bench/data/zh_daily.json``, see ``zh_data``) is written for this project: five people,
260 sessions of 1-6 messages (chats with an assistant, messages between people), 126 questions the
person asks later, mostly in other words, half "tune" and half "held-out". It stands in for the
kind of data an independent check found our hybrid mode weak on and LoCoMo-zh did not predict.
``bench/data/zh_sms.json`` (``--data``), in the same format, is an unseen check of that kind written
after zh-daily had been tuned on: four people's SMS/WeChat threads and assistant chats, 240 sessions of
1-3 messages, 80 questions, never edited to suit the system.
``bench/data/zh_chat.json`` is a second such check, of chats with an assistant only: four people's
questions and the assistant's replies in everyday Chinese, 198 sessions of 1-2 turns, 96 questions.

Each person is one explicit project (folder) in one Hermes home, written with Hermes's own
``SessionDB``, a session at its date with its messages a minute apart. Each question is asked by a
fresh, empty session in the person's folder, through the same systems as ``bench locomo``
(``locomo.Systems``): the plugin through Hermes's plugin manager and dispatch, core
``session_search``, fts-or, the message bigram BM25 and the session BM25 over CJK bigrams.

``one_project`` puts all five people into one project (one folder), so each question is asked
over five times the sessions, most of them someone else's daily life in the same words: a
harder stand-in for a person's own ~2k short chats than one person's ~50 sessions. The questions
and their gold sessions are the same.

en-daily (``bench/data/en_daily.json``, written for this project) stands in for a LongMemEval-S-like
set: per person ~50 sessions, each around one topic (several near-duplicates: two dentist visits,
two trips), the user's facts in short messages, questions in the user's own voice. Its assistant
replies are written short; at build time (``answer_words`` in the set, or ``--answer-words``; 0 keeps
them as written) each gets ``bench longhist``'s filler appended (see ``lengthen``), so a session
reads like a chat assistant's: long answers restating the user's words around general advice.
``bench/data/en_fresh.json`` (run with ``--data``) is a second such set, three other people and 101
questions, written apart from en-daily and before any system ran on it, as a check no tuning has seen.

``--data`` given several times reads the sets as one (``zh_data.combined``): every set's people,
sessions and questions, ids prefixed with the set's name, figures printed per set as well. With
``one_project`` and distractors, zh-daily + zh-sms + zh-chat make one project of ~1,000 short sessions
of thirteen people, towards the independent check's ~1,900 a person: at that scale the question's
words are in many sessions and the fusion chooses among more candidates alike.

``distractors`` adds that many sessions that answer none of the questions: a LoCoMo-format file's
conversations (LoCoMo-zh for zh-daily, LoCoMo for en-daily) cut into sessions of 2-4 turns, the
first speaker as the person and the other quoted by name, dealt in turn to the people's projects
(all into the one, with ``one_project``) at dates within the set's own. It scales a person's
history towards the independent check's ~2k short sessions while the questions stay the same.
"""

from __future__ import annotations

import json
import random
import time
from datetime import datetime
from pathlib import Path

from . import common, locomo, longhist, zh_data


def lengthen(data: dict, words: int, seed: str = "daily") -> dict:
    """``data`` with each assistant reply followed by a ``longhist.answer`` of about ``words`` words:
    restating the key words of the user message it answers (rarest in the set) and of the session's
    earlier ones, filled with the impersonal sentences of the OTHER people's assistant replies (general
    advice on everyday topics, no fact of this person). The same set and seed give the same text."""
    speakers = data.get("speakers", zh_data.SPEAKERS)
    said = [(p["id"], speaker, text) for p in data["people"] for s in p["sessions"] for speaker, text in s["messages"]]
    corpus = longhist.Corpus(text for _p, _s, text in said)
    people = []
    for person in data["people"]:
        pool = longhist.Pool(corpus.impersonal(text for pid, speaker, text in said
                                               if pid != person["id"] and speaker == speakers["assistant"]))
        rng = random.Random(f"{seed}:{person['id']}")
        sessions = []
        for s in person["sessions"]:
            messages, keys, earlier = [], [], []
            for speaker, text in s["messages"]:
                if speaker == speakers["user"]:
                    earlier += keys
                    keys = corpus.keys(text)
                elif speaker == speakers["assistant"]:
                    text = f"{text}\n\n{longhist.answer(keys, words, pool, rng, earlier)}"
                messages.append([speaker, text])
            sessions.append({**s, "messages": messages})
        people.append({**person, "sessions": sessions})
    return {**data, "people": people}


def chopped(samples: list, seed: str = "distractors") -> list[list[tuple[str, str]]]:
    """Every conversation of a LoCoMo-format file (``samples``) cut into runs of 2-4 consecutive
    turns of one session, each a list of (speaker, text), in the file's order; the lengths drawn
    from ``seed``. A session's last run may be 1 turn, when that is all it has left."""
    rng = random.Random(seed)
    out = []
    for sample in samples:
        c = sample["conversation"]
        k = 1
        while f"session_{k}" in c:
            turns = [(t["speaker"], t["text"].strip()) for t in c[f"session_{k}"] if t.get("text", "").strip()]
            i = 0
            while i < len(turns):
                size = rng.randint(2, 4)
                out.append(turns[i: i + size])
                i += size
            k += 1
    return out


def with_distractors(data: dict, samples: list, count: int, seed: str = "distractors") -> dict:
    """``data`` with ``count`` sessions of ``chopped(samples)`` added, chosen by ``seed`` (a smaller
    count's sessions are among a larger one's), dealt in turn to the people, each at a time drawn
    between the set's first and last session: ``{speaker_a}`` speaks as the person, anyone else is
    quoted by name. Questions and gold are unchanged. ValueError if there are fewer than ``count``."""
    runs = chopped(samples, seed)
    if count > len(runs):
        raise ValueError(f"{count} distractor sessions asked for, the file gives {len(runs)}")
    rng = random.Random(seed)
    rng.shuffle(runs)
    speakers = data.get("speakers", zh_data.SPEAKERS)
    firsts = {s["conversation"]["speaker_a"] for s in samples}
    times = [datetime.strptime(s["date"], zh_data.DATE).timestamp() for p in data["people"] for s in p["sessions"]]
    people = [{**p, "sessions": list(p["sessions"])} for p in data["people"]]
    for n, run in enumerate(runs[:count]):
        when = datetime.fromtimestamp(rng.uniform(min(times), max(times)))
        people[n % len(people)]["sessions"].append({
            "id": f"distractor{n:05d}", "date": when.strftime(zh_data.DATE),
            "messages": [[speakers["user"] if who in firsts else who, text] for who, text in run]})
    return {**data, "people": people}


def build(data: dict, home: Path, one_project: bool = False) -> dict:
    """Write every person into ``home``; per person: project, folder, asker, position -> message id,
    and the sessions of the project the person's questions are asked in (``scope``).
    ``one_project``: everyone in one project, in one folder."""
    from hermes_cli import projects_db

    name = data.get("name", "zh-daily")  # en-daily's sessions say they are en-daily's
    work = home.parent / f"{name}-work"
    people = {}
    shared = None
    with locomo.writing(home) as (db, pconn):
        for n, person in enumerate(data["people"]):
            folder = work / ("everyone" if one_project else person["id"])
            if shared is None or not one_project:
                folder.mkdir(parents=True, exist_ok=True)
                shared = projects_db.create_project(pconn, name="everyone" if one_project else person["name"],
                                                    folders=[str(folder)])
            pid = shared
            ids: dict[tuple[str, int], int] = {}
            session_of: dict[str, str] = {}
            for k, s in enumerate(person["sessions"]):
                t0 = datetime.strptime(s["date"], zh_data.DATE)
                sid = f"{t0:%Y%m%d_%H%M%S}_{n:02x}{k:04x}"
                db.create_session(sid, "cli", model=name, cwd=str(folder))
                for i, (speaker, text) in enumerate(s["messages"]):
                    role, body = zh_data.content(speaker, text, data.get("speakers", zh_data.SPEAKERS))
                    ids[s["id"], i] = db.append_message(sid, role, body, timestamp=t0.timestamp() + 60 * i)
                session_of[s["id"]] = sid
            asker = f"20990101_000000_{n:06x}"
            db.create_session(asker, "cli", model=name, cwd=str(folder))
            people[person["id"]] = {"project": pid, "folder": str(folder), "asker": asker, "ids": ids,
                                    "session_of": session_of}
    for person in people.values():
        person["scope"] = sorted(sid for other in people.values() if other["project"] == person["project"]
                                 for sid in other["session_of"].values())
    return people


def run(data_paths: list[Path], home: Path, modes: list[str], split: str = "all", embedder: str = "local",
        context_weights: list[float] | None = None, one_project: bool = False, answer_words: int | None = None,
        distractors: int = 0, distractor_data: Path | None = None, questions_log: Path | None = None) -> dict:
    """``data_paths``: one set, or several read as one (``zh_data.combined``; each lengthened first), whose
    figures are then also printed per set. ``split``: ask the "tune" questions, the "held-out" ones, or "all" (then each split is printed too).
    ``context_weights``: as in ``locomo.Systems``. ``one_project``: see the module's note.
    ``answer_words``: words of filler after each assistant reply (0: as written; None: as the set says).
    ``distractors``: sessions of the LoCoMo-format file ``distractor_data`` added (see the module's note;
    after the filler, so the set's own sessions read the same with or without them). ``questions_log``:
    write every answer there too (``locomo.QuestionLog``)."""
    info = common.begin(home)
    # Each set at the words asked for, or its own (sets read as one must agree: ``zh_data.combined``).
    sets = [{**d, "answer_words": d.get("answer_words", 0) if answer_words is None else answer_words}
            for d in map(zh_data.load, data_paths)]
    data = zh_data.combined([lengthen(d, d["answer_words"]) if d["answer_words"] else d for d in sets])
    words = data["answer_words"]
    if distractors:
        assert distractor_data is not None
        data = with_distractors(data, json.loads(distractor_data.read_text(encoding="utf-8")), distractors)
    questions = [q for q in data["questions"] if split in ("all", q["split"])]
    t = time.time()
    people = build(data, home, one_project)
    print(f"data: {'+'.join(path.name for path in data_paths)} ({len(data['people'])} people, "
          f"{sum(len(p['sessions']) for p in data['people'])} sessions, {len(questions)} questions, split {split}"
          f"{', all in one project' if one_project else ''}{f', ~{words} words added to each answer' if words else ''}"
          f"{f', {distractors} of them distractors from {distractor_data.name}' if distractors else ''})"
          f" written to {home} in {time.time() - t:.1f} s")
    locomo._enable_plugin(home, embedder)

    indexing = locomo._index_all(home, people) if any(m != "keyword" for m in modes) else None
    systems = locomo.Systems(home, modes, context_weights)
    scores = {s: locomo.Scores() for s in systems.names}
    log = locomo.QuestionLog(questions_log)
    try:
        for pid, person in people.items():
            systems.enter(person["scope"], person["folder"])
            for q in questions:
                if q["person"] != pid:
                    continue
                gold_messages = {person["ids"][g["session"], i] for g in q["gold"] for i in g["messages"]}
                gold_sessions = {person["session_of"][g["session"]] for g in q["gold"]}
                for system, sessions, messages in systems.ask(q["question"], person["asker"]):
                    log.add(system, pid, q["split"], q["question"], sessions, gold_sessions)
                    # Keyed by split and person, so each split and each person can be read from one run.
                    scores[system].add((q["split"], pid), sessions, messages, gold_sessions, gold_messages)
    finally:
        systems.close()
        log.close()

    splits = [s for s in zh_data.SPLITS if split in ("all", s)]
    # The people of each set read as one (one set: all of them), for its own figures.
    sources: dict[str, list[str]] = {}
    for p in data["people"]:
        sources.setdefault(p.get("source", data["name"]), []).append(p["id"])
    keys = {s: [(s, p) for p in people] for s in splits}
    figures: dict = {"set": data["name"], "machine": info, "embedder": embedder, "split": split,
                     "one_project": one_project, "answer_words": words, "distractors": distractors,
                     "indexing": indexing, "systems": {}}
    for system in systems.names:
        summary = systems.summary(system, scores[system], [k for ks in keys.values() for k in ks])
        summary["by_split"] = {s: scores[system].summary(ks) for s, ks in keys.items()}
        summary["by_person"] = {p: scores[system].summary([(s, p) for s in splits]) for p in people}
        summary["by_set"] = {name: {label: scores[system].summary([(s, p) for s in kept for p in mine])
                                    for label, kept in [(split, splits)] + [(s, [s]) for s in splits if s != split]}
                             for name, mine in sources.items()}
        figures["systems"][system] = summary
    tables = [(split, figures["systems"])]
    if split == "all":
        tables += [(s, {n: f["by_split"][s] for n, f in figures["systems"].items()}) for s in splits]
    for name, summaries in tables:
        print(f"\n{data['name']}{' (one project)' if one_project else ''}"
              f"{f' (+{distractors} distractor sessions)' if distractors else ''}, split {name}, questions as asked, 10 results (ms/q over all questions asked)\n")
        print(common.table(locomo.Systems.HEADERS, [
            locomo.Systems.row(n, {**summaries[n], "p50_ms": figures["systems"][n]["p50_ms"]}) for n in systems.names]))
    if len(sources) > 1:
        print("\nper set (hit@1 / hit@5 / hit@10 / MRR):")
        for name in sources:
            for system in systems.names:
                print(f"  {name} {system}: " + " · ".join(f"{label} " + "/".join(
                    f"{cell[k]:.3f}" for k in ("hit@1", "hit@5", "hit@10", "mrr"))
                    for label, cell in figures["systems"][system]["by_set"][name].items()))
    print("\nper person (hit@1 / hit@5 / MRR):")
    for p in people:
        print(f"  {p}: " + " · ".join(
            f"{system} {figures['systems'][system]['by_person'][p]['hit@1']:.3f}/"
            f"{figures['systems'][system]['by_person'][p]['hit@5']:.3f}/"
            f"{figures['systems'][system]['by_person'][p]['mrr']:.3f}" for system in systems.names))
    return figures
