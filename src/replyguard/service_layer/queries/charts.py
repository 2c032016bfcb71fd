"""What the charts draw: replies, out-of-office answers and bounces per day, per campaign.

A reply belongs to the lead; it is counted for every campaign the lead is enrolled in (a
lead is rarely in two campaigns of one product at once, and then both should see it). Days
are UTC days.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta

from sqlalchemy import select

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
    replies = (
        select(m.Enrollment.campaign_id, m.Reply.received_at, m.Reply.kind)
        .join(m.Enrollment, m.Enrollment.lead_id == m.Reply.lead_id)
        .where(
            m.Reply.workspace_id == uow.workspace_id,
            m.Reply.received_at >= datetime.combine(first, time(0), tzinfo=UTC),
            m.Enrollment.campaign_id.in_(list(counts)),
        )
    )
    for cid, received_at, kind in uow.session.execute(replies):
        day = counts[cid].setdefault(received_at.date(), dict.fromkeys(SERIES, 0))
        day[_SERIES_OF.get(kind, "other")] += 1
    result = []
    for cid, name, product in listed:
        per_day = [DayKinds(d, **counts[cid].get(d, {})) for d in (first + timedelta(i) for i in range(days))]
        totals = {s: sum(getattr(day, s) for day in per_day) for s in SERIES}
        result.append(CampaignActivity(cid, name, product, per_day, totals))
    return result
