"""THE reply transaction (invariant 2): one function, one database transaction.

`record_reply` locks the lead row(s), writes the reply, moves the reply state, cancels every
queued step (or moves them after an out-of-office pause, in every product of the contact),
suppresses addresses, writes the events, and hands the lead to a person: its rescue thread and
the thread's notice in the outbox (`threads.open_thread`) — all committed together, or nothing. There is no
background cleanup: when this function returns, no step of the lead can be claimed any more,
and any worker that already holds one will be refused at its re-check under the same lock.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime, time
from typing import Any, cast

from sqlalchemy import Table, bindparam, case, exists, func, insert, or_, select, type_coerce, update
from sqlalchemy.orm import aliased
from sqlalchemy.orm.attributes import set_committed_value

from replyguard.adapters.db import models as m
from replyguard.domain import reply_policy
from replyguard.domain.inbound.bounce_policy import ESCALATING_REASONS
from replyguard.domain.next_step import CROSSED_WINDOW, OtherProduct, ThreadKind
from replyguard.domain.reply_policy import ReplyEffect, Suppress
from replyguard.domain.schedule import load_zone, shift_after_pause
from replyguard.domain.states import (
    CANCELLABLE,
    Actor,
    ReplyKind,
    ReplyState,
    StepState,
    check_reply_move,
    step_move,
)
from replyguard.domain.trust import needs_proof
from replyguard.service_layer.hooks import Hooks
from replyguard.service_layer.rescue import thread_versions, threads
from replyguard.service_layer.rescue.thread_context import (
    LIVE,
    Preread,
    context_columns,
    next_queued,
    other_leads,
    with_campaigns,
)
from replyguard.service_layer.steps import put_back
from replyguard.service_layer.uow import UnitOfWork
from replyguard.service_layer.workspace.enrollment import campaign_window
from replyguard.service_layer.workspace.leads import contact_addresses
from replyguard.settings import Settings

_REPLIES = cast(Table, m.Reply.__table__)
_LEADS = cast(Table, m.Lead.__table__)
_STEPS = cast(Table, m.Step.__table__)

#: Soft bounces of one address that count as a hard bounce (the third one is hard).
SOFT_BOUNCE_LIMIT = 3


def soft_bounces_of(uow: UnitOfWork, address: str) -> int:
    """Soft bounces recorded for `address` so far that add up to a hard one, inbound or at send
    time: only those judged to count when they arrived (a permanent failure whose reason speaks
    about the recipient: `BounceInfo.counts_toward_hard`), never a temporary one; rows without
    that verdict count by their reason (bounce_policy.escalates), and rows without a reason
    (send time, or recorded before reasons were stored) count."""
    if not address:
        return 0
    return int(
        uow.session.scalar(
            select(func.count())
            .select_from(m.Reply)
            .where(
                m.Reply.workspace_id == uow.workspace_id,
                m.Reply.kind == ReplyKind.BOUNCE_SOFT,
                m.Reply.from_address == address.lower(),
                or_(m.Reply.bounce_counts.is_(True), m.Reply.bounce_counts.is_(None)),
                or_(m.Reply.bounce_reason.is_(None), m.Reply.bounce_reason.in_(ESCALATING_REASONS)),
            )
        )
        or 0
    )


@dataclass(frozen=True, slots=True)
class IncomingReply:
    kind: ReplyKind
    received_at: datetime
    return_date: date | None = None
    text: str | None = None
    subject: str | None = None
    from_address: str | None = None
    evidence: tuple[str, ...] = ()
    source: str = "cli"
    inbound_message_id: int | None = None
    left_company: bool = False
    new_contact: str | None = None  # "please contact ... instead", from a left-company notice
    references: tuple[str, ...] = ()  # In-Reply-To and References: which of our emails they saw
    # False: a sender we cannot tie to the lead (a stranger in her thread, or mail that failed
    # authentication). An unsubscribe then stops the lead but suppresses nothing until a
    # person confirms (service_layer/inbound/confirmations.py).
    sender_confirmed: bool = True
    bounce_reason: str | None = None  # a bounce's reason in sisimai's taxonomy (bounce_reasons.py)
    bounce_counts: bool | None = None  # a soft bounce: adds up toward a hard one (None: by reason)
    # An automatic message in our thread whose new text reads as a person's answer.
    reads_as_person: bool = False


@dataclass
class ReplyOutcome:
    reply_id: int
    lead_state: str
    cancelled: int = 0
    rescheduled: int = 0
    in_flight: int = 0
    crossed: list[str] = field(default_factory=list)
    notice_id: int | None = None
    thread_id: int | None = None
    other_products: list[dict[str, Any]] = field(default_factory=list)


def record_reply(
    uow: UnitOfWork,
    lead_id: int,
    reply: IncomingReply,
    settings: Settings,
    hooks: Hooks | None = None,
) -> ReplyOutcome:
    """Record `reply` for the lead and apply its whole effect. The caller commits."""
    # Unsubscribes and absences touch every lead of the contact; a sender we cannot tie to the
    # contact speaks for the thread's lead only. The lead(s), locked in id order (FOR UPDATE on
    # PostgreSQL; SQLite holds the write lock), with the contact: one statement.
    contact_wide = reply_policy.contact_wide(reply.kind) and reply.sender_confirmed
    locked = _lock_and_read(uow, lead_id, contact_wide=contact_wide, received_at=reply.received_at)
    lead, contact, addresses = locked.lead, locked.contact, locked.addresses
    now = uow.clock.now()
    back_at = None
    if reply.return_date:
        zone = load_zone(contact.timezone or _campaign_zone(uow, lead.id) or "UTC")
        back_at = datetime.combine(reply.return_date, time(0), tzinfo=zone)
    bounced = (reply.from_address or "").lower()

    def decide(state: str) -> ReplyEffect:
        return reply_policy.decide(
            reply.kind,
            ReplyState(state),
            now=now,
            back_at=back_at,
            default_pause=settings.default_pause,
            max_pause=settings.max_pause,
            left_company=reply.left_company,
            other_address=any(a != bounced for a in addresses) if bounced else len(addresses) > 1,
            sender_confirmed=reply.sender_confirmed,
            reads_as_person=reply.reads_as_person,
        )

    effect = decide(lead.reply_state)
    # The transaction's events are written together, in one INSERT at the end of the block.
    with uow.batched_events():
        reply_id = _insert_reply(uow, lead.id, reply, now)
        if hooks is not None:
            hooks.at("inside_reply_tx")
        outcome = ReplyOutcome(reply_id=reply_id, lead_state=lead.reply_state)
        waiting: list[tuple[m.Lead, ReplyEffect, str]] = []
        for target in locked.leads:
            target_effect = effect if target is lead else decide(target.reply_state)
            before = target.reply_state
            _apply(uow, target, reply_id, target_effect, reply, outcome, locked)
            # The matched lead's thread tells about the reply; another product gets a thread of
            # its own only when it now waits for a person too (an absence past the pause limit).
            if target_effect.notify and (target is lead or target_effect.new_state is ReplyState.HELD):
                waiting.append((target, target_effect, before))
        outcome.lead_state = lead.reply_state
        _suppress(uow, effect.suppress, addresses, bounced, reply.kind)
        # The contact's other products as the locking read found them; when this reply moved
        # them too (an unsubscribe, an absence), as they are now.
        others = other_leads(uow.session, contact.id, lead.id) if contact_wide else locked.others
        outcome.other_products = [{"product": p.product, "reply_state": p.state} for p in others]
        # The hand-off: a rescue thread and its notice (the outbox entry) for every lead that
        # now waits for a person, in this same transaction. The matched lead's thread reuses
        # what was read above instead of reading it again.
        preread = Preread(
            addresses=tuple(addresses),
            other_products=tuple(p for p in others if p.state in LIVE),
            has_thread=locked.has_thread(lead),
            context_rows=locked.context,
        )
        _hand_over(uow, reply_id, lead.id, reply, waiting, outcome, settings, preread, locked.sent_recently)
    if hooks is not None:
        hooks.at("after_reply_handover")
    return outcome


#: The reply's row, its id read back (bound values: the `replies` columns).
_INSERT_REPLY = insert(_REPLIES).returning(_REPLIES.c.id)


def _insert_reply(uow: UnitOfWork, lead_id: int, reply: IncomingReply, now: datetime) -> int:
    """Write the reply's row with one prebuilt INSERT ... RETURNING id: nothing in this
    transaction reads it back as an object, so the ORM's flush would be CPU for nothing."""
    values = {
        "workspace_id": uow.workspace_id,
        "lead_id": lead_id,
        "inbound_message_id": reply.inbound_message_id,
        "kind": reply.kind,
        "from_address": reply.from_address,
        "subject": reply.subject,
        "text": reply.text,
        "return_date": reply.return_date,
        "evidence": list(reply.evidence),
        "bounce_reason": reply.bounce_reason,
        "bounce_counts": reply.bounce_counts,
        "source": reply.source,
        "received_at": reply.received_at,
        "recorded_at": now,
    }
    return int(uow.session.execute(_INSERT_REPLY, values).scalar_one())


