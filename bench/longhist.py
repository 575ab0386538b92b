"""Long histories: a stand-in, built from LoCoMo alone, for a LongMemEval-S-like set.

The set it imitates has one project a question: about 50 sessions and 490 messages of a user
chatting with an assistant; the user states facts in short messages, the assistant answers each in
several paragraphs that restate the user's topic and add general advice; most sessions are
distractors of the same everyday domain; the question asks which session held the fact. We do
not have it, and LoCoMo as it is (two people, short turns, one conversation a project), or with
turns merged (``bench locomo --merge``), never put a session-level BM25 ahead of keyword mode as
that set did; this stand-in does only with ``about`` (sessions about what is asked of them). What
each part here imitates, and why:

- Sessions and size: each LoCoMo conversation is one project holding its own 19-32 sessions and,
  to ``sessions`` (50) in all, distractor sessions of other LoCoMo conversations: the same
  everyday domain (family, hobbies, work, trips), in the same chatty voice. A distractor is a
  window of at most ``exchanges`` exchanges of a source session, so a project holds about 400-500
  messages, as the set does (its ~10 messages a session).
- Short user messages: every ``turns`` consecutive turns of a session, as ``bench locomo --merge``
  writes them ("Speaker: text" lines), are one user message (about 100 words at 4 turns, against
  320 in an answer at the default ``words``): every turn is kept, so the evidence and its sessions
  stay exact (the turns' dia ids map to that message). Shorter user messages would need more of
  them than the set's ~250 a project, or turns left out.
- Long assistant messages: after each user message an assistant answer of about ``words`` words in
  paragraphs that (a) restates the user message's key words, as chat assistants do: the first
  paragraph names its up to six rarest words (rarest in the file), each later paragraph one or two
  of them again (or, half the time, one of an earlier message of the session: an assistant keeps to
  the conversation's topic), the last line two of them; and (b) fills each paragraph with general
  everyday text in which a question's words occur by chance: sentences of OTHER conversations'
  turns that say nothing of a person (no first person, no one's name, no numbers), e.g. "That
  sounds like a great way to relax.", half of them holding a word the paragraph restates (advice
  on the user's topic). So the topic words come back two to three times a message and most of a
  session's words are the assistant's (76% at 300 words), as in the set.
- Questions in the user's own voice: the set's questions say "I" and no name tells its sessions
  apart. LoCoMo's questions name the speakers (they are asked as written), so with ``names="shared"`` (the default) a
  distractor's speakers are renamed to the asked conversation's (speaker A to A, B to B, in the
  speaker lines and wherever a name is a word of the text): the name then marks every session, as
  "I" does. A distractor cannot truly answer a question: it is another person's life (other events,
  places and dates), renamed; what it shares with a question is chance wording, the case to
  measure. ``names="distinct"`` keeps the names and takes distractors only from conversations whose
  speakers share no name with the asked one's (three conversations have a John): the names then
  tell the asked sessions apart, as in plain LoCoMo, for comparison.
- Sessions written around their facts (``focus``, off by default): the set's evidence sessions
  are written around the fact they hold, so its words recur through the session. With ``focus``
  every session's answers, from the first on, may name the key words of its evidence turns (the
  turns its own conversation's questions point to), distractors' as well as the asked
  conversation's: the asked session is no more about its fact than a distractor about its own.
- Sessions alike in length (``even``, off by default): a distractor window (8 messages at most)
  is shorter than the asked conversation's whole sessions (10-13 messages on average), so a
  session-as-document BM25, which weighs a document's length, would meet the gold sessions
  handicapped against the distractors, while in the set evidence and distractor sessions are alike
  (about 10 messages). With ``even`` every distractor is its whole source session (the same
  distractors, at other times), 10-13 messages a session on average for the asked and the
  other conversations alike (540-600 messages a project). Every session kept whole, rather than
  all cut to a window around their evidence turns: a cut picked around the evidence makes the
  gold session's words more about its fact than a distractor's, which the lengths alone should
  not do (measured both ways: docs/benchmarks.md, "Long histories with sessions alike in length").
- Sessions about what is asked of them (``about``, off by default): the set's questions are written
  from its evidence sessions, which are about the asked fact, so a question's own words recur
  through its session; LoCoMo's questions were written by annotators in words of their own, which
  ``focus`` (the evidence turns' rarest words) seldom restates. With ``about`` every answer of a
  session names the key words (``Corpus.keys``) of the questions its turns answer, all in its first
  paragraph and one in each later one, and no earlier message's words: a distractor's answers
  about its own conversation's questions as well, so the asked session is no more about its
  questions than a distractor about its own. A question's words then come 12 times in 1,000 words in
  its gold sessions, against 1.5 in distractors and 2 in the asked conversation's other sessions
  (3.2, 1.35 and 1.65 without it; the tune half, with ``even``).
- Content words only (``content``, off by default): a key word is any of a text's rarest words of three
  letters or more, so a short question's key words are mostly its function words ("How many pets does
  James have?": many, pets, does), which ``about`` then restates through its gold sessions, ten to thirty
  times a session. No set's sessions say "does" more than others; a session-as-document BM25 keeps
  every word of the question and is rewarded for them, where keyword mode drops them as stop words.
  With ``content`` a standard English stop list (``FUNCTION_WORDS``, NLTK's, not the plugin's own) is
  never a key word.
- Dates: a distractor starts at a time drawn between the asked conversation's first and last
  session (at least an hour before the last), so the questions are still asked after everything
  and "last year" reads as in ``bench locomo``.

Everything is drawn from ``random.Random`` seeded with text, so the same file gives the same
homes on every run and machine. Scored like ``bench locomo`` (``locomo.run``, the same systems and
``Scores``), with the tune half (conversations 0,2,4,6,8) and the held-out half (1,3,5,7,9) printed
as tables of their own.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from . import locomo

HALVES = {"tune": [0, 2, 4, 6, 8], "held-out": [1, 3, 5, 7, 9]}
# A word in more than this share of the file's turns is never a key word: LoCoMo's 150 most frequent.
COMMON = 0.0252
KEYS = 6  # key words an answer restates
EXCHANGES = 4  # a distractor's user messages, at most (each answered)
CARRY = 0.5  # share of an answer's later paragraphs that name a key word of an earlier message of the session
TOPICAL = 0.5  # share of an answer's sentences drawn from those holding a word it restates
_FIRST_PERSON = frozenset("i i'm i've i'd i'll im ive my me mine myself we we're we've our ours us".split())
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_TOKEN = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?")
# NLTK's English stop list: the words ``content`` keeps out of the key words.
FUNCTION_WORDS = frozenset("""
i me my myself we our ours ourselves you you're you've you'll you'd your yours yourself yourselves he him his himself she
she's her hers herself it it's its itself they them their theirs themselves what which who whom this that that'll these
those am is are was were be been being have has had having do does did doing a an the and but if or because as until
while of at by for with about against between into through during before after above below to from up down in out on off
over under again further then once here there when where why how all any both each few more most other some such no nor
not only own same so than too very s t can will just don don't should should've now d ll m o re ve y ain aren aren't
couldn couldn't didn didn't doesn doesn't hadn hadn't hasn hasn't haven haven't isn isn't ma mightn mightn't mustn
mustn't needn needn't shan shan't shouldn shouldn't wasn wasn't weren weren't won won't wouldn wouldn't""".split())
OPENERS = ("You mentioned {}.", "Thanks for sharing this about {}.", "So this is about {}.")
FRAMES = ("When it comes to {}, a few things can help.", "A word on {}.", "Thinking a bit more about {}.",
          "Here is one more thought on {}.")
CLOSERS = ("I hope this helps with {}.", "Let me know how {} goes.")


def _words(text: str) -> list[str]:
    return [w.casefold() for w in _TOKEN.findall(text)]


def _turns(sample: dict) -> list[dict]:
    c = sample["conversation"]
    out, k = [], 1
    while f"session_{k}" in c:
        out += c[f"session_{k}"]
        k += 1
    return out


def _names(sample: dict) -> tuple[str, str]:
    return sample["conversation"]["speaker_a"], sample["conversation"]["speaker_b"]


class Corpus:
    """What answers restate and are filled from: the word frequencies of a set of texts, and
    their impersonal sentences."""

    def __init__(self, texts: Iterable[str], names: Iterable[str] = (), stop: Iterable[str] = ()):
        df: Counter = Counter()
        count = 0
        for text in texts:
            df.update(set(_words(text)))
            count += 1
        self.df = df
        self.common = {w for w, n in df.items() if n > COMMON * count} | set(stop)
        self.names = {n.casefold() for n in names}

    def impersonal(self, texts: Iterable[str]) -> list[str]:
        """The sentences of ``texts`` that say nothing of a person (no first person, no name, no
        number), 6-30 words long: general text any answer may hold."""
        out = []
        for text in texts:
            for sentence in _SENTENCE.split(text.strip()):
                words = _words(sentence)
                if (6 <= len(sentence.split()) <= 30 and not re.search(r"\d", sentence)
                        and not _FIRST_PERSON & set(words) and not self.names & set(words)):
                    out.append(sentence)
        return sorted(set(out))

    def keys(self, text: str) -> list[str]:
        """The words of ``text`` an answer restates: its up to ``KEYS`` rarest in LoCoMo, not common
        ones (nor the ``stop`` words the corpus was made with) nor names, in the order the text has them."""
        seen = list(dict.fromkeys(w for w in _words(text) if len(w) >= 3 and w not in self.common
                                  and w not in self.names))
        rarest = set(sorted(seen, key=lambda w: (self.df[w], seen.index(w)))[:KEYS])
        return [w for w in seen if w in rarest]


def corpus_of(data: list, content: bool = False) -> Corpus:
    """The corpus of a LoCoMo file: its turns, its speakers' names; with ``content``, no
    ``FUNCTION_WORDS`` among its key words."""
    return Corpus((t["text"] for sample in data for t in _turns(sample)), (n for sample in data for n in _names(sample)),
                  FUNCTION_WORDS if content else ())


def _listed(words: list[str]) -> str:
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"


class Pool:
    """The sentences answers are filled from, and which of them hold a given word."""

    def __init__(self, sentences: list[str]):
        self.sentences = sentences
        self.holding: dict[str, list[str]] = {}
        for sentence in sentences:
            for w in set(_words(sentence)):
                self.holding.setdefault(w, []).append(sentence)

    def on(self, keys: list[str], used: set[str], rng: random.Random) -> str:
        """A sentence not in ``used``, half the time one holding one of ``keys`` when there is
        one: the general advice of an answer is about the user's topic."""
        topical = [s for k in keys for s in self.holding.get(k, ()) if s not in used]
        if topical and rng.random() < TOPICAL:
            return rng.choice(topical)
        while (sentence := rng.choice(self.sentences)) in used and len(used) < len(self.sentences):
            pass
        return sentence


