"""The campaign list and the campaign page: steps, the queue by state, sends per day."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta

from sqlalchemy import Select, func, select, union_all

from replyguard.adapters.db import models as m
from replyguard.domain.schedule import load_zone, local_day
from replyguard.domain.states import ReplyKind, ReplyState, StepState
from replyguard.service_layer import step_tallies as tallies
from replyguard.service_layer.queries import NotFound, Page, bounds, paged
from replyguard.service_layer.step_tallies import StepCounts
from replyguard.service_layer.uow import UnitOfWork

#: The queue as people read it. "sending" holds claimed steps too (a worker has them).
#: "held" is a view across "scheduled" and "awaiting_approval": the queued steps of leads that
#: wait for a person (held) or for their return (out of office), which go nowhere until then.
QUEUE = ("scheduled", "awaiting_approval", "held", "sending", "sent", "cancelled", "failed", "unknown")
_STATES_OF = {
    "scheduled": (StepState.SCHEDULED,),
    "awaiting_approval": (StepState.AWAITING_APPROVAL,),
    "sending": (StepState.CLAIMED, StepState.SENDING),
    "sent": (StepState.SENT,),
    "cancelled": (StepState.CANCELLED,),
    "failed": (StepState.FAILED,),
    "unknown": (StepState.UNKNOWN,),
}
_UPCOMING = frozenset({"scheduled", "awaiting_approval", "held", "sending"})
_HELD_LEADS = (ReplyState.HELD, ReplyState.OUT_OF_OFFICE)
_QUEUED = (StepState.SCHEDULED, StepState.AWAITING_APPROVAL)
_USING_SLOT = (StepState.CLAIMED, StepState.SENDING, StepState.SENT, StepState.UNKNOWN)


@dataclass(frozen=True, slots=True)
class CampaignRow:
    id: int
    name: str
    product: str
    mailbox: str
    owner: str
    status: str
    daily_cap: int
    created_at: datetime
    enrolled: int
    awaiting_approval: int


@dataclass(frozen=True, slots=True)
class StepTemplate:
    position: int
    wait_seconds: int
    subject: str | None
    body: str
    approval: bool
    retired: bool = False  # removed by an edit: kept for the emails it sent, not for new ones


@dataclass(frozen=True, slots=True)
class CampaignDetail:
    id: int
    name: str
    product_id: int
    product: str
    mailbox: str
    from_name: str
    owner: str
    timezone: str
    window_days: list[str]
    window_start: str
    window_end: str
    daily_cap: int
    mailbox_cap: int
    status: str
    created_at: datetime
    source: str
    steps: list[StepTemplate]
    enrolled: int
    queue: dict[str, int]


@dataclass(frozen=True, slots=True)
class QueueRow:
    step_id: int
    position: int
    lead_id: int
    to_address: str
    subject: str
    state: str
    due_at: datetime
    sent_at: datetime | None
    cancel_reason: str | None
    crossed: bool
    attempts: int
    last_error: str | None
    lead_state: str


@dataclass(frozen=True, slots=True)
class DaySends:
    day: date
    campaign: int  # this campaign's sends that day
    mailbox: int  # every send of the mailbox that day: what the cap counts


@dataclass(frozen=True, slots=True)
class SendsPerDay:
    mailbox: str
    mailbox_cap: int
    campaign_cap: int
    days: list[DaySends]


def _campaign(uow: UnitOfWork, campaign_id: int) -> m.Campaign:
    campaign = uow.session.scalar(
        select(m.Campaign).where(m.Campaign.id == campaign_id, m.Campaign.workspace_id == uow.workspace_id)
    )
    if campaign is None:
        raise NotFound(f"no campaign {campaign_id}")
    return campaign


def _template_ids(uow: UnitOfWork, campaign_id: int) -> list[int]:
    # A campaign's steps are found through its few templates: ix_steps_campaign_step_state_due.
    return list(
        uow.session.scalars(select(m.CampaignStep.id).where(m.CampaignStep.campaign_id == campaign_id))
    )


def list_campaigns(uow: UnitOfWork) -> list[CampaignRow]:
    campaigns = uow.session.execute(
        select(m.Campaign, m.Product.name, m.Mailbox.address, m.Mailbox.daily_cap)
        .join(m.Product, m.Product.id == m.Campaign.product_id)
        .join(m.Mailbox, m.Mailbox.id == m.Campaign.mailbox_id)
        .where(m.Campaign.workspace_id == uow.workspace_id)
        .order_by(m.Campaign.created_at.desc(), m.Campaign.id.desc())
    ).all()
    ids = [c.id for c, _, _, _ in campaigns]
    enrolled = dict(
        uow.session.execute(
            select(m.Enrollment.campaign_id, func.count())
            .where(m.Enrollment.campaign_id.in_(ids))
            .group_by(m.Enrollment.campaign_id)
        ).all()
    )
    template_of = dict(
        uow.session.execute(
            select(m.CampaignStep.id, m.CampaignStep.campaign_id).where(m.CampaignStep.campaign_id.in_(ids))
        ).all()
    )
    waiting: dict[int, int] = {}
    for (template_id, state), n in _step_counts(uow, list(template_of)).items():
        if state == StepState.AWAITING_APPROVAL:
            waiting[template_of[template_id]] = waiting.get(template_of[template_id], 0) + n
    return [
        CampaignRow(
            c.id,
            c.name,
            p,
            mb,
            c.owner,
            c.status,
            cap,  # the cap belongs to the mailbox (shared by its campaigns)
            c.created_at,
            enrolled.get(c.id, 0),
            waiting.get(c.id, 0),
        )
        for c, p, mb, cap in campaigns
    ]


def step_counts(uow: UnitOfWork, campaign_id: int) -> StepCounts:
    """How many of the campaign's steps each template has in each state ({(template id,
    state): count}): the campaign page reads it once for its queue tabs (`campaign_detail`)
    and its per-step sent figures (`step_stats`)."""
    c = _campaign(uow, campaign_id)
    return _step_counts(uow, _template_ids(uow, c.id))


def _step_counts(uow: UnitOfWork, template_ids: list[int]) -> StepCounts:
    # The ledger the database keeps beside the steps (service_layer/step_tallies.py): a few
    # dozen rows, where counting the steps read a million index entries (~100 ms).
    return tallies.step_counts(uow.session.connection(), uow.workspace_id, template_ids)


def campaign_detail(uow: UnitOfWork, campaign_id: int, *, counts: StepCounts | None = None) -> CampaignDetail:
    """The campaign with its queue's counts (`counts`: `step_counts` already read)."""
    c = _campaign(uow, campaign_id)
    product = uow.session.get_one(m.Product, c.product_id)
    mailbox = uow.session.get_one(m.Mailbox, c.mailbox_id)
    templates = list(
        uow.session.scalars(
            select(m.CampaignStep).where(m.CampaignStep.campaign_id == c.id).order_by(m.CampaignStep.position)
        )
    )
    by_state: dict[str, int] = {}
    if counts is None:
        counts = _step_counts(uow, [t.id for t in templates])
    for (_template, state), n in counts.items():
        by_state[state] = by_state.get(state, 0) + n
    queue = {name: sum(by_state.get(s, 0) for s in states) for name, states in _STATES_OF.items()}
    queue["held"] = (
        uow.session.scalar(
            select(func.count()).select_from(_held_steps(c.product_id, [t.id for t in templates]).subquery())
        )
        or 0
    )
    queue = {name: queue[name] for name in QUEUE}
    enrolled = uow.session.scalar(select(func.count()).where(m.Enrollment.campaign_id == c.id)) or 0
    return CampaignDetail(
        id=c.id,
        name=c.name,
        product_id=product.id,
        product=product.name,
        mailbox=mailbox.address,
        from_name=mailbox.from_name,
        owner=c.owner,
        timezone=c.timezone,
        window_days=c.window_days.split(","),
        window_start=c.window_start,
        window_end=c.window_end,
        daily_cap=mailbox.daily_cap,
        mailbox_cap=mailbox.daily_cap,
        status=c.status,
        created_at=c.created_at,
        source=c.source,
        steps=[
            StepTemplate(t.position, t.wait_seconds, t.subject, t.body, t.approval, t.retired_at is not None)
            for t in templates
        ],
        enrolled=enrolled,
        queue=queue,
    )


