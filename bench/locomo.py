"""Retrieval quality on LoCoMo (ACL 2024), in a real Hermes state.db.

All ten conversations go into one Hermes home, written with Hermes's own
``SessionDB``: one explicit project (folder) per conversation, one Hermes
session per LoCoMo session, each turn a message ("Speaker: text", the first
speaker as ``user``, the other as ``assistant``, 10 s apart from the
session's date). Questions are passed exactly as asked. For each question
the asker is a fresh, empty session in that conversation's folder, begun an
hour after the conversation's last message: LoCoMo's questions are asked at
the end of the conversation, and "in October" or "last year" are read from
the asking session's start. Hermes's ``SessionDB`` stamps a new session with
the current time and has no way to set another, so the bench sets it with a
direct UPDATE of ``started_at`` in its own throwaway home (bench data, never
a user's state.db).

``--merge N`` is a stand-in for long messages (assistant-style answers of
many paragraphs, where a word comes back several times and a session is a
few long messages): each run of N consecutive turns of a session is written
as ONE message, its turns' "Speaker: text" lines joined by newlines, its role
that of the block's first speaker, its time the first turn's. Every turn of
the block maps to that message, so the evidence, and the sessions it is in,
stay exact; a message hit is then a block hit. ``--merge 1`` (the default)
is LoCoMo as it is.

Scored, per system, on categories 1-4 (questions with evidence):
session hit@1/@5/@10 and MRR over the distinct sessions in result order, and
turn recall@10: the share of evidence messages among the first ten message
ids in result order. The plugin's results are sessions, so its ids are read
session by session, each session's best message then its ``more_hits``; the
baselines that return messages give one id a result.

Systems, in the same run on the same database:
- the plugin, through Hermes's real plugin manager and tool dispatch;
- core ``session_search`` (unscoped, limit 10), called the way Hermes's agent
  loop calls it (it is an agent-loop tool, not in the registry dispatch);
- ``fts-or``: the reference baseline, a scoped FTS5 BM25 OR-query over the
  question's content words, 10 messages;
- ``bigram BM25``: a plain scoped BM25 over CJK character bigrams and words
  (no segmentation, no stop words), computed here over the conversation's
  messages: what a few dozen lines do for Chinese;
- ``session BM25``: the same BM25 with each session one document, ranking
  sessions (so it has no turn recall): what "which session was it?" asks.

Beside the metrics, ``sessions@10`` is how many distinct sessions the ten
results hold. Every figure is also given for the questions that name a time
("in October 2023", "last year", "2023年10月13日"), as the plugin reads them
(``timewords``); ``--time-weights`` scores the plugin modes again with other
``time_weight`` settings (rows ``plugin:<mode> t=<weight>``).

``side_by_side`` runs two files of the same conversations (LoCoMo-zh's
Chinese translation and its English originals), each in its own home, and
prints them next to each other. Per-conversation figures are printed too, so
a conversation kept aside while tuning can be read on its own.
"""

from __future__ import annotations

import json
import math
import os
import random
import re
import time
from collections import Counter, defaultdict
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Callable, Collection

from project_history_recall.keyword import cjk

from . import common

SESSION_BM25 = "session BM25 (scoped)"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
RAW_SAMPLE = 200  # chunks the raw embedder is timed on, before and after indexing
_DIA = re.compile(r"D:?(\d+):0*(\d+)")
TIMED = 100  # a question naming a time is counted again under this plus its category
ASKED_AFTER = 3600.0  # seconds from a conversation's last message to the asking session's start


def evidence_ids(raw: list) -> list[str]:
    """Normalise LoCoMo's evidence strings ('D8:6; D9:17', 'D:11:26', 'D30:05')."""
    out = []
    for item in raw or []:
        for m in _DIA.finditer(str(item)):
            out.append(f"D{int(m.group(1))}:{int(m.group(2))}")
    return out


def _session_time(text: str) -> float:
    try:
        return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").timestamp()
    except ValueError:
        return 0.0


