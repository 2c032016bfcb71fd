"""Bounces at send time go through THE reply transaction's code, in the worker's transaction.

A recipient server that refuses an address at RCPT or after DATA (`550 5.1.1 User unknown`)
says the same thing as a bounce message arriving later, only sooner. So the worker records
it with `replies.record_reply` — the same effect as an inbound bounce: the address is
suppressed, the lead bounced (or held, when the contact has another address), its steps
cancelled, the events and notice written — inside the very transaction that records the
step's result, under the same lead lock. A full mailbox is a soft bounce recorded the same
way; the third soft bounce of an address counts as hard, as for inbound bounces.
"""

from __future__ import annotations

from sqlalchemy import Connection
from sqlalchemy.orm import Session

from replyguard.domain.states import ReplyKind
from replyguard.service_layer.inbound.replies import (
    IncomingReply,
    ReplyOutcome,
    record_reply,
    soft_bounces_of,
)
from replyguard.service_layer.runtime import Runtime
from replyguard.service_layer.uow import UnitOfWork


class JoinedUnitOfWork(UnitOfWork):
    """A unit of work inside a transaction the caller already owns (the worker's): it never
    commits; its writes are flushed into that transaction, which commits them with the rest."""

    def __init__(self, conn: Connection, app: Runtime) -> None:
        super().__init__(conn.engine, app.clock, app.workspace_id, app.settings)
        self.session = Session(bind=conn, join_transaction_mode="rollback_only", expire_on_commit=False)


def soft_bounces(conn: Connection, app: Runtime, address: str) -> int:
    uow = JoinedUnitOfWork(conn, app)
    try:
        return soft_bounces_of(uow, address)
    finally:
        uow.session.close()


def record_send_bounce(
    conn: Connection,
    app: Runtime,
    *,
    lead_id: int,
    address: str,
    hard: bool,
    detail: str,
    repeated: bool = False,
) -> ReplyOutcome:
    """Record the server's refusal of `address` as a bounce of the lead (the reply transaction)."""
    evidence = ["smtp:at-send", f"smtp:{detail[:200]}"]
    if repeated:
        evidence.append("bounce:soft-repeated")
    uow = JoinedUnitOfWork(conn, app)
    try:
        outcome = record_reply(
            uow,
            lead_id,
            IncomingReply(
                kind=ReplyKind.BOUNCE_HARD if hard else ReplyKind.BOUNCE_SOFT,
                received_at=app.clock.now(),
                text=detail[:2000],
                from_address=address.lower(),
                evidence=tuple(evidence),
                source="smtp",
            ),
            app.settings,
        )
        uow.session.flush()
        return outcome
    finally:
        uow.session.close()
