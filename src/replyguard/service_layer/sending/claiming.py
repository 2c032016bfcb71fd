"""T1 of a send: claiming due steps (SKIP LOCKED, fencing tokens, leases, windows, caps).

The sequence invariants are enforced here, where a step becomes sendable:

* order: a step is claimable only when every earlier step of its enrollment was sent or
  skipped by a person (`LETS_NEXT_GO`). Nothing overtakes a step waiting for approval, a
  retry, a failed send or an unknown outcome, and nothing follows an email that never arrived.
* spacing: a step goes out no sooner than its wait after the previous email really went out
  (after downtime, pauses, approvals and resumes too); if the plan said earlier, it is
  deferred to that moment.
* the send window in the lead's zone and the mailbox's daily cap (under the mailbox row lock),
  read as they are now at every claim; both are checked again for each email right before it
  is handed over, on the settings as they are then (`send_guard.py`): a cap lowered since the
  claim gives the email back, and the next claim counts it here against the new cap.
* a paused mailbox is not claimed from.
* the mailbox's emails per minute: a claim counts the mailbox's emails claimed or in flight
  now and those sent in the last minute (under the same mailbox row lock, in the statement
  that counts the day's), and claims no more than its limit allows; the rest waits until the
  oldest of that minute is a minute old.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from sqlalchemy import (
    ColumnElement,
    Connection,
    Select,
    and_,
    bindparam,
    case,
    exists,
    func,
    or_,
    select,
    update,
)

from replyguard.domain.clock import ensure_aware
from replyguard.domain.schedule import SendWindow, Wait, load_zone, local_day, next_day_start, plan_due
from replyguard.domain.states import LETS_NEXT_GO, EnrollmentState, ReplyState, StepState, step_move
from replyguard.service_layer.sending.worker_base import (
    _USING_SLOT,
    CS,
    CT,
    MB,
    C,
    Claim,
    E,
    L,
    S,
    WorkerReport,
    in_states,
)
from replyguard.service_layer.sending.worker_context import WorkerContext

log = logging.getLogger(__name__)

#: The previous step of the same enrollment (position - 1), if any: its send time for spacing.
PREV = S.alias("prev")
#: Any earlier step of the same enrollment: all must be sent or skipped first.
EARLIER = S.alias("earlier")


class Claimer:
    """T1: claim due steps in order, inside their send windows and under the mailboxes' caps."""

    def __init__(self, ctx: WorkerContext) -> None:
        self.ctx = ctx

    def claim(
        self, report: WorkerReport, limit: int | None = None, *, only_lead: int | None = None
    ) -> list[Claim]:
        """Claim due steps. `only_lead` is for `replyguard audit` alone (see AUDIT below)."""
        ctx = self.ctx
        now = ctx.now()
        limit = limit or ctx.app.settings.claim_batch
        with ctx.engine.connect() as conn, conn.begin():
            # AUDIT (issue 13, docs/audit.md): the audit's canary leads are claimed only by the
            # audit, one lead at a time (`only_lead`), so a running worker never races it for
            # them. The canary is the team's own address: its emails ignore the prospects'
            # send window and cap, and take no slot of the cap (no prospect waits for them).
            audit = only_lead is not None
            dialect = "postgresql" if ctx.postgres else "sqlite"
            query = _audit_claim(only_lead, ctx.postgres) if only_lead is not None else _CLAIM_DUE[dialect]
            rows = conn.execute(query, {"ws": ctx.ws, "now": now, "limit": limit}).all()
            if not rows:
                return []
            # AUDIT: a canary's claim is the audit's own email to the team: no cap, no spacing.
            spacing = {} if audit else self._spacing(conn, rows)
            usage, caps, rates = (
                ({}, {}, {}) if audit else self._mailbox_usage(conn, {r.mailbox_id for r in rows}, now)
            )
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
                window = ctx.window(row.window_days, row.window_start, row.window_end)
                later = self._not_before(spacing.get(row.id), now, window, zone)
                if later is not None:
                    deferrals.append({"sid": row.id, "due": later})
                    continue
                day, cap, mb_zone = caps[row.mailbox_id]
                rate = rates[row.mailbox_id]
                later = self._over_limits(now, window, zone, mb_zone, usage[row.mailbox_id] >= cap, rate)
                if later is not None:
                    deferrals.append({"sid": row.id, "due": later})
                    continue
                usage[row.mailbox_id] += 1
                rate.in_minute += 1
                claim = Claim(
                    row.id, row.lead_id, uuid.uuid4().hex, row.mailbox_id, day, cap, rate.connections
                )
                claims.append(claim)
                claim_rows.append({"sid": claim.step_id, "tok": claim.token, "day": day})
            if deferrals:
                conn.execute(_DEFER, deferrals)
            if claims:
                lease_until = now + ctx.app.settings.lease
                conn.execute(_CLAIM, [row | {"lease": lease_until, "at": now} for row in claim_rows])
            ctx.app.hooks.at("before_claim_commit")
        report.claimed += len(claims)
        report.deferred += len(deferrals)
        ctx.app.hooks.at("after_claim")
        return claims

    @staticmethod
    def _spacing(conn: Connection, rows: Sequence[Any]) -> dict[int, tuple[datetime, Wait]]:
        """For the claimed candidates (a batch, not every due step): when the previous step
        of each really went out, and the step's wait. Steps after a skipped one have their
        due time set by the person's skip (`step_decisions.skip`)."""
        later = [r for r in rows if r.position > 1]
        if not later:
            return {}
        found = conn.execute(
            select(S.c.id, PREV.c.sent_at, CS.c.wait_days, CS.c.wait_seconds)
            .select_from(
                S.join(CS, CS.c.id == S.c.campaign_step_id).join(
                    PREV,
                    and_(PREV.c.enrollment_id == S.c.enrollment_id, PREV.c.position == S.c.position - 1),
                )
            )
            .where(S.c.id.in_([r.id for r in later]), PREV.c.state == StepState.SENT)
        ).all()
        return {r.id: (r.sent_at, Wait.stored(r.wait_days, r.wait_seconds)) for r in found if r.sent_at}

    @staticmethod
    def _not_before(
        previous: tuple[datetime, Wait] | None, now: datetime, window: SendWindow, zone: ZoneInfo
    ) -> datetime | None:
        """None if the step may go now; otherwise when: the window's next opening, or its wait
        after the previous email really went out (the plan may have assumed it went earlier)."""
        if previous is not None:
            spaced = plan_due(previous[0], previous[1], window, zone)
            if spaced > now:
                return spaced
        if not window.contains(now, zone):
            return window.next_open(now, zone)
        return None

    @staticmethod
    def _over_limits(
        now: datetime, window: SendWindow, zone: ZoneInfo, mb_zone: ZoneInfo, capped: bool, rate: _Rate
    ) -> datetime | None:
        """None if the mailbox may take one more email now; otherwise when it may."""
        if capped:
            # Over the cap: wait for the mailbox's next day, inside the lead's window.
            return window.next_open(max(now, next_day_start(now, mb_zone)), zone)
        if rate.per_minute is not None and rate.in_minute >= rate.per_minute:
            # Over the minute's limit: wait until the oldest send of the minute is a minute
            # old (or a second, when the minute's are all still in flight).
            return window.next_open(rate.free_at(now), zone)
        return None

    def _mailbox_usage(
        self, conn: Connection, mailbox_ids: set[int], now: datetime
    ) -> tuple[dict[int, int], dict[int, tuple[Any, int, Any]], dict[int, _Rate]]:
        """Sends counted against each mailbox's cap today and against its minute, under a lock
        on the mailbox rows."""
        query = _LOCK_MAILBOXES["postgresql" if self.ctx.postgres else "sqlite"]
        caps: dict[int, tuple[Any, int, Any]] = {}
        usage: dict[int, int] = {}
        rates: dict[int, _Rate] = {}
        minute_ago = now - MINUTE
        for mb in conn.execute(query, {"mailbox_ids": sorted(mailbox_ids)}):
            zone = load_zone(mb.timezone)
            day = local_day(now, zone)
            caps[mb.id] = (day, mb.daily_cap, zone)
            counted = conn.execute(
                _MAILBOX_USE, {"mailbox_id": mb.id, "day": day, "minute_ago": minute_ago}
            ).one()
            usage[mb.id] = counted[0]
            rates[mb.id] = _Rate(mb.per_minute, counted[1], counted[2], mb.max_connections)
        return usage, caps, rates