def _hand_over(
    uow: UnitOfWork,
    reply_id: int,
    reply_lead_id: int,
    reply: IncomingReply,
    waiting: list[tuple[m.Lead, ReplyEffect, str]],
    outcome: ReplyOutcome,
    settings: Settings,
    preread: Preread,
    sent_recently: frozenset[int],
) -> None:
    for target, effect, before in waiting:
        mine = target.id == reply_lead_id
        crossed = mine and (
            bool(outcome.crossed or outcome.in_flight)
            or (target.id in sent_recently and _crossed_before(uow, target.id, reply))
        )
        # Without its proof (domain/trust.py) the caller asks a person to confirm on this same
        # thread (confirmations.request_confirmation), whose notice is the one that goes out.
        unproven = not reply.sender_confirmed and needs_proof(reply.kind)
        kind = ThreadKind.CONFIRM_SENDER if unproven else threads.thread_kind(reply.kind, reply.left_company)
        ref = threads.open_thread(
            uow.session,
            workspace_id=uow.workspace_id,
            now=uow.clock.now(),
            lead_id=target.id,
            handoff=threads.Handoff(
                kind=kind,
                notify=not unproven,
                reason=effect.hold_reason,
                reply_id=reply_id,
                text=reply.text,
                subject=reply.subject,
                evidence=reply.evidence,
                received_at=reply.received_at,
                inbound_message_id=reply.inbound_message_id,
                state_before=before,
                new_contact=reply.new_contact,
                absent_until=reply.return_date,
                crossed=crossed,
            ),
            settings=settings,
            preread=preread if mine else None,
            add_event=uow.add_event,
        )
        if mine:
            outcome.thread_id, outcome.notice_id = ref.id, ref.notice_id


