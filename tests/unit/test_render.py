"""The text a person reads, from the library's responses (ui/render.py)."""

from __future__ import annotations

import yaml

from project_history_recall.ui import render

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
