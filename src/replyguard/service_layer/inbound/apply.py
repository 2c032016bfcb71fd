"""One classified inbound message, applied: who speaks decides what it may do.

Called by `ingest.process_stored` inside its transaction, after the message was parsed and
classified. In order:

1. **Authentication**: the receiving side's verdict for the From domain, recorded on the row.
2. **Match** (service_layer/inbound/matching.py): ours, suspect, matched, probable or unmatched.
3. **One effect per reply** (service_layer/inbound/effects.py): a copy of a message already applied
   (same Message-ID and sender, whatever the transport did to its bytes) is stored as a
   `duplicate` pointing at the first.
4. **Effect**:
   - `ours` (our own sent mail read back): recorded, nothing else — no lead, no notice.
   - `suspect` (claims our mailbox, fails authentication): kept for a person in the inbound
     list; it changes no lead.
   - a message written before our first email to the lead (reply_policy.predates_first_send)
     only informs: an event on her timeline, status `history`.
   - `matched`: the reply transaction. What the message proves (domain/trust.py: bound to
     an email we sent, or authenticated for her domain) decides whether an unsubscribe, a
     hard bounce or a pause applies whole; without proof the lead stops or is held, and the
     rest — with learning a stranger's address — waits for a person (confirmations.py).
     Another known lead answering in her thread: that lead's reply; the thread's lead is held
     for a person (the conversation is probably taken by her colleague).
   - `probable`: the candidate leads are held for a person.
"""

from __future__ import annotations

from dataclasses import dataclass
from email.message import EmailMessage

from sqlalchemy import bindparam, func, select

from replyguard.adapters.db import models as m
from replyguard.domain.addresses import domain_of
from replyguard.domain.authentication import AuthVerdict, judge
from replyguard.domain.inbound.classify import Classification
from replyguard.domain.inbound.status import channel_of, is_replayed
from replyguard.domain.inbound.storable import storable_text
from replyguard.domain.next_step import ThreadKind
from replyguard.domain.reply_policy import predates_first_send
from replyguard.domain.states import Actor, ReplyKind, ReplyState, check_reply_move
from replyguard.domain.trust import Proof, explain, is_aligned, permits
from replyguard.service_layer.inbound.confirmations import learnable, request_confirmation
from replyguard.service_layer.inbound.effects import claim_effect, effect_key, holder_params, wait_for_copies
from replyguard.service_layer.inbound.matching import Match, match_message, recipients_of
from replyguard.service_layer.inbound.replies import (
    SOFT_BOUNCE_LIMIT,
    IncomingReply,
    hold_probable,
    record_reply,
    soft_bounces_of,
)
from replyguard.service_layer.inbound.stored import InboundRow
from replyguard.service_layer.rescue import threads
from replyguard.service_layer.runtime import Runtime
from replyguard.service_layer.uow import UnitOfWork

_PERSON_KINDS = (ReplyKind.HUMAN_REPLY, ReplyKind.UNSUBSCRIBE)


@dataclass(frozen=True, slots=True)
class Applied:
    lead_ids: tuple[int, ...]
    evidence: tuple[str, ...]


