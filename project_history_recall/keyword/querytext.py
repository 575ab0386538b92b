"""Turn what a person typed into search terms. Pure; never raises.

People ask in sentences ("When did Melanie paint a sunrise?"), paste error
codes (``ERR_CONNECTION_REFUSED``, ``0x80070005``), paths (``src/app.py``),
calls (``foo.bar()``), and mix Chinese, English and code in one breath
(``修改youer服务端``). None of that is FTS5 syntax, so nothing typed here is ever
passed to ``MATCH`` as an operator: every term is quoted when the SQL is built.

Term kinds:

- ``word``   an alphanumeric word for the unicode61 index (stop words dropped);
- ``phrase`` a quoted phrase the person typed;
- ``symbol`` a token with inner punctuation, matched as an exact substring;
- ``cjk``    a Chinese/Japanese/Korean word (a question is cut into words by
             a dictionary segmenter, a compound into its words, see ``cjk``),
             matched as a substring.

Every term stands for one *concept* of the query: the words the person
typed. Some concepts also bring *partial* terms, pieces that find the
concept when it is not written the same way: the character bigrams of a
longer CJK word (a recall net for words the segmenter does not know, or
cuts differently), the words inside a symbol. A piece earns a share of its
concept, never more than the concept itself.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field, replace
from typing import Iterable

from ..textfold import INVISIBLE, normalise
from . import cjk

MAX_QUERY_CHARS = 2048
MAX_TERMS = 48

STOP_WORDS = frozenset("""
a about above after again against all am an and any are aren as at be because been before
being below between both but by can cannot could couldn did didn do does doesn doing don down
during each few for from further had hadn has hasn have haven having he her here hers herself
him himself his how i if in into is isn it its itself just let ll me more most mustn my myself
no nor not now of off on once only or other ought our ours ourselves out over own re same
shan she should shouldn so some such than that the their theirs them themselves then there
these they this those through to too under until up ve very was wasn we were weren what when
where which while who whom why will with won would wouldn you your yours yourself yourselves
also ever many much anything something someone thing things get got like kind sort way
please tell know think say said does did done make made
""".split())

_QUOTE_PAIRS = {'"': '"', "“": "”", "「": "」", "『": "』"}
_QUOTES = "".join(_QUOTE_PAIRS) + "".join(_QUOTE_PAIRS.values())
_EDGE_PUNCT = "`'\"“”‘’「」『』«»()[]{}<>.,;:!?。，；：！？、…"
_SYMBOL_INNER = re.compile(r"[^\W_][_./\\:#@$\-+=&%~]+[^\W_]|[^\W_]\(")
_HEX = re.compile(r"^0x[0-9a-fA-F]+$")
_WORD = re.compile(r"[^\W_]+", re.UNICODE)


_ONE_CJK = re.compile(f"[{cjk.CJK}]")


def is_cjk(ch: str) -> bool:
    """Whether ``ch`` belongs to a script searched as Chinese is, by substrings: CJK, kana, hangul and
    the scripts of ``cjk.UNSPACED`` (Thai, Lao, Burmese, Khmer)."""
    return _ONE_CJK.match(ch) is not None


@dataclass(frozen=True)
class Term:
    # word | phrase | symbol | cjk, as parsed here; the engine adds other forms of a concept's word as
    # stem | form | glued | character (``engine.stems``, ``glued``, ``backed_characters``).
    kind: str
    text: str
    # A piece of something longer the person typed (a bigram of a CJK run,
    # a word inside a symbol): searched along with the whole, for part of its
    # concept. (A two-character word's characters are pieces too, searched
    # only when the word finds nothing: see ``engine.characters``.)
    partial: bool = False
    # For a word: the prefix to match as well ("painting" -> "paint*").
    stem: str | None = None
    # For a word: other words that are forms of it no prefix finds ("go" -> "went").
    forms: tuple[str, ...] = ()
    # Which concept of the query this term finds (partial terms share their concept's).
    concept: int = 0


@dataclass
class ParsedQuery:
    raw: str
    terms: list[Term] = field(default_factory=list)

    @property
    def concepts(self) -> dict[int, list[Term]]:
        """Concept id -> its terms, the whole term first."""
        out: dict[int, list[Term]] = {}
        for term in sorted(self.terms, key=lambda t: t.partial):
            out.setdefault(term.concept, []).append(term)
        return out

    @property
    def heads(self) -> dict[int, Term]:
        """Concept id -> the whole term the person typed (not a piece of it)."""
        return {t.concept: t for t in self.terms if not t.partial}

    @property
    def empty(self) -> bool:
        return not self.terms


def _printable(value: object, formats: bool = False) -> str:
    """``value`` as a str with no NULs, lone surrogates or control characters, cut to twice the cap;
    with ``formats``, format characters (Cf: the joiners of 👩\u200d💻 and of Persian words) kept,
    otherwise the ``INVISIBLE`` ones deleted (``data\u200bbase`` is the word database)."""
    text = value if isinstance(value, str) else ("" if value is None else str(value))
    text = text[: MAX_QUERY_CHARS * 2]
    text = text.encode("utf-8", "replace").decode("utf-8")  # lone surrogates -> '?'
    return "".join(ch if ch in "\t\n" or unicodedata.category(ch)[0] != "C"
                   or formats and unicodedata.category(ch) == "Cf" else "" if ch in INVISIBLE else " "
                   for ch in text)


def clean_text(value: object) -> str:
    """A str with no NULs, lone surrogates or control characters, NFKC-normalised, length-capped."""
    return unicodedata.normalize("NFKC", _printable(value))[:MAX_QUERY_CHARS].strip()


def is_cut(value: object) -> bool:
    """Whether ``clean_text`` leaves part of ``value`` out: more than MAX_QUERY_CHARS of it before its
    trailing blanks."""
    return len(unicodedata.normalize("NFKC", _printable(value)).rstrip()) > MAX_QUERY_CHARS


def clean_ref(value: object) -> str:
    """A reference to a project (a name or a folder) as ``clean_text`` makes a text, but not
    normalised: a folder is spelled as its file system spells it, and NFKC folds full-width
    brackets and digits, common in Chinese folder names, into another folder's name. Names are
    compared folded on both sides (``projects.folded_name``). Format characters stay: a
    folder's name may hold them (a joiner), and one made a space names no folder."""
    return _printable(value, formats=True)[:MAX_QUERY_CHARS].strip()


