"""Read-only views of the inbound messages, for the CLI and the API."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import select

from replyguard.adapters.db import models as m
from replyguard.domain.inbound.status import InboundStatus
from replyguard.service_layer.runtime import Runtime


def list_inbound(app: Runtime, statuses: Sequence[InboundStatus] | None = None) -> list[dict[str, Any]]:
    """Inbound messages with one of `statuses` (every status when None), oldest first."""
    query = select(
        m.InboundMessage.id,
        m.InboundMessage.status,
        m.InboundMessage.received_at,
        m.InboundMessage.kind,
        m.InboundMessage.message_id,
        m.InboundMessage.error,
        m.InboundMessage.source,
        m.InboundMessage.attempts,
    )
    with app.uow() as uow:
        query = query.where(m.InboundMessage.workspace_id == uow.workspace_id)
        if statuses is not None:
            query = query.where(m.InboundMessage.status.in_([s.value for s in statuses]))
        rows = uow.session.execute(query.order_by(m.InboundMessage.id)).all()
    return [
        {
            "id": r.id,
            "status": r.status,
            "received_at": r.received_at.isoformat(),
            "kind": r.kind,
            "message_id": r.message_id,
            "error": r.error,
            "source": r.source,
            "attempts": r.attempts,
        }
        for r in rows
    ]