@contextmanager
def writing(home: Path):
    """Hermes's own ``SessionDB`` and projects database of ``home``, closed after. ``home`` must
    not hold a state.db yet: the benches write their data as new sessions, and a second run into
    the same home would hold every conversation twice and score against the copies."""
    if (home / "state.db").exists():
        raise SystemExit(f"{home} already holds a Hermes state.db: give an empty folder (or none, for a temp dir)")
    from hermes_cli import projects_db
    from hermes_state import SessionDB

    db = SessionDB(db_path=home / "state.db")
    try:
        with projects_db.connect_closing(home / "projects.db") as pconn:
            yield db, pconn
    finally:
        db.close()


def _turn_text(turn: dict) -> str:
    text = f"{turn['speaker']}: {turn['text']}"
    if turn.get("blip_caption"):
        text += f" [shares a photo: {turn['blip_caption']}]"
    return text


def sessions_as_written(sample: dict, merge: int = 1) -> list[dict]:
    """One conversation's sessions as ``build`` writes them: per session its start ``t0``, the time
    of its last turn ``end``, and its ``messages`` as (role, text, LoCoMo dia ids it holds, seconds
    from the start). ``merge``: each run of this many consecutive turns is one message (see the
    module's docstring)."""
    if merge < 1:
        raise ValueError(f"merge must be 1 or more turns a message, not {merge}")
    c = sample["conversation"]
    first = c["speaker_a"]
    out = []
    k = 1
    while f"session_{k}" in c:
        t0 = _session_time(c.get(f"session_{k}_date_time", "")) or 1.6e9 + k * 86400
        turns = c[f"session_{k}"]
        messages = []
        for i in range(0, len(turns), merge):
            block = turns[i: i + merge]
            messages.append(("user" if block[0]["speaker"] == first else "assistant",
                             "\n".join(_turn_text(turn) for turn in block), [turn["dia_id"] for turn in block], 10 * i))
        out.append({"t0": t0, "end": t0 + 10 * (len(turns) - 1), "messages": messages})
        k += 1
    return out


def build(data: list, home: Path, merge: int = 1, layouts: list[list[dict]] | None = None) -> dict:
    """Write every conversation into ``home``; returns the mapping needed to score.

    ``merge``: each run of this many consecutive turns of a session is one message (see the
    module's docstring). ``layouts``: per conversation, its sessions in the shape of
    ``sessions_as_written`` (that function's, when None); the last session's ``end`` is when
    the conversation ends."""
    from hermes_cli import projects_db

    if layouts is None:
        layouts = [sessions_as_written(sample, merge) for sample in data]
    work = home.parent / "locomo-work"
    convs = {}
    asked_at = {}
    with writing(home) as (db, pconn):
        for n, (sample, sessions) in enumerate(zip(data, layouts, strict=True)):
            conv = sample["sample_id"]
            folder = work / conv
            folder.mkdir(parents=True, exist_ok=True)
            pid = projects_db.create_project(pconn, name=f"LoCoMo {conv}", folders=[str(folder)])
            dia_to_msg, msg_to_session = {}, {}
            for k, session in enumerate(sessions, 1):
                sid = f"2023{n:02d}{k:02d}_000000_{n:02x}{k:04x}"
                db.create_session(sid, "cli", model="locomo", cwd=str(folder))
                db.set_session_title(sid, f"{conv} session {k}")
                for role, text, dias, offset in session["messages"]:
                    mid = db.append_message(sid, role, text, timestamp=session["t0"] + offset)
                    for dia in dias:
                        dia_to_msg[dia] = mid
                    msg_to_session[mid] = sid
            asker = f"20990101_000000_{n:06x}"
            db.create_session(asker, "cli", model="locomo", cwd=str(folder))
            asked_at[asker] = sessions[-1]["end"] + ASKED_AFTER
            convs[conv] = {"project": pid, "folder": str(folder), "asker": asker, "asked_at": asked_at[asker],
                           "dia": dia_to_msg, "session_of": msg_to_session}
    import sqlite3

    with sqlite3.connect(home / "state.db") as conn:
        conn.executemany("UPDATE sessions SET started_at = ? WHERE id = ?", [(t, sid) for sid, t in asked_at.items()])
    conn.close()
    return convs


