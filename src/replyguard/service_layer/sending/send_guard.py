"""T2 of a send: the re-check under the lead lock, the marker, the hand-over.

See `replyguard.service_layer.sending.worker` for the phases and docs/architecture.md for the
guarantees on each database. Right before each email is handed over — before the transport
is called, and again right before its point of no return — the send window, the cap and the
pauses are checked again: the clock moves during a batch, a slow server must not carry a
batch past the window's end or into the next day's cap, and a person may change the window,
lower the cap or pause the mailbox meanwhile. The re-check reads those settings with the rows
it already reads; the last check reads them in the one statement it already made (on
PostgreSQL it proves the lead lock is still held, on SQLite it looks for a reply's cancel),
so the settings cost the send path no round trip. A worker asked to stop hands nothing more
over: what it claimed and did not hand over goes back to the queue at once. T3 (the record)
is `send_record.py`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, bindparam, column, func, literal, select, update
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.exc import SQLAlchemyError

from replyguard.adapters.transports.base import Delivery, Outcome, Transport
from replyguard.domain.outgoing import OutgoingEmail, message_bytes
from replyguard.domain.send_policy import SendCheck, SendLimits, Stale, limits_deferral, recheck
from replyguard.domain.smtp_answers import Blame
from replyguard.domain.states import CANCELLABLE, EnrollmentState, StepState, check_step_move, step_move
from replyguard.service_layer.sending.send_record import Recorder
from replyguard.service_layer.sending.worker_base import (
    LAST_CHECK_OF,
    OUT,
    SEND_ROWS_OF,
    Claim,
    E,
    Handed,
    S,
    WorkerReport,
    _count,
    fenced_batch,
    in_states,
)
from replyguard.service_layer.sending.worker_context import WorkerContext
from replyguard.service_layer.steps import back_in_queue

log = logging.getLogger(__name__)


class _Deferred(Exception):
    """Raised by our own last check: the window closed, the cap's day changed, a person changed
    the settings, or the worker is stopping (`stopping`)."""

    def __init__(self, until: datetime, *, stopping: bool = False) -> None:
        super().__init__("not now: the worker is stopping" if stopping else f"not now: deferred to {until}")
        self.until = until
        self.stopping = stopping


#: An email whose re-check let it go, with its settings as the re-check read them.
_Go = tuple[Claim, OutgoingEmail, SendLimits]


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
        handed: dict[int, OutgoingEmail] = {}
        try:
            if self.ctx.stopping():
                self._give_back(claims, results)
            else:
                guarded = self._batch_holding_locks if self.ctx.postgres else self._batch_commit_then_call
                guarded(claims, results, handed)
        except SQLAlchemyError as exc:
            # Steps keep their claim or marker; recovery decides after the lease.
            log.warning("database error during a send batch: %s", exc.__class__.__name__)
        self._copy_to_sent(claims, results, handed)
        ordered = [results.get(c.step_id, "error") for c in claims]
        for result in ordered:
            _count(report, result)
        return ordered

    def give_back(self, claims: list[Claim], report: WorkerReport) -> list[str]:
        """The worker is stopping: claims it will not send go back to the queue at once, in one
        transaction, keeping their due times ("stale" for one no longer ours)."""
        results: dict[int, str] = {}
        try:
            self._give_back(claims, results)
        except SQLAlchemyError as exc:
            # They keep their claims; recovery gives them back when the lease ends.
            log.warning("database error giving claims back: %s", exc.__class__.__name__)
        ordered = [results.get(c.step_id, "error") for c in claims]
        for result in ordered:
            _count(report, result)
        return ordered

    def _give_back(self, claims: list[Claim], results: dict[int, str]) -> None:
        with self.ctx.engine.connect() as conn, conn.begin():
            back = self.ctx.give_back(conn, claims)
        for claim in claims:
            results[claim.step_id] = "given_back" if claim.step_id in back else "stale"

    def _copy_to_sent(
        self, claims: list[Claim], results: dict[int, str], handed: dict[int, OutgoingEmail]
    ) -> None:
        """After the record committed, outside every lock: a copy of each sent email in its
        mailbox's Sent folder, where the provider keeps none itself (`sent_folder_for`)."""
        for claim in claims:
            email = handed.get(claim.step_id)
            if email is None or results.get(claim.step_id) != "sent":
                continue
            folder = self.ctx.sent_folder_for(claim.mailbox_id)
            if folder is not None:
                folder.append(message_bytes(email), email.date)

    def _batch_holding_locks(
        self, claims: list[Claim], results: dict[int, str], handed: dict[int, OutgoingEmail]
    ) -> None:
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
                # The marker on a second connection, committed before any byte leaves while
                # this one keeps the lead locks. It is one statement (`_MARK_AND_HAND`) run in
                # autocommit: committed, and durable, when it returns.
                with ctx.autocommit.connect() as marker:
                    go = self._mark_sending_many(marker, go, results)
                ctx.app.hooks.at("after_marker")
                paused: set[int | None] = set()
                for claim, email, limits in go:
                    handed[claim.step_id] = email
                    check = self._still_locked(conn, claim)
                    deliveries.append((claim, self._deliver(claim, email, limits, check, paused)))
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

    def _batch_commit_then_call(
        self, claims: list[Claim], results: dict[int, str], handed: dict[int, OutgoingEmail]
    ) -> None:
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
        for claim, email, limits in go:
            handed[claim.step_id] = email
            check = self._not_cancelled(claim)
            deliveries.append((claim, self._deliver(claim, email, limits, check, paused)))
            ctx.app.hooks.at("after_transport")
        self._record_fresh(deliveries, results)

    def _still_locked(self, conn: Connection, claim: Claim) -> Callable[[], None]:
        """PostgreSQL's last check before the point of no return, on the session that holds the
        lead locks: it raises if that session, and with it the locks, is gone (then the
        transport must not start the point of no return), and it reads the settings as they
        are now — in the one statement the liveness proof needs anyway."""

        def check() -> None:
            self.ctx.app.hooks.at("before_data")
            self._refuse_if_changed(claim, conn.execute(LAST_CHECK_OF, {"step_id": claim.step_id}).one())

        return check

    def _not_cancelled(self, claim: Claim) -> Callable[[], None]:
        """SQLite's last check before the point of no return: the write lock cannot be held
        across the call, so re-read whether a reply has asked to cancel this step since the
        marker committed; if so, the transport is stopped and nothing is handed over. The same
        statement reads the settings as they are now."""

        def check() -> None:
            self.ctx.app.hooks.at("before_data")
            with self.ctx.engine.connect() as conn, conn.begin():
                row = conn.execute(LAST_CHECK_OF, {"step_id": claim.step_id}).one()
            if row.cancel_requested:
                raise Stale("a reply arrived after the marker: not sending")
            self._refuse_if_changed(claim, row)

        return check

    def _refuse_if_changed(self, claim: Claim, row: Any) -> None:
        later = self._deferral(claim, self.ctx.limits(row))
        if later is not None:
            raise _Deferred(later)

    def _deferral(self, claim: Claim, limits: SendLimits) -> datetime | None:
        """When to try again if this email may not be handed over now (`limits_deferral`)."""
        if claim.cap is None:  # AUDIT: the canary's email has no window and no cap
            return None
        return limits_deferral(self.ctx.now(), limits, claim.send_day, claim.cap)

    def _deliver(
        self,
        claim: Claim,
        email: OutgoingEmail,
        limits: SendLimits,
        last_check: Callable[[], None],
        paused: set[int | None],
    ) -> Handed:
        """Hand one email over, unless the worker is stopping, its window closed, its cap's day
        changed, or its mailbox was refused earlier in this batch (`limits`: the settings as
        the re-check read them). `last_check` reads the settings again right before the
        transport's point of no return, and the stop is looked at there once more."""
        ctx = self.ctx
        if ctx.stopping():
            return Handed(
                Delivery(Outcome.TRANSIENT, "not handed over: the worker is stopping"),
                deferred_to=ctx.now(),
                stopping=True,
            )
        if claim.mailbox_id in paused:
            return Handed(
                Delivery(Outcome.TRANSIENT, "the mailbox was refused earlier in this batch"),
                deferred_to=ctx.now(),
            )
        later = self._deferral(claim, limits)
        if later is not None:
            return Handed(
                Delivery(Outcome.TRANSIENT, "not handed over: window, cap or day changed"), deferred_to=later
            )

        def before_commit() -> None:
            if ctx.stopping():
                raise _Deferred(ctx.now(), stopping=True)
            last_check()

        handed = self._hand_over(ctx.transport_for(claim.mailbox_id), email, before_commit)
        if handed.delivery.blame is Blame.SENDER and handed.deferred_to is None:
            paused.add(claim.mailbox_id)
        return handed

    def _hand_over(
        self, transport: Transport, email: OutgoingEmail, before_commit: Callable[[], None]
    ) -> Handed:
        """The transport call. Transports report delivery problems as a Delivery; anything they
        raise instead is judged here so that one bad email cannot stop the worker."""
        aborted: list[BaseException] = []

        def hook() -> None:
            try:
                before_commit()
            except BaseException as exc:
                aborted.append(exc)
                raise

        me = threading.get_ident()
        self.ctx.in_flight[me] = transport
        try:
            delivery = transport.send(email, before_commit=hook)
        except Exception as exc:
            if aborted:
                delivery = Delivery(Outcome.TRANSIENT, f"aborted before the point of no return: {exc}")
            elif isinstance(exc, ValueError):
                delivery = Delivery(Outcome.PERMANENT, f"could not build the message: {exc}")
            else:
                log.exception("step %s: transport raised", email.send_key)
                delivery = Delivery(Outcome.UNKNOWN, f"transport raised {exc.__class__.__name__}")
        if not aborted:
            if self.ctx.interrupted and delivery.outcome is Outcome.TRANSIENT:
                # We cut its connection (the worker is stopping, its grace is over) before the
                # server could have taken it: nothing was handed over, and it is no attempt.
                return Handed(delivery, deferred_to=self.ctx.now(), stopping=True)
            return Handed(delivery)
        # Our own last check refused: nothing was handed over.
        if isinstance(aborted[0], _Deferred):
            return Handed(delivery, deferred_to=aborted[0].until, stopping=aborted[0].stopping)
        return Handed(delivery, aborted=True)

    def _record_fresh(self, deliveries: list[tuple[Claim, Handed]], results: dict[int, str]) -> None:
        if not deliveries:
            return
        with self.ctx.engine.connect() as conn, conn.begin():
            self.ctx.lock_leads(conn, [claim.lead_id for claim, _ in deliveries])
            self.recorder.record_many(conn, deliveries, results)
            self.ctx.app.hooks.at("before_record_commit")

    def _recheck_many(self, conn: Connection, claims: list[Claim], results: dict[int, str]) -> list[_Go]:
        """Lock the claims' leads, re-read everything a send depends on, refuse what may not go.

        Returns the claims that may be sent now, with their emails and their settings as read
        here; every other claim gets its result ("refused", "deferred" or "stale") in `results`.
        """
        ctx = self.ctx
        now = ctx.now()
        leads = ctx.lock_leads(conn, [c.lead_id for c in claims])
        rows = {row.id: row for row in conn.execute(SEND_ROWS_OF, {"step_ids": [c.step_id for c in claims]})}
        go: list[_Go] = []
        later: dict[datetime, list[Claim]] = {}
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
                limits = ctx.limits(row)
                until = self._deferral(claim, limits)
                if until is None:
                    go.append((claim, ctx.email_from_row(row), limits))
                else:
                    # Its window closed, its cap's day changed or a person lowered the cap since
                    # the claim: back to the queue before any marker is written.
                    later.setdefault(until, []).append(claim)
                continue
            # `recheck` refuses only a step it read CLAIMED under our token. The WHERE below
            # stays fenced on the token alone, as it always was; the move is checked here.
            if refusal.cancel:
                check_step_move(StepState(row.state), StepState.CANCELLED)
                values: dict[str, Any] = {"state": StepState.CANCELLED, "cancel_reason": "refused"}
                values |= {"claim_token": None, "lease_until": None, "updated_at": now}
            else:
                values = back_in_queue(StepState(row.state), now, due_at=max(now, lead.paused_until or now))
            conn.execute(
                update(S).where(S.c.id == claim.step_id, S.c.claim_token == claim.token).values(**values)
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
        for until, deferred in later.items():
            back = ctx.give_back(conn, deferred, due=until)
            for claim in deferred:
                results[claim.step_id] = "deferred" if claim.step_id in back else "stale"
        return go

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

    def _mark_sending_many(self, conn: Connection, go: list[_Go], results: dict[int, str]) -> list[_Go]:
        """The durable marker, fenced on our tokens (each unique to one claim), committed before
        any byte leaves. Also stores each Message-ID first, so an instant reply still matches.
        The statements are built once (`_MARKER`, `_MARK_AND_HAND`): only the values change."""
        ctx = self.ctx
        now = ctx.now()
        fence = {
            "marked_ids": [c.step_id for c, _, _ in go],
            "marked_tokens": [c.token for c, _, _ in go],
            "marked_at": now,
            "marked_lease": now + ctx.app.settings.lease,
        }
        if ctx.postgres:
            # The marker and the outbound rows in one statement (one round trip).
            handed = {
                "handed_workspace": ctx.ws,
                "handed_step_id": [c.step_id for c, _, _ in go],
                "handed_lead_id": [c.lead_id for c, _, _ in go],
                "handed_message_id": [e.message_id for _, e, _ in go],
                "handed_to_address": [e.to_address for _, e, _ in go],
                "handed_subject": [e.subject for _, e, _ in go],
            }
            marked = set(conn.execute(_MARK_AND_HAND, fence | handed).scalars())
        else:
            marked = set(conn.execute(_MARKER, fence).scalars())
            rows = [self._handed_row(c, e, now) for c, e, _ in go if c.step_id in marked]
            if rows:
                conn.execute(_SQLITE_HAND, rows)
        for claim, _, _ in go:
            if claim.step_id not in marked:
                results[claim.step_id] = "stale"
        return [item for item in go if item[0].step_id in marked]

    def _handed_row(self, claim: Claim, email: OutgoingEmail, now: datetime) -> dict[str, Any]:
        return {
            "workspace_id": self.ctx.ws,
            "step_id": claim.step_id,
            "lead_id": claim.lead_id,
            "message_id": email.message_id,
            "to_address": email.to_address,
            "subject": email.subject,
            "status": "handed",
            "handed_at": now,
        }


def _unnested(name: str, kind: Any) -> Any:
    return bindparam(f"handed_{name}", type_=ARRAY(kind))


#: The outbound rows of a marked batch as bound arrays, `unnest`ed into rows: unlike a VALUES
#: list of the batch's data, the statement's text is the same for every batch, so SQLAlchemy
#: compiles it once (compiling it per send was a third of the worker's CPU).
_HANDED_ROWS = (
    func.unnest(
        _unnested("step_id", OUT.c.step_id.type),
        _unnested("lead_id", OUT.c.lead_id.type),
        _unnested("message_id", OUT.c.message_id.type),
        _unnested("to_address", OUT.c.to_address.type),
        _unnested("subject", OUT.c.subject.type),
    )
    .table_valued(
        column("step_id", OUT.c.step_id.type),
        column("lead_id", OUT.c.lead_id.type),
        column("message_id", OUT.c.message_id.type),
        column("to_address", OUT.c.to_address.type),
        column("subject", OUT.c.subject.type),
    )
    .render_derived(name="handed")
)


_HANDED_COLUMNS = [
    "workspace_id",
    "step_id",
    "lead_id",
    "message_id",
    "to_address",
    "subject",
    "status",
    "handed_at",
]


def _rehand(insert: Any) -> dict[str, Any]:
    """One outbound row per step: a retry or a person's resend updates the first attempt's row
    (the snapshot may have been rendered again in between)."""
    return {
        "status": "handed",
        "handed_at": insert.excluded.handed_at,
        "to_address": insert.excluded.to_address,
        "subject": insert.excluded.subject,
    }


#: The marker: CLAIMED -> SENDING, fenced on the claims' tokens, with the attempt counted and
#: a new lease. Expanding IN lists, so one compiled statement serves every batch size.
_MARKED_AT = bindparam("marked_at", type_=S.c.updated_at.type)
_MARKER = (
    update(S)
    .where(fenced_batch("marked", StepState.CLAIMED, StepState.SENDING))
    .values(
        state=StepState.SENDING,
        attempts=S.c.attempts + 1,
        lease_until=bindparam("marked_lease", type_=S.c.lease_until.type),
        updated_at=_MARKED_AT,
    )
    .returning(S.c.id)
)

_SQLITE_INSERT = sqlite_insert(OUT)
#: SQLite: the outbound rows of the steps the marker marked (its own statement after it).
_SQLITE_HAND = _SQLITE_INSERT.on_conflict_do_update(
    index_elements=[OUT.c.step_id], set_=_rehand(_SQLITE_INSERT)
)


def _mark_and_hand() -> Any:
    """PostgreSQL: `WITH marked AS (UPDATE steps … RETURNING id) INSERT INTO outbound_messages
    … SELECT` the rows of the steps it marked, upserted as on SQLite; returns the marked ids."""
    marked = _MARKER.cte("marked")
    rows = _HANDED_ROWS
    source = select(
        bindparam("handed_workspace", type_=OUT.c.workspace_id.type),
        rows.c.step_id,
        rows.c.lead_id,
        rows.c.message_id,
        rows.c.to_address,
        rows.c.subject,
        literal("handed", OUT.c.status.type),
        _MARKED_AT,
    ).select_from(rows.join(marked, marked.c.id == rows.c.step_id))
    insert = pg_insert(OUT)
    return (
        insert.from_select(_HANDED_COLUMNS, source)
        .on_conflict_do_update(index_elements=[OUT.c.step_id], set_=_rehand(insert))
        .returning(OUT.c.step_id)
        .add_cte(marked)
    )


_MARK_AND_HAND = _mark_and_hand()
