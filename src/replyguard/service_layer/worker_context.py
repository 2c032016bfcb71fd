"""What every part of the guarded worker shares: the runtime, the engine, the transport, and
the small helpers that read and write rows under the same rules.

The parts (`Claimer`, `SendGuard`, `Recorder`, `Recovery`) each hold the one context of
their `Worker`; none of them knows the others except the send guard, which is given the
recorder it hands its results to.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Connection, exists, select, update

from replyguard.adapters.transports.base import Transport
from replyguard.domain.addresses import domain_of
from replyguard.domain.message_ids import unsubscribe_token
from replyguard.domain.outgoing import OutgoingEmail
from replyguard.domain.schedule import SendWindow
from replyguard.domain.states import OPEN, EnrollmentState, StepState
from replyguard.service_layer.holds import hold_for_person
from replyguard.service_layer.runtime import Runtime
from replyguard.service_layer.worker_base import _SEND_ROWS, EV, OUT, C, E, L, S


class WorkerContext:
    """The runtime and transport of one worker, its campaigns' send windows (read once), and
    the helpers its parts share."""

    def __init__(self, app: Runtime, transport: Transport | None = None) -> None:
        self.app = app
        self.engine = app.engine
        self.transport = transport or app.transport
        self.ws = app.workspace_id
        self.postgres = app.postgres
        self._windows: dict[int, SendWindow] = {}

    def now(self) -> datetime:
        return self.app.clock.now()

    def window(self, conn: Connection, campaign_id: int) -> SendWindow:
        window = self._windows.get(campaign_id)
        if window is None:
            row = conn.execute(
                select(C.c.window_days, C.c.window_start, C.c.window_end).where(C.c.id == campaign_id)
            ).one()
            window = SendWindow.parse(row.window_days.split(","), row.window_start, row.window_end)
            self._windows[campaign_id] = window
        return window

    def lock_leads(self, conn: Connection, lead_ids: list[int]) -> dict[int, Any]:
        """Lock lead rows in id order (the order every transaction uses: no deadlock cycles)."""
        query = (
            select(L.c.id, L.c.reply_state, L.c.paused_until)
            .where(L.c.id.in_(sorted(set(lead_ids))))
            .order_by(L.c.id)
        )
        if self.postgres:
            query = query.with_for_update(key_share=True)
        return {row.id: row for row in conn.execute(query)}

    def lock_lead(self, conn: Connection, lead_id: int, *, skip_locked: bool = False) -> Any:
        query = select(L.c.id, L.c.reply_state, L.c.paused_until, L.c.contact_id).where(L.c.id == lead_id)
        if self.postgres:
            # FOR NO KEY UPDATE: conflicts with the reply transaction's FOR UPDATE, and lets
            # this transaction update the lead itself (an unknown outcome holds it).
            query = query.with_for_update(key_share=True, skip_locked=skip_locked)
        return conn.execute(query).one_or_none()

    def email(self, conn: Connection, step_id: int) -> OutgoingEmail:
        return self.email_from_row(conn.execute(_SEND_ROWS.where(S.c.id == step_id)).one())

    def email_from_row(self, row: Any) -> OutgoingEmail:
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

    def unknown(
        self, conn: Connection, step_id: int, lead_id: int, where: Any, detail: str, *, hold: bool
    ) -> None:
        """Nobody can tell whether it went out: never resend; hold the lead for a person.

        `where` fences the write on the claim: the recorder's `Fence.to(UNKNOWN)`, or the
        fence of the state recovery read (see `Recovery._reconcile`). `hold=False` (a reply or
        a stop had asked to cancel the step): the lead already belongs to a person and keeps its
        state; the step is still shown in its rescue thread."""
        now = self.now()
        conn.execute(
            update(S)
            .where(where)
            .values(state=StepState.UNKNOWN, lease_until=None, last_error=detail[:2000], updated_at=now)
        )
        conn.execute(update(OUT).where(OUT.c.step_id == step_id).values(status="unknown"))
        self.event(conn, "send_outcome_unknown", lead_id, step_id, detail=detail)
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

    def complete_finished(self, conn: Connection, enrollment_ids: set[int]) -> None:
        """An enrollment completes only when none of its steps is left to send or decide."""
        if not enrollment_ids:
            return
        open_steps = exists().where(S.c.enrollment_id == E.c.id, S.c.state.in_(list(OPEN)))
        conn.execute(
            update(E)
            .where(E.c.id.in_(sorted(enrollment_ids)), E.c.state == EnrollmentState.ACTIVE, ~open_steps)
            .values(state=EnrollmentState.COMPLETED)
        )

    def event(
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
