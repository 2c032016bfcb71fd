"""T2 of a send: the re-check under the lead lock, the marker, the hand-over.

See `replyguard.service_layer.worker` for the phases and docs/architecture.md for the
guarantees on each database. Right before each email is handed over — before the transport
is called, and again right before its point of no return — the send window and the cap's day
are checked again: the clock moves during a batch, and a slow server must not carry a batch
past the window's end or into the next day's cap. T3 (the record) is `send_record.py`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, select, text, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.exc import SQLAlchemyError

from replyguard.adapters.transports.base import Delivery, Outcome
from replyguard.domain.outgoing import OutgoingEmail
from replyguard.domain.send_policy import SendCheck, Stale, hand_over_deferral, recheck
from replyguard.domain.smtp_answers import Blame
from replyguard.domain.states import CANCELLABLE, EnrollmentState, StepState, check_step_move, step_move
from replyguard.service_layer.send_record import Recorder
from replyguard.service_layer.worker_base import (
    _SEND_ROWS,
    OUT,
    Claim,
    E,
    Fence,
    Handed,
    S,
    WorkerReport,
    _count,
    in_states,
)
from replyguard.service_layer.worker_context import WorkerContext

log = logging.getLogger(__name__)


class _Deferred(Exception):
    """Raised by our own last check: the window closed or the cap's day changed meanwhile."""

    def __init__(self, until: datetime) -> None:
        super().__init__(f"not now: deferred to {until.isoformat()}")
        self.until = until


