"""Query parsing: never raises, keeps symbols exact, splits scripts."""

from __future__ import annotations

import pytest

from project_history_recall.keyword.querytext import fts_quote, light_stem, parse, stop_words


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


def test_a_chinese_question_is_searched_as_its_content_words():
    q = parse("上个月我和老王在哪家餐厅讨论了新版本的发布计划？")
    whole = [t.text for t in q.terms if not t.partial]
    assert whole == ["老王", "餐厅", "讨论", "新", "版本", "发布", "计划"]
    # Relative time, pronouns, interrogatives and particles carry no topic.
    assert not {"上个月", "我", "哪家", "了", "的"} & set(whole)
    assert len({t.concept for t in q.terms}) == len(whole)


def test_longer_cjk_words_bring_their_bigrams_as_pieces_of_the_same_concept():
    q = parse("上次怎么修复数据库连接超时的问题")
    terms = {(t.text, t.partial): t.concept for t in q.terms}
    assert ("数据库", False) in terms and ("超时", False) in terms and ("问题", False) in terms
    assert terms[("数据", True)] == terms[("据库", True)] == terms[("数据库", False)]
    assert "怎么" not in {t.text for t in q.terms}


def test_the_measure_word_of_an_occasion_is_grammar():
    assert [t.text for t in parse("那次看牙之后每次都疼").terms if not t.partial] == ["看牙", "疼"]


def test_a_word_of_grammar_characters_that_names_a_thing_is_searched():
    # 年会 and 过年 are made of characters that are grammar alone (年, 会, 过), as 前年 and 那次 are, but
    # name an occasion: the question's strongest word, not its grammar.
    assert [t.text for t in parse("离职前最后一次年会抽奖").terms if not t.partial] == ["离职", "年会", "抽奖"]
    assert "过年" in {t.text for t in parse("去海南过年的飞机票花了多少").terms}
    assert [t.text for t in parse("前年那次看牙").terms if not t.partial] == ["看牙"]
    # The segmenter cuts 年会上 as 年 / 会上, two words of grammar: the party is put back together.
    assert [t.text for t in parse("公司年会上我抽中了什么").terms if not t.partial] == ["公司", "年会", "抽"]


def test_the_verb_go_is_a_word_of_a_chinese_question():
    # "When did Melanie go to the park?" is answered by "我昨天带孩子们去了公园".
    assert [t.text for t in parse("Melanie什么时候去了公园？").terms if not t.partial] == ["melanie", "去", "公园"]


def test_colloquial_and_compound_question_words_are_grammar_not_topics():
    # 啥 asks as 什么 does, 什么样 / 怎么办 / 多大 as 怎样 / 怎么 / 多少 do.
    assert [t.text for t in parse("山东那次旅行吃了啥").terms if not t.partial] == ["山东", "旅行", "吃"]
    assert [t.text for t in parse("Jon的舞蹈让他变成什么样？").terms if not t.partial] == ["jon", "舞蹈", "变成"]
    assert [t.text for t in parse("去千岛湖那次钓到多大的鱼").terms if not t.partial] == ["去", "千岛湖", "钓到", "鱼"]
    assert [t.text for t in parse("膝盖疼怎么办").terms if not t.partial] == ["膝盖", "疼"]


def test_the_chinese_of_english_stop_words_do_more_and_once_is_grammar():
    # "What does Jon plan to do at the grand opening?": 做 asks as "do" does, 一次 as "once".
    assert [t.text for t in parse("Jon计划在盛大开业时做什么？").terms if not t.partial] == ["jon", "计划", "盛大", "开业"]
    assert [t.text for t in parse("Melanie多久和孩子们去一次海滩？").terms if not t.partial] == [
        "melanie", "孩子", "去", "海滩"]
    assert [t.text for t in parse("更喜欢哪种并说明原因").terms if not t.partial] == ["喜欢", "说明", "原因"]
    # A word of its own keeps them: 做饭 is cooking.
    assert "做饭" in {t.text for t in parse("上次做饭做了什么").terms}
    # "thing", "way", "tell", "many" and "get" as well; 申请 ("apply") is a word of its own, not 请.
    assert [t.text for t in parse("Jon告诉Gina他买了哪些东西").terms if not t.partial] == ["jon", "gina", "买"]
    assert [t.text for t in parse("以哪些方式得到很多支持").terms if not t.partial] == ["支持"]
    assert "申请" in {t.text for t in parse("什么时候提交申请的").terms}
    # "What types of pottery", "to be brave", "in education": the question's frame, not its topic.
    assert [t.text for t in parse("Melanie喜欢哪些类型的陶器？").terms if not t.partial] == ["melanie", "喜欢", "陶器"]
    assert [t.text for t in parse("是什么激励Caroline变得勇敢").terms if not t.partial] == ["激励", "caroline", "勇敢"]
    assert [t.text for t in parse("她在教育方面有什么计划").terms if not t.partial] == ["教育", "计划"]


