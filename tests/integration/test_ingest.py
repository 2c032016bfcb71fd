"""Inbound end to end: real-shaped messages through ingest_raw, on SQLite and PostgreSQL."""

from __future__ import annotations

import io
import json
from datetime import timedelta
from email.message import EmailMessage
from email.utils import format_datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import func, select

from replyguard.adapters.db import models as m
from replyguard.adapters.mail_files import iter_messages
from replyguard.bootstrap import App
from replyguard.domain.clock import FixedClock
from replyguard.domain.message_ids import unsubscribe_token
from replyguard.domain.next_step import ThreadKind
from replyguard.service_layer.inbound.confirmations import confirm_sender
from replyguard.service_layer.inbound.ingest import ingest_raw
from replyguard.service_layer.workspace.leads import contact_for_address, find_lead
from tests.support.scenario import FORECASTING, REPORTS, lead_state, load_examples, run_days, step_counts

PRIYA = "priya@fernhollow.test"
MARC = "marc.keller@brightline-logistics.test"


def _first_sent(app: App, email: str, product: str) -> tuple[str, str, str]:
    """(Message-ID, subject, send key) of the first email we sent this lead."""
    with app.uow() as uow:
        lead = find_lead(uow, email, product)
        step = uow.session.scalars(
            select(m.Step).where(m.Step.lead_id == lead.id, m.Step.position == 1)
        ).one()
        assert step.state == "sent"
        return step.message_id, step.subject, step.send_key


def _mail(
    sender: str,
    subject: str,
    body: str,
    *,
    to: str = "dana@northwind-analytics.test",
    in_reply_to: str | None = None,
    headers: dict[str, str] | None = None,
    when: FixedClock | None = None,
    msgid: str = "<x1@client.test>",
) -> bytes:
    msg = EmailMessage()
    msg["From"] = sender
    msg["To"] = to
    msg["Subject"] = subject
    msg["Message-ID"] = msgid
    if when is not None:
        msg["Date"] = format_datetime(when.now())
    if in_reply_to:
        msg["In-Reply-To"] = in_reply_to
        msg["References"] = in_reply_to
    for name, value in (headers or {}).items():
        msg[name] = value
    msg.set_content(body)
    return msg.as_bytes()


def _sent_day(app: App, clock: FixedClock) -> None:
    load_examples(app)
    run_days(app, clock, 1)


def test_a_human_reply_in_the_thread_stops_that_product_only(app: App, clock: FixedClock) -> None:
    _sent_day(app, clock)
    mid, subject, _ = _first_sent(app, PRIYA, REPORTS)
    reply = _mail(
        f"Priya Raman <{PRIYA}>",
        f"Re: {subject}",
        "Yes, let's talk on Thursday.\n\nOn Mon, Dana wrote:\n> Hi Priya,\n> how does your team...\n",
        in_reply_to=mid,
        when=clock,
    )
    result = ingest_raw(app, reply, "test")
    assert (result.status, result.kind) == ("matched", "human_reply")
    assert "match:thread" in result.evidence
    assert lead_state(app, PRIYA, REPORTS) == "replied"
    assert lead_state(app, PRIYA, FORECASTING) == "active"
    assert step_counts(app, PRIYA, REPORTS) == {"sent": 1, "cancelled": 2}
    with app.uow() as uow:
        text = uow.session.scalars(select(m.Reply.text)).one()
    assert text is not None and "Thursday" in text and "how does your team" not in text


def test_a_reply_from_the_alternate_address_with_a_new_subject_and_no_thread_headers(
    app: App, clock: FixedClock
) -> None:
    _sent_day(app, clock)
    reply = _mail(
        "Priya <Priya.Raman.Home@gmail-like.test>",
        "reporting tools",
        "Hi Dana, saw your note on my work account. Can you send pricing?\n",
    )
    result = ingest_raw(app, reply, "test")
    assert result.status == "matched" and "match:address" in result.evidence
    assert lead_state(app, PRIYA, REPORTS) == "replied"


