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

The worker is composed of one part per concern, sharing one `WorkerContext` (the runtime,
the transport and the helpers that read and write rows under the same rules): `Claimer`
(T1, claiming.py), `SendGuard` (T2, send_guard.py), which hands its results to the
`Recorder` (T3, send_record.py), and `Recovery` (expired leases and pauses, recovery.py).

Stopping. `stop` (an Event, set from a signal's thread) is looked at between emails and right
before each point of no return: once it is set the worker claims nothing, hands nothing more
over, and gives back at once every step it claimed and did not hand over (they keep their due
time, so any worker sends them next). The email in the transport call finishes; if it is still
there when the caller's grace is over, `interrupt` cuts its connection: cut before the
server could take it, it goes back to the queue too; cut after the final dot, it is an
unknown outcome, held for a person like any other.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.exc import DBAPIError, SQLAlchemyError

from replyguard.adapters.db.engine import end_read, read_only_engine
from replyguard.adapters.transports.base import Interruptible, Transport
from replyguard.service_layer.runtime import Runtime
from replyguard.service_layer.sending.claiming import Claimer
from replyguard.service_layer.sending.recovery import Recovery
from replyguard.service_layer.sending.send_guard import SendGuard
from replyguard.service_layer.sending.send_record import Recorder
from replyguard.service_layer.sending.slots import SendSlots
from replyguard.service_layer.sending.worker_base import Claim, S, WorkerReport
from replyguard.service_layer.sending.worker_context import WorkerContext
from replyguard.service_layer.step_tallies import Folder

__all__ = ["Claim", "SendLine", "Worker", "WorkerReport", "run_forever"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class SendLine:
    """What became of one claimed email, for a person watching the worker (one log line)."""

    step_id: int
    position: int
    to_address: str
    subject: str
    result: str  # sent, refused, retried, failed, unknown, stale, deferred, paused, ...


class Worker:
    """The guarded worker. `run_once` is one pass; `run_forever` loops it until `stop` is set.

    `on_result`, when given, hears of every claimed email as its batch is recorded (the CLI's
    one line per send or refusal); it costs one read of the batch's steps, after the commit.
    `stop`: see "Stopping" above (a fresh Event when not given)."""

    def __init__(
        self,
        app: Runtime,
        transport: Transport | None = None,
        *,
        on_result: Callable[[SendLine], None] | None = None,
        stop: threading.Event | None = None,
    ) -> None:
        self.on_result = on_result
        self.ctx = WorkerContext(app, transport, stop)
        self._thread: int | None = None  # the thread running the last pass (for `interrupt`)
        self.claimer = Claimer(self.ctx)
        self.guard = SendGuard(self.ctx, Recorder(self.ctx))
        self.recovery = Recovery(self.ctx)
        self.tallies = Folder(self.ctx.ws)
        self._reader = read_only_engine(self.ctx.engine)

    @property
    def app(self) -> Runtime:
        return self.ctx.app

    @property
    def transport(self) -> Transport:
        """The transport given to this worker, or the runtime's default one (a connected
        mailbox sends through its own: `WorkerContext.transport_for`)."""
        return self.ctx.transport

    @property
    def stop(self) -> threading.Event:
        """Set it (from any thread) to stop: nothing more is handed over, the rest goes back."""
        return self.ctx.stop

    def interrupt(self) -> None:
        """From another thread, once `stop` is set and the email in flight had its time: cut
        that email's connection now (if the transport can: `Interruptible`). Its outcome is
        then what the transport can tell — nothing handed over, or unknown — and the worker
        records it as usual before it returns."""
        self.ctx.interrupted = True
        in_flight = dict(self.ctx.in_flight)  # one copy: send slots may add to it meanwhile
        threads = set(in_flight) | ({self._thread} if self._thread is not None else set())
        for thread in threads:
            transport = in_flight.get(thread) or self.transport
            if isinstance(transport, Interruptible):
                transport.interrupt(thread)

    def claim(
        self, report: WorkerReport, limit: int | None = None, *, only_lead: int | None = None
    ) -> list[Claim]:
        """T1: claim due steps (`Claimer.claim`)."""
        return self.claimer.claim(report, limit, only_lead=only_lead)

    def send(self, claim: Claim, report: WorkerReport) -> str:
        """T2 and T3 for one claim (`SendGuard.send`)."""
        return self.guard.send(claim, report)

    def send_batch(self, claims: list[Claim], report: WorkerReport) -> list[str]:
        """T2 and T3 for a batch of claims, one result per claim (`SendGuard.send_batch`)."""
        return self.guard.send_batch(claims, report)

    def recover(self, limit: int = 200, *, only_lead: int | None = None) -> int:
        """Expired claims and unknown outcomes (`Recovery.recover`)."""
        return self.recovery.recover(limit, only_lead=only_lead)

    def resume_paused(self) -> int:
        """Ended out-of-office pauses (`Recovery.resume_paused`)."""
        return self.recovery.resume_paused()

    def fold_tallies(self) -> bool:
        """Fold the workspace's step-count ledger when it has grown long (step_tallies.py).
        A failure is logged, not raised: the counts stay right unfolded, only slower to read."""
        try:
            with self._reader.connect() as conn:  # SQLite: no write lock just to count
                long = self.tallies.is_long(conn)
                end_read(conn)
            if not long:
                return False
            with self.ctx.engine.connect() as conn, conn.begin():
                return self.tallies.fold_now(conn)
        except SQLAlchemyError as exc:
            log.warning("could not fold the step counts: %s", str(exc).splitlines()[0])
            return False

    def run_once(self, max_batches: int | None = None) -> WorkerReport:
        """Resume ended pauses, recover expired claims, then send everything due now (until
        `stop` is set: then the claims not handed over are given back, and it returns)."""
        self._thread = threading.get_ident()
        report = WorkerReport()
        if self.ctx.stopping():
            return report
        self.ctx.forget_transports()
        with self.ctx.reuse_scope():
            report.resumed = self.resume_paused()
            report.recovered = self.recover()
            self.fold_tallies()
            slots = self.app.settings.send_slots
            if slots > 1:
                SendSlots(self, slots).run(report, max_batches)
            else:
                self._run_serial(report, max_batches)
        return report

    def _run_serial(self, report: WorkerReport, max_batches: int | None) -> None:
        """One send slot: claim, send each batch of the claim, claim again."""
        batches = 0
        while (max_batches is None or batches < max_batches) and not self.ctx.stopping():
            deferred = report.deferred
            self.ctx.forget_transports()
            claims = self.claim(report)
            if not claims:
                if report.deferred > deferred:
                    # All it found had to wait (each now due later): more may be due behind.
                    continue
                break
            batches += 1
            size = self.batch_size(claims)
            for start in range(0, len(claims), size):
                if self.ctx.stopping():
                    # The rest of the claim, all at once: no email of it waits for the others.
                    rest = claims[start:]
                    self._told(rest, self.guard.give_back(rest, report))
                    break
                batch = claims[start : start + size]
                self._told(batch, self.send_batch(batch, report))

    def batch_size(self, claims: list[Claim]) -> int:
        """How many claimed emails share one re-check, marker and record (`send_batch`)."""
        return self.app.settings.send_batch or (10 if self._all_provable(claims) else 1)

    def _all_provable(self, claims: list[Claim]) -> bool:
        """Whether every claimed email's transport can prove its outcome (a Maildir): only then
        are they sent in batches of 10 (one connected mailbox's SMTP among them: 1)."""
        mailboxes = {claim.mailbox_id for claim in claims}
        return all(self.ctx.transport_for(mailbox).can_probe for mailbox in mailboxes)

    def _told(self, batch: list[Claim], results: list[str]) -> None:
        if self.on_result is not None:
            self._tell(batch, results)

    def _tell(self, batch: list[Claim], results: list[str]) -> None:
        assert self.on_result is not None
        ids = [claim.step_id for claim in batch]
        with self.ctx.engine.connect() as conn:
            rows = {
                row.id: row
                for row in conn.execute(
                    select(S.c.id, S.c.position, S.c.to_address, S.c.subject).where(S.c.id.in_(ids))
                )
            }
        for claim, result in zip(batch, results, strict=True):
            row = rows.get(claim.step_id)
            if row is not None:
                self.on_result(SendLine(row.id, row.position, row.to_address, row.subject, result))


def run_forever(worker: Worker) -> WorkerReport:
    """Pass after pass until `worker.stop` is set; a pause between passes wakes at the stop."""
    total = WorkerReport()
    stop = worker.stop
    while not stop.is_set():
        try:
            report = worker.run_once(max_batches=50)
        except SQLAlchemyError as exc:
            # The database went away (restart, failover, a terminated session): claims and
            # markers are durable, so waiting and starting over loses nothing. A session that
            # was found dead (the worker's engine does not ping before each checkout) has been
            # dropped from the pool: start over at once, on a new one.
            log.warning("database error, retrying: %s", str(exc).splitlines()[0])
            if not (isinstance(exc, DBAPIError) and exc.connection_invalidated):
                stop.wait(worker.app.settings.poll_interval * 5)
            continue
        total.add(report)
        if report.claimed == 0:
            stop.wait(worker.app.settings.poll_interval)
    return total
