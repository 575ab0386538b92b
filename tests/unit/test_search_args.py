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


@pytest.mark.parametrize("query", ["x" * 200_000, "websocket " * 20_000, "ｘ" * 3000, " " * 10 + "y" * 2040])
def test_a_query_past_the_cap_is_searched_by_its_beginning_and_says_so(query):
    """A model that pastes a whole log hears that only its beginning was searched, not silence."""
    req = request_from_args({"query": query})
    assert len(req.query) <= 2048
    assert any("first 2,048 characters" in w for w in req.warnings), req.warnings


@pytest.mark.parametrize("query", ["x" * 2048, "y" * 2048 + " " * 5000, "websocket reconnect"])
def test_a_query_within_the_cap_has_no_such_warning(query):
    assert not request_from_args({"query": query}).warnings


def test_an_argument_the_tool_does_not_take_is_searched_without_and_said():
    """A model that asks the search for ``around_message_id`` (session_search's) got a plain search,
    as if it had read around its message: now a warning says what was left out, and where it belongs."""
    req = request_from_args({"query": "x", "around_message_id": 3, "session_id": "abc", "k" * 500: 1})
    warning = next(w for w in req.warnings if "around_message_id" in w)
    assert "'session_id'" in warning and "session_search(" in warning and len(warning) < 400
    assert not request_from_args({"query": "x", "mode": "keyword", "limit": 3, "consent": None}).warnings


def test_the_arguments_a_search_takes_are_the_tools_schemas():
    from project_history_recall.search import ARGUMENTS
    from project_history_recall.ui.tools import SEARCH_SCHEMA

    assert ARGUMENTS == set(SEARCH_SCHEMA["parameters"]["properties"])


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


# Every form Hermes's own `hermes sessions prune --older-than` reads, each meaning what it means there.
HERMES_AGES = ["30m", "30M", "30 min", "5mins", "1minute", "2 minutes", "45s", "10sec", "10secs", "1 second",
               "3seconds", "12h", "1hr", "2hrs", "1 hour", "3 hours", "7d", "1day", "2 days", "2w", "1wk",
               "3wks", "1 week", "2weeks", "1.5h", "0.5d", "90", "2.5", "0d"]


@pytest.mark.parametrize("age", HERMES_AGES)
def test_ages_mean_what_they_mean_to_hermes(age):
    session_filters = pytest.importorskip("hermes_cli.session_filters")
    now = 1_800_000_000.0
    assert now - parse_time("since", age, now) == session_filters.parse_duration_seconds(age)


def test_minutes_are_minutes_and_months_and_years_have_their_own_names():
    now = 1_800_000_000.0
    assert parse_time("since", "30m", now) == now - 30 * 60
    for months in ("3mo", "3 month", "3months"):
        assert parse_time("since", months, now) == now - 90 * 86400
    for years in ("1y", "1yr", "1 year", "1years"):
        assert parse_time("since", years, now) == now - 365 * 86400


@pytest.mark.parametrize("value,needle", [
    ("3q", "'q' is no unit of age"),
    ("2 fortnights", "'fortnights' is no unit of age"),
    ("7d ago", "30m, 12h, 7d"),
    ("-7d", "30m, 12h, 7d"),
    ("999999y", "further than 99999 years"),
    ("20260901", "2026-09-01 for the date or 20260901d"),
    ("2025", "2025-01-01 for the year's start or 2025d"),
])
def test_ages_hermes_does_not_read_are_refused_saying_which_forms_work(value, needle):
    with pytest.raises(UsageError) as exc:
        parse_time("since", value, 1_800_000_000.0)
    assert needle in str(exc.value)


@pytest.mark.parametrize("argv, said, not_said", [
    # A mistyped option is named as one, with the nearest option where there is one; a value that starts
    # with '-' is still shown how to pass.
    (["search", "websocket", "--limt", "3"], ["--limt is no option of", "did you mean --limit?", "goes after '--'"],
     []),
    (["consent", "grant", "--dir", "/tmp"], ["--dir is no option of", "a dir that starts with '-'"], ["did you mean"]),
    (["search", "-x"], ["a query that starts with '-' goes after '--'"], ["no option"]),
    (["move", "-x", "App"], ["a session that starts with '-' goes after '--'"], []),
    # Nothing given starts with '-': the argument was left out, and nothing is said of dashes.
    (["move", "20260901_000001_000001"], ["the following arguments are required: project (see"], ["'-'"]),
    (["search"], ["the following arguments are required: query (see"], ["'-'"]),
    (["search", "--mode", "keyword"], ["the following arguments are required: query (see"], ["'-'"]),
])
def test_an_unknown_option_is_said_to_be_one(argv, said, not_said, capsys):
    import argparse

    from project_history_recall.ui import arguments

    parser = argparse.ArgumentParser(prog="project-history-recall")
    arguments.setup_parser(parser, standalone=True)
    with pytest.raises(SystemExit) as stopped:
        parser.parse_args(argv)
    err = capsys.readouterr().err
    assert stopped.value.code == 2 and err.count("\n") == 1, err
    assert all(s in err for s in said) and not any(s in err for s in not_said), err