def test_a_word_the_segmenter_does_not_know_is_caught_by_a_bigram_across_its_cut():
    # jieba cuts the unknown name 梅兰妮 into 梅兰 + 妮; 兰妮 joins the lone character to its neighbour.
    q = parse("梅兰妮画了日出")
    texts = {(t.text, t.partial) for t in q.terms}
    assert ("梅兰", False) in texts and ("妮", False) in texts and ("兰妮", True) in texts
    assert ("画", False) in texts and ("日出", False) in texts


@pytest.mark.parametrize("word, parts", [
    ("诗歌朗诵", ["诗歌", "朗诵"]),
    ("心理健康", ["心理", "健康"]),
    ("数据库连接池", ["数据库", "连接池"]),
    ("工作室", []),  # 工作 and a bound suffix
    ("甲状腺", []),
    ("发版后", []),  # not a word of the dictionary
    ("梅兰妮", []),
    ("abcd", []),
])
def test_a_compound_the_dictionary_keeps_whole_has_its_words_as_parts(word, parts):
    from project_history_recall.keyword import cjk

    assert cjk.parts(word) == parts


def test_a_chinese_compound_is_searched_as_its_words_as_english_writes_them():
    # "What was the poetry reading that Caroline attended about?": 诗歌 and 朗诵 are concepts of their own.
    q = parse("Caroline参加的诗歌朗诵会是关于什么的？")
    assert [(t.text, t.partial) for t in q.terms] == [
        ("caroline", False), ("参加", False), ("诗歌", False), ("朗诵", False)]
    assert len({t.concept for t in q.terms}) == 4
    # A compound holding a word of grammar stays whole: 多长时间 asks "how long".
    assert "多长时间" in {t.text for t in parse("Jon开工作室花了多长时间？").terms if not t.partial}


def test_without_the_segmenter_a_compound_has_no_parts(monkeypatch):
    from project_history_recall.keyword import cjk

    monkeypatch.setattr(cjk, "_segmenter", False)
    assert cjk.parts("诗歌朗诵") == []


def test_names_and_numbers_in_a_chinese_question_are_kept():
    assert [(t.kind, t.text) for t in parse("Caroline 4年前是从哪里搬来的？").terms] == [
        ("word", "caroline"), ("word", "4"), ("cjk", "搬来")]


def test_japanese_and_korean_keep_their_words():
    assert [t.text for t in parse("東京で会議の資料を作った").terms if not t.partial] == ["東京", "会議", "資料", "作"]
    korean = parse("데이터베이스 연결 시간 초과")
    assert [t.text for t in korean.terms if not t.partial] == ["데이터베이스", "연결", "시간", "초과"]
    assert any(t.partial and t.text == "데이" for t in korean.terms)


def test_without_the_segmenter_a_run_is_cut_at_function_words(monkeypatch):
    from project_history_recall.keyword import cjk

    monkeypatch.setattr(cjk, "_segmenter", False)
    q = parse("上次怎么修复数据库连接超时的问题")
    whole = [t.text for t in q.terms if not t.partial]
    assert "修复数据库连接超时" in whole and "问题" in whole
    assert any(t.partial and t.text == "超时" for t in q.terms)


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


def test_empty_queries_have_no_terms_and_letterless_ones_are_searched_as_pasted():
    for q in ("", "   ", '""', None):
        assert parse(q).empty
    assert [(t.kind, t.text) for t in parse("🚀").terms] == [("symbol", "🚀")]
    assert [(t.kind, t.text) for t in parse("->  ✅✅").terms] == [("symbol", "->"), ("symbol", "✅✅")]


def test_fts_quote_escapes_double_quotes():
    assert fts_quote('a"b') == '"a""b"'


def test_light_stem():
    assert light_stem("painting") == "paint"
    assert light_stem("stories") == "story"
    assert light_stem("walk") == "walk"
    assert light_stem("car") is None
    assert light_stem("naïve") is None


