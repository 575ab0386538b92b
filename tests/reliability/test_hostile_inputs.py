"""Hostile input through Hermes's dispatch and the CLI: valid JSON, no escapes, no changes.

At least 10,000 tool calls mixing FTS5 operators and column filters,
unbalanced quotes, NEAR/*/^, SQL fragments, huge strings, NUL bytes, lone
surrogates, right-to-left marks, emoji, paths with %/_/.., and wrong types
for every argument. Every answer must be the plugin's own JSON (an error with
``error_code`` or results); nothing may reach Hermes's generic "Tool
execution failed" path; state.db and the plugin's store stay byte-identical.
"""

from __future__ import annotations

import io
import json
import os
import random
from contextlib import redirect_stderr, redirect_stdout

import pytest

from conftest import sizes
from hermes_world import checkpoint, db_digest, enable_plugin, store_state, plugin_settings

FRAGMENTS = [
    'NEAR(', 'NEAR(a b, 2)', '"', '""', "'", '*', '^', '-', '+', 'AND', 'OR', 'NOT', '(', ')', '{', '}', ':',
    'content:', 'rowid:', 'messages_fts:', 'col:x', '"unbalanced', 'x"y', "'; DROP TABLE messages; --",
    "1=1", "UNION SELECT * FROM sessions", "/*", "*/", "%", "_", "%_%", "..", "../..", "/etc/passwd",
    "C:\\Windows\\..\\", "\\\\srv\\share", "\x00", "\ud800", "\udfff", "\u202e", "\u200f", "\u200b", "\ufeff",
    "🙂", "👩‍💻", "超时", "服务端", "修改youer服务端", "ERR_CONNECTION_REFUSED", "foo.bar()", "src/app.py",
    "0x80070005", "\n", "\t", "\r\n", "$(rm -rf /)", "`id`", "{{7*7}}", "${jndi:ldap://x}", "\\", "\\\"",
    "MATCH", "bm25(", "snippet(", "json_each", "？", "。", "、", "ﾃｽﾄ", "Ⅻ", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢",
]
BAD_VALUES = [None, True, False, 0, -1, 10**12, 3.5, float("nan"), [], ["x"], {}, {"a": 1}, "", " ", "x" * 100_000]
SEARCH_KEYS = ["query", "mode", "limit", "context", "include_tool_output", "since", "until", "project",
               "include_current_session"]
MOVE_KEYS = ["project", "session"]


def hostile_text(rng: random.Random) -> str:
    parts = rng.choices(FRAGMENTS, k=rng.randint(1, 8))
    if rng.random() < 0.05:
        parts.append(rng.choice(FRAGMENTS) * rng.randint(100, 3000))
    return rng.choice(["", " ", "  "]).join(parts)


def hostile_args(rng: random.Random, keys: list[str]) -> object:
    """Half the time every argument is garbage; otherwise the text arguments are
    hostile and at most one other argument has a wrong type or value."""
    if rng.random() < 0.02:
        return rng.choice([None, [], "query", 5, ["query", "x"]])
    args = {}
    if rng.random() < 0.5:
        for key in keys:
            roll = rng.random()
            if roll < 0.5:
                args[key] = hostile_text(rng)
            elif roll < 0.75:
                args[key] = rng.choice(BAD_VALUES)
    else:
        args[keys[0]] = hostile_text(rng)
        if rng.random() < 0.5:
            args[rng.choice(keys)] = rng.choice(BAD_VALUES + [hostile_text(rng)])
    if rng.random() < 0.2:
        args[hostile_text(rng)[:20] or "extra"] = hostile_text(rng)
    return args


@pytest.fixture
def fuzz_world(world, work):
    app = work / "app_1%"
    app.mkdir()
    world.project("Fuzz target app", app)
    world.session(("user", "websocket ERR_CONNECTION_REFUSED 超时 foo.bar() src/app.py"), cwd=app)
    asker = world.session(cwd=app)
    world.close()
    checkpoint(world.home)
    # Hybrid by default: hostile text reaches the embedder and the fusion too.
    plugin_settings(world.home, semantic=os.environ.get("PHR_FUZZ_SEMANTIC", "1") == "1")
    enable_plugin(world.home)
    return {"home": world.home, "asker": asker}


