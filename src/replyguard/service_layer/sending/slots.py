"""Several send slots in one worker: each claimed batch is sent by one of `slots` threads,
so one worker keeps up with a server that takes its time over each message.

Nothing about a single email changes: each slot runs the same `SendGuard.send_batch` (its own
lead locks and re-check, its own marker, the liveness check before DATA, its own record), on
its own database connections. What the slots share is the claim, made by the pass's own
thread ahead of them (a short queue of claimed batches), and each mailbox's connection limit:
a batch is handed to a slot only while fewer than `max_connections` of its mailbox's batches
are in flight, so no mailbox ever has more sessions open than its limit (the transport's pool
opens a connection only when no idle one is left).

A crash of the process holds at most one batch per slot (with the SMTP default batch of 1:
one lead per slot); the claimed batches waiting in the queue are only CLAIMED, and go back to
the queue when their lease ends (or at once when the worker is asked to stop).
"""

from __future__ import annotations

from collections import Counter, deque
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import TYPE_CHECKING

from replyguard.service_layer.sending.worker_base import Claim, WorkerReport

if TYPE_CHECKING:
    from replyguard.service_layer.sending.worker import Worker

_Done = tuple[list[str], WorkerReport]


class SendSlots:
    """One pass of a worker with `slots` send threads (see the module's docstring)."""

    def __init__(self, worker: Worker, slots: int) -> None:
        self.worker = worker
        self.slots = slots
        self.queue: deque[list[Claim]] = deque()
        self.running: dict[Future[_Done], list[Claim]] = {}
        #: Batches in flight per mailbox (only the pass's own thread reads and writes it).
        self.busy: Counter[int | None] = Counter()

    def run(self, report: WorkerReport, max_batches: int | None) -> None:
        """Claim, hand batches to the slots, collect their results, until nothing is due
        (or `max_batches` claims were made, or the worker is asked to stop)."""
        ctx = self.worker.ctx
        claims_made = 0
        more = True
        with ThreadPoolExecutor(self.slots, thread_name_prefix="send-slot") as pool:
            while not ctx.stopping():
                if more and len(self.queue) < self.slots:
                    more = self._refill(report)
                    claims_made += 1
                    more = more and (max_batches is None or claims_made < max_batches)
                self._dispatch(pool)
                if not self.running:
                    if not more:
                        break
                    continue
                # Wait for a slot while the queue is full; otherwise claim ahead meanwhile.
                if not more or len(self.queue) >= self.slots:
                    finished, _ = wait(self.running, return_when=FIRST_COMPLETED)
                    self._collect(finished, report)
                else:
                    self._collect({f for f in self.running if f.done()}, report)
            rest = [claim for batch in self.queue for claim in batch]
            self.queue.clear()
            if rest:
                # Stopping: the claims no slot started on go back at once.
                self.worker._told(rest, self.worker.guard.give_back(rest, report))
            finished, _ = wait(self.running)
            self._collect(finished, report)

    def _refill(self, report: WorkerReport) -> bool:
        """Claim the next batches into the queue. False when nothing more is due now."""
        worker = self.worker
        while True:
            deferred = report.deferred
            worker.ctx.forget_transports()
            limit = max(worker.app.settings.claim_batch, 2 * self.slots)
            claims = worker.claim(report, limit)
            if claims:
                break
            if report.deferred == deferred:
                return False
            # All it found had to wait (each now due later): more may be due behind.
        size = worker.batch_size(claims)
        for start in range(0, len(claims), size):
            self.queue.append(claims[start : start + size])
        return True

    def _dispatch(self, pool: ThreadPoolExecutor) -> None:
        """Hand queued batches to free slots, in order, skipping (for now) a batch whose
        mailbox already has as many batches in flight as its connection limit."""
        waiting: deque[list[Claim]] = deque()
        while self.queue and len(self.running) < self.slots:
            batch = self.queue.popleft()
            if not self._may_start(batch):
                waiting.append(batch)
                continue
            for mailbox in {claim.mailbox_id for claim in batch}:
                self.busy[mailbox] += 1
            self.running[pool.submit(self._send, batch)] = batch
        waiting.extend(self.queue)
        self.queue = waiting

    def _may_start(self, batch: list[Claim]) -> bool:
        for claim in batch:
            if claim.connections is not None and self.busy[claim.mailbox_id] >= claim.connections:
                return False
        return True

    def _send(self, batch: list[Claim]) -> _Done:
        report = WorkerReport()  # the slot's own: the pass adds it in its own thread
        return self.worker.send_batch(batch, report), report

    def _collect(self, finished: set[Future[_Done]], report: WorkerReport) -> None:
        for future in finished:
            batch = self.running.pop(future)
            for mailbox in {claim.mailbox_id for claim in batch}:
                self.busy[mailbox] -= 1
            results, slot_report = future.result()
            report.add(slot_report)
            self.worker._told(batch, results)