def _apply(
    uow: UnitOfWork,
    lead: m.Lead,
    reply_id: int,
    effect: ReplyEffect,
    incoming: IncomingReply,
    outcome: ReplyOutcome,
    locked: _Locked,
) -> None:
    now = uow.clock.now()
    previous = lead.reply_state
    moved: dict[str, Any] = {"last_reply_id": reply_id}
    if effect.new_state is not None and effect.new_state != previous:
        check_reply_move(ReplyState(previous), effect.new_state, Actor.SYSTEM)
        moved |= {"reply_state": effect.new_state, "reply_state_updated_at": now}
    if effect.new_state is ReplyState.HELD:
        moved["hold_reason"] = effect.hold_reason
    if effect.new_state is ReplyState.OUT_OF_OFFICE:
        moved["paused_until"] = effect.paused_until
    _write_lead(uow, lead, moved)
    if locked.has_thread(lead):  # (a lead without a thread has no version to move)
        thread_versions.bump(
            uow.session,
            workspace_id=uow.workspace_id,
            now=now,
            lead_id=lead.id,
            kind="message",
            summary=thread_versions.message_summary(incoming.from_address, incoming.kind, incoming.text)
            + (f" (lead {previous} -> {lead.reply_state})" if lead.reply_state != previous else ""),
        )
    uow.add_event(
        "reply_recorded",
        lead_id=lead.id,
        reply_id=reply_id,
        kind=incoming.kind,
        state_before=previous,
        state_after=lead.reply_state,
        paused_until=effect.paused_until.isoformat() if effect.paused_until else None,
        evidence=list(incoming.evidence),
    )
    if effect.cancel_steps:
        cancelled, in_flight = cancel_queued_steps(uow, lead.id, reason=f"reply:{incoming.kind}")
        outcome.cancelled += cancelled
        outcome.in_flight += in_flight
        if locked.sent_since_reply(lead):
            outcome.crossed += _crossed(uow, lead.id, incoming.received_at)
    elif effect.paused_until is not None:
        outcome.rescheduled += pause_steps(uow, lead, effect.paused_until)


