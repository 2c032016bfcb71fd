"""Signed webhook timestamps age out only after the provider stops retrying (issue 22, item 2)."""

from __future__ import annotations

import hashlib
import hmac
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from replyguard.domain.provider_retries import CLOCK_SKEW, MAILGUN, POSTMARK, SENDGRID
from replyguard.entrypoints.http.auth import Rejected, verify_mailgun

KEY = "key-test"
NOW = datetime(2026, 12, 7, 12, 0, tzinfo=UTC)


def _check(age: timedelta) -> None:
    timestamp = str(int((NOW - age).timestamp()))
    token = "t" * 50
    signature = hmac.new(KEY.encode(), f"{timestamp}{token}".encode(), hashlib.sha256).hexdigest()
    verify_mailgun(KEY, timestamp, token, signature, now=NOW, max_age=MAILGUN.max_age)


@given(st.integers(min_value=0, max_value=int(MAILGUN.retries_for.total_seconds())))
def test_every_mailgun_retry_in_its_documented_schedule_passes(seconds: int) -> None:
    _check(timedelta(seconds=seconds))


@given(st.integers(min_value=1, max_value=10 * 24 * 3600))
def test_older_than_the_window_or_too_far_ahead_is_refused(seconds: int) -> None:
    with pytest.raises(Rejected):
        _check(MAILGUN.max_age + timedelta(seconds=seconds))
    if seconds > CLOCK_SKEW.total_seconds():
        with pytest.raises(Rejected):
            _check(-timedelta(seconds=seconds))


def test_used_tokens_are_kept_while_their_timestamp_can_pass() -> None:
    # A token seen at most CLOCK_SKEW before its timestamp passes until max_age after it.
    assert MAILGUN.keep_tokens >= MAILGUN.max_age + CLOCK_SKEW


def test_each_schedule_names_its_source() -> None:
    for schedule in (MAILGUN, POSTMARK, SENDGRID):
        assert schedule.source.startswith("https://") and schedule.retries_for > timedelta(0)