# Quotes a person puts around a name, each with its closing one.
_NAME_QUOTES = {**_QUOTE_PAIRS, "'": "'", "‘": "’", "«": "»", "`": "`"}


def unquoted(ref: str) -> str:
    """``ref`` without one pair of quotes around the whole of it (``"Web Shop"``, ``“Web Shop”``), as a
    shell reads one quoted argument; as it is otherwise."""
    if len(ref) > 2 and _NAME_QUOTES.get(ref[0]) == ref[-1]:
        return ref[1:-1].strip()
    return ref


def _extract_phrases(text: str) -> tuple[list[str], str]:
    phrases: list[str] = []
    out: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        close = _QUOTE_PAIRS.get(ch)
        if close:
            end = text.find(close, i + 1)
            if end > i + 1:
                phrases.append(text[i + 1 : end].strip())
                out.append(" ")
                i = end + 1
                continue
        out.append(ch)
        i += 1
    return [p for p in phrases if p], "".join(out)


_EDGE_NO_PARENS = _EDGE_PUNCT.replace("(", "").replace(")", "")


def _strip_edges(token: str) -> str:
    """Drop punctuation around a token but keep the "()" of a call like foo.bar()."""
    token = token.strip(_EDGE_NO_PARENS)
    if token.startswith("(") and token.endswith(")"):
        token = token[1:-1]
    elif token.startswith("(") and ")" not in token:
        token = token[1:]
    elif token.endswith(")") and "(" not in token:
        token = token[:-1]
    return token.strip(_EDGE_NO_PARENS)


def _split_scripts(token: str) -> list[tuple[bool, str]]:
    runs: list[tuple[bool, str]] = []
    for ch in token:
        in_cjk = is_cjk(ch)
        if runs and runs[-1][0] == in_cjk:
            runs[-1] = (in_cjk, runs[-1][1] + ch)
        else:
            runs.append((in_cjk, ch))
    return runs


_VOWELS = frozenset("aeiouy")


def _undouble(stem: str) -> str:
    """"plann" -> "plan" (planning), "winn" -> "win", "travell" -> "travel" (British
    travelling, US traveling); "fall", "miss", "buzz" stay."""
    if len(stem) < 4 or stem[-1] != stem[-2] or stem[-1] in _VOWELS | set("sz") or stem[-1] == "l" and len(stem) < 6:
        return stem
    return stem[:-1]


