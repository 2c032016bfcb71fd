"""Delivering the notice outbox after commit: every configured channel, retried with backoff.

One `notice_deliveries` row per (notice, channel) holds the attempts. A pass (`run_once`):

1. creates the missing delivery rows of notices not yet done;
2. claims due deliveries with a lease (so two `notify` processes do not both try one);
3. delivers each outside any transaction, then records it: delivered, or the next attempt
   after an exponential backoff (given up after `max_attempts`, and kept as failed);
4. marks a notice done once no channel has anything left to try.

Delivery is at-least-once. A crash between a channel's success and its record (the point
`after_notice_sent`) delivers that notice again after the lease, under the same uid, and the
receiver drops the copy. Nothing is lost across restarts: every state is a row. Ingest never
waits for any of this. `run_forever` is the loop `replyguard notify` (and a later `up`) runs.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from datetime import datetime

from sqlalchemy import and_, exists, or_, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from replyguard.adapters.db import models as m
from replyguard.adapters.notices.base import ChannelResult, NoticeChannel, NoticeMessage
from replyguard.domain.send_policy import backoff
from replyguard.service_layer.rescue.notices import notice_uid
from replyguard.service_layer.runtime import Runtime
from replyguard.settings import NotifySettings

log = logging.getLogger(__name__)

D = m.NoticeDelivery


@dataclass
class DeliveryReport:
    delivered: int = 0
    retried: int = 0
    given_up: int = 0
    drafted: int = 0

    def add(self, other: DeliveryReport) -> None:
        for item in fields(self):
            setattr(self, item.name, getattr(self, item.name) + getattr(other, item.name))


class NoticeDelivery:
    def __init__(
        self,
        app: Runtime,
        channels: Sequence[NoticeChannel],
        settings: NotifySettings,
        before_pass: Callable[[], int] | None = None,
    ) -> None:
        self.app = app
        self.channels = {c.name: c for c in channels}
        self.settings = settings
        # Work done after commit before each pass (the model's drafts), never in a reply's
        # transaction; returns how many threads it touched.
        self.before_pass = before_pass

    def run_once(self, batch: int = 50) -> DeliveryReport:
        report = DeliveryReport()
        if self.before_pass is not None:
            report.drafted = self.before_pass()
        if not self.channels:
            return report
        self._create_rows()
        while True:
            claimed = self._claim(batch)
            if not claimed:
                break
            for delivery_id, notice in claimed:
                self._deliver(delivery_id, notice, report)
        self._finish_notices()
        return report

    def _create_rows(self) -> None:
        with self.app.uow() as uow:
            # AUDIT (issue 13): notices about the audit's canary leads stay in the outbox as the
            # audit's evidence and are never delivered (nothing reaches anyone but the canary);
            # the audit closes them itself (docs/audit.md).
            canary = exists().where(m.Lead.id == m.Notice.lead_id, m.Lead.audit_run_id.is_not(None))
            pending = uow.session.scalars(
                select(m.Notice.id)
                .where(m.Notice.workspace_id == uow.workspace_id, m.Notice.done_at.is_(None), ~canary)
                .order_by(m.Notice.id)
                .limit(1000)
            ).all()
            insert = (pg_insert if uow.postgres else sqlite_insert)(D)
            rows = [
                {
                    "workspace_id": uow.workspace_id,
                    "notice_id": notice_id,
                    "channel": name,
                    "state": "pending",
                    "attempts": 0,
                    "next_attempt_at": uow.clock.now(),
                }
                for notice_id in pending
                for name in self.channels
            ]
            if rows:
                uow.session.execute(
                    insert.on_conflict_do_nothing(index_elements=["notice_id", "channel"]), rows
                )
            uow.commit()

    def _claim(self, batch: int) -> list[tuple[int, NoticeMessage]]:
        with self.app.uow() as uow:
            now = uow.clock.now()
            free = or_(D.lease_until.is_(None), D.lease_until < now)
            due = and_(
                D.workspace_id == uow.workspace_id,
                D.state == "pending",
                D.next_attempt_at <= now,
                D.channel.in_(list(self.channels)),
                free,
            )
            ids = uow.session.scalars(select(D.id).where(due).order_by(D.id).limit(batch)).all()
            claimed = []
            secret = uow.session.get_one(m.Workspace, uow.workspace_id).secret
            for delivery_id in ids:
                won = uow.session.execute(
                    update(D)
                    .where(D.id == delivery_id, due)
                    .values(lease_until=now + self.settings.lease)
                    .execution_options(synchronize_session=False)
                ).rowcount  # type: ignore[attr-defined]
                if won:
                    claimed.append((delivery_id, self._message(uow.session, delivery_id, secret)))
            uow.commit()
        return claimed

    def _message(self, session: object, delivery_id: int, secret: str) -> NoticeMessage:
        assert isinstance(session, Session)
        delivery = session.get_one(D, delivery_id)
        notice = session.get_one(m.Notice, delivery.notice_id)
        sender = session.scalar(
            select(m.Mailbox.address)
            .join(m.RescueThread, m.RescueThread.mailbox_id == m.Mailbox.id)
            .where(m.RescueThread.id == notice.thread_id)
        )
        return NoticeMessage(
            uid=notice_uid(secret, notice.id),
            recipient=notice.recipient,
            sender_address=sender or notice.recipient,
            created_at=notice.created_at,
            payload={**notice.payload, "channel": delivery.channel},
        )

    def _deliver(self, delivery_id: int, notice: NoticeMessage, report: DeliveryReport) -> None:
        with self.app.uow() as uow:
            channel = uow.session.get_one(D, delivery_id).channel
        try:
            result = self.channels[channel].deliver(notice, self.app.clock.now())
        except Exception as exc:  # a channel must never stop the loop; the row keeps the error
            log.warning("notice channel %s raised %s", channel, exc.__class__.__name__)
            result = ChannelResult(False, f"raised {exc.__class__.__name__}")
        self.app.hooks.at("after_notice_sent")
        with self.app.uow() as uow:
            now = uow.clock.now()
            row = uow.session.get_one(D, delivery_id)
            if result.delivered:
                row.state, row.delivered_at, row.lease_until = "delivered", now, None
                row.attempts += 1
                row.last_error = None
                report.delivered += 1
            else:
                row.attempts += 1
                row.last_error, row.lease_until = result.detail[:2000], None
                if row.attempts >= self.settings.max_attempts:
                    row.state = "failed"
                    report.given_up += 1
                else:
                    row.next_attempt_at = now + backoff(
                        row.attempts, self.settings.retry_base, self.settings.retry_cap
                    )
                    report.retried += 1
            uow.commit()

    def _finish_notices(self) -> None:
        with self.app.uow() as uow:
            open_delivery = exists().where(
                D.notice_id == m.Notice.id, D.state == "pending", D.channel.in_(list(self.channels))
            )
            has_rows = exists().where(D.notice_id == m.Notice.id)
            uow.session.execute(
                update(m.Notice)
                .where(
                    m.Notice.workspace_id == uow.workspace_id,
                    m.Notice.done_at.is_(None),
                    has_rows,
                    ~open_delivery,
                )
                .values(done_at=uow.clock.now())
                .execution_options(synchronize_session=False)
            )
            uow.commit()


def run_forever(
    delivery: NoticeDelivery, should_stop: Callable[[], bool], sleep: Callable[[float], None]
) -> DeliveryReport:
    """The `notify` loop: a pass, then a short sleep when nothing was due. Like the worker's
    loop, a lost database connection is waited out: every state is durable."""
    total = DeliveryReport()
    while not should_stop():
        try:
            report = delivery.run_once()
        except SQLAlchemyError as exc:
            log.warning("database error, retrying: %s", str(exc).splitlines()[0])
            sleep(delivery.app.settings.poll_interval * 5)
            continue
        total.add(report)
        if report.delivered == 0 and report.drafted == 0:
            sleep(delivery.app.settings.poll_interval)
    return total


def undelivered(app: Runtime) -> list[dict[str, object]]:
    """Deliveries still pending or given up, for a person to see."""
    with app.uow() as uow:
        rows = uow.session.execute(
            select(D.notice_id, D.channel, D.state, D.attempts, D.last_error, D.next_attempt_at)
            .where(D.workspace_id == uow.workspace_id, D.state != "delivered")
            .order_by(D.id)
        ).all()
    return [
        {
            "notice_id": r.notice_id,
            "channel": r.channel,
            "state": r.state,
            "attempts": r.attempts,
            "last_error": r.last_error,
            "next_attempt_at": r.next_attempt_at.isoformat()
            if isinstance(r.next_attempt_at, datetime)
            else None,
        }
        for r in rows
    ]
