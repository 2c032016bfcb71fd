"""A small live workspace for the Reply Rescue pages: two products, first emails really sent
(Maildir), and replies that arrive as real RFC 5322 messages threaded on them, through
`ingest_raw` — the path every inbound source takes."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from email.message import EmailMessage
from email.utils import format_datetime, make_msgid

from sqlalchemy import select

from replyguard.adapters.db import models as m
from replyguard.bootstrap import App
from replyguard.domain.clock import FixedClock
from replyguard.domain.leads_csv import read_leads
from replyguard.service_layer.inbound.ingest import IngestResult, ingest_raw
from replyguard.service_layer.sending.worker import Worker
from replyguard.service_layer.workspace.campaigns import create_campaign
from replyguard.service_layer.workspace.leads import find_lead, import_leads
from tests.support.scenario import csv_of, enroll_all

ATLAS, BEACON = "Atlas", "Beacon"
ATLAS_CAMPAIGN, BEACON_CAMPAIGN = "Atlas launch", "Beacon pilot"
ADA, GRACE, ALAN = "ada@lovelace.test", "grace@hopper.test", "alan@turing.test"


def campaign(name: str, product: str, mailbox: str, sender: str) -> str:
    return f"""product = "{product}"

[campaign]
name = "{name}"
mailbox = "{mailbox}"
from_name = "{sender}"
owner = "{mailbox}"
timezone = "UTC"
send_window = {{ days = ["mon", "tue", "wed", "thu", "fri"], start = "09:00", end = "17:00" }}
daily_cap = 40

[[campaign.steps]]
wait = "0d"
subject = "A question about {{{{ company }}}}"
body = "Hi {{{{ first_name }}}}, may I ask how {{{{ company }}}} plans its launches?"

[[campaign.steps]]
wait = "3d"
body = "Hi {{{{ first_name }}}}, bringing this back up."

[[campaign.steps]]
wait = "4d"
body = "Hi {{{{ first_name }}}}, one last note from me."
"""


LEADS = [
    {"email": ADA, "first_name": "Ada", "last_name": "Lovelace", "company": "Analytical Engines"},
    {"email": GRACE, "first_name": "Grace", "last_name": "Hopper", "company": "Navy Labs"},
    {"email": ALAN, "first_name": "Alan", "last_name": "Turing", "company": "Bletchley"},
]


@dataclass(frozen=True)
class Live:
    app: App
    clock: FixedClock

    def sent(self, email: str, product: str = ATLAS) -> tuple[str, str]:
        """(Message-ID, subject) of the first email the lead was really sent."""
        with self.app.uow() as uow:
            lead = find_lead(uow, email, product)
            step = uow.session.scalars(
                select(m.Step).where(m.Step.lead_id == lead.id, m.Step.position == 1)
            ).one()
            assert step.state == "sent", step.state
            return step.message_id, step.subject

    def reply(self, email: str, text: str, *, html: str | None = None, name: str = "") -> IngestResult:
        """Their answer, as their mail client writes it: threaded on our email, quoting it."""
        message_id, subject = self.sent(email)
        msg = EmailMessage()
        msg["From"] = f"{name} <{email}>" if name else email
        msg["To"] = "sam@atlas.test"
        msg["Subject"] = f"Re: {subject}"
        msg["Message-ID"] = make_msgid(domain=email.split("@")[1])
        msg["In-Reply-To"] = msg["References"] = message_id
        msg["Date"] = format_datetime(self.clock.now())
        msg.set_content(f"{text}\n\nOn Mon, Sam Rivers wrote:\n> may I ask how you plan your launches?\n")
        if html is not None:
            msg.add_alternative(html, subtype="html")
        return ingest_raw(self.app, msg.as_bytes(), "imap")

    def colleague(self, email: str, sender: str, text: str) -> IngestResult:
        """Someone else at the lead's company answers, not in our thread: a probable reply."""
        _, subject = self.sent(email)
        msg = EmailMessage()
        msg["From"], msg["To"], msg["Subject"] = sender, "sam@atlas.test", f"RE: {subject}"
        msg["Message-ID"] = make_msgid(domain=sender.split("@")[1])
        msg["Date"] = format_datetime(self.clock.now())
        msg.set_content(text)
        return ingest_raw(self.app, msg.as_bytes(), "imap")

    def thread_of(self, email: str, product: str = ATLAS) -> int:
        with self.app.uow() as uow:
            lead = find_lead(uow, email, product)
            return uow.session.scalars(
                select(m.RescueThread.id).where(m.RescueThread.lead_id == lead.id).order_by(m.RescueThread.id)
            ).all()[-1]


def live_workspace(app: App) -> Live:
    """Atlas (three leads) and Beacon (Ada only), their first emails sent on Monday 09:00 UTC."""
    assert isinstance(app.clock, FixedClock)
    with app.uow() as uow:
        create_campaign(uow, campaign(ATLAS_CAMPAIGN, ATLAS, "sam@atlas.test", "Sam Rivers"))
        create_campaign(uow, campaign(BEACON_CAMPAIGN, BEACON, "sam@beacon.test", "Sam Rivers"))
        import_leads(uow, ATLAS, list(read_leads(csv_of(LEADS))))
        import_leads(uow, BEACON, list(read_leads(csv_of(LEADS[:1]))))
        uow.commit()
    enroll_all(app, ATLAS_CAMPAIGN)
    enroll_all(app, BEACON_CAMPAIGN)
    app.clock.advance(timedelta(hours=3, minutes=5))  # Monday 09:05 UTC: inside the window
    Worker(app).run_once()
    app.clock.advance(timedelta(hours=2))
    return Live(app, app.clock)
