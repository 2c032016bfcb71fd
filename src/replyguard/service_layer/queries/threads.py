"""The Reply Rescue inbox: every thread that waits for a person, a page at a time, filtered,
with counts by state — for the inbox page, `/api/v1/threads` and the charts.

A thread's state as a person sees it is its *effective* state: a snoozed thread whose time
has come is open again (`thread_views.effective_state`), computed here in SQL so that
filtering, counting and paging agree. The audit's canary threads are nobody's work: they are
left out unless asked for, and then only they are listed (as `threads list --audit`).

Each row's recommended next step is recomputed from its lead as it is now, like the CLI's
list, with the contexts of the whole page read at once (`thread_contexts.contexts_for`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, and_, case, func, or_, select

from replyguard.adapters.db import models as m
from replyguard.domain.intent import LABELS, Intent
from replyguard.domain.next_step import ThreadKind
from replyguard.domain.states import ThreadState
from replyguard.service_layer.queries import Page, bounds, like_pattern, paged
from replyguard.service_layer.queries.thread_contexts import contexts_for, waiting_on_them
from replyguard.service_layer.rescue.thread_context import next_step_for
from replyguard.service_layer.uow import UnitOfWork
from replyguard.settings import Settings

STATES = ("open", "snoozed", "done", "all")
KINDS = tuple(k.value for k in ThreadKind)
INTENTS = tuple(i.value for i in Intent)
_RANK = {"open": 0, "snoozed": 1, "done": 2}
RT = m.RescueThread


@dataclass(frozen=True, slots=True)
class InboxFilter:
    """What the inbox shows. `owner` matches the thread's owner or its assignee."""

    state: str = "open"
    product: str | None = None
    campaign: str | None = None
    intent: str | None = None
    owner: str | None = None
    kind: str | None = None
    audit: bool = False
    #: Words to find in the lead's name, address or company, or in what they wrote.
    q: str | None = None

    def __post_init__(self) -> None:
        if self.state not in STATES:
            raise ValueError(f"state must be one of {', '.join(STATES)}, got {self.state!r}")


@dataclass(frozen=True, slots=True)
class InboxRow:
    id: int
    state: str
    kind: str
    intent: str | None
    intent_label: str | None
    subject: str | None
    product: str
    campaign: str | None
    lead_id: int
    lead: str
    lead_name: str
    company: str
    lead_state: str
    owner: str
    assignee: str | None
    crossed: bool
    recommended_next_step: str
    actions: list[str]
    other_active_products: list[str]
    snoozed_until: datetime | None
    created_at: datetime
    updated_at: datetime
    #: The first line of what they wrote (their new text, quotes left out), for the inbox row.
    first_line: str = ""


@dataclass(frozen=True, slots=True)
class FilterOptions:
    products: list[str]
    campaigns: list[str]
    owners: list[str]
    kinds: tuple[str, ...] = KINDS
    intents: tuple[tuple[str, str], ...] = tuple((i.value, LABELS[i]) for i in Intent)


def state_of(now: datetime) -> ColumnElement[str]:
    """The effective state of a thread, in SQL."""
    return case(
        (RT.state == ThreadState.DONE, ThreadState.DONE.value),
        (and_(RT.state == ThreadState.SNOOZED, RT.snoozed_until > now), ThreadState.SNOOZED.value),
        else_=ThreadState.OPEN.value,
    )


def _rank(now: datetime) -> ColumnElement[int]:
    """Open threads first, then snoozed ones, then done ones: `_RANK` of `state_of`, without
    computing the state once per comparison."""
    return case(
        (RT.state == ThreadState.DONE, _RANK[ThreadState.DONE.value]),
        (and_(RT.state == ThreadState.SNOOZED, RT.snoozed_until > now), _RANK[ThreadState.SNOOZED.value]),
        else_=_RANK[ThreadState.OPEN.value],
    )


def _where(uow: UnitOfWork, f: InboxFilter) -> list[ColumnElement[bool]]:
    """Every condition of `f` but the state."""
    # The canaries are a handful of leads (an index on audit_run_id): a set to test each
    # thread against, cheaper than a probe of the leads table per thread.
    canaries = select(m.Lead.id).where(m.Lead.audit_run_id.is_not(None))
    found: list[ColumnElement[bool]] = [
        RT.workspace_id == uow.workspace_id,
        RT.lead_id.in_(canaries) if f.audit else RT.lead_id.not_in(canaries),
    ]
    if f.product:
        found.append(
            RT.product_id.in_(
                select(m.Product.id).where(
                    m.Product.workspace_id == uow.workspace_id, m.Product.name == f.product
                )
            )
        )
    if f.campaign:
        found.append(
            select(m.Enrollment.id)
            .join(m.Campaign, m.Campaign.id == m.Enrollment.campaign_id)
            .where(m.Enrollment.lead_id == RT.lead_id, m.Campaign.name == f.campaign)
            .exists()
        )
    if f.intent:
        found.append(RT.intent == f.intent)
    if f.kind:
        found.append(RT.kind == f.kind)
    if f.owner:
        found.append(or_(RT.owner == f.owner, RT.assignee == f.owner))
    if f.q and f.q.strip():
        found.append(_matches(uow, f.q))
    return found