def _plugins_own_answer(raw: str) -> dict:
    out = json.loads(raw)
    assert isinstance(out, dict) and isinstance(out.get("success"), bool), raw[:300]
    if not out["success"]:
        assert isinstance(out.get("error"), str) and out["error"] and out.get("error_code"), raw[:300]
        assert out["error_code"] != "internal", raw[:500]
    return out


@pytest.mark.parametrize("calls", sizes("PHR_FUZZ_CALLS", full=10_000, quick=300))
def test_ten_thousand_hostile_tool_calls(fuzz_world, calls):
    import model_tools

    home, asker = fuzz_world["home"], fuzz_world["asker"]
    before_db, before_store = db_digest(home / "state.db"), store_state(home)
    rng = random.Random(20261130)
    outcomes = {"ok": 0, "error": 0}
    for n in range(calls):
        tool, keys = ("project_session_move", MOVE_KEYS) if n % 5 == 0 else ("project_history_search", SEARCH_KEYS)
        args = hostile_args(rng, keys)
        kw = {"session_id": rng.choice([asker, None, "", hostile_text(rng)[:40]]),
              "task_id": rng.choice([asker, None, hostile_text(rng)[:40]])}
        raw = model_tools.handle_function_call(tool, args if isinstance(args, dict) else {"wrapped": args}, **kw)
        out = _plugins_own_answer(raw)
        outcomes["ok" if out["success"] else "error"] += 1
        if tool == "project_session_move":
            assert not out.get("moved"), (args, out)
    assert outcomes["ok"] + outcomes["error"] == calls
    assert outcomes["ok"] > calls // 10 and outcomes["error"] > calls // 10  # both paths really exercised
    assert db_digest(home / "state.db") == before_db
    assert store_state(home) == before_store


def test_handlers_reject_non_dict_arguments_directly(fuzz_world):
    """Hermes always passes a dict, but a direct registry dispatch may not."""
    from tools.registry import registry

    for args in (None, [], "query", 5):
        for tool in ("project_history_search", "project_session_move"):
            out = _plugins_own_answer(registry.get_entry(tool).handler(args, session_id=fuzz_world["asker"]))
            assert out["success"] is False


@pytest.mark.parametrize("runs", sizes("PHR_FUZZ_CLI_RUNS", full=1000, quick=50))
def test_hostile_cli_arguments_never_print_a_traceback(fuzz_world, monkeypatch, runs):
    from project_history_recall.ui import cli

    monkeypatch.setenv("HERMES_HOME", str(fuzz_world["home"]))
    rng = random.Random(7)
    commands = [["search"], ["status"], ["projects"], ["move"], ["session"], ["search", "--json"],
                ["search", "--project"], ["search", "--since"], ["search", "--limit"], []]
    for _ in range(runs):
        argv = list(rng.choice(commands)) + [hostile_text(rng)[:2000] for _ in range(rng.randint(0, 3))]
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            try:
                code = cli.main(argv)
            except SystemExit as exc:  # argparse's own usage errors
                code = exc.code
        assert code in (0, 1, 2, 3), (argv, code, err.getvalue()[-500:])
        assert "Traceback" not in err.getvalue() and "Traceback" not in out.getvalue(), argv


def test_a_folder_named_50000_levels_deep_is_answered_by_the_move_as_by_the_search(fuzz_world):
    """The search cuts its ``project`` to the query's cap; the move took the whole reference: a
    folder 100 KB long, 50,000 levels deep, took 27 s to refuse (each of its ancestors became a
    key to look up) and the refusal quoted all 100 KB back to the agent (the fourth hostile sweep)."""
    import model_tools

    deep = "/" + "level/" * 50_000
    answers = [json.loads(model_tools.handle_function_call(tool, {"project": deep, **extra},
                                                           session_id=fuzz_world["asker"]))
               for tool, extra in (("project_history_search", {"query": "websocket"}), ("project_session_move", {}))]
    for out in answers:
        assert out["success"] is False and out["error_code"] == "unknown_project", out
        assert len(out["error"]) < 5_000
    assert answers[0]["error"] == answers[1]["error"]


