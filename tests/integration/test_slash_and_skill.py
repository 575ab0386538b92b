"""/recall and the recall skill, as Hermes finds and runs them."""

from __future__ import annotations

import json

from hermes_world import call, enable_plugin


def _world(world, work):
    app, other = work / "app", work / "other"
    app.mkdir()
    other.mkdir()
    world.project("App", app)
    world.project("Other", other)
    hit = world.session(("user", "websocket reconnect keeps failing"), ("assistant", "added backoff 超时"),
                        cwd=app, title="Fix websocket")
    me = world.session(cwd=app, title="current chat")
    enable_plugin(world.home)
    return {"hit": hit, "me": me}


def test_recall_slash_command_runs_through_hermes(world, work, monkeypatch):
    from hermes_cli.plugins import get_plugin_command_handler, get_plugin_commands

    w = _world(world, work)
    assert "recall" in get_plugin_commands()
    handler = get_plugin_command_handler("recall")
    monkeypatch.setenv("HERMES_SESSION_ID", w["me"])  # what the CLI sets for its session

    out = handler("websocket")
    assert "Fix websocket" in out and "«websocket»" in out and f"@session:default/{w['hit']}" in out
    assert "超时" in handler("超时")
    status = handler("status")
    assert "project App" in status and "2 sessions" in status and str(work / "app") in status
    assert "/recall <query>" in handler("") and "/recall move" in handler("help")
    assert "nothing was changed" in handler("move nope").lower() or "No project" in handler("move nope")
    moved = handler("move Other")
    assert "Moved session" in moved and "Other" in moved
    assert "project Other" in handler("status")


def test_recall_skill_is_served_by_skill_view(world, work):
    _world(world, work)
    out = call("skill_view", {"name": "project-history-recall:recall"})
    assert out.get("success") is True, out
    text = json.dumps(out, ensure_ascii=False)
    assert "project_history_search" in text and "session_search(session_id=" in text
