"""Refusals at send time, through a real SMTP server on loopback, on SQLite and PostgreSQL.

* `550 5.1.1` to RCPT: a hard bounce, recorded by the reply transaction's own code: the
  address suppressed, the lead bounced (held when the contact has another address), its
  steps cancelled; never tried again.
* a full mailbox: a soft bounce, tried again a day later; the third counts as hard.
* our own mailbox refused (a wrong password, a refused sender): the mailbox is paused, its
  owner told, nothing more is tried from it until a person resumes it.
"""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import select

from replyguard.adapters.db import models as m
from replyguard.adapters.transports.smtp import SmtpTransport
from replyguard.bootstrap import App
from replyguard.domain.clock import FixedClock
from replyguard.service_layer.sending.worker import Worker
from tests.support.scenario import enroll_all, lead_state
from tests.support.sequences import campaign_file, notices, setup, steps_of
from tests.support.smtp_servers import Behaviour, RecordingSmtpServer, SmtpTestServer

MONDAY_10 = timedelta(hours=4)
ANN = {"email": "ann@corp.test", "first_name": "Ann"}
BOB = {"email": "bob@corp.test", "first_name": "Bob"}


def _hours(app: App, clock: FixedClock, transport: SmtpTransport, days: float) -> None:
    end = clock.now() + timedelta(days=days)
    while clock.now() < end:
        Worker(app, transport).run_once()
        clock.advance(timedelta(hours=1))


def _smtp(server: SmtpTestServer, **options: object) -> SmtpTransport:
    return SmtpTransport(server.url(timeout=5, **options))


def test_an_unknown_user_is_a_hard_bounce_at_send_time(app: App, clock: FixedClock) -> None:
    setup(app, campaign_file("C"), [ANN, BOB])
    enroll_all(app, "C")
    clock.advance(MONDAY_10)
    unknown = {ANN["email"]: Behaviour.REJECT_RCPT}
    with RecordingSmtpServer(by_recipient=unknown.get) as server:
        _hours(app, clock, _smtp(server), days=8)
        refused = server.transactions.count(Behaviour.REJECT_RCPT)
        delivered = {tuple(msg.rcpt_tos) for msg in server.accepted()}
    assert refused == 1  # never tried again: repeated sends to unknown users burn a reputation
    assert delivered == {(BOB["email"],)}  # Bob's three emails went out
    assert lead_state(app, ANN["email"], "P") == "bounced"
    assert [s.state for s in steps_of(app, ANN["email"])] == ["failed", "cancelled", "cancelled"]
    with app.uow() as uow:
        suppressed = uow.session.scalars(select(m.Suppression.address)).all()
        [bounce] = uow.session.scalars(select(m.Reply)).all()
        uow.commit()
    assert suppressed == [ANN["email"]]
    assert (bounce.kind, bounce.source, bounce.from_address) == ("bounce_hard", "smtp", ANN["email"])
    assert "smtp:at-send" in bounce.evidence and "5.1.1" in (bounce.text or "")


def test_a_bounce_at_send_time_holds_a_contact_with_another_address(app: App, clock: FixedClock) -> None:
    setup(app, campaign_file("C"), [{**ANN, "alt_emails": "ann.private@home.test"}])
    enroll_all(app, "C")
    clock.advance(MONDAY_10)
    with RecordingSmtpServer(behaviour=Behaviour.REJECT_RCPT) as server:
        _hours(app, clock, _smtp(server), days=3)
    assert lead_state(app, ANN["email"], "P") == "held"  # a person decides about the other address
    with app.uow() as uow:
        assert uow.session.scalars(select(m.Suppression.address)).all() == [ANN["email"]]


def test_a_full_mailbox_is_a_soft_bounce_and_the_third_counts_as_hard(app: App, clock: FixedClock) -> None:
    setup(app, campaign_file("C"), [ANN])
    enroll_all(app, "C")
    clock.advance(MONDAY_10)
    with RecordingSmtpServer(behaviour=Behaviour.MAILBOX_FULL_RCPT) as server:
        attempts = []
        end = clock.now() + timedelta(days=10)
        while clock.now() < end:  # every 3 hours: each retry is due a day after the last
            before = len(server.transactions)
            Worker(app, _smtp(server)).run_once()
            attempts += [clock.now()] * (len(server.transactions) - before)
            clock.advance(timedelta(hours=3))
    assert len(attempts) == 3  # not 8 retries a step, 24 in all
    assert attempts[1] - attempts[0] >= timedelta(days=1) and attempts[2] - attempts[1] >= timedelta(days=1)
    assert lead_state(app, ANN["email"], "P") == "bounced"
    with app.uow() as uow:
        kinds = uow.session.scalars(select(m.Reply.kind).order_by(m.Reply.id)).all()
    assert kinds == ["bounce_soft", "bounce_soft", "bounce_hard"]


