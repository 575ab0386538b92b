"""The text a person reads, from the library's responses (ui/render.py)."""

from __future__ import annotations

import yaml

from project_history_recall.ui import render, terminal

SEARCH = {"success": True, "query": "websocket", "mode": "hybrid", "searched_with": "keyword",
          "project": {"kind": "explicit", "id": "p_1", "name": "App"}, "sessions_in_scope": 40,
          "semantic_status": "partial", "semantic_index": {"sessions": 40, "sessions_indexed": 12},
          "semantic_reason": "28 of 40 sessions are still being indexed in the background; semantic results "
                             "come from the indexed part",
          "results": []}


def test_a_one_shot_process_says_what_it_did_and_how_to_finish():
    text = render.format_search(SEARCH, render.Style(), render.OneShot("recall --home /h", 60))
    assert "background" not in text and "next search" not in text
    assert "12 of 40 sessions indexed within the 60 s this command waits" in text
    assert "recall --home /h index --project p_1" in text
    # inside a running Hermes (/recall) the indexing does go on: the tool's own words stay
    assert "still being indexed in the background" in render.format_search(SEARCH, render.Style())


def test_keyword_mode_says_nothing_of_the_semantic_side():
    response = {**SEARCH, "mode": "keyword", "semantic_status": "indexing",
                "semantic_reason": "the embedded model is still loading; semantic results follow on the next search"}
    text = render.format_search(response, render.Style(), render.OneShot("recall", 60))
    assert "semantic" not in text and "next search" not in text and "mode keyword" in text


def test_a_time_alone_says_nothing_of_the_semantic_side_in_any_mode():
    """Its sessions are found by their times: the model's loading concerns no search of this one."""
    for mode in ("hybrid", "semantic"):
        response = {**SEARCH, "mode": mode, "searched_with": "time", "semantic_status": "indexing",
                    "semantic_reason": "the embedded model is still loading; semantic results follow on the next search"}
        text = render.format_search(response, render.Style(), render.OneShot("recall", 60))
        assert "semantic:" not in text and "not ready" not in text and "next search" not in text, text
        assert f"mode {mode} (searched with time)" in text


def test_output_masks_the_configured_key_on_both_streams(tmp_path, capsys):
    key = "sk-render-test-Q8w2Zr5Tn1Kd7Lp4"
    folder = tmp_path / "project-history-recall"
    folder.mkdir()
    (folder / "config.yaml").write_text(yaml.safe_dump(
        {"embedder": "openai", "openai": {"base_url": "http://127.0.0.1:9/v1", "model": "m",
                                          "api_key_env": "RENDER_TEST_KEY"}}), encoding="utf-8")
    (tmp_path / ".env").write_text(f"RENDER_TEST_KEY={key}\n", encoding="utf-8")
    out = render.Output(tmp_path)
    out.print(f"a message quoting {key}")
    out.error(f"an error quoting half of it: {key[:12]}")
    out.progress(render.progress_bar(key, 1, 2))
    out.json({"snippet": key})
    seen = capsys.readouterr()
    assert key[:8] not in seen.out + seen.err and seen.out.count("[redacted]") == 2, seen
    assert seen.err.count("[redacted]") == 2


def test_output_shows_control_characters_as_text(tmp_path, capsys):
    # A title written by another tool (Hermes strips controls from the titles it sets itself).
    hit = {"title": "deploy \x1b]0;pwned\x07", "when": "", "role": "user", "score_source": "keyword",
           "snippet": ">>>deploy<<< \x9b2J", "context": [{"role": "assistant", "text": "\u202eexe.txt"}],
           "link": "@session:default/s1", "message_id": 1}
    out = render.Output(tmp_path)
    out.print(render.format_search({**SEARCH, "results": [hit]}, out.style()))
    out.progress(render.progress_bar("name\r\x1b[2K", 1, 2))
    out.progress(None)
    out.error("bad \x00 byte")
    seen = capsys.readouterr()
    assert "deploy \\u001b]0;pwned\\u0007" in seen.out and "«deploy» \\u009b2J" in seen.out
    assert "assistant: \\u202eexe.txt" in seen.out
    assert seen.err.startswith("\rname\\u000d\\u001b[2K") and "bad \\u0000 byte" in seen.err
    # The one sequence of the plugin's own: the progress line clears what a longer one left.
    assert seen.err.count("\x1b[K") == 1
    assert not set(seen.out + seen.err.replace("\x1b[K", "")) & {"\x1b", "\x07", "\x9b", "\u202e", "\x00"}


def test_colours_come_only_from_the_screen_that_places_them():
    screen = terminal.Screen()
    style = render.Style(screen)
    forged = render.Style(terminal.Screen()).bold("x")  # another process's tag: not this one's colours
    text = screen.shown(style.mark(">>>hit<<< \x1b[8m") + forged)
    assert text.startswith("\x1b[1;33mhit\x1b[0m \\u001b[8m") and "\x1b[1m" not in text


