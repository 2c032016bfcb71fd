"""Recovery: expired claims back to the queue, unknown outcomes reconciled or held, pauses ended."""

from __future__ import annotations

import logging
from datetime import datetime

from sqlalchemy import Connection, select, update

from replyguard.adapters.db.engine import end_read
from replyguard.adapters.transports.base import Probe
from replyguard.domain.states import ReplyState, StepState, reply_move
from replyguard.service_layer.rescue import thread_versions
from replyguard.service_layer.sending.holds import tell_crossed_send
from replyguard.service_layer.sending.worker_base import OUT, Claim, Fence, L, S, in_states
from replyguard.service_layer.sending.worker_context import WorkerContext
from replyguard.service_layer.steps import back_in_queue

log = logging.getLogger(__name__)


class Recovery:
    """Expired claims and unknown outcomes, and the end of out-of-office pauses."""

    def __init__(self, ctx: WorkerContext) -> None:
        self.ctx = ctx

    def recover(self, limit: int = 200, *, only_lead: int | None = None) -> int:
        """Expired claims go back to the queue; expired SENDING steps are unknown outcomes:
        reconciled when the transport can prove what happened, held for a person otherwise.

        AUDIT (issue 13): `only_lead` recovers one lead's steps only — the audit's canary,
        never anyone else's (docs/audit.md)."""
        ctx = self.ctx
        now = ctx.now()
        query = select(S.c.id, S.c.lead_id).where(
            S.c.workspace_id == ctx.ws,
            S.c.state.in_([StepState.CLAIMED, StepState.SENDING]),
            S.c.lease_until < now,
        )
        if only_lead is not None:  # AUDIT: see above
            query = query.where(S.c.lead_id == only_lead)
        with ctx.engine.connect() as conn:
            rows = conn.execute(query.limit(limit)).all()
            end_read(conn)
        recovered = 0
        for row in rows:
            with ctx.engine.connect() as conn, conn.begin():
                if ctx.lock_lead(conn, row.lead_id, skip_locked=True) is None:
                    continue  # a live worker (or a reply) holds the lead: not abandoned
                step = conn.execute(
                    select(S.c.state, S.c.claim_token, S.c.cancel_requested, S.c.lease_until).where(
                        S.c.id == row.id
                    )
                ).one()
                if step.lease_until is None or step.lease_until >= now:
                    continue
                recovered += 1
                if step.state == StepState.CLAIMED:
                    ctx.give_back(conn, [Claim(row.id, row.lead_id, step.claim_token)])
                    ctx.event(conn, "claim_expired", row.lead_id, row.id)
                    continue
                if step.state != StepState.SENDING:
                    # Between the scan and the lead lock a reply (or a stop) cancelled it, or a
                    # worker finished it: it is no longer abandoned, and nothing may move it.
                    recovered -= 1
                    continue
                fence = Fence(row.id, step.claim_token, StepState.SENDING)
                self._reconcile(conn, row.id, row.lead_id, fence, step.cancel_requested, now)
        return recovered

    def _reconcile(
        self,
        conn: Connection,
        step_id: int,
        lead_id: int,
        fence: Fence,
        cancel_requested: bool,
        now: datetime,
    ) -> None:
        """Ask the transport what became of a send whose worker stopped; write what it proves.

        `fence` is the step as `recover` read it under the lead lock: SENDING, with the dead
        worker's token; every write below is a move of the state table from there."""
        ctx = self.ctx
        mailbox_id = conn.execute(select(S.c.mailbox_id).where(S.c.id == step_id)).scalar_one()
        transport = ctx.transport_for(mailbox_id, conn)
        probe = transport.probe(ctx.email(conn, step_id)) if transport.can_probe else Probe.UNKNOWN
        if probe is Probe.SENT:
            conn.execute(
                update(S)
                .where(fence.to(StepState.SENT))
                .values(
                    state=StepState.SENT,
                    sent_at=now,
                    lease_until=None,
                    crossed=cancel_requested,
                    updated_at=now,
                )
            )
            conn.execute(
                update(OUT).where(OUT.c.step_id == step_id).values(status="accepted", accepted_at=now)
            )
            ctx.event(conn, "send_reconciled", lead_id, step_id, found="sent")
            if cancel_requested:
                tell_crossed_send(
                    conn,
                    workspace_id=ctx.ws,
                    lead_id=lead_id,
                    step_id=step_id,
                    now=now,
                    settings=ctx.app.settings,
                )
            enrollment_id = conn.execute(select(S.c.enrollment_id).where(S.c.id == step_id)).scalar_one()
            ctx.complete_finished(conn, {enrollment_id})
        elif probe is Probe.NOT_SENT:
            if cancel_requested:
                state, values = StepState.CANCELLED, {"state": StepState.CANCELLED, "updated_at": now}
                values |= {"claim_token": None, "lease_until": None, "send_day": None}
            else:
                state, values = StepState.SCHEDULED, back_in_queue(StepState.SENDING, now)
            conn.execute(update(S).where(fence.to(state)).values(**values))
            conn.execute(update(OUT).where(OUT.c.step_id == step_id).values(status="not_sent"))
            ctx.event(conn, "send_reconciled", lead_id, step_id, found="not sent")
        else:
            ctx.unknown(
                conn,
                step_id,
                lead_id,
                fence.to(StepState.UNKNOWN),
                "worker stopped during the send",
                hold=not cancel_requested,
            )

    def resume_paused(self) -> int:
        """Out-of-office leads whose pause has ended return to active on their own."""
        ctx = self.ctx
        now = ctx.now()
        with ctx.engine.connect() as conn:
            ids = (
                conn.execute(
                    select(L.c.id).where(
                        L.c.workspace_id == ctx.ws,
                        L.c.reply_state == ReplyState.OUT_OF_OFFICE,
                        L.c.paused_until <= now,
                    )
                )
                .scalars()
                .all()
            )
            end_read(conn)
        resumed = 0
        for lead_id in ids:
            with ctx.engine.connect() as conn, conn.begin():
                ctx.lock_lead(conn, lead_id)
                done = conn.execute(
                    update(L)
                    .where(
                        L.c.id == lead_id,
                        in_states(L.c.reply_state, reply_move(ReplyState.OUT_OF_OFFICE, ReplyState.ACTIVE)),
                        L.c.paused_until <= now,
                    )
                    .values(reply_state=ReplyState.ACTIVE, reply_state_updated_at=now)
                ).rowcount
                if done:
                    resumed += 1
                    ctx.event(conn, "pause_ended", lead_id, None)
                    thread_versions.bump(
                        conn,
                        workspace_id=ctx.ws,
                        now=now,
                        lead_id=lead_id,
                        kind="lead_state",
                        summary="the pause ended: the lead is active again",
                    )
        return resumed
