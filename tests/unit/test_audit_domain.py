"""The audit's pure parts: canary addresses, and test messages the classifier reads as what they
are meant to be (a person's reply, an out-of-office with its return date) — in any month, with
any subject our campaigns may have."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replyguard.domain.addresses import InvalidAddress, UnsafeHeaderValue
from replyguard.domain.audit import (
    CanaryError,
    CheckResult,
    Original,
    Role,
    Status,
    canary_absence,
    canary_address,
    canary_reply,
    spelled,
)
from replyguard.domain.inbound.classify import classify_message
from replyguard.domain.inbound.parse import parse_message
from replyguard.domain.states import ReplyKind

SENT = datetime(2026, 12, 7, 15, 0, tzinfo=UTC)


def original(
    subject: str = "Quick question about Audit's reporting", body: str = "Hi Audit,\n\nhow?\n"
) -> Original:
    return Original("<rg.abc123@northwind.test>", subject, body, "dana@northwind.test", SENT)


@pytest.mark.parametrize(
    ("base", "role", "expected"),
    [
        ("team@ours.test", Role.REPLY, "team+rg-audit-7-reply@ours.test"),
        ("Team@Ours.TEST", Role.AWAY, "team+rg-audit-7-away@ours.test"),
        ("team+canary@ours.test", Role.FLIGHT, "team+canary-rg-audit-7-flight@ours.test"),
        ("Canary <team@ours.test>", Role.REPLY, "team+rg-audit-7-reply@ours.test"),
    ],
)
def test_each_run_and_role_gets_its_own_plus_address(base: str, role: Role, expected: str) -> None:
    assert canary_address(base, 7, role) == expected


def test_bad_canaries_are_refused() -> None:
    with pytest.raises(InvalidAddress):
        canary_address("not an address", 1, Role.REPLY)
    with pytest.raises(UnsafeHeaderValue):
        canary_address("team@ours.test\r\nBcc: victim@x.test", 1, Role.REPLY)
    with pytest.raises(CanaryError, match="too long"):
        canary_address(f"{'a' * 50}@ours.test", 123456, Role.FLIGHT)


@pytest.mark.parametrize(
    "subject",
    ["Quick question about Audit's reporting", "Café für Lucía — Frage", "Re: an old thread", "x" * 300],
)
def test_the_test_reply_is_a_person_in_our_thread(subject: str) -> None:
    raw = canary_reply(
        sender="team+rg-audit-1-reply@ours.test",
        original=original(subject),
        when=SENT + timedelta(minutes=5),
        message_id="<rg-audit.1.reply.ab@ours.test>",
        run_id=1,
    )
    found = classify_message(parse_message(raw))
    assert found.kind is ReplyKind.HUMAN_REPLY
    assert found.in_reply_to == "<rg.abc123@northwind.test>"
    assert "Thursday afternoon" in found.reply_text and "how?" not in found.reply_text  # quote stripped
    assert found.from_address == "team+rg-audit-1-reply@ours.test"


@settings(max_examples=60, deadline=None)
@given(st.dates(min_value=date(2026, 1, 1), max_value=date(2031, 12, 31)), st.integers(1, 30))
def test_the_test_absence_has_its_return_date_whatever_the_day(back_on: date, away: int) -> None:
    when = datetime.combine(back_on - timedelta(days=away), time(10), tzinfo=UTC)
    raw = canary_absence(
        sender="team+rg-audit-1-away@ours.test",
        original=original(),
        when=when,
        message_id="<rg-audit.1.away.cd@ours.test>",
        run_id=1,
        back_on=back_on,
    )
    found = classify_message(parse_message(raw))
    assert found.kind is ReplyKind.OUT_OF_OFFICE
    assert found.return_date == back_on, spelled(back_on)


def test_header_injection_through_a_subject_is_refused() -> None:
    with pytest.raises(UnsafeHeaderValue):
        canary_reply(
            sender="team@ours.test",
            original=original("Hello\r\nBcc: everyone@x.test"),
            when=SENT,
            message_id="<a@ours.test>",
            run_id=1,
        )


def test_rows_survive_the_history_unchanged() -> None:
    row = CheckResult(
        "retry", "Retry", Status.FAIL, "a retry sent a copy", ("one", "two"), {"copies": ["<m@x>"]}
    )
    assert CheckResult.from_json(row.to_json()) == row
    assert row.to_json()["passed"] is False and CheckResult("x", "X", Status.WARN, "w").passed


def test_a_campaign_file_may_name_its_canary() -> None:
    from pathlib import Path

    from replyguard.domain.campaign_spec import CampaignSpecError, parse_campaign

    source = (Path(__file__).resolve().parents[2] / "examples" / "campaign.toml").read_text(encoding="utf-8")
    assert parse_campaign(source).canary is None  # the example files stay valid as they are
    with_canary = source.replace("daily_cap = 150", 'daily_cap = 150\ncanary = "Team@Ours.test"')
    assert parse_campaign(with_canary).canary == "team@ours.test"
    with pytest.raises(CampaignSpecError, match=r"campaign\.canary: not a valid email address"):
        parse_campaign(source.replace("daily_cap = 150", 'daily_cap = 150\ncanary = "nobody"'))