def test_a_reply_in_our_thread_from_a_new_address_stops_the_lead_and_learns_it_once_confirmed(
    app: App, clock: FixedClock
) -> None:
    _sent_day(app, clock)
    mid, subject, _ = _first_sent(app, MARC, REPORTS)
    result = ingest_raw(
        app,
        _mail("m.keller@privat-mail.test", f"AW: {subject}", "Gerne, rufen Sie an.\n", in_reply_to=mid),
        "test",
    )
    assert "match:unknown-sender" in result.evidence
    assert lead_state(app, MARC, REPORTS) == "replied"
    with app.uow() as uow:
        assert contact_for_address(uow, "m.keller@privat-mail.test") is None  # not learned on its own
        pending = uow.session.scalars(select(m.SenderConfirmation)).one()
        assert (pending.learn_address, pending.unsubscribe) == (True, False)
        confirm_sender(uow, pending.id, app.settings, by="dana@northwind-analytics.test")
        uow.commit()
    with app.uow() as uow:
        assert find_lead(uow, "m.keller@privat-mail.test", REPORTS).id == find_lead(uow, MARC, REPORTS).id


def test_out_of_office_pauses_and_the_sequence_resumes_after_the_return_date(
    app: App, clock: FixedClock
) -> None:
    _sent_day(app, clock)
    mid, subject, _ = _first_sent(app, MARC, REPORTS)
    ooo = _mail(
        MARC,
        f"Automatische Antwort: {subject}",
        "Vielen Dank für Ihre Nachricht. Ich bin bis einschließlich 18.12.2026 nicht im Büro "
        "und habe keinen Zugriff auf meine E-Mails.\n",
        in_reply_to=mid,
        when=clock,
        headers={
            "Auto-Submitted": "auto-replied",
            "X-Auto-Response-Suppress": "All",
            "X-MS-Exchange-Inbox-Rules-Loop": MARC,
        },
    )
    result = ingest_raw(app, ooo, "test")
    assert result.kind == "out_of_office"
    assert lead_state(app, MARC, REPORTS) == "out_of_office"
    with app.uow() as uow:
        lead = find_lead(uow, MARC, REPORTS)
        assert lead.paused_until is not None and lead.paused_until.date().isoformat() >= "2026-12-18"
    run_days(app, clock, 10)  # to 18 Dec: still away, nothing sent
    assert step_counts(app, MARC, REPORTS)["sent"] == 1
    run_days(app, clock, 4)  # back on Saturday 19 Dec; the next window opens Monday 21 Dec
    assert lead_state(app, MARC, REPORTS) == "active"
    assert step_counts(app, MARC, REPORTS)["sent"] == 2


def _dsn(
    failed: str, original_id: str, status: str, diagnostic: str, dsn_id: str = "<dsn1@mx.test>"
) -> bytes:
    return (
        "From: Mail Delivery System <MAILER-DAEMON@mx.brightline-logistics.test>\r\n"
        "To: dana@northwind-analytics.test\r\nSubject: Undelivered Mail Returned to Sender\r\n"
        f"Auto-Submitted: auto-replied\r\nMessage-ID: {dsn_id}\r\nMIME-Version: 1.0\r\n"
        'Content-Type: multipart/report; report-type=delivery-status; boundary="B"\r\n\r\n'
        "--B\r\nContent-Type: text/plain\r\n\r\nI'm sorry to have to inform you that your message "
        "could not be delivered.\r\n\r\n"
        "--B\r\nContent-Type: message/delivery-status\r\n\r\nReporting-MTA: dns; mx.test\r\n\r\n"
        f"Final-Recipient: rfc822; {failed}\r\nAction: failed\r\nStatus: {status}\r\n"
        f"Diagnostic-Code: smtp; {diagnostic}\r\n\r\n"
        "--B\r\nContent-Type: text/rfc822-headers\r\n\r\n"
        f"From: dana@northwind-analytics.test\r\nTo: {failed}\r\nMessage-ID: {original_id}\r\n\r\n"
        "--B--\r\n"
    ).encode()


def test_a_hard_bounce_suppresses_the_address(app: App, clock: FixedClock) -> None:
    _sent_day(app, clock)
    mid, _, _ = _first_sent(app, MARC, REPORTS)
    result = ingest_raw(app, _dsn(MARC, mid, "5.1.1", "550 5.1.1 <marc> User unknown"), "test")
    assert result.kind == "bounce_hard" and "match:bounce-original" in result.evidence
    assert lead_state(app, MARC, REPORTS) == "bounced"
    with app.uow() as uow:
        assert uow.session.scalar(select(m.Suppression.address)) == MARC


