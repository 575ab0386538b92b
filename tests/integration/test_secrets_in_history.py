"""Secrets pasted into the searched history never show in a result, however the result is cut or marked.

The remote embedder's key sits in ``.env`` under a variable of the user's own
naming, and the user once pasted it into a chat, next to other credentials.
Searches whose highlight falls inside a key, whose snippet or context cut
falls inside one, run through Hermes's dispatch, ``/recall``, the CLI (plain,
JSON and in a colour terminal) must show none of them, not even a piece.
"""

from __future__ import annotations

import json
import re

import pytest

from cli_runs import Outputs, run_cli, run_in_terminal, terminal_env
from embed_server import EmbeddingServer
from hermes_world import call, enable_plugin, remote_settings
from pty_terminal import plain

SEARCH = "project_history_search"
KEY = "sk-proj-Zx81QqLmN0pR7tUvW3yBcD5e"
# What people paste into chats, none of it the configured key: (the text pasted, its secret part).
PASTED = {
    "github": ("ghp_R8x2Lq9ZmT4vN7wK1pY6sD3fH5jB0cXa", "R8x2Lq9ZmT4vN7wK1pY6sD3fH5jB0cXa"),
    "aws": ("AKIAJ7Q2XK9LM4PZ8RTW", "J7Q2XK9LM4PZ8RTW"),
    "slack": ("xoxb-2048-7741-Qw8ErTy6UiOp3AsDf", "2048-7741-Qw8ErTy6UiOp3AsDf"),
    "anthropic": ("sk-ant-api03-Hq7Lx2Vd9Rk4Wm1Zp8N3", "ant-api03-Hq7Lx2Vd9Rk4Wm1Zp8N3"),
    "header": ("Authorization: Bearer 9fK2mQ7xL4vR8tZ1wN6pB3cY5", "9fK2mQ7xL4vR8tZ1wN6pB3cY5"),
    "env": ("STRIPE_SECRET=Lk93jdHq02PzXv7YwRt5", "Lk93jdHq02PzXv7YwRt5"),
    "aws_file": ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYzQ3kLm9RtX",
                 "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzQ3kLm9RtX"),
    "aws_temporary": ("aws_access_key_id = ASIAQ7XK2LM4PZ8RTWJ5", "Q7XK2LM4PZ8RTWJ5"),
    "aws_session": ("aws_session_token = FwoGZXIvYXdzEJr9Qk2LmT7xWz4NbR8vYc1HdJ6sPq3Ue5Kf0Ag",
                    "FwoGZXIvYXdzEJr9Qk2LmT7xWz4NbR8vYc1HdJ6sPq3Ue5Kf0Ag"),
    "pgp": ("-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBGXq3ZkBCADk7vQm9hTz2LpW4xRn8\n=Ab3x\n"
            "-----END PGP PRIVATE KEY BLOCK-----", "lQOYBGXq3ZkBCADk7vQm9hTz2LpW4xRn8"),
    "slack_webhook": ("https://hooks.slack.com/services/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",
                      "T024BE7LD/B08K3QWR7TY/Xq8LmN2aH4sJ9dKfG2hZ6wQe"),
    "gitlab": ("glpat-Jk4Hs9QmW2xZr7Tb5Nv1", "Jk4Hs9QmW2xZr7Tb5Nv1"),
    "azure": ("DefaultEndpointsProtocol=https;AccountName=shopdata;AccountKey=" + "Zm9vYmFyYmF6cXV4" * 5
              + "Zm9vYmE=;EndpointSuffix=core.windows.net", "Zm9vYmFyYmF6cXV4" * 5 + "Zm9vYmE="),
    "curl": ("curl -u deploy:Hq7Lx2Vd9Rk4 https://ci.example.com/api", "Hq7Lx2Vd9Rk4"),
}
MARKS = re.compile(r">>>|<<<|[«»…]|\x1b\[[0-9;]*m")


def pieces(secret: str, n: int = 8) -> set[str]:
    return {secret[i:i + n] for i in range(len(secret) - n + 1)}