def light_stem(word: str) -> str | None:
    """A prefix that also catches inflections ("painting" -> "paint"), or None.

    Questions and answers rarely use the same form of a word ("paint" /
    "painted"), so a word is also looked for by its prefix (docs/benchmarks.md,
    "English stems and irregular forms").
    Only plain ASCII words of 4+ letters; the stem keeps at least 3.

    The prefix must be one every form starts with: "activity" and
    "activities" both give "activit", "planning" gives "plan" (a doubled
    consonant is undone), "places" "plac" (a final e goes where 4 letters
    stay, "placing" has none), "hiking" "hike" (not "hik"). Words that only
    look inflected keep their end: "homeless", "family" (not "fami"),
    "apply" (not "app"), "games" (not "gam": 3-letter prefixes match too
    much, "times" gave "tim*", a name). A Snowball/Porter stem is no such
    prefix ("family" -> "famili"): it would need a stemmed index. Making
    weak verbs (go, feel, take, give, want, use) stop words instead traded
    as many LoCoMo questions as it won; their irregular forms (``IRREGULAR``)
    gained. Cutting derivations too ("passionate" -> "passion", "-ity",
    "-ment", "-ive") moved LoCoMo by a question either way.
    """
    if len(word) < 4 or not word.isalpha() or not word.isascii():
        return None
    for suffix in ("ingly", "edly", "ings", "ing", "ed"):
        stem = word[: -len(suffix)]
        if word.endswith(suffix) and len(stem) >= 3 and not (suffix == "ed" and stem.endswith("e")):
            if len(stem) == 3 and stem[0] not in _VOWELS and stem[1] in _VOWELS and stem[2] not in _VOWELS | set("wx"):
                return stem + "e"  # "hiking" -> "hike", "based" -> "base": not "hik", "bas"
            return _undouble(stem)
    if word.endswith("ies") and len(word) >= 6:
        return word[:-3] if len(word) >= 8 else word[:-3] + "y"
    if word.endswith("es") and word[:-2].endswith(("s", "x", "z", "ch", "sh")) and len(word) >= 5:
        return word[:-2]
    if word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    elif word.endswith("ly") and len(word) >= 6 and word[-3] != "i":
        return word[:-2]
    if word.endswith("e") and len(word) >= 5:
        return word[:-1]
    if word.endswith("y") and len(word) >= 6 and word[-2] not in _VOWELS:
        return word[:-1]
    return word


# Forms of a word that share no prefix with it: irregular verbs and plurals.
# Questions ask "When did Maria go to the beach?", chats say "I went to the
# beach"; code chats too ("wrote the test", "the build broke").
_IRREGULAR = """
go goes going went gone | buy buys buying bought | bring brings bringing brought | teach teaches teaching taught
catch catches catching caught | fight fights fighting fought | see sees seeing saw seen | take takes taking took taken
give gives giving gave given | come comes coming came | become becomes becoming became | run runs running ran
begin begins beginning began begun | swim swims swimming swam swum | sing sings singing sang sung
drink drinks drinking drank drunk | eat eats eating ate eaten | drive drives driving drove driven
ride rides riding rode ridden | write writes writing wrote written | speak speaks speaking spoke spoken
break breaks breaking broke broken | choose chooses choosing chose chosen | forget forgets forgetting forgot forgotten
fly flies flying flew flown | grow grows growing grew grown | throw throws throwing threw thrown
draw draws drawing drew drawn | wear wears wearing wore worn | fall falls falling fell fallen | feel feels feeling felt
keep keeps keeping kept | lose loses losing lost | meet meets meeting met | sleep sleeps sleeping slept
spend spends spending spent | send sends sending sent | build builds building built | sell sells selling sold
hold holds holding held | find finds finding found | stand stands standing stood | understand understands understood
hear hears hearing heard | pay pays paying paid | sit sits sitting sat | win wins winning won | leave leaves leaving left
child children | person people | man men | woman women | foot feet | tooth teeth | mouse mice
"""
IRREGULAR: dict[str, tuple[str, ...]] = {
    word: tuple(other for other in group if other != word)
    for group in (line.split() for line in _IRREGULAR.replace("|", "\n").splitlines()) for word in group}


def _cjk_terms(run: str, keep_stop: bool) -> list[Term]:
    """The run's words; longer words also bring their bigrams, and a
    one-character word the bigram it forms with a neighbour (the segmenter
    cuts a word it does not know, a name say, into such pieces)."""
    words = cjk.content_words(run)
    terms: list[Term] = []
    for i, (word, content) in enumerate(words):
        if not (content or keep_stop):
            continue
        terms.append(Term("cjk", word))
        # Thesaurus synonyms of a word (HIT's 同义词词林扩展版: 看病 -> 就医) would join
        # here as other forms of this concept. Left out: zh-daily's paraphrases are
        # rarely thesaurus synonyms, and the groups hold common senses (题目 -> 问题)
        # and change which rows are read, so LoCoMo-zh and zh-daily in one project
        # lost as much as they gained (docs/benchmarks.md, "Thesaurus synonyms").
        if len(word) >= 3 or cjk.is_hangul(word):
            terms.extend(Term("cjk", b, partial=True) for b in cjk.bigrams(word))
        elif len(word) == 1:
            for j in (i - 1, i + 1):
                if 0 <= j < len(words) and words[j][1] and not cjk.is_hangul(words[j][0]):
                    pair = word + words[j][0][0] if j > i else words[j][0][-1] + word
                    terms.append(Term("cjk", pair, partial=True))
    return terms


