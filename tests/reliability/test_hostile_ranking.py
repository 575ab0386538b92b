"""Hostile questions and history for the ranking steps, through Hermes's dispatch.

The steps a search takes after the engines (times named in the question, ``timewords``; how it
turned out, threads and reports, ``orderwords``; the kind of answer asked for, ``answerkind``; the
stop-word fill, ``keyword.topped_up``; the fusion) read the question's words and the history's
times and texts. Here both are hostile: questions of only stop words, punctuation, numerals
(Chinese, full-width, Arabic-Indic), time words (上上周, 去年腊月二十七, 9999年13月, "February 29"),
years 0 and 99999, mixed scripts, zero-width joiners and combining marks; a history whose sessions
are each other's threads and reports, say the same text, share one time, carry times of -inf, inf,
1e300, before 1970 and text, start at text, hold messages of no content or only tool calls, and
have ids no chat makes. Every call must answer with the plugin's own JSON, the same twice, only
sessions of the caller's project, only messages of the roles asked for inside since/until, never
a hidden message, never more sessions than the limit; and state.db stays unchanged.
"""

from __future__ import annotations

import json
import math
import random
import sqlite3

import pytest

from conftest import sizes
from hermes_world import checkpoint, db_digest, enable_plugin, hermes_line, plugin_settings, write_as_importer

SEARCH = "project_history_search"
HIDDEN_TEXT = "hidden scaffolding capybara 首保 eviction"

TOPIC = ["capybara", "cache eviction policy", "首保", "钢琴课", "the interview", "Q3", "zebra", "机油", "二百二"]
TIMES = ["上上周", "上周", "去年腊月二十七", "正月初六", "大年初一", "除夕", "9999年13月", "0年0月0日", "99999年",
         "-5年", "年份 0", "2024年3月31号下午三点半", "last week of February 29", "February 29", "29 February 2023",
         "2024-02-30", "9999-12-31", "0001-01-01", "10000年1月1日", "999 years ago", "99999 days ago", "999年前",
         "几年前", "999个月前", "in the past 999 years", "last summer", "去年冬天", "三天前", "last Friday", "in May",
         "May 2022 in 1900", "2023年10月", "十二月", "13月", "yesterday", "今天", "前天", "the other day"]
ASKS = ["how did it turn out", "what did we end up choosing", "in the end", "后来怎么样了", "最后", "结果呢",
        "花了多少钱", "等了多长时间", "什么时候", "哪天", "几月", "when", "what date", "现在", "the latest",
        "那次", "开的什么药", "多少", "几个"]
NOISE = ["the", "of", "and", "a", "是", "的", "了", "我", "吗", "？", "!", "...", "。。", "０１２", "٣٤٥", "12345",
         "一二三四五六七八九十", "二十万亿", "100000000000000000000000", "e\u0301", "👩\u200d💻", "\u200d\u200d",
         "\u200b", "\ufeff", "🙂", "ﾃｽﾄ", "Ⅻ", "-", "*", '"', "NEAR(", "(", ")"]
SINCE_UNTIL = [None, None, None, "2000-01-01", "1970-01-01", "2030-01-01", "1d", "99999y", "0001-01-01",
               "9999-12-31"]
LIMITS = [None, None, 0, 1, 2, 5, 50, 1000, -3, "7"]


