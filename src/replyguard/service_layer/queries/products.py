"""Products of the workspace (what a lead import or a campaign belongs to)."""

from __future__ import annotations

from sqlalchemy import select

from replyguard.adapters.db import models as m
from replyguard.service_layer.uow import UnitOfWork


def product_names(uow: UnitOfWork) -> list[str]:
    return list(
        uow.session.scalars(
            select(m.Product.name).where(m.Product.workspace_id == uow.workspace_id).order_by(m.Product.name)
        )
    )