def apply_inbound(
    uow: UnitOfWork, app: Runtime, row: InboundRow, msg: EmailMessage, c: Classification
) -> Applied:
    """Decide and apply the whole effect of one stored message; sets its status. No commit."""
    verdict = judge(
        [str(v) for v in msg.get_all("authentication-results") or []],
        domain_of(c.from_address or ""),
        app.settings.authserv_ids,
    )
    # The row's columns set here are written by one UPDATE before the commit
    # (stored.write_outcome): none of these reads looks at this row's own columns.
    row.sender, row.auth = (c.from_address or "").lower()[:320] or None, verdict.to_json()
    recipients = [storable_text(r, 320)[0] for r in recipients_of(msg)]
    # One effect per reply (effects.py): a copy being processed at the same moment is waited
    # for before matching, whose thread read also finds a copy that took the key before.
    key = effect_key(c.message_id, c.from_address, verdict.verdict)
    wait_for_copies(uow, row, key)
    match = match_message(uow, c, recipients, c.subject, verdict.verdict, holder_params(key, row.id))
    kind = match.kind_override or c.kind
    evidence = (*c.evidence, *match.evidence, f"auth:{verdict.verdict}")
    row.kind, row.processed_at = kind, uow.clock.now()
    earlier = claim_effect(uow, row, key, match.status, match.holder)
    if earlier is not None:
        row.status, row.duplicate_of, row.lead_id = "duplicate", earlier.id, earlier.lead_id
        uow.add_event("inbound_duplicate", lead_id=earlier.lead_id, inbound_id=row.id, first=earlier.id)
        leads = (earlier.lead_id,) if earlier.lead_id else ()
        return Applied(leads, (*evidence, f"duplicate-of:{earlier.id}"))
    if match.status in ("ours", "suspect"):
        row.status = match.status
        uow.add_event(f"inbound_{match.status}", inbound_id=row.id, sender=c.from_address, evidence=evidence)
        return Applied((), evidence)
    if is_replayed(row.source) and match.lead_ids:
        # Old mail read again under a new UIDVALIDITY: it only informs (domain/inbound/status.py).
        return _inform(uow, row, c, match.lead_ids, kind, evidence)
    if match.status == "matched":
        return _apply_matched(uow, app, row, c, match, kind, verdict, evidence)
    if match.status == "probable" and kind in _PERSON_KINDS:
        return _hold_probable(uow, app, row, c, match, kind, evidence)
    row.status = "unmatched"
    uow.add_event("inbound_unmatched", inbound_id=row.id, kind=kind, sender=c.from_address)
    return Applied(match.lead_ids, evidence)


def _apply_matched(
    uow: UnitOfWork,
    app: Runtime,
    row: InboundRow,
    c: Classification,
    match: Match,
    kind: ReplyKind,
    verdict: AuthVerdict,
    evidence: tuple[str, ...],
) -> Applied:
    lead_id = match.lead_ids[0]
    if match.thread_lead_id is not None:  # two leads: lock both now, in id order
        uow.lock_leads([lead_id, match.thread_lead_id])
    if _predates(uow, row, c, lead_id, in_thread=match.in_thread):
        applied = _inform(uow, row, c, (lead_id,), kind, evidence)
    else:
        applied = _record(uow, app, row, c, match, kind, verdict, evidence)
    if match.thread_lead_id is not None and kind in _PERSON_KINDS:
        _hold_thread_lead(uow, app, match.thread_lead_id, lead_id, c.from_address or "", row.id)
    return applied