@pytest.mark.parametrize("words, stem", [
    # Every form of the word starts with the stem.
    (("activity", "activities"), "activit"), (("family", "families"), "famil"),
    (("planning", "planned"), "plan"), (("hiking", "hiked"), "hike"), (("places", "placed"), "plac"),
    (("travelling", "travelled"), "travel"), (("classes",), "class"), (("recently",), "recent"),
    # Words that only look inflected keep their end, and no 3-letter prefix of a longer word.
    (("homeless",), "homeless"), (("apply",), "apply"), (("games",), "game"), (("times",), "time"),
    (("falling",), "fall"), (("needed",), "need"),
])
def test_light_stem_is_a_prefix_of_every_form(words, stem):
    for word in words:
        assert light_stem(word) == stem, word


def test_irregular_forms_are_other_forms_of_a_word():
    from project_history_recall.keyword.engine import stems

    q = parse("When did we go and buy the children's tickets?")
    forms = {(t.text, t.concept) for t in stems(q) if t.kind == "form"}
    concept = {t.text: t.concept for t in q.terms}
    assert {("went", concept["go"]), ("bought", concept["buy"]), ("child", concept["children"])} <= forms
    assert all(t.partial for t in stems(q))
    # A form that is a stop word is not looked for ("made" of "make" is one; "did" of "do").
    assert not {f for f in ("made", "did") if f in {t.text for t in stems(parse("make"))}}


def test_a_two_character_word_has_its_characters_to_look_for_when_the_scope_never_says_it():
    from project_history_recall.keyword.engine import characters

    q = parse("看牙的时候胃里疼，数据库超期")
    concept = {t.text: t.concept for t in q.terms if not t.partial}
    pieces = [(t.kind, t.text, t.partial, t.concept) for t in characters(q)]
    # 里 is grammar, 疼 a word of its own, 数据库 has its bigrams instead.
    assert pieces == [("cjk", "看", True, concept["看牙"]), ("cjk", "牙", True, concept["看牙"]),
                      ("cjk", "胃", True, concept["胃里"]), ("cjk", "超", True, concept["超期"]),
                      ("cjk", "期", True, concept["超期"])]
    assert characters(parse("疼")) == [] and characters(parse("什么")) == []


@pytest.mark.parametrize("text, char, alone", [
    ("店开了", "开", True),  # a word the dictionary does not know is no word around 开
    ("我很开心", "开", False),
    ("网店开业了，很开心", "开", False),
    ("我去年画了那幅画", "画", True),
    ("我画画很多年了", "画", False),
    ("没有这个字", "开", False),
])
def test_a_character_stands_alone_where_the_dictionary_joins_it_to_no_neighbour(text, char, alone):
    from project_history_recall.keyword import cjk

    assert cjk.stands_alone(text, char) is alone


def test_without_the_segmenter_a_character_cannot_be_told_inside_a_word(monkeypatch):
    from project_history_recall.keyword import cjk

    monkeypatch.setattr(cjk, "_segmenter", False)
    assert cjk.stands_alone("我很开心", "开")


def test_stop_words_are_the_questions_others_each_its_own_concept_once():
    stop = stop_words(parse("Why didn't she get the job she had wanted?"))
    assert [(t.kind, t.text, t.concept) for t in stop.terms] == [
        ("word", "why", 0), ("word", "didn", 1), ("word", "she", 2), ("word", "get", 3), ("word", "the", 4),
        ("word", "had", 5)]
    assert stop.raw == "Why didn't she get the job she had wanted?"


@pytest.mark.parametrize("question", ["to be or not to be", "websocket reconnect", "什么时候去的", "", "->"])
def test_a_question_of_stop_words_alone_or_of_none_has_no_further_stop_words(question):
    assert stop_words(parse(question)).empty


@pytest.mark.parametrize("query, word", [("ย้าย", "ย้าย"), ("ฐานข้อมูลล่ม", "ฐานข้อมูลล่ม"), ("ຖານຂໍ້ມູນ", "ຖານຂໍ້ມູນ")])
def test_a_run_of_thai_or_lao_is_searched_as_a_substring_with_its_bigrams(query, word):
    q = parse(query)
    assert ("cjk", word) in [(t.kind, t.text) for t in q.terms if not t.partial]
    assert all(t.kind == "cjk" for t in q.terms) and any(t.partial for t in q.terms)


def test_an_invisible_break_inside_a_word_of_the_question_joins_it():
    assert kinds("data\u200bbase mi\u00adgration") == [("word", "database"), ("word", "migration")]
