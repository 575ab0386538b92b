"""/recall and the recall skill, as Hermes finds and runs them."""

from __future__ import annotations

import contextvars

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


def test_recall_verbs_are_split_off_by_any_space_as_hermes_splits_the_command(world, work, monkeypatch):
    """Hermes finds the command's name by any whitespace (``str.split()``: the gateway's
    ``MessageEvent.get_command_args``, the CLI's ``process_command``), so an ideographic space, which a
    Chinese input method types, or a tab reaches ``/recall`` between its verb and the rest: the verb
    counts there too. (Before, only an ASCII space did: ``move　Other`` was searched for, not done.)"""
    from gateway.platforms.base import MessageEvent
    from hermes_cli.plugins import get_plugin_command_handler

    w = _world(world, work)
    handler = get_plugin_command_handler("recall")
    monkeypatch.setenv("HERMES_SESSION_ID", w["me"])

    def recall(text: str) -> str:
        return handler(MessageEvent(text=f"/recall {text}").get_command_args())

    assert "project App" in recall("status\u3000")
    assert "project App" in recall("STATUS\t")
    # Words after the verb are no part of the status: said, with how to search for them.
    said = recall("status report of the websocket fix")
    assert "project App" in said and "/recall search status report of the websocket fix" in said, said
    assert "not searched" not in recall("status")
    assert "/recall move" in recall("help\u3000")
    assert "say which project" in recall("move\u3000\u3000")
    assert "Fix websocket" in recall("search\u3000websocket")
    moved = recall("move\u3000Other")
    assert "Moved session" in moved and "Other" in moved, moved
    assert "project Other" in recall("status")
    moved_back = recall("move\tApp")
    assert "Moved session" in moved_back and "App" in moved_back, moved_back


def test_recall_move_takes_a_quoted_project_name_as_a_shell_would(world, work, monkeypatch):
    """``/recall`` has no shell in front of it, so the quotes a person puts around a name of several
    words (``hermes recall move … "Web Shop"`` loses them in the shell) reached the move, which
    looked for a project named with them."""
    from hermes_cli.plugins import get_plugin_command_handler

    w = _world(world, work)
    (work / "web shop").mkdir()
    world.project("Web Shop", work / "web shop")
    handler = get_plugin_command_handler("recall")
    monkeypatch.setenv("HERMES_SESSION_ID", w["me"])

    moved = handler('move "Web Shop"')
    assert "Moved session" in moved and "Web Shop" in moved, moved
    moved = handler("move “App”")
    assert "Moved session" in moved and "'App'" in moved, moved
    assert "No project" in handler("move \"Nowhere\"")


def test_a_gateway_serving_several_profiles_shows_a_chat_no_other_profiles_history(world, work, monkeypatch):
    """A gateway serving several profiles (``gateway.multiplex_profiles``) runs a plugin's command in the
    profile of the bot that received it, which may serve another profile's chat: Hermes binds the chat's
    profile for its own commands, not for a plugin's. Here the bot's profile is this home (``default``)
    and the chat is profile ``work``'s, as its session key says (``agent:work:…``), or the desktop's
    session (Hermes 0.19.0 gives a plugin's command no session at all): ``/recall`` showed this profile's
    history and projects there. In a chat of this profile (``agent:main:…``) it searches as before."""
    from agent import secret_scope
    from gateway.session_context import clear_session_vars, set_session_vars
    from hermes_cli.plugins import get_plugin_command_handler

    w = _world(world, work)
    handler = get_plugin_command_handler("recall")
    monkeypatch.chdir(work / "app")  # the gateway's folder: App's, in this profile
    monkeypatch.delenv("TERMINAL_CWD", raising=False)
    # Hermes's clear_session_vars leaves the variables set to "" (no fallback to the environment), so the
    # chats run in a copy of the test's context: the tests after this one read TERMINAL_CWD as before.
    contextvars.copy_context().run(_chats_of_two_profiles, handler, secret_scope, set_session_vars, clear_session_vars)
    assert world.db.get_session(w["hit"])["cwd"] == str(work / "app")


def _chats_of_two_profiles(handler, secret_scope, set_session_vars, clear_session_vars) -> None:
    secret_scope.set_multiplex_active(True)
    try:
        # A gateway's chat of profile work; one Hermes names no profile for; a desktop session of work's.
        for key, profile in (("agent:work:telegram:dm:42", ""), ("", ""), ("telegram:dm:42", ""), ("tui-7", "work")):
            tokens = set_session_vars(platform="telegram", chat_id="42", session_key=key, profile=profile)
            try:
                for line in ("websocket", "status", "move Other", "search websocket"):
                    out = handler(line)
                    assert "websocket" not in out.replace(line, "") and "App" not in out, (key, line, out)
                    assert "nothing was searched or changed" in out, (key, line, out)
            finally:
                clear_session_vars(tokens)
        for key, profile in (("agent:main:telegram:dm:42", ""), ("tui-7", "default")):
            tokens = set_session_vars(platform="telegram", chat_id="42", session_key=key, profile=profile)
            try:
                assert "Fix websocket" in handler("websocket"), (key, profile)
            finally:
                clear_session_vars(tokens)
    finally:
        secret_scope.set_multiplex_active(False)
