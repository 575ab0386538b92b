"""Chinese, Japanese and Korean text cut into words. Pure, apart from a lazy import.

CJK is written without spaces, so a question such as
``上个月我和老王在哪家餐厅讨论了新版本的发布计划`` is one "token" to an index
that splits on spaces. Searching it whole finds nothing; searching every
character finds everything. A dictionary segmenter finds the words
(``老王``, ``餐厅``, ``讨论``, ``发布``, ``计划``), which is what a person means.

The segmenter is ``rjieba``: the bindings of ``jieba-rs``, a Rust port of
jieba with jieba's own dictionary: the same cuts as jieba on our questions,
far faster and lighter to load, and maintained, where jieba's last release is
from 2020 (docs/benchmarks.md, "Chinese questions"). It is imported on the
first CJK query, never at plugin registration. Without it (a directory
install with no dependencies), runs are cut at function words and matched
by character bigrams instead.

The dictionary keeps some compounds whole that English writes as two words
(``诗歌朗诵``, "poetry reading"); a question searches them as their words
(``parts``), as English does.

Kana and hangul are not in jieba's dictionary: katakana runs are kept whole
(loanwords), hiragana is grammar (particles, endings), and a
hangul word (Korean separates words with spaces, but glues particles to
them) is kept whole with its bigrams as a recall net. So is a run of Thai, Lao,
Burmese or Khmer (``UNSPACED``), scripts that, like Chinese, put no space between
words: a word of one is found anywhere in a run, as a Chinese word is.
"""

from __future__ import annotations

import functools
import logging
import re
import threading

# Words that carry no topic in a question: interrogatives, pronouns,
# particles, auxiliaries. A word made only of FUNCTION_CHARS counts as one too
# (``是从``, ``上个月``, ``年前``, ``那次``: grammar, relative time and the
# measure word of an occasion, not a topic). 去 is not grammar: it is the verb
# "go" (什么时候去参加 is answered by 我去了), a word as "go" and "went" are in
# English; its grammatical uses (回去, 出去) are words the dictionary keeps whole.
# The colloquial and compound question words (啥, 咋样, 怎么办, 什么样, 多大, 几点) ask as
# 什么 and 怎么 do: as topics they found the chats that ask the same, not the answer.
# The Chinese of the English stop words (querytext.STOP_WORDS) is grammar as they are: 做 (做什么
# "what does ... do"), 更, 并, 一次, 东西 and 事情 ("thing"), 方式 ("way"), 告诉 ("tell"), 请, 很多
# and 许多 ("many"), 得到 ("get"), 类型 and 种类 ("kind", "sort"), 其他 / 其它 / 别的 ("other"), 一样 /
# 同样 / 相同 ("same"), 非常 ("very"), 任何 ("any"), 所有 / 一切 / 全部 ("all"), 每个 ("each"), 只有 and
# 只是 ("only"), 期间 ("during"), 之间 ("between"), 直到 ("until"), 再次 ("again"), 某人 and 有人
# ("someone"), 变得 ("get", as in "get brave") and 方面 (在…方面, "in"). As topics they lifted the
# sessions that say them most, not the answer.
STOP_WORDS = frozenset(
    "什么 怎么 怎样 怎么样 如何 为什么 为何 哪些 哪个 哪里 哪儿 哪家 哪位 哪种 哪天 哪年 何时 多少 多久 是否 "
    "啥 为啥 啥时候 啥样 咋 咋样 咋办 怎么办 怎么回事 什么样 多大 多长 多远 多高 几点 几岁 几时 "
    "是不是 有没有 我们 你们 他们 她们 它们 咱们 自己 大家 这个 那个 这些 那些 这样 那样 这里 那里 一下 一个 "
    "一些 之前 以前 以后 之后 上次 时候 可以 能否 应该 还是 或者 然后 就是 已经 关于 因为 所以 如果 但是 可能 "
    "知道 觉得 认为 一起 曾经 当时 那时 现在 最近 做 更 并 一次 东西 事情 方式 告诉 请 很多 许多 得到 "
    "类型 种类 其他 其它 别的 一样 同样 相同 非常 任何 所有 一切 全部 每个 只有 只是 期间 之间 直到 再次 某人 有人 "
    "变得 方面".split()
)
FUNCTION_CHARS = frozenset(
    "的地得了着过吗呢吧啊么呀嘛哦是在和与跟及或而但就也都还又再才很太最把被给对从向到来让使为以之其这那哪谁几多"
    "我你他她它们咱有没会能要想说个些每各某前后上下里中内外时年月日天号次"
)
# Words made only of FUNCTION_CHARS that name a thing, not grammar: an occasion (年会 the company's
# year-end party, 过年 the New Year holiday), a person (太太, 天才, 天使, 中年人's 中年) or a place (外地,
# 内地, 地下, 天下). As grammar they were dropped from the question ("离职前最后一次年会抽奖" searched
# for 离职 and 抽奖 only) and the session that says them lost its strongest word.
NAMING_WORDS = frozenset("年会 过年 太太 天才 天使 中年 外地 内地 地下 天下".split())