def _enable_plugin(home: Path, embedder: str) -> None:
    (home / "config.yaml").write_text("plugins:\n  enabled: [project-history-recall]\n"
                                      f"  project-history-recall:\n    embedder: {embedder}\n", encoding="utf-8")
    from hermes_cli import plugins

    plugins.discover_plugins(force=True)
    loaded = {p["key"]: p for p in plugins.get_plugin_manager().list_plugins()}
    entry = loaded.get("project-history-recall")
    if not entry or not entry.get("enabled") or entry.get("error"):
        raise RuntimeError(f"plugin did not load through Hermes: {entry}")


def gold_rank(sessions: list[str], gold_sessions: Collection[str]) -> int | None:
    """The place (from 1) of the first gold session among the distinct sessions of the first ten
    results; None when none of them is gold."""
    return next((i + 1 for i, s in enumerate(dict.fromkeys(sessions[:10])) if s in gold_sessions), None)


class Scores:
    def __init__(self):
        self.rows = defaultdict(list)  # category -> [(rank or None, turn recall, distinct sessions)]

    def add(self, category: int, sessions: list[str], messages: list[int], gold_sessions: set,
            gold_messages: set) -> None:
        distinct = list(dict.fromkeys(sessions[:10]))
        rank = gold_rank(sessions, gold_sessions)
        recall = len(gold_messages & set(messages[:10])) / len(gold_messages) if gold_messages else 0.0
        self.rows[category].append((rank, recall, len(distinct)))

    def summary(self, categories) -> dict:
        rows = [r for c in categories for r in self.rows.get(c, [])]
        n = len(rows) or 1
        return {
            "questions": len(rows),
            "hit@1": sum(1 for r, _, _ in rows if r and r <= 1) / n,
            "hit@5": sum(1 for r, _, _ in rows if r and r <= 5) / n,
            "hit@10": sum(1 for r, _, _ in rows if r and r <= 10) / n,
            "mrr": sum(1 / r for r, _, _ in rows if r) / n,
            "turn_recall@10": sum(t for _, t, _ in rows) / n,
            "sessions@10": sum(d for _, _, d in rows) / n,
            "zero": sum(1 for r, _, _ in rows if r is None) / n,
        }


class QuestionLog:
    """Every system's answer to every question, one JSON line each, when a path is given: where it
    was asked (conversation or person), its category (or split), the question, the gold sessions, the
    first ten distinct sessions in result order and the gold's place among them (null: not in ten).
    A cell of the tables is a handful of questions; this says which, and what each system ranked."""

    def __init__(self, path: Path | None):
        self.out = path.open("w", encoding="utf-8") if path else None

    def add(self, system: str, where: str, category: object, question: str, sessions: list[str],
            gold_sessions: Collection[str]) -> None:
        if self.out is None:
            return
        self.out.write(json.dumps({
            "system": system, "where": where, "category": category, "question": question,
            "gold": sorted(gold_sessions), "sessions": list(dict.fromkeys(sessions[:10])),
            "rank": gold_rank(sessions, gold_sessions)}, ensure_ascii=False) + "\n")

    def close(self) -> None:
        if self.out is not None:
            self.out.close()


def _fts_or(conn, conv_sessions: list[str], question: str) -> list[tuple[int, str]]:
    from project_history_recall.keyword.querytext import fts_quote, parse

    words = [t.text for t in parse(question).terms if t.kind == "word"]
    if not words:
        return []
    return conn.execute(
        "SELECT m.id, m.session_id FROM messages_fts JOIN messages m ON m.id = messages_fts.rowid "
        "WHERE messages_fts MATCH ? AND m.session_id IN (SELECT value FROM json_each(?)) "
        "ORDER BY bm25(messages_fts) LIMIT 10",
        (" OR ".join(fts_quote(w) for w in words), json.dumps(conv_sessions)),
    ).fetchall()


