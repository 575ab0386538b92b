"""Which kind of number or time a question asks for, and which texts say one (``keyword.answerkind``)."""

from __future__ import annotations

from re import _constants as sre
from re import _parser

import pytest
from bench_modules import bench

from project_history_recall.keyword import answerkind, textindex
from project_history_recall.keyword.answerkind import AMOUNT, LENGTH, MOMENT, MOMENT_EN, asked, says

zh_data = bench("zh_data")


@pytest.mark.parametrize("question, kind", [
    ("补牙后那个牙套多少钱", AMOUNT),
    ("Melanie有几个孩子？", AMOUNT),
    ("去千岛湖那次钓到多大的鱼", AMOUNT),
    ("春天去看花骑了多远", AMOUNT),
    ("Melanie练习艺术多久了？", LENGTH),
    ("开工作室花了多长时间", LENGTH),
    ("在医院住了几天", LENGTH),
    ("体检报告要等几个礼拜", LENGTH),
    ("实习什么时候开始", MOMENT),
    ("Caroline哪天去的海边？", MOMENT),
    ("生日是几月几号", MOMENT),  # which month and day, not how many
    ("什么时候买的，花了多少", MOMENT),
    ("出差那几天吃到什么好吃的面", None),  # "those few days"
    ("好几次提到的那家店叫什么", None),  # "several times"
    ("他几乎每天都去哪里", None),  # "almost"
    ("How much did the repair cost?", None),  # English numbers are not read
    ("When did Caroline go to the support group?", MOMENT_EN),
    ("  when is the picnic", MOMENT_EN),
    ("Which year did they start dating?", MOMENT_EN),
    ("What date is the wedding?", MOMENT_EN),
    ("What did she paint when she was sad?", None),  # "when" inside the question asks no time
    ("Whenever I call, who answers?", None),
    ("", None),
])
def test_the_kind_of_number_a_question_asks_for(question, kind):
    assert asked(question) == kind


