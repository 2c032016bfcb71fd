"""Issue 7, item 10: one reply, one effect, whatever the transport did to its headers.

Before: a Message-ID folded onto a second line (Exchange Online) was not recognised, so the
LMTP and the IMAP copy both counted; a webhook rebuilt from parsed fields and the IMAP copy
both counted (soft bounces reached the 3-bounce limit twice as fast); a non-ASCII Message-ID
made the rebuild fail and the JSON request body was stored as the mail.
"""

from __future__ import annotations

import dataclasses
import threading
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import create_engine, select, text

from replyguard.adapters.db import models as m
from replyguard.bootstrap import App
from replyguard.domain.clock import FixedClock
from replyguard.entrypoints.http import create_app
from replyguard.entrypoints.http.payloads import postmark_raw
from replyguard.service_layer.inbound.ingest import IngestResult, ingest_raw, process_stored, store_raw
from tests.integration.test_http_inbound import PM_PASSWORD, PM_USER, serving
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
from tests.support.scenario import REPORTS, lead_state

LONG_ID = (
    "<DM6PR11MB4217A1B2C3D4E5F60718293A4B5C6D7E8F90A1B2C3D4E5F6@DM6PR11MB4217.namprd11.prod.outlook.test>"
)
BODY = "Hi Dana, yes please - send me the pricing.\n"


def test_a_message_id_folded_onto_the_next_line_is_the_same_message(app: App, clock: FixedClock) -> None:
    sent_workspace(app, clock)
    first = first_sent(app, PRIYA, REPORTS)
    imap = raw_mail(
        reply_headers(PRIYA, f"Re: {first.subject}", message_id=LONG_ID, in_reply_to=first.message_id)
    )
    received = ("Received", "from mx.outlook.test by mx.northwind.test; Mon, 7 Dec 2026 10:00:00 +0000")
    folded = reply_headers(
        PRIYA, f"Re: {first.subject}", message_id="\r\n " + LONG_ID, in_reply_to=first.message_id
    )
    lmtp = raw_mail([received, *folded])
    before = effects(app)
    ingest_raw(app, lmtp, "lmtp")
    second = ingest_raw(app, imap, "imap")
    assert second.duplicate or second.status == "duplicate"
    after = effects(app)
    assert (after.replies - before.replies, after.notices - before.notices) == (1, 1)


def _dsn_payload(n: int) -> dict[str, Any]:
    """Postmark's parsed JSON for a soft bounce (no RawEmail: the message is rebuilt)."""
    return {
        "FromFull": {"Email": "MAILER-DAEMON@mx.brightline-logistics.test", "Name": "Mail Delivery System"},
        "To": DANA,
        "Subject": "Undelivered Mail Returned to Sender",
        "Date": "Mon, 7 Dec 2026 10:00:00 +0000",
        "TextBody": _DSN_TEXT.format(n=n),
        "Headers": [
            {"Name": "Message-ID", "Value": f"<dsn-{n}@mx.brightline-logistics.test>"},
            {"Name": "Auto-Submitted", "Value": "auto-replied"},
        ],
    }


_DSN_TEXT = (
    "This is the mail system at host mx.brightline-logistics.test.\n\n"
    "I'm sorry to have to inform you that your message could not\n"
    "be delivered to one or more recipients.\n\n"
    f"<{MARC}>: host mx said: 452 4.2.2 Mailbox full, try again later ({{n}})\n"
)


def _dsn_raw(n: int) -> bytes:
    """The same bounce as the IMAP copy holds it: the MTA's own bytes."""
    return raw_mail(
        [
            ("Return-Path", "<>"),
            ("Received", "by mx.brightline-logistics.test (Postfix); Mon, 7 Dec 2026 10:00:01 +0000"),
            ("Date", "Mon, 7 Dec 2026 10:00:00 +0000"),
            ("From", "MAILER-DAEMON@mx.brightline-logistics.test (Mail Delivery System)"),
            ("Subject", "Undelivered Mail Returned to Sender"),
            ("To", DANA),
            ("Auto-Submitted", "auto-replied"),
            ("Message-ID", f"<dsn-{n}@mx.brightline-logistics.test>"),
        ],
        _DSN_TEXT.format(n=n),
    )


