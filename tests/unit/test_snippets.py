"""A snippet marks the question's words where the keyword index found them: in the text as the index
folds it (``textfold``), mapped back to the text as written."""

from __future__ import annotations

import unicodedata

import pytest

from project_history_recall import results, textfold
from project_history_recall.keyword.querytext import parse


def shown(text: str, question: str, mask=lambda s: s) -> str:
    return results.snippet(text, results.term_marks(parse(question)), mask)


@pytest.mark.parametrize("text, question, expected", [
    ("the web\u200bhook retries failed", "webhook", "the >>>web\u200bhook<<< retries failed"),
    ("نقلنا الخَادِمَ الجديد", "الخادم", "نقلنا >>>الخَادِمَ<<< الجديد"),  # the last vowel mark stays on its letter
    ("הֶעֱבַרְנוּ לַשָּׁרָת", "לשרת", "הֶעֱבַרְנוּ >>>לַשָּׁרָת<<<"),
    ("调用ＡＰＩ失败了", "API", "调用>>>ＡＰＩ<<<失败了"),
    ("修改youer服务端", "youer", "修改>>>youer<<<服务端"),
    ("Die Straße ist gesperrt", "strasse", "Die >>>Straße<<< ist gesperrt"),
    ("Die Straße ist gesperrt", "Straße", "Die >>>Straße<<< ist gesperrt"),
    ("İZMİR ofisi", "izmir", ">>>İZMİR<<< ofisi"),
])
def test_a_word_the_index_found_is_marked_however_the_text_spells_it(text, question, expected):
    assert shown(text, question) == expected


def test_a_decomposed_accent_is_found_and_shown_composed():
    text = unicodedata.normalize("NFD", "réunion à Genève demain")
    assert shown(text, "Genève") == unicodedata.normalize("NFC", "réunion à >>>Genève<<< demain")
    assert shown(text, "nothing") == text  # nothing found: shown as written


def test_marks_after_a_fold_of_another_length_land_on_their_words():
    """Characters before the match fold to more (…, ß) or to nothing (a zero-width space, vowel marks):
    the mark is where the word is in the text as written."""
    text = "好的……Straße\u200b und web\u200bhook, الخَادِمَ: the webhook"
    assert shown(text, "webhook") == "好的……Straße\u200b und >>>web\u200bhook<<<, الخَادِمَ: the >>>webhook<<<"
    assert shown(text, "strasse") == "好的……>>>Straße\u200b<<< und web\u200bhook, الخَادِمَ: the webhook"
    assert shown("ÆSTHETIC ﬁle", "file") == "ÆSTHETIC >>>ﬁle<<<"


@pytest.mark.parametrize("text, question, expected", [
    ("Painting a sunrise, PAINTED it", "painting", ">>>Painting<<< a sunrise, >>>PAINTED<<< it"),
    ("repainting the wall", "painting", "repainting the wall"),  # a word, not a piece of one
    ("ERR_CONNECTION_REFUSED twice", "err_connection_refused", ">>>ERR_CONNECTION_REFUSED<<< twice"),
    ("call foo.bar() now", "foo.bar()", "call >>>foo.bar()<<< now"),
    ("我们修改了服务端", "修改服务端", "我们>>>修改<<<了>>>服务端<<<"),
    ("修改服务端", "修改 服务端", ">>>修改<<<>>>服务端<<<"),  # terms side by side stay two marks, as ever
])
def test_plain_text_is_marked_as_before(text, question, expected):
    assert shown(text, question) == expected


def test_a_word_and_a_symbol_over_the_same_characters_are_one_mark():
    assert shown("see src/cache.py and the cache", "src/cache.py cache") == \
        "see >>>src/cache.py<<< and the >>>cache<<<"


def test_the_window_is_cut_around_the_first_match_in_the_text_as_written():
    filler = "filler words about nothing much. " * 40
    out = shown(f"{filler}调用ＡＰＩ失败了 {filler}", "API")
    assert out.startswith("…") and out.endswith("…") and "调用>>>ＡＰＩ<<<失败了" in out
    assert len(out.replace(">>>", "").replace("<<<", "")) <= results.SNIPPET_CHARS + 2


def test_a_match_inside_a_masked_secret_is_not_marked():
    out = shown("the key sk-ＡＰＩ-1234 was rotated", "API", mask=lambda s: s.replace("sk-ＡＰＩ-1234", "[redacted]"))
    assert out == "the key [redacted] was rotated"


def test_folding_each_character_tells_where_each_one_went():
    assert textfold.folded_each("Hello") == ("hello", None)
    assert textfold.folded_each("修改youer服务端") == ("修改youer服务端", None)
    assert textfold.folded_each("ＡＰＩ，好") == ("api,好", None)
    assert textfold.folded_each("ß\u200bx") == ("ssx", textfold.Shifts(at=(0, 1), into=(0, 2), length=(2, 0)))
    assert textfold.folded_each("好……x") == ("好......x", textfold.Shifts(at=(1, 2), into=(1, 4), length=(3, 3)))
    shifts = textfold.folded_each("a\u200b\u200bbß\u200bc")[1]
    assert shifts is not None
    assert [shifts.start(i) for i in range(5)] == [0, 3, 4, 4, 6]  # a b s s c
    assert [shifts.end(i) for i in range(1, 6)] == [3, 4, 6, 6, 7]  # deleted ones after a piece go with it
