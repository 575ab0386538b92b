"""Questions as people ask them, in Chinese and mixed scripts, through Hermes's real dispatch.

Each runs on the plugin's own keyword index and on Hermes's indexes alone
(``keyword_index: false``), the two ways keyword terms are looked up.
"""

from __future__ import annotations

import pytest

from hermes_world import call, enable_plugin, plugin_module, plugin_settings

SEARCH = "project_history_search"


@pytest.fixture(params=[True, False], ids=["own-keyword-index", "hermes-indexes"])
def project(world, work, request):
    folder = work / "shop"
    folder.mkdir()
    world.project("Shop", folder)
    sessions = {
        "answer": world.session(("user", "老王说新版本下周三发布，我们是在海底捞餐厅讨论的"),
                                ("assistant", "好的，我把发布计划记下来了。"), cwd=folder, title="发布"),
        "icons": world.session(("user", "新版本的图标需要重新设计"), ("assistant", "我来画几个草稿"), cwd=folder),
        "menu": world.session(("user", "这家餐厅的菜单很好看"), ("assistant", "是的，配色不错"), cwd=folder),
        "plan": world.session(("user", "下个季度的计划还没定"), cwd=folder),
        "cat": world.session(("user", "我养了一只小猫，它叫咪咪，特别黏人"), cwd=folder),
        "name": world.session(("user", "这个变量的名字很难起"), cwd=folder),
        "db": world.session(("user", "我们把 MySQL 迁移到了 PostgreSQL，迁移脚本在 db/migrate 下"), cwd=folder),
        "hike": world.session(("user", "周末去爬山了，天气很好"), cwd=folder),
        "mixed": world.session(("user", "支付回调超时，帮我修改youer服务端的timeout配置"), cwd=folder),
    }
    plugin_settings(world.home, keyword_index=request.param)
    enable_plugin(world.home)
    return {"asker": world.session(cwd=folder), **sessions}


def _first(res: dict) -> str:
    assert res["success"] and res["results"], res
    return res["results"][0]["session_id"]


def test_a_chinese_question_finds_the_answer_that_holds_its_words_not_its_phrasing(project):
    question = "上个月我和老王在哪家餐厅讨论了新版本的发布计划？"
    for mode in ("keyword", "hybrid"):
        res = call(SEARCH, {"query": question, "mode": mode}, session_id=project["asker"])
        assert _first(res) == project["answer"], (mode, res["results"][:2])


def test_a_chinese_question_answered_only_by_meaning(project):
    question = "我们用的是什么数据库？"  # the answer names MySQL and PostgreSQL, not 数据库
    keyword = call(SEARCH, {"query": question, "mode": "keyword"}, session_id=project["asker"])
    assert project["db"] not in {r["session_id"] for r in keyword["results"]}
    for mode in ("semantic", "hybrid"):
        res = call(SEARCH, {"query": question, "mode": mode}, session_id=project["asker"])
        assert _first(res) == project["db"], (mode, res["results"][:2])
        assert res["results"][0]["score_source"] == "semantic"


def test_hybrid_ranks_a_strong_semantic_hit_above_a_weak_keyword_hit(project):
    # Only "名字" of the question is in an unrelated message: a keyword hit holding a small
    # share of the question. The answer is the message that means it.
    res = call(SEARCH, {"query": "我们家那只宠物猫的名字是什么来着？", "mode": "hybrid"}, session_id=project["asker"])
    order = [r["session_id"] for r in res["results"]]
    sources = {r["session_id"]: r["score_source"] for r in res["results"]}
    assert order[0] == project["cat"] and sources[project["cat"]] in ("semantic", "both")
    assert sources[project["name"]] == "keyword" and order.index(project["name"]) > 0


def test_a_mixed_script_query_finds_words_glued_to_chinese(project):
    for query in ("修改youer服务端的timeout", "youer", "timeout配置", "服务端"):
        res = call(SEARCH, {"query": query, "mode": "keyword"}, session_id=project["asker"])
        assert _first(res) == project["mixed"], query


def test_a_two_character_word_in_a_big_scope(world, work):
    """Past the size a search indexes itself, the first search is answered from
    Hermes's data while the plugin's index is built in the background; then
    from the index. Both find the one message holding the word."""
    folder = work / "big"
    folder.mkdir()
    world.project("Big", folder)
    for s in range(30):
        sid = world.session(cwd=folder)
        for i in range(400):
            world.say(sid, "user" if i % 2 else "assistant", f"routine log line {s}-{i} about deploys and retries")
    needle = world.session(("user", "那次上线后接口一直超时，最后是连接池太小"), cwd=folder)
    asker = world.session(cwd=folder)
    enable_plugin(world.home)
    keyword = plugin_module("keyword.engine")
    assert world.db._conn.execute("SELECT count(*) FROM messages").fetchone()[0] > keyword.SCAN_LIMIT

    first = call(SEARCH, {"query": "超时", "mode": "keyword"}, session_id=asker)
    assert _first(first) == needle
    keeper = plugin_module("keyword.textindex").keeper(world.home)
    assert keeper.wait_idle(120)
    assert keeper.index.merge() == 0  # the background merged the index's segments once it was built
    again = call(SEARCH, {"query": "超时", "mode": "keyword"}, session_id=asker)
    assert _first(again) == needle
    assert call(SEARCH, {"query": "接口为什么一直超时？", "mode": "keyword"}, session_id=asker)["results"][0][
        "session_id"] == needle
