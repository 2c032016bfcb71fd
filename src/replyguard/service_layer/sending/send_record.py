"""T3 of a send: record what happened, fenced on the claim token, under the lead lock.

What a refused send leads to is decided by `domain.send_policy.after_refusal` from whose
problem the refusal is (`domain.smtp_answers`):

* a temporary refusal: retried with backoff (each retry goes through claim and re-check);
* the address does not exist (`550 5.1.1`): a hard bounce through the reply transaction's
  code (`send_outcomes.py`): suppressed, lead bounced, steps cancelled;
* a full mailbox: a soft bounce, tried again a day later; the third counts as hard;
* our own mailbox refused (credentials, sender, relaying): the mailbox is paused and its
  owner told; the step waits, not the lead's fault;
* refused for good, or retries ran out: the step FAILED and the lead is held for a person
  (`holds.hold_for_person`), who resends, skips or stops. The next step cannot be claimed
  while this one is failed, so nothing ever follows, or threads on, an email that never
  arrived.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import JSON, Connection, and_, bindparam, cast, column, func, literal, select, update
from sqlalchemy.dialects.postgresql import ARRAY

from replyguard.adapters.transports.base import Outcome
from replyguard.domain.schedule import Wait, load_zone, plan_due
from replyguard.domain.send_policy import Next, after_refusal, backoff
from replyguard.domain.smtp_answers import Blame
from replyguard.domain.states import StepState
from replyguard.service_layer.inbound.replies import SOFT_BOUNCE_LIMIT
from replyguard.service_layer.sending.holds import hold_for_person, tell_crossed_send
from replyguard.service_layer.sending.send_outcomes import record_send_bounce, soft_bounces
from replyguard.service_layer.sending.worker_base import (
    CS,
    CT,
    EV,
    EVENT_INSERT,
    OUT,
    SPACING_TOLERANCE,
    C,
    Claim,
    E,
    Fence,
    Handed,
    L,
    S,
    fenced_batch,
)
from replyguard.service_layer.sending.worker_context import WorkerContext
from replyguard.service_layer.workspace.mailboxes import pause_mailbox

log = logging.getLogger(__name__)

#: A full mailbox is tried again this much later (a soft bounce), not after minutes.
SOFT_BOUNCE_RETRY = timedelta(days=1)


class Recorder:
    """T3: write each result, fenced; acceptances together, everything else one by one."""

    def __init__(self, ctx: WorkerContext) -> None:
        self.ctx = ctx

    def record_many(
        self, conn: Connection, deliveries: list[tuple[Claim, Handed]], results: dict[int, str]
    ) -> None:
        """Write the result of each delivery, fenced on its claim, in the caller's transaction
        (which holds the leads' locks); one result per claim goes into `results`."""
        ctx = self.ctx
        now = ctx.now()
        accepted = [
            (c, h)
            for c, h in deliveries
            if h.delivery.outcome is Outcome.ACCEPTED and not h.aborted and h.deferred_to is None
        ]
        accepted_ids = {c.step_id for c, _ in accepted}
        for claim, handed in deliveries:
            if claim.step_id not in accepted_ids:
                results[claim.step_id] = self._record(conn, claim, handed)
        if not accepted:
            return
        sent, after = self._accept(conn, accepted, now)
        done = [(c, h) for c, h in accepted if c.step_id in sent]
        for claim, handed in accepted:
            if claim.step_id not in sent:
                results[claim.step_id] = self._late(conn, claim, handed)
        if not done:
            return
        for claim, _ in done:
            if sent[claim.step_id].cancel_requested:
                # A reply was recorded while this email was on its way (SQLite cannot hold the
                # lead lock across the call): the person who owns the reply must know.
                tell_crossed_send(
                    conn,
                    workspace_id=ctx.ws,
                    lead_id=claim.lead_id,
                    step_id=claim.step_id,
                    now=now,
                    settings=ctx.app.settings,
                )
        self._after_sent_many(conn, {sent[c.step_id].enrollment_id for c, _ in done}, after, now)
        for claim, _ in done:
            results[claim.step_id] = "sent"

    def _accept(
        self, conn: Connection, accepted: list[tuple[Claim, Handed]], now: datetime
    ) -> tuple[dict[int, Any], list[Any]]:
        """SENDING -> SENT for the accepted emails still ours, with their outbound rows and
        `step_sent` events. Returns the steps moved (by id: enrollment, position, whether a
        reply asked to cancel) and the step after each, when one is still to send (the
        columns of `_next_columns`)."""
        fence: dict[str, Any] = {
            "sent_ids": [c.step_id for c, _ in accepted],
            "sent_tokens": [c.token for c, _ in accepted],
            "sent_at": now,
        }
        if self.ctx.postgres:
            # Everything in one statement: one round trip while the leads are locked.
            fence |= {
                "sent_workspace": self.ctx.ws,
                "accepted_ids": [c.step_id for c, _ in accepted],
                "accepted_refs": [h.delivery.ref for _, h in accepted],
            }
            rows = conn.execute(_SENT_AND_NEXT, fence).all()
            return {row.id: row for row in rows}, [row for row in rows if row.next_id is not None]
        sent = {row.id: row for row in conn.execute(_SENT, fence)}
        done = [(c, h) for c, h in accepted if c.step_id in sent]
        if not done:
            return sent, []
        conn.execute(_ACCEPTED, [{"sid": c.step_id, "ref": h.delivery.ref, "at": now} for c, h in done])
        conn.execute(
            EVENT_INSERT,
            [
                {
                    "workspace_id": self.ctx.ws,
                    "lead_id": c.lead_id,
                    "step_id": c.step_id,
                    "kind": "step_sent",
                    "at": now,
                    "data": {"crossed": bool(sent[c.step_id].cancel_requested)},
                }
                for c, _ in done
            ],
        )
        # By enrollment (an index prefix); the position is picked here: a row-value IN over
        # (enrollment, position) pairs is not planned as an index lookup.
        moved = {(row.enrollment_id, row.position) for row in sent.values()}
        rows = conn.execute(_NEXT_STEPS, {"enrollment_ids": sorted({e for e, _ in moved})}).all()
        return sent, [row for row in rows if (row.enrollment_id, row.position - 1) in moved]

    def _record(self, conn: Connection, claim: Claim, handed: Handed) -> str:
        """A result other than acceptance (those are written together by `record_many`)."""
        ctx = self.ctx
        fence = Fence(claim.step_id, claim.token, StepState.SENDING)
        delivery = handed.delivery
        step = conn.execute(
            select(S.c.attempts, S.c.cancel_requested, S.c.to_address, S.c.position, S.c.mailbox_id).where(
                fence.where()
            )
        ).one_or_none()
        if step is None:
            return self._late(conn, claim, handed)
        if handed.deferred_to is not None:
            # Not handed over at all: back to the queue, and the attempt does not count.
            self._requeue(conn, fence, claim, handed.deferred_to, delivery.detail, attempts=step.attempts - 1)
            ctx.event(
                conn,
                "send_deferred",
                claim.lead_id,
                claim.step_id,
                until=handed.deferred_to.isoformat(),
                detail=delivery.detail,
            )
            return "given_back" if handed.stopping else "deferred"
        if handed.aborted and step.cancel_requested:
            # Our last check saw the reply's cancel request: refused at the last moment.
            self._finish(conn, fence, claim, StepState.CANCELLED, delivery.detail)
            ctx.event(
                conn,
                "send_refused",
                claim.lead_id,
                claim.step_id,
                reason="a reply arrived after the marker",
                cancelled=True,
            )
            return "refused"
        if delivery.outcome is Outcome.UNKNOWN:
            ctx.unknown(
                conn,
                claim.step_id,
                claim.lead_id,
                fence.to(StepState.UNKNOWN),
                delivery.detail,
                hold=not step.cancel_requested,
            )
            return "unknown"
        blame = Blame.NONE if handed.aborted else delivery.blame
        earlier = soft_bounces(conn, ctx.app, step.to_address) if blame is Blame.MAILBOX_FULL else 0
        decision = after_refusal(
            temporary=delivery.outcome is Outcome.TRANSIENT,
            blame=blame,
            attempts=step.attempts,
            max_attempts=ctx.app.settings.max_attempts,
            cancel_requested=step.cancel_requested,
            soft_bounces=earlier,
            soft_bounce_limit=SOFT_BOUNCE_LIMIT,
        )
        return self._apply(conn, claim, step, fence, delivery.detail, decision, blame)

    def _apply(
        self,
        conn: Connection,
        claim: Claim,
        step: Any,
        fence: Fence,
        detail: str,
        decision: Next,
        blame: Blame,
    ) -> str:
        ctx = self.ctx
        now = ctx.now()
        if decision is Next.RETRY:
            delay = backoff(step.attempts, ctx.app.settings.retry_base, ctx.app.settings.retry_cap)
            self._requeue(conn, fence, claim, now + delay, detail)
            ctx.event(
                conn,
                "send_retry_scheduled",
                claim.lead_id,
                claim.step_id,
                detail=detail,
                retry_at=(now + delay).isoformat(),
            )
            return "retried"
        if decision is Next.SOFT_BOUNCE:
            self._requeue(conn, fence, claim, now + SOFT_BOUNCE_RETRY, detail)
            record_send_bounce(
                conn, ctx.app, lead_id=claim.lead_id, address=step.to_address, hard=False, detail=detail
            )
            return "retried"
        if decision is Next.PAUSE_MAILBOX:
            self._requeue(conn, fence, claim, now, detail, attempts=step.attempts - 1)
            pause_mailbox(
                conn,
                workspace_id=ctx.ws,
                mailbox_id=step.mailbox_id,
                lead_id=claim.lead_id,
                reason=detail,
                now=now,
            )
            return "paused"
        if decision is Next.CANCEL:
            self._finish(conn, fence, claim, StepState.CANCELLED, detail)
            ctx.event(conn, "send_cancelled", claim.lead_id, claim.step_id, detail=detail)
            return "refused"
        self._finish(conn, fence, claim, StepState.FAILED, detail)
        ctx.event(
            conn,
            "step_failed",
            claim.lead_id,
            claim.step_id,
            detail=detail,
            bounce=decision is Next.HARD_BOUNCE,
        )
        if decision is Next.HARD_BOUNCE:
            record_send_bounce(
                conn,
                ctx.app,
                lead_id=claim.lead_id,
                address=step.to_address,
                hard=True,
                detail=detail,
                repeated=blame is Blame.MAILBOX_FULL,
            )
        else:
            hold_for_person(
                conn,
                workspace_id=ctx.ws,
                lead_id=claim.lead_id,
                step_id=claim.step_id,
                now=now,
                kind="step_failed",
                reason=f"email {step.position} could not be delivered ({detail[:300]}); nothing more is sent"
                " to this lead until a person resends it, skips it or stops the lead",
                details={"smtp": detail, "attempts": step.attempts},
                settings=ctx.app.settings,
            )
        return "failed"

    def _requeue(
        self,
        conn: Connection,
        fence: Fence,
        claim: Claim,
        due: datetime,
        detail: str,
        *,
        attempts: int | None = None,
    ) -> None:
        values: dict[str, Any] = {
            "state": StepState.SCHEDULED,
            "due_at": due,
            "claim_token": None,
            "lease_until": None,
            "send_day": None,
            "last_error": detail[:2000],
            "updated_at": self.ctx.now(),
        }
        if attempts is not None:
            values["attempts"] = max(0, attempts)
        conn.execute(update(S).where(fence.to(StepState.SCHEDULED)).values(**values))
        conn.execute(update(OUT).where(OUT.c.step_id == claim.step_id).values(status="not_sent"))

    def _finish(self, conn: Connection, fence: Fence, claim: Claim, state: StepState, detail: str) -> None:
        conn.execute(
            update(S)
            .where(fence.to(state))
            .values(state=state, lease_until=None, last_error=detail[:2000], updated_at=self.ctx.now())
        )
        conn.execute(update(OUT).where(OUT.c.step_id == claim.step_id).values(status="not_sent"))

    def _late(self, conn: Connection, claim: Claim, handed: Handed) -> str:
        """The claim was taken over while we sent (lease expired): our result is not written."""
        outcome = handed.delivery.outcome
        log.warning("step %s: result %s arrived after the claim was taken over", claim.step_id, outcome)
        self.ctx.event(
            conn,
            "late_result_ignored",
            claim.lead_id,
            claim.step_id,
            outcome=outcome,
            detail=handed.delivery.detail,
        )
        return "stale"

    def _after_sent_many(
        self, conn: Connection, enrollments: set[int], after: list[Any], now: datetime
    ) -> None:
        """Move each next step (`after`: the step after each one sent, when it is still to
        send) to its wait after this send (so `leads show` tells the truth; the claim enforces
        the spacing exactly), and complete enrollments with nothing left."""
        moves = []
        for nxt in after:
            due = plan_due(
                now,
                Wait.stored(nxt.wait_days, nxt.wait_seconds),
                self.ctx.window(nxt.window_days, nxt.window_start, nxt.window_end),
                load_zone(nxt.timezone or nxt.campaign_tz),
            )
            # Only a real delay moves the next step: rewriting an indexed column for a few
            # seconds of drift would cost every send a write for no one's benefit.
            if due > nxt.next_due_at + SPACING_TOLERANCE:
                moves.append({"sid": nxt.next_id, "due": due})
        if moves:
            conn.execute(_MOVE_DUE, moves)
        waiting = {nxt.enrollment_id for nxt in after}
        self.ctx.complete_finished(conn, enrollments - waiting)


# The statements of an acceptance, built once (see worker_base: "The send path's statements").
_SENT_AT = bindparam("sent_at", type_=S.c.sent_at.type)
#: SENDING -> SENT, fenced on the claims' tokens; a step a reply asked to cancel meanwhile is
#: marked crossed (SQLite: the lead lock could not be held across the transport call).
_SENT = (
    update(S)
    .where(fenced_batch("sent", StepState.SENDING, StepState.SENT))
    .values(
        state=StepState.SENT,
        sent_at=_SENT_AT,
        crossed=S.c.cancel_requested,
        lease_until=None,
        updated_at=_SENT_AT,
        last_error=None,
    )
    .returning(S.c.id, S.c.lead_id, S.c.enrollment_id, S.c.position, S.c.cancel_requested)
)
#: The outbound row of each accepted email (one row per executemany parameter set).
_ACCEPTED = (
    update(OUT)
    .where(OUT.c.step_id == bindparam("sid"))
    .values(status="accepted", accepted_at=bindparam("at"), transport_ref=bindparam("ref"))
)


#: The columns the next step's wait needs (`Recorder._after_sent_many`), from `_NEXT_FROM`.
def _next_columns(nxt: Any) -> list[Any]:
    return [
        nxt.c.id.label("next_id"),
        nxt.c.due_at.label("next_due_at"),
        CS.c.wait_seconds,
        CS.c.wait_days,
        CT.c.timezone,
        C.c.timezone.label("campaign_tz"),
        C.c.window_days,
        C.c.window_start,
        C.c.window_end,
    ]


def _next_from(nxt: Any) -> Any:
    """The step `nxt` with its campaign step, campaign and contact."""
    return (
        nxt.join(CS, CS.c.id == nxt.c.campaign_step_id)
        .join(E, E.c.id == nxt.c.enrollment_id)
        .join(C, C.c.id == E.c.campaign_id)
        .join(L, L.c.id == nxt.c.lead_id)
        .join(CT, CT.c.id == L.c.contact_id)
    )


#: A step still to send after one that was sent (a person may have made it wait for approval).
_STILL_TO_SEND = [StepState.SCHEDULED, StepState.AWAITING_APPROVAL]

#: SQLite: the steps still to send of the enrollments just sent from, with what their wait
#: needs (`Recorder._accept` picks the one after each step sent).
_NEXT_STEPS = (
    select(S.c.enrollment_id, S.c.position, *_next_columns(S))
    .select_from(_next_from(S))
    .where(
        S.c.enrollment_id.in_(bindparam("enrollment_ids", expanding=True)),
        S.c.state.in_(_STILL_TO_SEND),
    )
)


def _sent_and_next() -> Any:
    """PostgreSQL: an acceptance in one statement, one round trip under the lead locks.

    `WITH sent AS (UPDATE steps … RETURNING …)` moves the steps (`_SENT`, fenced as on
    SQLite), `accepted` updates their outbound rows with each transport's reference (bound
    arrays, `unnest`ed: one compiled statement for any batch), `sent_events` writes their
    `step_sent` events, and the SELECT returns one row per step sent with the step after it,
    if one is still to send (an index lookup by enrollment and position). The three writes
    touch only the steps `sent` returned: a step taken over meanwhile gets none of them."""
    sent = _SENT.cte("sent")
    refs = (
        func.unnest(
            bindparam("accepted_ids", type_=ARRAY(OUT.c.step_id.type)),
            bindparam("accepted_refs", type_=ARRAY(OUT.c.transport_ref.type)),
        )
        .table_valued(column("step_id", OUT.c.step_id.type), column("ref", OUT.c.transport_ref.type))
        .render_derived(name="refs")
    )
    accepted = (
        update(OUT)
        .where(OUT.c.step_id == sent.c.id, refs.c.step_id == sent.c.id)
        .values(status="accepted", accepted_at=_SENT_AT, transport_ref=refs.c.ref)
        .cte("accepted")
    )
    events = EVENT_INSERT.from_select(
        ["workspace_id", "lead_id", "step_id", "kind", "at", "data"],
        select(
            bindparam("sent_workspace", type_=EV.c.workspace_id.type),
            sent.c.lead_id,
            sent.c.id,
            literal("step_sent", EV.c.kind.type),
            _SENT_AT,
            # jsonb's text form, as the worker's other events are written: {"crossed": false}
            cast(func.jsonb_build_object("crossed", sent.c.cancel_requested), JSON),
        ),
    ).cte("sent_events")
    nxt = S.alias("next_step")
    after_sent = and_(
        nxt.c.enrollment_id == sent.c.enrollment_id,
        nxt.c.position == sent.c.position + 1,
        nxt.c.state.in_(_STILL_TO_SEND),
    )
    return (
        select(sent.c.id, sent.c.enrollment_id, sent.c.position, sent.c.cancel_requested, *_next_columns(nxt))
        .select_from(sent.outerjoin(_next_from(nxt), after_sent))
        .add_cte(accepted, events)
    )


_SENT_AND_NEXT = _sent_and_next()
_MOVE_DUE = update(S).where(S.c.id == bindparam("sid")).values(due_at=bindparam("due"))