def test_an_argument_nested_thousands_deep_is_refused_as_a_bad_argument(fuzz_world):
    """A refusal quoted the argument it refused with ``repr``, which goes as deep as the value: a
    list nested 2,000 levels (more than a model's JSON reaches Hermes with, but a direct call of
    Hermes's dispatch passes it on) raised RecursionError, answered as ``internal`` (the fifth
    hostile sweep). A refusal now shows a few levels of it."""
    import model_tools

    deep: list = []
    for _ in range(2_000):
        deep = [deep]
    for key in ("limit", "context", "mode", "include_tool_output", "include_current_session"):
        out = _plugins_own_answer(model_tools.handle_function_call(
            "project_history_search", {"query": "websocket", key: deep}, session_id=fuzz_world["asker"]))
        assert out["success"] is False and out["error_code"] == "bad_argument", (key, out)
        assert f"'{key}'" in out["error"] and len(out["error"]) < 200, out["error"]


def test_a_whole_log_as_the_query_is_searched_by_its_beginning_and_the_agent_is_told(fuzz_world):
    """A model that pastes 200,000 characters of a log got the results of its first 2,048 and no word
    of the rest (the thirteenth hostile sweep): now a warning says so, and nothing changes."""
    import model_tools

    home = fuzz_world["home"]
    before_db, before_store = db_digest(home / "state.db"), store_state(home)
    log = "websocket ERR_CONNECTION_REFUSED at src/app.py line 12\n" * 4_000
    for mode in ("keyword", "hybrid"):
        out = _plugins_own_answer(model_tools.handle_function_call(
            "project_history_search", {"query": log, "mode": mode}, session_id=fuzz_world["asker"]))
        assert out["success"] and out["results"], out
        assert any("first 2,048 characters" in w for w in out["warnings"]), out.get("warnings")
    assert db_digest(home / "state.db") == before_db
    assert store_state(home) == before_store


def test_an_argument_of_another_tool_is_said_to_be_left_out(fuzz_world):
    """``around_message_id`` is session_search's: sent to the search, it was dropped without a word."""
    import model_tools

    out = _plugins_own_answer(model_tools.handle_function_call(
        "project_history_search", {"query": "websocket", "mode": "keyword", "around_message_id": -5},
        session_id=fuzz_world["asker"]))
    assert out["success"] and out["results"], out
    assert any("'around_message_id'" in w and "session_search(" in w for w in out["warnings"]), out.get("warnings")


@pytest.mark.parametrize("args", [{"q": "websocket"}, {"keywords": ["websocket"], "mode": "keyword"},
                                  {"search": "websocket", "query": None}])
def test_the_words_sent_under_another_name_are_named_in_the_refusal(fuzz_world, args):
    """The words sent as ``q``, ``keywords`` or ``search`` were refused as "'query' is empty", as if
    none were sent: the refusal names what was given now, and where the words go."""
    import model_tools

    out = _plugins_own_answer(model_tools.handle_function_call("project_history_search", args,
                                                               session_id=fuzz_world["asker"]))
    other = next(k for k in args if k not in ("query", "mode"))
    assert out["error_code"] == "bad_argument" and f"'{other}'" in out["error"], out
    assert "the words go in 'query'" in out["error"], out
    out = _plugins_own_answer(model_tools.handle_function_call("project_history_search", {"query": " ", "q": "x"},
                                                               session_id=fuzz_world["asker"]))
    assert out["error_code"] == "bad_argument" and "'q'" not in out["error"], out  # 'query' was given, blank