def campaign_queue(
    uow: UnitOfWork, campaign_id: int, state: str, *, page: int = 1, per_page: int = 50
) -> Page[QueueRow]:
    """Steps of the campaign in one queue state: upcoming ones soonest first, finished ones
    latest first.

    Each (template, state) range of ix_steps_campaign_queue is already in due order, so the
    page is merged from one ordered index read per range, a UNION ALL of the ranges with the
    order, offset and limit on the whole, which the database runs as a merge that stops after
    offset + page rows. A single query over all templates would sort every matching step
    (400,000 sent steps: half a second) first. The two databases merge different forms:
    SQLite's MERGE (UNION ALL) takes the plain ranges (ranges cut in subqueries were each
    sorted again: page 200 of the sent tab 23-42 ms, 1 ms merged), and PostgreSQL's Merge
    Append needs each range ordered and cut to offset + page rows in its own subquery (the
    plain ranges were read whole and sorted: 200-370 ms; 2-7 ms cut).
    Only the page's ids come back.
    """
    if state not in QUEUE:
        raise ValueError(f"unknown queue state {state!r}; use one of {', '.join(QUEUE)}")
    c = _campaign(uow, campaign_id)
    offset, limit = bounds(page, per_page)
    if state == "held":
        held = _held_steps(c.product_id, _template_ids(uow, c.id)).order_by(m.Step.due_at, m.Step.id)
        rows = uow.session.execute(held.offset(offset).limit(limit))
        return paged([_queue_row(step, lead_state) for step, lead_state in rows], page, per_page)
    upcoming = state in _UPCOMING
    ordered = (m.Step.due_at, m.Step.id) if upcoming else (m.Step.due_at.desc(), m.Step.id.desc())
    ranges = [
        select(m.Step.due_at, m.Step.id).where(m.Step.campaign_step_id == t, m.Step.state == step_state)
        for t in _template_ids(uow, c.id)
        for step_state in _STATES_OF[state]
    ]
    if not ranges:
        return paged([], page, per_page)
    if uow.postgres:
        cut = [r.order_by(*ordered).limit(offset + limit).subquery() for r in ranges]
        ranges = [select(r.c.due_at, r.c.id) for r in cut]
    merged = union_all(*ranges) if len(ranges) > 1 else ranges[0]
    due, step_id = merged.selected_columns.due_at, merged.selected_columns.id
    by = (due, step_id) if upcoming else (due.desc(), step_id.desc())
    wanted = [i for _due, i in uow.session.execute(merged.order_by(*by).offset(offset).limit(limit))]
    found = {
        s.id: (s, lead_state)
        for s, lead_state in uow.session.execute(
            select(m.Step, m.Lead.reply_state)
            .join(m.Lead, m.Lead.id == m.Step.lead_id)
            .where(m.Step.id.in_(wanted))
        )
    }
    items = [_queue_row(*found[i]) for i in wanted if i in found]
    return paged(items, page, per_page)


