"""Send-window arithmetic: windows in the lead's zone, DST, weekends, and pauses."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, time, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replyguard.domain.schedule import (
    ScheduleError,
    SendWindow,
    Wait,
    load_zone,
    local_day,
    next_day_start,
    parse_duration,
    plan_due,
    shift_after_pause,
)

NY = ZoneInfo("America/New_York")
BERLIN = ZoneInfo("Europe/Berlin")
WEEKDAYS = SendWindow.parse(["mon", "tue", "wed", "thu", "fri"], "09:00", "17:00")


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)


# ---------------------------------------------------------------- parse_duration
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("3d", timedelta(days=3)),
        ("4h", timedelta(hours=4)),
        ("90m", timedelta(minutes=90)),
        ("1w2d", timedelta(days=9)),
        ("1w 2d 3h 4m", timedelta(weeks=1, days=2, hours=3, minutes=4)),
        ("0d", timedelta(0)),
        ("  2d  ", timedelta(days=2)),
    ],
)
def test_parse_duration(text: str, expected: timedelta) -> None:
    assert parse_duration(text) == expected


@pytest.mark.parametrize("text", ["", "   ", "3", "d", "3x", "-1d", "1.5d", "2d1w", "3 days", "abc"])
def test_parse_duration_errors(text: str) -> None:
    with pytest.raises(ScheduleError, match="expected a duration"):
        parse_duration(text)


# ---------------------------------------------------------------- windows
def test_window_parse_and_errors() -> None:
    assert WEEKDAYS.day_names() == ["mon", "tue", "wed", "thu", "fri"]
    with pytest.raises(ScheduleError, match="unknown day"):
        SendWindow.parse(["monday"], "09:00", "17:00")
    with pytest.raises(ScheduleError, match="must be before end"):
        SendWindow.parse(["mon"], "17:00", "09:00")
    with pytest.raises(ScheduleError, match="must be before end"):
        SendWindow.parse(["mon"], "09:00", "09:00")
    with pytest.raises(ScheduleError, match="at least one day"):
        SendWindow.parse([], "09:00", "17:00")
    with pytest.raises(ScheduleError, match="local time like"):
        SendWindow.parse(["mon"], "9am", "17:00")


def test_load_zone_rejects_unknown_names() -> None:
    assert load_zone("Europe/Berlin") == BERLIN
    for bad in ("Mars/Olympus", "", "../etc/passwd"):
        with pytest.raises(ScheduleError, match="unknown time zone"):
            load_zone(bad)


def test_end_is_exclusive_and_start_inclusive() -> None:
    # 2026-12-07 is a Monday; New York is UTC-5 in December.
    assert WEEKDAYS.contains(utc(2026, 12, 7, 14, 0), NY)  # 09:00 local
    assert WEEKDAYS.contains(utc(2026, 12, 7, 21, 59, 59), NY)  # 16:59:59 local
    assert not WEEKDAYS.contains(utc(2026, 12, 7, 22, 0), NY)  # 17:00 local
    assert not WEEKDAYS.contains(utc(2026, 12, 7, 13, 59, 59), NY)


def test_same_instant_is_judged_in_each_leads_zone() -> None:
    instant = utc(2026, 12, 7, 15, 0)  # 10:00 New York, 16:00 Berlin, 07:00 Los Angeles
    assert WEEKDAYS.contains(instant, NY)
    assert WEEKDAYS.contains(instant, BERLIN)
    assert not WEEKDAYS.contains(instant, ZoneInfo("America/Los_Angeles"))


def test_next_open_after_end_goes_to_next_morning() -> None:
    got = WEEKDAYS.next_open(utc(2026, 12, 7, 22, 0), NY)  # Monday 17:00 local
    assert got == utc(2026, 12, 8, 14, 0)


def test_weekend_is_skipped() -> None:
    friday_evening = utc(2026, 12, 11, 23, 0)  # Friday 18:00 New York
    got = WEEKDAYS.next_open(friday_evening, NY)
    assert got.astimezone(NY) == datetime(2026, 12, 14, 9, 0, tzinfo=NY)  # Monday
    saturday = WEEKDAYS.next_open(utc(2026, 12, 12, 15, 0), NY)
    assert saturday == got


def test_inside_the_window_nothing_moves() -> None:
    instant = utc(2026, 12, 9, 18, 30, 12)
    assert WEEKDAYS.next_open(instant, NY) is instant


def test_local_day_crosses_midnight_differently_per_zone() -> None:
    instant = utc(2026, 12, 8, 3, 0)  # Monday 22:00 in New York, Tuesday 04:00 in Berlin
    assert local_day(instant, NY).isoformat() == "2026-12-07"
    assert local_day(instant, BERLIN).isoformat() == "2026-12-08"


@pytest.mark.parametrize(
    ("instant", "expected_utc"),
    [
        # Spring forward (2026-03-08 is a Sunday): Friday evening -> Monday 09:00 EDT = 13:00 UTC.
        (utc(2026, 3, 6, 23, 0), utc(2026, 3, 9, 13, 0)),
        # Fall back (2026-11-01 is a Sunday): Friday evening -> Monday 09:00 EST = 14:00 UTC.
        (utc(2026, 10, 30, 22, 0), utc(2026, 11, 2, 14, 0)),
    ],
)
def test_dst_changes_keep_local_nine_oclock(instant: datetime, expected_utc: datetime) -> None:
    got = WEEKDAYS.next_open(instant, NY)
    assert got == expected_utc
    assert got.astimezone(NY).time() == time(9, 0)


def test_weekend_window_on_the_dst_sunday_itself() -> None:
    sunday = SendWindow.parse(["sun"], "01:00", "04:00")
    # 2026-03-08 06:30 UTC is 01:30 EST, inside; 07:30 UTC is 03:30 EDT, still inside.
    assert sunday.contains(utc(2026, 3, 8, 6, 30), NY)
    assert sunday.contains(utc(2026, 3, 8, 7, 30), NY)
    # 2026-11-01: local 01:30 happens twice; both instants are inside the window.
    assert sunday.contains(utc(2026, 11, 1, 5, 30), NY)
    assert sunday.contains(utc(2026, 11, 1, 6, 30), NY)


def test_a_window_wholly_inside_the_dst_gap_does_not_open_that_day() -> None:
    # 02:00-02:30 does not exist in New York on 2026-03-08: the next real opening is a week later.
    gap = SendWindow.parse(["sun"], "02:00", "02:30")
    got = gap.next_open(utc(2026, 3, 8, 5, 0), NY)
    assert gap.contains(got, NY)
    assert got.astimezone(NY) == datetime(2026, 3, 15, 2, 0, tzinfo=NY)


def test_plan_due_adds_the_wait_then_finds_the_window() -> None:
    sent = utc(2026, 12, 10, 20, 0)  # Thursday 15:00 New York
    assert plan_due(sent, Wait.parse("1d"), WEEKDAYS, NY) == sent + timedelta(days=1)  # Friday 15:00
    # Three days later is Sunday 15:00: the step waits for Monday 09:00.
    assert plan_due(sent, Wait.parse("3d"), WEEKDAYS, NY) == utc(2026, 12, 14, 14, 0)


@pytest.mark.parametrize(
    ("text", "days", "elapsed"),
    [
        ("3d", 3, timedelta(0)),
        ("1w2d", 9, timedelta(0)),
        ("1d4h", 1, timedelta(hours=4)),
        ("90m", 0, timedelta(minutes=90)),
        ("0d", 0, timedelta(0)),
    ],
)
def test_a_wait_separates_calendar_days_from_elapsed_time(text: str, days: int, elapsed: timedelta) -> None:
    wait = Wait.parse(text)
    assert (wait.days, wait.elapsed) == (days, elapsed)
    assert Wait.stored(wait.days, int(wait.nominal.total_seconds())) == wait


def test_a_wait_in_days_keeps_the_local_time_across_the_spring_change() -> None:
    # Friday 16:30 in Berlin; the clocks go forward on Sunday 2026-03-29.
    sent = datetime(2026, 3, 27, 16, 30, tzinfo=BERLIN)
    due = plan_due(sent, Wait.parse("3d"), WEEKDAYS, BERLIN)
    assert due.astimezone(BERLIN) == datetime(2026, 3, 30, 16, 30, tzinfo=BERLIN)  # Monday, same time
    # 72 hours would have been Monday 17:30, outside the window: a business day lost.
    assert not WEEKDAYS.contains(sent.astimezone(UTC) + timedelta(hours=72), BERLIN)


def test_a_wait_in_days_keeps_the_local_time_across_the_autumn_change() -> None:
    sent = datetime(2026, 10, 23, 9, 15, tzinfo=BERLIN)  # Friday; clocks go back on Sunday
    due = plan_due(sent, Wait.parse("3d"), WEEKDAYS, BERLIN)
    assert due.astimezone(BERLIN) == datetime(2026, 10, 26, 9, 15, tzinfo=BERLIN)
    assert due.astimezone(UTC) - sent.astimezone(UTC) == timedelta(hours=73)


def test_hours_are_elapsed_time_even_across_a_dst_change() -> None:
    sent = datetime(2026, 3, 28, 23, 0, tzinfo=BERLIN)
    assert Wait.parse("4h").after(sent, BERLIN) - sent == timedelta(hours=4)


def test_a_day_landing_in_the_dst_gap_moves_to_a_real_instant() -> None:
    sent = datetime(2026, 3, 28, 2, 30, tzinfo=BERLIN)  # 02:30 does not exist the next day
    got = Wait.parse("1d").after(sent, BERLIN)
    assert got.astimezone(BERLIN).hour == 3  # resolved forward, never backwards
    assert got > sent


def test_next_day_start_is_local_midnight() -> None:
    got = next_day_start(utc(2026, 12, 8, 3, 0), NY)  # Monday 22:00 New York
    assert got.astimezone(NY) == datetime(2026, 12, 8, 0, 0, tzinfo=NY)
    assert got == utc(2026, 12, 8, 5, 0)
    # The night clocks go back is 25 hours long; midnight is still midnight.
    assert next_day_start(utc(2026, 11, 1, 12, 0), NY) == utc(2026, 11, 2, 5, 0)


# ---------------------------------------------------------------- pauses
def test_shift_after_pause_keeps_spacing() -> None:
    dues = [utc(2026, 12, 8, 15, 0), utc(2026, 12, 11, 15, 0), utc(2026, 12, 15, 15, 0)]
    paused_until = datetime(2026, 12, 22, 0, 0, tzinfo=NY)  # Tuesday
    got = shift_after_pause(dues, paused_until, WEEKDAYS, NY)
    assert got[0] == datetime(2026, 12, 22, 9, 0, tzinfo=NY)
    assert [b - a for a, b in itertools.pairwise(got)] == [b - a for a, b in itertools.pairwise(dues)]
    assert all(d >= paused_until for d in got)
    assert all(WEEKDAYS.contains(d, NY) for d in got)


def test_shift_after_pause_never_sends_inside_the_pause_or_outside_the_window() -> None:
    dues = [utc(2026, 12, 8, 15, 0), utc(2026, 12, 9, 15, 0)]  # one day apart
    paused_until = datetime(2026, 12, 18, 12, 0, tzinfo=NY)  # Friday noon: +1 day is Saturday
    got = shift_after_pause(dues, paused_until, WEEKDAYS, NY)
    assert got[0] == paused_until
    assert got[1].astimezone(NY) == datetime(2026, 12, 21, 9, 0, tzinfo=NY)  # moved past the weekend


def test_shift_after_pause_leaves_steps_already_after_the_pause() -> None:
    dues = [utc(2026, 12, 22, 15, 0), utc(2026, 12, 23, 15, 0)]
    assert shift_after_pause(dues, utc(2026, 12, 20, 0, 0), WEEKDAYS, NY) == dues
    assert shift_after_pause([], utc(2026, 12, 20, 0, 0), WEEKDAYS, NY) == []


# ---------------------------------------------------------------- properties
ZONES = [
    "America/New_York",
    "America/Los_Angeles",
    "Europe/Berlin",
    "Australia/Lord_Howe",  # 30-minute DST shift
    "Asia/Kolkata",
    "Pacific/Chatham",
    "America/Santiago",
    "UTC",
]
instants = st.datetimes(
    min_value=datetime(2025, 1, 1), max_value=datetime(2028, 12, 31), timezones=st.just(UTC)
)


@st.composite
def windows(draw: st.DrawFn) -> SendWindow:
    days = draw(st.sets(st.integers(0, 6), min_size=1))
    start = draw(st.integers(0, 23 * 4 - 1))
    end = draw(st.integers(start + 2, 24 * 4 - 1))  # at least 30 minutes long
    return SendWindow(frozenset(days), time(start // 4, start % 4 * 15), time(end // 4, end % 4 * 15))


@settings(max_examples=300, deadline=None)
@given(instant=instants, window=windows(), zone_name=st.sampled_from(ZONES))
def test_next_open_is_inside_the_window_and_never_earlier(
    instant: datetime, window: SendWindow, zone_name: str
) -> None:
    zone = ZoneInfo(zone_name)
    got = window.next_open(instant, zone)
    assert got >= instant
    assert window.contains(got, zone)
    assert got - instant <= timedelta(days=8)
    if window.contains(instant, zone):
        assert got == instant
    else:
        # Nothing earlier was open: sample the gap (windows are >= 30 minutes long).
        probe = instant + timedelta(minutes=10)
        while probe < got:
            assert not window.contains(probe, zone), probe
            probe += timedelta(minutes=10)


@settings(max_examples=200, deadline=None)
@given(
    instant=instants, later=st.timedeltas(timedelta(0), timedelta(days=20)), zone_name=st.sampled_from(ZONES)
)
def test_next_open_is_monotonic(instant: datetime, later: timedelta, zone_name: str) -> None:
    zone = ZoneInfo(zone_name)
    assert WEEKDAYS.next_open(instant + later, zone) >= WEEKDAYS.next_open(instant, zone)


@settings(max_examples=200, deadline=None)
@given(
    first=instants,
    gaps=st.lists(st.timedeltas(timedelta(hours=1), timedelta(days=10)), max_size=4),
    pause=st.timedeltas(timedelta(0), timedelta(days=30)),
    zone_name=st.sampled_from(ZONES),
)
def test_shift_after_pause_properties(
    first: datetime, gaps: list[timedelta], pause: timedelta, zone_name: str
) -> None:
    zone = ZoneInfo(zone_name)
    dues = [first]
    for gap in gaps:
        dues.append(dues[-1] + gap)
    until = first + pause
    got = shift_after_pause(dues, until, WEEKDAYS, zone)
    assert len(got) == len(dues)
    assert all(WEEKDAYS.contains(d, zone) for d in got)
    assert all(new >= old for new, old in zip(got, dues, strict=True))  # nothing moves earlier
    assert all(d >= until for d in got)  # nothing goes out during the pause
    assert got == sorted(got)  # the order of the steps is kept