_CJK = re.compile(f"[{cjk.CJK}]+")
_WORDS = re.compile(r"[^\W_]+")


def _bigram_tokens(text: str) -> list[str]:
    """CJK runs as character bigrams (a lone character as itself), other words as words, case folded."""
    text = text.casefold()
    out = [w for w in _WORDS.findall(_CJK.sub(" ", text))]
    for run in _CJK.findall(text):
        out += [run[i: i + 2] for i in range(len(run) - 1)] if len(run) > 1 else [run]
    return out


class BigramBM25:
    """A plain BM25 (k1 1.2, b 0.75) over one conversation's messages."""

    def __init__(self, messages: list[tuple[int, str, str]]):  # (message id, session id, text)
        self.docs = [(mid, sid, Counter(_bigram_tokens(text))) for mid, sid, text in messages]
        self._stats()

    @classmethod
    def of_sessions(cls, messages: list[tuple[int, str, str]]) -> "BigramBM25":
        """Each session one document (its id in place of a message id)."""
        docs: dict[str, Counter] = defaultdict(Counter)
        for _mid, sid, text in messages:
            docs[sid].update(_bigram_tokens(text))
        out = cls.__new__(cls)
        out.docs = [(sid, sid, tf) for sid, tf in docs.items()]
        out._stats()
        return out

    def _stats(self) -> None:
        self.df = Counter(t for _, _, tf in self.docs for t in tf)
        self.avg = sum(sum(tf.values()) for _, _, tf in self.docs) / max(1, len(self.docs))

    def search(self, question: str, limit: int = 10) -> list[tuple[int, str]]:
        n, query = len(self.docs), set(_bigram_tokens(question))
        idf = {t: math.log(1 + (n - self.df[t] + 0.5) / (self.df[t] + 0.5)) for t in query if self.df[t]}
        scored = []
        for mid, sid, tf in self.docs:
            length = sum(tf.values())
            score = sum(w * tf[t] * 2.2 / (tf[t] + 1.2 * (0.25 + 0.75 * length / self.avg))
                        for t, w in idf.items() if tf[t])
            if score > 0:
                scored.append((score, mid, sid))
        scored.sort(reverse=True)
        return [(mid, sid) for _, mid, sid in scored[:limit]]


def _use_time_weight(home: Path, weight: float) -> None:
    """The plugin's own settings file says ``time_weight: weight`` and the plugin reads it so.
    Written again until the file's stamp shows the change (two writes within one tick of the
    file clock, at the same size, look unchanged)."""
    from project_history_recall import settings as config

    path = config.plugin_config_path(home)
    path.parent.mkdir(parents=True, exist_ok=True)
    while config.load(home).time_weight != weight:
        path.write_text(f"time_weight: {weight!r}\n", encoding="utf-8")
        if config.load(home).time_weight != weight:
            time.sleep(0.005)


def _keyword_index_all(home: Path, convs: dict) -> None:
    """Build the plugin's keyword index of every conversation before the first question. Left to
    the first searches, it is built in the background while Hermes's own indexes answer: the two
    agree on the first ten hits but not always below them, where a named time can reach, so the
    figures would depend on how fast the build ran."""
    from project_history_recall.hermes.host import Caller
    from project_history_recall.hermes.statedb import reading
    from project_history_recall.keyword import textindex
    from project_history_recall.scope.resolve import resolve_scope

    with reading(home / "state.db") as (conn, _shape):
        scopes = [resolve_scope(home, conn, Caller.of(conv["asker"]), include_current=True) for conv in convs.values()]
    for scope in scopes:
        textindex.keeper(home).build(scope.attribution.key, scope.members)


