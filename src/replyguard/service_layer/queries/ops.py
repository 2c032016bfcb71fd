"""Numbers for /metrics, read from the database at scrape time.

These are installation-wide (every workspace), for the operator: sends and refusals happen
in worker processes and replies in pollers and webhook handlers, so an in-process counter in
the web process could not see them. The database is the one place that has them all. Each
query is an index scan or a scan of a small table; `steps` is the large one (1M rows: see
docs/benchmarks.md for what a scrape costs).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import ColumnElement, Float, SQLColumnExpression, case, cast, func, select, text

from replyguard.adapters.db import models as m
from replyguard.domain.states import ReplyState, StepState
from replyguard.service_layer.uow import UnitOfWork

#: Reply → cancellation committed, in seconds (store of the message to the reply transaction).
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0)


@dataclass(frozen=True, slots=True)
class SourceNumbers:
    workspace: str
    source: str
    errors: int
    last_poll_at: datetime | None


@dataclass(frozen=True, slots=True)
class OpsSnapshot:
    steps_by_state: dict[str, int]
    refusals_by_reason: dict[str, int]
    replies_by_kind: dict[str, int]
    latency_buckets: list[tuple[float, int]]  # cumulative, like Prometheus' `le`
    latency_count: int
    latency_sum: float
    worker_lag_seconds: float
    sources: list[SourceNumbers]
    notice_backlog: int
    inbound_by_status: dict[str, int]


def _seconds_between(
    uow: UnitOfWork, start: SQLColumnExpression[datetime], end: SQLColumnExpression[datetime]
) -> ColumnElement[float]:
    if uow.postgres:
        return cast(func.extract("epoch", end - start), Float)
    return (func.julianday(end) - func.julianday(start)) * cast(86400.0, Float)


def _grouped(
    uow: UnitOfWork, column: SQLColumnExpression[str], *where: ColumnElement[bool]
) -> dict[str, int]:
    rows = uow.session.execute(select(column, func.count()).where(*where).group_by(column)).all()
    return {str(key): int(n) for key, n in rows if key is not None}


def ops_snapshot(uow: UnitOfWork) -> OpsSnapshot:
    now = uow.clock.now()
    latency = _seconds_between(uow, m.Reply.received_at, m.Reply.recorded_at)
    sums = uow.session.execute(
        select(
            func.count(),
            func.coalesce(func.sum(latency), 0.0),
            *(func.coalesce(func.sum(case((latency <= b, 1), else_=0)), 0) for b in LATENCY_BUCKETS),
        ).where(m.Reply.inbound_message_id.is_not(None))
    ).one()
    oldest_due = uow.session.scalar(
        select(m.Step.due_at)
        .join(m.Lead, m.Lead.id == m.Step.lead_id)
        .where(
            m.Step.state == StepState.SCHEDULED, m.Step.due_at <= now, m.Lead.reply_state == ReplyState.ACTIVE
        )
        .order_by(m.Step.due_at)
        .limit(1)
    )
    sources = uow.session.execute(
        select(
            m.Workspace.name,
            m.MailboxCursor.source_key,
            m.MailboxCursor.error_count,
            m.MailboxCursor.last_poll_at,
        )
        .join(m.Workspace, m.Workspace.id == m.MailboxCursor.workspace_id)
        .order_by(m.Workspace.name, m.MailboxCursor.source_key)
    ).all()
    return OpsSnapshot(
        steps_by_state=_grouped(uow, m.Step.state),
        refusals_by_reason=_grouped(uow, m.Event.data["reason"].as_string(), m.Event.kind == "send_refused"),
        replies_by_kind=_grouped(uow, m.Reply.kind),
        latency_buckets=list(zip(LATENCY_BUCKETS, (int(n) for n in sums[2:]), strict=True)),
        latency_count=int(sums[0]),
        latency_sum=float(sums[1]),
        worker_lag_seconds=max((now - oldest_due).total_seconds(), 0.0) if oldest_due else 0.0,
        sources=[SourceNumbers(w, k, int(e or 0), t) for w, k, e, t in sources],
        notice_backlog=_notice_backlog(uow),
        inbound_by_status=_grouped(uow, m.InboundMessage.status),
    )


def _notice_backlog(uow: UnitOfWork) -> int:
    """Notices still in the outbox: not yet delivered on every configured channel (or given
    up). `notices.done_at` is set by the delivery loop (`notice_delivery`) once no channel has
    anything left to try; it is indexed, so this stays an index count however many notices
    were ever written."""
    return int(uow.session.scalar(select(func.count()).where(m.Notice.done_at.is_(None))) or 0)


def database_revision(uow: UnitOfWork) -> str | None:
    """The Alembic revision the database is at (None: never migrated)."""
    try:
        with uow.session.begin_nested():
            found = uow.session.scalar(text("SELECT version_num FROM alembic_version"))
            return str(found) if found is not None else None
    except Exception:  # no alembic_version table: nothing was ever migrated
        return None
