"""What a thread shows about its lead, read fresh: product, campaigns, contact, mailbox, the
lead's other products with their next step, and the recommended next step built from it."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any

from sqlalchemy import and_, bindparam, func, select, true
from sqlalchemy.orm import Session

from replyguard.adapters.db import models as m
from replyguard.domain.intent import Intent, IntentResult
from replyguard.domain.next_step import OtherProduct, Situation, ThreadKind, recommend
from replyguard.domain.states import ReplyState, StepState, ThreadState
from replyguard.domain.thread_actions import ThreadFacts, offered
from replyguard.settings import Settings

QUEUED = (StepState.SCHEDULED, StepState.AWAITING_APPROVAL, StepState.CLAIMED)
#: Other products worth a person's decision: they may still send, or wait for a person.
LIVE = (ReplyState.ACTIVE, ReplyState.OUT_OF_OFFICE, ReplyState.HELD)


@dataclass(frozen=True, slots=True)
class ThreadContext:
    lead_id: int
    lead_state: str
    paused_until: datetime | None
    product_id: int
    product: str
    contact_id: int
    name: str
    company: str
    email: str
    mailbox_id: int | None
    mailbox: str | None
    from_name: str
    campaigns: tuple[str, ...]
    campaign_ids: tuple[int, ...]
    owner: str
    own_addresses: frozenset[str]
    last_subject: str | None
    other_products: tuple[OtherProduct, ...]
    #: Steps of the lead whose outcome is unknown, when read with the context (`load_context`);
    #: None: `thread_facts` counts them itself. Not part of what a context is equal to.
    unknown_steps: int | None = field(default=None, compare=False)

    @property
    def contact(self) -> str:
        return f"{self.name} <{self.email}>" if self.name else self.email


@dataclass(frozen=True, slots=True)
class Preread:
    """What the caller has already read in this transaction, under the lead lock, so that the
    context is not read twice: the reply transaction, where each statement is latency. Read the
    same way as `load_context` reads them (the primary address first; the live other products)."""

    addresses: tuple[str, ...] | None = None
    other_products: tuple[OtherProduct, ...] | None = None
    #: False: the lead has no thread at all (read under its lock), so there is none to update.
    has_thread: bool | None = None
    #: The lead's rows of `context_columns()`, one per enrollment in enrollment order.
    context_rows: tuple[tuple[Any, ...], ...] | None = None


#: What a thread shows of each enrollment of its lead, in this order: the campaign (id, name,
#: owner) and its mailbox (id, address, sender's name). Read here and, for a page of threads at
#: once, by `queries.thread_contexts`.
CAMPAIGN_COLUMNS = (
    m.Campaign.id,
    m.Campaign.name,
    m.Campaign.owner,
    m.Mailbox.id,
    m.Mailbox.address,
    m.Mailbox.from_name,
)


def context_columns() -> tuple[Any, ...]:
    """What a thread shows of its lead, by columns of a select from `leads` joined to its
    product and (outer) to its enrollments, their campaigns and mailboxes (`with_campaigns`):
    the product, the last subject sent, the steps of unknown outcome, and per enrollment the
    campaign and its mailbox."""
    last_sent = (
        select(m.Step.subject)
        .where(m.Step.lead_id == m.Lead.id, m.Step.state == StepState.SENT)
        .order_by(m.Step.sent_at.desc())
        .limit(1)
        .correlate(m.Lead)
        .scalar_subquery()
    )
    unknown = (
        select(func.count())
        .select_from(m.Step)
        .where(m.Step.lead_id == m.Lead.id, m.Step.state == StepState.UNKNOWN)
        .correlate(m.Lead)
        .scalar_subquery()
    )
    return (m.Product.id, m.Product.name, last_sent, unknown, *CAMPAIGN_COLUMNS)


def with_campaigns(query: Any, *, only: Any = None) -> Any:
    """`query` (from `leads`, joined to the product) joined to the lead's enrollments, their
    campaigns and mailboxes; `only`: a condition the lead must meet to have them joined."""
    enrolled = m.Enrollment.lead_id == m.Lead.id
    return (
        query.outerjoin(m.Enrollment, enrolled if only is None else and_(enrolled, only))
        .outerjoin(m.Campaign, m.Campaign.id == m.Enrollment.campaign_id)
        .outerjoin(m.Mailbox, m.Mailbox.id == m.Campaign.mailbox_id)
    )


def _context_rows() -> Any:
    """`context_columns()` of the lead, in one round trip: a thread is opened inside the
    reply's transaction, where each statement is latency. Built once (bound value: lead):
    building a statement costs more CPU than running it."""
    product = (
        select(*context_columns()).select_from(m.Lead).join(m.Product, m.Product.id == m.Lead.product_id)
    )
    return with_campaigns(product).where(m.Lead.id == bindparam("lead")).order_by(m.Enrollment.id)


_CONTEXT_ROWS = _context_rows()


def load_context(
    session: Session, workspace_id: int, lead_id: int, preread: Preread | None = None
) -> ThreadContext:
    lead = session.get_one(m.Lead, lead_id)
    if lead.workspace_id != workspace_id:
        raise LookupError(f"lead {lead_id} is not in this workspace")
    contact = session.get_one(m.Contact, lead.contact_id)
    known = preread or Preread()
    addresses = list(
        known.addresses
        if known.addresses is not None
        else session.scalars(
            select(m.ContactAddress.address)
            .where(m.ContactAddress.contact_id == contact.id)
            .order_by(m.ContactAddress.is_primary.desc(), m.ContactAddress.id)
        )
    )
    rows = (
        known.context_rows
        if known.context_rows is not None
        else session.execute(_CONTEXT_ROWS, {"lead": lead.id}).all()
    )
    product_id, product_name, last_subject, unknown_steps = rows[0][:4]
    campaigns = [row[4:] for row in rows if row[4] is not None]
    first = campaigns[0] if campaigns else None
    return ThreadContext(
        lead_id=lead.id,
        lead_state=lead.reply_state,
        paused_until=lead.paused_until,
        product_id=product_id,
        product=product_name,
        contact_id=contact.id,
        name=f"{contact.first_name} {contact.last_name}".strip(),
        company=contact.company,
        email=addresses[0] if addresses else "",
        mailbox_id=first[3] if first else None,
        mailbox=first[4] if first else None,
        from_name=first[5] if first else "",
        campaigns=tuple(c[1] for c in campaigns),
        campaign_ids=tuple(c[0] for c in campaigns),
        owner=(first[2] if first else None) or contact.owner or "owner@unknown.invalid",
        own_addresses=frozenset(addresses) | {c[4] for c in campaigns},
        last_subject=last_subject,
        unknown_steps=int(unknown_steps or 0),
        other_products=known.other_products
        if known.other_products is not None
        else other_products(session, contact.id, lead.id),
    )


def other_products(session: Session, contact_id: int, lead_id: int) -> tuple[OtherProduct, ...]:
    """The contact's other leads that may still send or wait for a person, with their next step."""
    return other_leads(session, contact_id, lead_id, live_only=True)


