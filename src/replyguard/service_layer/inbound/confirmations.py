"""What waits for a person before a sender we cannot tie to a lead may do more than stop her.

A stranger answering in a lead's thread stops that lead at once (safe), but is never learned
as her address and never unsubscribes her or suppresses her addresses on its own; the same
holds for mail from her known address that failed authentication. Those parts wait here, as
one `SenderConfirmation`, and the lead's rescue thread asks for it (`confirm_sender` and
`reject_sender` are decisions on the thread, and `replyguard senders confirm|reject`). Each
decision is one transaction; deciding twice changes nothing the second time.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from replyguard.adapters.db import models as m
from replyguard.domain.addresses import InvalidAddress, base_address, domain_of, normalize_address
from replyguard.domain.next_step import ThreadKind
from replyguard.domain.states import Actor, ReplyKind, ReplyState, check_reply_move
from replyguard.service_layer.hooks import Hooks
from replyguard.service_layer.inbound.matching import is_our_mailbox
from replyguard.service_layer.inbound.replies import IncomingReply, ReplyOutcome, record_reply
from replyguard.service_layer.rescue import threads
from replyguard.service_layer.uow import UnitOfWork
from replyguard.settings import Settings


class ConfirmationNotFound(LookupError):
    pass


def pending_for(uow: UnitOfWork, lead_id: int, inbound_id: int | None) -> int | None:
    """The id of the lead's pending confirmation (for this message when it is given)."""
    query = select(m.SenderConfirmation.id).where(
        m.SenderConfirmation.workspace_id == uow.workspace_id,
        m.SenderConfirmation.lead_id == lead_id,
        m.SenderConfirmation.state == "pending",
    )
    if inbound_id is not None:
        query = query.where(m.SenderConfirmation.inbound_message_id == inbound_id)
    return uow.session.scalar(query.order_by(m.SenderConfirmation.id.desc()).limit(1))


def learnable(uow: UnitOfWork, address: str | None) -> str | None:
    """The normalised address if it could become a contact's address: valid, not one of our
    own mailboxes, and not already some contact's. Else None."""
    try:
        normal = normalize_address(address or "")
    except InvalidAddress:
        return None
    if is_our_mailbox(uow, normal):
        return None
    taken = uow.session.scalar(
        select(m.ContactAddress.id).where(
            m.ContactAddress.workspace_id == uow.workspace_id,
            m.ContactAddress.address.in_({normal, base_address(normal)}),
        )
    )
    return None if taken is not None else normal


def request_confirmation(
    uow: UnitOfWork,
    settings: Settings,
    lead_id: int,
    *,
    inbound_id: int,
    reply_id: int | None,
    sender: str,
    learn_address: bool,
    unsubscribe: bool,
    why: str,
) -> int:
    """Record what a person must confirm, and hand it to a person: the lead's rescue thread
    (opened by the reply this message recorded) asks for the confirmation, and its notice
    goes to the owner. The caller commits."""
    confirmation = m.SenderConfirmation(
        workspace_id=uow.workspace_id,
        lead_id=lead_id,
        inbound_message_id=inbound_id,
        reply_id=reply_id,
        sender=sender[:320],
        learn_address=learn_address,
        unsubscribe=unsubscribe,
        reason=why,
        state="pending",
        created_at=uow.clock.now(),
    )
    uow.session.add(confirmation)
    uow.session.flush()
    threads.open_thread(
        uow.session,
        workspace_id=uow.workspace_id,
        now=uow.clock.now(),
        lead_id=lead_id,
        handoff=threads.Handoff(
            kind=ThreadKind.CONFIRM_SENDER,
            reason=why,
            inbound_message_id=inbound_id,
            sender=sender,
        ),
        settings=settings,
    )
    uow.add_event(
        "sender_confirmation_requested",
        lead_id=lead_id,
        confirmation_id=confirmation.id,
        sender=sender,
        learn_address=learn_address,
        unsubscribe=unsubscribe,
    )
    return confirmation.id


def confirm_sender(
    uow: UnitOfWork,
    confirmation_id: int,
    settings: Settings,
    *,
    by: str,
    hooks: Hooks | None = None,
) -> ReplyOutcome | None:
    """A person says the message is genuine: learn the address (unless it is ours or taken by
    now), and apply the unsubscribe, hard bounce or pause it was held for, in one
    transaction. The caller commits. Returns the outcome of what was applied, if anything."""
    confirmation = _pending(uow, confirmation_id)
    if confirmation is None:
        return None
    uow.lock_leads([confirmation.lead_id])
    if confirmation.learn_address:
        address = learnable(uow, confirmation.sender)
        if address is not None:
            contact_id = uow.session.get_one(m.Lead, confirmation.lead_id).contact_id
            uow.session.add(
                m.ContactAddress(
                    workspace_id=uow.workspace_id,
                    contact_id=contact_id,
                    address=address,
                    domain=domain_of(address),
                    is_primary=False,
                )
            )
            uow.session.flush()
            uow.add_event("alternate_learned", lead_id=confirmation.lead_id, address=address, by=by)
    outcome = _apply_held(uow, confirmation, settings, by=by, hooks=hooks)
    if confirmation.unsubscribe:
        outcome = record_reply(
            uow,
            confirmation.lead_id,
            IncomingReply(
                kind=ReplyKind.UNSUBSCRIBE,
                received_at=uow.clock.now(),
                from_address=confirmation.sender or None,
                evidence=(f"confirmed-by:{by}",),
                source="person",
                inbound_message_id=confirmation.inbound_message_id,
            ),
            settings,
            hooks,
        )
    _decide(uow, confirmation, "confirmed", by)
    return outcome