#: The lead's columns a reply moves.
_MOVED = ("last_reply_id", "reply_state", "reply_state_updated_at", "hold_reason", "paused_until")
#: One UPDATE of those columns (bound values: `lead`, and each column's name prefixed `new_`).
_WRITE_LEAD = (
    update(_LEADS)
    .where(_LEADS.c.id == bindparam("lead"))
    .values({name: bindparam(f"new_{name}", type_=_LEADS.c[name].type) for name in _MOVED})
)


def _write_lead(uow: UnitOfWork, lead: m.Lead, moved: dict[str, Any]) -> None:
    """Write the lead's move (`moved`: the columns of `_MOVED` that change, by name) with one
    prebuilt UPDATE, and tell the session those are the database's values now: whatever reads
    the lead later in this transaction sees them. The object is never changed as the ORM
    tracks changes, so the session has nothing to flush (a flush that finds nothing to write
    still costs what a statement does)."""
    values = {name: moved[name] if name in moved else getattr(lead, name) for name in _MOVED}
    for name, value in values.items():
        set_committed_value(lead, name, value)
    uow.session.execute(_WRITE_LEAD, {"lead": lead.id, **{f"new_{k}": v for k, v in values.items()}})


def _cancel_steps_statement() -> Any:
    """One statement for both (a CASE per column), RETURNING what each row became. Built once:
    building a statement costs more CPU than running it (bound values: lead, why, at)."""
    sending = _STEPS.c.state == StepState.SENDING

    def unless_sending(value: Any, column: Any) -> Any:
        # A step being sent keeps its state and claim: it is only asked to stop (and is then
        # never retried); every other queued step is cancelled.
        return case((sending, column), else_=value)

    # On the table, not the mapped class: the ORM's bulk UPDATE machinery was most of the CPU
    # of a cancel. (Step objects held in the session were never updated by it either.)
    steps = _STEPS.c
    return (
        update(_STEPS)
        .where(
            steps.lead_id == bindparam("lead"),
            steps.state.in_([*step_move(CANCELLABLE, StepState.CANCELLED), StepState.SENDING]),
        )
        .values(
            state=unless_sending(StepState.CANCELLED, steps.state),
            claim_token=unless_sending(None, steps.claim_token),
            lease_until=unless_sending(None, steps.lease_until),
            cancel_requested=case((sending, True), else_=steps.cancel_requested),
            cancel_reason=bindparam("why"),
            updated_at=bindparam("at", type_=steps.updated_at.type),
        )
        .returning(steps.state)
    )


_CANCEL_STEPS = _cancel_steps_statement()


def cancel_queued_steps(uow: UnitOfWork, lead_id: int, *, reason: str) -> tuple[int, int]:
    """Cancel every queued step of the lead; mark in-flight ones so they are never retried.

    Returns (cancelled, in_flight). Must run under the lead lock (see UnitOfWork.lock_leads).
    """
    params = {"lead": lead_id, "why": reason, "at": uow.clock.now()}
    uow.session.flush()  # what the session holds goes first, as an ORM statement's autoflush would
    states = uow.session.execute(_CANCEL_STEPS, params).scalars().all()
    cancelled = sum(1 for state in states if state == StepState.CANCELLED)
    in_flight = len(states) - cancelled
    if cancelled or in_flight:
        uow.add_event("steps_cancelled", lead_id=lead_id, count=cancelled, in_flight=in_flight, reason=reason)
    return cancelled, in_flight