def answer(keys: list[str], words: int, pool: Pool, rng: random.Random, earlier: list[str] = (),
           carry: float = CARRY) -> str:
    """An assistant answer of about ``words`` words restating ``keys``, filled from ``pool``; each
    later paragraph names, with chance ``carry``, one of the session's ``earlier`` key words instead
    of one of its own."""
    keys = keys or ["that"]
    paragraphs = max(2, round(words / 90))
    out: list[str] = []
    used: set[str] = set()
    for p in range(paragraphs):
        named = keys if p == 0 else rng.sample(keys, min(len(keys), rng.randint(1, 2)))
        if p and earlier and rng.random() < carry:
            named = [*named[:-1], rng.choice(earlier)]
        sentences = [rng.choice(OPENERS if p == 0 else FRAMES).format(_listed(named))]
        count = len(sentences[0].split())
        while count < words / paragraphs:
            sentences.append(pool.on(named, used, rng))
            used.add(sentences[-1])
            count += len(sentences[-1].split())
        out.append(" ".join(sentences))
    out[-1] += " " + rng.choice(CLOSERS).format(_listed(keys[:2]))
    return "\n\n".join(out)


def _renamed(sample: dict, to: tuple[str, str]) -> dict:
    """``sample``'s conversation with its speakers called ``to`` (A to A, B to B), in the speaker
    fields and wherever a name is a word of a turn."""
    names = dict(zip(_names(sample), to, strict=True))
    word = re.compile(r"\b(" + "|".join(re.escape(n) for n in names) + r")\b")
    c = dict(sample["conversation"], speaker_a=to[0], speaker_b=to[1])
    k = 1
    while f"session_{k}" in c:
        c[f"session_{k}"] = [dict(t, speaker=names.get(t["speaker"], t["speaker"]),
                                  text=word.sub(lambda m: names[m.group(1)], t["text"]))
                             for t in c[f"session_{k}"]]
        k += 1
    return {**sample, "conversation": c}