@pytest.fixture
def tangled(world, work):
    """Project App: threads of a plan and its report, each said twice (every session a thread of
    another), six sessions of one text at one time, odd times and ids; project Other says the same."""
    app, other = work / "app", work / "other"
    app.mkdir()
    other.mkdir()
    world.project("App", app)
    world.project("Other", other)
    mine = []
    said = [
        ("首保要做啥？机油换哪种", "首保做完了，等了两个小时，机油换的全合成"),
        ("钢琴课要不要报一个", "钢琴试听了，一节课二百二"),
        ("the capybara interview is tomorrow, what should I prepare?", "the capybara interview turned out fine"),
        ("cache eviction policy: LRU or LFU?", "we settled the cache eviction policy: LRU, in Q3"),
        ("capybara 2024年3月31号下午三点半 Q3 ０１２ ٣٤٥ e\u0301 👩\u200d💻", "腊月二十七 去年 上上周 9999年13月 年份 0 99999"),
    ]
    for first, second in said:
        for _ in range(2):
            mine.append(world.session(("user", first), ("assistant", second), cwd=app))
    clock = world._clock
    for _ in range(6):  # one text, one time
        world._clock = clock
        mine.append(world.session(("user", "identical capybara text about the zebra and the cache"), cwd=app))
    odd = {}
    for name in ("inf", "-inf", "1e300", "-1e300", "1969", "text", "zero"):
        odd[name] = world.session(("user", f"capybara 首保 eviction policy {name} time, how did it turn out"), cwd=app)
    mine += odd.values()
    weird = world.session(("user", "capybara weird id 首保做完了"), cwd=app, session_id="we ird/../%_'\"\u202e🙂\x7f")
    mine.append(weird)
    world.say(mine[0], "assistant", None, tool_calls=[{"id": "c1", "type": "function",
                                                       "function": {"name": "f", "arguments": "{}"}}])
    world.say(mine[0], "tool", "tool output: capybara 首保 eviction policy 2023年10月", tool_name="f")
    hidden = None
    if hermes_line() >= (0, 22):
        hidden = world.db.append_message(mine[2], "user", HIDDEN_TEXT, display_kind="hidden")
    theirs = {world.session(("user", "capybara 首保做完了 identical capybara text about the zebra and the cache"),
                            cwd=other),
              world.session(("user", "首保要做啥？机油换哪种"), ("assistant", "首保做完了，等了两个小时"), cwd=other)}
    askers = [world.session(cwd=app), world.session(cwd=app)]
    world.close()
    times = {"inf": math.inf, "-inf": -math.inf, "1e300": 1e300, "-1e300": -1e300, "1969": -86400.0 * 200,
             "text": "yesterday", "zero": 0}
    for name, value in times.items():
        write_as_importer(world.home, "UPDATE messages SET timestamp = ? WHERE session_id = ?", value, odd[name])
    write_as_importer(world.home, "UPDATE sessions SET started_at = 'last week' WHERE id = ?", odd["text"])
    write_as_importer(world.home, "UPDATE sessions SET started_at = ? WHERE id = ?", -math.inf, odd["-inf"])
    write_as_importer(world.home, "UPDATE sessions SET started_at = 'garbled' WHERE id = ?", askers[1])
    checkpoint(world.home)
    return {"home": world.home, "scopes": {None: set(mine), "Other": theirs}, "askers": askers, "hidden": hidden}