def _word_terms(text: str, keep_short: bool) -> list[Term]:
    terms = []
    for word in _WORD.findall(normalise(text)):
        if len(word) == 1 and not word.isdigit() and not keep_short:
            continue
        terms.append(Term("word", word, stem=light_stem(word), forms=IRREGULAR.get(word, ())))
    return terms


def _is_symbol(token: str) -> bool:
    return bool(_HEX.match(token) or _SYMBOL_INNER.search(token) or token.endswith("()"))


def _terms(text: str, keep_stop: bool) -> list[Term]:
    phrases, rest = _extract_phrases(text)
    terms: list[Term] = [Term("phrase", p) for p in phrases]
    for token in rest.split():
        token = _strip_edges(token)
        for cjk_run, run in _split_scripts(token):
            if cjk_run:
                terms.extend(_cjk_terms(run, keep_stop))
                continue
            run = _strip_edges(run)
            symbol = bool(run) and _is_symbol(run)
            if symbol:
                terms.append(Term("symbol", run))
            for t in _word_terms(run, keep_stop):
                if keep_stop or t.text not in STOP_WORDS:
                    terms.append(Term(t.kind, t.text, partial=symbol, stem=t.stem, forms=t.forms))
    return terms


def parse(raw: object) -> ParsedQuery:
    text = clean_text(raw)
    # Stop words and single letters only count when they are all there is
    # ("to be or not to be", "什么", "C"); and text with no letters at all
    # (an emoji, "->") is looked for exactly as pasted.
    terms = _terms(text, keep_stop=False) or _terms(text, keep_stop=True) or [
        Term("symbol", token) for token in text.split() if token.strip(_QUOTES)]
    numbered, concept = [], -1
    for term in terms:
        concept += not term.partial
        numbered.append(replace(term, concept=concept))
    # A term typed twice is one term; a piece that is also a whole word of
    # the query is that word (the concept keeps its other pieces).
    heads: dict[tuple[str, str], Term] = {}
    for term in numbered:
        if not term.partial:
            heads.setdefault((term.kind, term.text.casefold()), term)
    kept, seen = [], set()
    for term in numbered:
        key = (term.kind, term.text.casefold())
        if key in seen or (term.partial and key in heads):
            continue
        seen.add(key)
        kept.append(term if term.partial else heads[key])
    return ParsedQuery(raw=text, terms=kept[:MAX_TERMS])


def terms_besides(raw: str, phrases: Iterable[str], keep_stop: bool = False) -> list[Term]:
    """What ``parse`` looks for in ``raw`` besides its stop words (with them when ``keep_stop``), once
    each of ``phrases`` (parts of it: the times a question names) is set aside: nothing in "what did we
    do yesterday?" besides "yesterday", "bug" in "昨天的bug"."""
    rest = clean_text(raw)
    for phrase in phrases:
        rest = rest.replace(phrase, " ")
    return _terms(rest, keep_stop=keep_stop)


def stop_words(query: ParsedQuery) -> ParsedQuery:
    """The stop words of a question (``parse``d) whose other words ``parse`` kept, each a concept of
    its own, as typed: what ranks the sessions those other words do not find (``engine.topped_up``).
    In a short exchange they still tell something ("she" for a daughter, "didn't get" for a refusal),
    as they do for a BM25 over whole sessions; among the other words they only crowd the ranking."""
    # A question of stop words alone is looked for by them already.
    content = any(t.kind != "word" or t.text not in STOP_WORDS for t in query.terms)
    words = dict.fromkeys(t.text for t in _terms(query.raw, keep_stop=True) if content and t.kind == "word"
                          and t.text in STOP_WORDS)
    return ParsedQuery(raw=query.raw, terms=[Term("word", w, concept=i) for i, w in enumerate(words)][:MAX_TERMS])


def fts_quote(text: str) -> str:
    """One FTS5 string token: every operator character stays literal."""
    return '"' + text.replace('"', '""') + '"'
