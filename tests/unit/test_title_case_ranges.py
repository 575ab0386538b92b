"""Every casing of a title, and of its continuations ("title #2"), lies in one of the ranges of
Hermes's title index that the title lookup reads: a title typed in other letters' case is found."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from project_history_recall.scope.sessionref import CASE_PREFIX, _case_ranges


def _within(title: str, ranges: list[tuple[str, str]]) -> bool:
    return any(low <= title <= high for low, high in ranges)


@given(st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=30),
       st.lists(st.booleans(), min_size=30, max_size=30), st.integers(min_value=2, max_value=99))
def test_every_casing_and_continuation_is_in_a_range(typed, upper, n):
    stored = "".join(c.upper() if up and len(c.upper()) == 1 else c.lower() if len(c.lower()) == 1 else c
                     for c, up in zip(typed, upper, strict=False))
    ranges = _case_ranges(typed)
    assert len(ranges) <= 2 ** CASE_PREFIX
    assert _within(stored, ranges)
    assert _within(f"{stored} #{n}", ranges)


def test_a_title_with_no_cased_letter_is_one_range_of_itself():
    assert _case_ranges("发布清单") == [("发布清单", "发布清单 $")]