def _held_steps(product_id: int, template_ids: list[int]) -> Select[m.Step, str]:
    """Queued steps of the campaign whose lead waits (held, or away): few leads, found through
    ix_leads_product_state, then their steps through ix_steps_lead_state.

    The steps' template and state are compared as expressions (`+ 0`, `|| ''`), which no index
    serves, so the steps are reached only from their leads: SQLite, which keeps no
    statistics, otherwise starts from the campaign's queued steps (hundreds of thousands at a
    million steps, through ix_steps_campaign_queue or ix_steps_due: 560-610 ms for a count of
    none) and looks up each one's lead."""
    return (
        select(m.Step, m.Lead.reply_state)
        .join(m.Lead, m.Lead.id == m.Step.lead_id)
        .where(
            m.Lead.product_id == product_id,
            m.Lead.reply_state.in_(_HELD_LEADS),
            (m.Step.campaign_step_id + 0).in_(template_ids),
            (m.Step.state + "").in_(_QUEUED),
        )
    )


def _queue_row(s: m.Step, lead_state: str) -> QueueRow:
    return QueueRow(
        s.id,
        s.position,
        s.lead_id,
        s.to_address,
        s.subject,
        s.state,
        s.due_at,
        s.sent_at,
        s.cancel_reason,
        s.crossed,
        s.attempts,
        s.last_error,
        lead_state,
    )


#: Cancel reasons are counted over this many of each template's latest cancelled steps: the
#: reason is not in the queue index, so counting all of them reads every cancelled row.
REASONS_SAMPLE = 2000


@dataclass(frozen=True, slots=True)
class CancelReasons:
    counts: dict[str, int]  # most frequent first
    counted: int
    complete: bool  # False: only the latest REASONS_SAMPLE per step of the campaign