def test_soft_bounces_are_logged_and_repeated_ones_become_hard(app: App, clock: FixedClock) -> None:
    _sent_day(app, clock)
    mid, _, _ = _first_sent(app, MARC, REPORTS)
    for n in range(3):
        dsn = _dsn(MARC, mid, "5.2.2", f"552 5.2.2 Mailbox full {n}", dsn_id=f"<dsn{n}@mx.test>")
        result = ingest_raw(app, dsn, "test")
        expected = "bounce_soft" if n < 2 else "bounce_hard"
        assert result.kind == expected
        assert lead_state(app, MARC, REPORTS) == ("active" if n < 2 else "bounced")
    with app.uow() as uow:
        reasons = set(uow.session.scalars(select(m.Reply.bounce_reason)))
    assert reasons == {"mailboxfull"}


@pytest.mark.parametrize(
    ("status", "diagnostic"),
    [
        ("4.2.2", "452 4.2.2 Mailbox full"),  # temporary: never suppresses
        ("5.7.1", "554 5.7.1 Service unavailable; Client host [192.0.2.9] blocked using zen.spamhaus.org"),
        ("5.7.26", "550 5.7.26 Unauthenticated email is not accepted due to domain's DMARC policy"),
    ],
)
def test_temporary_and_sender_side_bounces_never_add_up_to_hard(
    app: App, clock: FixedClock, status: str, diagnostic: str
) -> None:
    _sent_day(app, clock)
    mid, _, _ = _first_sent(app, MARC, REPORTS)
    for n in range(4):
        dsn = _dsn(MARC, mid, status, f"{diagnostic} ({n})", dsn_id=f"<dsn-t{n}@mx.test>")
        result = ingest_raw(app, dsn, "test")
        assert (result.kind, result.duplicate) == ("bounce_soft", False)
    assert lead_state(app, MARC, REPORTS) == "active"


def test_temporary_bounces_before_a_permanent_one_do_not_add_up_to_hard(app: App, clock: FixedClock) -> None:
    # Two 4.2.2 (temporary: the mailbox may empty) with the same reason as a 5.2.2: only the
    # permanent one counts, so the third bounce is still soft and the lead still active.
    _sent_day(app, clock)
    mid, _, _ = _first_sent(app, MARC, REPORTS)
    kinds = []
    for n, (status, code) in enumerate([("4.2.2", "452"), ("4.2.2", "452"), ("5.2.2", "552")]):
        dsn = _dsn(MARC, mid, status, f"{code} {status} Mailbox full ({n})", dsn_id=f"<dsn-m{n}@mx.test>")
        kinds.append(ingest_raw(app, dsn, "test").kind)
    assert kinds == ["bounce_soft", "bounce_soft", "bounce_soft"]
    assert lead_state(app, MARC, REPORTS) == "active"
    with app.uow() as uow:
        assert uow.session.scalar(select(func.count()).select_from(m.Suppression)) == 0


def test_a_permanent_failure_of_unknown_reason_is_soft_until_it_repeats(app: App, clock: FixedClock) -> None:
    _sent_day(app, clock)
    mid, _, _ = _first_sent(app, MARC, REPORTS)
    kinds = []
    for n in range(3):
        dsn = _dsn(MARC, mid, "5.0.0", f"550 5.0.0 Something went wrong ({n})", dsn_id=f"<dsn-u{n}@mx.test>")
        kinds.append(ingest_raw(app, dsn, "test").kind)
    assert kinds == ["bounce_soft", "bounce_soft", "bounce_hard"]
    assert lead_state(app, MARC, REPORTS) == "bounced"


def _suppressed(app: App) -> set[str]:
    with app.uow() as uow:
        return set(uow.session.scalars(select(m.Suppression.address)))


