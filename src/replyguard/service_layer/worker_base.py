"""Shared parts of the guarded worker: tables, values, and the helpers every phase uses."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, fields
from datetime import date, datetime, timedelta
from typing import Any, cast
from zoneinfo import ZoneInfo

from sqlalchemy import Connection, Table, exists, select, update

from replyguard.adapters.db import models as m
from replyguard.adapters.transports.base import Delivery, Transport
from replyguard.domain.addresses import domain_of
from replyguard.domain.message_ids import unsubscribe_token
from replyguard.domain.outgoing import OutgoingEmail
from replyguard.domain.schedule import SendWindow
from replyguard.domain.states import OPEN, StepState
from replyguard.service_layer.holds import hold_for_person
from replyguard.service_layer.runtime import Runtime

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
    S.c.to_name,
    S.c.send_key,
    S.c.message_id,
    S.c.subject,
    S.c.body,
    S.c.in_reply_to,
    S.c.references,
    S.c.enrollment_id,
    S.c.position,
    E.c.state.label("enrollment_state"),
    C.c.status.label("campaign_status"),
    exists()
    .where(SUP.c.workspace_id == S.c.workspace_id, SUP.c.address == S.c.to_address)
    .label("suppressed"),
    MB.c.address.label("from_address"),
    MB.c.from_name,
    MB.c.status.label("mailbox_status"),
    WS.c.secret,
).select_from(
    S.join(E, E.c.id == S.c.enrollment_id)
    .join(C, C.c.id == E.c.campaign_id)
    .join(MB, MB.c.id == S.c.mailbox_id)
    .join(WS, WS.c.id == S.c.workspace_id)
)

#: How much later than planned a step may go out before the next one is moved to keep its wait.
SPACING_TOLERANCE = timedelta(minutes=15)

_USING_SLOT = [StepState.CLAIMED, StepState.SENDING, StepState.SENT, StepState.UNKNOWN]


@dataclass(frozen=True, slots=True)
class Claim:
    """A claimed step, and what the claim checked, so that it can be checked again for each
    email right before it is handed over (the clock moves during a batch)."""

    step_id: int
    lead_id: int
    token: str
    mailbox_id: int | None = None
    window: SendWindow | None = None
    zone: ZoneInfo | None = None  # the lead's
    send_day: date | None = None  # the mailbox's day whose cap counts this email
    mailbox_zone: ZoneInfo | None = None


@dataclass(frozen=True, slots=True)
class Handed:
    """What became of one email at the hand-over: the transport's answer, or that our own last
    check stopped it before the point of no return (`aborted`), or that it was not handed over
    at all because its window closed or its cap's day changed (`deferred_to`)."""

    delivery: Delivery
    aborted: bool = False
    deferred_to: datetime | None = None


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
    paused: int = 0
    recovered: int = 0
    resumed: int = 0
    outcomes: dict[str, int] = field(default_factory=dict)

    def add(self, other: WorkerReport) -> None:
        for item in fields(self):
            if item.name != "outcomes":
                setattr(self, item.name, getattr(self, item.name) + getattr(other, item.name))
        for result, n in other.outcomes.items():
            self.outcomes[result] = self.outcomes.get(result, 0) + n


#: Results of a send that have their own counter in WorkerReport.
_COUNTED = frozenset({"sent", "refused", "retried", "failed", "unknown", "stale", "deferred", "paused"})


def _count(report: WorkerReport, result: str) -> None:
    if result in _COUNTED:
        setattr(report, result, getattr(report, result) + 1)
    report.outcomes[result] = report.outcomes.get(result, 0) + 1


class WorkerBase:
    """What every part of the worker shares: the app, the transport, and the small helpers
    that read and write rows under the same rules."""

    def __init__(self, app: Runtime, transport: Transport | None = None) -> None:
        self.app = app
        self.engine = app.engine
        self.transport = transport or app.transport
        self.ws = app.workspace_id
        self.postgres = app.postgres
        self._windows: dict[int, SendWindow] = {}

    def now(self) -> datetime:
        return self.app.clock.now()

    def _window(self, conn: Connection, campaign_id: int) -> SendWindow:
        window = self._windows.get(campaign_id)
        if window is None:
            row = conn.execute(
                select(C.c.window_days, C.c.window_start, C.c.window_end).where(C.c.id == campaign_id)
            ).one()
            window = SendWindow.parse(row.window_days.split(","), row.window_start, row.window_end)
            self._windows[campaign_id] = window
        return window

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
            to_name=row.to_name,
            to_address=row.to_address,
            subject=row.subject,
            body=row.body,
            date=self.now(),
            in_reply_to=row.in_reply_to,
            references=row.references,
            unsubscribe_url=f"{self.app.settings.public_url}/u/{token}",
            unsubscribe_mailto=f"{local}+unsubscribe-{token}@{domain or domain_of(row.from_address)}",
        )

    def _unknown(
        self, conn: Connection, step_id: int, lead_id: int, where: Any, detail: str, *, hold: bool
    ) -> None:
        """Nobody can tell whether it went out: never resend; hold the lead for a person.

        `hold=False` (a reply or a stop had asked to cancel the step): the lead already belongs
        to a person and keeps its state; the step is still shown in its rescue thread."""
        now = self.now()
        conn.execute(
            update(S)
            .where(where)
            .values(state=StepState.UNKNOWN, lease_until=None, last_error=detail[:2000], updated_at=now)
        )
        conn.execute(update(OUT).where(OUT.c.step_id == step_id).values(status="unknown"))
        self._event(conn, "send_outcome_unknown", lead_id, step_id, detail=detail)
        hold_for_person(
            conn,
            workspace_id=self.ws,
            lead_id=lead_id,
            step_id=step_id,
            now=now,
            kind="unknown_outcome",
            reason=f"a send's outcome is unknown ({detail[:200]}): check whether it reached the lead",
            settings=self.app.settings,
            move=hold,
        )

    def _complete_finished(self, conn: Connection, enrollment_ids: set[int]) -> None:
        """An enrollment completes only when none of its steps is left to send or decide."""
        if not enrollment_ids:
            return
        open_steps = exists().where(S.c.enrollment_id == E.c.id, S.c.state.in_(list(OPEN)))
        conn.execute(
            update(E)
            .where(E.c.id.in_(sorted(enrollment_ids)), E.c.state == "active", ~open_steps)
            .values(state="completed")
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
