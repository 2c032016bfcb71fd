"""What the audit watches while production's code runs: every email handed to the transport,
every failpoint the send path passed, and a clock for recovery "once the lease has expired".

Wrappers only: they change nothing the worker does (the transport is the configured one, the
failpoints are the app's own, plus a record), so the audit sees production's behaviour.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from replyguard.adapters.transports.base import BeforeCommitHook, Delivery, Probe, Transport
from replyguard.domain.clock import Clock
from replyguard.domain.outgoing import OutgoingEmail
from replyguard.service_layer.failpoints import Failpoints


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


class ObservedFailpoints(Failpoints):
    """The app's failpoints, plus a record of every point the send path passed."""

    def __init__(self, inner: Failpoints) -> None:
        super().__init__()
        self.inner = inner
        self.seen: list[str] = []

    def hit(self, name: str) -> None:
        self.seen.append(name)
        super().hit(name)
        self.inner.hit(name)


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
