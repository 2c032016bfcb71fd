"""Issue 22, items 1 and 6: an attacker's mailbox. Anyone can send us mail that names a lead;
only mail bound to an email we sent, or authenticated for her own domain (her provider's,
for a bounce or complaint), may suppress, unsubscribe, bounce or pause her.

Each forged shape — a bounce, a spam complaint (ARF), a "please remove me" with her From,
a fake out-of-office, mail to our unsubscribe address with a made-up token — is sent with
each Authentication-Results verdict: pass aligned (by a trusted authserv-id), pass for the
attacker's own domain, fail, none, and no header at all. Before issue 22 the bounce
suppressed her, the complaint from a domain passing DMARC for itself unsubscribed her, the
forged From unsubscribed or paused every product. Now: the lead stops or is held, nothing is
suppressed, and a thread asks a person, with the authentication verdict. Bound messages —
our Message-ID inside, or sent to our signed return path (VERP) — still act at once.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import func, select

from replyguard.adapters.db import models as m
from replyguard.bootstrap import App
from replyguard.domain.clock import FixedClock
from replyguard.service_layer.inbound.confirmations import confirm_sender, pending_confirmations
from replyguard.service_layer.inbound.ingest import ingest_raw
from tests.support.identity import (
    AISHA,
    DANA,
    MARC,
    PRIYA,
    first_sent,
    outbox_messages,
    raw_mail,
    sent_workspace,
)
from tests.support.scenario import FORECASTING, REPORTS, lead_state, run_days, step_counts

TRUSTED_ID = "mx.northwind.test"  # our receiving MTA: its headers cannot be forged
ATTACKER = "attacker.example"
VERDICTS = ("pass-aligned", "pass-unaligned", "fail", "none", "absent")
SHAPES = ("bounce", "complaint", "remove-me", "out-of-office", "unsubscribe-address")
_IDS = itertools.count()


def _domain(address: str) -> str:
    return address.rpartition("@")[2]


def _from_of(shape: str, victim: str, verdict: str) -> str:
    """The attacker's From: their own domain, or — only for `pass-aligned`, which a real
    pass by our MTA proves they control — the victim's (or, for reports, her MX host's)."""
    own = verdict == "pass-aligned"
    if shape == "bounce":
        return f"MAILER-DAEMON@mx.{_domain(victim)}" if own else f"MAILER-DAEMON@relay.{ATTACKER}"
    if shape == "complaint":
        return f"abuse@{_domain(victim)}" if own else f"abuse@{ATTACKER}"
    return victim  # a forged From: her own address


def _auth(verdict: str, from_address: str, authserv: str = TRUSTED_ID) -> list[tuple[str, str]]:
    domain = _domain(from_address)
    results = {
        "pass-aligned": f"dmarc=pass header.from={domain}",
        "pass-unaligned": f"dmarc=pass header.from={ATTACKER}",
        "fail": f"dmarc=fail header.from={domain}",
        "none": f"dmarc=none header.from={domain}",
    }
    if verdict == "absent":
        return []
    return [("Authentication-Results", f"{authserv}; {results[verdict]}")]


def forged(
    shape: str, victim: str, verdict: str, *, n: int = 0, authserv: str = TRUSTED_ID, to: str = DANA
) -> bytes:
    sender = _from_of(shape, victim, verdict)
    head = [*_auth(verdict, sender, authserv), ("From", sender), ("Message-ID", f"<forged-{n}@{ATTACKER}>")]
    if shape == "bounce":
        return raw_mail(
            [
                *head,
                ("To", to),
                ("Subject", "Undelivered Mail Returned to Sender"),
                ("Auto-Submitted", "auto-replied"),
                ("MIME-Version", "1.0"),
                ("Content-Type", 'multipart/report; report-type=delivery-status; boundary="B"'),
            ],
            "--B\nContent-Type: text/plain\n\nYour message could not be delivered.\n\n"
            "--B\nContent-Type: message/delivery-status\n\nReporting-MTA: dns; relay.attacker.example\n\n"
            f"Final-Recipient: rfc822; {victim}\nAction: failed\nStatus: 5.1.1\n"
            "Diagnostic-Code: smtp; 550 5.1.1 User unknown\n\n"
            "--B\nContent-Type: text/rfc822-headers\n\n"
            f"From: {DANA}\nTo: {victim}\nSubject: hello\nMessage-ID: <made-up-{n}@{ATTACKER}>\n\n--B--\n",
        )
    if shape == "complaint":
        return raw_mail(
            [
                *head,
                ("To", to),
                ("Subject", "FW: abuse report"),
                ("MIME-Version", "1.0"),
                ("Content-Type", 'multipart/report; report-type=feedback-report; boundary="F"'),
            ],
            "--F\nContent-Type: text/plain\n\nThis is an abuse report.\n\n"
            "--F\nContent-Type: message/feedback-report\n\nFeedback-Type: abuse\n"
            f"User-Agent: SomeGenerator/1.0\nVersion: 1\nOriginal-Rcpt-To: <{victim}>\n\n"
            "--F\nContent-Type: text/rfc822-headers\n\n"
            f"From: {DANA}\nTo: {victim}\nSubject: hello\nMessage-ID: <made-up-{n}@{ATTACKER}>\n\n--F--\n",
        )
    if shape == "out-of-office":
        return raw_mail(
            [*head, ("To", to), ("Subject", "Out of Office"), ("Auto-Submitted", "auto-replied")],
            "I am out of the office until 18 December 2026 with no access to email.\n",
        )
    if shape == "unsubscribe-address":
        local, _, domain = to.partition("@")
        return raw_mail(
            [
                *head,
                ("To", f"{local}+unsubscribe-{'0' * 32}.{'f' * 20}@{domain}"),
                ("Subject", "unsubscribe"),
            ],
            "unsubscribe\n",
        )
    return raw_mail([*head, ("To", to), ("Subject", "Remove me")], "Please remove me from your list.\n")


@dataclasses.dataclass(frozen=True)
class Harm:
    """Everything irreversible a message could have done, counted across the workspace."""

    suppressions: int
    unsubscribed_or_bounced: int
    paused: int

    @property
    def none(self) -> bool:
        return self == Harm(0, 0, 0)


def harm(app: App) -> Harm:
    with app.uow() as uow:
        suppressions = uow.session.scalar(select(func.count()).select_from(m.Suppression)) or 0
        states = dict(
            uow.session.execute(select(m.Lead.reply_state, func.count()).group_by(m.Lead.reply_state)).all()
        )
    return Harm(
        suppressions, states.get("unsubscribed", 0) + states.get("bounced", 0), states.get("out_of_office", 0)
    )


def pending_reasons(app: App) -> list[str]:
    with app.uow() as uow:
        c = m.SenderConfirmation
        return list(uow.session.scalars(select(c.reason).where(c.state == "pending").order_by(c.id)))


def _trusting(app: App) -> App:
    app.settings = dataclasses.replace(app.settings, authserv_ids=(TRUSTED_ID,))
    return app


@pytest.mark.parametrize("verdict", [v for v in VERDICTS if v != "pass-aligned"])
@pytest.mark.parametrize("shape", SHAPES)
def test_an_unproven_message_harms_no_one_and_asks_a_person(
    app: App, clock: FixedClock, shape: str, verdict: str
) -> None:
    sent_workspace(_trusting(app), clock)
    result = ingest_raw(app, forged(shape, PRIYA, verdict), "imap")
    assert result.status == "matched", result
    assert harm(app).none, (shape, verdict, harm(app), result.evidence)
    assert lead_state(app, PRIYA, FORECASTING) == "active"  # the other product is untouched
    assert lead_state(app, PRIYA, REPORTS) in ("replied", "held")  # stopped: the safe side
    [reason] = pending_reasons(app)  # a person confirms, seeing the verdict
    assert "authentication:" in reason and ("none" if verdict == "absent" else "") in reason
    with app.uow() as uow:
        thread = uow.session.scalars(
            select(m.RescueThread).where(m.RescueThread.kind == "confirm_sender")
        ).one()
        assert {"confirm_sender", "reject_sender"} <= set(thread.actions)
        assert uow.session.scalars(select(m.Notice).where(m.Notice.thread_id == thread.id)).all()
    run_days(app, clock, 7)  # and nothing more goes out to her in that product meanwhile
    assert step_counts(app, PRIYA, REPORTS).get("sent") == 1


@pytest.mark.parametrize("shape", ["bounce", "complaint", "remove-me"])
def test_a_sender_authenticated_for_her_own_domain_acts_at_once(
    app: App, clock: FixedClock, shape: str
) -> None:
    sent_workspace(_trusting(app), clock)
    result = ingest_raw(app, forged(shape, PRIYA, "pass-aligned"), "imap")
    assert "aligned:yes" in result.evidence
    assert (
        harm(app).suppressions >= 1 and pending_reasons(app) == []
    )  # every address of hers, if unsubscribed


def test_a_pass_in_a_header_we_do_not_trust_grants_nothing(app: App, clock: FixedClock) -> None:
    # Without configured authserv-ids the topmost header is read, and the sender can write it.
    sent_workspace(app, clock)
    ingest_raw(app, forged("bounce", PRIYA, "pass-aligned"), "imap")
    assert harm(app).none and len(pending_reasons(app)) == 1


def test_the_hand_made_bounce_of_the_issue_waits_for_a_person_who_can_confirm_it(
    app: App, clock: FixedClock
) -> None:
    sent_workspace(_trusting(app), clock)
    result = ingest_raw(app, forged("bounce", PRIYA, "fail"), "imap")
    assert (result.kind, "match:bounce-recipient" in result.evidence) == ("bounce_hard", True)
    assert "bound:none" in result.evidence and "aligned:no" in result.evidence
    assert harm(app).none and lead_state(app, PRIYA, REPORTS) == "held"
    [reason] = pending_reasons(app)
    assert f"relay.{ATTACKER}" in reason and "fail" in reason and "dmarc=fail" in reason
    with app.uow() as uow:
        [listed] = pending_confirmations(uow)  # what `replyguard senders list` shows
        assert (listed["held_effect"], listed["unsubscribe"], listed["learn_address"]) == (
            "bounce_hard",
            False,
            False,
        )
        confirm_sender(uow, listed["id"], app.settings, by=DANA)  # a person says it is real
        uow.commit()
    # Suppressed; she has another address, so the lead waits for a person (reply_policy).
    assert lead_state(app, PRIYA, REPORTS) == "held" and harm(app).suppressions == 1


def test_a_fake_out_of_office_pauses_no_product_and_a_person_can_apply_it(
    app: App, clock: FixedClock
) -> None:
    sent_workspace(_trusting(app), clock)
    ingest_raw(app, forged("out-of-office", PRIYA, "none"), "imap")
    assert lead_state(app, PRIYA, REPORTS) == "held" and lead_state(app, PRIYA, FORECASTING) == "active"
    with app.uow() as uow:
        pending = uow.session.scalars(select(m.SenderConfirmation)).one()
        confirm_sender(uow, pending.id, app.settings, by=DANA)
        uow.commit()
    assert lead_state(app, PRIYA, REPORTS) == "out_of_office"


def test_a_bounce_with_our_message_id_still_suppresses_at_once(app: App, clock: FixedClock) -> None:
    sent_workspace(_trusting(app), clock)
    ours = first_sent(app, MARC, REPORTS).message_id
    raw = forged("bounce", MARC, "none").replace(f"<made-up-0@{ATTACKER}>".encode(), ours.encode())
    result = ingest_raw(app, raw, "imap")
    assert "match:bounce-original" in result.evidence and "bound:message-id" in result.evidence
    assert lead_state(app, MARC, REPORTS) == "bounced" and harm(app).suppressions == 1


def test_a_bounce_to_our_signed_return_path_suppresses_without_any_message_id(
    app: App, clock: FixedClock
) -> None:
    from replyguard.domain.message_ids import bounce_address  # new: the suite runs on old code too

    sent_workspace(_trusting(app), clock)
    key = first_sent(app, AISHA, REPORTS).send_key
    with app.uow() as uow:
        secret = uow.session.get_one(m.Workspace, uow.workspace_id).secret
    result = ingest_raw(app, forged("bounce", AISHA, "absent", to=bounce_address(secret, key, DANA)), "imap")
    assert "match:return-path" in result.evidence and "bound:verp" in result.evidence
    assert lead_state(app, AISHA, REPORTS) == "bounced" and harm(app).suppressions == 1


def test_each_email_goes_out_with_its_own_signed_return_path(
    app: App, clock: FixedClock, tmp_path: Path
) -> None:
    # What the worker wrote (the outbox is a Maildir): the bounce to it is bound, with no id.
    sent_workspace(_trusting(app), clock)
    key = first_sent(app, AISHA, REPORTS).send_key
    [sent] = [raw for raw in outbox_messages(tmp_path / "outbox") if key.encode() in raw]
    path = sent.split(b"\r\n", 1)[0].decode()
    assert path.startswith("Return-Path: <dana+bounces-") and key in path
    result = ingest_raw(app, forged("bounce", AISHA, "absent", to=path.split("<")[1].rstrip(">")), "imap")
    assert "bound:verp" in result.evidence and lead_state(app, AISHA, REPORTS) == "bounced"


def test_a_return_path_with_a_made_up_signature_binds_nothing(app: App, clock: FixedClock) -> None:
    sent_workspace(_trusting(app), clock)
    key = first_sent(app, AISHA, REPORTS).send_key
    fake = f"dana+bounces-{key}.{'0' * 20}@northwind-analytics.test"
    ingest_raw(app, forged("bounce", AISHA, "absent", to=fake), "imap")
    assert harm(app).none and lead_state(app, AISHA, REPORTS) == "held"


# Properties: random victims, shapes, verdicts, trusted or untrusted headers, recipients.
PROPERTY_SETTINGS = settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@st.composite
def unproven(draw: st.DrawFn) -> tuple[str, str, str, str]:
    """(shape, victim, verdict, authserv-id): never bound, never a trusted aligned pass."""
    shape = draw(st.sampled_from(SHAPES))
    victim = draw(st.sampled_from([PRIYA, MARC, AISHA, PRIYA.upper()]))
    authserv = draw(
        st.sampled_from([TRUSTED_ID, "mx.attacker.example", "", "mx.northwind.test.attacker.example"])
    )
    verdicts = [v for v in VERDICTS if v != "pass-aligned" or authserv != TRUSTED_ID]
    return shape, victim, draw(st.sampled_from(verdicts)), authserv


@PROPERTY_SETTINGS
@given(
    case=unproven(),
    to=st.sampled_from([DANA, "sam@northwind-analytics.test", "DANA@Northwind-Analytics.test"]),
)
def test_no_unbound_unaligned_message_suppresses_or_unsubscribes_anyone(
    app: App, clock: FixedClock, case: tuple[str, str, str, str], to: str
) -> None:
    with app.uow() as uow:
        built = bool(uow.session.scalar(select(func.count()).select_from(m.Step)))
    if not built:
        sent_workspace(_trusting(app), clock)
    shape, victim, verdict, authserv = case
    raw = forged(shape, victim, verdict, n=next(_IDS), authserv=authserv or TRUSTED_ID, to=to)
    if not authserv:  # a header without any authserv-id
        raw = raw.replace(f"{TRUSTED_ID}; ".encode(), b"")
    ingest_raw(app, raw, "imap")
    assert harm(app).none, (case, harm(app))


def _ses_bounce(victim: str, message_id: str | None) -> bytes:
    mail: dict[str, object] = {"messageId": "0100018c-ses-id"}
    if message_id:
        mail["commonHeaders"] = {"messageId": message_id}
    event = {
        "notificationType": "Bounce",
        "bounce": {
            "bounceType": "Permanent",
            "bouncedRecipients": [
                {"emailAddress": victim, "status": "5.1.1", "diagnosticCode": "smtp; 550 5.1.1"}
            ],
        },
        "mail": mail,
    }
    body = json.dumps({"Type": "Notification", "Message": json.dumps(event)})
    headers = [("From", "no-reply@sns.amazonaws.test"), ("To", DANA), ("Subject", "AWS Notification Message")]
    return raw_mail([*headers, ("Message-ID", f"<sns-{next(_IDS)}@sns.test>")], body)


def test_a_provider_bounce_event_naming_our_email_is_bound_and_one_naming_none_waits(
    app: App, clock: FixedClock
) -> None:
    sent_workspace(_trusting(app), clock)
    result = ingest_raw(app, _ses_bounce(AISHA, None), "imap")  # anyone can write this JSON
    assert result.kind == "bounce_hard" and "bound:none" in result.evidence
    assert harm(app).none and lead_state(app, AISHA, REPORTS) == "held"
    ours = first_sent(app, MARC, REPORTS).message_id
    result = ingest_raw(app, _ses_bounce(MARC, ours), "imap")
    assert "bound:message-id" in result.evidence and lead_state(app, MARC, REPORTS) == "bounced"


def test_an_unproven_message_tells_its_owner_once_and_asks_to_confirm(app: App, clock: FixedClock) -> None:
    sent_workspace(_trusting(app), clock)
    ingest_raw(app, forged("bounce", PRIYA, "none"), "imap")
    with app.uow() as uow:
        kinds = list(uow.session.scalars(select(m.Notice.kind)))
    assert kinds == ["confirm_sender"]  # not also "the address bounced"


def test_a_colleague_authenticated_for_her_domain_in_her_thread_unsubscribes_no_one(
    app: App, clock: FixedClock
) -> None:
    # DMARC passes for fernhollow.test, Priya's domain, but the From is not Priya: her domain
    # is authenticated, she is not.
    sent_workspace(_trusting(app), clock)
    first = first_sent(app, PRIYA, REPORTS)
    colleague = "it-desk@fernhollow.test"
    raw = raw_mail(
        [
            *_auth("pass-aligned", colleague),
            ("From", colleague),
            ("To", DANA),
            ("Subject", f"Re: {first.subject}"),
            ("Message-ID", "<colleague-1@fernhollow.test>"),
            ("In-Reply-To", first.message_id),
        ],
        "Please unsubscribe this address from your list.\n",
    )
    result = ingest_raw(app, raw, "imap")
    assert result.kind == "unsubscribe" and "match:unknown-sender" in result.evidence
    assert harm(app).none and lead_state(app, PRIYA, REPORTS) == "replied"
    assert len(pending_reasons(app)) == 1


def test_an_out_of_office_sent_to_our_return_path_pauses_her_at_once(app: App, clock: FixedClock) -> None:
    # RFC 3834: an auto-responder answers the envelope sender, which names the send.
    from replyguard.domain.message_ids import bounce_address  # new: the suite runs on old code too

    sent_workspace(_trusting(app), clock)
    key = first_sent(app, PRIYA, REPORTS).send_key
    with app.uow() as uow:
        secret = uow.session.get_one(m.Workspace, uow.workspace_id).secret
    raw = forged("out-of-office", PRIYA, "absent", to=bounce_address(secret, key, DANA))
    result = ingest_raw(app, raw, "imap")
    assert (result.kind, "bound:verp" in result.evidence) == ("out_of_office", True)
    assert lead_state(app, PRIYA, REPORTS) == "out_of_office" == lead_state(app, PRIYA, FORECASTING)
    assert pending_reasons(app) == []