def _question(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.15:  # one kind of word only
        return " ".join(rng.choices(rng.choice([TIMES, ASKS, NOISE]), k=rng.randint(1, 4)))
    parts = rng.choices(TOPIC, k=rng.randint(0, 2)) + rng.choices(TIMES, k=rng.randint(0, 2)) \
        + rng.choices(ASKS, k=rng.randint(0, 2)) + rng.choices(NOISE, k=rng.randint(0, 3))
    rng.shuffle(parts)
    return rng.choice([" ", "", "，"]).join(parts) or rng.choice(NOISE)


def _args(rng: random.Random) -> dict:
    args = {"query": _question(rng), "mode": rng.choice(["keyword", "hybrid", "semantic"])}
    for key, values in (("since", SINCE_UNTIL), ("until", SINCE_UNTIL), ("limit", LIMITS)):
        value = rng.choice(values)
        if value is not None:
            args[key] = value
    if rng.random() < 0.3:
        args["include_tool_output"] = True
    if rng.random() < 0.3:
        args["context"] = rng.choice([0, 1, 5])
    if rng.random() < 0.1:  # another project, named
        args["project"] = "Other"
    return args


def _messages(home) -> dict[int, tuple]:
    """Every message's (session, role, timestamp as stored) read straight from state.db."""
    conn = sqlite3.connect(f"file:{home / 'state.db'}?mode=ro", uri=True)
    try:
        return {mid: (sid, role, ts) for mid, sid, role, ts in
                conn.execute("SELECT id, session_id, role, timestamp FROM messages")}
    finally:
        conn.close()


def _inside(args: dict, ts: object) -> bool:
    """Whether a message stored at ``ts`` lies inside the call's since/until (a second of slack: an
    age such as '1d' is read at the call and here a moment apart); without either, every number does."""
    from project_history_recall.search import parse_time

    since, until = parse_time("since", args.get("since")), parse_time("until", args.get("until"))
    return isinstance(ts, (int, float)) and (since is None or ts >= since - 1) and (until is None or ts < until + 1)


def _check(args: dict, raw: str, fx: dict, stored: dict) -> dict:
    out = json.loads(raw)
    assert isinstance(out, dict) and isinstance(out.get("success"), bool), raw[:300]
    if not out["success"]:
        assert out.get("error_code") and out["error_code"] != "internal", (args, raw[:500])
        return out
    limit = args.get("limit")
    wanted = min(50, max(1, int(limit))) if limit is not None else 10
    found = out["results"]
    assert len(found) <= wanted, (args, len(found))
    assert len({r["session_id"] for r in found}) == len(found), args
    assert {r["session_id"] for r in found} <= fx["scopes"][args.get("project")], (args, found)
    roles = {"user", "assistant", "tool"} if args.get("include_tool_output") else {"user", "assistant"}
    for r in found:
        for hit in [r, *r.get("more_hits", [])]:
            sid, role, ts = stored[hit["message_id"]]
            assert sid == r["session_id"] and role in roles and hit["message_id"] != fx["hidden"], (args, hit)
            if args.get("since") or args.get("until"):
                assert _inside(args, ts), (args, hit, ts)
            for entry in hit.get("context", []):
                assert stored[entry["message_id"]][0] == sid and entry["message_id"] != fx["hidden"], (args, entry)
    return out


@pytest.mark.parametrize("calls", sizes("PHR_RANKING_FUZZ_CALLS", full=3000, quick=150))
def test_hostile_questions_and_history_through_the_ranking_steps(tangled, calls):
    import model_tools

    fx = tangled
    plugin_settings(fx["home"], order_weight=5.0)  # every lift strong enough to move something
    enable_plugin(fx["home"])
    before = db_digest(fx["home"] / "state.db")
    stored = _messages(fx["home"])
    rng = random.Random(20261204)
    outcomes = {True: 0, False: 0}
    for _ in range(calls):
        args, asker = _args(rng), rng.choice(fx["askers"])
        first = model_tools.handle_function_call(SEARCH, dict(args), session_id=asker)
        out = _check(args, first, fx, stored)
        again = json.loads(model_tools.handle_function_call(SEARCH, dict(args), session_id=asker))
        assert again.get("results") == out.get("results"), args  # the same order, ties and all
        outcomes[out["success"]] += 1
    assert outcomes[True] > calls // 2 and outcomes[False] > 0, outcomes  # both paths really exercised
    assert db_digest(fx["home"] / "state.db") == before


@pytest.mark.parametrize("mode", ["semantic", "hybrid", "keyword"])
def test_sessions_that_say_the_same_keep_their_order_as_the_project_grows(world, work, mode):
    """Eighty sessions say one text, so every engine scores them alike: which of them are shown,
    and in which order, is the tie's order, the newer first in every engine. Sessions about
    something else, added between searches, change neither. The semantic engine kept its tied
    messages in the order a partial sort of the whole matrix left them, which moved as the
    matrix grew: another ten of the eighty came up after unrelated sessions were added."""
    import model_tools

    app = work / "app"
    app.mkdir()
    world.project("App", app)
    same = [world.session(("user", "identical capybara text about the zebra"), cwd=app) for _ in range(80)]
    asker = world.session(cwd=app)
    enable_plugin(world.home)
    shown = []
    for step in range(4):  # 0, 30, 90 and 180 sessions about other things
        for n in range(30 * step):
            world.session(("user", f"unrelated note {step} {n} about gardening and tomatoes"),
                          ("assistant", "noted, tomatoes"), cwd=app)
        out = json.loads(model_tools.handle_function_call(
            SEARCH, {"query": "capybara zebra", "mode": mode, "limit": 10, "context": 0}, session_id=asker))
        shown.append([same.index(r["session_id"]) for r in out["results"] if r["session_id"] in same])
    assert shown[0] and all(order == shown[0] for order in shown), shown
    if mode != "hybrid":  # hybrid gives each engine's first sessions a place (its order is theirs)
        assert shown[0] == sorted(shown[0], reverse=True)
