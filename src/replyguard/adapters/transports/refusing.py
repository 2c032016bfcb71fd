"""A transport that refuses every send as the sending mailbox's own problem.

What the composition root gives a connected mailbox whose account cannot be used (its
password does not decrypt: no key, or a key removed before rotation): the worker then pauses
the mailbox and tells its owners, as it does for a wrong password, instead of handing the
email to another server or failing it.
"""

from __future__ import annotations

from replyguard.adapters.transports.base import BeforeCommitHook, Delivery, Outcome, Probe
from replyguard.domain.outgoing import OutgoingEmail
from replyguard.domain.smtp_answers import Blame


class RefusingTransport:
    can_probe = False

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def __repr__(self) -> str:
        return "RefusingTransport()"

    def send(self, email: OutgoingEmail, before_commit: BeforeCommitHook | None = None) -> Delivery:
        return Delivery(Outcome.TRANSIENT, self.reason, blame=Blame.SENDER)

    def probe(self, email: OutgoingEmail) -> Probe:
        return Probe.UNKNOWN

    def close(self) -> None:
        return None