#: The window of a mailbox's `per_minute` limit.
MINUTE = timedelta(minutes=1)
_IN_FLIGHT = [StepState.CLAIMED, StepState.SENDING]


@dataclass(slots=True)
class _Rate:
    """A mailbox's limits per minute and per connection, and its minute's use so far."""

    per_minute: int | None
    in_minute: int
    oldest: datetime | None  # the earliest send of the last minute
    connections: int | None

    def free_at(self, now: datetime) -> datetime:
        """When the minute has room again: the oldest send of it, a minute later."""
        if self.oldest is None:
            return now + timedelta(seconds=1)
        return max(ensure_aware(self.oldest) + MINUTE, now + timedelta(milliseconds=10))


# The claim's statements, built once (see worker_base: "The send path's statements").


def _due(audit_filter: ColumnElement[bool]) -> Select[Any]:
    """The due steps a claim may take, in order (`Claimer.claim`), up to `limit`."""
    return (
        select(
            S.c.id,
            S.c.lead_id,
            S.c.mailbox_id,
            S.c.enrollment_id,
            S.c.position,
            S.c.campaign_step_id,
            C.c.id.label("campaign_id"),
            C.c.timezone.label("campaign_tz"),
            C.c.window_days,
            C.c.window_start,
            C.c.window_end,
            CT.c.timezone.label("contact_tz"),
        )
        .select_from(
            S.join(L, L.c.id == S.c.lead_id)
            .join(E, E.c.id == S.c.enrollment_id)
            .join(C, C.c.id == E.c.campaign_id)
            .join(CT, CT.c.id == L.c.contact_id)
            .join(MB, MB.c.id == S.c.mailbox_id)
        )
        .where(
            S.c.workspace_id == bindparam("ws"),
            S.c.state == StepState.SCHEDULED,
            S.c.due_at <= bindparam("now", type_=S.c.due_at.type),
            L.c.reply_state == ReplyState.ACTIVE,
            E.c.state == EnrollmentState.ACTIVE,
            C.c.status == "active",
            MB.c.status == "active",
            ~exists().where(
                EARLIER.c.enrollment_id == S.c.enrollment_id,
                EARLIER.c.position < S.c.position,
                EARLIER.c.state.not_in(list(LETS_NEXT_GO)),
            ),
            audit_filter,
        )
        .order_by(S.c.due_at, S.c.id)
        .limit(bindparam("limit"))
    )


