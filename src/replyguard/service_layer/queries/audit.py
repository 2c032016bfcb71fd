"""The audit page: the history of `replyguard audit` runs and one run with every row and its
evidence, read through `service_layer/audit/run.py` (`audit_history`, `audit_run`); and the
latest `--config` findings, when a config audit was recorded. Starting an audit is the CLI's
(or cron's) job: it sends real email to a canary."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import select

from replyguard.adapters.db import models as m
from replyguard.service_layer.audit.run import AuditReport, audit_history, audit_run
from replyguard.service_layer.queries import NotFound
from replyguard.service_layer.uow import UnitOfWork


@dataclass(frozen=True, slots=True)
class AuditOverview:
    history: list[dict[str, Any]]  # audit_history's lines, newest first
    latest_config: AuditReport | None


def audit_overview(uow: UnitOfWork, *, limit: int = 30) -> AuditOverview:
    latest = uow.session.scalar(
        select(m.AuditRun.id)
        .where(m.AuditRun.workspace_id == uow.workspace_id, m.AuditRun.kind == "config")
        .order_by(m.AuditRun.started_at.desc(), m.AuditRun.id.desc())
        .limit(1)
    )
    return AuditOverview(audit_history(uow, limit=limit), audit_run(uow, latest) if latest else None)


def run_detail(uow: UnitOfWork, run_id: int) -> AuditReport:
    try:
        return audit_run(uow, run_id)
    except LookupError:
        raise NotFound(f"no audit run {run_id}") from None
