"""Issue 7, item 8: mail written before our first email to a lead only informs.

The first start of an IMAP poller on a mailbox with history replayed 1,970 old messages as
fresh replies: every lead of a product stopped, 8 addresses suppressed, 44 notices. The
poller now starts from now (the sources' side); an explicit history import passes
`history=True`, and whatever the source, a message that predates our first email to the
lead never stops, holds, suppresses or unsubscribes her.
"""

from __future__ import annotations

from datetime import timedelta
from email.utils import format_datetime
from pathlib import Path

from sqlalchemy import select

from replyguard.adapters.db import models as m
from replyguard.bootstrap import App
from replyguard.domain.clock import FixedClock
from replyguard.service_layer.inbound.ingest import ingest_raw
from replyguard.service_layer.workspace.leads import find_lead
from tests.adversarial.cli import run_cli
from tests.support.identity import (
    DANA,
    MARC,
    PRIYA,
    effects,
    first_sent,
    raw_mail,
    reply_headers,
    sent_workspace,
)
from tests.support.scenario import FORECASTING, REPORTS, lead_state

LEADS = [
    PRIYA,
    MARC,
    "j.brandt@kessler-maschinenbau.test",
    "claire.dubois@atelier-lumen.test",
    "tbecker@cedarpoint-supply.test",
    "aisha@meridian-health.test",
    "lortega@grupo-mirador.test",
    "ben.torres@pinecrest-retail.test",
]
OLD_TEXTS = [
    "Please remove me from your mailing list.",
    "Thanks, sounds good — let's talk next week.",
    "I am out of the office until 3 March with limited access to email.",
    "Unsubscribe",
]


def _old_mail(clock: FixedClock, sender: str, n: int, days_ago: int) -> bytes:
    return raw_mail(
        [
            ("From", sender),
            ("To", DANA),
            ("Subject", f"Re: our call #{n}"),
            ("Message-ID", f"<old-{n}@client.test>"),
            ("Date", format_datetime(clock.now() - timedelta(days=days_ago))),
        ],
        OLD_TEXTS[n % len(OLD_TEXTS)] + "\n",
    )


def test_a_mailbox_history_import_changes_no_lead(app: App, clock: FixedClock) -> None:
    sent_workspace(app, clock)
    before = effects(app)
    results = [
        ingest_raw(app, _old_mail(clock, sender, n, days_ago=3 + n), "imap", history=True)
        for n, sender in enumerate(LEADS * 5)
    ]
    assert {r.status for r in results} == {"history"}
    assert effects(app) == before  # no reply, notice, suppression or state change
    with app.uow() as uow:
        lead = find_lead(uow, PRIYA, REPORTS)
        informed = uow.session.scalars(
            select(m.Event.kind).where(
                m.Event.lead_id == lead.id, m.Event.kind == "inbound_predates_first_send"
            )
        ).all()
    assert informed  # on her timeline


def test_an_old_message_delivered_live_only_informs(app: App, clock: FixedClock) -> None:
    # `replyguard ingest old-export.mbox` without the flag: the Date shows it is a year old.
    sent_workspace(app, clock)
    result = ingest_raw(app, _old_mail(clock, PRIYA, 0, days_ago=365), "file")
    assert result.status == "history"
    assert lead_state(app, PRIYA, REPORTS) == "active" and lead_state(app, PRIYA, FORECASTING) == "active"


def test_history_that_answers_our_email_still_stops_the_lead(app: App, clock: FixedClock) -> None:
    # Imported, and its Date is even wrong (a week before our email), but it answers our
    # Message-ID: it was written after our email went out.
    sent_workspace(app, clock)
    first = first_sent(app, PRIYA, REPORTS)
    headers = reply_headers(PRIYA, f"Re: {first.subject}", in_reply_to=first.message_id)
    headers.append(("Date", format_datetime(clock.now() - timedelta(days=7))))
    result = ingest_raw(app, raw_mail(headers), "imap", history=True)
    assert result.status == "matched"
    assert lead_state(app, PRIYA, REPORTS) == "replied"


def test_history_dated_after_our_first_email_stops_the_lead(app: App, clock: FixedClock) -> None:
    sent_workspace(app, clock)
    clock.advance(timedelta(hours=2))
    result = ingest_raw(
        app,
        raw_mail(reply_headers(PRIYA, "pricing?", date=clock), "Can you send pricing?\n"),
        "imap",
        history=True,
    )
    assert result.status == "matched"
    assert lead_state(app, PRIYA, REPORTS) == "replied"


def test_a_history_import_never_holds_probable_leads(app: App, clock: FixedClock) -> None:
    # A colleague's old mail from the lead's company domain would hold every lead there.
    sent_workspace(app, clock)
    old = _old_mail(clock, "sam.lee@fernhollow.test", 1, days_ago=30)
    result = ingest_raw(app, old, "imap", history=True)
    assert result.status == "history"
    assert lead_state(app, PRIYA, REPORTS) == "active"


def test_ingest_history_from_the_command_line_records_the_export_and_changes_no_lead(
    app: App, clock: FixedClock, tmp_path: Path
) -> None:
    # `replyguard ingest --history export.mbox`: the export of a mailbox's past, read once.
    sent_workspace(app, clock)
    before = effects(app)
    mbox = tmp_path / "export.mbox"
    mbox.write_bytes(
        b"".join(
            b"From MAILER-DAEMON Thu Jan  1 00:00:00 2026\n"
            + _old_mail(clock, sender, n, days_ago=3 + n)
            + b"\n"
            for n, sender in enumerate(LEADS)
        )
    )
    result = run_cli(app, "ingest", "--history", str(mbox))
    assert result.exit_code == 0, result.output
    assert effects(app) == before
    with app.uow() as uow:
        rows = uow.session.execute(select(m.InboundMessage.source, m.InboundMessage.status)).all()
    assert len(rows) == len(LEADS)
    assert {status for _, status in rows} == {"history"}
    assert all(source.endswith("-history") for source, _ in rows), rows