def _claimable(query: Select[Any], postgres: bool) -> Select[Any]:
    return query.with_for_update(of=S, skip_locked=True) if postgres else query


_PROSPECTS = _due(L.c.audit_run_id.is_(None))
#: The due steps of the prospects (every lead but the audit's canaries), by dialect: SKIP
#: LOCKED on PostgreSQL, the transaction's write lock on SQLite.
_CLAIM_DUE = {"postgresql": _claimable(_PROSPECTS, True), "sqlite": _PROSPECTS}


def _audit_claim(lead_id: int, postgres: bool) -> Select[Any]:
    """AUDIT: the due steps of one canary lead (rare: built when asked)."""
    return _claimable(_due(S.c.lead_id == lead_id), postgres)


#: A candidate that may not go yet waits until it may (its spacing, window or cap).
_DEFER = update(S).where(S.c.id == bindparam("sid")).values(due_at=bindparam("due"))
#: SCHEDULED -> CLAIMED with a fresh token and lease (one parameter set per step).
_CLAIM = (
    update(S)
    .where(
        S.c.id == bindparam("sid"), in_states(S.c.state, step_move(StepState.SCHEDULED, StepState.CLAIMED))
    )
    .values(
        state=StepState.CLAIMED,
        claim_token=bindparam("tok"),
        lease_until=bindparam("lease"),
        send_day=bindparam("day"),
        updated_at=bindparam("at"),
    )
)
_MAILBOXES = (
    select(MB.c.id, MB.c.daily_cap, MB.c.timezone, MB.c.max_connections, MB.c.per_minute)
    .where(MB.c.id.in_(bindparam("mailbox_ids", expanding=True)))
    .order_by(MB.c.id)
)
#: The claim's mailboxes, locked on PostgreSQL (their caps count under the lock).
_LOCK_MAILBOXES = {"postgresql": _MAILBOXES.with_for_update(), "sqlite": _MAILBOXES}
_MINUTE_AGO = bindparam("minute_ago", type_=S.c.sent_at.type)
#: A mailbox's emails counted against its cap on `day`, those in its last minute (claimed or
#: in flight now, or sent less than a minute ago), and the oldest send of that minute.
_MAILBOX_USE = (
    select(
        func.count(),
        func.count(case((or_(S.c.state.in_(_IN_FLIGHT), S.c.sent_at > _MINUTE_AGO), 1))),
        func.min(case((S.c.sent_at > _MINUTE_AGO, S.c.sent_at))),
    )
    .select_from(S)
    .where(
        S.c.mailbox_id == bindparam("mailbox_id"),
        S.c.send_day == bindparam("day", type_=S.c.send_day.type),
        S.c.state.in_(_USING_SLOT),
    )
)
