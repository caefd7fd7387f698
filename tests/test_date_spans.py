"""Dates read from texts and rows as day numbers, for the claim check's "N days"."""

from __future__ import annotations

import numpy as np
import pandas as pd

from d2_notebook.detective.date_spans import (
    day_number,
    days_in_frame,
    days_in_text,
    says_days,
    spans,
)


def test_every_written_form_of_one_date_gives_the_same_day() -> None:
    jan15 = day_number(2018, 1, 15)
    for text in ("on 2018-01-15", "WHERE date = 20180115", "on Jan.15, 2018",
                 "on January 15th, 2018", "on 15 Jan 2018", "at 2018-01-15 10:30:00",
                 "it happened on 20180115."):
        assert days_in_text(text).tolist() == [jan15], text


def test_numbers_that_are_no_dates_give_none() -> None:
    for text in ("20181345 rows", "id 12345678", "0.20180115", "2018-13-01", "1899-01-01",
                 "30 February 2020", "3.5 days"):
        assert days_in_text(text).size == 0, text


def test_rows_give_their_date_columns_compact_integers_and_iso_text() -> None:
    frame = pd.DataFrame({"at": pd.to_datetime(["2020-01-02", None]),
                          "when": [20200105, 7], "note": ["due 2020-01-09", None],
                          "flag": [True, False], "rate": [0.2, 20200101.5]})
    assert days_in_frame(frame).tolist() == [day_number(2020, 1, d) for d in (2, 5, 9)]
    zoned = pd.DataFrame({"at": pd.to_datetime(["2020-01-02T23:00:00"]).tz_localize("UTC")})
    assert days_in_frame(zoned).tolist() == [day_number(2020, 1, 2)]


def test_spans_run_between_the_dates_and_to_the_others() -> None:
    days = np.array([10.0, 30.0])
    assert spans(days, np.array([45.0])).tolist() == [0.0, 15.0, 20.0, 35.0]
    assert spans(np.empty(0), np.array([1.0])).size == 0


def test_says_days_reads_the_word_after_the_number() -> None:
    text = "19 days later, 4 day trip, 7 calendar days, 12 dayshift"
    assert [says_days(text, end) for end in (2, 16, 28, 46)] == [True, True, True, False]