class Systems:
    """Every system of a run on one Hermes home, asked one question at a time, each answer timed.

    ``context_weights``: the semantic modes again with each of these neighbour weights instead of
    the model's own (systems ``plugin:<mode> w=<weight>``), from the same vectors. ``time_weights``:
    the plugin modes again with each of these ``time_weight`` settings (``plugin:<mode> t=<weight>``)."""

    HEADERS = ["system", "questions", "hit@1", "hit@5", "hit@10", "MRR", "turn R@10", "sessions@10", "zero",
               "ms/q p50"]

    def __init__(self, home: Path, modes: list[str], context_weights: list[float] | None = None,
                 time_weights: list[float] | None = None):
        import sqlite3

        from hermes_state import SessionDB

        from project_history_recall import settings as config

        self.home = home
        default_time = config.DEFAULTS["time_weight"]
        self.runs = [(m, None, f"plugin:{m}", default_time) for m in modes]
        self.runs += [(m, None, f"plugin:{m} t={t:g}", t) for t in time_weights or [] for m in modes]
        self.runs += [(m, w, f"plugin:{m} w={w:g}", default_time) for w in context_weights or [] for m in modes
                      if m != "keyword"]
        self.plugin = [r[2] for r in self.runs]
        self.names = self.plugin + ["core session_search", "fts-or (scoped BM25)", "bigram BM25 (scoped)",
                                    SESSION_BM25]
        self.embedder = None
        if context_weights:
            from project_history_recall.semantic import embedders

            self.embedder = embedders.load(config.load(home))
            self.own_weight = self.embedder.context_weight
        self.latency: dict[str, list[float]] = defaultdict(list)
        self.core_db = SessionDB(db_path=home / "state.db")
        self.ro = sqlite3.connect(f"file:{home / 'state.db'}?mode=ro", uri=True)

    def enter(self, session_ids: list[str], folder: str) -> None:
        """Ask from now on as a session in ``folder``, whose project holds ``session_ids``."""
        self.sessions = session_ids
        messages = [(r[0], r[1], r[2]) for r in self.ro.execute(
            "SELECT id, session_id, content FROM messages WHERE session_id IN (SELECT value FROM json_each(?))",
            (json.dumps(session_ids),))]
        self.bigrams, self.whole_sessions = BigramBM25(messages), BigramBM25.of_sessions(messages)
        os.environ["TERMINAL_CWD"] = folder

    def ask(self, question: str, asker: str):
        """Yields (system, session ids, message ids) in result order, for every system."""
        import model_tools
        from tools.session_search_tool import session_search

        for mode, weight, system, time_weight in self.runs:
            _use_time_weight(self.home, time_weight)
            if self.embedder is not None:
                self.embedder.context_weight = self.own_weight if weight is None else weight
            t0 = time.perf_counter()
            out = json.loads(model_tools.handle_function_call(
                "project_history_search", {"query": question, "mode": mode, "limit": 10, "context": 0},
                task_id=asker, session_id=asker))
            self.latency[system].append((time.perf_counter() - t0) * 1000)
            res = out.get("results") or []
            # Each result is a session: its best message, then its more_hits.
            yield system, [r["session_id"] for r in res], [h["message_id"] for r in res
                                                           for h in [r, *r.get("more_hits", [])]]
        t0 = time.perf_counter()
        core = json.loads(session_search(query=question, limit=10, db=self.core_db, current_session_id=asker))
        self.latency["core session_search"].append((time.perf_counter() - t0) * 1000)
        res = core.get("results") or []
        yield "core session_search", [r.get("session_id") for r in res], [r.get("match_message_id") for r in res]
        for system, search in (("fts-or (scoped BM25)", lambda: _fts_or(self.ro, self.sessions, question)),
                               ("bigram BM25 (scoped)", lambda: self.bigrams.search(question)),
                               (SESSION_BM25, lambda: self.whole_sessions.search(question))):
            t0 = time.perf_counter()
            rows = search()
            self.latency[system].append((time.perf_counter() - t0) * 1000)
            # A session-document ranking names no message.
            yield system, [r[1] for r in rows], [] if system == SESSION_BM25 else [r[0] for r in rows]

    def summary(self, system: str, scores: Scores, categories) -> dict:
        return {**scores.summary(categories), "p50_ms": common.percentile(self.latency[system], 50)}

    @staticmethod
    def row(system: str, summary: dict) -> list:
        """The row of ``HEADERS`` for one system."""
        return [system, summary["questions"], summary["hit@1"], summary["hit@5"], summary["hit@10"], summary["mrr"],
                "n/a" if system == SESSION_BM25 else summary["turn_recall@10"], summary["sessions@10"],
                f"{summary['zero']:.1%}", summary["p50_ms"]]

    def close(self) -> None:
        self.core_db.close()
        self.ro.close()