def _crossed(uow: UnitOfWork, lead_id: int, received_at: datetime) -> list[str]:
    """Steps that went out after the reply arrived (the send was already under way): marked
    crossed, their Message-IDs returned, in one statement."""
    return list(
        uow.session.execute(
            update(m.Step)
            .where(m.Step.lead_id == lead_id, m.Step.state == StepState.SENT, m.Step.sent_at >= received_at)
            .values(crossed=True)
            .returning(m.Step.message_id)
            .execution_options(synchronize_session=False)
        ).scalars()
    )


def _crossed_before(uow: UnitOfWork, lead_id: int, reply: IncomingReply) -> bool:
    """One of our emails went out shortly before the reply arrived, and the reply does not
    reference it: they wrote without having seen it. Unknowable without their references."""
    if not reply.references:
        return False
    received_at, seen = reply.received_at, {r.strip().lower() for r in reply.references}
    recent = uow.session.scalars(
        select(m.Step.message_id).where(
            m.Step.lead_id == lead_id,
            m.Step.state == StepState.SENT,
            m.Step.sent_at >= received_at - CROSSED_WINDOW,
        )
    ).all()
    return any(mid.lower() not in seen for mid in recent)


def pause_steps(uow: UnitOfWork, lead: m.Lead, until: datetime) -> int:
    """Move the lead's waiting steps after `until`, keeping their spacing; nothing is cancelled."""
    # The steps with their campaigns (window, time zone) in one query.
    rows = uow.session.execute(
        select(m.Step, m.Campaign)
        .join(m.Enrollment, m.Enrollment.id == m.Step.enrollment_id)
        .join(m.Campaign, m.Campaign.id == m.Enrollment.campaign_id)
        .where(
            m.Step.lead_id == lead.id,
            m.Step.state.in_([StepState.SCHEDULED, StepState.CLAIMED, StepState.AWAITING_APPROVAL]),
        )
        .order_by(m.Step.due_at)
    ).all()
    steps = [step for step, _ in rows]
    by_enrollment: dict[int, tuple[m.Campaign, list[m.Step]]] = {}
    for step, campaign in rows:
        by_enrollment.setdefault(step.enrollment_id, (campaign, []))[1].append(step)
    contact = uow.session.get_one(m.Contact, lead.contact_id)
    for campaign, group in by_enrollment.values():
        zone = load_zone(contact.timezone or campaign.timezone)
        new = shift_after_pause([s.due_at for s in group], until, campaign_window(campaign), zone)
        for step, due in zip(group, new, strict=True):
            if step.state == StepState.CLAIMED:
                put_back(step, uow.clock.now())  # taking the claim back fences out its worker
            step.due_at = due
            step.updated_at = uow.clock.now()
    if steps:
        uow.add_event("steps_paused", lead_id=lead.id, count=len(steps), until=until.isoformat())
    return len(steps)


def _suppress(uow: UnitOfWork, how: Suppress, addresses: list[str], bounced: str, kind: str) -> None:
    if how is Suppress.NONE:
        return
    targets = addresses if how is Suppress.CONTACT else [bounced or addresses[0]]
    existing = set(
        uow.session.scalars(
            select(m.Suppression.address).where(
                m.Suppression.workspace_id == uow.workspace_id, m.Suppression.address.in_(targets)
            )
        )
    )
    for address in targets:
        if address not in existing:
            uow.session.add(
                m.Suppression(
                    workspace_id=uow.workspace_id,
                    address=address,
                    reason=kind,
                    created_at=uow.clock.now(),
                )
            )
            uow.add_event("address_suppressed", address=address, reason=kind)


@dataclass(frozen=True, slots=True)
class _Locked:
    leads: list[m.Lead]  # the locked leads in id order, the matched lead among them
    lead: m.Lead
    contact: m.Contact
    addresses: list[str]  # the contact's addresses, the primary first
    others: tuple[OtherProduct, ...]  # the contact's other leads as read, by product
    context: tuple[tuple[Any, ...], ...]  # the matched lead's thread context (`context_columns`)
    with_thread: frozenset[int]  # leads with a rescue thread (any state)
    sent_since: frozenset[int]  # leads with a step sent at or after the reply was received
    sent_recently: frozenset[int]  # leads with a step sent since CROSSED_WINDOW before it

    def has_thread(self, lead: m.Lead) -> bool:
        return lead.id in self.with_thread

    def sent_since_reply(self, lead: m.Lead) -> bool:
        return lead.id in self.sent_since


