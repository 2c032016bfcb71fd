"""Products of the workspace (what a lead import or a campaign belongs to)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from sqlalchemy import func, select

from replyguard.adapters.db import models as m
from replyguard.service_layer.queries import NotFound
from replyguard.service_layer.uow import UnitOfWork


class ProductNotFound(NotFound):
    """No product of that name in this workspace; the message lists the ones there are."""


@dataclass(frozen=True, slots=True)
class ProductSummary:
    name: str
    campaigns: list[str] = field(default_factory=list)
    leads: int = 0
    lead_states: dict[str, int] = field(default_factory=dict)  # reply state -> leads


def product_names(uow: UnitOfWork) -> list[str]:
    return list(
        uow.session.scalars(
            select(m.Product.name).where(m.Product.workspace_id == uow.workspace_id).order_by(m.Product.name)
        )
    )


def require_product(uow: UnitOfWork, name: str) -> None:
    """Raise ProductNotFound, naming the known products, unless `name` is one of them.

    A typo in a product name must not quietly become a new, empty product (the leads imported
    into it would then never be enrolled by the campaign that was meant)."""
    known = product_names(uow)
    if name not in known:
        raise ProductNotFound(f"no product named {name!r} (known: {', '.join(known) or 'none'})")


def list_products(uow: UnitOfWork) -> list[ProductSummary]:
    """Every product by name, with its campaigns and how many of its leads are in each state."""
    ws = uow.workspace_id
    campaigns: dict[int, list[str]] = defaultdict(list)
    for product_id, name in uow.session.execute(
        select(m.Campaign.product_id, m.Campaign.name)
        .where(m.Campaign.workspace_id == ws)
        .order_by(m.Campaign.name)
    ):
        campaigns[product_id].append(name)
    states: dict[int, dict[str, int]] = defaultdict(dict)
    for product_id, state, count in uow.session.execute(
        select(m.Lead.product_id, m.Lead.reply_state, func.count())
        .where(m.Lead.workspace_id == ws, m.Lead.audit_run_id.is_(None))
        .group_by(m.Lead.product_id, m.Lead.reply_state)
    ):
        states[product_id][state] = count
    products = uow.session.execute(
        select(m.Product.id, m.Product.name).where(m.Product.workspace_id == ws).order_by(m.Product.name)
    ).all()
    return [
        ProductSummary(
            name,
            campaigns[product_id],
            sum(states[product_id].values()),
            dict(sorted(states[product_id].items())),
        )
        for product_id, name in products
    ]