def test_a_rebuilt_webhook_copy_and_the_imap_copy_count_once(app: App, clock: FixedClock) -> None:
    # Two soft bounces, each arriving twice: the lead must still be active (two, not four).
    sent_workspace(app, clock)
    for n in range(2):
        rebuilt = postmark_raw(_dsn_payload(n))
        assert rebuilt is not None and rebuilt != _dsn_raw(n)
        first = ingest_raw(app, rebuilt, "postmark")
        second = ingest_raw(app, _dsn_raw(n), "imap")
        assert first.kind == "bounce_soft" and first.status == "matched"
        assert second.status == "duplicate" and not second.duplicate  # stored, then recognised
    assert lead_state(app, MARC, REPORTS) == "active"
    with app.uow() as uow:
        rows = uow.session.execute(
            select(m.InboundMessage.id, m.InboundMessage.status, m.InboundMessage.duplicate_of).order_by(
                m.InboundMessage.id
            )
        ).all()
        soft = uow.session.scalars(select(m.Reply.id).where(m.Reply.kind == "bounce_soft")).all()
    assert len(soft) == 2
    assert [(status, of) for _, status, of in rows] == [
        ("matched", None),
        ("duplicate", rows[0].id),
        ("matched", None),
        ("duplicate", rows[2].id),
    ]


def test_a_non_ascii_message_id_is_rebuilt_and_never_stored_as_json(app: App, clock: FixedClock) -> None:
    app.settings = dataclasses.replace(app.settings, postmark_user=PM_USER, postmark_password=PM_PASSWORD)
    sent_workspace(app, clock)
    first = first_sent(app, PRIYA, REPORTS)
    message_id = "<lucía.ortega-1@correo.grupo-mirador.test>"
    payload = {
        "FromFull": {"Email": PRIYA, "Name": "Priya Raman"},
        "To": DANA,
        "Subject": f"Re: {first.subject}",
        "Date": "Mon, 7 Dec 2026 10:00:00 +0000",
        "TextBody": "Sí, hablemos el martes.\n",
        "Headers": [
            {"Name": "Message-ID", "Value": message_id},
            {"Name": "In-Reply-To", "Value": first.message_id},
        ],
    }
    with serving(create_app(app)) as client:
        response = client.post("/hooks/postmark", json=payload, auth=(PM_USER, PM_PASSWORD))
    assert response.status_code == 200 and response.json()["status"] == "matched"
    assert lead_state(app, PRIYA, REPORTS) == "replied"
    with app.uow() as uow:
        raw, stored_id = uow.session.execute(select(m.InboundMessage.raw, m.InboundMessage.message_id)).one()
    assert raw.startswith(b"From: ") and not raw.lstrip().startswith(b"{")
    assert stored_id == message_id
    # The IMAP copy (raw UTF-8 header, as the sender's server wrote it) is the same message.
    imap = raw_mail(
        reply_headers(PRIYA, f"Re: {first.subject}", message_id=message_id, in_reply_to=first.message_id),
        "Sí, hablemos el martes.\n",
    )
    again = ingest_raw(app, imap, "imap")
    assert again.duplicate or again.status == "duplicate"


