"""The model-facing surface, as Hermes hands it to a model and shows it to people."""

from __future__ import annotations

import copy
import json
import os
import re

from hermes_world import PLUGIN_KEY, call, enable_plugin, hermes_line, plugin_settings

OURS = ("project_history_search", "project_session_move")


def test_schemas_survive_hermes_schema_handling_unchanged(home):
    import model_tools
    from tools.registry import registry
    from tools.schema_sanitizer import sanitize_tool_schemas

    enable_plugin(home)
    # 0.22 defers plugin tools behind its tool_search bridge, which hands out these schemas as they are.
    deferred = {"skip_tool_search_assembly": True} if hermes_line() >= (0, 22) else {}
    definitions = {d["function"]["name"]: d for d in
                   model_tools.get_tool_definitions(enabled_toolsets=["project_history"], quiet_mode=True, **deferred)}
    assert set(OURS) <= set(definitions)
    for name in OURS:
        declared = registry.get_entry(name).schema
        sent = definitions[name]["function"]
        assert sent["description"] == declared["description"]
        assert sent["parameters"] == declared["parameters"]
        # Hermes's sanitizer (for strict backends such as llama.cpp) finds nothing to change.
        wrapped = [{"type": "function", "function": copy.deepcopy(sent)}]
        assert sanitize_tool_schemas(wrapped)[0]["function"]["parameters"] == declared["parameters"]


def test_descriptions_are_short_enough_to_be_shown_whole(home):
    from hermes_cli.plugins import get_plugin_commands
    from tools.registry import registry

    enable_plugin(home)
    for name in OURS:
        schema = registry.get_entry(name).schema
        assert re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", name)
        assert 100 < len(schema["description"]) <= 1024, name
        for param, spec in schema["parameters"]["properties"].items():
            assert spec.get("description") and len(spec["description"]) <= 300, (name, param)
        assert set(schema["parameters"]["required"]) <= set(schema["parameters"]["properties"])
    command = get_plugin_commands()["recall"]
    # Discord shows a slash command's description and "Arguments: <hint>" cut at 100 characters.
    assert 0 < len(command["description"]) <= 100
    assert len(f"Arguments: {command['args_hint']}") <= 100


def test_the_search_description_and_the_skill_name_what_a_response_says_it_went_without(world, work):
    """A search response says how each side answered (``keyword_status`` with ``keyword_reason``, beside
    ``semantic_status``) and what it went without (``warnings``); the description named only
    ``semantic_status``. The description Hermes hands the model and the skill it serves name each field
    a response with a keyword index that cannot be used (a FIFO at its path) carries."""
    app = work / "app"
    app.mkdir()
    world.project("App", app)
    world.session(("user", "the websocket reconnect loop is flaky"), cwd=app)
    asker = world.session(cwd=app)
    plugin_settings(world.home, semantic=False)
    os.mkfifo(world.home / PLUGIN_KEY / "keywords.db")
    enable_plugin(world.home)
    res = call("project_history_search", {"query": "websocket"}, session_id=asker)
    assert res["success"] and res["results"] and res["warnings"], res
    statuses = [key for key in res if key.endswith("_status")]
    reasons = [key for key in res if key.endswith("_reason")]
    assert {"keyword_status", "semantic_status"} <= set(statuses) and "keyword_reason" in reasons, res
    import model_tools

    deferred = {"skip_tool_search_assembly": True} if hermes_line() >= (0, 22) else {}
    description = next(d["function"]["description"] for d in model_tools.get_tool_definitions(
        enabled_toolsets=["project_history"], quiet_mode=True, **deferred)
        if d["function"]["name"] == "project_history_search")
    skill = json.dumps(call("skill_view", {"name": "project-history-recall:recall"}), ensure_ascii=False)
    for field in [*statuses, "warnings"]:
        assert field in description and field in skill, field
    for field in reasons:
        assert "*_reason" in description and field in skill, field


def test_tool_output_asked_of_a_semantic_search_is_said_to_be_searched_by_keyword_only(world, work):
    """The schema said ``include_tool_output`` "also searches tool output", and a semantic search given it
    answered as if it had: tool output is never embedded, so the output that held the answer was not
    looked at, and nothing said so. The schema now says tool output is searched by keyword, and a
    semantic search asked for it says in ``warnings`` that it left it out; keyword and hybrid find it."""
    from tools.registry import registry

    world.project("App", work)
    sid = world.session(("user", "please list the pods"), cwd=work)
    world.say(sid, "tool", "capybara-worker-7f9 CrashLoopBackOff: memory limit exceeded", tool_name="terminal")
    asker = world.session(cwd=work)
    enable_plugin(world.home)
    described = registry.get_entry("project_history_search").schema["parameters"]["properties"]
    assert "keyword" in described["include_tool_output"]["description"]
    args = {"query": "capybara CrashLoopBackOff", "include_tool_output": True}
    for mode in ("keyword", "hybrid"):
        res = call("project_history_search", {**args, "mode": mode}, session_id=asker)
        assert res["results"][0]["role"] == "tool" and "warnings" not in res, res
    res = call("project_history_search", {**args, "mode": "semantic"}, session_id=asker)
    assert res["success"] and not res["results"], res
    assert any("tool output" in w and "keyword" in w for w in res["warnings"]), res
    plain = call("project_history_search", {"query": "list the pods", "mode": "semantic"}, session_id=asker)
    assert "warnings" not in plain, plain


def test_context_is_described_as_the_window_of_each_result_s_best_message(world, work):
    """``context`` was described as the messages "before and after each hit", but a window is read around
    each result's best message only (a further hit in ``more_hits`` comes without one, to be read around
    with ``session_search``). The description says what the tool does."""
    from tools.registry import registry

    world.project("App", work)
    world.session(("user", "the boiler pressure drops"), ("assistant", "check the boiler valve"), cwd=work)
    asker = world.session(cwd=work)
    enable_plugin(world.home)
    res = call("project_history_search", {"query": "boiler", "mode": "keyword", "context": 1}, session_id=asker)
    [result] = res["results"]
    assert result["context"] and result["more_hits"] and not any("context" in h for h in result["more_hits"]), res
    described = registry.get_entry("project_history_search").schema["parameters"]["properties"]["context"]
    assert "best message" in described["description"] and "each hit" not in described["description"], described