def next_queued(column: Any) -> Any:
    """`column` of the lead's next queued step (a subquery correlated to `leads`): what a thread
    shows of another product. Read here and in the reply transaction's locking read."""
    return (
        select(column)
        .where(m.Step.lead_id == m.Lead.id, m.Step.state.in_(QUEUED))
        .order_by(m.Step.due_at, m.Step.id)
        .limit(1)
        .correlate(m.Lead)
        .scalar_subquery()
    )


def _other_leads(live_only: bool) -> Any:
    """`other_leads`' statement, built once per shape (bound values: contact, lead)."""
    return (
        select(m.Product.name, m.Lead.reply_state, next_queued(m.Step.due_at), next_queued(m.Step.subject))
        .join(m.Product, m.Product.id == m.Lead.product_id)
        .where(m.Lead.contact_id == bindparam("contact"), m.Lead.id != bindparam("lead"))
        .where(m.Lead.reply_state.in_(LIVE) if live_only else true())
        .order_by(m.Product.name)
    )


_OTHER_LEADS = {live: _other_leads(live) for live in (False, True)}


def other_leads(
    session: Session, contact_id: int, lead_id: int, *, live_only: bool = False
) -> tuple[OtherProduct, ...]:
    """The contact's other leads (every state, or only the live ones) with their next step,
    ordered by product."""
    rows = session.execute(_OTHER_LEADS[live_only], {"contact": contact_id, "lead": lead_id}).all()
    found = [OtherProduct(name, state, due, subject) for name, state, due, subject in rows]
    return tuple(found)