def cancel_reasons(uow: UnitOfWork, campaign_id: int) -> CancelReasons:
    """Why the campaign's latest cancelled steps were cancelled."""
    c = _campaign(uow, campaign_id)
    counts: dict[str, int] = {}
    complete = True
    for template_id in _template_ids(uow, c.id):
        latest = (
            select(m.Step.cancel_reason)
            .where(m.Step.campaign_step_id == template_id, m.Step.state == StepState.CANCELLED)
            .order_by(m.Step.due_at.desc(), m.Step.id.desc())
            .limit(REASONS_SAMPLE + 1)
        )
        reasons = list(uow.session.scalars(latest))
        complete = complete and len(reasons) <= REASONS_SAMPLE
        for reason in reasons[:REASONS_SAMPLE]:
            key = reason or "unspecified"
            counts[key] = counts.get(key, 0) + 1
    ordered = dict(sorted(counts.items(), key=lambda item: -item[1]))
    return CancelReasons(ordered, sum(counts.values()), complete)


def sends_per_day(uow: UnitOfWork, campaign_id: int, *, days: int = 14) -> SendsPerDay:
    """The last `days` days (in the mailbox's time zone, today included): this campaign's
    sends and every send of its mailbox, which is what the daily cap counts."""
    c = _campaign(uow, campaign_id)
    mailbox = uow.session.get_one(m.Mailbox, c.mailbox_id)
    today = local_day(uow.clock.now(), load_zone(mailbox.timezone))
    first = today - timedelta(days=days - 1)
    templates = set(_template_ids(uow, c.id))
    counts: dict[date, list[int]] = {first + timedelta(days=i): [0, 0] for i in range(days)}
    # Grouped in ix_steps_mailbox_day's order (mailbox, day, state, template): counted as the
    # index is read. Without the state the groups needed a sort of every send of the 14 days
    # (28,000 at 2,000 a day: 45-51 ms on SQLite against 22).
    for day, _state, template_id, n in uow.session.execute(
        select(m.Step.send_day, m.Step.state, m.Step.campaign_step_id, func.count())
        .where(m.Step.mailbox_id == mailbox.id, m.Step.send_day >= first, m.Step.state.in_(_USING_SLOT))
        .group_by(m.Step.send_day, m.Step.state, m.Step.campaign_step_id)
    ):
        if day in counts:
            counts[day][1] += n
            if template_id in templates:
                counts[day][0] += n
    return SendsPerDay(
        mailbox.address,
        mailbox.daily_cap,
        mailbox.daily_cap,
        [DaySends(day, mine, total) for day, (mine, total) in sorted(counts.items())],
    )


@dataclass(frozen=True, slots=True)
class StepStats:
    """What one step of the campaign did: emails sent, and the leads whose answer came after
    this step (the last email of the campaign they had been sent when it arrived)."""

    position: int
    sent: int
    replied: int
    out_of_office: int
    bounced: int

    @property
    def reply_rate(self) -> float | None:
        """Replied leads per email sent, as a percentage (None: nothing sent yet)."""
        return round(100.0 * self.replied / self.sent, 1) if self.sent else None


_STAT_OF = {
    ReplyKind.HUMAN_REPLY: "replied",
    ReplyKind.OUT_OF_OFFICE: "out_of_office",
    ReplyKind.BOUNCE_HARD: "bounced",
    ReplyKind.BOUNCE_SOFT: "bounced",
}


def step_stats(uow: UnitOfWork, campaign_id: int, *, counts: StepCounts | None = None) -> list[StepStats]:
    """Per step of the campaign (retired ones too): sent, replied, out of office, bounced.

    A reply, absence note or bounce is counted once per lead and kind, for the step whose
    email the lead had been sent last (of this campaign) when it arrived: the email it answers.
    `counts`: `step_counts` already read (the sent figures are in it).
    """
    c = _campaign(uow, campaign_id)
    templates = list(
        uow.session.execute(
            select(m.CampaignStep.id, m.CampaignStep.position)
            .where(m.CampaignStep.campaign_id == c.id)
            .order_by(m.CampaignStep.position)
        )
    )
    ids = [t for t, _ in templates]
    if counts is None:
        counts = _step_counts(uow, ids)
    sent = {template: n for (template, state), n in counts.items() if state == StepState.SENT}
    counted = _answered(uow, c.id, ids)
    return [
        StepStats(
            position,
            sent.get(template_id, 0),
            *(len(counted.get((template_id, what), ())) for what in ("replied", "out_of_office", "bounced")),
        )
        for template_id, position in templates
    ]


