"""Issue 7, item 9: who is speaking decides what a message may do.

- A known lead answering inside another lead's thread is HER reply (before: the thread's
  lead was stopped and she kept getting follow-ups); the thread's lead is held for a person.
- A stranger in a lead's thread stops that lead but is never learned as her address and
  never unsubscribes or suppresses her without a person (before: all three, for good).
- Mail from her known address that fails authentication never unsubscribes her on its own.
- An encoded display name holding a lead's address is not the lead.
- The authentication verdict of every message is recorded.
"""

from __future__ import annotations

import base64
import dataclasses

from sqlalchemy import select

from replyguard.adapters.db import models as m
from replyguard.bootstrap import App
from replyguard.domain.clock import FixedClock
from replyguard.service_layer.inbound.ingest import ingest_raw
from replyguard.service_layer.workspace.leads import contact_for_address
from tests.support.identity import (
    AISHA,
    PRIYA,
    effects,
    first_sent,
    raw_mail,
    reply_headers,
    sent_workspace,
)
from tests.support.scenario import FORECASTING, REPORTS, lead_state, run_days, step_counts

STRANGER = "it-helpdesk@mailer.elsewhere.test"
DMARC_FAIL = ("Authentication-Results", "mx.northwind.test; dmarc=fail header.from=fernhollow.test")


@dataclasses.dataclass(frozen=True)
class Pending:
    id: int
    sender: str
    learn_address: bool
    unsubscribe: bool


def _pending(app: App) -> list[Pending]:
    c = m.SenderConfirmation
    with app.uow() as uow:
        rows = uow.session.execute(
            select(c.id, c.sender, c.learn_address, c.unsubscribe).where(c.state == "pending")
        ).all()
    return [Pending(*row) for row in rows]


def test_a_known_lead_in_another_leads_thread_is_her_own_reply(app: App, clock: FixedClock) -> None:
    sent_workspace(app, clock)
    priyas = first_sent(app, PRIYA, REPORTS)
    # Priya forwarded our email to Aisha (another of our leads), who answers in Priya's thread.
    result = ingest_raw(
        app,
        raw_mail(
            reply_headers(f"Aisha Khan <{AISHA}>", f"Re: {priyas.subject}", in_reply_to=priyas.message_id),
            "Priya passed this on. We'd like a demo.\n",
        ),
        "imap",
    )
    assert result.status == "matched" and "match:another-lead-in-thread" in result.evidence
    assert lead_state(app, AISHA, REPORTS) == "replied"  # her reply: her follow-ups stop
    assert lead_state(app, PRIYA, REPORTS) == "held"  # the conversation is probably taken
    assert lead_state(app, PRIYA, FORECASTING) == "active"
    run_days(app, clock, 6)
    assert step_counts(app, AISHA, REPORTS).get("sent") == 1
    assert step_counts(app, PRIYA, REPORTS).get("sent") == 1
    with app.uow() as uow:
        assert contact_for_address(uow, AISHA).id != contact_for_address(uow, PRIYA).id  # type: ignore[union-attr]
        kinds = set(uow.session.scalars(select(m.Notice.kind)))
    assert {"human_reply", "thread_taken"} <= kinds


