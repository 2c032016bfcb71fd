"""Issue 7, item 7: our own outgoing mail read back is never a reply.

A Sent folder, Gmail's "All Mail" or a Bcc to ourselves hands every email we sent back to
the inbound path. Before the fix, ingesting them stopped leads, held others, sent notices,
and learned our own mailbox as a lead's address.
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import select

from replyguard.adapters.db import models as m
from replyguard.bootstrap import App
from replyguard.domain.clock import FixedClock
from replyguard.service_layer.inbound.ingest import ingest_raw
from replyguard.service_layer.workspace.leads import contact_for_address
from tests.support.identity import (
    DANA,
    PRIYA,
    effects,
    first_sent,
    outbox_messages,
    raw_mail,
    reply_headers,
    sent_workspace,
)
from tests.support.scenario import REPORTS, lead_state


def test_every_email_we_sent_read_back_changes_nothing(app: App, clock: FixedClock, tmp_path: Path) -> None:
    sent_workspace(app, clock, days=4)  # first emails and the Reports follow-ups (In-Reply-To ours)
    sent = outbox_messages(tmp_path / "outbox")
    assert any(b"In-Reply-To: <rg." in raw for raw in sent)  # the follow-ups are in our threads
    before = effects(app)
    results = [ingest_raw(app, raw, "imap") for raw in sent]
    assert {r.status for r in results} == {"ours"}
    assert effects(app) == before  # no reply, no notice, no suppression, no address, no state
    with app.uow() as uow:
        assert contact_for_address(uow, DANA) is None
        assert (
            uow.session.scalars(select(m.Event.kind).where(m.Event.kind == "alternate_learned")).all() == []
        )


def test_our_mail_with_a_rewritten_message_id_is_ours_by_its_mailbox(app: App, clock: FixedClock) -> None:
    # Amazon SES replaces the Message-ID we set; the copy still comes From our mailbox.
    sent_workspace(app, clock)
    first = first_sent(app, PRIYA, REPORTS)
    copy = raw_mail(
        reply_headers(
            f"Dana Whitfield <{DANA}>",
            f"Re: {first.subject}",
            to=PRIYA,
            message_id="<0100018c1234abcd-ses@email.amazonses.com>",
            in_reply_to=first.message_id,
            extra=[("Authentication-Results", "mx.google.com; dkim=pass header.d=northwind-analytics.test")],
        ),
        "Hi Priya, just bringing this back to the top of your inbox.\n",
    )
    result = ingest_raw(app, copy, "imap")
    assert result.status == "ours" and "ours:from-mailbox" in result.evidence
    assert lead_state(app, PRIYA, REPORTS) == "active"


def test_a_message_claiming_our_mailbox_that_fails_dmarc_is_kept_for_a_person(
    app: App, clock: FixedClock
) -> None:
    sent_workspace(app, clock)
    first = first_sent(app, PRIYA, REPORTS)
    before = effects(app)
    spoof = raw_mail(
        reply_headers(
            f"Dana Whitfield <{DANA}>",
            f"Re: {first.subject}",
            message_id="<spoof-1@attacker.test>",
            in_reply_to=first.message_id,
            extra=[
                (
                    "Authentication-Results",
                    "mx.google.com; spf=fail smtp.mailfrom=northwind-analytics.test; "
                    "dmarc=fail (p=NONE) header.from=northwind-analytics.test",
                )
            ],
        ),
        "Please unsubscribe me.\n",
    )
    result = ingest_raw(app, spoof, "imap")
    assert result.status == "suspect"
    assert effects(app) == before  # it changes no lead...
    with app.uow() as uow:  # ...and is shown, not dropped
        row = uow.session.get_one(m.InboundMessage, result.inbound_id)
        assert row.status == "suspect" and row.auth is not None and row.auth["verdict"] == "fail"


def test_a_bounce_of_our_own_email_is_still_a_bounce(app: App, clock: FixedClock) -> None:
    # The bounce carries our email (From our mailbox, our Message-ID) inside it; that must not
    # make the bounce itself "ours".
    sent_workspace(app, clock)
    first = first_sent(app, PRIYA, REPORTS)
    dsn = raw_mail(
        [
            ("From", "Mail Delivery System <MAILER-DAEMON@mx.fernhollow.test>"),
            ("To", DANA),
            ("Subject", "Undelivered Mail Returned to Sender"),
            ("Message-ID", "<dsn-7@mx.fernhollow.test>"),
            ("Auto-Submitted", "auto-replied"),
            ("MIME-Version", "1.0"),
            ("Content-Type", 'multipart/report; report-type=delivery-status; boundary="B"'),
        ],
        "--B\nContent-Type: text/plain\n\nYour message could not be delivered.\n\n"
        "--B\nContent-Type: message/delivery-status\n\nReporting-MTA: dns; mx.test\n\n"
        f"Final-Recipient: rfc822; {PRIYA}\nAction: failed\nStatus: 5.1.1\n"
        "Diagnostic-Code: smtp; 550 5.1.1 User unknown\n\n"
        "--B\nContent-Type: text/rfc822-headers\n\n"
        f"From: {DANA}\nTo: {PRIYA}\nMessage-ID: {first.message_id}\n\n--B--\n",
    )
    result = ingest_raw(app, dsn, "imap")
    assert (result.status, result.kind) == ("matched", "bounce_hard")
