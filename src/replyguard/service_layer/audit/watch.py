"""What the audit watches while production's code runs: every email handed to the transport,
every named point the send path passed, and a clock for recovery "once the lease has expired".

Wrappers only: they change nothing the worker does (the transport is the configured one, the
hooks are the app's own, plus a record), so the audit sees production's behaviour. The one
thing the audit does to the path is on purpose and on its canary only: it ends one send right
after the transport took it (`crash_after`), as a worker dying there would, to prove that a
retry is refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from replyguard.adapters.transports.base import BeforeCommitHook, Delivery, Probe, Transport
from replyguard.domain.clock import Clock
from replyguard.domain.outgoing import OutgoingEmail
from replyguard.service_layer.hooks import Hooks


@dataclass(frozen=True, slots=True)
class Handed:
    """One call of the transport by the audit's worker."""

    to: str
    message_id: str
    outcome: str


class CountingTransport:
    """The configured transport, unchanged, with a record of every email handed to it."""

    def __init__(self, inner: Transport) -> None:
        self.inner = inner
        self.can_probe = inner.can_probe
        self.calls: list[Handed] = []

    def send(self, email: OutgoingEmail, before_commit: BeforeCommitHook | None = None) -> Delivery:
        outcome = "raised"
        try:
            delivery = self.inner.send(email, before_commit)
            outcome = delivery.outcome.value
            return delivery
        finally:
            self.calls.append(Handed(email.to_address, email.message_id, outcome))

    def probe(self, email: OutgoingEmail) -> Probe:
        return self.inner.probe(email)

    def close(self) -> None:
        """The app owns the inner transport and closes it."""


class AuditCrash(BaseException):
    """The audit's stand-in for its worker dying at a point: a BaseException, so that the send
    path's `except Exception` never takes it for a failed send (see hooks.py)."""


class ObservedHooks:
    """The app's hooks, plus a record of every point the send path passed."""

    def __init__(self, inner: Hooks) -> None:
        self.inner = inner
        self.seen: list[str] = []
        self.crash_at: str | None = None

    def at(self, point: str) -> None:
        self.seen.append(point)
        self.inner.at(point)
        if point == self.crash_at:
            raise AuditCrash(point)


@dataclass(frozen=True, slots=True)
class Later:
    """A clock `delta` ahead of the app's: recovery as it runs once a lease has expired."""

    base: Clock
    delta: timedelta

    def now(self) -> datetime:
        return self.base.now() + self.delta


@dataclass
class Attempt:
    """One thing the audit asked the worker to do, and what happened."""

    label: str
    results: list[str]
    calls: list[Handed]
    phases: list[str]

    def to_json(self) -> dict[str, object]:
        return {
            "what": self.label,
            "results": self.results,
            "transport_calls": [c.message_id for c in self.calls],
            "phases": self.phases,
        }
