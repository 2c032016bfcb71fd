"""T1 of a send: claiming due steps (SKIP LOCKED, fencing tokens, leases, windows, caps)."""

from __future__ import annotations

import logging
import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, bindparam, func, select, update

from replyguard.domain.schedule import load_zone, local_day, next_day_start
from replyguard.domain.states import ReplyState, StepState
from replyguard.service_layer.worker_base import (
    _USING_SLOT,
    CT,
    MB,
    C,
    Claim,
    E,
    L,
    S,
    WorkerBase,
    WorkerReport,
)

log = logging.getLogger(__name__)


class ClaimMixin(WorkerBase):
    """T1: claim due steps inside their send windows and under the mailboxes' daily caps."""

    def claim(
        self, report: WorkerReport, limit: int | None = None, *, only_lead: int | None = None
    ) -> list[Claim]:
        """Claim due steps. `only_lead` is for `replyguard audit` alone (see AUDIT below)."""
        now = self.now()
        limit = limit or self.app.settings.claim_batch
        with self.engine.connect() as conn, conn.begin():
            query = (
                select(
                    S.c.id,
                    S.c.lead_id,
                    S.c.mailbox_id,
                    C.c.id.label("campaign_id"),
                    C.c.timezone.label("campaign_tz"),
                    CT.c.timezone.label("contact_tz"),
                )
                .select_from(
                    S.join(L, L.c.id == S.c.lead_id)
                    .join(E, E.c.id == S.c.enrollment_id)
                    .join(C, C.c.id == E.c.campaign_id)
                    .join(CT, CT.c.id == L.c.contact_id)
                )
                .where(
                    S.c.workspace_id == self.ws,
                    S.c.state == StepState.SCHEDULED,
                    S.c.due_at <= now,
                    L.c.reply_state == ReplyState.ACTIVE,
                    E.c.state == "active",
                    C.c.status == "active",
                )
                .order_by(S.c.due_at, S.c.id)
                .limit(limit)
            )
            # AUDIT (issue 13, docs/audit.md): the audit's canary leads are claimed only by the
            # audit, one lead at a time (`only_lead`), so a running worker never races it for
            # them. The canary is the team's own address: its emails ignore the prospects'
            # send window and cap, and take no slot of the cap (no prospect waits for them).
            audit = only_lead is not None
            query = query.where(S.c.lead_id == only_lead if audit else L.c.audit_run_id.is_(None))
            if self.postgres:
                query = query.with_for_update(of=S, skip_locked=True)
            rows = conn.execute(query).all()
            if not rows:
                return []
            usage, caps = ({}, {}) if audit else self._mailbox_usage(conn, {r.mailbox_id for r in rows}, now)
            claims: list[Claim] = []
            claim_rows: list[dict[str, Any]] = []
            deferrals: list[dict[str, Any]] = []
            for row in rows:
                if audit:  # AUDIT: see above
                    claim = Claim(row.id, row.lead_id, uuid.uuid4().hex)
                    claims.append(claim)
                    claim_rows.append({"sid": claim.step_id, "tok": claim.token, "day": None})
                    continue
                zone = load_zone(row.contact_tz or row.campaign_tz)
                window = self._window(conn, row.campaign_id)
                if not window.contains(now, zone):
                    deferrals.append({"sid": row.id, "due": window.next_open(now, zone)})
                    continue
                day, cap, mb_zone = caps[row.mailbox_id]
                if usage[row.mailbox_id] >= cap:
                    # Over the cap: wait for the mailbox's next day, inside the lead's window.
                    later = window.next_open(max(now, next_day_start(now, mb_zone)), zone)
                    deferrals.append({"sid": row.id, "due": later})
                    continue
                usage[row.mailbox_id] += 1
                claim = Claim(row.id, row.lead_id, uuid.uuid4().hex)
                claims.append(claim)
                claim_rows.append({"sid": claim.step_id, "tok": claim.token, "day": day})
            if deferrals:
                conn.execute(
                    update(S).where(S.c.id == bindparam("sid")).values(due_at=bindparam("due")),
                    deferrals,
                )
            if claims:
                lease_until = now + self.app.settings.lease
                conn.execute(
                    update(S)
                    .where(S.c.id == bindparam("sid"), S.c.state == StepState.SCHEDULED)
                    .values(
                        state=StepState.CLAIMED,
                        claim_token=bindparam("tok"),
                        lease_until=lease_until,
                        send_day=bindparam("day"),
                        updated_at=now,
                    ),
                    claim_rows,
                )
            self.app.failpoints.hit("before_claim_commit")
        report.claimed += len(claims)
        report.deferred += len(deferrals)
        self.app.failpoints.hit("after_claim")
        return claims

    def _mailbox_usage(
        self, conn: Connection, mailbox_ids: set[int], now: datetime
    ) -> tuple[dict[int, int], dict[int, tuple[Any, int, Any]]]:
        """Sends counted against each mailbox's cap today, under a lock on the mailbox rows."""
        query = select(MB.c.id, MB.c.daily_cap, MB.c.timezone).where(MB.c.id.in_(sorted(mailbox_ids)))
        if self.postgres:
            query = query.order_by(MB.c.id).with_for_update()
        caps: dict[int, tuple[Any, int, Any]] = {}
        usage: dict[int, int] = {}
        for mb in conn.execute(query):
            zone = load_zone(mb.timezone)
            day = local_day(now, zone)
            caps[mb.id] = (day, mb.daily_cap, zone)
            usage[mb.id] = conn.execute(
                select(func.count())
                .select_from(S)
                .where(S.c.mailbox_id == mb.id, S.c.send_day == day, S.c.state.in_(_USING_SLOT))
            ).scalar_one()
        return usage, caps