def test_a_session_result_shows_each_of_its_hits_and_every_message_id():
    hit = {"title": "deploy", "when": "2026-09-01 10:00", "role": "user", "score_source": "both",
           "snippet": ">>>deploy<<< failed", "link": "@session:default/s1", "message_id": 7,
           "context": [{"role": "assistant", "text": "retry it", "message_id": 8}],
           "more_hits": [{"when": "2026-09-01 10:05", "role": "assistant", "score_source": "keyword",
                          "snippet": "the >>>deploy<<< passed", "message_id": 12,
                          "context": [{"role": "user", "text": "thanks", "message_id": 13}]}]}
    text = render.format_search({**SEARCH, "results": [hit]}, render.Style())
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith(" 1. deploy"))
    assert lines[at + 1:] == ["    «deploy» failed", "      assistant: retry it",
                              "    also 2026-09-01 10:05 · assistant · keyword", "    the «deploy» passed",
                              "      user: thanks", "    @session:default/s1 · messages 7, 12"]


ASKED = {"required": True, "service": "https://embed.example", "model": "m-1",
         "project": {"kind": "explicit", "id": "p 1", "name": "App"},
         "would_send": {"messages": 1, "sessions": 2, "characters": 1200, "piece_chars": 1500},
         "nothing_sent_yet": True, "token": "phr1.abc", "token_result": {"status": "expired"}}


def test_a_consent_request_is_put_in_words_for_the_agent_or_for_a_person():
    from project_history_recall.ui import consent_words

    agent = consent_words.in_response({"consent": ASKED}, consent_words.for_agent)["consent"]
    assert agent["ask_user"].startswith("To search project 'App' by meaning, Hermes would send 1 user and "
                                        "assistant message (about 1,200 characters) from 2 sessions")
    assert "https://embed.example (model m-1)" in agent["ask_user"]
    assert agent["would_send"] == {"what": consent_words.SENT_TEXT.format(chunk=1500), "messages": 1, "sessions": 2,
                                   "characters": 1200, "not_sent": consent_words.NOT_SENT}
    assert agent["token"] == "phr1.abc" and "consent set to this token" in agent["how_to_record"]
    assert agent["token_result"] == {"status": "expired"}  # why the token passed did not do it stays
    tokenless = consent_words.for_agent({k: v for k, v in ASKED.items() if k != "token"})
    assert tokenless["how_to_record"].endswith("if they agree, they can run: hermes recall consent grant --project 'p 1'")
    person = render.for_person({"consent": ASKED}, "recall")["consent"]
    assert "token" not in person and person["how_to_record"] == "recall consent grant --project 'p 1'"
    assert person["ask_user"] == agent["ask_user"]
    assert consent_words.in_response({"consent": {"required": False, "status": "recorded"}},
                                     consent_words.for_agent) == {"consent": {"required": False, "status": "recorded"}}


def test_a_one_shot_process_says_how_to_finish_the_keyword_index():
    reason = ("keyword index is being built (3 of 40 sessions); keyword results come from Hermes's own "
              "indexes meanwhile, weaker on Chinese")
    response = {**SEARCH, "keyword_status": "indexing", "keyword_index": {"sessions": 40, "sessions_indexed": 3},
                "keyword_reason": reason, "warnings": ["recall.db was set aside", reason]}
    text = render.format_search(response, render.Style(), render.OneShot("recall --home /h", 60))
    assert "meanwhile" not in text and "warning: recall.db was set aside" in text
    assert ("warning: keyword index: 3 of 40 sessions indexed when this command searched; keyword results come "
            "from Hermes's own indexes, weaker on Chinese; to index the rest, run: recall --home /h index "
            "--project p_1") in text
    # inside a running Hermes (/recall) the build does go on: the tool's own words stay
    assert f"warning: {reason}" in render.format_search(response, render.Style())


def test_an_index_run_names_only_the_work_it_did():
    totals = {"sessions": 7, "messages_embedded": 17, "chunks_embedded": 17, "embed_seconds": 0.5,
              "messages_removed": 0, "messages_changed": 0, "deleted_sessions_dropped": 0, "seconds": 1.25}
    response = {"semantic_status": "ready", "projects": [{}, {}], "totals": totals, "model_name": "m",
                "index": "/h/embeddings.db"}
    first = render.format_index(response).splitlines()
    assert first == ["Indexed 2 project(s), 7 sessions with m into /h/embeddings.db",
                     "  embedded 17 messages as 17 chunks (34 chunks/s); 1.2 s"]
    totals.update(messages_removed=2, messages_changed=1, deleted_sessions_dropped=3)
    assert render.format_index(response).splitlines()[1] == (
        "  embedded 17 messages as 17 chunks (34 chunks/s); removed 2 deleted messages; re-embedded 1 changed "
        "messages; dropped the vectors of 3 deleted sessions; 1.2 s")


def test_a_progress_line_ends_kept_or_erased(tmp_path, capsys):
    out = render.Output(tmp_path)
    out.progress("App (semantic) 1/2 sessions")
    out.progress(None)
    out.progress("App (semantic) 2/2 sessions")
    out.progress(None, keep=False)
    assert capsys.readouterr().err == ("\rApp (semantic) 1/2 sessions\x1b[K\n"
                                       "\rApp (semantic) 2/2 sessions\x1b[K\r\x1b[K")


def test_status_counts_one_session_as_one():
    """``status`` said "in scope: 1 sessions, ~1 messages"."""
    response = {"success": True, "folder": "/w/app", "project": {"kind": "explicit", "id": "p_1", "name": "App"},
                "attributed_by": "folder", "sessions_in_scope": 1, "messages_in_scope": 1,
                "keyword_status": "ready", "semantic_status": "ready", "journal_mode": "wal",
                "hermes_home": "/h", "profile": "default"}
    assert "in scope: 1 session, ~1 message\n" in render.format_status(response) + "\n"
