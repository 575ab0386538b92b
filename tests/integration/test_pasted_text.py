"""Text pasted from a message finds that message, through Hermes's real dispatch.

Hermes stores list (multimodal) content as JSON with non-ASCII escaped, and
text as typed (compatibility forms, case); queries are normalised. The
plugin's keyword index holds messages as people read them, so both meet.
"""

from __future__ import annotations

import pytest

from hermes_world import call, enable_plugin, plugin_settings

SEARCH = "project_history_search"


@pytest.fixture
def pasted(world, work):
    folder = work / "app"
    folder.mkdir()
    world.project("App", folder)
    listed = world.session(cwd=folder, title="listed")
    world.say(listed, "user", [{"type": "text", "text": "支付回调超时 at the café"},
                               {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}])
    forms = {
        "Straße": world.session(("user", "Die Straße ist gesperrt"), cwd=folder),
        "ＡＰＩ": world.session(("user", "调用ＡＰＩ失败了"), cwd=folder),
        "ｶﾀｶﾅ": world.session(("user", "半角のｶﾀｶﾅで書いた"), cwd=folder),
        "m²": world.session(("user", "the room is 12 m² large"), cwd=folder),
        "ﬁle": world.session(("user", "open the ﬁle again"), cwd=folder),
        "🚀": world.session(("user", "shipped it 🚀"), cwd=folder),
        "✅✅": world.session(("user", "tests ✅✅ all green"), cwd=folder),
        "->": world.session(("user", "map x -> y in the handler"), cwd=folder),
    }
    other = world.session(("user", "nothing to see here, the cafe is closed"), cwd=folder)
    return {"asker": world.session(cwd=folder), "listed": listed, "forms": forms, "other": other}


@pytest.mark.parametrize("own_index", [True, False], ids=["own-keyword-index", "hermes-scan"])
def test_list_content_is_found_by_its_text(pasted, world, own_index):
    plugin_settings(world.home, keyword_index=own_index)
    enable_plugin(world.home)
    # Without the plugin's index, a word such as "café" is looked up in Hermes's word index, which holds
    # list content as escaped JSON: only the plugin's index finds it there.
    for query in ("超时", "支付回调超时", "café") if own_index else ("超时", "支付回调超时"):
        res = call(SEARCH, {"query": query, "mode": "keyword"}, session_id=pasted["asker"])
        assert res["results"] and res["results"][0]["session_id"] == pasted["listed"], query
        assert "\\u" not in res["results"][0]["snippet"] and "json" not in res["results"][0]["snippet"]


@pytest.mark.parametrize("form", ["Straße", "ＡＰＩ", "ｶﾀｶﾅ", "m²", "ﬁle", "🚀", "✅✅", "->"])
def test_compatibility_forms_and_emoji_pasted_verbatim_find_their_message(pasted, world, form):
    enable_plugin(world.home)
    res = call(SEARCH, {"query": form, "mode": "keyword"}, session_id=pasted["asker"])
    assert res["success"], res
    assert res["results"] and res["results"][0]["session_id"] == pasted["forms"][form], (form, res["results"][:2])


@pytest.mark.parametrize("form", ["🚀", "->"])
def test_emoji_and_symbols_are_searched_without_the_keyword_index_too(pasted, world, form):
    plugin_settings(world.home, keyword_index=False)
    enable_plugin(world.home)
    res = call(SEARCH, {"query": form, "mode": "keyword"}, session_id=pasted["asker"])
    assert res["results"] and res["results"][0]["session_id"] == pasted["forms"][form], form