def _evidence_turns(sample: dict) -> dict[str, str]:
    """dia id -> text of the turns ``sample``'s questions point to."""
    pointed = {d for qa in sample.get("qa", []) for d in locomo.evidence_ids(qa.get("evidence"))}
    return {t["dia_id"]: t["text"] for t in _turns(sample) if t["dia_id"] in pointed}


def _asked(sample: dict) -> dict[str, str]:
    """dia id -> the questions of ``sample`` that point to that turn, in one text."""
    out: dict[str, list[str]] = {}
    for qa in sample.get("qa", []):
        for d in locomo.evidence_ids(qa.get("evidence")):
            out.setdefault(d, []).append(qa["question"])
    return {d: " ".join(questions) for d, questions in out.items()}


def _talk(session: dict, source: tuple[str, int], keep_dias: bool, corpus: Corpus, words: int, pool: Pool,
          rng: random.Random, evidence: dict[str, str] | None = None, about: bool = False) -> dict:
    """``session``'s blocks of turns as user messages, each answered; its dia ids kept only when
    ``keep_dias`` (a distractor holds no evidence). ``evidence`` (dia id -> text of the turns its
    conversation's questions point to): every answer may name the key words of the session's
    evidence turns, from the first answer on, as a session written around its facts does.
    ``about`` (``evidence`` then holds the questions, ``_asked``): every answer names them in its
    first paragraph and one of them in each later one, and no other message's words."""
    focus = list(dict.fromkeys(k for _r, _t, dias, _o in session["messages"] for d in dias
                               if d in (evidence or {}) for k in corpus.keys((evidence or {})[d])))
    messages, earlier = [], list(focus)
    for _role, text, dias, offset in session["messages"]:
        keys = corpus.keys(text)
        messages.append(("user", text, dias if keep_dias else [], offset))
        reply = answer(keys + focus, words, pool, rng, focus, carry=1.0) if about else \
            answer(keys, words, pool, rng, earlier)
        messages.append(("assistant", reply, [], offset + 5))
        earlier += keys
    return {**session, "source": source, "messages": messages}