def test_trimmed_counts_the_further_hits_left_out_not_the_results_that_held_them(world, work, monkeypatch):
    """``trimmed.more_hits`` is documented as the further hits left out, and counted the results whose
    ``more_hits`` were emptied: a result of three further hits left out counted one. Hermes's limit is
    set low here (as it is scaled down for a model with a small window) so that the answer is fitted
    by emptying windows and further hits alone; each counts what went."""
    import model_tools

    from hermes_world import plugin_module

    folder = work / "house"
    folder.mkdir()
    world.project("House", folder)
    for n in range(8):
        world.session(*[("user", f"boiler {n}.{m}: the boiler pressure drops again, " + "and the valve hisses " * 8)
                        for m in range(4)], cwd=folder)
    asker = world.session(cwd=folder)
    plugin_settings(world.home, semantic=False)
    enable_plugin(world.home)
    args = {"query": "boiler pressure", "mode": "keyword", "context": 2}
    whole = json.loads(model_tools.handle_function_call("project_history_search", args, session_id=asker))
    assert "trimmed" not in whole and len(whole["results"]) == 8, whole
    assert sum(len(r.get("more_hits", [])) for r in whole["results"]) > sum("more_hits" in r for r in whole["results"])
    bare = [{k: v for k, v in r.items() if k not in ("context", "more_hits")} for r in whole["results"]]
    limit = len(json.dumps({**whole, "results": bare}, ensure_ascii=False)) + 2_000  # room for the warning
    monkeypatch.setattr(plugin_module("hermes.host"), "tool_result_limit", lambda: limit)
    raw = model_tools.handle_function_call("project_history_search", args, session_id=asker)
    fitted = json.loads(raw)
    assert len(raw) <= limit and fitted["trimmed"]["results"] == 0, fitted["trimmed"]
    assert [r["session_id"] for r in fitted["results"]] == [r["session_id"] for r in whole["results"]]
    pairs = list(zip(whole["results"], fitted["results"], strict=True))
    left_out = sum(len(w.get("more_hits", [])) - len(f.get("more_hits", [])) for w, f in pairs)
    emptied = sum(1 for w, f in pairs if w["context"] and not f["context"])
    assert left_out > sum("more_hits" in w and "more_hits" not in f for w, f in pairs)  # counts tell them apart
    assert fitted["trimmed"] == {"context_windows": emptied, "more_hits": left_out, "results": 0}, fitted["trimmed"]


def test_the_largest_answer_asked_for_stays_within_hermes_limit_for_one_tool_result(world, work):
    """``limit: 50, context: 10`` is within the schema's bounds, and over long messages made a 200 KB
    answer. Hermes keeps one tool result to ``DEFAULT_RESULT_SIZE_CHARS`` (100,000): a longer one
    reaches the model as a 1,500-character preview of the JSON, cut mid-way, the rest saved to a file.
    The search now fits its answer under that limit, leaving out the farthest context windows first,
    and says what it left out."""
    import model_tools
    from tools.budget_config import DEFAULT_RESULT_SIZE_CHARS
    from tools.tool_result_storage import maybe_persist_tool_result

    app = work / "app"
    app.mkdir()
    world.project("App", app)
    words = "the websocket reconnect loop and its retry backoff, 超时重连的细节 " * 12
    for n in range(24):
        world.session(*[("user" if j % 2 == 0 else "assistant", f"{n} {j} {words}") for j in range(24)], cwd=app)
    asker = world.session(cwd=app)
    plugin_settings(world.home, semantic=False)
    enable_plugin(world.home)

    for args in ({"limit": 50, "context": 10}, {"limit": 50, "context": 10, "include_current_session": True},
                 {"limit": 2, "context": 10}):
        raw = model_tools.handle_function_call("project_history_search", {"query": "websocket reconnect", **args},
                                               session_id=asker)
        assert len(raw) <= DEFAULT_RESULT_SIZE_CHARS, (args, len(raw))
        # What the agent loop hands the model: the answer whole, as it is under the limit.
        assert maybe_persist_tool_result(raw, "project_history_search", "call_1") == raw
        out = _plugins_own_answer(raw)
        assert out["success"] and out["results"], args
        if args["limit"] == 2:
            assert "trimmed" not in out and all(len(r["context"]) > 2 for r in out["results"])
            continue
        assert len(out["results"]) >= 20, len(out["results"])
        assert out["trimmed"]["context_windows"] > 0, out["trimmed"]
        assert out["results"][0]["context"], "the best results keep their windows"
        assert any("100,000" in w for w in out["warnings"]), out.get("warnings")