def _index_all(home: Path, convs: dict) -> dict:
    """Index every conversation ahead of the queries, timing it against the raw
    embedder on the same chunks in the same run (before and after)."""
    from project_history_recall import settings as config
    from project_history_recall.semantic import kept
    from project_history_recall.semantic import engine as semantic
    from project_history_recall.hermes.host import Caller
    from project_history_recall.scope.resolve import resolve_scope
    from project_history_recall.hermes.statedb import reading

    from .semantic import _chunk_texts, _raw_rate

    settings = config.load(home)
    ready = semantic.prepare(home, settings, wait=None)
    if not ready.usable:
        raise RuntimeError(f"semantic search unavailable: {ready.reason}")
    scopes, texts = [], []
    with reading(home / "state.db") as (conn, _shape):
        for conv in convs.values():
            scope = resolve_scope(home, conn, Caller.of(conv["asker"]), include_current=True)
            scopes.append(scope)
            texts += _chunk_texts(conn, scope.session_ids, settings)
    # A fixed sample: e5 embeds the whole of LoCoMo in ~8 CPU-minutes, and twice more just to time it is waste.
    texts = random.Random(5).sample(texts, min(RAW_SAMPLE, len(texts)))
    raw_before = _raw_rate(ready.embedder, texts, settings.batch_size)
    worker = kept.of(home).indexer(settings, ready.embedder, ready.store)
    t0 = time.perf_counter()
    chunks = sum(worker.index_now(s.attribution.key, list(s.session_ids)).chunks for s in scopes)
    wall = time.perf_counter() - t0
    raw_after = _raw_rate(ready.embedder, texts, settings.batch_size)
    raw = (raw_before + raw_after) / 2
    out = {"model": ready.embedder.fingerprint, "chunks": chunks, "wall_seconds": wall,
           "indexing_chunks_per_s": chunks / wall, "raw_chunks_per_s_before": raw_before,
           "raw_chunks_per_s_after": raw_after, "indexing_vs_raw": chunks / wall / raw}
    print(f"indexing: {chunks:,} chunks in {wall:.1f} s = {chunks / wall:.0f} chunks/s; raw embedder on the same "
          f"chunks {raw_before:.0f} (before) / {raw_after:.0f} (after) chunks/s -> indexing at "
          f"{out['indexing_vs_raw']:.0%} of raw")
    return out


