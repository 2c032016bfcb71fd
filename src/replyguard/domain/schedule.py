"""Send-window arithmetic: pure functions of instants, time zones and windows.

A step is due at `previous send + wait`, moved forward to the next moment inside the campaign's
send window in the lead's own time zone. Days outside the window are skipped; nothing is ever
moved backwards.

A wait in days or weeks counts days on the lead's calendar and keeps the local time of day:
"3d" after Friday 16:30 is Monday 16:30 even when the clocks changed on Sunday (72 hours
would be 15:30 or 17:30, and 17:30 lies outside a 09:00-17:00 window). Hours and minutes are
elapsed time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

DAY_NAMES = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
_DURATION = re.compile(r"^\s*(?:(\d+)\s*w)?\s*(?:(\d+)\s*d)?\s*(?:(\d+)\s*h)?\s*(?:(\d+)\s*m)?\s*$")


class ScheduleError(ValueError):
    pass


def parse_duration(text: str) -> timedelta:
    """`"3d"`, `"4h"`, `"1w2d"`, `"90m"`, `"0d"` -> timedelta. Raise ScheduleError otherwise."""
    match = _DURATION.match(text or "")
    if not text or not text.strip() or match is None or not any(match.groups()):
        raise ScheduleError(f"expected a duration like '3d', '4h' or '1w2d', got {text!r}")
    weeks, days, hours, minutes = (int(g) if g else 0 for g in match.groups())
    return timedelta(weeks=weeks, days=days, hours=hours, minutes=minutes)


@dataclass(frozen=True, slots=True)
class Wait:
    """How long a step waits after the previous one: whole calendar days (the local time of day
    is kept across DST changes) plus elapsed time (hours and minutes)."""

    days: int = 0
    elapsed: timedelta = timedelta(0)

    @classmethod
    def parse(cls, text: str) -> Wait:
        """`"3d"`, `"1w2d"`, `"1d4h"`, `"90m"`. Raise ScheduleError otherwise."""
        total = parse_duration(text)
        return cls(days=total.days, elapsed=total - timedelta(days=total.days))

    @classmethod
    def stored(cls, days: int, seconds: int) -> Wait:
        """From the database: `seconds` is the whole wait, `days` how many of them are days."""
        return cls(days=days, elapsed=timedelta(seconds=seconds - days * 86400))

    @property
    def nominal(self) -> timedelta:
        """The wait as a plain duration (a day counted as 24 hours): for storage and display."""
        return timedelta(days=self.days) + self.elapsed

    def after(self, base: datetime, zone: ZoneInfo) -> datetime:
        """`base` plus this wait: the same local time of day `days` later, then the elapsed part."""
        # Elapsed time is added in UTC: Python adds a timedelta to a zoned datetime on the wall
        # clock, which would turn "4h" across a DST change into 3 or 5 hours.
        if not self.days:
            return base.astimezone(UTC) + self.elapsed
        local = base.astimezone(zone)
        later = _local(local.date() + timedelta(days=self.days), local.time(), zone)
        return later.astimezone(UTC) + self.elapsed


def load_zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ScheduleError(f"unknown time zone {name!r} (use an IANA name like 'Europe/Berlin')") from exc


@dataclass(frozen=True, slots=True)
class SendWindow:
    """Weekdays (0 = Monday) and a local start/end time; `end` is exclusive."""

    days: frozenset[int]
    start: time
    end: time

    def __post_init__(self) -> None:
        if not self.days:
            raise ScheduleError("a send window needs at least one day")
        if self.start >= self.end:
            raise ScheduleError(f"send window start {self.start} must be before end {self.end}")

    @classmethod
    def parse(cls, days: list[str], start: str, end: str) -> SendWindow:
        bad = [d for d in days if d.lower() not in DAY_NAMES]
        if bad:
            raise ScheduleError(f"unknown day(s) {bad}; use {', '.join(DAY_NAMES)}")
        return cls(
            days=frozenset(DAY_NAMES.index(d.lower()) for d in days),
            start=_parse_clock(start),
            end=_parse_clock(end),
        )

    def day_names(self) -> list[str]:
        return [DAY_NAMES[d] for d in sorted(self.days)]

    def contains(self, instant: datetime, zone: ZoneInfo) -> bool:
        local = instant.astimezone(zone)
        return local.weekday() in self.days and self.start <= local.time() < self.end

    def next_open(self, instant: datetime, zone: ZoneInfo) -> datetime:
        """`instant` if it lies inside the window, else the next window opening (aware, UTC-comparable)."""
        if self.contains(instant, zone):
            return instant
        local = instant.astimezone(zone)
        for offset in range(8):
            day = local.date() + timedelta(days=offset)
            if day.weekday() not in self.days:
                continue
            opening = _local(day, self.start, zone)
            # A window that lies wholly inside a DST gap does not open that day at all.
            if opening >= instant and self.contains(opening, zone):
                return opening
        raise AssertionError("a non-empty weekly window always opens within 8 days")


def _parse_clock(text: str) -> time:
    try:
        return time.fromisoformat(text)
    except (TypeError, ValueError) as exc:
        raise ScheduleError(f"expected a local time like '09:00', got {text!r}") from exc


def _local(day: date, at: time, zone: ZoneInfo) -> datetime:
    # Round-trip through UTC so a time inside a DST gap lands on a real instant.
    return datetime.combine(day, at, tzinfo=zone).astimezone(ZoneInfo("UTC")).astimezone(zone)


def plan_due(base: datetime, wait: Wait, window: SendWindow, zone: ZoneInfo) -> datetime:
    """When a step whose predecessor went out at `base` (or enrollment time) becomes due."""
    return window.next_open(wait.after(base, zone), zone)


def local_day(instant: datetime, zone: ZoneInfo) -> date:
    return instant.astimezone(zone).date()


def next_day_start(instant: datetime, zone: ZoneInfo) -> datetime:
    """Midnight after `instant` in `zone`: when a mailbox's daily cap resets."""
    return _local(local_day(instant, zone) + timedelta(days=1), time(0, 0), zone)


def shift_after_pause(
    dues: list[datetime], paused_until: datetime, window: SendWindow, zone: ZoneInfo
) -> list[datetime]:
    """Move waiting steps after an out-of-office pause, keeping their spacing.

    The first waiting step goes to the first window opening at or after `paused_until`;
    later ones keep their distance from it. Steps already due after the pause stay put.
    """
    if not dues:
        return []
    first = min(dues)
    if first >= paused_until:
        return [window.next_open(d, zone) for d in dues]
    delta = window.next_open(paused_until, zone) - first
    return [window.next_open(d + delta, zone) for d in dues]


def replan(
    waits: list[Wait], last_sent: datetime | None, now: datetime, window: SendWindow, zone: ZoneInfo
) -> list[datetime]:
    """Due times for the remaining steps of a sequence that a person resumes at `now`.

    `waits` are the remaining steps' waits, in order. The first keeps its wait after the last
    email that really went out (`last_sent`; the enrollment's start when none did) but is never
    due before `now`; each later one keeps its wait after the one before. Every due time lies
    inside the send window in `zone`.
    """
    dues: list[datetime] = []
    previous = last_sent
    for wait in waits:
        earliest = now if previous is None else max(now, wait.after(previous, zone))
        due = window.next_open(earliest, zone)
        dues.append(due)
        previous = due
    return dues