def intent_of(thread: m.RescueThread) -> IntentResult | None:
    data = thread.intent_data or {}
    if not thread.intent:
        return None
    when = data.get("date")
    return IntentResult(
        Intent(thread.intent),
        tuple(data.get("evidence") or ()),
        data.get("language"),
        data.get("referral_name"),
        data.get("referral_address"),
        date.fromisoformat(when) if when else None,
        bool(data.get("pricing")),
    )


def next_step_for(
    thread: m.RescueThread,
    context: ThreadContext,
    now: datetime,
    settings: Settings,
    session: Session,
    *,
    waiting: bool | None = None,
) -> tuple[str, list[str]]:
    """The recommendation's sentence, and the actions that may be taken now: the one rule of
    `domain/thread_actions.offered`, fed with the thread and its lead as they are now.
    `waiting`: `waiting_on_them` already read (a page of threads reads it for all at once)."""
    step = recommend(_situation(thread, context, now, settings))
    facts = thread_facts(session, thread, context, now, step.actions, waiting=waiting)
    return step.text, list(offered(facts))


def thread_facts(
    session: Session,
    thread: m.RescueThread,
    context: ThreadContext,
    now: datetime,
    recommended: tuple[str, ...] | None = None,
    settings: Settings | None = None,
    *,
    waiting: bool | None = None,
) -> ThreadFacts:
    if recommended is None:
        assert settings is not None
        recommended = recommend(_situation(thread, context, now, settings)).actions
    state = thread.state
    if state == ThreadState.SNOOZED and thread.snoozed_until and thread.snoozed_until <= now:
        state = ThreadState.OPEN
    return ThreadFacts(
        kind=ThreadKind(thread.kind),
        thread_state=str(state),
        lead_state=ReplyState(context.lead_state),
        recommended=tuple(recommended),
        # A thread not yet written has no answer to wait on (one query less in the reply tx).
        waiting_on_them=(
            waiting if waiting is not None else thread.id is not None and waiting_on_them(session, thread.id)
        ),
        unknown_outcome=(
            context.unknown_steps
            if context.unknown_steps is not None
            else count_unknown_steps(session, thread.lead_id)
        )
        > 0,
    )


def waiting_on_them(session: Session, thread_id: int) -> bool:
    """A person answered after their last message: the thread waits on them (until their next
    message moves the version again)."""
    last = session.scalar(
        select(m.ThreadChange.kind)
        .where(m.ThreadChange.thread_id == thread_id, m.ThreadChange.kind.in_(["message", "answer"]))
        .order_by(m.ThreadChange.version.desc(), m.ThreadChange.id.desc())
        .limit(1)
    )
    return last == "answer"


def _situation(
    thread: m.RescueThread, context: ThreadContext, now: datetime, settings: Settings
) -> Situation:
    data = thread.intent_data or {}
    absent = data.get("absent_until")
    others = () if data.get("others_decided") else context.other_products
    return Situation(
        kind=ThreadKind(thread.kind),
        intent=intent_of(thread),
        now=now,
        lead_state=context.lead_state,
        crossed=bool(thread.crossed),
        contact=context.contact,
        company=context.company,
        new_contact=data.get("new_contact"),
        absent_until=date.fromisoformat(absent) if absent else None,
        subject=thread.subject,
        sender=data.get("sender"),
        other_products=others,
        default_pause=settings.default_pause,
    )


def count_unknown_steps(session: Session, lead_id: int) -> int:
    return (
        session.scalar(
            select(func.count())
            .select_from(m.Step)
            .where(m.Step.lead_id == lead_id, m.Step.state == StepState.UNKNOWN)
        )
        or 0
    )
