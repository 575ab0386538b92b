"""Query parsing: never raises, keeps symbols exact, splits scripts."""

from __future__ import annotations

import pytest

from project_history_recall.querytext import fts_quote, light_stem, parse


def kinds(q):
    return [(t.kind, t.text) for t in parse(q).terms]


def test_natural_language_question_keeps_content_words():
    assert [t for k, t in kinds("When did Melanie paint a sunrise?")] == ["melanie", "paint", "sunrise"]


@pytest.mark.parametrize("symbol", ["ERR_CONNECTION_REFUSED", "foo.bar()", "src/app.py", "0x80070005",
                                    "payment_gateway.timeout"])
def test_symbols_are_kept_whole(symbol):
    assert ("symbol", symbol) in kinds(symbol)
    assert ("symbol", symbol) in kinds(f"why does `{symbol}` happen?")


def test_mixed_scripts_split_into_terms():
    terms = kinds("修改youer服务端")
    assert ("cjk", "修改") in terms and ("word", "youer") in terms and ("cjk", "服务端") in terms


def test_long_chinese_run_is_cut_at_function_words_into_pieces_and_bigrams():
    q = parse("上次怎么修复数据库连接超时的问题")
    texts = [t.text for t in q.terms]
    assert "修复数据库连接超时" in texts and "超时" in texts and "问题" in texts
    assert all(t.partial for t in q.terms if t.text == "超时")
    assert "怎么" not in texts and "的" not in "".join(texts)


def test_quoted_phrases_survive_and_unbalanced_quotes_do_not_break():
    assert ("phrase", "retry logic") in kinds('"retry logic" websocket')
    assert kinds('"unbalanced websocket') == [("word", "unbalanced"), ("word", "websocket")]


@pytest.mark.parametrize("hostile", ['NEAR(a b)', 'a AND OR NOT', '*', '^x', 'col:foo', '"', '(((', '))', '\x00',
                                     '\ud800', '\u202e\u200f', "'; DROP TABLE messages; --", "a" * 10000, "🙂",
                                     'content:"x" OR rowid=1'])
def test_hostile_input_parses_to_literal_terms(hostile):
    q = parse(hostile)
    for term in q.terms:
        assert "\x00" not in term.text
        assert fts_quote(term.text).startswith('"') and fts_quote(term.text).endswith('"')


def test_only_stop_words_or_single_letters_are_kept_when_that_is_all_there_is():
    assert [t for _, t in kinds("to be or not to be")] == ["to", "be", "or", "not"]
    assert kinds("C") == [("word", "c")]
    assert kinds("什么") == [("cjk", "什么")]


def test_empty_and_punctuation_only_queries_have_no_terms():
    for q in ("", "   ", '""', "(((", "?!", None):
        assert parse(q).empty


def test_fts_quote_escapes_double_quotes():
    assert fts_quote('a"b') == '"a""b"'


def test_light_stem():
    assert light_stem("painting") == "paint"
    assert light_stem("stories") == "story"
    assert light_stem("walk") == "walk"
    assert light_stem("car") is None
    assert light_stem("naïve") is None
