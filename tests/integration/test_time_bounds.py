"""since/until at the edges of the calendar, through Hermes's real dispatch, in several time zones.

Dates are read in the local time zone; at year 1 and year 9999 converting
one to a timestamp can step outside what Python's datetime holds.
"""

from __future__ import annotations

import logging
import time

import pytest

from cli_runs import Outputs, run_cli
from hermes_world import call, enable_plugin
from project_history_recall.errors import EXIT_USAGE

SEARCH = "project_history_search"
ALL, NONE = "all", "none"


@pytest.fixture(params=["UTC", "Asia/Tokyo", "America/New_York"])
def zone(request, monkeypatch):
    monkeypatch.setenv("TZ", request.param)
    time.tzset()
    yield request.param
    monkeypatch.undo()
    time.tzset()


@pytest.fixture
def history(world, work):
    world.project("App", work)
    sid = world.session(("user", "a capybara in the history"), ("assistant", "noted, the capybara"), cwd=work)
    asker = world.session(cwd=work)
    enable_plugin(world.home)
    return {"sid": sid, "asker": asker}


SEARCHED = [
    ({"since": "0001-01-01"}, ALL),
    ({"since": "0001-01-01 00:00"}, ALL),
    ({"since": "0001-01-01T00:00+05:00"}, ALL),
    ({"until": "0001-01-01"}, NONE),
    ({"since": "9999-12-31"}, NONE),
    ({"since": "9999-12-31 23:59:59"}, NONE),
    ({"until": "9999-12-31 23:59"}, ALL),
    ({"until": "9999-12-31T23:59-05:00"}, ALL),
    ({"since": "99999y"}, ALL),
    ({"until": "99999y"}, NONE),
    ({"since": "99999h", "until": "9999-12-31"}, ALL),
    ({"since": "0001-01-01", "until": "9999-12-31"}, ALL),
]
REFUSED = [
    {"since": "0000-12-31"},
    {"until": "10000-01-01"},
    {"since": "999999y"},
    {"since": "9999-12-31", "until": "0001-01-01"},
    {"since": "0001-01-01", "until": "99999y"},  # 99999 years ago is before year 1
    # The same age twice is no span: both are read from one moment (each read its own clock once,
    # so the later reading came a few microseconds after and the span was sometimes there).
    {"since": "7d", "until": "7d"},
    {"since": "99999y", "until": "99999y"},
    {"since": "2w", "until": "14d"},
]


def test_dates_at_the_ends_of_the_calendar(history, zone, caplog):
    for bounds, expected in SEARCHED:
        res = call(SEARCH, {"query": "capybara", **bounds}, session_id=history["asker"])  # hybrid: both engines
        assert res["success"] and res["searched_with"] == "keyword+semantic", (bounds, res)
        sessions = {r["session_id"] for r in res["results"]}
        assert sessions == ({history["sid"]} if expected == ALL else set()), (bounds, res)
    for bounds in REFUSED:
        res = call(SEARCH, {"query": "capybara", **bounds}, session_id=history["asker"])
        assert res["success"] is False and res["error_code"] == "bad_argument", (bounds, res)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text


def test_a_number_of_days_sent_as_a_json_number_is_read_as_days(history):
    """The schema's description says a bare 90 is days, and a model sends one as the JSON number
    (``"since": 90``), which Hermes passes on as it is: it was refused, with words that said a bare
    number is days. A number is read as its text now, a year or a date of digits still asked about,
    and a span it leaves empty said in the words given."""
    for bounds, expected in [({"since": 36500}, ALL), ({"until": 36500}, NONE), ({"since": 36500.0}, ALL),
                             ({"since": 36500, "until": "1d"}, ALL)]:
        res = call(SEARCH, {"query": "capybara", **bounds}, session_id=history["asker"])
        assert res["success"], (bounds, res)
        assert {r["session_id"] for r in res["results"]} == ({history["sid"]} if expected == ALL else set()), bounds
    for bounds, said in [({"since": 2026}, "reads as a year"), ({"since": 7, "until": 7}, "is the same time as"),
                         ({"since": True}, "must be a date")]:
        res = call(SEARCH, {"query": "capybara", **bounds}, session_id=history["asker"])
        assert res["error_code"] == "bad_argument" and said in res["error"], (bounds, res)


@pytest.mark.parametrize("since,until,said", [
    ("2026-09-01", "2026-09-01", "is the same time as"),
    ("2026-09-02", "2026-09-01", "is after"),
    ("2w", "14d", "is the same time as"),
    ("7d", "14d", "is after"),
])
def test_no_time_between_since_and_until_says_until_is_exclusive(history, world, work, capsys, since, until, said):
    """The tool and the command line both name what was given and why it leaves no time."""
    res = call(SEARCH, {"query": "capybara", "since": since, "until": until}, session_id=history["asker"])
    assert res["success"] is False and res["error_code"] == "bad_argument", res
    text = res["error"]
    assert f"'since' '{since}' {said} 'until' '{until}'" in text and "'until' is exclusive" in text, text
    assert ("the larger one goes in 'since'" in text) == since.endswith(("d", "w")), text
    outputs = Outputs()
    code = run_cli(outputs, capsys, "search", "capybara", "--dir", str(work), "--since", since, "--until", until,
                   home=world.home)
    assert code == EXIT_USAGE and f"{said} 'until' '{until}'" in outputs and "'until' is exclusive" in outputs