def leaked(text: str) -> list[str]:
    """Every 8-character piece of a secret in ``text``, highlight marks, cut marks and colours removed."""
    flat = MARKS.sub("", text)
    secrets = [KEY] + [part for _, part in PASTED.values()]
    return sorted({p for s in secrets for p in pieces(s) if p in flat})


@pytest.fixture
def history(world, work, server: EmbeddingServer):
    app = work / "app"
    app.mkdir()
    world.project("App", app)
    filler = "the deploy notes say nothing much here " * 12
    sessions = {
        # a keyword search for "proj" marks the middle of the key
        "pasted": world.session(("user", f"my openai key is {KEY} for the embedder, keep it"),
                                ("assistant", "Noted, I will not repeat it."), cwd=app, title="key setup"),
        # the 400-character context cut and the 240-character snippet window both end inside the key
        "cut": world.session(("user", filler[:385] + f" {KEY} and more words after it"),
                             ("assistant", "windowmarker " + filler[:216] + f" {KEY} end"), cwd=app, title="cut"),
        "others": world.session(("user", "credentials dump: " + " ; ".join(p for p, _ in PASTED.values())),
                                cwd=app, title="credentials"),
        "asking": world.session(("user", "where did I put the key"), cwd=app, title="asking"),
    }
    (world.home / ".env").write_text(f"MY_KEY={KEY}\n", encoding="utf-8")
    remote_settings(world.home, server, api_key_env="MY_KEY")
    enable_plugin(world.home)
    return {"home": world.home, "app": app, **sessions}


QUERIES = {"proj": "pasted", "windowmarker": "cut", "credentials dump": "others", "ghp": "others",
           "Bearer": "others", "STRIPE_SECRET": "others", "Zx81QqLmN0pR7tUvW3yBcD5e": "pasted",
           "aws_secret_access_key": "others", "aws_session_token": "others", "aws_access_key_id": "others",
           "PGP": "others", "hooks.slack.com": "others", "glpat": "others", "AccountKey": "others",
           "curl": "others"}


def test_tool_results_mask_keys_before_marking_and_cutting(history, server):
    outputs = Outputs()
    for query, where in QUERIES.items():
        for mode in ("keyword", "hybrid"):
            res = outputs.add(call(SEARCH, {"query": query, "mode": mode, "context": 1},
                                   session_id=history["asking"]))
            assert res["success"] and history[where] in {r["session_id"] for r in res["results"]}, (query, res)
    found = json.loads(outputs.texts[0])
    assert "[redacted]" in found["results"][0]["snippet"] and "for the embedder" in found["results"][0]["snippet"]
    shown = [json.loads(t) for t in outputs.texts]
    contexts = [c["text"] for r in shown for hit in r["results"] for c in hit.get("context", [])]
    assert any(c.startswith("the deploy notes") and c.endswith("…") for c in contexts)  # the long message, cut
    assert not [leaked(t) for t in outputs.texts if leaked(t)]
    assert server.count() == 0  # consent was never given: nothing went to the service


def test_recall_and_the_cli_mask_keys_too(history, server, capsys, monkeypatch):
    from hermes_cli.plugins import get_plugin_command_handler

    outputs = Outputs()
    handler = get_plugin_command_handler("recall")
    monkeypatch.setenv("HERMES_SESSION_ID", history["asking"])
    for query in QUERIES:
        outputs.add(handler(f"search {query}"))
    monkeypatch.delenv("HERMES_SESSION_ID")
    assert "key setup" in outputs.texts[0] and "[redacted]" in outputs.texts[0], outputs.texts[0]
    home, app = history["home"], str(history["app"])
    for query in QUERIES:
        for extra in ([], ["--json"], ["--mode", "keyword", "--context", "3"]):
            assert run_cli(outputs, capsys, "search", query, "--dir", app, *extra, home=home) == 0, outputs.texts[-1]
    code, raw = run_in_terminal(["search", "proj", "--dir", app, "--mode", "keyword"], terminal_env(home))
    assert code == 0 and "key setup" in plain(raw), raw[-2000:]
    outputs.add(raw)
    assert not [leaked(t) for t in outputs.texts if leaked(t)]
    assert server.count() == 0
