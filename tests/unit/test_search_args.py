"""Argument validation: clear errors, sane clamping, no exceptions."""

from __future__ import annotations

import pytest

from project_history_recall.errors import UsageError
from project_history_recall.search import parse_time, request_from_args


def test_defaults():
    req = request_from_args({"query": "x"})
    assert (req.mode, req.limit, req.context, req.include_tool_output, req.include_current_session) == (
        "hybrid", 10, 2, False, False)
    assert req.roles == ("user", "assistant")


def test_numbers_are_clamped_and_strings_coerced():
    req = request_from_args({"query": "x", "limit": "500", "context": -3})
    assert (req.limit, req.context) == (50, 0)


@pytest.mark.parametrize("args,needle", [
    ({}, "query"),
    ({"query": "   "}, "query"),
    ({"query": 5}, "query"),
    ({"query": "x", "mode": "fuzzy"}, "mode"),
    ({"query": "x", "limit": "ten"}, "limit"),
    ({"query": "x", "limit": True}, "limit"),
    ({"query": "x", "limit": [1]}, "limit"),
    ({"query": "x", "include_tool_output": "maybe"}, "include_tool_output"),
    ({"query": "x", "since": "last tuesday"}, "since"),
    ({"query": "x", "since": "2026-02-01", "until": "2026-01-01"}, "since"),
    ({"query": "x", "project": 3}, "project"),
])
def test_bad_arguments_name_the_argument(args, needle):
    with pytest.raises(UsageError) as exc:
        request_from_args(args)
    assert needle in str(exc.value)


def test_non_dict_arguments():
    with pytest.raises(UsageError):
        request_from_args(["query"])


def test_times():
    now = 1_800_000_000.0
    assert parse_time("since", "7d", now) == now - 7 * 86400
    assert parse_time("since", "12h", now) == now - 12 * 3600
    assert parse_time("since", "2026-09-01T10:00:00Z", now) == 1788256800.0
    assert parse_time("since", "", now) is None