def _answered(uow: UnitOfWork, campaign_id: int, ids: list[int]) -> dict[tuple[int, str], set[int]]:
    """{(template, what): leads} for the campaign's replies, absences and bounces, each counted
    for the email it answers (the lead's last step of the campaign sent before it arrived).

    Remembered (`uow.memo`), proved by the workspace's reply count and newest reply id: replies are
    only ever inserted, and what a stored reply answers never changes afterwards, because a step
    is marked sent with the time it is marked (`sent_at` = now), after every reply already stored
    (whose `received_at` is the time it was stored). The count catches a reply committed after a
    newer id. A page load then costs one index read here instead of one lookup per reply
    (20,000 replies: 90 ms)."""
    replies = uow.session.execute(
        select(func.count(), func.max(m.Reply.id)).where(m.Reply.workspace_id == uow.workspace_id)
    ).one()
    key, proof = ("answered", uow.workspace_id, campaign_id, tuple(ids)), (replies[0], replies[1])
    found: dict[tuple[int, str], set[int]] | None = uow.memo.get(key, proof)
    if found is not None:
        return found
    answered = (
        select(m.Step.campaign_step_id)
        .where(
            m.Step.lead_id == m.Reply.lead_id,
            m.Step.campaign_step_id.in_(ids),
            m.Step.state == StepState.SENT,
            m.Step.sent_at <= m.Reply.received_at,
        )
        .order_by(m.Step.sent_at.desc(), m.Step.id.desc())
        .limit(1)
        .correlate(m.Reply)
        .scalar_subquery()
    )
    enrolled = select(m.Enrollment.lead_id).where(m.Enrollment.campaign_id == campaign_id)
    found = {}
    for template_id, kind, lead_id in uow.session.execute(
        select(answered, m.Reply.kind, m.Reply.lead_id)
        .where(
            m.Reply.workspace_id == uow.workspace_id,
            m.Reply.lead_id.in_(enrolled),
            m.Reply.kind.in_(list(_STAT_OF)),
        )
        .distinct()
    ):
        if template_id is not None:
            found.setdefault((template_id, _STAT_OF[kind]), set()).add(lead_id)
    uow.memo.put(key, found, proof)
    return found


def first_busy_state(queue: dict[str, int]) -> str:
    """The queue tab a campaign page opens on: the first one with steps in it."""
    return next((state for state in QUEUE if queue.get(state)), QUEUE[0])


@dataclass(frozen=True, slots=True)
class LeadChoice:
    lead_id: int
    label: str  # "Ada Lovelace <ada@lovelace.test>"


def lead_choices(uow: UnitOfWork, campaign_id: int, *, limit: int = 200) -> list[LeadChoice]:
    """Leads a step can be previewed for: the campaign's enrolled leads (the first `limit`),
    or, before any is enrolled, its product's.

    The enrolled ones are read in lead order from ix_enrollments_campaign_lead (campaign_id,
    lead_id), which stops after `limit`: `leads.id IN (the campaign's enrollments)` made SQLite
    list every enrolled lead first (100,000: 30-38 ms)."""
    c = _campaign(uow, campaign_id)
    enrolled = select(m.Enrollment.lead_id).where(m.Enrollment.campaign_id == c.id)
    leads = select(m.Lead.id, m.Contact.first_name, m.Contact.last_name, m.ContactAddress.address)
    if uow.session.scalar(enrolled.limit(1)) is not None:
        leads = (
            leads.select_from(m.Enrollment)
            .join(m.Lead, m.Lead.id == m.Enrollment.lead_id)
            .where(m.Enrollment.campaign_id == c.id)
            .order_by(m.Enrollment.lead_id)
        )
    else:
        leads = leads.order_by(m.Lead.id)
    query = (
        leads.join(m.Contact, m.Contact.id == m.Lead.contact_id)
        .join(m.ContactAddress, m.ContactAddress.contact_id == m.Contact.id)
        .where(
            m.Lead.workspace_id == uow.workspace_id,
            m.Lead.product_id == c.product_id,
            m.Lead.audit_run_id.is_(None),
            m.ContactAddress.is_primary.is_(True),
        )
        .limit(limit)
    )
    rows = uow.session.execute(query).all()
    return [LeadChoice(i, f"{f} {la}".strip() + f" <{a}>" if f or la else a) for i, f, la, a in rows]