def _jmrp(recipient: str, original: str | None, subject: str) -> bytes:
    """Hotmail/Outlook's non-ARF complaint: the email complained about, attached."""
    message_id = f"Message-ID: {original}\r\n" if original else ""
    return (
        "From: staff@hotmail.com\r\nTo: dana@northwind-analytics.test\r\n"
        "Subject: complaint about message from 192.0.2.10\r\nMessage-ID: <c1@hotmail.com>\r\n"
        'MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary="J"\r\n\r\n'
        "--J\r\nContent-Type: text/plain\r\n\r\nThis is an email abuse report for an email "
        "message received from IP 192.0.2.10\r\n"
        "--J\r\nContent-Type: message/rfc822\r\nContent-Disposition: inline\r\n\r\n"
        f"X-HmXmrOriginalRecipient: {recipient}\r\nFrom: dana@northwind-analytics.test\r\n"
        f"To: {recipient}\r\n{message_id}Subject: {subject}\r\n\r\nHello\r\n--J--\r\n"
    ).encode()


def test_a_hotmail_complaint_about_our_email_unsubscribes_and_suppresses_the_lead(
    app: App, clock: FixedClock
) -> None:
    _sent_day(app, clock)
    mid, subject, _ = _first_sent(app, PRIYA, REPORTS)
    result = ingest_raw(app, _jmrp(PRIYA, mid, subject), "test")
    assert result.kind == "unsubscribe" and "match:complaint-original" in result.evidence
    assert lead_state(app, PRIYA, REPORTS) == "unsubscribed"
    assert lead_state(app, PRIYA, FORECASTING) == "unsubscribed"
    assert PRIYA in _suppressed(app) and "staff@hotmail.com" not in _suppressed(app)


def test_an_arf_abuse_report_with_our_headers_unsubscribes_the_lead(app: App, clock: FixedClock) -> None:
    _sent_day(app, clock)
    mid, subject, _ = _first_sent(app, MARC, REPORTS)
    arf = (
        "From: feedback@arf.mailbox.test\r\nTo: abuse@northwind-analytics.test\r\n"
        "Subject: FW: abuse report\r\nMessage-ID: <arf1@arf.mailbox.test>\r\nMIME-Version: 1.0\r\n"
        'Content-Type: multipart/report; report-type=feedback-report; boundary="F"\r\n\r\n'
        "--F\r\nContent-Type: text/plain\r\n\r\nThis is an abuse report.\r\n"
        "--F\r\nContent-Type: message/feedback-report\r\n\r\nFeedback-Type: abuse\r\n"
        f"User-Agent: SomeGenerator/1.0\r\nVersion: 1\r\nOriginal-Rcpt-To: <{MARC}>\r\n\r\n"
        "--F\r\nContent-Type: text/rfc822-headers\r\n\r\n"
        f"From: dana@northwind-analytics.test\r\nTo: {MARC}\r\nSubject: {subject}\r\n"
        f"Message-ID: {mid}\r\n\r\n--F--\r\n"
    ).encode()
    result = ingest_raw(app, arf, "test")
    assert result.kind == "unsubscribe" and "match:complaint-original" in result.evidence
    assert lead_state(app, MARC, REPORTS) == "unsubscribed"
    assert MARC in _suppressed(app)


def test_an_ses_complaint_notification_unsubscribes_the_lead(app: App, clock: FixedClock) -> None:
    _sent_day(app, clock)
    mid, _, _ = _first_sent(app, PRIYA, REPORTS)
    event = {
        "notificationType": "Complaint",
        "complaint": {"complainedRecipients": [{"emailAddress": PRIYA}], "complaintFeedbackType": "abuse"},
        "mail": {"messageId": "0100018c-ses-id", "commonHeaders": {"messageId": mid}},
    }
    body = json.dumps({"Type": "Notification", "Message": json.dumps(event)})
    raw = _mail("no-reply@sns.amazonaws.test", "AWS Notification Message", body, msgid="<sns1@sns.test>")
    result = ingest_raw(app, raw, "test")
    assert result.kind == "unsubscribe" and "match:complaint-original" in result.evidence
    assert lead_state(app, PRIYA, REPORTS) == "unsubscribed" and PRIYA in _suppressed(app)


def test_a_complaint_that_only_names_an_address_stops_her_but_suppresses_nothing_until_confirmed(
    app: App, clock: FixedClock
) -> None:
    # Anyone can write "X-HmXmrOriginalRecipient: priya@...": without our Message-ID and without
    # the provider's authentication, it stops her (the safe side) and a person decides the rest.
    _sent_day(app, clock)
    _, subject, _ = _first_sent(app, PRIYA, REPORTS)
    result = ingest_raw(app, _jmrp(PRIYA, None, subject), "test")
    assert result.kind == "unsubscribe" and "match:complaint-recipient" in result.evidence
    assert lead_state(app, PRIYA, REPORTS) == "replied"  # stopped, and a person's to decide
    assert _suppressed(app) == set()
    with app.uow() as uow:
        [pending] = uow.session.scalars(select(m.SenderConfirmation)).all()
        assert (pending.unsubscribe, pending.learn_address) == (True, False)
    assert contact_for_address_is_unchanged(app, "staff@hotmail.com")


