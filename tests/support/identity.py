"""Inbound messages shaped byte by byte, and what a workspace looks like after them.

`raw_mail` writes exactly the header lines it is given (folds, odd spacing, encoded words
and all), because the shapes real transports produce are the point of these tests; the
email package would normalise them away.
"""

from __future__ import annotations

from dataclasses import dataclass
from email.utils import format_datetime
from pathlib import Path

from sqlalchemy import func, select

from replyguard.adapters.db import models as m
from replyguard.bootstrap import App
from replyguard.domain.clock import FixedClock
from replyguard.service_layer.workspace.leads import find_lead
from tests.support.scenario import load_examples, run_days

DANA = "dana@northwind-analytics.test"  # the Reports mailbox
SAM = "sam@northwind-analytics.test"  # the Forecasting mailbox
PRIYA = "priya@fernhollow.test"
MARC = "marc.keller@brightline-logistics.test"
AISHA = "aisha@meridian-health.test"


def sent_workspace(app: App, clock: FixedClock, days: float = 1) -> None:
    """The example workspace after `days` of sending (one day: every first email is out)."""
    load_examples(app)
    run_days(app, clock, days)


@dataclass(frozen=True)
class Sent:
    message_id: str
    subject: str
    send_key: str
    sent_at: object


def first_sent(app: App, email: str, product: str) -> Sent:
    with app.uow() as uow:
        lead = find_lead(uow, email, product)
        step = uow.session.scalars(
            select(m.Step).where(m.Step.lead_id == lead.id, m.Step.position == 1)
        ).one()
        assert step.state == "sent"
        return Sent(step.message_id, step.subject, step.send_key, step.sent_at)


def raw_mail(headers: list[tuple[str, str]], body: str = "Sounds good, let's talk.\n") -> bytes:
    """A message with exactly these header lines (a value may hold its own CRLF folds)."""
    lines = [f"{name}: {value}" for name, value in headers]
    if not any(name.lower() == "content-type" for name, _ in headers):
        lines.append('Content-Type: text/plain; charset="utf-8"')
    return ("\r\n".join(lines) + "\r\n\r\n" + body.replace("\n", "\r\n")).encode("utf-8")


def reply_headers(
    sender: str,
    subject: str,
    *,
    to: str = DANA,
    message_id: str = "<reply-1@client.test>",
    in_reply_to: str | None = None,
    references: str | None = None,
    date: FixedClock | None = None,
    extra: list[tuple[str, str]] | None = None,
) -> list[tuple[str, str]]:
    headers = [("From", sender), ("To", to), ("Subject", subject), ("Message-ID", message_id)]
    if date is not None:
        headers.append(("Date", format_datetime(date.now())))
    if in_reply_to is not None:
        headers.append(("In-Reply-To", in_reply_to))
    if references is not None:
        headers.append(("References", references))
    return headers + (extra or [])


def outbox_messages(outbox: Path) -> list[bytes]:
    """Every email our Maildir transport delivered: what a Sent folder would hold."""
    return [path.read_bytes() for path in sorted((outbox / "new").iterdir())]


@dataclass(frozen=True)
class Effects:
    replies: int
    notices: int
    suppressions: int
    addresses: int
    states: dict[str, int]


def effects(app: App) -> Effects:
    """Everything an inbound message can change, counted."""
    with app.uow() as uow:

        def count(model: type[m.Base]) -> int:
            return uow.session.scalar(select(func.count()).select_from(model)) or 0

        states = dict(
            uow.session.execute(select(m.Lead.reply_state, func.count()).group_by(m.Lead.reply_state)).all()
        )
        return Effects(count(m.Reply), count(m.Notice), count(m.Suppression), count(m.ContactAddress), states)


def statuses(app: App) -> dict[int, str]:
    with app.uow() as uow:
        return dict(uow.session.execute(select(m.InboundMessage.id, m.InboundMessage.status)).all())