def check(words: int, turns: int, sessions: int, exchanges: int, names: str) -> None:
    """Refuse settings no history can be built with, before anything is written."""
    if names not in ("shared", "distinct"):
        raise ValueError(f"names must be 'shared' or 'distinct', not {names!r}")
    if min(words, turns, sessions, exchanges) < 1:
        raise ValueError("words, turns, sessions and exchanges must each be 1 or more")


def layouts(data: list, words: int = 300, turns: int = 4, sessions: int = 50, exchanges: int = EXCHANGES,
            names: str = "shared", seed: str = "longhist", focus: bool = False,
            even: bool = False, about: bool = False, content: bool = False) -> list[list[dict]]:
    """Every conversation's sessions as ``locomo.build`` writes them (its own and the distractors,
    in time order), each with its ``source`` (sample id, session number) besides. ``focus``: the
    answers of every session carry the key words of its evidence turns; ``even``: distractors are
    whole sessions; ``about``: every answer restates the key words of the questions its session's
    turns answer; ``content``: no function word is a key word (see the module's note)."""
    check(words, turns, sessions, exchanges, names)
    corpus = corpus_of(data, content)
    impersonal = [corpus.impersonal(t["text"] for t in _turns(sample)) for sample in data]
    evidence: list[dict[str, str] | None] = [None] * len(data)
    if focus or about:
        evidence = [(_asked if about else _evidence_turns)(sample) for sample in data]
    out = []
    for n, sample in enumerate(data):
        rng = random.Random(f"{seed}:{sample['sample_id']}")
        pool = Pool([s for m, sentences in enumerate(impersonal) if m != n for s in sentences])

        own = [_talk(s, (sample["sample_id"], k), True, corpus, words, pool, rng, evidence[n], about)
               for k, s in enumerate(locomo.sessions_as_written(sample, turns), 1)]
        mine = {x.casefold() for x in _names(sample)}
        sources = [(m, k, s) for m, other in enumerate(data) if m != n
                   and (names == "shared" or not mine & {x.casefold() for x in _names(other)})
                   for k, s in enumerate(locomo.sessions_as_written(
                       _renamed(other, _names(sample)) if names == "shared" else other, turns), 1)]
        first, last = own[0]["t0"], own[-1]["t0"] - 3600
        distractors = []
        for m, k, s in rng.sample(sources, min(len(sources), max(0, sessions - len(own)))):
            window = s["messages"]
            if not even:
                start = rng.randrange(max(1, len(s["messages"]) - exchanges + 1))
                window = window[start: start + exchanges]
            base = window[0][3]
            t0 = rng.uniform(min(first, last), last)
            kept = {"t0": t0, "end": t0 + window[-1][3] - base,
                    "messages": [(role, text, dias, offset - base) for role, text, dias, offset in window]}
            distractors.append(_talk(kept, (data[m]["sample_id"], k), False, corpus, words, pool, rng, evidence[m],
                                     about))
        out.append(sorted(own + distractors, key=lambda s: s["t0"]))
    return out