# A Han character: the basic block, extension A, the compatibility ideographs and extension B (rare
# names and places, 𠮷), as the inside of a character class ([{HAN}]).
HAN = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002a6df"
KANA = r"\u3040-\u30ff"  # hiragana and katakana
HANGUL = r"\uac00-\ud7af"  # the syllables
# Thai and Lao, Myanmar (Burmese), Khmer: scripts written without spaces between words, their
# vowel and tone marks included (as the inside of a character class).
UNSPACED = r"\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff"
# What the indexes and the questions take for CJK, searched by substrings since words are written
# without spaces between them: the four.
CJK = HAN + KANA + HANGUL + UNSPACED
_HIRAGANA = re.compile(r"^[\u3040-\u309f]+$")
_HANGUL = re.compile(f"^[{HANGUL}]+$")
# A run of one of the four (compiled once: a class of these ranges takes milliseconds to compile).
SCRIPT_RUN = re.compile(f"[{HAN}]+|[{KANA}]+|[{HANGUL}]+|[{UNSPACED}]+")
_HAN_START = re.compile(f"[{HAN}]")

logger = logging.getLogger(__name__)

_lock = threading.Lock()
_segmenter = None  # rjieba.cut, False when it cannot be imported
_subwords = None  # rjieba.cut_for_search, once ``_segmenter`` is loaded


def _cut():
    global _segmenter, _subwords
    if _segmenter is None:
        with _lock:
            if _segmenter is None:
                try:
                    import rjieba

                    _subwords = rjieba.cut_for_search
                    _segmenter = rjieba.cut
                except Exception as exc:  # not installed, or a wheel that does not load here
                    # A dependency, so its absence is worth a line: Chinese questions are weaker without it.
                    logger.warning("rjieba could not be loaded (%s: %s); Chinese questions are cut at function "
                                   "words and matched by character bigrams", type(exc).__name__, exc)
                    _segmenter = False
    return _segmenter


def is_function_word(word: str) -> bool:
    return word in STOP_WORDS or (all(ch in FUNCTION_CHARS for ch in word) and word not in NAMING_WORDS) or bool(
        _HIRAGANA.match(word))


def words(run: str) -> list[str]:
    """The words of one run of CJK characters, in order, function words included."""
    cut = _cut()
    out: list[str] = []
    for piece in SCRIPT_RUN.findall(run):
        if not _HAN_START.match(piece):
            out.append(piece)  # kana, hangul, Thai…: not in the dictionary, kept whole
        elif cut:
            out.extend(w for w in cut(piece) if w.strip())
        else:
            out.extend(_split_at_function_words(piece))
    return out