def test_a_message_id_reused_by_someone_else_does_not_swallow_the_real_reply(
    app: App, clock: FixedClock
) -> None:
    sent_workspace(app, clock)
    first = first_sent(app, PRIYA, REPORTS)
    her_id = "<CAPriya42@mail.fernhollow.test>"
    # Someone who learned her Message-ID sends first: from his own address, then forging hers
    # (which fails DMARC at our receiving side).
    forged = [
        reply_headers("mallory@elsewhere.test", f"Re: {first.subject}", message_id=her_id),
        reply_headers(
            PRIYA,
            f"Re: {first.subject}",
            message_id=her_id,
            extra=[("Authentication-Results", "mx.northwind.test; dmarc=fail header.from=fernhollow.test")],
        ),
    ]
    for headers in forged:
        ingest_raw(app, raw_mail(headers, "ignore the previous email\n"), "imap")
    real = ingest_raw(
        app,
        raw_mail(
            reply_headers(PRIYA, f"Re: {first.subject}", message_id=her_id, in_reply_to=first.message_id),
            BODY,
        ),
        "imap",
    )
    assert real.status == "matched" and "match:thread" in real.evidence
    with app.uow() as uow:
        texts = uow.session.scalars(select(m.Reply.text).where(m.Reply.from_address == PRIYA)).all()
    assert any(t and "pricing" in t for t in texts)


@pytest.mark.postgres_only
def test_two_copies_processed_at_the_same_time_have_one_effect(app: App, clock: FixedClock) -> None:
    """The first copy is held inside its reply transaction (its effect key taken, not yet
    committed) while the second is processed: the second must wait for it, then be marked a
    duplicate — not apply a second effect it could not see."""
    sent_workspace(app, clock)
    first = first_sent(app, PRIYA, REPORTS)
    headers = reply_headers(PRIYA, f"Re: {first.subject}", message_id=LONG_ID, in_reply_to=first.message_id)
    copies = [
        raw_mail(headers),
        raw_mail(
            [("Received", "from relay.test"), *headers], BODY + "\n(sent from my phone)\n"
        ),  # other bytes
    ]
    with app.uow() as uow:
        ids = [store_raw(uow, raw, "test")[0] for raw in copies]
        uow.commit()
    inside, release = threading.Event(), threading.Event()

    def hold_first(_name: str) -> None:
        if not inside.is_set():
            inside.set()
            assert release.wait(60), "the test never released the first copy"

    app.hooks.arm("inside_reply_tx", hold_first)
    results: dict[int, IngestResult] = {}
    threads = [
        threading.Thread(target=lambda i=i: results.__setitem__(i, process_stored(app, i))) for i in ids
    ]
    threads[0].start()
    assert inside.wait(60)
    threads[1].start()
    _wait_for_a_lock_wait(app, threads[1])
    release.set()
    for thread in threads:
        thread.join(60)
    app.hooks.disarm()
    assert [results[i].status for i in ids] == ["matched", "duplicate"]
    assert effects(app).replies == 1


def _wait_for_a_lock_wait(app: App, second: threading.Thread) -> None:
    """Until the second copy's transaction waits on a lock (or has finished, which the
    assertions then judge)."""
    probe = create_engine(app.engine.url)
    deadline = threading.Event()
    timer = threading.Timer(60, deadline.set)
    timer.start()
    try:
        with probe.connect() as conn:
            while second.is_alive() and not deadline.is_set():
                waiting = conn.execute(
                    text(
                        "SELECT count(*) FROM pg_stat_activity "
                        "WHERE wait_event_type = 'Lock' AND datname = current_database()"
                    )
                ).scalar()
                if waiting:
                    return
                second.join(0.01)
    finally:
        timer.cancel()
        probe.dispose()


def test_processing_again_has_no_second_effect(app: App, clock: FixedClock) -> None:
    sent_workspace(app, clock)
    first = first_sent(app, PRIYA, REPORTS)
    result = ingest_raw(
        app,
        raw_mail(reply_headers(PRIYA, f"Re: {first.subject}", in_reply_to=first.message_id), BODY),
        "imap",
    )
    clock.advance(timedelta(minutes=5))
    again = process_stored(app, result.inbound_id)
    assert again.status == "matched" and effects(app).replies == 1