def test_a_stranger_in_her_thread_stops_her_but_unsubscribes_no_one_until_confirmed(
    app: App, clock: FixedClock
) -> None:
    sent_workspace(app, clock)
    first = first_sent(app, PRIYA, REPORTS)
    before = effects(app)
    result = ingest_raw(
        app,
        raw_mail(
            reply_headers(STRANGER, f"Re: {first.subject}", in_reply_to=first.message_id),
            "Please unsubscribe me from this list.\n",
        ),
        "imap",
    )
    assert (result.status, result.kind) == ("matched", "unsubscribe")
    assert lead_state(app, PRIYA, REPORTS) == "replied"  # stopped: safe
    assert step_counts(app, PRIYA, REPORTS) == {"sent": 1, "cancelled": 2}
    assert lead_state(app, PRIYA, FORECASTING) == "active"  # not unsubscribed everywhere
    after = effects(app)
    assert after.suppressions == before.suppressions and after.addresses == before.addresses
    [pending] = _pending(app)
    assert (pending.sender, pending.learn_address, pending.unsubscribe) == (STRANGER, True, True)
    with app.uow() as uow:  # her rescue thread asks a person, and its notice goes to the owner
        thread = uow.session.scalars(
            select(m.RescueThread).where(m.RescueThread.kind == "confirm_sender")
        ).one()
        assert {"confirm_sender", "reject_sender"} <= set(thread.actions)
        assert STRANGER in (thread.next_step or "")
        assert uow.session.scalars(select(m.Notice).where(m.Notice.thread_id == thread.id)).all()
        thread_id = thread.id

    from replyguard.service_layer.inbound.confirmations import (
        confirm_sender,  # new: tests run on old code too
    )
    from replyguard.service_layer.rescue.decisions import Request, decide

    with app.uow() as uow:  # a person confirms on the thread: now it is hers, and it unsubscribes her
        decide(uow, thread_id, Request("confirm_sender", by="dana@northwind-analytics.test"), app.settings)
        uow.commit()
    assert lead_state(app, PRIYA, FORECASTING) == "unsubscribed"
    with app.uow() as uow:
        suppressed = set(uow.session.scalars(select(m.Suppression.address)))
        assert contact_for_address(uow, STRANGER).id == contact_for_address(uow, PRIYA).id  # type: ignore[union-attr]
    assert {PRIYA, STRANGER} <= suppressed
    with app.uow() as uow:  # deciding twice changes nothing
        assert confirm_sender(uow, pending.id, app.settings, by="x") is None
        uow.commit()


def test_a_rejected_stranger_is_never_learned_and_unsubscribes_no_one(app: App, clock: FixedClock) -> None:
    sent_workspace(app, clock)
    first = first_sent(app, PRIYA, REPORTS)
    ingest_raw(
        app,
        raw_mail(
            reply_headers(STRANGER, f"Re: {first.subject}", in_reply_to=first.message_id), "Remove me.\n"
        ),
        "imap",
    )
    [pending] = _pending(app)
    from replyguard.service_layer.inbound.confirmations import reject_sender

    with app.uow() as uow:
        reject_sender(uow, pending.id, by="dana@northwind-analytics.test")
        uow.commit()
    assert _pending(app) == []
    assert lead_state(app, PRIYA, FORECASTING) == "active"
    with app.uow() as uow:
        assert contact_for_address(uow, STRANGER) is None
        assert uow.session.scalars(select(m.Suppression)).all() == []


def test_her_address_failing_authentication_does_not_unsubscribe_her_on_its_own(
    app: App, clock: FixedClock
) -> None:
    sent_workspace(app, clock)
    result = ingest_raw(
        app,
        raw_mail(reply_headers(PRIYA, "unsubscribe", extra=[DMARC_FAIL]), "Please unsubscribe me.\n"),
        "webhook",
    )
    assert result.kind == "unsubscribe" and "auth:fail" in result.evidence
    assert lead_state(app, PRIYA, REPORTS) == "replied"  # stopped
    assert lead_state(app, PRIYA, FORECASTING) == "active"  # but not unsubscribed everywhere
    [pending] = _pending(app)
    assert (pending.learn_address, pending.unsubscribe) == (False, True)
    with app.uow() as uow:
        assert uow.session.scalars(select(m.Suppression)).all() == []