def _matches(uow: UnitOfWork, q: str) -> ColumnElement[bool]:
    """Every word of `q` in the lead's name, address or company, or in what they wrote."""
    conditions = []
    for word in q.split()[:8]:
        like = like_pattern(word)
        people = (
            select(m.Lead.id)
            .join(m.Contact, m.Contact.id == m.Lead.contact_id)
            .join(m.ContactAddress, m.ContactAddress.contact_id == m.Contact.id)
            .where(
                m.Lead.workspace_id == uow.workspace_id,
                or_(
                    (m.Contact.first_name + " " + m.Contact.last_name).ilike(like, escape="\\"),
                    m.Contact.company.ilike(like, escape="\\"),
                    m.ContactAddress.address.ilike(like, escape="\\"),
                ),
            )
        )
        conditions.append(or_(RT.lead_id.in_(people), RT.text.ilike(like, escape="\\")))
    return and_(*conditions)


def first_line(text: str | None, limit: int = 140) -> str:
    """The first line that says something, shortened to `limit` characters."""
    for raw in (text or "").splitlines():
        line = " ".join(raw.split())
        if line and not line.startswith(">"):
            return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"
    return ""


def _state_where(f: InboxFilter, now: datetime) -> list[ColumnElement[bool]]:
    if f.state == "open":
        return [
            RT.state != ThreadState.DONE,
            or_(RT.state == ThreadState.OPEN, RT.snoozed_until <= now, RT.snoozed_until.is_(None)),
        ]
    if f.state == "snoozed":
        return [RT.state == ThreadState.SNOOZED, RT.snoozed_until > now]
    if f.state == "done":
        return [RT.state == ThreadState.DONE]
    return []


def inbox_counts(uow: UnitOfWork, f: InboxFilter) -> dict[str, int]:
    """Threads per effective state under the filter's other conditions (the tabs' numbers)."""
    state = state_of(uow.clock.now())
    rows = uow.session.execute(select(state, func.count()).where(*_where(uow, f)).group_by(state)).all()
    found = {str(s): int(n) for s, n in rows}
    counts = {s: found.get(s, 0) for s in ("open", "snoozed", "done")}
    return {**counts, "all": sum(counts.values())}


def inbox(
    uow: UnitOfWork, settings: Settings, f: InboxFilter, *, page: int = 1, per_page: int = 50
) -> Page[InboxRow]:
    """One page of threads: open ones first, then the most recently changed.

    The page is chosen by its ids alone and its rows read after: ordering the threads sorted
    every matching one (20,000) with all its columns, its text among them."""
    now = uow.clock.now()
    offset, limit = bounds(page, per_page)
    latest: list[ColumnElement[Any]] = [RT.updated_at.desc(), RT.id.desc()]
    order = [_rank(now), *latest] if f.state == "all" else latest
    chosen = (
        select(RT.id)
        .where(*_where(uow, f), *_state_where(f, now))
        .order_by(*order)
        .offset(offset)
        .limit(limit)
    )
    rows = uow.session.execute(select(RT, state_of(now)).where(RT.id.in_(chosen)).order_by(*order)).all()
    contexts = contexts_for(uow, [t.lead_id for t, _ in rows])
    waiting = waiting_on_them(uow, [t.id for t, _ in rows])
    items = []
    for thread, effective in rows:
        context = contexts[thread.lead_id]
        text, actions = next_step_for(thread, context, now, settings, uow.session, waiting=waiting[thread.id])
        items.append(
            InboxRow(
                id=thread.id,
                state=str(effective),
                kind=thread.kind,
                intent=thread.intent,
                intent_label=LABELS[Intent(thread.intent)] if thread.intent else None,
                subject=thread.subject,
                product=context.product,
                campaign=context.campaigns[0] if context.campaigns else None,
                lead_id=thread.lead_id,
                lead=context.email,
                lead_name=context.name,
                company=context.company,
                lead_state=context.lead_state,
                owner=thread.owner,
                assignee=thread.assignee,
                crossed=bool(thread.crossed),
                recommended_next_step=text,
                actions=actions,
                other_active_products=[p.product for p in context.other_products],
                snoozed_until=thread.snoozed_until,
                created_at=thread.created_at,
                updated_at=thread.updated_at,
                first_line=first_line(thread.text),
            )
        )
    return paged(items, page, per_page)


def filter_options(uow: UnitOfWork) -> FilterOptions:
    """What the inbox's filters offer: the workspace's products, campaigns and the people
    threads are owned by or assigned to."""
    ws = uow.workspace_id
    products = uow.session.scalars(
        select(m.Product.name).where(m.Product.workspace_id == ws).order_by(m.Product.name)
    )
    campaigns = uow.session.scalars(
        select(m.Campaign.name).where(m.Campaign.workspace_id == ws).order_by(m.Campaign.name)
    )
    owners = set(uow.session.scalars(select(RT.owner).where(RT.workspace_id == ws).distinct()))
    owners |= set(
        uow.session.scalars(
            select(RT.assignee).where(RT.workspace_id == ws, RT.assignee.is_not(None)).distinct()
        )
    )
    return FilterOptions(list(products), list(campaigns), sorted(o for o in owners if o))


def as_json(row: InboxRow) -> dict[str, Any]:
    """The row as the API returns it."""
    return {name: getattr(row, name) for name in InboxRow.__dataclass_fields__}