def _locking_read() -> tuple[dict[bool, Any], Any]:
    """`_lock_and_read`'s statements, built once (bound values: lead, workspace, recent): the
    lock of the matched lead or of every lead of its contact, and the read of the contact's
    leads, one row per lead, address of the contact and (the matched lead's) enrollment."""
    same_contact = aliased(m.Lead)
    of_contact = (
        m.Lead.contact_id
        == select(same_contact.contact_id).where(same_contact.id == bindparam("lead")).scalar_subquery()
    )
    in_workspace = m.Lead.workspace_id == bindparam("workspace")
    has_thread = exists().where(m.RescueThread.lead_id == m.Lead.id).correlate(m.Lead)
    # The lead's latest send since the crossing window before the reply arrived (or NULL):
    # at or after the reply it is a crossing; before it, `_crossed_before` has a send to
    # look at, and without one that statement is skipped.
    latest_sent = (
        select(type_coerce(func.max(m.Step.sent_at), m.Step.sent_at.type))
        .where(
            m.Step.lead_id == m.Lead.id,
            m.Step.state == StepState.SENT,
            m.Step.sent_at >= bindparam("recent", type_=m.Step.sent_at.type),
        )
        .correlate(m.Lead)
        .scalar_subquery()
    )
    # Columns by position, as `_lock_and_read` reads them: 0-3 the lead, its contact and the
    # two probes (a thread; the latest recent send); 4-6 what a thread shows of another
    # product; 7 an address; 8- the context.
    read = (
        select(
            m.Lead,
            m.Contact,
            has_thread,
            latest_sent,
            m.Product.name,
            next_queued(m.Step.due_at),
            next_queued(m.Step.subject),
            m.ContactAddress.address,
            *context_columns(),
        )
        .join(m.Contact, m.Contact.id == m.Lead.contact_id)
        .join(m.Product, m.Product.id == m.Lead.product_id)
        .outerjoin(m.ContactAddress, m.ContactAddress.contact_id == m.Lead.contact_id)
    )
    read = (
        with_campaigns(read, only=m.Lead.id == bindparam("lead"))
        .where(of_contact, in_workspace)
        .order_by(
            m.Product.name,
            m.Lead.id,
            m.ContactAddress.is_primary.desc(),
            m.ContactAddress.id,
            m.Enrollment.id,
        )
        .execution_options(populate_existing=True)
    )
    lock = {
        wide: select(m.Lead.id)
        .where(of_contact if wide else m.Lead.id == bindparam("lead"), in_workspace)
        .order_by(m.Lead.id)
        .with_for_update()
        for wide in (False, True)
    }
    return lock, read


_LOCK, _READ = _locking_read()


def _lock_and_read(uow: UnitOfWork, lead_id: int, *, contact_wide: bool, received_at: datetime) -> _Locked:
    """The matched lead, or every lead of its contact, locked in id order (so two transactions
    never wait on each other in a cycle) and read with the contact, the contact's addresses,
    whether each lead has a thread yet and whether one of its steps went out after the reply
    arrived (a crossing), the contact's other leads with their next queued step, and the
    matched lead's thread context (what the thread and its notice show): one read, fresh from
    the database (`populate_existing`). Nothing this transaction writes changes the context
    or the other leads of a reply that moves only its own lead, so they are read here once.

    On PostgreSQL the lock is its own statement first: a statement that waited for a row lock
    still reads the other tables as they were when it began, so a send the worker committed
    while this transaction waited for the lead would be missed as a crossing (and a thread
    it opened as existing). The read after the lock starts after that commit. SQLite's write
    lock is held from the transaction's start, so there one statement reads fresh. The other
    leads of a reply that moves only its own lead are read, not locked: nothing here writes
    them (as when they were read in a statement of their own)."""
    params = {"lead": lead_id, "workspace": uow.workspace_id, "recent": received_at - CROSSED_WINDOW}
    if uow.postgres:
        uow.session.execute(_LOCK[contact_wide], {"lead": lead_id, "workspace": uow.workspace_id})
    rows = uow.session.execute(_READ, params).all()
    first: dict[int, Any] = {}  # each lead's first row, by product (the read's order)
    for row in rows:
        first.setdefault(row[0].id, row)
    if lead_id not in first:
        raise LookupError("lead not in this workspace")
    locked = [row[0] for row in first.values() if contact_wide or row[0].id == lead_id]
    latest_sent = {row[0].id: row[3] for row in first.values() if row[3] is not None}
    return _Locked(
        leads=sorted(locked, key=lambda lead: int(lead.id)),
        lead=first[lead_id][0],
        contact=rows[0][1],
        addresses=list(dict.fromkeys(row[7] for row in rows if row[7] is not None)),
        others=tuple(
            OtherProduct(row[4], row[0].reply_state, row[5], row[6])
            for row in first.values()
            if row[0].id != lead_id
        ),
        # The matched lead's rows with its first address: one per enrollment.
        context=tuple(tuple(row[8:]) for row in rows if row[0].id == lead_id and row[7] == first[lead_id][7]),
        with_thread=frozenset(row[0].id for row in first.values() if row[2]),
        sent_since=frozenset(lead for lead, sent in latest_sent.items() if sent >= received_at),
        sent_recently=frozenset(latest_sent),
    )


