"""The audit's pure parts: its checks as values, the canary's addresses, and the two test
messages (a person's reply and an out-of-office) as real RFC 5322 bytes.

`replyguard audit` (service_layer/audit/run.py) feeds these messages through the real ingest path;
nothing here touches a database or a socket.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from datetime import date, datetime
from email.message import EmailMessage
from email.utils import format_datetime
from typing import Any

from replyguard.domain.addresses import check_header_value, normalize_address
from replyguard.domain.outgoing import SMTP_POLICY


class Status(enum.StrEnum):
    PASS = "pass"  # noqa: S105 - a verdict, not a password
    FAIL = "fail"
    WARN = "warn"  # `--config` only: worth a look, not a broken promise


@dataclass(frozen=True, slots=True)
class CheckResult:
    """One row of the audit's table: what was checked, the verdict, and the evidence (ids,
    times, states) a person needs to believe it — as lines to print and as JSON."""

    name: str
    title: str
    status: Status
    summary: str
    details: tuple[str, ...] = ()
    evidence: dict[str, Any] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return self.status is not Status.FAIL

    def to_json(self) -> dict[str, Any]:
        return {
            "check": self.name,
            "title": self.title,
            "status": self.status.value,
            "passed": self.passed,
            "summary": self.summary,
            "details": list(self.details),
            "evidence": self.evidence,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CheckResult:
        return cls(
            data["check"],
            data["title"],
            Status(data["status"]),
            data["summary"],
            tuple(data.get("details") or ()),
            dict(data.get("evidence") or {}),
        )


#: The six checks of the article, in the order they are printed.
CHECKS: tuple[tuple[str, str], ...] = (
    ("reply_state", "Reply state"),
    ("queued_steps", "Queued steps"),
    ("send_check", "Send check"),
    ("retry", "Retry"),
    ("notice", "Notice"),
    ("out_of_office", "OOO"),
)


class Role(enum.StrEnum):
    """The canary leads of one run, each a fresh plus-address of the team's canary."""

    REPLY = "reply"  # a person's reply while a step is claimed: state, queue, send check, notice
    FLIGHT = "flight"  # a person's reply while a step is in flight (`sending`): the retry check
    AWAY = "away"  # an out-of-office with a return date


class CanaryError(ValueError):
    pass


def canary_address(base: str, run_id: int, role: Role) -> str:
    """`team@x.test` -> `team+rg-audit-12-reply@x.test`: a new lead per run and role, delivered
    to the team's own mailbox (plus addressing). An address that already has a tag keeps it."""
    address = normalize_address(base)
    local, _, domain = address.partition("@")
    tag = f"rg-audit-{run_id}-{role.value}"
    tagged = f"{local}-{tag}" if "+" in local else f"{local}+{tag}"
    if len(tagged) > 64:
        raise CanaryError(f"canary {address}: its local part is too long to add {tag!r}")
    return normalize_address(f"{tagged}@{domain}")


_DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_MONTHS = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)  # fmt: skip


def spelled(day: date) -> str:
    """`Monday, December 21, 2026`, whatever the machine's locale."""
    return f"{_DAYS[day.weekday()]}, {_MONTHS[day.month - 1]} {day.day}, {day.year}"


@dataclass(frozen=True, slots=True)
class Original:
    """The email of ours that a test message answers: it was really sent to the canary."""

    message_id: str
    subject: str
    body: str
    from_address: str
    sent_at: datetime


def _message(
    *, sender: str, original: Original, subject: str, when: datetime, message_id: str
) -> EmailMessage:
    msg = EmailMessage(policy=SMTP_POLICY)
    msg["From"] = check_header_value("from", sender)
    msg["To"] = check_header_value("to", original.from_address)
    msg["Subject"] = check_header_value("subject", subject)
    msg["Date"] = format_datetime(when)
    msg["Message-ID"] = check_header_value("message-id", message_id)
    msg["In-Reply-To"] = check_header_value("in-reply-to", original.message_id)
    msg["References"] = check_header_value("references", original.message_id)
    return msg


def _quoted(original: Original) -> str:
    quoted = "\n".join(f"> {line}".rstrip() for line in original.body.strip().splitlines())
    return f"On {format_datetime(original.sent_at)}, {original.from_address} wrote:\n{quoted}\n"


def canary_reply(*, sender: str, original: Original, when: datetime, message_id: str, run_id: int) -> bytes:
    """A person's answer from the canary, in the thread of `original`, quoting it like a mail
    client does. Its words are plainly a person's: no auto-reply header, no absence, no
    request to be removed — so the classifier must call it a human reply."""
    msg = _message(
        sender=sender,
        original=original,
        subject=f"Re: {original.subject}",
        when=when,
        message_id=message_id,
    )
    msg.set_content(
        "Thanks, that sounds useful. Could we talk on Thursday afternoon?\n\n"
        f"(A test answer from the team's canary address: replyguard audit, run {run_id}.)\n\n"
        + _quoted(original)
    )
    return msg.as_bytes(policy=SMTP_POLICY)


def canary_absence(
    *, sender: str, original: Original, when: datetime, message_id: str, run_id: int, back_on: date
) -> bytes:
    """An out-of-office auto-reply from the canary with a return date, as mail servers send
    them (RFC 3834 `Auto-Submitted`, an "Automatic reply:" subject)."""
    msg = _message(
        sender=sender,
        original=original,
        subject=f"Automatic reply: {original.subject}",
        when=when,
        message_id=message_id,
    )
    msg["Auto-Submitted"] = "auto-replied"
    msg["X-Auto-Response-Suppress"] = "All"
    msg.set_content(
        f"I am out of the office and will be back on {spelled(back_on)}.\n\n"
        f"(A test out-of-office from the team's canary address: replyguard audit, run {run_id}.)\n"
    )
    return msg.as_bytes(policy=SMTP_POLICY)
