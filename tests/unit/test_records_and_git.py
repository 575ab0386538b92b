"""The attribution store's transactions and the git facts a move writes (no Hermes needed)."""

from __future__ import annotations

import pytest

from project_history_recall.scope import gitroot as paths
from project_history_recall.scope import records


def test_git_branch_read_from_head(tmp_path):
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / ".git" / "HEAD").write_text("ref: refs/heads/feature/x\n")
    (repo / "src").mkdir()
    assert paths.find_git_branch(repo / "src") == "feature/x"
    (repo / ".git" / "HEAD").write_text("0123456789abcdef0123456789abcdef01234567\n")
    assert paths.find_git_branch(repo) == "0123456"
    worktree = tmp_path / "wt"
    worktree.mkdir()
    (repo / ".git" / "worktrees" / "wt").mkdir(parents=True)
    (repo / ".git" / "worktrees" / "wt" / "HEAD").write_text("ref: refs/heads/topic\n")
    (worktree / ".git").write_text(f"gitdir: {repo}/.git/worktrees/wt\n")
    assert paths.find_git_branch(worktree) == "topic"
    assert paths.find_git_root(worktree) == str(repo)
    assert paths.find_git_branch(tmp_path / "nowhere") is None


def test_records_commit_only_when_the_block_succeeds(tmp_path):
    data = tmp_path / "data"
    path = records.records_path(data)
    with pytest.raises(RuntimeError):
        with records.recording(data) as rec:
            rec.record(records.Move("s1", "p1"))
            raise RuntimeError("hermes said no")
    assert list(data.iterdir()) == []  # a failed first move leaves no store, no staging file
    with records.recording(data) as rec:
        rec.record(records.Move("s1", "p1", from_kind="home", from_cwd=None, to_cwd="/w/p1"))
    assert records.load_records(path) == {"s1": ("p1", "/w/p1")} == records.current_records(path)
    assert [p.name for p in data.iterdir() if not p.name.startswith("recall.db")] == []  # no staging file left
    with pytest.raises(RuntimeError):
        with records.recording(data) as rec:
            rec.record(records.Move("s1", "p2"))
            raise RuntimeError("no")
    assert records.current_records(path) == {"s1": ("p1", "/w/p1")}
    with records.recording(data) as rec:
        rec.record(records.Move("s1", "p2", from_kind="explicit", from_id="p1"))
        assert records.current_records(path) == {"s1": ("p1", "/w/p1")}  # readers see the last commit until this one
    assert records.current_records(path) == {"s1": ("p2", None)}
    history = records.load_history(path, "s1")
    assert [(m["from_kind"], m["project_id"]) for m in history] == [("home", "p1"), ("explicit", "p2")]


def test_a_move_into_an_automatic_project_drops_the_record_and_logs_the_move(tmp_path):
    import sqlite3

    data = tmp_path / "data"
    path = records.records_path(data)
    data.mkdir()
    # A store written before moves logged their target's kind: no to_kind column.
    old = sqlite3.connect(path)
    old.executescript(records._SCHEMA.replace(",\n    to_kind            TEXT", ""))
    old.execute("INSERT INTO attributions VALUES ('s1', 'p1', 1.0, 'auto', '/w/notes')")
    old.execute("INSERT INTO moves (session_id, moved_at, project_id) VALUES ('s1', 1.0, 'p1')")
    old.commit()
    old.close()
    with records.recording(data) as rec:
        rec.record(records.Move("s1", "/w/notes", "notes", from_kind="explicit", from_id="p1", to_kind="auto"))
        rec.record(records.Move("s2", "p1", from_kind="home"))
    assert records.load_records(path) == {"s2": ("p1", None)}
    history = records.load_history(path, "s1")
    assert [(m["project_id"], m["to_kind"]) for m in history] == [("p1", None), ("/w/notes", "auto")]
