"""The one clock. Every time the system uses comes from an injected `Clock`, so a run with
`--now` is a faithful simulation: due times, leases, `Date` headers and events all agree."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Protocol


class Clock(Protocol):
    def now(self) -> datetime:
        """The current time, timezone-aware, in UTC."""
        ...


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)


class FixedClock:
    """A clock that stands still until moved; for `--now` one-shot commands and tests."""

    def __init__(self, at: datetime) -> None:
        self._at = ensure_aware(at)

    def now(self) -> datetime:
        return self._at

    def set(self, at: datetime) -> None:
        self._at = ensure_aware(at)

    def advance(self, delta: timedelta) -> None:
        self._at += delta


class OffsetClock:
    """Starts at a simulated instant and then runs at real speed (the long-running worker with
    `--now`)."""

    def __init__(self, start: datetime) -> None:
        self._start = ensure_aware(start)
        self._t0 = time.monotonic()

    def now(self) -> datetime:
        return self._start + timedelta(seconds=time.monotonic() - self._t0)


def ensure_aware(value: datetime) -> datetime:
    """Refuse naive datetimes: a time without a zone is a bug waiting for a timezone change."""
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(f"naive datetime {value!r}: replyguard only uses timezone-aware times")
    return value.astimezone(UTC)


def parse_instant(text: str) -> datetime:
    """Parse an ISO-8601 instant as given to `--now`; a value without offset means UTC."""
    try:
        value = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(
            f"--now (REPLYGUARD_NOW) must be a time like 2026-12-07T09:00:00Z, got {text!r}"
        ) from None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC)