def test_refusals_of_the_address_after_data_are_bounces_too(app: App, clock: FixedClock) -> None:
    # Servers that check recipients only at the end of DATA: an unknown user there is a hard
    # bounce like one at RCPT, a full mailbox a soft one (tried again a day later).
    setup(app, campaign_file("C"), [ANN, BOB])
    enroll_all(app, "C")
    clock.advance(MONDAY_10)
    late = {ANN["email"]: Behaviour.UNKNOWN_USER_END, BOB["email"]: Behaviour.MAILBOX_FULL_END}
    with RecordingSmtpServer(by_recipient=late.get) as server:
        _hours(app, clock, _smtp(server), days=1)
        refused = list(server.transactions)
    assert sorted(refused) == sorted([Behaviour.UNKNOWN_USER_END, Behaviour.MAILBOX_FULL_END])
    assert lead_state(app, ANN["email"], "P") == "bounced"
    assert lead_state(app, BOB["email"], "P") == "active"
    bob_first = steps_of(app, BOB["email"])[0]
    assert bob_first.state == "scheduled" and bob_first.due_at - clock.now() > timedelta(hours=-1)
    with app.uow() as uow:
        suppressed = uow.session.scalars(select(m.Suppression.address)).all()
        kinds = {
            row.from_address: row.kind
            for row in uow.session.execute(select(m.Reply.from_address, m.Reply.kind))
        }
    assert suppressed == [ANN["email"]]
    assert kinds == {ANN["email"]: "bounce_hard", BOB["email"]: "bounce_soft"}


def test_a_refused_sender_pauses_the_mailbox_and_tells_its_owner(app: App, clock: FixedClock) -> None:
    setup(app, campaign_file("C"), [ANN, BOB])
    enroll_all(app, "C")
    clock.advance(MONDAY_10)
    with RecordingSmtpServer(behaviour=Behaviour.REJECT_SENDER) as server:
        _hours(app, clock, _smtp(server), days=3)
        assert server.transactions == [Behaviour.REJECT_SENDER]  # one refusal stops the mailbox
        [told] = notices(app, "mailbox_paused")
        assert told.recipient == "rep@seller.test" and "550 5.7.1" in told.payload["reason"]
        # Nobody's fault but the mailbox's: no lead is held, no step failed, no attempt used.
        assert {lead_state(app, e["email"], "P") for e in (ANN, BOB)} == {"active"}
        assert all(
            s.state == "scheduled" and s.attempts == 0 for e in (ANN, BOB) for s in steps_of(app, e["email"])
        )
        server.behaviour = Behaviour.ACCEPT  # the sender is fixed
        from replyguard.service_layer.workspace.mailboxes import resume_mailbox

        with app.uow() as uow:
            assert resume_mailbox(uow, "rep@seller.test")
            uow.commit()
        _hours(app, clock, _smtp(server), days=6)
        assert len(server.accepted()) == 6


def test_a_wrong_password_pauses_the_mailbox_after_one_try(app: App, clock: FixedClock) -> None:
    setup(app, campaign_file("C"), [ANN, BOB])
    enroll_all(app, "C")
    clock.advance(MONDAY_10)
    with RecordingSmtpServer(auth=("rep", "right")) as server:
        transport = _smtp(server, user="rep", password="wrong")
        Worker(app, transport).run_once()
        tried = len(server.auth_attempts)  # one login (smtplib may try two mechanisms in it)
        assert tried > 0
        _hours(app, clock, transport, days=2)
        assert len(server.auth_attempts) == tried  # not 8 retries for every step of every lead
        assert server.accepted() == []
    with app.uow() as uow:
        mailbox = uow.session.scalars(select(m.Mailbox)).one()
        assert mailbox.status == "paused" and "535" in (mailbox.paused_reason or "")