def _record(
    uow: UnitOfWork,
    app: Runtime,
    row: InboundRow,
    c: Classification,
    match: Match,
    kind: ReplyKind,
    verdict: AuthVerdict,
    evidence: tuple[str, ...],
) -> Applied:
    lead_id = match.lead_ids[0]
    sender = (_speaker_address(c) or c.from_address) or ""
    # Only soft bounces that speak about the recipient add up (bounce_policy.escalates): a
    # delay, a temporary failure or a problem of OUR sending never suppresses the address.
    counts = kind is ReplyKind.BOUNCE_SOFT and c.bounce is not None and c.bounce.counts_toward_hard
    if counts and soft_bounces_of(uow, sender) + 1 >= SOFT_BOUNCE_LIMIT:
        kind, evidence = ReplyKind.BOUNCE_HARD, (*evidence, f"bounce:soft-repeated-{SOFT_BOUNCE_LIMIT}")
        row.kind = kind
    # THE trust decision (domain/trust.py): what this message proves decides whether its
    # effect applies whole, or only its safe half while a person confirms the rest.
    aligned = any(
        is_aligned(
            verdict.domain,
            verdict.verdict,
            trusted_header=bool(app.settings.authserv_ids),
            lead_domain=domain_of(address),
            report=c.bounce is not None or c.complaint is not None,
        )
        for address in (match.addresses if match.addresses is not None else _lead_addresses(uow, lead_id))
    )
    proof = Proof(
        binding=match.binding, verdict=verdict.verdict, aligned=aligned, sender_known=match.sender_known
    )
    proven = permits(kind, proof)
    evidence = (*evidence, *proof.evidence())
    outcome = record_reply(
        uow,
        lead_id,
        IncomingReply(
            kind=kind,
            # Our clock, not the sender's Date header: "crossed" sends are measured against
            # the moment the reply reached us, and a Date header can say anything.
            received_at=row.received_at,
            return_date=c.return_date,
            text=c.reply_text[:20000],
            subject=c.subject[:1000],
            from_address=sender.lower() or None,
            evidence=evidence,
            source=channel_of(row.source),
            inbound_message_id=row.id,
            left_company=c.left_company,
            new_contact=c.new_contact,
            sender_confirmed=proven,
            references=tuple(r for r in (c.in_reply_to, *c.references) if r),
            bounce_reason=c.bounce.reason if c.bounce else None,
            bounce_counts=counts if kind is ReplyKind.BOUNCE_SOFT else None,
            reads_as_person=c.reads_as_person and match.in_thread,
        ),
        app.settings,
        app.hooks,
    )
    # A complaint's From is the provider's: never an address of hers to learn.
    learn = (
        kind in _PERSON_KINDS
        and not match.sender_known
        and c.complaint is None
        and learnable(uow, c.from_address) is not None
    )
    held = not proven and (
        kind in (ReplyKind.UNSUBSCRIBE, ReplyKind.BOUNCE_HARD)
        or (kind is ReplyKind.OUT_OF_OFFICE and outcome.lead_state == ReplyState.HELD)
    )
    if learn or held:
        auth = _verdict_text(verdict)
        why = explain(kind, proof, c.from_address or "", auth)
        request_confirmation(
            uow,
            app.settings,
            lead_id,
            inbound_id=row.id,
            reply_id=outcome.reply_id,
            sender=c.from_address or "",
            learn_address=learn,
            unsubscribe=held and kind is ReplyKind.UNSUBSCRIBE,
            why=why,
        )
        if held:
            uow.add_event("inbound_unproven", lead_id=lead_id, inbound_id=row.id, kind=kind, why=why)
    row.status, row.lead_id = "matched", lead_id
    return Applied((lead_id,), evidence)


def _verdict_text(verdict: AuthVerdict) -> str:
    """The verdict as a person reads it: `fail for attacker.example (dmarc=fail)`."""
    named = (("dmarc", verdict.dmarc), ("dkim", verdict.dkim), ("spf", verdict.spf))
    parts = [f"{name}={value}" for name, value in named if value]
    detail = f" ({', '.join(parts)})" if parts else ""
    trusted = "" if verdict.authserv_id is None else f" by {verdict.authserv_id or 'an unnamed server'}"
    return f"{verdict.verdict} for {verdict.domain or 'no domain'}{detail}{trusted}"


def _speaker_address(c: Classification) -> str | None:
    """The address a report is about: the one that bounced, or the one that complained (the
    report's own From is the provider's)."""
    if c.bounce is not None and c.bounce.recipient:
        return c.bounce.recipient
    if c.complaint is not None and c.complaint.recipient:
        return c.complaint.recipient
    return None


