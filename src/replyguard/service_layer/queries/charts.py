"""What the charts draw: replies, out-of-office answers and bounces per day, per campaign; and
the time from a reply to a person's first action on its thread, per campaign.

A reply belongs to the lead; it is counted for every campaign the lead is enrolled in (a
lead is rarely in two campaigns of one product at once, and then both should see it). Days
are UTC days.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from sqlalchemy import ColumnElement, Float, SQLColumnExpression, case, cast, func, literal, select

from replyguard.adapters.db import models as m
from replyguard.domain.states import ReplyKind
from replyguard.service_layer.queries import NotFound
from replyguard.service_layer.uow import UnitOfWork

SERIES = ("replies", "out_of_office", "bounces", "other")
_SERIES_OF: dict[str, str] = {
    ReplyKind.HUMAN_REPLY: "replies",
    ReplyKind.OUT_OF_OFFICE: "out_of_office",
    ReplyKind.BOUNCE_HARD: "bounces",
    ReplyKind.BOUNCE_SOFT: "bounces",
}


@dataclass(frozen=True, slots=True)
class DayKinds:
    day: date
    replies: int = 0
    out_of_office: int = 0
    bounces: int = 0
    other: int = 0  # automatic replies and unsubscribe requests


@dataclass(frozen=True, slots=True)
class CampaignActivity:
    campaign_id: int
    campaign: str
    product: str
    days: list[DayKinds]
    totals: dict[str, int] = field(default_factory=dict)


def seconds_between(
    uow: UnitOfWork, start: SQLColumnExpression[datetime], end: SQLColumnExpression[datetime]
) -> ColumnElement[float]:
    """`end - start` in seconds, computed by the database."""
    if uow.postgres:
        return cast(func.extract("epoch", end - start), Float)
    return (func.julianday(end) - func.julianday(start)) * cast(86400.0, Float)


def utc_day(uow: UnitOfWork, column: SQLColumnExpression[datetime]) -> ColumnElement[str]:
    """The UTC day of a stored time as 'YYYY-MM-DD', in SQL (SQLite stores UTC text)."""
    if uow.postgres:
        return func.to_char(func.timezone("UTC", column), "YYYY-MM-DD")
    return func.substr(column, 1, 10)


def reply_activity(
    uow: UnitOfWork, *, days: int = 30, campaign_id: int | None = None
) -> list[CampaignActivity]:
    """One series per campaign of the workspace (or only `campaign_id`), the last `days` days."""
    days = min(max(days, 1), 366)
    today = uow.clock.now().date()
    first = today - timedelta(days=days - 1)
    campaigns = select(m.Campaign.id, m.Campaign.name, m.Product.name).join(
        m.Product, m.Product.id == m.Campaign.product_id
    )
    campaigns = campaigns.where(m.Campaign.workspace_id == uow.workspace_id)
    if campaign_id is not None:
        campaigns = campaigns.where(m.Campaign.id == campaign_id)
    listed = uow.session.execute(campaigns.order_by(m.Campaign.name)).all()
    if campaign_id is not None and not listed:
        raise NotFound(f"no campaign {campaign_id}")
    counts: dict[int, dict[date, dict[str, int]]] = {cid: {} for cid, _, _ in listed}
    day = utc_day(uow, m.Reply.received_at)
    replies = (
        select(m.Enrollment.campaign_id, day, m.Reply.kind, func.count())
        .join(m.Enrollment, m.Enrollment.lead_id == m.Reply.lead_id)
        .where(
            m.Reply.workspace_id == uow.workspace_id,
            m.Reply.received_at >= datetime.combine(first, time(0), tzinfo=UTC),
            m.Enrollment.campaign_id.in_(list(counts)),
        )
        .group_by(m.Enrollment.campaign_id, day, m.Reply.kind)
    )
    for cid, day_text, kind, n in uow.session.execute(replies):
        per_kind = counts[cid].setdefault(date.fromisoformat(str(day_text)), dict.fromkeys(SERIES, 0))
        per_kind[_SERIES_OF.get(kind, "other")] += n
    result = []
    for cid, name, product in listed:
        per_day = [DayKinds(d, **counts[cid].get(d, {})) for d in (first + timedelta(i) for i in range(days))]
        totals = {s: sum(getattr(day, s) for day in per_day) for s in SERIES}
        result.append(CampaignActivity(cid, name, product, per_day, totals))
    return result


#: How long people took to act on a reply, as the chart's bars: (label, upper bound in seconds).
RESPONSE_BUCKETS: tuple[tuple[str, float], ...] = (
    ("< 1 h", 3600.0),
    ("1–4 h", 4 * 3600.0),
    ("4–24 h", 86400.0),
    ("1–3 days", 3 * 86400.0),
    ("> 3 days", float("inf")),
)
#: A person's actions on a thread: a decision (resume, stop, done, assign...) or an answer sent.
ACTIONS = ("thread_decision", "person_reply_sent")


@dataclass(frozen=True, slots=True)
class FirstAction:
    """Replies of the last days whose thread a person acted on, and how fast; those still
    waiting for a first action, and for how long the oldest has."""

    campaign_id: int
    campaign: str
    product: str
    acted: int
    waiting: int
    median_seconds: float | None
    p90_seconds: float | None
    oldest_waiting_seconds: float | None
    buckets: list[tuple[str, int]]


def first_action(uow: UnitOfWork, *, days: int = 30, campaign_id: int | None = None) -> list[FirstAction]:
    """Time from a reply to the first action a person took on its thread, per campaign: a
    thread's first `thread_decision` or answer sent (events) at or after the reply it was
    opened or updated for, for replies received in the last `days` days. Canary threads are
    left out.

    One statement; the database pairs each reply with its first action and counts what still
    waits. `firsts` is each thread's first action after its reply: a grouped MIN over the
    window's actions (an index range of `ix_events_workspace_kind_at`), each joined to its thread
    and the thread's reply. The window's threads, with their reply and campaigns, take it by an
    outer join and come back as numbers, computed by the database: a row per thread acted on
    (seconds from the window's start to its reply and to its first action), and one per campaign
    for the threads nobody acted on yet (how many, and the earliest reply). Python subtracts,
    sorts and counts. (A row object per thread, 20,000 of them alive at once, cost more than the
    reads and set off a full garbage collection every few page loads.)"""
    days = min(max(days, 1), 366)
    now = uow.clock.now()
    since = datetime.combine(now.date() - timedelta(days=days - 1), time(0), tzinfo=UTC)
    start = literal(since, m.UTCDateTime(timezone=True))
    listed = _campaigns(uow, campaign_id)
    firsts = (
        select(m.RescueThread.id.label("thread_id"), func.min(m.Event.at).label("at"))
        .select_from(m.Event)
        .join(m.RescueThread, m.RescueThread.id == m.Event.data["thread_id"].as_integer())
        .join(m.Reply, m.Reply.id == m.RescueThread.reply_id)
        .where(
            m.Event.workspace_id == uow.workspace_id,
            m.Event.kind.in_(ACTIONS),
            m.Event.at >= since,
            m.Event.at >= m.Reply.received_at,
        )
        .group_by(m.RescueThread.id)
        .subquery("firsts")
    )
    canaries = select(m.Lead.id).where(m.Lead.audit_run_id.is_not(None))  # a few, by an index
    # A thread acted on is a group of its own; those still waiting are one group per campaign.
    group = case((firsts.c.at.is_(None), None), else_=m.RescueThread.id)
    rows = uow.session.connection().execute(
        select(
            m.Enrollment.campaign_id,
            func.count(),
            func.min(seconds_between(uow, start, m.Reply.received_at)),
            func.min(seconds_between(uow, start, firsts.c.at)),
        )
        .select_from(m.RescueThread)
        .join(m.Reply, m.Reply.id == m.RescueThread.reply_id)
        .join(m.Enrollment, m.Enrollment.lead_id == m.RescueThread.lead_id)
        .outerjoin(firsts, firsts.c.thread_id == m.RescueThread.id)
        .where(
            m.RescueThread.workspace_id == uow.workspace_id,
            m.Reply.received_at >= since,
            m.Enrollment.campaign_id.in_([cid for cid, _, _ in listed]),
            m.RescueThread.lead_id.not_in(canaries),
        )
        .group_by(m.Enrollment.campaign_id, group)
    )
    age_now = (now - since).total_seconds()
    took: dict[int, list[float]] = {cid: [] for cid, _, _ in listed}
    waiting: dict[int, tuple[int, float | None]] = dict.fromkeys(took, (0, None))
    for cid, n, received, acted in rows:
        if acted is None:  # the oldest wait is the earliest reply's (julianday: ~10 µs of noise)
            waiting[cid] = (n, max(round(age_now - received, 3), 0.0))
        else:
            took[cid].append(max(round(acted - received, 3), 0.0))
    return [_first_action(cid, name, product, took[cid], *waiting[cid]) for cid, name, product in listed]


def _campaigns(uow: UnitOfWork, campaign_id: int | None) -> list[Any]:
    query = (
        select(m.Campaign.id, m.Campaign.name, m.Product.name)
        .join(m.Product, m.Product.id == m.Campaign.product_id)
        .where(m.Campaign.workspace_id == uow.workspace_id)
    )
    if campaign_id is not None:
        query = query.where(m.Campaign.id == campaign_id)
    listed = list(uow.session.execute(query.order_by(m.Campaign.name)).all())
    if campaign_id is not None and not listed:
        raise NotFound(f"no campaign {campaign_id}")
    return listed


def _first_action(
    cid: int, name: str, product: str, took: list[float], waiting: int, oldest: float | None
) -> FirstAction:
    took = sorted(took)
    # Every time is >= 0: a bucket holds the times below its bound less those below the last.
    below = [bisect_left(took, upper) for _, upper in RESPONSE_BUCKETS]
    counts = [n - lower for n, lower in zip(below, [0, *below[:-1]], strict=True)]
    buckets = [(label, n) for (label, _), n in zip(RESPONSE_BUCKETS, counts, strict=True)]
    return FirstAction(
        cid, name, product, len(took), waiting, _quantile(took, 0.5), _quantile(took, 0.9), oldest, buckets
    )


def _quantile(ordered: list[float], q: float) -> float | None:
    """The nearest-rank quantile of sorted values (None for none)."""
    if not ordered:
        return None
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]
