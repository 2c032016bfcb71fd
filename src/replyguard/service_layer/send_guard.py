"""T2 and T3 of a send: the re-check under the lead lock, the marker, the hand-over, the record.

See `replyguard.service_layer.worker` for the phases and docs/architecture.md for the
guarantees on each database.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, and_, bindparam, func, select, text, update
from sqlalchemy.exc import SQLAlchemyError

from replyguard.adapters.transports.base import Delivery, Outcome
from replyguard.domain.outgoing import OutgoingEmail
from replyguard.domain.schedule import load_zone, plan_due
from replyguard.domain.send_policy import SendCheck, Stale, backoff, recheck
from replyguard.domain.states import StepState
from replyguard.service_layer.failpoints import InjectedCrash
from replyguard.service_layer.worker_base import (
    _SEND_ROWS,
    CS,
    CT,
    EV,
    OUT,
    SPACING_TOLERANCE,
    C,
    Claim,
    E,
    L,
    S,
    WorkerBase,
    WorkerReport,
    _count,
)

log = logging.getLogger(__name__)


class SendGuardMixin(WorkerBase):
    """T2 and T3: re-check under the lead locks, mark, hand over, record."""

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
            guarded = self._batch_holding_locks if self.postgres else self._batch_commit_then_call
            guarded(claims, results)
        except SQLAlchemyError as exc:
            # Steps keep their claim or marker; recovery decides after the lease.
            log.warning("database error during a send batch: %s", exc.__class__.__name__)
        ordered = [results.get(c.step_id, "error") for c in claims]
        for result in ordered:
            _count(report, result)
        return ordered

    def _batch_holding_locks(self, claims: list[Claim], results: dict[int, str]) -> None:
        deliveries: list[tuple[Claim, Delivery]] = []
        with self.engine.connect() as conn:
            tx = conn.begin()
            try:
                go = self._recheck_many(conn, claims, results)
                if not go:
                    tx.commit()
                    return
                self.app.failpoints.hit("after_recheck")
                with self.engine.connect() as marker, marker.begin():
                    go = self._mark_sending_many(marker, go, results)
                self.app.failpoints.hit("after_marker")

                def still_locked() -> None:
                    # Raises if our session, and with it the lead locks, is gone: then the
                    # transport must not start the point of no return.
                    self.app.failpoints.hit("before_data")
                    conn.execute(text("SELECT 1"))

                for claim, email in go:
                    deliveries.append((claim, self._hand_over(email, still_locked)))
                    self.app.failpoints.hit("after_transport")
                self._record_many(conn, deliveries, results)
                self.app.failpoints.hit("before_record_commit")
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
        with self.engine.connect() as conn, conn.begin():
            go = self._recheck_many(conn, claims, results)
            if not go:
                return
            self.app.failpoints.hit("after_recheck")
            go = self._mark_sending_many(conn, go, results)
        self.app.failpoints.hit("after_marker")
        deliveries: list[tuple[Claim, Delivery]] = []
        for claim, email in go:
            deliveries.append((claim, self._hand_over(email, self._not_cancelled(claim))))
            self.app.failpoints.hit("after_transport")
        self._record_fresh(deliveries, results)

    def _not_cancelled(self, claim: Claim) -> Callable[[], None]:
        """SQLite's last check before the point of no return: the write lock cannot be held
        across the call, so re-read whether a reply has asked to cancel this step since the
        marker committed; if so, the transport is stopped and nothing is handed over."""

        def check() -> None:
            self.app.failpoints.hit("before_data")
            with self.engine.connect() as conn, conn.begin():
                cancel = conn.execute(select(S.c.cancel_requested).where(S.c.id == claim.step_id)).scalar()
            if cancel:
                raise Stale("a reply arrived after the marker: not sending")

        return check

    def _hand_over(self, email: OutgoingEmail, before_commit: Callable[[], None]) -> Delivery:
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
            return self.transport.send(email, before_commit=hook)
        except InjectedCrash:
            raise
        except Exception as exc:
            if aborted:
                # Our own last check refused (the lead lock is gone): nothing was handed over.
                return Delivery(Outcome.TRANSIENT, f"aborted before the point of no return: {exc}")
            if isinstance(exc, ValueError):
                return Delivery(Outcome.PERMANENT, f"could not build the message: {exc}")
            log.exception("step %s: transport raised", email.send_key)
            return Delivery(Outcome.UNKNOWN, f"transport raised {exc.__class__.__name__}")

    def _record_fresh(self, deliveries: list[tuple[Claim, Delivery]], results: dict[int, str]) -> None:
        if not deliveries:
            return
        with self.engine.connect() as conn, conn.begin():
            self._lock_leads(conn, [claim.lead_id for claim, _ in deliveries])
            self._record_many(conn, deliveries, results)
            self.app.failpoints.hit("before_record_commit")

    def _recheck_many(
        self, conn: Connection, claims: list[Claim], results: dict[int, str]
    ) -> list[tuple[Claim, OutgoingEmail]]:
        """Lock the claims' leads, re-read everything a send depends on, refuse what may not go.

        Returns the claims that may be sent now, with their emails; every other claim gets its
        result ("refused" or "stale") in `results`.
        """
        now = self.now()
        leads = self._lock_leads(conn, [c.lead_id for c in claims])
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
            )
            try:
                refusal = recheck(check, now)
            except Stale:
                results[claim.step_id] = "stale"
                continue
            if refusal is None:
                go.append((claim, self._email_from_row(row)))
                continue
            if refusal.cancel:
                values: dict[str, Any] = {"state": StepState.CANCELLED, "cancel_reason": "refused"}
            else:
                values = {
                    "state": StepState.SCHEDULED,
                    "due_at": max(now, lead.paused_until or now),
                    "send_day": None,
                }
            conn.execute(
                update(S)
                .where(S.c.id == claim.step_id, S.c.claim_token == claim.token)
                .values(claim_token=None, lease_until=None, updated_at=now, **values)
            )
            self._event(
                conn,
                "send_refused",
                claim.lead_id,
                claim.step_id,
                reason=refusal.reason,
                cancelled=refusal.cancel,
            )
            results[claim.step_id] = "refused"
        return go

    def _mark_sending_many(
        self, conn: Connection, go: list[tuple[Claim, OutgoingEmail]], results: dict[int, str]
    ) -> list[tuple[Claim, OutgoingEmail]]:
        """The durable marker, fenced on our tokens (each unique to one claim), committed before
        any byte leaves. Also stores each Message-ID first, so an instant reply still matches."""
        now = self.now()
        marked: dict[int, int] = dict(
            conn.execute(
                update(S)
                .where(
                    S.c.id.in_([c.step_id for c, _ in go]),
                    S.c.claim_token.in_([c.token for c, _ in go]),
                    S.c.state == StepState.CLAIMED,
                )
                .values(
                    state=StepState.SENDING,
                    attempts=S.c.attempts + 1,
                    lease_until=now + self.app.settings.lease,
                    updated_at=now,
                )
                .returning(S.c.id, S.c.attempts)
            ).all()
        )
        first = [
            {
                "workspace_id": self.ws,
                "step_id": c.step_id,
                "lead_id": c.lead_id,
                "message_id": e.message_id,
                "to_address": e.to_address,
                "subject": e.subject,
                "status": "handed",
                "handed_at": now,
            }
            for c, e in go
            if marked.get(c.step_id) == 1
        ]
        if first:
            conn.execute(OUT.insert(), first)
        retried = [c.step_id for c, _ in go if marked.get(c.step_id, 1) > 1]
        if retried:  # a retry: the row was written by the first attempt's marker
            conn.execute(update(OUT).where(OUT.c.step_id.in_(retried)).values(status="handed", handed_at=now))
        for claim, _ in go:
            if claim.step_id not in marked:
                results[claim.step_id] = "stale"
        return [(c, e) for c, e in go if c.step_id in marked]

    def _record_many(
        self, conn: Connection, deliveries: list[tuple[Claim, Delivery]], results: dict[int, str]
    ) -> None:
        """Write every result, fenced on the claim tokens. Acceptances are written together."""
        now = self.now()
        accepted = [(c, d) for c, d in deliveries if d.outcome is Outcome.ACCEPTED]
        for claim, delivery in deliveries:
            if delivery.outcome is not Outcome.ACCEPTED:
                results[claim.step_id] = self._record(conn, claim, delivery)
        if not accepted:
            return
        sent = {
            row.id: row
            for row in conn.execute(
                update(S)
                .where(
                    S.c.id.in_([c.step_id for c, _ in accepted]),
                    S.c.claim_token.in_([c.token for c, _ in accepted]),
                    S.c.state == StepState.SENDING,
                )
                .values(
                    state=StepState.SENT,
                    sent_at=now,
                    crossed=S.c.cancel_requested,
                    lease_until=None,
                    updated_at=now,
                    last_error=None,
                )
                .returning(S.c.id, S.c.enrollment_id, S.c.position, S.c.cancel_requested)
            )
        }
        done = [(c, d) for c, d in accepted if c.step_id in sent]
        for claim, delivery in accepted:
            if claim.step_id not in sent:
                results[claim.step_id] = self._late(conn, claim, delivery)
        if not done:
            return
        conn.execute(
            update(OUT)
            .where(OUT.c.step_id == bindparam("sid"))
            .values(status="accepted", accepted_at=now, transport_ref=bindparam("ref")),
            [{"sid": c.step_id, "ref": d.ref} for c, d in done],
        )
        conn.execute(
            EV.insert(),
            [
                {
                    "workspace_id": self.ws,
                    "lead_id": c.lead_id,
                    "step_id": c.step_id,
                    "kind": "step_sent",
                    "at": now,
                    "data": {"crossed": bool(sent[c.step_id].cancel_requested)},
                }
                for c, _ in done
            ],
        )
        self._after_sent_many(
            conn, [(sent[c.step_id].enrollment_id, sent[c.step_id].position) for c, _ in done], now
        )
        for claim, _ in done:
            results[claim.step_id] = "sent"

    def _record(self, conn: Connection, claim: Claim, delivery: Delivery) -> str:
        """A result other than acceptance (those are written together by `_record_many`)."""
        now = self.now()
        fenced = and_(S.c.id == claim.step_id, S.c.claim_token == claim.token, S.c.state == StepState.SENDING)
        outcome = delivery.outcome
        assert outcome is not Outcome.ACCEPTED
        step = conn.execute(select(S.c.attempts, S.c.cancel_requested).where(fenced)).one_or_none()
        if step is None:
            return self._late(conn, claim, delivery)
        if (
            outcome is Outcome.TRANSIENT
            and not step.cancel_requested
            and (step.attempts < self.app.settings.max_attempts)
        ):
            delay = backoff(step.attempts, self.app.settings.retry_base, self.app.settings.retry_cap)
            conn.execute(
                update(S)
                .where(fenced)
                .values(
                    state=StepState.SCHEDULED,
                    due_at=now + delay,
                    claim_token=None,
                    lease_until=None,
                    send_day=None,
                    last_error=delivery.detail[:2000],
                    updated_at=now,
                )
            )
            conn.execute(update(OUT).where(OUT.c.step_id == claim.step_id).values(status="not_sent"))
            self._event(
                conn,
                "send_retry_scheduled",
                claim.lead_id,
                claim.step_id,
                detail=delivery.detail,
                retry_at=(now + delay).isoformat(),
            )
            return "retried"
        if outcome in (Outcome.TRANSIENT, Outcome.PERMANENT):
            state = StepState.CANCELLED if step.cancel_requested else StepState.FAILED
            conn.execute(
                update(S)
                .where(fenced)
                .values(state=state, lease_until=None, last_error=delivery.detail[:2000], updated_at=now)
            )
            conn.execute(update(OUT).where(OUT.c.step_id == claim.step_id).values(status="not_sent"))
            self._event(conn, "step_failed", claim.lead_id, claim.step_id, detail=delivery.detail)
            return "failed"
        self._unknown(
            conn,
            claim.step_id,
            claim.lead_id,
            fenced,
            delivery.detail,
            hold=not step.cancel_requested,
        )
        return "unknown"

    def _late(self, conn: Connection, claim: Claim, delivery: Delivery) -> str:
        """The claim was taken over while we sent (lease expired): our result is not written."""
        log.warning(
            "step %s: result %s arrived after the claim was taken over", claim.step_id, delivery.outcome
        )
        self._event(
            conn,
            "late_result_ignored",
            claim.lead_id,
            claim.step_id,
            outcome=delivery.outcome,
            detail=delivery.detail,
        )
        return "stale"

    def _after_sent_many(self, conn: Connection, sent: list[tuple[int, int]], now: datetime) -> None:
        """Keep the spacing: each next step waits its `wait` after this send, not the plan.
        An enrollment whose last step went out is completed."""
        rows = conn.execute(
            select(
                S.c.id,
                S.c.enrollment_id,
                S.c.position,
                S.c.due_at,
                CS.c.wait_seconds,
                E.c.campaign_id,
                CT.c.timezone,
                C.c.timezone.label("campaign_tz"),
            )
            .select_from(
                S.join(CS, CS.c.id == S.c.campaign_step_id)
                .join(E, E.c.id == S.c.enrollment_id)
                .join(C, C.c.id == E.c.campaign_id)
                .join(L, L.c.id == S.c.lead_id)
                .join(CT, CT.c.id == L.c.contact_id)
            )
            .where(
                # By enrollment (an index prefix); the position is picked below. A row-value
                # IN over (enrollment, position) pairs is not planned as an index lookup.
                S.c.enrollment_id.in_({e for e, _ in sent}),
                S.c.state.in_([StepState.SCHEDULED, StepState.AWAITING_APPROVAL]),
            )
        ).all()
        wanted = {(e, p + 1) for e, p in sent}
        rows = [row for row in rows if (row.enrollment_id, row.position) in wanted]
        moves = []
        for nxt in rows:
            due = plan_due(
                now,
                timedelta(seconds=nxt.wait_seconds),
                self._window(conn, nxt.campaign_id),
                load_zone(nxt.timezone or nxt.campaign_tz),
            )
            # Only a real delay moves the next step: rewriting an indexed column for a few
            # seconds of drift would cost every send a write for no one's benefit.
            if due > nxt.due_at + SPACING_TOLERANCE:
                moves.append({"sid": nxt.id, "due": due})
        if moves:
            conn.execute(update(S).where(S.c.id == bindparam("sid")).values(due_at=bindparam("due")), moves)
        waiting = {nxt.enrollment_id for nxt in rows}
        for enrollment_id, position in sent:
            if enrollment_id in waiting:
                continue
            remaining = conn.execute(
                select(func.count())
                .select_from(S)
                .where(S.c.enrollment_id == enrollment_id, S.c.position > position)
            ).scalar_one()
            if remaining == 0:
                conn.execute(
                    update(E).where(E.c.id == enrollment_id, E.c.state == "active").values(state="completed")
                )