def _hold_probable(
    uow: UnitOfWork,
    app: Runtime,
    row: InboundRow,
    c: Classification,
    match: Match,
    kind: ReplyKind,
    evidence: tuple[str, ...],
) -> Applied:
    candidates = tuple(lead for lead in match.lead_ids if not _predates(uow, row, c, lead, in_thread=False))
    if not candidates:
        return _inform(uow, row, c, match.lead_ids, kind, evidence)
    hold_probable(
        uow,
        candidates,
        inbound_id=row.id,
        sender=c.from_address or "",
        subject=c.subject,
        text=c.reply_text,
        why=", ".join(match.evidence),
        settings=app.settings,
        received_at=row.received_at,
    )
    row.status = "probable"
    return Applied(candidates, evidence)


def _predates(uow: UnitOfWork, row: InboundRow, c: Classification, lead_id: int, *, in_thread: bool) -> bool:
    if in_thread:  # answers our email: written after it, whatever else is true
        return False
    first = uow.session.scalar(
        select(func.min(m.OutboundMessage.handed_at)).where(
            m.OutboundMessage.workspace_id == uow.workspace_id, m.OutboundMessage.lead_id == lead_id
        )
    )
    return predates_first_send(
        written_at=c.date, first_sent_at=first, in_thread=in_thread, history=row.history
    )


def _inform(
    uow: UnitOfWork,
    row: InboundRow,
    c: Classification,
    lead_ids: tuple[int, ...],
    kind: ReplyKind,
    evidence: tuple[str, ...],
) -> Applied:
    """Written before our first email to the lead: on her timeline, and nothing more."""
    for lead_id in lead_ids:
        uow.add_event(
            "inbound_predates_first_send",
            lead_id=lead_id,
            inbound_id=row.id,
            kind=kind,
            sender=c.from_address,
            date=c.date.isoformat() if c.date else None,
            history=row.history,
        )
    row.status, row.lead_id = "history", lead_ids[0] if len(lead_ids) == 1 else None
    return Applied(lead_ids, (*evidence, "history:predates-first-send"))


def _hold_thread_lead(
    uow: UnitOfWork, app: Runtime, lead_id: int, speaker_lead: int, sender: str, inbound_id: int
) -> None:
    """Another lead answered in this lead's thread: the conversation is probably taken, so
    this lead sends nothing more until a person decides (held, steps waiting, a thread)."""
    lead = uow.session.get_one(m.Lead, lead_id, populate_existing=True)
    before = lead.reply_state
    held = before in (ReplyState.ACTIVE, ReplyState.OUT_OF_OFFICE)
    reason = f"{sender}, another of our leads, answered in this lead's thread"
    if held:
        check_reply_move(ReplyState(before), ReplyState.HELD, Actor.SYSTEM)
        lead.reply_state, lead.reply_state_updated_at = ReplyState.HELD, uow.clock.now()
        lead.hold_reason = reason
    uow.add_event(
        "thread_taken", lead_id=lead_id, by_lead=speaker_lead, sender=sender, inbound_id=inbound_id, held=held
    )
    if held:
        threads.open_thread(
            uow.session,
            workspace_id=uow.workspace_id,
            now=uow.clock.now(),
            lead_id=lead_id,
            handoff=threads.Handoff(
                kind=ThreadKind.THREAD_TAKEN,
                reason=reason,
                inbound_message_id=inbound_id,
                sender=sender,
                state_before=before,
            ),
            settings=app.settings,
        )


#: Every address of a lead's contact, the primary first (bound: lead, workspace).
_LEAD_ADDRESSES = (
    select(m.ContactAddress.address)
    .join(m.Lead, m.Lead.contact_id == m.ContactAddress.contact_id)
    .where(m.Lead.id == bindparam("lead"), m.Lead.workspace_id == bindparam("workspace"))
    .order_by(m.ContactAddress.is_primary.desc(), m.ContactAddress.id)
)


def _lead_addresses(uow: UnitOfWork, lead_id: int) -> list[str]:
    """Every address of the lead's contact, the primary first (`contact_addresses` by lead)."""
    return list(uow.session.scalars(_LEAD_ADDRESSES, {"lead": lead_id, "workspace": uow.workspace_id}))