@pytest.mark.parametrize("text, kind, said", [
    ("医生建议做个全瓷牙冠，两千五", AMOUNT, True),
    ("我和你爸给你们出二十万", AMOUNT, True),
    ("晚上吃海鲜，被宰了，一顿一千二", AMOUNT, True),
    ("半马跑了 2 小时 5 分", AMOUNT, True),  # digits, after the length of time is set aside
    ("ＲＯＩ只有１.２", AMOUNT, True),  # full-width digits, as the index normalises them
    ("我们一起去吃饭吧，一下就好", AMOUNT, False),  # 一 alone is mostly no number
    ("首付比例多少", AMOUNT, False),
    ("奶茶店打工两个月的钱全搭进去了", AMOUNT, False),  # a length of time answers no price
    ("超过二十四小时要注意", AMOUNT, False),
    # A Chinese number is said with a place, a decimal point, a measure word or a unit (the sets' own
    # messages); a word that holds a numeral says none.
    ("行 我订位 六个人", AMOUNT, True),
    ("三条鲫鱼 一条草鱼 草鱼有四斤多", AMOUNT, True),
    ("刘经理 三张初稿发您邮箱了 麻烦查收", AMOUNT, True),
    ("比赛得了二等奖 跳的是红红的中国结", AMOUNT, True),
    ("煤球体检都正常 就是有点胖 五点二公斤 医生让换低卡粮", AMOUNT, True),
    ("血糖空腹七点一算糖尿病吗", AMOUNT, True),
    ("还没，听说这次 A 的名额只有百分之十", AMOUNT, True),
    ("北京押一付三很常见，中介费一般是一个月租金，有的能谈到七八成。", AMOUNT, True),
    ("三十年，每个月还一万一", AMOUNT, True),  # 一万一 is no 万一
    ("跑了人生第一个二十公里，两小时十分", AMOUNT, True),
    ("住了三晚 打八折 花了两千多", AMOUNT, True),
    ("考了九十分", AMOUNT, True),
    ("下次十来个人一起去", AMOUNT, True),
    ("三亚太晒了，乐乐脸都晒红了", AMOUNT, False),
    ("七夕想带小雨吃顿好的 三里屯附近有啥推荐", AMOUNT, False),
    ("周五晚上撸串？老地方", AMOUNT, False),  # a weekday, and 晚上 no night counted
    ("下礼拜三吃潮汕牛肉火锅咋样 我发现一家 八合里", AMOUNT, False),
    ("二面过了！下周 HR 面", AMOUNT, False),
    ("六号就得走，七号有课", AMOUNT, False),  # a day and an hour are moments, not amounts
    ("今晚部门聚餐，海底捞，七点半", AMOUNT, False),
    ("合同签了 8月15号搬", AMOUNT, False),  # in digits as well: a day,
    ("周五下午3点到", AMOUNT, False),  # an hour,
    ("明早9:30出发", AMOUNT, False),  # a time on the clock
    ("最后3:2赢了", AMOUNT, True),  # but a score,
    ("按1:1兑换积分", AMOUNT, True),  # and a ratio, are amounts
    ("不用啦 找了货拉拉 两百块搞定", AMOUNT, True),
    ("改到12日了 房租还是2800", AMOUNT, True),  # the day set aside, the rent is still said
    ("爸 千万别点 以后有啥先问我", AMOUNT, False),
    ("双十一买了个机械键盘", AMOUNT, False),
    ("去四川吃五花肉，万一下雨就去百度一下", AMOUNT, False),
    ("这家店十分好吃，老板一五一十都说了", AMOUNT, False),
    ("两个小时", AMOUNT, False),  # a length of time
    ("两个小时", LENGTH, True),
    ("到现在七年了", LENGTH, True),
    ("大概练了半年", LENGTH, True),
    ("半马跑了 2 小时 5 分", LENGTH, True),
    ("花了三千二", LENGTH, False),
    ("我两个半月，哭", LENGTH, True),
    ("签了 回龙观的一居室 4200一个月", LENGTH, True),
    ("提车了 比亚迪汉EV 落地21.6万 分期两年免息", LENGTH, True),
    ("报名了明年三月的无锡半马！", LENGTH, False),  # March: a month is counted with 个
    ("根管第二次做完了 医生说十月中旬来取牙冠", LENGTH, False),
    ("新公司入职第一周 代码库好大 怎么快速上手", LENGTH, False),  # the first week, a moment
    ("小雪 周一周二都在外地", LENGTH, False),  # weekdays
    ("体检做了 抽了血 B超 心电图 报告一礼拜出", LENGTH, True),  # 礼拜, a week, as 星期 is
    ("礼拜一礼拜二都在外地", LENGTH, False),
    ("两个礼拜的药", AMOUNT, False),
    ("回测 2018-2023 年沪深 300 成分股", LENGTH, False),  # a year
    ("上周五我参加了一个工作坊", MOMENT, True),
    ("下个月七号开始实习", MOMENT, True),
    ("两周前我们去露营了", MOMENT, True),
    ("2023年夏天搬的家", MOMENT, True),
    ("你什么时候去露营？", MOMENT, False),  # asked back: no time said
    ("春节车票抢到了 腊月二十七的", MOMENT, True),  # the lunar calendar's days
    ("正月初六 还是望江楼", MOMENT, True),
    ("年夜饭订在除夕晚上", MOMENT, True),
    ("女儿初三 数学弱", MOMENT, False),  # a school year, no day
    ("中秋回去的", MOMENT, True),  # a festival of the lunar calendar, as the time-reading side knows them
    ("清明节那天扫的墓", MOMENT, True),
    ("农历三月搬的家", MOMENT, True),
    ("小年轻都这样", MOMENT, False),
    ("小小年纪就懂事", MOMENT, False),  # an age, not 小年
    ("报名的最小年龄是几岁", MOMENT, False),
    ("眼神清明", MOMENT, False),
    ("春节回长沙的机票一般提前多久买便宜", MOMENT, False),  # the holiday planned, no time said
    ("国庆去哪玩比较好", MOMENT, False),  # so too the days of the solar year but 清明
    ("五一的票买了吗", MOMENT, False),
    ("新年快乐 元旦干嘛了", MOMENT, False),
    ("我们一起去吧", MOMENT, False),
    (None, AMOUNT, False),
    ("I went to a LGBTQ support group yesterday", MOMENT_EN, True),
    ("Last Saturday we painted a sunset", MOMENT_EN, True),
    ("We went camping two weeks ago", MOMENT_EN, True),
    ("A few days ago I ran a charity race", MOMENT_EN, True),
    ("I moved here in 2022", MOMENT_EN, True),
    ("The show opens in August", MOMENT_EN, True),
    ("We met in May", MOMENT_EN, True),
    ("It was on 3rd March", MOMENT_EN, True),
    ("May 5 works for me", MOMENT_EN, True),
    ("That may be true", MOMENT_EN, False),  # the verb, case-folded like the month
    ("Maybe at last we can rest", MOMENT_EN, False),  # holds words a moment holds, and says none
    ("See you Thursday!", MOMENT_EN, True),
    ("We got back last\tnight", MOMENT_EN, True),
    ("They march for rights", MOMENT_EN, False),
    ("When are you going camping?", MOMENT_EN, False),  # asked back: no time said
    ("上周五我参加了一个工作坊", MOMENT_EN, False),  # an English question reads English time words
    ("I moved here in 2022", MOMENT, False),  # and a Chinese one Chinese: 2022 is no 2022年
])
def test_a_text_says_an_answer_of_the_kind(text, kind, said):
    assert says(None if text is None else textindex.normalise(text), kind) is said