def run(data_path: Path, home: Path, modes: list[str], embedder: str = "local",
        context_weights: list[float] | None = None, conversations: list[int] | None = None,
        time_weights: list[float] | None = None, merge: int = 1,
        layout: Callable[[list], list[list[dict]]] | None = None, layout_note: str = "",
        halves: dict[str, list[int]] | None = None, questions_log: Path | None = None) -> dict:
    """``context_weights``: score the semantic modes again with each of these neighbour weights
    instead of the model's own (rows ``plugin:<mode> w=<weight>``), from the same vectors.
    ``conversations``: the positions in the file to use (all when None), so a tuning half and
    the half kept aside can be run on their own. ``time_weights``: score the plugin modes again
    with each of these ``time_weight`` settings (rows ``plugin:<mode> t=<weight>``). ``merge``:
    turns a message (see the module's docstring). ``layout``: from the whole file, every
    conversation's sessions as ``build`` takes them (``sessions_as_written`` when None), said in
    the data line as ``layout_note``. ``halves``: name -> positions in the file, each printed as a
    table of its own too. ``questions_log``: write every answer there too (``QuestionLog``)."""
    info = common.begin(home)
    data = json.loads(data_path.read_text(encoding="utf-8"))
    layouts = layout(data) if layout else [sessions_as_written(sample, merge) for sample in data]
    half_of = {data[i]["sample_id"]: name for name, positions in (halves or {}).items() for i in positions
               if 0 <= i < len(data)}
    if conversations is not None:
        picked = [i for i in conversations if 0 <= i < len(data)]
        data, layouts = [data[i] for i in picked], [layouts[i] for i in picked]
    t = time.time()
    convs = build(data, home, layouts=layouts)
    print(f"data: {data_path.name} ({len(data)} conversations: {', '.join(s['sample_id'] for s in data)}"
          f"{f', {merge} turns a message' if merge > 1 else ''}{layout_note}) written to {home} in "
          f"{time.time() - t:.1f} s")
    _enable_plugin(home, embedder)

    from project_history_recall import timewords

    _keyword_index_all(home, convs)
    indexing = _index_all(home, convs) if any(m != "keyword" for m in modes) else None
    systems = Systems(home, modes, context_weights, time_weights)
    scores = {s: Scores() for s in systems.names}
    by_conv = {s: defaultdict(Scores) for s in systems.names}
    by_half = {s: defaultdict(Scores) for s in systems.names}
    log = QuestionLog(questions_log)
    try:
        for sample in data:
            conv = convs[sample["sample_id"]]
            systems.enter(sorted(set(conv["session_of"].values())), conv["folder"])
            for qa in sample["qa"]:
                gold_dia = [d for d in evidence_ids(qa.get("evidence")) if d in conv["dia"]]
                if not gold_dia:
                    continue
                gold_msgs = {conv["dia"][d] for d in gold_dia}
                gold_sessions = {conv["session_of"][m] for m in gold_msgs}
                timed = bool(timewords.find(qa["question"], conv["asked_at"]))
                for system, sessions, messages in systems.ask(qa["question"], conv["asker"]):
                    log.add(system, sample["sample_id"], qa["category"], qa["question"], sessions, gold_sessions)
                    tables = [scores[system], by_conv[system][sample["sample_id"]]]
                    if sample["sample_id"] in half_of:
                        tables.append(by_half[system][half_of[sample["sample_id"]]])
                    for table in tables:
                        table.add(qa["category"], sessions, messages, gold_sessions, gold_msgs)
                    if timed:
                        scores[system].add(TIMED + qa["category"], sessions, messages, gold_sessions, gold_msgs)
    finally:
        systems.close()
        log.close()

    figures = {"machine": info, "embedder": embedder, "merge": merge, "systems": {}, "indexing": indexing}
    rows = []
    for system in systems.names:
        summary = systems.summary(system, scores[system], (1, 2, 3, 4))
        summary["by_category"] = {CATEGORIES[c]: scores[system].summary((c,)) for c in CATEGORIES}
        summary["time_questions"] = scores[system].summary(tuple(TIMED + c for c in (1, 2, 3, 4)))
        summary["time_questions"]["by_category"] = {CATEGORIES[c]: scores[system].summary((TIMED + c,))
                                                    for c in CATEGORIES}
        summary["by_conversation"] = {conv: table.summary((1, 2, 3, 4)) for conv, table in by_conv[system].items()}
        # So a tuning half and the half kept aside can be read per category from one run.
        summary["by_conversation_category"] = {conv: {CATEGORIES[c]: table.summary((c,)) for c in CATEGORIES}
                                               for conv, table in by_conv[system].items()}
        if halves:
            summary["by_half"] = {name: table.summary((1, 2, 3, 4)) for name, table in by_half[system].items()}
        figures["systems"][system] = summary
        rows.append(Systems.row(system, summary))
    print("\nLoCoMo categories 1-4, questions as asked, 10 results\n")
    print(common.table(Systems.HEADERS, rows))
    for name in halves or {}:
        convs_of_half = [conv for conv, half in half_of.items() if half == name and conv in convs]
        if convs_of_half:
            print(f"\n{name} half ({', '.join(convs_of_half)}), categories 1-4 (ms/q over all questions)\n")
            print(common.table(Systems.HEADERS, [
                Systems.row(system, {**figures["systems"][system]["by_half"][name],
                                     "p50_ms": figures["systems"][system]["p50_ms"]}) for system in systems.names]))
    print("\nthe questions among them that name a time\n")
    print(common.table(Systems.HEADERS[:-1], [
        Systems.row(system, {**figures["systems"][system]["time_questions"], "p50_ms": None})[:-1]
        for system in systems.names]))
    print("\nper category (hit@1 / hit@5 / hit@10 / MRR / turn R@10):")
    for c, name in CATEGORIES.items():
        parts = []
        for system in systems.names:
            s = figures["systems"][system]["by_category"][name]
            parts.append(f"{system} {s['hit@1']:.3f}/{s['hit@5']:.3f}/{s['hit@10']:.3f}/{s['mrr']:.3f}/"
                         f"{s['turn_recall@10']:.3f}")
        print(f"  {c} {name} ({figures['systems'][systems.names[0]]['by_category'][name]['questions']}): " + " · ".join(parts))
    print("\nper conversation, categories 1-4 (hit@1 / MRR):")
    for conv in sorted(by_conv[systems.names[0]]):
        print(f"  {conv}: " + " · ".join(
            f"{system} {figures['systems'][system]['by_conversation'][conv]['hit@1']:.3f}/"
            f"{figures['systems'][system]['by_conversation'][conv]['mrr']:.3f}" for system in systems.plugin))
    return figures


