"""What every part of the guarded worker shares: the runtime, the engine, the transport, and
the small helpers that read and write rows under the same rules.

The parts (`Claimer`, `SendGuard`, `Recorder`, `Recovery`) each hold the one context of
their `Worker`; none of them knows the others except the send guard, which is given the
recorder it hands its results to.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, exists, select, update

from replyguard.adapters.transports.base import Reusing, Transport
from replyguard.domain.addresses import domain_of
from replyguard.domain.message_ids import bounce_address, unsubscribe_token
from replyguard.domain.outgoing import OutgoingEmail
from replyguard.domain.schedule import SendWindow, load_zone
from replyguard.domain.send_policy import SendLimits
from replyguard.domain.states import OPEN, EnrollmentState, StepState, check_step_move, step_move
from replyguard.service_layer.runtime import Runtime, SentCopies
from replyguard.service_layer.sending.holds import hold_for_person
from replyguard.service_layer.sending.worker_base import (
    _SEND_ROWS,
    EVENT_INSERT,
    LOCK_LEADS,
    OUT,
    Claim,
    E,
    L,
    S,
    in_states,
)
from replyguard.service_layer.uow import Memo


class WorkerContext:
    """The runtime and transport of one worker, its stop request, and the helpers its parts
    share.

    `stop`, once set (by a signal, from another thread), makes the worker hand nothing more
    over: the parts look at it between emails and right before each point of no return."""

    def __init__(
        self, app: Runtime, transport: Transport | None = None, stop: threading.Event | None = None
    ) -> None:
        self.app = app
        self.engine = app.engine
        #: The same pool, each statement its own transaction: PostgreSQL's marker is one
        #: statement, durable when it returns (no BEGIN and COMMIT round trips around it).
        self.autocommit = app.engine.execution_options(isolation_level="AUTOCOMMIT")
        #: A transport given to the worker sends for every mailbox (tests, the audit); without
        #: one, each mailbox sends through its own (`transport_for`).
        self.fixed = transport
        #: The transport of the email each send slot (thread) is handing over now (what
        #: `Worker.interrupt` cuts).
        self.in_flight: dict[int, Transport] = {}
        # Each mailbox's transport, resolved once per claim (`forget_transports`): a changed
        # account applies from the next claim on, and a send costs no read of its own. Send
        # slots resolve them from their own threads, hence the lock.
        self._transports: dict[int | None, Transport] = {}
        self._transports_lock = threading.Lock()
        self._sent_folders: dict[int | None, SentCopies | None] = {}
        # The pass's connection-reuse scope (`reuse_scope`): each transport that can keep its
        # connections open is entered once, on first use in the pass.
        self._scope: ExitStack | None = None
        self._entered: set[int] = set()
        self.ws = app.workspace_id
        self.postgres = app.postgres
        self.stop = stop or threading.Event()
        #: Set by `Worker.interrupt`: the email in flight was cut off by us, not by its server.
        self.interrupted = False
        # Parsed windows by their stored text: the text is read with every claim and every
        # send (a person may change it at any time), the parsing is done once. Bounded: the
        # worker runs for months, and every window a person ever typed is a key.
        self._windows = Memo(64)

    @property
    def transport(self) -> Transport:
        """The transport given to the worker, or the process's default one."""
        return self.fixed or self.app.transport

    def transport_for(self, mailbox_id: int | None, conn: Connection | None = None) -> Transport:
        """The transport that sends a mailbox's email: the given one, or the mailbox's own
        (its SMTP account when connected, the default transport otherwise). `conn`: read the
        mailbox through it (inside a transaction: on SQLite another connection would wait)."""
        with self._transports_lock:
            found = self.fixed or self._transports.get(mailbox_id)
            if found is None:
                found = self._transports[mailbox_id] = self.app.transport_for(mailbox_id, conn)
            if self._scope is not None and id(found) not in self._entered and isinstance(found, Reusing):
                self._scope.enter_context(found.reusing())
                self._entered.add(id(found))
            return found

    def forget_transports(self) -> None:
        """Resolve each mailbox's transport again (a new claim: its account may have changed)."""
        with self._transports_lock:
            self._transports.clear()
            self._sent_folders.clear()

    def sent_folder_for(self, mailbox_id: int | None) -> SentCopies | None:
        """The mailbox's Sent folder to copy its sent emails to, or None (resolved once per
        claim, like its transport). A worker given its own transport copies nothing."""
        if self.fixed is not None:
            return None
        with self._transports_lock:
            if mailbox_id not in self._sent_folders:
                self._sent_folders[mailbox_id] = self.app.sent_folder_for(mailbox_id)
            return self._sent_folders[mailbox_id]

    @contextmanager
    def reuse_scope(self) -> Iterator[None]:
        """One pass of the worker: the connections its transports open stay open for the next
        email of the pass (SMTP: RSET between messages), and are closed when it ends, so an
        idle worker holds none."""
        with ExitStack() as stack:
            with self._transports_lock:
                self._scope, self._entered = stack, set()
            try:
                yield
            finally:
                with self._transports_lock:
                    self._scope = None

    def now(self) -> datetime:
        return self.app.clock.now()

    def stopping(self) -> bool:
        return self.stop.is_set()

    def window(self, days: str, start: str, end: str) -> SendWindow:
        """A campaign's window from its columns as they are now."""
        key = (days, start, end)
        window: SendWindow | None = self._windows.get(key)
        if window is None:
            window = SendWindow.parse(days.split(","), start, end)
            self._windows.put(key, window)
        return window

    def limits(self, row: Any) -> SendLimits:
        """The settings a person may change mid-flight, from a row with `_LIMIT_COLUMNS`."""
        return SendLimits(
            window=self.window(row.window_days, row.window_start, row.window_end),
            zone=load_zone(row.contact_tz or row.campaign_tz),
            mailbox_zone=load_zone(row.mailbox_tz),
            daily_cap=row.daily_cap,
            mailbox_status=row.mailbox_status,
            campaign_status=row.campaign_status,
        )

    def give_back(self, conn: Connection, claims: Sequence[Claim], due: datetime | None = None) -> set[int]:
        """Claims that will not be sent now go back to the queue: CLAIMED → SCHEDULED, fenced on
        each claim's token (so a claim another worker took over is left alone), the day's slot
        freed. `due`: when to try again (None: as it was, so the step keeps its place). Returns
        the ids of the steps given back; the others were no longer ours.

        The one way a claim is given back before its marker: a window that closed, a cap
        lowered, a day that changed (the send guard), an expired lease (recovery), a worker
        asked to stop."""
        if not claims:
            return set()
        values: dict[str, Any] = {
            "state": StepState.SCHEDULED,
            "claim_token": None,
            "lease_until": None,
            "send_day": None,
            "updated_at": self.now(),
        }
        if due is not None:
            values["due_at"] = due
        # Each token is unique to one claim, so "id in ids and token in tokens" fences every
        # step on its own token (as the marker does) in one statement.
        back = conn.execute(
            update(S)
            .where(
                S.c.id.in_([c.step_id for c in claims]),
                S.c.claim_token.in_([c.token for c in claims]),
                in_states(S.c.state, step_move(StepState.CLAIMED, StepState.SCHEDULED)),
            )
            .values(**values)
            .returning(S.c.id)
        )
        return set(back.scalars())

    def lock_leads(self, conn: Connection, lead_ids: list[int]) -> dict[int, Any]:
        """Lock lead rows in id order (the order every transaction uses: no deadlock cycles)."""
        query = LOCK_LEADS["postgresql" if self.postgres else "sqlite"]
        return {row.id: row for row in conn.execute(query, {"lead_ids": sorted(set(lead_ids))})}

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
            return_path=(
                bounce_address(row.secret, row.send_key, row.from_address) if self.app.settings.verp else None
            ),
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
        check_step_move(StepState.SENDING, StepState.UNKNOWN)  # only a step in flight is unknown
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
            EVENT_INSERT,
            {
                "workspace_id": self.ws,
                "lead_id": lead_id,
                "step_id": step_id,
                "kind": kind,
                "at": self.now(),
                "data": data,
            },
        )