def test_a_text_is_read_for_an_answer_only_when_read_and_short_enough_by_its_normalised_length():
    short = "等了两个小时" + "。" * (answerkind.ANSWER_CHARS - 6)
    assert answerkind.answers(short, LENGTH) is True
    assert answerkind.answers(short + "。", LENGTH) is None  # too long: it may say one, by chance or not
    assert answerkind.answers(None, LENGTH) is None  # not read
    assert answerkind.answers("等了很久", LENGTH) is False
    # ﬁ folds to fi: the length that counts is the text's as read, normalised.
    folded = textindex.normalise("等了两个小时" + "ﬁ" * (answerkind.ANSWER_CHARS // 2 - 2))
    assert len(folded) == answerkind.ANSWER_CHARS + 2 and answerkind.answers(folded, LENGTH) is None


# A character standing for each class the English moment is written with, chosen to spell none of the
# words every moment holds (a digit that is no 1, 2, 9 or 0).
_STANDS_FOR = {sre.CATEGORY_DIGIT: "\u0663", sre.CATEGORY_SPACE: " "}


def _ways(parsed) -> list[str]:
    """The shortest text of each way through a parsed regex: every branch taken, every optional part
    left out and put in, every repeat made once, every class written by its ``_STANDS_FOR``."""
    texts = [""]
    for op, av in parsed:
        if op is sre.LITERAL:
            parts = [chr(av)]
        elif op is sre.IN:
            kind, value = av[0]
            parts = [chr(value) if kind is sre.LITERAL else _STANDS_FOR[value]]
        elif op is sre.BRANCH:
            parts = [text for branch in av[1] for text in _ways(branch)]
        elif op is sre.SUBPATTERN:
            parts = _ways(av[-1])
        elif op is sre.MAX_REPEAT:
            least, _, repeated = av
            parts = [text * max(least, 1) for text in _ways(repeated)] + ([""] if least == 0 else [])
        else:
            assert op is sre.AT, op  # \b, which writes nothing
            parts = [""]
        texts = [text + part for text in texts for part in parts]
    return texts


def _holds_a_moment_word(text: str) -> bool:
    return any(word in text for word in answerkind._IN_EVERY_MOMENT_EN)


def test_every_way_of_saying_a_moment_in_english_holds_one_of_the_words_looked_for_first():
    ways = _ways(_parser.parse(answerkind._A_MOMENT_EN.pattern))
    assert len(ways) > 200
    for text in ways:
        assert answerkind._A_MOMENT_EN.fullmatch(text), text
        assert _holds_a_moment_word(text), text


def test_no_message_of_the_daily_sets_that_says_a_moment_in_english_is_passed_over():
    texts = [textindex.normalise(text) for path in (zh_data.EN_PATH, zh_data.PATH)
             for person in zh_data.load(path)["people"] for session in person["sessions"]
             for _, text in session["messages"]]
    said = [text for text in texts if answerkind._A_MOMENT_EN.search(text)]
    assert len(said) > 30
    assert all(_holds_a_moment_word(text) and says(text, MOMENT_EN) for text in said)
