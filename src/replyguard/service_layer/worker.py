"""The guarded worker: claim due steps, re-check under the lead lock, send, record.

Phases of one send (see docs/architecture.md for the diagram):

T1 claim      One short transaction claims a batch of due steps (FOR UPDATE SKIP LOCKED on
              PostgreSQL, the write lock on SQLite): state CLAIMED, a fresh fencing token and
              a lease. Send windows and the mailbox's daily cap are enforced here.
T2 re-check   Lock the lead row (the lock the reply transaction takes), read its reply state,
              the enrollment, the suppression list and the step's token. Refuse on anything
              but "active and ours".
   marker     Commit SENDING (fenced on the token) before any byte leaves: from here on, a
              crash is an unknown outcome, never a silent retry.
   send       Hand the email to the transport. On PostgreSQL the lead lock is held until the
              result is recorded, so a reply that commits while we send waits for us, and a
              send can never start after a reply committed. On SQLite (single writer) the lock
              cannot be held across the call: a reply that lands during the call is recorded
              and the send is flagged "crossed" (see docs/architecture.md).
T3 record     SENT / retry later / FAILED / UNKNOWN, fenced on the token, in the same
              transaction that holds the lead lock.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, cast

from sqlalchemy import Connection, Table, and_, bindparam, exists, func, select, text, update
from sqlalchemy.exc import SQLAlchemyError

from replyguard.adapters.db import models as m
from replyguard.adapters.transports.base import Delivery, Outcome, Probe, Transport
from replyguard.bootstrap import App
from replyguard.domain.addresses import domain_of
from replyguard.domain.message_ids import unsubscribe_token
from replyguard.domain.outgoing import OutgoingEmail
from replyguard.domain.schedule import SendWindow, load_zone, local_day, next_day_start, plan_due
from replyguard.domain.send_policy import SendCheck, Stale, backoff, recheck
from replyguard.domain.states import ReplyState, StepState
from replyguard.service_layer.failpoints import InjectedCrash

log = logging.getLogger(__name__)

S = cast(Table, m.Step.__table__)
L = cast(Table, m.Lead.__table__)
E = cast(Table, m.Enrollment.__table__)
C = cast(Table, m.Campaign.__table__)
CT = cast(Table, m.Contact.__table__)
MB = cast(Table, m.Mailbox.__table__)
OUT = cast(Table, m.OutboundMessage.__table__)
EV = cast(Table, m.Event.__table__)
SUP = cast(Table, m.Suppression.__table__)
CS = cast(Table, m.CampaignStep.__table__)
WS = cast(Table, m.Workspace.__table__)

#: Everything the re-check and the email need about a step, in one query.
_SEND_ROWS = select(
    S.c.id,
    S.c.state,
    S.c.claim_token,
    S.c.cancel_requested,
    S.c.to_address,
    S.c.send_key,
    S.c.message_id,
    S.c.subject,
    S.c.body,
    S.c.in_reply_to,
    S.c.references,
    E.c.state.label("enrollment_state"),
    C.c.status.label("campaign_status"),
    exists()
    .where(SUP.c.workspace_id == S.c.workspace_id, SUP.c.address == S.c.to_address)
    .label("suppressed"),
    CT.c.first_name,
    CT.c.last_name,
    MB.c.address.label("from_address"),
    MB.c.from_name,
    WS.c.secret,
).select_from(
    S.join(E, E.c.id == S.c.enrollment_id)
    .join(C, C.c.id == E.c.campaign_id)
    .join(L, L.c.id == S.c.lead_id)
    .join(CT, CT.c.id == L.c.contact_id)
    .join(MB, MB.c.id == S.c.mailbox_id)
    .join(WS, WS.c.id == S.c.workspace_id)
)

#: How much later than planned a step may go out before the next one is moved to keep its wait.
SPACING_TOLERANCE = timedelta(minutes=15)

_USING_SLOT = [StepState.CLAIMED, StepState.SENDING, StepState.SENT, StepState.UNKNOWN]


@dataclass(frozen=True, slots=True)
class Claim:
    step_id: int
    lead_id: int
    token: str


@dataclass
class WorkerReport:
    claimed: int = 0
    sent: int = 0
    refused: int = 0
    retried: int = 0
    failed: int = 0
    unknown: int = 0
    stale: int = 0
    deferred: int = 0
    recovered: int = 0
    resumed: int = 0
    outcomes: dict[str, int] = field(default_factory=dict)

    def add(self, other: WorkerReport) -> None:
        for name in (
            "claimed",
            "sent",
            "refused",
            "retried",
            "failed",
            "unknown",
            "stale",
            "deferred",
            "recovered",
            "resumed",
        ):
            setattr(self, name, getattr(self, name) + getattr(other, name))


class Worker:
    def __init__(self, app: App, transport: Transport | None = None) -> None:
        self.app = app
        self.engine = app.engine
        self.transport = transport or app.transport
        self.ws = app.workspace_id
        self.postgres = app.postgres
        self._windows: dict[int, SendWindow] = {}

    def now(self) -> datetime:
        return self.app.clock.now()

    # ------------------------------------------------------------------ the loop
    def run_once(self, max_batches: int | None = None) -> WorkerReport:
        """Resume ended pauses, recover expired claims, then send everything due now."""
        report = WorkerReport()
        report.resumed = self.resume_paused()
        report.recovered = self.recover()
        batches = 0
        while max_batches is None or batches < max_batches:
            claims = self.claim(report)
            if not claims:
                break
            batches += 1
            size = self.app.settings.send_batch or (10 if self.transport.can_probe else 1)
            for start in range(0, len(claims), size):
                self.send_batch(claims[start : start + size], report)
        return report

    # ------------------------------------------------------------------ T1 claim
    def claim(self, report: WorkerReport, limit: int | None = None) -> list[Claim]:
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
            if self.postgres:
                query = query.with_for_update(of=S, skip_locked=True)
            rows = conn.execute(query).all()
            if not rows:
                return []
            usage, caps = self._mailbox_usage(conn, {r.mailbox_id for r in rows}, now)
            claims: list[Claim] = []
            claim_rows: list[dict[str, Any]] = []
            deferrals: list[dict[str, Any]] = []
            for row in rows:
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

    def _window(self, conn: Connection, campaign_id: int) -> SendWindow:
        window = self._windows.get(campaign_id)
        if window is None:
            row = conn.execute(
                select(C.c.window_days, C.c.window_start, C.c.window_end).where(C.c.id == campaign_id)
            ).one()
            window = SendWindow.parse(row.window_days.split(","), row.window_start, row.window_end)
            self._windows[campaign_id] = window
        return window

    # ------------------------------------------------------------------ T2 + send + T3
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
            deliveries.append((claim, self._hand_over(email, lambda: self.app.failpoints.hit("before_data"))))
            self.app.failpoints.hit("after_transport")
        self._record_fresh(deliveries, results)

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

    def _lock_leads(self, conn: Connection, lead_ids: list[int]) -> dict[int, Any]:
        """Lock lead rows in id order (the order every transaction uses: no deadlock cycles)."""
        query = (
            select(L.c.id, L.c.reply_state, L.c.paused_until)
            .where(L.c.id.in_(sorted(set(lead_ids))))
            .order_by(L.c.id)
        )
        if self.postgres:
            query = query.with_for_update(key_share=True)
        return {row.id: row for row in conn.execute(query)}

    def _lock_lead(self, conn: Connection, lead_id: int, *, skip_locked: bool = False) -> Any:
        query = select(L.c.id, L.c.reply_state, L.c.paused_until, L.c.contact_id).where(L.c.id == lead_id)
        if self.postgres:
            # FOR NO KEY UPDATE: conflicts with the reply transaction's FOR UPDATE, and lets
            # this transaction update the lead itself (an unknown outcome holds it).
            query = query.with_for_update(key_share=True, skip_locked=skip_locked)
        return conn.execute(query).one_or_none()

    def _recheck_many(
        self, conn: Connection, claims: list[Claim], results: dict[int, str]
    ) -> list[tuple[Claim, OutgoingEmail]]:
        """Lock the claims' leads, re-read everything a send depends on, refuse what may not go.

        Returns the claims that may be sent now, with their emails; every other claim gets its
        result ("refused" or "stale") in `results`.
        """
        now = self.now()
        unsafe = self.app.settings.unsafe_skip_recheck
        # TEST-ONLY broken guard (see Settings.unsafe_skip_recheck): no lead lock, no re-check.
        leads = {} if unsafe else self._lock_leads(conn, [c.lead_id for c in claims])
        rows = {
            row.id: row for row in conn.execute(_SEND_ROWS.where(S.c.id.in_([c.step_id for c in claims])))
        }
        go: list[tuple[Claim, OutgoingEmail]] = []
        for claim in claims:
            row = rows[claim.step_id]
            if unsafe:
                go.append((claim, self._email_from_row(row)))
                continue
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

    def _email(self, conn: Connection, step_id: int) -> OutgoingEmail:
        return self._email_from_row(conn.execute(_SEND_ROWS.where(S.c.id == step_id)).one())

    def _email_from_row(self, row: Any) -> OutgoingEmail:
        token = unsubscribe_token(row.secret, row.send_key)
        local, _, domain = row.from_address.partition("@")
        return OutgoingEmail(
            send_key=row.send_key,
            message_id=row.message_id,
            from_name=row.from_name,
            from_address=row.from_address,
            to_name=f"{row.first_name} {row.last_name}".strip(),
            to_address=row.to_address,
            subject=row.subject,
            body=row.body,
            date=self.now(),
            in_reply_to=row.in_reply_to,
            references=row.references,
            unsubscribe_url=f"{self.app.settings.public_url}/u/{token}",
            unsubscribe_mailto=f"{local}+unsubscribe-{token}@{domain or domain_of(row.from_address)}",
        )

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

    def _unknown(
        self, conn: Connection, step_id: int, lead_id: int, where: Any, detail: str, *, hold: bool
    ) -> None:
        """Nobody can tell whether it went out: never resend; hold the lead for a person."""
        now = self.now()
        conn.execute(
            update(S)
            .where(where)
            .values(state=StepState.UNKNOWN, lease_until=None, last_error=detail[:2000], updated_at=now)
        )
        conn.execute(update(OUT).where(OUT.c.step_id == step_id).values(status="unknown"))
        self._event(conn, "send_outcome_unknown", lead_id, step_id, detail=detail)
        if hold:
            held = conn.execute(
                update(L)
                .where(L.c.id == lead_id, L.c.reply_state == ReplyState.ACTIVE)
                .values(
                    reply_state=ReplyState.HELD,
                    reply_state_updated_at=now,
                    hold_reason="a send's outcome is unknown: check whether it reached the lead",
                )
            ).rowcount
            if held:
                self._event(conn, "lead_held", lead_id, step_id, reason="unknown send outcome")

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

    def _event(
        self, conn: Connection, kind: str, lead_id: int | None, step_id: int | None, /, **data: Any
    ) -> None:
        conn.execute(
            EV.insert().values(
                workspace_id=self.ws,
                lead_id=lead_id,
                step_id=step_id,
                kind=kind,
                at=self.now(),
                data=data,
            )
        )

    # ------------------------------------------------------------------ recovery
    def recover(self, limit: int = 200) -> int:
        """Expired claims go back to the queue; expired SENDING steps are unknown outcomes:
        reconciled when the transport can prove what happened, held for a person otherwise."""
        now = self.now()
        with self.engine.connect() as conn:
            rows = conn.execute(
                select(S.c.id, S.c.lead_id)
                .where(
                    S.c.workspace_id == self.ws,
                    S.c.state.in_([StepState.CLAIMED, StepState.SENDING]),
                    S.c.lease_until < now,
                )
                .limit(limit)
            ).all()
        recovered = 0
        for row in rows:
            with self.engine.connect() as conn, conn.begin():
                if self._lock_lead(conn, row.lead_id, skip_locked=True) is None:
                    continue  # a live worker (or a reply) holds the lead: not abandoned
                step = conn.execute(
                    select(S.c.state, S.c.claim_token, S.c.cancel_requested, S.c.lease_until).where(
                        S.c.id == row.id
                    )
                ).one()
                if step.lease_until is None or step.lease_until >= now:
                    continue
                fenced = and_(S.c.id == row.id, S.c.claim_token == step.claim_token, S.c.state == step.state)
                recovered += 1
                if step.state == StepState.CLAIMED:
                    conn.execute(
                        update(S)
                        .where(fenced)
                        .values(
                            state=StepState.SCHEDULED,
                            claim_token=None,
                            lease_until=None,
                            send_day=None,
                            updated_at=now,
                        )
                    )
                    self._event(conn, "claim_expired", row.lead_id, row.id)
                    continue
                self._reconcile(conn, row.id, row.lead_id, fenced, step.cancel_requested, now)
        return recovered

    def _reconcile(
        self,
        conn: Connection,
        step_id: int,
        lead_id: int,
        fenced: Any,
        cancel_requested: bool,
        now: datetime,
    ) -> None:
        probe = (
            self.transport.probe(self._email(conn, step_id)) if self.transport.can_probe else Probe.UNKNOWN
        )
        if probe is Probe.SENT:
            conn.execute(
                update(S)
                .where(fenced)
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
            self._event(conn, "send_reconciled", lead_id, step_id, found="sent")
        elif probe is Probe.NOT_SENT:
            state = StepState.CANCELLED if cancel_requested else StepState.SCHEDULED
            conn.execute(
                update(S)
                .where(fenced)
                .values(state=state, claim_token=None, lease_until=None, send_day=None, updated_at=now)
            )
            conn.execute(update(OUT).where(OUT.c.step_id == step_id).values(status="not_sent"))
            self._event(conn, "send_reconciled", lead_id, step_id, found="not sent")
        else:
            self._unknown(
                conn,
                step_id,
                lead_id,
                fenced,
                "worker stopped during the send",
                hold=not cancel_requested,
            )

    # ------------------------------------------------------------------ pauses
    def resume_paused(self) -> int:
        """Out-of-office leads whose pause has ended return to active on their own."""
        now = self.now()
        with self.engine.connect() as conn:
            ids = (
                conn.execute(
                    select(L.c.id).where(
                        L.c.workspace_id == self.ws,
                        L.c.reply_state == ReplyState.OUT_OF_OFFICE,
                        L.c.paused_until <= now,
                    )
                )
                .scalars()
                .all()
            )
        resumed = 0
        for lead_id in ids:
            with self.engine.connect() as conn, conn.begin():
                self._lock_lead(conn, lead_id)
                done = conn.execute(
                    update(L)
                    .where(
                        L.c.id == lead_id,
                        L.c.reply_state == ReplyState.OUT_OF_OFFICE,
                        L.c.paused_until <= now,
                    )
                    .values(reply_state=ReplyState.ACTIVE, reply_state_updated_at=now)
                ).rowcount
                if done:
                    resumed += 1
                    self._event(conn, "pause_ended", lead_id, None)
        return resumed


_RESULT_FIELDS: dict[str, str] = {
    "sent": "sent",
    "refused": "refused",
    "retried": "retried",
    "failed": "failed",
    "unknown": "unknown",
    "stale": "stale",
}


def _count(report: WorkerReport, result: str) -> None:
    name = _RESULT_FIELDS.get(result)
    if name:
        setattr(report, name, getattr(report, name) + 1)
    report.outcomes[result] = report.outcomes.get(result, 0) + 1


def run_forever(
    worker: Worker, should_stop: Callable[[], bool], sleep: Callable[[float], None]
) -> WorkerReport:
    total = WorkerReport()
    while not should_stop():
        try:
            report = worker.run_once(max_batches=50)
        except SQLAlchemyError as exc:
            # The database went away (restart, failover, a terminated session): claims and
            # markers are durable, so waiting and starting over loses nothing.
            log.warning("database error, retrying: %s", str(exc).splitlines()[0])
            sleep(worker.app.settings.poll_interval * 5)
            continue
        total.add(report)
        if report.claimed == 0:
            sleep(worker.app.settings.poll_interval)
    return total