class SendGuard:
    """T2: re-check under the lead locks, mark, hand over; then T3 by the `Recorder`."""

    def __init__(self, ctx: WorkerContext, recorder: Recorder) -> None:
        self.ctx = ctx
        self.recorder = recorder

    def send(self, claim: Claim, report: WorkerReport) -> str:
        """Guarded send of one claimed step. Returns what happened, for reports and tests."""
        return self.send_batch([claim], report)[0]

    def send_batch(self, claims: list[Claim], report: WorkerReport) -> list[str]:
        """Guarded sends of claimed steps, one result per claim, in order.

        The steps of a batch share one re-check transaction (their leads locked in id order),
        one marker commit and one record commit; each email is still handed over on its own.
        """
        results: dict[int, str] = {}
        try:
            guarded = self._batch_holding_locks if self.ctx.postgres else self._batch_commit_then_call
            guarded(claims, results)
        except SQLAlchemyError as exc:
            # Steps keep their claim or marker; recovery decides after the lease.
            log.warning("database error during a send batch: %s", exc.__class__.__name__)
        ordered = [results.get(c.step_id, "error") for c in claims]
        for result in ordered:
            _count(report, result)
        return ordered

    def _batch_holding_locks(self, claims: list[Claim], results: dict[int, str]) -> None:
        ctx = self.ctx
        deliveries: list[tuple[Claim, Handed]] = []
        with ctx.engine.connect() as conn:
            tx = conn.begin()
            try:
                go = self._recheck_many(conn, claims, results)
                if not go:
                    tx.commit()
                    return
                ctx.app.hooks.at("after_recheck")
                with ctx.engine.connect() as marker, marker.begin():
                    go = self._mark_sending_many(marker, go, results)
                ctx.app.hooks.at("after_marker")

                def still_locked() -> None:
                    # Raises if our session, and with it the lead locks, is gone: then the
                    # transport must not start the point of no return.
                    ctx.app.hooks.at("before_data")
                    conn.execute(text("SELECT 1"))

                paused: set[int | None] = set()
                for claim, email in go:
                    deliveries.append((claim, self._deliver(claim, email, still_locked, paused)))
                    ctx.app.hooks.at("after_transport")
                self.recorder.record_many(conn, deliveries, results)
                ctx.app.hooks.at("before_record_commit")
                tx.commit()
                return
            except SQLAlchemyError:
                # After a transport answered, a failed database session (terminated, or its
                # transaction poisoned by the failed liveness check) must not lose the
                # answers: record them again below. That is always safe: it takes the lead
                # locks again and every write is fenced on the claim tokens.
                if not deliveries:
                    raise
                for claim, _ in deliveries:
                    results.pop(claim.step_id, None)
        log.warning("database session lost during a send batch; recording with a new one")
        self._record_fresh(deliveries, results)

    def _batch_commit_then_call(self, claims: list[Claim], results: dict[int, str]) -> None:
        ctx = self.ctx
        with ctx.engine.connect() as conn, conn.begin():
            go = self._recheck_many(conn, claims, results)
            if not go:
                return
            ctx.app.hooks.at("after_recheck")
            go = self._mark_sending_many(conn, go, results)
        ctx.app.hooks.at("after_marker")
        deliveries: list[tuple[Claim, Handed]] = []
        paused: set[int | None] = set()
        for claim, email in go:
            deliveries.append((claim, self._deliver(claim, email, self._not_cancelled(claim), paused)))
            ctx.app.hooks.at("after_transport")
        self._record_fresh(deliveries, results)

    def _not_cancelled(self, claim: Claim) -> Callable[[], None]:
        """SQLite's last check before the point of no return: the write lock cannot be held
        across the call, so re-read whether a reply has asked to cancel this step since the
        marker committed; if so, the transport is stopped and nothing is handed over."""

        def check() -> None:
            self.ctx.app.hooks.at("before_data")
            with self.ctx.engine.connect() as conn, conn.begin():
                cancel = conn.execute(select(S.c.cancel_requested).where(S.c.id == claim.step_id)).scalar()
            if cancel:
                raise Stale("a reply arrived after the marker: not sending")

        return check

    def _deferral(self, claim: Claim) -> datetime | None:
        """When to try again if this email may not be handed over now (see hand_over_deferral)."""
        if claim.window is None or claim.zone is None or claim.mailbox_zone is None:
            return None
        now = self.ctx.now()
        return hand_over_deferral(now, claim.window, claim.zone, claim.send_day, claim.mailbox_zone)

    def _deliver(
        self, claim: Claim, email: OutgoingEmail, last_check: Callable[[], None], paused: set[int | None]
    ) -> Handed:
        """Hand one email over, unless its window closed, its cap's day changed, or its mailbox
        was refused earlier in this batch; the window and the day are checked again right
        before the transport's point of no return."""
        if claim.mailbox_id in paused:
            return Handed(
                Delivery(Outcome.TRANSIENT, "the mailbox was refused earlier in this batch"),
                deferred_to=self.ctx.now(),
            )
        later = self._deferral(claim)
        if later is not None:
            return Handed(
                Delivery(Outcome.TRANSIENT, "not handed over: window or day changed"), deferred_to=later
            )

        def before_commit() -> None:
            later = self._deferral(claim)
            if later is not None:
                raise _Deferred(later)
            last_check()

        handed = self._hand_over(email, before_commit)
        if handed.delivery.blame is Blame.SENDER:
            paused.add(claim.mailbox_id)
        return handed

    def _hand_over(self, email: OutgoingEmail, before_commit: Callable[[], None]) -> Handed:
        """The transport call. Transports report delivery problems as a Delivery; anything they
        raise instead is judged here so that one bad email cannot stop the worker."""
        aborted: list[BaseException] = []

        def hook() -> None:
            try:
                before_commit()
            except BaseException as exc:
                aborted.append(exc)
                raise

        try:
            delivery = self.ctx.transport.send(email, before_commit=hook)
        except Exception as exc:
            if aborted:
                delivery = Delivery(Outcome.TRANSIENT, f"aborted before the point of no return: {exc}")
            elif isinstance(exc, ValueError):
                delivery = Delivery(Outcome.PERMANENT, f"could not build the message: {exc}")
            else:
                log.exception("step %s: transport raised", email.send_key)
                delivery = Delivery(Outcome.UNKNOWN, f"transport raised {exc.__class__.__name__}")
        if not aborted:
            return Handed(delivery)
        # Our own last check refused: nothing was handed over.
        if isinstance(aborted[0], _Deferred):
            return Handed(delivery, deferred_to=aborted[0].until)
        return Handed(delivery, aborted=True)

    def _record_fresh(self, deliveries: list[tuple[Claim, Handed]], results: dict[int, str]) -> None:
        if not deliveries:
            return
        with self.ctx.engine.connect() as conn, conn.begin():
            self.ctx.lock_leads(conn, [claim.lead_id for claim, _ in deliveries])
            self.recorder.record_many(conn, deliveries, results)
            self.ctx.app.hooks.at("before_record_commit")

    def _recheck_many(
        self, conn: Connection, claims: list[Claim], results: dict[int, str]
    ) -> list[tuple[Claim, OutgoingEmail]]:
        """Lock the claims' leads, re-read everything a send depends on, refuse what may not go.

        Returns the claims that may be sent now, with their emails; every other claim gets its
        result ("refused" or "stale") in `results`.
        """
        ctx = self.ctx
        now = ctx.now()
        leads = ctx.lock_leads(conn, [c.lead_id for c in claims])
        claims = self._defer_closed(conn, claims, results)
        rows = {
            row.id: row for row in conn.execute(_SEND_ROWS.where(S.c.id.in_([c.step_id for c in claims])))
        }
        go: list[tuple[Claim, OutgoingEmail]] = []
        for claim in claims:
            row = rows[claim.step_id]
            lead = leads[claim.lead_id]
            check = SendCheck(
                reply_state=lead.reply_state,
                paused_until=lead.paused_until,
                step_state=row.state,
                claim_token=row.claim_token,
                my_token=claim.token,
                cancel_requested=row.cancel_requested,
                enrollment_state=row.enrollment_state,
                campaign_status=row.campaign_status,
                address_suppressed=bool(row.suppressed),
                mailbox_status=row.mailbox_status,
            )
            try:
                refusal = recheck(check, now)
            except Stale:
                results[claim.step_id] = "stale"
                continue
            if refusal is None:
                go.append((claim, ctx.email_from_row(row)))
                continue
            if refusal.cancel:
                values: dict[str, Any] = {"state": StepState.CANCELLED, "cancel_reason": "refused"}
            else:
                values = {
                    "state": StepState.SCHEDULED,
                    "due_at": max(now, lead.paused_until or now),
                    "send_day": None,
                }
            # `recheck` refuses only a step it read CLAIMED under our token. The WHERE below
            # stays fenced on the token alone, as it always was; the move is checked here.
            check_step_move(StepState(row.state), values["state"])
            conn.execute(
                update(S)
                .where(S.c.id == claim.step_id, S.c.claim_token == claim.token)
                .values(claim_token=None, lease_until=None, updated_at=now, **values)
            )
            ctx.event(
                conn,
                "send_refused",
                claim.lead_id,
                claim.step_id,
                reason=refusal.reason,
                cancelled=refusal.cancel,
            )
            if refusal.ends_enrollment:
                self._end_enrollment(conn, row.enrollment_id, refusal.reason)
            results[claim.step_id] = "refused"
        return go

    def _defer_closed(self, conn: Connection, claims: list[Claim], results: dict[int, str]) -> list[Claim]:
        """Claims whose window closed (or whose cap's day changed) since they were claimed go
        back to the queue before any marker is written."""
        keep = []
        for claim in claims:
            later = self._deferral(claim)
            if later is None:
                keep.append(claim)
                continue
            fence = Fence(claim.step_id, claim.token, StepState.CLAIMED)
            conn.execute(
                update(S)
                .where(fence.to(StepState.SCHEDULED))
                .values(
                    state=StepState.SCHEDULED,
                    due_at=later,
                    claim_token=None,
                    lease_until=None,
                    send_day=None,
                    updated_at=self.ctx.now(),
                )
            )
            results[claim.step_id] = "deferred"
        return keep

    def _end_enrollment(self, conn: Connection, enrollment_id: int, reason: str) -> None:
        """Nothing more of this enrollment can go out (its address is suppressed): cancel the
        rest of it, so that no step waits forever behind one that will never be sent."""
        ctx = self.ctx
        conn.execute(
            update(S)
            .where(
                S.c.enrollment_id == enrollment_id,
                in_states(S.c.state, step_move(CANCELLABLE, StepState.CANCELLED)),
            )
            .values(
                state=StepState.CANCELLED, cancel_reason="refused", claim_token=None, updated_at=ctx.now()
            )
        )
        conn.execute(
            update(E)
            .where(E.c.id == enrollment_id, E.c.state == EnrollmentState.ACTIVE)
            .values(state=EnrollmentState.CANCELLED)
        )
        ctx.event(conn, "enrollment_ended", None, None, enrollment_id=enrollment_id, reason=reason)

    def _mark_sending_many(
        self, conn: Connection, go: list[tuple[Claim, OutgoingEmail]], results: dict[int, str]
    ) -> list[tuple[Claim, OutgoingEmail]]:
        """The durable marker, fenced on our tokens (each unique to one claim), committed before
        any byte leaves. Also stores each Message-ID first, so an instant reply still matches."""
        ctx = self.ctx
        now = ctx.now()
        marked: dict[int, int] = dict(
            conn.execute(
                update(S)
                .where(
                    S.c.id.in_([c.step_id for c, _ in go]),
                    S.c.claim_token.in_([c.token for c, _ in go]),
                    in_states(S.c.state, step_move(StepState.CLAIMED, StepState.SENDING)),
                )
                .values(
                    state=StepState.SENDING,
                    attempts=S.c.attempts + 1,
                    lease_until=now + ctx.app.settings.lease,
                    updated_at=now,
                )
                .returning(S.c.id, S.c.attempts)
            ).all()
        )
        handed = [
            {
                "workspace_id": ctx.ws,
                "step_id": c.step_id,
                "lead_id": c.lead_id,
                "message_id": e.message_id,
                "to_address": e.to_address,
                "subject": e.subject,
                "status": "handed",
                "handed_at": now,
            }
            for c, e in go
            if c.step_id in marked
        ]
        if handed:
            # One row per step: a retry or a person's resend updates the first attempt's row
            # (the snapshot may have been rendered again in between).
            insert = pg_insert(OUT) if ctx.postgres else sqlite_insert(OUT)
            conn.execute(
                insert.on_conflict_do_update(
                    index_elements=[OUT.c.step_id],
                    set_={
                        "status": "handed",
                        "handed_at": insert.excluded.handed_at,
                        "to_address": insert.excluded.to_address,
                        "subject": insert.excluded.subject,
                    },
                ),
                handed,
            )
        for claim, _ in go:
            if claim.step_id not in marked:
                results[claim.step_id] = "stale"
        return [(c, e) for c, e in go if c.step_id in marked]
