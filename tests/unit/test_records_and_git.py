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
    assert records.load_records(path) == {"s1": "p1"} == records.current_records(path)
    assert [p.name for p in data.iterdir() if not p.name.startswith("recall.db")] == []  # no staging file left
    with pytest.raises(RuntimeError):
        with records.recording(data) as rec:
            rec.record(records.Move("s1", "p2"))
            raise RuntimeError("no")
    assert records.current_records(path) == {"s1": "p1"}
    with records.recording(data) as rec:
        rec.record(records.Move("s1", "p2", from_kind="explicit", from_id="p1"))
        assert records.current_records(path) == {"s1": "p1"}  # readers see the last commit until this one
    assert records.current_records(path) == {"s1": "p2"}
    history = records.load_history(path, "s1")
    assert [(m["from_kind"], m["project_id"]) for m in history] == [("home", "p1"), ("explicit", "p2")]
