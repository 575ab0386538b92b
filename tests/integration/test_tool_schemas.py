"""The model-facing surface, as Hermes hands it to a model and shows it to people."""

from __future__ import annotations

import copy
import re

from hermes_world import enable_plugin, hermes_line

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