def _campaign_zone(uow: UnitOfWork, lead_id: int) -> str | None:
    return uow.session.scalar(
        select(m.Campaign.timezone)
        .join(m.Enrollment, m.Enrollment.campaign_id == m.Campaign.id)
        .where(m.Enrollment.lead_id == lead_id)
        .limit(1)
    )


def hold_probable(
    uow: UnitOfWork,
    lead_ids: tuple[int, ...],
    *,
    inbound_id: int,
    sender: str,
    subject: str,
    text: str,
    why: str,
    settings: Settings | None = None,
    received_at: datetime | None = None,
) -> int:
    """A message that probably answers us but cannot be proven to: hold every candidate lead
    (their steps wait, nothing is cancelled) and ask a person in one thread for the message.
    Returns how many were held."""
    uow.lock_leads(lead_ids)
    held, candidates = 0, []
    first_lead: int | None = None
    for lead_id in sorted(lead_ids):
        lead = uow.session.get_one(m.Lead, lead_id)
        uow.session.refresh(lead)
        if lead.workspace_id != uow.workspace_id:
            continue
        contact = uow.session.get_one(m.Contact, lead.contact_id)
        product = uow.session.get_one(m.Product, lead.product_id)
        first_lead = first_lead or lead.id
        candidate = {
            "lead_id": lead.id,
            "email": contact_addresses(uow, contact.id)[0],
            "product": product.name,
            "state": lead.reply_state,
            "held": False,
        }
        if lead.reply_state in (ReplyState.ACTIVE, ReplyState.OUT_OF_OFFICE):
            check_reply_move(ReplyState(lead.reply_state), ReplyState.HELD, Actor.SYSTEM)
            lead.reply_state, lead.reply_state_updated_at = ReplyState.HELD, uow.clock.now()
            lead.hold_reason = f"probable reply from {sender} ({why}): confirm or reject"
            uow.add_event(
                "probable_reply_held", lead_id=lead.id, inbound_id=inbound_id, sender=sender, why=why
            )
            thread_versions.bump(
                uow.session,
                workspace_id=uow.workspace_id,
                now=uow.clock.now(),
                lead_id=lead.id,
                kind="lead_state",
                summary=f"held: a probable reply from {sender}",
            )
            candidate["held"] = True
            held += 1
        candidates.append(candidate)
    if first_lead is not None:
        threads.open_thread(
            uow.session,
            workspace_id=uow.workspace_id,
            now=uow.clock.now(),
            lead_id=first_lead,
            handoff=threads.Handoff(
                kind=ThreadKind.PROBABLE_REPLY,
                reason=f"probable reply from {sender} ({why})",
                text=text[:20000],
                subject=subject,
                evidence=tuple(w.strip() for w in why.split(",") if w.strip()),
                received_at=received_at or uow.clock.now(),
                inbound_message_id=inbound_id,
                candidates=tuple(candidates),
                sender=sender,
            ),
            settings=settings or uow.settings,
        )
    return held