def contact_for_address_is_unchanged(app: App, address: str) -> bool:
    with app.uow() as uow:
        return contact_for_address(uow, address) is None


def test_an_unsubscribe_request_stops_every_product(app: App, clock: FixedClock) -> None:
    _sent_day(app, clock)
    mid, subject, _ = _first_sent(app, PRIYA, REPORTS)
    result = ingest_raw(
        app, _mail(PRIYA, f"Re: {subject}", "Please remove me from your list.\n", in_reply_to=mid), "test"
    )
    assert result.kind == "unsubscribe"
    assert lead_state(app, PRIYA, REPORTS) == "unsubscribed"
    assert lead_state(app, PRIYA, FORECASTING) == "unsubscribed"


def test_mail_to_our_signed_unsubscribe_address_unsubscribes(app: App, clock: FixedClock) -> None:
    _sent_day(app, clock)
    _, _, key = _first_sent(app, PRIYA, REPORTS)
    with app.uow() as uow:
        secret = uow.session.get_one(m.Workspace, uow.workspace_id).secret
    to = f"dana+unsubscribe-{unsubscribe_token(secret, key)}@northwind-analytics.test"
    result = ingest_raw(app, _mail(PRIYA, "unsubscribe", "", to=to), "test")
    assert result.kind == "unsubscribe" and "match:unsubscribe-address" in result.evidence
    assert lead_state(app, PRIYA, REPORTS) == "unsubscribed"
    forged = to.replace(key[:6], "000000")
    assert (
        ingest_raw(app, _mail("x@y.test", "unsubscribe", "", to=forged, msgid="<x2@y>"), "t").status
        != "matched"
    )


def test_a_colleagues_reply_holds_the_lead_and_asks_a_person(app: App, clock: FixedClock) -> None:
    _sent_day(app, clock)
    _, subject, _ = _first_sent(app, PRIYA, REPORTS)
    result = ingest_raw(
        app,
        _mail(
            "Sam Lee <sam.lee@fernhollow.test>",
            f"RE: {subject}",
            "Priya forwarded this to me; I run our reporting. Happy to chat.\n",
        ),
        "test",
    )
    assert result.status == "probable"
    assert lead_state(app, PRIYA, REPORTS) == "held"
    run_days(app, clock, 5)
    assert step_counts(app, PRIYA, REPORTS).get("sent") == 1  # held: nothing more goes out
    with app.uow() as uow:
        notice = uow.session.scalars(select(m.Notice).where(m.Notice.kind == "probable_reply")).one()
        emails = [c["email"] for c in notice.payload["candidates"]]
    assert PRIYA in emails


def test_the_same_message_twice_has_one_effect(app: App, clock: FixedClock) -> None:
    _sent_day(app, clock)
    mid, subject, _ = _first_sent(app, PRIYA, REPORTS)
    raw = _mail(PRIYA, f"Re: {subject}", "Sounds good.\n", in_reply_to=mid)
    first = ingest_raw(app, raw, "imap")
    again = ingest_raw(app, b"Received: from another.relay\r\n" + raw, "webhook")
    assert not first.duplicate and again.duplicate
    assert again.inbound_id == first.inbound_id
    with app.uow() as uow:
        assert uow.session.scalar(select(func.count()).select_from(m.Reply)) == 1
        assert uow.session.scalar(select(func.count()).select_from(m.InboundMessage)) == 1