def test_a_stranger_never_learns_one_of_our_mailboxes(app: App, clock: FixedClock) -> None:
    sent_workspace(app, clock)
    first = first_sent(app, PRIYA, FORECASTING)  # from sam@
    # Dana (our Reports mailbox) answers inside Sam's thread: that is our own mail.
    dana = "dana+sales@northwind-analytics.test"
    result = ingest_raw(app, raw_mail(reply_headers(dana, "Re: x", in_reply_to=first.message_id)), "imap")
    assert result.status == "ours"
    assert _pending(app) == [] and lead_state(app, PRIYA, FORECASTING) == "active"


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def test_an_encoded_display_name_holding_a_leads_address_is_not_the_lead(app: App, clock: FixedClock) -> None:
    sent_workspace(app, clock)
    for n, sender in enumerate(
        [
            f"=?utf-8?b?{_b64(PRIYA)}?= <intruder@elsewhere.test>",
            f"=?utf-8?q?{PRIYA}?= <intruder@elsewhere.test>",
            f"=?utf-8?b?{_b64('Priya Raman <' + PRIYA + '>')}?= <intruder@elsewhere.test>",
            f"{PRIYA} <intruder@elsewhere.test>",
        ]
    ):
        result = ingest_raw(
            app,
            raw_mail(reply_headers(sender, "hello", message_id=f"<spoof-{n}@x.test>"), "Stop emailing me.\n"),
            "imap",
        )
        assert result.status == "unmatched", sender
    assert lead_state(app, PRIYA, REPORTS) == "active"
    with app.uow() as uow:
        assert set(uow.session.scalars(select(m.InboundMessage.sender))) == {"intruder@elsewhere.test"}


def test_the_authentication_verdict_of_every_message_is_recorded(app: App, clock: FixedClock) -> None:
    app.settings = dataclasses.replace(app.settings, authserv_ids=("mx.northwind.test",))
    sent_workspace(app, clock)
    first = first_sent(app, PRIYA, REPORTS)
    trusted = ("Authentication-Results", "mx.northwind.test; dkim=pass header.d=fernhollow.test")
    forged = ("Authentication-Results", "mx.northwind.test.evil; dmarc=fail header.from=fernhollow.test")
    result = ingest_raw(
        app,
        raw_mail(
            reply_headers(
                PRIYA, f"Re: {first.subject}", in_reply_to=first.message_id, extra=[forged, trusted]
            )
        ),
        "imap",
    )
    with app.uow() as uow:
        auth, sender = uow.session.execute(
            select(m.InboundMessage.auth, m.InboundMessage.sender).where(
                m.InboundMessage.id == result.inbound_id
            )
        ).one()
    assert auth == {
        "verdict": "pass",
        "domain": "fernhollow.test",
        "authserv_id": "mx.northwind.test",
        "dmarc": None,
        "dkim": "pass",
        "spf": None,
    }
    assert sender == PRIYA


def test_a_confirmation_never_learns_an_address_that_became_one_of_our_mailboxes(
    app: App, clock: FixedClock
) -> None:
    from replyguard.service_layer.inbound.confirmations import confirm_sender
    from replyguard.service_layer.workspace.campaigns import create_campaign
    from tests.support.scenario import campaign_toml

    sent_workspace(app, clock)
    first = first_sent(app, PRIYA, REPORTS)
    newcomer = "lee@northwind-analytics.test"  # not ours yet when the message came
    ingest_raw(app, raw_mail(reply_headers(newcomer, "Re: x", in_reply_to=first.message_id)), "imap")
    [pending] = _pending(app)
    with app.uow() as uow:
        create_campaign(uow, campaign_toml("Lee's campaign", "P", mailbox=newcomer))
        confirm_sender(uow, pending.id, app.settings, by="dana@northwind-analytics.test")
        uow.commit()
    with app.uow() as uow:
        assert contact_for_address(uow, newcomer) is None


def test_control_characters_in_the_from_and_authentication_results_are_stored_safely(
    app: App, clock: FixedClock
) -> None:
    # PostgreSQL cannot store a NUL in text: the new columns (sender, verdict) must never
    # carry one, or this message would block the queue behind it.
    sent_workspace(app, clock)
    raw = raw_mail(
        [
            ("From", "Priya <pri\x00ya@fernhollow.test>"),
            ("To", "dana@northwind-analytics.test"),
            ("Subject", "hello"),
            ("Message-ID", "<nul-1@c.test>"),
            ("Authentication-Results", "mx\x00.test; dmarc=fail\x00 header.from=fernhollow.test\x01"),
        ]
    )
    result = ingest_raw(app, raw, "imap")
    assert result.status == "unmatched"
    with app.uow() as uow:
        sender, auth = uow.session.execute(
            select(m.InboundMessage.sender, m.InboundMessage.auth).where(
                m.InboundMessage.id == result.inbound_id
            )
        ).one()
    assert sender is None and auth is not None and "\x00" not in str(auth)