def _apply_held(
    uow: UnitOfWork, confirmation: m.SenderConfirmation, settings: Settings, *, by: str, hooks: Hooks | None
) -> ReplyOutcome | None:
    """A hard bounce or an absence that lacked its proof (domain/trust.py) and held the lead:
    confirmed, it now has its whole effect — the address suppressed, or the pause."""
    reply = uow.session.get(m.Reply, confirmation.reply_id) if confirmation.reply_id else None
    if reply is None or reply.kind not in (ReplyKind.BOUNCE_HARD, ReplyKind.OUT_OF_OFFICE):
        return None
    lead = uow.session.get_one(m.Lead, confirmation.lead_id, populate_existing=True)
    if reply.kind == ReplyKind.OUT_OF_OFFICE and lead.reply_state == ReplyState.HELD:
        # The person takes the hold back so that the pause applies as it would have.
        check_reply_move(ReplyState.HELD, ReplyState.ACTIVE, Actor.PERSON)
        lead.reply_state, lead.hold_reason = ReplyState.ACTIVE, None
    return record_reply(
        uow,
        confirmation.lead_id,
        IncomingReply(
            kind=ReplyKind(reply.kind),
            received_at=uow.clock.now(),
            return_date=reply.return_date,
            from_address=reply.from_address,
            evidence=(f"confirmed-by:{by}",),
            source="person",
            inbound_message_id=confirmation.inbound_message_id,
            bounce_reason=reply.bounce_reason,
        ),
        settings,
        hooks,
    )


def reject_sender(uow: UnitOfWork, confirmation_id: int, *, by: str) -> None:
    """A person says the sender does not speak for the lead: nothing is learned and nothing
    is unsubscribed. The lead stays stopped; resuming her is a separate decision."""
    confirmation = _pending(uow, confirmation_id)
    if confirmation is not None:
        _decide(uow, confirmation, "rejected", by)


def pending_confirmations(uow: UnitOfWork) -> list[dict[str, Any]]:
    """What `senders list` shows: every confirmation still waiting for a person, oldest first."""
    rows = uow.session.scalars(
        select(m.SenderConfirmation)
        .where(m.SenderConfirmation.workspace_id == uow.workspace_id, m.SenderConfirmation.state == "pending")
        .order_by(m.SenderConfirmation.id)
    )
    return [_view(uow, row) for row in rows]


def confirmation_view(uow: UnitOfWork, confirmation_id: int) -> dict[str, Any]:
    """One confirmation as `senders list` shows it, whatever its state (ConfirmationNotFound)."""
    row = uow.session.scalar(
        select(m.SenderConfirmation).where(
            m.SenderConfirmation.id == confirmation_id,
            m.SenderConfirmation.workspace_id == uow.workspace_id,
        )
    )
    if row is None:
        raise ConfirmationNotFound(f"no sender confirmation {confirmation_id}")
    return _view(uow, row)


def _view(uow: UnitOfWork, row: m.SenderConfirmation) -> dict[str, Any]:
    reply = uow.session.get(m.Reply, row.reply_id) if row.reply_id else None
    held = (
        reply.kind
        if reply is not None and reply.kind in (ReplyKind.BOUNCE_HARD, ReplyKind.OUT_OF_OFFICE)
        else None
    )
    return {
        "id": row.id,
        "lead_id": row.lead_id,
        "sender": row.sender,
        "learn_address": row.learn_address,
        "unsubscribe": row.unsubscribe,
        "held_effect": str(held) if held else None,  # a hard bounce or a pause held for the decision
        "why": row.reason,
        "state": row.state,
        "created_at": row.created_at.isoformat(),
        "decided_by": row.decided_by,
    }


def _pending(uow: UnitOfWork, confirmation_id: int) -> m.SenderConfirmation | None:
    query = select(m.SenderConfirmation).where(
        m.SenderConfirmation.id == confirmation_id,
        m.SenderConfirmation.workspace_id == uow.workspace_id,
    )
    if uow.postgres:
        query = query.with_for_update()
    confirmation = uow.session.scalars(query).one_or_none()
    if confirmation is None:
        raise ConfirmationNotFound(f"no sender confirmation {confirmation_id}")
    return confirmation if confirmation.state == "pending" else None


def _decide(uow: UnitOfWork, confirmation: m.SenderConfirmation, state: str, by: str) -> None:
    confirmation.state, confirmation.decided_at, confirmation.decided_by = state, uow.clock.now(), by
    uow.add_event(
        f"sender_{state}",
        lead_id=confirmation.lead_id,
        confirmation_id=confirmation.id,
        sender=confirmation.sender,
        by=by,
    )


def owner_of(uow: UnitOfWork, lead_id: int) -> str:
    """Who is told about this lead: the owner of its first campaign."""
    owner = uow.session.scalar(
        select(m.Campaign.owner)
        .join(m.Enrollment, m.Enrollment.campaign_id == m.Campaign.id)
        .where(m.Enrollment.lead_id == lead_id, m.Enrollment.workspace_id == uow.workspace_id)
        .order_by(m.Enrollment.id)
        .limit(1)
    )
    return owner or "owner@unknown.invalid"