def side_by_side(files: list[Path], root: Path, modes: list[str], embedder: str = "local",
                 context_weights: list[float] | None = None, conversations: str | None = None,
                 time_weights: list[float] | None = None, merge: int = 1, questions: Path | None = None) -> dict:
    """Each file in its own home (a fresh process each, Hermes caches its home per process), then one
    table: every system and category, the files' figures next to each other. ``questions``: a folder,
    each file's answers written there as ``<file stem>.jsonl`` (``QuestionLog``)."""
    import subprocess
    import sys

    results = {}
    if questions:
        questions.mkdir(parents=True, exist_ok=True)
    for path in files:
        out = root / f"{path.stem}.json"
        subprocess.run([sys.executable, "-m", "bench", "locomo", "--data", str(path), "--home",
                        str(root / path.stem / "home"), "--modes", ",".join(modes), "--json", str(out),
                        "--embedder", embedder, "--context-weights", ",".join(f"{w:g}" for w in context_weights or []),
                        "--time-weights", ",".join(f"{w:g}" for w in time_weights or []),
                        "--merge", str(merge), *(["--conversations", conversations] if conversations else []),
                        *(["--questions", str(questions / f"{path.stem}.jsonl")] if questions else [])],
                       check=True, cwd=Path(__file__).resolve().parents[1])
        results[path.stem] = json.loads(out.read_text())
    names = list(results)
    first = results[names[0]]["systems"]
    metrics = [("hit@1", "hit@1"), ("hit@5", "hit@5"), ("hit@10", "hit@10"), ("MRR", "mrr"),
               ("turn R@10", "turn_recall@10"),
               ("sessions@10", "sessions@10")]
    print("\nside by side, categories 1-4 (" + " | ".join(names) + ")\n")
    headers = ["system"] + [f"{n} {label}" for n in names for label, _ in metrics]
    rows = [[system] + [results[n]["systems"][system][key] for n in names for _, key in metrics] for system in first]
    print(common.table(headers, rows))
    print("\nthe questions among them that name a time (" + " | ".join(
        f"{n}: {results[n]['systems'][next(iter(first))]['time_questions']['questions']}" for n in names) + ")\n")
    rows = [[system] + [results[n]["systems"][system]["time_questions"][key] for n in names for _, key in metrics]
            for system in first]
    print(common.table(headers, rows))
    for c, name in CATEGORIES.items():
        print(f"\n{c} {name} (hit@1 / MRR): " + "; ".join(
            f"{system} " + " | ".join(f"{results[n]['systems'][system]['by_category'][name]['hit@1']:.3f}/"
                                      f"{results[n]['systems'][system]['by_category'][name]['mrr']:.3f}" for n in names)
            for system in first))
    return results
