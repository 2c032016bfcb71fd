"""What the charts draw: replies, out-of-office answers and bounces per day, per campaign.

A reply belongs to the lead; it is counted for every campaign the lead is enrolled in (a
lead is rarely in two campaigns of one product at once, and then both should see it). Days
are UTC days.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta

from sqlalchemy import ColumnElement, SQLColumnExpression, func, select

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
