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
- ``cjk``    a run of CJK characters, matched as a substring, plus its
             overlapping bigrams so a sentence still finds its words.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

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

# Function characters and words that carry no topic in a Chinese question.
_CJK_STOP_CHARS = frozenset("的了吗呢吧啊么呀嘛哦")
CJK_STOP_WORDS = frozenset(
    "什么 怎么 如何 为什么 哪些 哪个 哪里 是否 是不是 有没有 我们 你们 他们 这个 那个 这些 那些 "
    "一下 一个 之前 以前 上次 时候 可以 能否 应该 还是 或者 然后 就是 已经 关于 这样 那样".split()
)

_QUOTE_PAIRS = {'"': '"', "“": "”", "「": "」", "『": "』"}
_EDGE_PUNCT = "`'\"“”‘’「」『』«»()[]{}<>.,;:!?。，；：！？、…"
_SYMBOL_INNER = re.compile(r"[^\W_][_./\\:#@$\-+=&%~]+[^\W_]|[^\W_]\(")
_HEX = re.compile(r"^0x[0-9a-fA-F]+$")
_WORD = re.compile(r"[^\W_]+", re.UNICODE)


def is_cjk(ch: str) -> bool:
    cp = ord(ch)
    return (
        0x4E00 <= cp <= 0x9FFF
        or 0x3400 <= cp <= 0x4DBF
        or 0x20000 <= cp <= 0x2A6DF
        or 0xF900 <= cp <= 0xFAFF
        or 0x3040 <= cp <= 0x30FF  # kana
        or 0xAC00 <= cp <= 0xD7AF  # hangul
    )


@dataclass(frozen=True)
class Term:
    kind: str  # word | phrase | symbol | cjk
    text: str
    # A piece of something longer the person typed (a bigram of a CJK run,
    # a word inside a symbol): searched only when the whole finds too little.
    partial: bool = False
    # For a word: the prefix to match as well ("painting" -> "paint*").
    stem: str | None = None


@dataclass
class ParsedQuery:
    raw: str
    terms: list[Term] = field(default_factory=list)

    def of_kind(self, *kinds: str) -> list[Term]:
        return [t for t in self.terms if t.kind in kinds]

    @property
    def empty(self) -> bool:
        return not self.terms


def clean_text(value: object) -> str:
    """A str with no NULs, lone surrogates or control characters, length-capped."""
    text = value if isinstance(value, str) else ("" if value is None else str(value))
    text = text[: MAX_QUERY_CHARS * 2]
    text = text.encode("utf-8", "replace").decode("utf-8")  # lone surrogates -> '?'
    text = "".join(
        ch if ch in "\t\n" or unicodedata.category(ch)[0] != "C" else " " for ch in text
    )
    return unicodedata.normalize("NFKC", text)[:MAX_QUERY_CHARS].strip()


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
        cjk = is_cjk(ch)
        if runs and runs[-1][0] == cjk:
            runs[-1] = (cjk, runs[-1][1] + ch)
        else:
            runs.append((cjk, ch))
    return runs


_SUFFIXES = ("ingly", "ings", "ing", "edly", "ed", "ies", "es", "s", "ly")


def light_stem(word: str) -> str | None:
    """A prefix that also catches inflections ("painting" -> "paint"), or None.

    Questions and answers rarely use the same form of a word ("paint" /
    "painted"); on LoCoMo prefix matching lifts turn recall@10 by ~0.03.
    Only plain ASCII words of 4+ letters; the stem keeps at least 3.
    """
    if len(word) < 4 or not word.isalpha() or not word.isascii():
        return None
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)] + ("y" if suffix == "ies" else "")
    return word


_CJK_STOP_SPLIT = re.compile(
    "|".join(sorted(CJK_STOP_WORDS, key=len, reverse=True)) + "|[" + "".join(_CJK_STOP_CHARS) + "]"
)


def _cjk_terms(run: str) -> list[Term]:
    """The run's pieces between function words, each with its bigrams."""
    terms: list[Term] = []
    for piece in _CJK_STOP_SPLIT.split(run):
        if not piece:
            continue
        terms.append(Term("cjk", piece))
        if len(piece) >= 3:
            terms.extend(Term("cjk", piece[i : i + 2], partial=True) for i in range(len(piece) - 1))
    return terms


def _word_terms(text: str, keep_short: bool) -> list[Term]:
    terms = []
    for word in _WORD.findall(text.casefold()):
        if len(word) == 1 and not word.isdigit() and not keep_short:
            continue
        terms.append(Term("word", word, stem=light_stem(word)))
    return terms


def _is_symbol(token: str) -> bool:
    return bool(_HEX.match(token) or _SYMBOL_INNER.search(token) or token.endswith("()"))


def _terms(text: str, keep_stop: bool) -> list[Term]:
    phrases, rest = _extract_phrases(text)
    terms: list[Term] = [Term("phrase", p) for p in phrases]
    for token in rest.split():
        token = _strip_edges(token)
        for cjk, run in _split_scripts(token):
            if cjk:
                terms.extend([Term("cjk", run)] if keep_stop else _cjk_terms(run))
                continue
            run = _strip_edges(run)
            symbol = bool(run) and _is_symbol(run)
            if symbol:
                terms.append(Term("symbol", run))
            for t in _word_terms(run, keep_stop):
                if keep_stop or t.text not in STOP_WORDS:
                    terms.append(Term(t.kind, t.text, partial=symbol, stem=t.stem))
    return terms


def parse(raw: object) -> ParsedQuery:
    text = clean_text(raw)
    # Stop words and single letters only count when they are all there is
    # ("to be or not to be", "什么", "C").
    terms = _terms(text, keep_stop=False) or _terms(text, keep_stop=True)
    query = ParsedQuery(raw=text)
    seen: set[tuple[str, str]] = set()
    for term in terms:
        key = (term.kind, term.text.casefold())
        if key not in seen:
            seen.add(key)
            query.terms.append(term)
    query.terms = query.terms[:MAX_TERMS]
    return query


def fts_quote(text: str) -> str:
    """One FTS5 string token: every operator character stays literal."""
    return '"' + text.replace('"', '""') + '"'