def parts(word: str) -> list[str]:
    """The dictionary words a compound the dictionary keeps whole is made of, each of two
    characters or more, in order and covering it exactly (诗歌朗诵 -> 诗歌, 朗诵; 心理健康 -> 心理,
    健康); [] for any other word, and without a segmenter.

    English writes such a compound as two words ("poetry reading") and searches each as a
    concept of its own. Searched whole, a chat that says it another way (诗歌朗读, 心理咨询和健康)
    earned at most the half share of its bigrams. A word of three characters has no such cut
    (工作室 is 工作 and 室, a bound suffix), nor has a word the dictionary does not know."""
    if len(word) < 4 or not _HAN_START.match(word) or not _cut() or _subwords is None:
        return []
    known = {w for w in _subwords(word) if len(w) >= 2 and w != word}
    out: list[str] = []
    at = 0
    while at < len(word):
        longest = max((w for w in known if word.startswith(w, at)), key=len, default=None)
        if longest is None:
            return []
        out.append(longest)
        at += len(longest)
    return out


# Without a dictionary a character cannot tell a word apart (时 in 超时), so only
# particles, which never start or end a topic word, cut a run.
_PARTICLES = "的了吗呢吧啊么呀嘛哦"
_FALLBACK_CUT = re.compile("(" + "|".join(sorted(STOP_WORDS, key=len, reverse=True)) + f"|[{_PARTICLES}])")


def _split_at_function_words(piece: str) -> list[str]:
    """Without a dictionary: the stretches between function words, and the function words."""
    return [p for p in _FALLBACK_CUT.split(piece) if p]


def stands_alone(text: str, char: str) -> bool:
    """Whether ``char`` is a word of its own somewhere in ``text``: 开 in 店开了, not in 开心 or
    开业 (the dictionary's cut, without guessing at words it does not know). True without a
    segmenter, which cannot tell."""
    return not _cut() or _cut_alone(text, char)


# Hybrid mode ranks the same candidates twice (``engine.Ranking.backed``): each text is cut once.
@functools.lru_cache(maxsize=512)
def _cut_alone(text: str, char: str) -> bool:
    cut = _cut()
    return any(char in piece and char in cut(piece, False) for piece in SCRIPT_RUN.findall(text))


def content_chars(word: str) -> list[str]:
    """The Han characters of ``word`` that are not grammar (``看牙`` -> 看, 牙; ``胃里`` -> 胃)."""
    return [ch for ch in word if _HAN_START.match(ch) and ch not in FUNCTION_CHARS]


def _naming_words_rejoined(cut: list[str]) -> list[str]:
    """``cut`` with a word of ``NAMING_WORDS`` that the segmenter split between two words of grammar
    made whole again (年会上 is cut 年 / 会上; 年会 / 上 keeps the party)."""
    out: list[str] = []
    for w in cut:
        prev = out[-1] if out else ""
        if prev and prev[-1] + w[:1] in NAMING_WORDS and is_function_word(prev) and is_function_word(w):
            out[-1:] = [p for p in (prev[:-1], prev[-1] + w[0]) if p]
            w = w[1:]
        if w:
            out.append(w)
    return out


def content_words(run: str) -> list[tuple[str, bool]]:
    """(word, is_content) for each of the run's words, in order; a compound of content words
    (``parts``) as those words (docs/benchmarks.md, "Compounds searched as their words")."""
    out: list[tuple[str, bool]] = []
    for w in _naming_words_rejoined(words(run)):
        split = [] if is_function_word(w) else parts(w)
        # A compound with a word of grammar in it is a phrase of its own (多长时间, "how long").
        if split and not any(map(is_function_word, split)):
            out.extend((p, True) for p in split)
        else:
            out.append((w, not is_function_word(w)))
    return out


def is_hangul(word: str) -> bool:
    return bool(_HANGUL.match(word))


def bigrams(text: str) -> list[str]:
    return [text[i: i + 2] for i in range(len(text) - 1)]
