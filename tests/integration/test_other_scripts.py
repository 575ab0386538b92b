"""A word the history says, in the scripts people write besides Chinese and English, finds its session
through Hermes's real dispatch, in keyword and in hybrid mode: the history written with Hermes's own
SessionDB, the plugin loaded by Hermes's plugin manager.

Thai, Lao, Burmese and Khmer put no space between words, as Chinese does; Turkish has a dotted capital
İ and a dotless ı that case folding alone does not bring together; Arabic and Hebrew write their vowel
marks or leave them out; a word pasted from a web page may hold a zero-width space or a soft hyphen
nobody sees. A question says the word as a person reads it.
"""

from __future__ import annotations

import unicodedata

import pytest

from hermes_world import call, checkpoint, enable_plugin, plugin_settings

SEARCH = "project_history_search"

HISTORY = {
    "thai": "เราได้ย้ายฐานข้อมูลเมื่อวานนี้",
    "lao": "ປ່ຽນຖານຂໍ້ມູນແລ້ວ",
    "khmer": "យើងបានផ្លាស់ប្តូរមូលដ្ឋានទិន្នន័យ",
    "burmese": "ဒေတာဘေ့စ်ကိုပြောင်းခဲ့သည်",
    "turkish": "İzmir ofisindeki TOPLANTI yarın, DIŞ kapı kilitli",
    "invisible": "the web\u200bhook retries were re\u00adconfigured by the night\u2060shift",
    "japanese": "昨日はデータベースの移行を完了しました",
    "korean": "마이그레이션을 완료했습니다",
    "russian": "Мы перенесли базу на новый сервер",
    "arabic": "قمنا بنقل قاعدة البيانات إلى الخادم الجديد",
    "hebrew": "העברנו את מסד הנתונים לשרת החדש",
    "arabic-vowelled": "نَقَلْنَا المُسْتَوْدَعَ إلى الشـــبكة",
    "hebrew-pointed": "הֶעֱבַרְנוּ אֶת הַמַּחְסָן",
    "decomposed": unicodedata.normalize("NFD", "réunion à Genève demain"),
    "full-width": "ｋｕｂｅｃｔｌ ａｐｐｌｙ failed",
}

# (the question, the session that says it)
QUESTIONS = [
    ("ย้าย", "thai"), ("ฐานข้อมูล", "thai"), ("ຖານຂໍ້ມູນ", "lao"), ("មូលដ្ឋាន", "khmer"), ("ဒေတာဘေ့စ်", "burmese"),
    ("izmir", "turkish"), ("İZMİR", "turkish"), ("toplantı", "turkish"), ("dış", "turkish"),
    ("webhook", "invisible"), ("reconfigured", "invisible"), ("nightshift", "invisible"),
    ("web\u200bhook", "invisible"),
    ("移行", "japanese"), ("データベース", "japanese"), ("마이그레이션", "korean"), ("СЕРВЕР", "russian"),
    ("الخادم", "arabic"), ("לשרת", "hebrew"), ("المستودع", "arabic-vowelled"), ("המחסן", "hebrew-pointed"),
    ("نَقَلْنَا", "arabic-vowelled"), ("الشبكة", "arabic-vowelled"), ("Genève", "decomposed"), ("geneve", "decomposed"),
    ("kubectl", "full-width"), ("ＫＵＢＥＣＴＬ", "full-width"),
]


@pytest.fixture
def scripts(world, work):
    folder = work / "app"
    folder.mkdir()
    world.project("App", folder)
    sessions = {key: world.session(("user", text), cwd=folder) for key, text in HISTORY.items()}
    asker = world.session(cwd=folder)
    world.close()
    checkpoint(world.home)
    plugin_settings(world.home)
    enable_plugin(world.home)
    return sessions, asker


@pytest.mark.parametrize("mode", ["keyword", "hybrid"])
def test_a_word_the_history_says_finds_its_session_in_any_script(scripts, mode):
    sessions, asker = scripts
    missed = []
    for question, key in QUESTIONS:
        res = call(SEARCH, {"query": question, "mode": mode, "context": 0}, session_id=asker)
        assert res["success"], (question, res)
        found = [r["session_id"] for r in res["results"]]
        if not found or found[0] != sessions[key]:
            missed.append((question, key, found.index(sessions[key]) if sessions[key] in found else None))
    assert not missed, missed
