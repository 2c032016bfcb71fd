"""Helpers for sequence tests: campaign files with chosen steps, and a transport that records
every email it accepted with the clock's time, scripted to refuse or to be slow."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import select

from replyguard.adapters.db import models as m
from replyguard.adapters.transports.base import BeforeCommitHook, Delivery, Outcome, Probe
from replyguard.bootstrap import App
from replyguard.domain.clock import FixedClock
from replyguard.domain.leads_csv import read_leads
from replyguard.domain.outgoing import OutgoingEmail
from replyguard.service_layer.workspace.campaigns import create_campaign
from replyguard.service_layer.workspace.leads import import_leads
from tests.support.scenario import csv_of

WEEKDAYS = '"mon","tue","wed","thu","fri"'
EVERY_DAY = '"mon","tue","wed","thu","fri","sat","sun"'


def steps_toml(*steps: tuple[str, str | None, str, bool]) -> str:
    """[[campaign.steps]] tables from (wait, subject or None, body, approval)."""
    parts = []
    for wait, subject, body, approval in steps:
        lines = ["[[campaign.steps]]", f'wait = "{wait}"']
        if subject is not None:
            lines.append(f'subject = "{subject}"')
        lines.append(f'body = "{body}"')
        if approval:
            lines.append("approval = true")
        parts.append("\n".join(lines))
    return "\n".join(parts) + "\n"


THREE_STEPS = steps_toml(
    ("0d", "Hello {{ first_name }}", "Hi {{ first_name }}, first.", False),
    ("2d", None, "Second, {{ first_name }}.", False),
    ("2d", None, "Third, {{ first_name }}.", False),
)


def campaign_file(
    name: str,
    product: str = "P",
    *,
    steps: str = THREE_STEPS,
    mailbox: str = "rep@seller.test",
    from_name: str | None = "Rep",
    cap: int | None = 1000,
    timezone: str = "UTC",
    days: str = WEEKDAYS,
    start: str = "09:00",
    end: str = "17:00",
    extra: str = "",
) -> str:
    settings = ""
    if from_name is not None:
        settings += f'from_name = "{from_name}"\n'
    if cap is not None:
        settings += f"daily_cap = {cap}\n"
    return f"""
product = "{product}"
[campaign]
name = "{name}"
mailbox = "{mailbox}"
{settings}owner = "{mailbox}"
timezone = "{timezone}"
send_window = {{ days = [{days}], start = "{start}", end = "{end}" }}
{steps}
{extra}
"""


def setup(app: App, toml: str, leads: list[dict[str, str]], product: str = "P") -> None:
    with app.uow() as uow:
        create_campaign(uow, toml)
        import_leads(uow, product, list(read_leads(csv_of(leads))))
        uow.commit()


@dataclass(frozen=True)
class Sent:
    at: datetime  # the clock when the transport accepted it
    email: OutgoingEmail


class RecordingTransport:
    """Accepts (or refuses, from a script) and records every accepted email with the clock's
    time. `delay` moves a FixedClock forward on every call: a slow server in simulated time."""

    can_probe = False

    def __init__(self, clock: FixedClock, *, delay: timedelta = timedelta(0)) -> None:
        self.clock = clock
        self.delay = delay
        self.script: list[Delivery] = []
        self.calls: list[OutgoingEmail] = []
        self.sent: list[Sent] = []
        self.on_send: Callable[[OutgoingEmail], None] | None = None

    def refuse(self, *deliveries: Delivery) -> None:
        self.script.extend(deliveries)

    def send(self, email: OutgoingEmail, before_commit: BeforeCommitHook | None = None) -> Delivery:
        self.clock.advance(self.delay)
        self.calls.append(email)
        if before_commit is not None:
            before_commit()
        if self.on_send is not None:
            self.on_send(email)
        delivery = self.script.pop(0) if self.script else Delivery(Outcome.ACCEPTED, "250 ok")
        if delivery.outcome is Outcome.ACCEPTED:
            self.sent.append(Sent(self.clock.now(), email))
        return delivery

    def probe(self, email: OutgoingEmail) -> Probe:
        return Probe.UNKNOWN

    def close(self) -> None:
        return None

    def to(self, address: str) -> list[OutgoingEmail]:
        return [s.email for s in self.sent if s.email.to_address == address]


PERMANENT = Delivery(
    Outcome.PERMANENT, "RCPT TO refused: 554 5.7.1 Recipient address rejected: Access denied"
)
TRANSIENT = Delivery(Outcome.TRANSIENT, "cannot connect to smtp://relay.test:587: ConnectionRefusedError()")


def steps_of(app: App, email: str) -> list[m.Step]:
    """The lead's steps in every campaign, by enrollment and position."""
    with app.uow() as uow:
        contact_id = uow.session.scalar(
            select(m.ContactAddress.contact_id).where(m.ContactAddress.address == email)
        )
        lead_ids = uow.session.scalars(select(m.Lead.id).where(m.Lead.contact_id == contact_id)).all()
        steps = list(
            uow.session.scalars(
                select(m.Step)
                .where(m.Step.lead_id.in_(lead_ids))
                .order_by(m.Step.enrollment_id, m.Step.position)
            )
        )
        uow.commit()  # keeps the loaded values readable after the session closes
        return steps


def notices(app: App, kind: str) -> list[m.Notice]:
    with app.uow() as uow:
        found = list(uow.session.scalars(select(m.Notice).where(m.Notice.kind == kind).order_by(m.Notice.id)))
        uow.commit()
        return found


def enrollment_states(app: App) -> list[str]:
    with app.uow() as uow:
        return list(uow.session.scalars(select(m.Enrollment.state).order_by(m.Enrollment.id)))