def run(data_path: Path, home: Path, modes: list[str], embedder: str = "local", words: int = 300, turns: int = 4,
        sessions: int = 50, names: str = "shared", conversations: list[int] | None = None,
        context_weights: list[float] | None = None, focus: bool = False, questions_log: Path | None = None,
        even: bool = False, about: bool = False, content: bool = False) -> dict:
    """``bench locomo``'s run over the long histories of ``data_path``; the halves printed too.
    ``questions_log``: as ``locomo.run``'s."""
    check(words, turns, sessions, EXCHANGES, names)
    note = (f"; long histories: {sessions} sessions a project, {turns} turns a user message, "
            f"~{words}-word answers, names {names}{', answers about the evidence' if focus else ''}"
            f"{', whole distractor sessions' if even else ''}{', answers about the questions' if about else ''}"
            f"{', content words only' if content else ''}")
    figures = locomo.run(data_path, home, modes, embedder, context_weights, conversations,
                         layout=lambda data: layouts(data, words, turns, sessions, names=names, focus=focus, even=even,
                                                     about=about, content=content),
                         layout_note=note, halves=HALVES, questions_log=questions_log)
    figures["longhist"] = {"words": words, "turns": turns, "sessions": sessions, "names": names, "focus": focus,
                           "even": even, "about": about, "content": content}
    return figures