def test_unmatched_and_unparsable_messages_are_kept(app: App, clock: FixedClock) -> None:
    _sent_day(app, clock)
    unmatched = ingest_raw(app, _mail("stranger@elsewhere.test", "hello", "Who are you?\n"), "test")
    assert unmatched.status == "unmatched"
    broken = ingest_raw(app, b"\x00\x01 not an email at all \xff", "test")
    with app.uow() as uow:
        rows = dict(uow.session.execute(select(m.InboundMessage.id, m.InboundMessage.status)).all())
    assert rows[unmatched.inbound_id] == "unmatched"
    assert rows[broken.inbound_id] in ("unparsable", "unmatched")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    data=st.one_of(
        st.binary(max_size=2000),
        st.text(max_size=1500).map(
            lambda t: ("From: a@b.test\nSubject: x\n\n" + t).encode("utf-8", "replace")
        ),
    )
)
def test_no_input_crashes_the_ingest_loop(app: App, data: bytes) -> None:
    result = ingest_raw(app, data, "fuzz")
    assert result.status in ("matched", "probable", "unmatched", "unparsable")
    with app.uow() as uow:
        assert uow.session.get(m.InboundMessage, result.inbound_id) is not None


def test_mbox_streams_and_unquotes_from_lines() -> None:
    mbox = (
        b"From a@b Mon Dec  7 10:00:00 2026\nSubject: one\n\nfirst\n>From the start\n\n"
        b"From c@d Mon Dec  7 10:01:00 2026\nSubject: two\n\nsecond\n\n"
        b"From e@f Mon Dec  7 10:02:00 2026\nSubject: three\n\nthird\n"
    )
    items = list(iter_messages(["-"], io.BytesIO(mbox)))
    assert [i.origin for i in items] == ["-#1", "-#2", "-#3"]
    assert items[0].raw == b"Subject: one\n\nfirst\nFrom the start\n"
    assert items[2].raw.endswith(b"third\n")


def test_ingest_timing_uses_our_clock(app: App, clock: FixedClock) -> None:
    _sent_day(app, clock)
    clock.advance(timedelta(hours=1))
    mid, subject, _ = _first_sent(app, PRIYA, REPORTS)
    ingest_raw(app, _mail(PRIYA, f"Re: {subject}", "ok\n", in_reply_to=mid), "test")
    with app.uow() as uow:
        assert uow.session.scalars(select(m.Reply.received_at)).one() == clock.now()


def test_a_left_the_company_notice_holds_the_lead_and_names_the_new_contact(
    app: App, clock: FixedClock
) -> None:
    _sent_day(app, clock)
    mid, subject, _ = _first_sent(app, MARC, REPORTS)
    notice = _mail(
        MARC,
        f"Automatic reply: {subject}",
        "Marc Keller is no longer with Brightline Logistics. This mailbox is not monitored.\n"
        "Please contact Vera Brandt at vera.brandt@brightline-logistics.test instead.\n",
        in_reply_to=mid,
        headers={"Auto-Submitted": "auto-replied"},
    )
    result = ingest_raw(app, notice, "test")
    assert result.kind == "auto_reply"
    assert lead_state(app, MARC, REPORTS) == "held"
    with app.uow() as uow:
        payload = uow.session.scalars(select(m.Notice.payload)).one()
        thread = uow.session.execute(
            select(m.RescueThread.kind, m.RescueThread.state, m.RescueThread.next_step)
        ).one()
    assert payload["new_contact"] == "vera.brandt@brightline-logistics.test"
    assert (thread.kind, thread.state) == ("left_company", "open")
    assert "vera.brandt@brightline-logistics.test" in thread.next_step


def test_an_absence_past_the_pause_limit_opens_a_thread_for_a_person(app: App, clock: FixedClock) -> None:
    _sent_day(app, clock)
    mid, subject, _ = _first_sent(app, MARC, REPORTS)
    back = (clock.now() + timedelta(days=120)).date()  # the default limit is 60 days
    notice = _mail(
        MARC,
        f"Out of office: {subject}",
        f"I am on parental leave until {back:%d %B %Y} and will not read email.\n",
        in_reply_to=mid,
        headers={"Auto-Submitted": "auto-replied", "X-Autoreply": "yes"},
        when=clock,
    )
    result = ingest_raw(app, notice, "test")
    assert result.kind == "out_of_office", result.evidence
    assert lead_state(app, MARC, REPORTS) == "held"
    with app.uow() as uow:
        threads = uow.session.execute(select(m.RescueThread.kind, m.RescueThread.state)).all()
    # One thread per product of hers that now waits for a person (the absence is hers).
    assert threads and {tuple(t) for t in threads} == {(ThreadKind.LONG_ABSENCE.value, "open")}
